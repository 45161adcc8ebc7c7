"""The command line of your own library: ``paperscope collection …``, ``recommend`` and ``digest``.

Collections live in the data folder (``$PAPERSCOPE_HOME/collections.sqlite``), each tied to the
index given with ``--index`` (default: the bundled sample's).
"""

from __future__ import annotations

import logging

from paperscope.embed.text import counted
from paperscope.settings import MAX_RESULTS
from paperscope.ui.loading import load, print_json, print_results, with_index, with_json

logger = logging.getLogger("paperscope")
DIGEST_PAPERS = 5


def _report(what: str, matched) -> None:
    counts = matched.counts()
    ways = ", ".join(f"{count} by {way}" for way, count in counts.items() if count and way != "outside")
    outside = counts["outside"]
    logger.info(
        "%s: %s%s%s%s",
        what,
        counted(len(matched.members), "entry", "entries"),
        f" matched corpus papers ({ways})" if ways else "",
        f"; {outside} not in the corpus, kept as outside members" if outside else "",
        f"; {matched.unusable} without a title or an abstract, left out" if matched.unusable else "",
    )


def cmd_collection_create(args) -> None:
    """Create a collection from paper ids and library files."""
    matched = load(args).collections.create(args.name, ids=args.ids, files=args.files)
    _report(f"created '{args.name}'", matched)


def cmd_collection_add(args) -> None:
    """Add paper ids and library files to a collection."""
    matched = load(args).collections.add(args.name, ids=args.ids, files=args.files)
    _report(f"added to '{args.name}'", matched)


def cmd_collection_remove(args) -> None:
    """Remove members from a collection."""
    removed = load(args).collections.remove(args.name, args.ids)
    logger.info("removed %d of %d from '%s'", removed, len(args.ids), args.name)


def cmd_collection_list(args) -> None:
    """List the index's collections."""
    from paperscope.ui.records import records

    listing = load(args).collections.listing()
    if args.json:
        print_json(records(listing))
        return
    if listing.empty:
        logger.info("no collections yet; create one with: paperscope collection create NAME [--from FILE] [ID …]")
    for row in listing.itertuples():
        extra = "".join(
            f", {count} {label}" for count, label in ((row.outside, "outside the corpus"), (row.missing, "missing"))
            if count
        )  # fmt: skip
        print(f"{row.name}  ({row.members} members: {row.in_index} in the index{extra})")


def cmd_collection_show(args) -> None:
    """Show a collection: its members and how its entries matched corpus papers."""
    from paperscope.ui.records import records

    shown = load(args).collections.show(args.name)
    if args.json:
        print_json({**shown, "papers": records(shown["papers"])})
        return
    ways = ", ".join(f"{count} by {way}" for way, count in shown["matched_by"].items() if count)
    print(f"{shown['name']}: {shown['members']} members, {shown['in_index']} in the index ({ways or 'none'})")
    for row in shown["papers"].itertuples():
        where = row.id if row.in_index else ("missing from the index" if row.id else "outside the corpus")
        print(f"  {where:<24}  {row.title}")


def cmd_collection_export(args) -> None:
    """Write a collection as CSV, BibTeX or RIS."""
    written = load(args).collections.export(args.name, args.output)
    logger.info("'%s' written to %s", args.name, written)


def cmd_collection_delete(args) -> None:
    """Delete a collection."""
    load(args).collections.delete(args.name)
    logger.info("deleted '%s'", args.name)


def cmd_recommend(args) -> None:
    """Papers like a collection (its members excluded), unlike another; with --new only new papers."""
    index = load(args)
    found = index.collections.recommend(args.name, avoid=args.avoid, k=args.k, new=args.new, since=args.since)
    if found.empty and not found.attrs.get("note") and not args.json:
        logger.info("no %spapers to recommend", "new " if args.new or args.since else "")
    print_results(found, args.json)


def _digest_markdown(digest: list[dict]) -> str:
    lines = []
    for entry in digest:
        lines.append(f"## {entry['name']}\n")
        papers = entry["papers"]
        if papers.empty:
            lines.append(f"No new papers since {entry['since'][:16].replace('T', ' ')}.\n")
            continue
        for row in papers.itertuples():
            link = f" — {row.url}" if getattr(row, "url", None) else ""
            lines.append(f"{row.rank}. **{row.title}** ({row.id}, {row.score:.2f}){link}")
        lines.append("")
    return "\n".join(lines) or "No collections yet.\n"


