"""The command line of the sources: ``paperscope fetch arxiv|openreview|openalex`` (a corpus file
from a service, resumable, politely; ``paperscope.sources``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from paperscope.errors import UserError
from paperscope.limits import MAX_RESULTS
from paperscope.progress import duration
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.ui import arguments
from paperscope.ui.arguments import Fraction, OutputFile, Text, Whole, needs
from paperscope.ui.library_commands import DIGEST_PAPERS, digest_markdown

logger = logging.getLogger("paperscope")
CONTACT_VARIABLE = "PAPERSCOPE_CONTACT"
FILTERS = {  # each subcommand's options that make its query (SourceQuery.filters), by name
    "arxiv": ("category", "since", "until", "query", "ids"),
    "openreview": ("venue",),
    "openalex": ("filter", "search"),
}


def _politeness_options(sub) -> None:
    """How politely a command asks the services (``fetch`` and ``update`` alike): a contact, the delay."""
    sub.add_argument(
        "--contact", metavar="EMAIL", type=Text(200), default=os.environ.get(CONTACT_VARIABLE),
        help=f"an e-mail address the services may write to, sent in the user agent (default ${CONTACT_VARIABLE})",
    )  # fmt: skip
    sub.add_argument(
        "--delay", metavar="S", type=Fraction(0, 600),
        help="seconds between two requests (default: what each service asks: arXiv 3, OpenReview 1, OpenAlex 0.1)",
    )  # fmt: skip


def _common_options(sub, endpoint: str) -> None:
    """The options every ``fetch`` takes: the file, where from, how politely, begin again."""
    sub.add_argument(
        "-o", "--output", metavar="FILE", type=OutputFile((".jsonl",)), required=True,
        help="the corpus file to write (JSON lines; its state beside it in FILE.fetch.json: the same command "
        "goes on from where a stopped one was)",
    )  # fmt: skip
    sub.add_argument(
        "--base-url", metavar="URL", type=arguments.url, help=f"the service's address (default {endpoint})"
    )
    _politeness_options(sub)
    sub.add_argument("--restart", action="store_true", help="begin FILE again, whatever it holds")
    sub.set_defaults(run=cmd_fetch)


def fetch_options(fetch) -> None:
    """``fetch``'s own commands: one per source."""
    sources = fetch.add_subparsers(dest="source", required=True, parser_class=type(fetch))
    arxiv = sources.add_parser("arxiv", help="arXiv: a category by OAI-PMH (bulk), or a search or ids by its API")
    what = arxiv.add_mutually_exclusive_group()
    what.add_argument(
        "--category", metavar="CAT", type=Text(40),
        help="a category (cs.LG, math.AG, hep-th) or a whole archive (cs), by OAI-PMH",
    )  # fmt: skip
    what.add_argument("--query", metavar="Q", type=Text(), help="a search in arXiv's syntax ('cat:cs.LG AND ti:graph')")
    what.add_argument("--ids", metavar="A,B", type=Text(), help="arXiv ids, comma-separated")
    needs(arxiv.add_argument("--since", metavar="DATE", type=arguments.day, help="changed on or after (YYYY-MM-DD)"),
          "--category")  # fmt: skip
    needs(arxiv.add_argument("--until", metavar="DATE", type=arguments.day, help="changed on or before (YYYY-MM-DD)"),
          "--category")  # fmt: skip
    _common_options(arxiv, "https://oaipmh.arxiv.org/oai, or https://export.arxiv.org for --query and --ids")
    openreview = sources.add_parser("openreview", help="OpenReview: a venue's accepted papers")
    openreview.add_argument("venue", metavar="VENUE_ID", type=Text(200), help="such as NeurIPS.cc/2025/Conference")
    _common_options(openreview, "https://api2.openreview.net")
    openalex = sources.add_parser("openalex", help="OpenAlex: works by any filter")
    openalex.add_argument(
        "--filter", metavar="KEY:VALUE[,…]", type=Text(), required=True,
        help="OpenAlex's filter, such as primary_topic.id:T10028,publication_year:2025",
    )  # fmt: skip
    openalex.add_argument("--search", metavar="TEXT", type=Text(), help="words in the title, abstract or full text")
    _common_options(openalex, "https://api.openalex.org")