def cmd_digest(args) -> None:
    """Each collection's top new papers since it was last shown (for a mail from cron after an add)."""
    from paperscope.ui.records import records

    digest = load(args).collections.digest(k=args.k)
    if args.json:
        print_json([
            {"name": entry["name"], "since": entry["since"], "papers": records(entry["papers"])} for entry in digest
        ])  # fmt: skip
        return
    print(_digest_markdown(digest))


def collection_options(collection) -> None:
    """The ``collection`` command's own commands."""
    actions = collection.add_subparsers(dest="action", required=True, parser_class=type(collection))
    for name, summary, run in (
        ("create", "create a collection from paper ids and library files", cmd_collection_create),
        ("add", "add paper ids and library files to a collection", cmd_collection_add),
    ):
        sub = actions.add_parser(name, help=summary)
        sub.add_argument("name", metavar="NAME")
        sub.add_argument("ids", metavar="ID", nargs="*", help="ids of papers of the index")
        sub.add_argument(
            "--from", dest="files", metavar="FILE", nargs="+", default=[],
            help="library files: BibTeX, RIS, CSL-JSON (Zotero), or any corpus file; entries are matched "
            "to the index's papers by DOI, arXiv id, then title",
        )  # fmt: skip
        with_index(sub)
        sub.set_defaults(run=run)
    remove = actions.add_parser("remove", help="remove members from a collection")
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("ids", metavar="ID", nargs="+", help="paper ids (or keys of outside entries, see show)")
    listing = actions.add_parser("list", help="the index's collections")
    show = actions.add_parser("show", help="a collection's members, and how its entries matched")
    show.add_argument("name", metavar="NAME")
    export = actions.add_parser("export", help="write a collection as .csv, .bib or .ris")
    export.add_argument("name", metavar="NAME")
    export.add_argument("-o", "--output", metavar="FILE", required=True, help="FILE.csv, FILE.bib or FILE.ris")
    delete = actions.add_parser("delete", help="delete a collection")
    delete.add_argument("name", metavar="NAME")
    for sub, run in ((remove, cmd_collection_remove), (listing, cmd_collection_list), (show, cmd_collection_show),
                     (export, cmd_collection_export), (delete, cmd_collection_delete)):  # fmt: skip
        with_index(sub)
        sub.set_defaults(run=run)
    with_json(listing, "the collections as JSON")
    with_json(show, "the collection as JSON")


def recommend_options(recommend) -> None:
    """The ``recommend`` command's options."""
    recommend.add_argument("name", metavar="NAME", help="the collection to recommend from")
    recommend.add_argument("--not", dest="avoid", metavar="NAME2", help="a collection to recommend away from")
    recommend.add_argument("-k", type=int, default=20, help=f"number of papers, 1 to {MAX_RESULTS:,} (default 20)")
    recommend.add_argument(
        "--new", action="store_true", help="only papers added since the collection was last shown (then shown)"
    )
    recommend.add_argument("--since", metavar="DATE", help="only papers added since DATE (2026-12-01)")
    with_index(recommend)
    with_json(recommend, "a list of result objects as JSON")


def digest_options(digest) -> None:
    """The ``digest`` command's options."""
    digest.add_argument("-k", type=int, default=DIGEST_PAPERS, help=f"papers per collection (default {DIGEST_PAPERS})")
    output = digest.add_mutually_exclusive_group()
    output.add_argument("--md", action="store_true", help="print Markdown (the default)")
    with_json(output, "each collection's new papers as JSON")
    with_index(digest)


# Read by paperscope.ui.cli.make_parser: name, one-line help, options, what runs it (None: its own commands do)
COMMANDS = (
    ("collection", "your collections: create, add, remove, list, show, export, delete", collection_options, None),
    ("recommend", "papers like a collection, and a feed of new ones (--new)", recommend_options, cmd_recommend),
    ("digest", "each collection's top new papers since last shown, as Markdown or JSON", digest_options, cmd_digest),
)