def query_of(args) -> SourceQuery:
    """The query the command line asks (a UserError for one its source cannot ask)."""
    from paperscope import sources

    given = {name: getattr(args, name, None) for name in FILTERS[args.source]}
    if args.source == "arxiv" and not any(given[name] for name in ("category", "query", "ids")):
        raise UserError("fetch arxiv: give --category, --query or --ids (see: paperscope fetch arxiv --help)")
    query = SourceQuery(args.source, tuple(sorted((k, v) for k, v in given.items() if v is not None)), args.base_url)
    sources.check(query)
    return query


def cmd_fetch(args) -> None:
    """Fetch a corpus file from a source; one summary line on stdout."""
    from paperscope import sources

    out = Path(args.output)
    sources.previous_state(out, args.restart)  # a file no fetch wrote is refused first, naming -o
    query = query_of(args)
    report = sources.fetch(query, out, FetchOptions(contact=args.contact, delay=args.delay, restart=args.restart))
    if report.complete_before:
        print(
            f"{out} is complete: {report.records:,} papers of {query.describe()} "
            "(an index built from it gets what is new with: paperscope update --index DIR)"
        )
        return
    marked = ", ".join(
        f"{n:,} {what}" for n, what in ((report.withdrawn, "withdrawn"), (report.deleted, "deleted")) if n
    )
    print(
        f"wrote {report.records:,} papers{f' ({marked})' if marked else ''} to {out} in {duration(report.seconds)}; "
        f"{query.describe()}"
    )


def update_options(update) -> None:
    """``update``'s options."""
    update.add_argument("--index", metavar="DIR", type=arguments.index_folder, required=True,
                        help="the index to bring up to date (built from fetched files)")  # fmt: skip
    _politeness_options(update)
    update.add_argument("--quiet", action="store_true", help="print the summary line only, not the digest")
    update.add_argument(
        "-k", type=Whole(1, MAX_RESULTS), default=DIGEST_PAPERS,
        help=f"new papers shown per collection and saved search in the digest (default {DIGEST_PAPERS})",
    )  # fmt: skip
    update.add_argument("-v", "--verbose", action="store_true", help="progress on stderr even when it is no terminal")


def cmd_update(args) -> None:
    """Fetch what each source of the index has new since the last update, add it, print one line
    and the digest of what arrived. Progress goes to stderr only on a terminal (or with -v), so that
    a cron mail holds the summary line (and the digest, without --quiet)."""
    import datetime
    import sys

    from paperscope.index.build.update import update
    from paperscope.index.paper_index import PaperIndex

    started, level = datetime.datetime.now(datetime.UTC), logger.level
    if not (args.verbose or sys.stderr.isatty()):
        logger.setLevel(logging.ERROR)  # cron: one line on stdout, and one on stderr on failure
    try:
        options = FetchOptions(contact=args.contact, delay=args.delay)
        report = update(args.index, options, lambda progress: logger.info(progress.line()))
        print(report.line())
        if not args.quiet:
            entries = PaperIndex.load(args.index).collections.digest(k=args.k, since=started)
            if entries:
                print(digest_markdown([dict(entry) for entry in entries]))
    finally:
        logger.setLevel(level)  # as it was, for whatever runs next in this process


COMMANDS = (
    ("fetch", "a corpus file from arXiv, OpenReview or OpenAlex (resumable)", fetch_options, None),
    ("update", "fetch what is new for an index built from fetched files, and add it (cron-safe)", update_options,
     cmd_update),
)  # fmt: skip
