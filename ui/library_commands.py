"""The command line of your own library: ``paperscope collection …``, ``recommend``, ``watch …``
(saved searches) and ``digest``.

Collections and saved searches live in the data folder (``$PAPERSCOPE_HOME/collections.sqlite``),
each tied to the index given with ``--index`` (default: the bundled sample's).
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path

from paperscope import locations
from paperscope.embed.text import counted
from paperscope.errors import UserError
from paperscope.limits import MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_RESULTS, WATCH_THRESHOLD
from paperscope.ui import arguments
from paperscope.ui.arguments import Text, Whole
from paperscope.ui.loading import load, print_json, print_results, reason_text, with_index, with_json

logger = logging.getLogger("paperscope")
DIGEST_PAPERS = 5


def no_collections(index) -> str:
    """What to say of an index with no collection and no saved search: the two ways to make one,
    each a command that runs as printed (``--index`` given when not the default)."""
    option = locations.index_option(index)
    return (
        f"no collections or saved searches yet; create one with: paperscope collection create NAME "
        f"[--from FILE] [ID …]{option}; or save a search with: paperscope watch add TEXT --name NAME{option}"
    )


NAME = Text(MAX_NAME_CHARS)  # a collection's name


def _embed_outside(collections, args, matched) -> None:
    """After an import into ``args.name``: embed its outside entries now (progress on stderr), or
    (``--defer-embedding``) say when they will be."""
    outside = matched.counts()["outside"]
    if args.defer_embedding and outside:
        logger.info(
            "%s not embedded yet: a recommendation embeds them when it needs them "
            "(or: paperscope collection embed %s%s)",
            counted(outside, "entry outside the corpus", "entries outside the corpus"),
            shlex.quote(args.name), locations.index_option(args.index),
        )  # fmt: skip
    elif outside:
        collections.embed_outside(args.name)


def _files_not_ids(args, command: str, index) -> None:
    """Refuse a file given where paper ids go (``collection create mine refs.bib``; a paper of
    ``index`` of that name is an id), with the command that imports it (``--from``): otherwise it
    is looked up as an id and not found."""
    papers = set(index.known(args.ids))
    files = [item for item in args.ids if item not in papers and Path(item).is_file()]
    if files:
        ids = [shlex.quote(item) for item in args.ids if item not in files]
        fixed = ["paperscope collection", command, shlex.quote(args.name), *ids, "--from",
                 *map(shlex.quote, [*(args.files or []), *files])]  # fmt: skip
        raise UserError(
            f"{files[0]} is a file, not a paper id; library files go after --from: "
            f"{' '.join(fixed)}{locations.index_option(args.index)}"
        )


def cmd_collection_create(args) -> None:
    """Create a collection from paper ids and library files."""
    index = load(args)
    _files_not_ids(args, "create", index)
    collections = index.collections
    matched = collections.create(args.name, ids=args.ids, files=args.files, embed=False)
    logger.info("created '%s': %s", args.name, matched.summary())
    _embed_outside(collections, args, matched)


def cmd_collection_add(args) -> None:
    """Add paper ids and library files to a collection."""
    index = load(args)
    _files_not_ids(args, "add", index)
    collections = index.collections
    matched = collections.add(args.name, ids=args.ids, files=args.files, embed=False)
    changed = matched.members or not matched.present
    logger.info("%s: %s", f"added to '{args.name}'" if changed else f"'{args.name}' unchanged", matched.summary())
    _embed_outside(collections, args, matched)


def cmd_collection_embed(args) -> None:
    """Embed the entries outside the corpus not embedded yet (an import interrupted or deferred)."""
    done = load(args).collections.embed_outside(args.name)
    logger.info("embedded %s", counted(done, "entry outside the corpus", "entries outside the corpus"))


def cmd_collection_remove(args) -> None:
    """Remove members from a collection."""
    removed = load(args).collections.remove(args.name, args.ids)
    logger.info("removed %d of %d from '%s'", removed, len(args.ids), args.name)


def cmd_collection_dismiss(args) -> None:
    """Dismiss papers from a collection's recommendations ("not interested"): never recommended for
    it again, and its recommendations steered away from them, until undismissed."""
    dismissed = load(args).collections.dismiss(args.name, args.ids)
    logger.info("dismissed %s from the recommendations of '%s'", counted(dismissed, "paper"), args.name)


def cmd_collection_undismiss(args) -> None:
    """Bring papers dismissed from a collection's recommendations back."""
    back = load(args).collections.undismiss(args.name, args.ids)
    logger.info("brought back %d of %d to the recommendations of '%s'", back, len(args.ids), args.name)


def cmd_collection_list(args) -> None:
    """List the index's collections."""
    from paperscope.records import records

    listing = load(args).collections.listing()
    if args.json:
        print_json(records(listing))
        return
    if listing.empty:
        logger.info("%s", no_collections(args.index))
    for row in listing.itertuples():
        extra = "".join(
            f", {count} {label}" for count, label in ((row.outside, "outside the corpus"), (row.missing, "missing"))
            if count
        )  # fmt: skip
        print(f"{row.name}  ({row.members} members: {row.in_index} in the index{extra})")


def cmd_collection_show(args) -> None:
    """Show a collection: its members and how its entries matched corpus papers."""
    from paperscope.records import records

    index = load(args)
    shown = index.collections.show(args.name)
    if args.json:
        print_json({**shown, "papers": records(shown["papers"])})
        return
    if not shown["members"]:
        logger.info("%s", index.collections.empty_note(shown["name"]))
    ways = ", ".join(
        f"{count} {'outside the corpus' if way == 'outside' else 'by ' + way}"
        for way, count in shown["matched_by"].items() if count
    )  # fmt: skip
    print(f"{shown['name']}: {shown['members']} members, {shown['in_index']} in the index ({ways or 'none'})")
    for row in shown["papers"].itertuples():
        where = row.id if row.in_index else (f"missing: {row.id}" if isinstance(row.id, str) else "outside")
        cited = f"  [{row.citation_key}]" if isinstance(row.citation_key, str) else ""
        print(f"  {where:<24}  {row.title}{cited}")
    if shown["dismissed"]:
        print(f"dismissed from its recommendations ({len(shown['dismissed'])}):")
        present = index.known(shown["dismissed"])
        known = dict(zip(present, index.table(index.rows(present), ["title"]).column("title").to_pylist(), strict=True))
        for paper_id in shown["dismissed"]:
            print(f"  {paper_id:<24}  {known.get(paper_id, '(no longer in the index)')}")


def cmd_collection_export(args) -> None:
    """Write a collection as BibTeX, RIS, CSL-JSON or CSV."""
    collections = load(args).collections
    written = collections.export(args.name, args.output, prefer=args.prefer, corpus_fields=args.with_corpus_fields)
    if collections.members(args.name).empty:
        logger.info("'%s' written to %s with no entries: %s", args.name, written, collections.empty_note(args.name))
    else:
        logger.info("'%s' written to %s", args.name, written)


def cmd_collection_mark_shown(args) -> None:
    """Mark collections' new papers as shown: the next --new and digest start from now."""
    if bool(args.names) == args.all:
        raise UserError("name the collections to mark shown, or give --all")
    names = load(args).collections.mark_shown(None if args.all else args.names)
    logger.info("marked shown: %s", ", ".join(f"'{name}'" for name in names) or "no collections")


def cmd_collection_backup(args) -> None:
    """Write every collection of the data folder to one JSON file."""
    from paperscope.files import atomic_path

    backup = load(args).collections.backup()
    with atomic_path(Path(args.output)) as temporary:
        temporary.write_text(json.dumps(backup, ensure_ascii=False), encoding="utf-8")
    logger.info("%s written to %s", counted(len(backup["collections"]), "collection", "collections"), args.output)


def cmd_collection_restore(args) -> None:
    """Read collections back from a backup file."""
    path = Path(args.file)
    try:
        backup = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not readable as a backup ({exc})") from None
    restored = load(args).collections.restore(backup, str(path), into_this_index=args.into_index)
    logger.info("restored %s: %s", counted(len(restored), "collection", "collections"), ", ".join(restored))


def cmd_collection_delete(args) -> None:
    """Delete a collection."""
    load(args).collections.delete(args.name)
    logger.info("deleted '%s'", args.name)


def cmd_recommend(args) -> None:
    """Papers like a collection (its members excluded), unlike another; with --new only new papers."""
    index = load(args)
    found = index.collections.recommend(args.name, avoid=args.avoid, k=args.k, new=args.new, since=args.since)
    print_results(found, args.json)


def digest_markdown(entries: list[dict]) -> str:
    """The digest (``ix.collections.digest()``'s entries) as Markdown: a section per collection
    and per saved search ("Saved search: NAME", its query and threshold), each new paper with its
    score, link and reason, or a line saying there is none since when."""
    lines = []
    for entry in entries:
        if entry.get("kind") == "watch":
            lines.append(f"## Saved search: {entry['name']}\n")
            lines.append(f"“{entry['query']}”, matches from {entry['threshold']:.2f}\n")
        else:
            lines.append(f"## {entry['name']}\n")
        papers = entry["papers"].to_records()  # lists as lists (a DataFrame holds the reasons' terms as arrays)
        if not papers:
            none = "matches" if entry.get("kind") == "watch" else "papers"
            lines.append(f"No new {none} since {str(entry['since'])[:16].replace('T', ' ')}.\n")
            continue
        for row in papers:
            link = f" — {row['url']}" if row.get("url") else ""
            lines.append(f"{row['rank']}. **{row['title']}** ({row['id']}, {row['score']:.2f}){link}")
            lines.append(f"   {reason_text(row['because'])}")
        lines.append("")
    return "\n".join(lines) or "No collections or saved searches yet.\n"


def digest_json(entries: list[dict]) -> list[dict]:
    """The digest's entries as JSON-ready values: each entry's fields, its papers as records."""
    return [{**entry, "papers": entry["papers"].to_records()} for entry in entries]


def cmd_digest(args) -> None:
    """Each collection's top new papers and each saved search's new matches since each was last
    marked shown, or since --since (for a mail from cron after an add); it marks nothing:
    ``paperscope collection mark-shown --all`` and ``paperscope watch mark-shown --all`` do."""
    digest = load(args).collections.digest(k=args.k, since=args.since)
    if not any(len(entry["papers"]) for entry in digest):  # why, on stderr (the Markdown says it too)
        whys = "; ".join(f"'{entry['name']}': {entry['papers'].note}" for entry in digest)
        none = no_collections(args.index)
        logger.info("%s", f"no new papers for any collection or saved search ({whys})" if digest else none)
    if args.json:
        print_json(digest_json(digest))
        return
    print(digest_markdown(digest))


def cmd_watch_add(args) -> None:
    """Save a search: free text, or paper ids of the index."""
    watch = load(args).collections.watches.add(" ".join(args.query), name=args.name, threshold=args.threshold)
    what = "papers" if watch["kind"] == "ids" else "text"
    logger.info("saved '%s' (%s, matches from %.2f)", watch["name"], what, watch["threshold"])


def cmd_watch_list(args) -> None:
    """List the index's saved searches."""
    from paperscope.records import records

    listing = load(args).collections.watches.listing()
    if args.json:
        print_json(records(listing))
        return
    if listing.empty:
        save = "paperscope watch add TEXT --name NAME"
        logger.info("no saved searches yet; save one with: %s%s", save, locations.index_option(args.index))
    for row in listing.itertuples():
        print(f"{row.name}  ({'papers' if row.kind == 'ids' else 'text'}, from {row.threshold:.2f}): {row.query}")


def cmd_watch_show(args) -> None:
    """A saved search's new matches (since it was last marked shown, or --since), or every match (--all)."""
    found = load(args).collections.matches(args.name, k=args.k, new=not args.all, since=args.since)
    print_results(found, args.json)


def cmd_watch_remove(args) -> None:
    """Forget a saved search."""
    load(args).collections.watches.remove(args.name)
    logger.info("removed the saved search '%s'", args.name)


def cmd_watch_mark_shown(args) -> None:
    """Mark saved searches' new matches as shown: the next show and digest start from now."""
    if bool(args.names) == args.all:
        raise UserError("name the saved searches to mark shown, or give --all")
    names = load(args).collections.watches.mark_shown(None if args.all else args.names)
    logger.info("marked shown: %s", ", ".join(f"'{name}'" for name in names) or "no saved searches")


def _mark_shown_parser(actions, what: str, next_: str, kind: str, kinds: str):
    """The ``mark-shown`` action of collections and saved searches alike: NAME… or --all."""
    mark = actions.add_parser("mark-shown", help=f"count the {what} as shown: the next {next_} start from now")
    mark.add_argument("names", metavar="NAME", type=NAME, nargs="*", help=f"the {kinds} (or --all)")
    mark.add_argument("--all", action="store_true", help=f"every {kind} of the index")
    return mark


def watch_options(watch) -> None:
    """The ``watch`` command's own commands."""
    actions = watch.add_subparsers(dest="action", required=True, parser_class=type(watch))
    add = actions.add_parser("add", help="save a search: free text, or paper ids of the index")
    add.add_argument(
        "query", metavar="QUERY", type=Text(MAX_QUERY_CHARS), nargs="+",
        help="free text, or ids of papers of the index (a search by papers when every word is one)",
    )  # fmt: skip
    add.add_argument("--name", metavar="NAME", type=NAME, help="its name (default: the query's first words)")
    add.add_argument(
        "--threshold", metavar="T", type=arguments.Fraction(-1, 1), default=None,
        help=f"the cosine with the query a match has at least (default {WATCH_THRESHOLD}: above it most matches "
        "share the query's area, docs/recommend.md)",
    )  # fmt: skip
    listing = actions.add_parser("list", help="the index's saved searches")
    show = actions.add_parser("show", help="a saved search's new matches (--all: every match), with reasons")
    show.add_argument("name", metavar="NAME", type=NAME)
    fresh = show.add_mutually_exclusive_group()  # every match, or new since a date: not both
    fresh.add_argument("--all", action="store_true", help="every match above its threshold, new or not")
    fresh.add_argument("--since", metavar="DATE", type=arguments.date, help="only papers added since DATE (2026-12-01)")
    show.add_argument(
        "-k", type=Whole(1, MAX_RESULTS), default=20, help=f"at most this many, 1 to {MAX_RESULTS:,} (default 20)"
    )
    remove = actions.add_parser("remove", help="forget a saved search")
    remove.add_argument("name", metavar="NAME", type=NAME)
    mark = _mark_shown_parser(
        actions, "new matches of saved searches", "show and digest", "saved search", "saved searches"
    )
    for sub, run in ((add, cmd_watch_add), (listing, cmd_watch_list), (show, cmd_watch_show),
                     (remove, cmd_watch_remove), (mark, cmd_watch_mark_shown)):  # fmt: skip
        with_index(sub)
        sub.set_defaults(run=run)
    with_json(listing, "the saved searches as JSON")
    with_json(show, "a list of result objects as JSON")


def _export_parser(actions):
    """``collection export``: its parser, with its options."""
    export = actions.add_parser(
        "export", help="write a collection as .bib, .ris, .json (CSL-JSON) or .csv",
        description="Each imported entry is written with its own citation key, entry type and every field it had "
        "(converted when it came in another format). Where the entry and the corpus disagree the entry wins: "
        "the corpus only fills the fields it lacks (--prefer corpus: the corpus's values replace the entry's). "
        "Papers added from the corpus get readable keys (surnameYEARword), unique within the file.",
    )  # fmt: skip
    export.add_argument("name", metavar="NAME", type=NAME)
    export.add_argument(
        "-o", "--output", metavar="FILE", type=arguments.OutputFile((".bib", ".ris", ".json", ".csv")),
        required=True, help="FILE.bib, FILE.ris, FILE.json or FILE.csv",
    )  # fmt: skip
    arguments.with_force(export)
    export.add_argument(
        "--prefer", choices=("entry", "corpus"), default="entry",
        help="whose value a field takes when the entry and the corpus disagree (default: the entry's)",
    )  # fmt: skip
    export.add_argument(
        "--with-corpus-fields", action="store_true",
        help="also write the corpus's own columns (decision, tags, …): in BibTeX as paperscope-NAME fields, "
        "in RIS as notes, in CSL-JSON under custom (default: a library's entries carry only their own fields)",
    )  # fmt: skip
    return export


def collection_options(collection) -> None:
    """The ``collection`` command's own commands."""
    actions = collection.add_subparsers(dest="action", required=True, parser_class=type(collection))
    for name, summary, run in (
        ("create", "create a collection from paper ids and library files", cmd_collection_create),
        ("add", "add paper ids and library files to a collection", cmd_collection_add),
    ):
        sub = actions.add_parser(name, help=summary)
        sub.add_argument("name", metavar="NAME", type=NAME)
        sub.add_argument(
            "ids", metavar="ID", type=Text(), nargs="*", help="ids of papers of the index (before or after options)"
        )
        sub.add_argument(
            "--from", dest="files", metavar="FILE", type=arguments.existing_file, nargs="+", default=[],
            help="library files: BibTeX, RIS, CSL-JSON (Zotero, Better BibTeX, Mendeley, JabRef, Google "
            "Scholar), or any corpus file; entries are matched to the index's papers by DOI, arXiv id, then "
            "title, and kept as they are for exports",
        )  # fmt: skip
        sub.add_argument(
            "--defer-embedding", action="store_true",
            help="store the entries outside the corpus without embedding them now: a recommendation (or "
            "paperscope collection embed) embeds them when needed",
        )  # fmt: skip
        with_index(sub)
        sub.set_defaults(run=run)
    remove = actions.add_parser("remove", help="remove members from a collection")
    remove.add_argument("name", metavar="NAME", type=NAME)
    remove.add_argument(
        "ids", metavar="ID", type=Text(), nargs="+", help="paper ids (or keys of outside entries, see show)"
    )
    dismiss = actions.add_parser(
        "dismiss", help="dismiss papers from a collection's recommendations (not interested; undismiss undoes)"
    )
    undismiss = actions.add_parser("undismiss", help="bring papers dismissed from its recommendations back")
    for sub in (dismiss, undismiss):
        sub.add_argument("name", metavar="NAME", type=NAME)
        sub.add_argument("ids", metavar="PAPER_ID", type=Text(), nargs="+", help="ids of papers of the index")
    listing = actions.add_parser("list", help="the index's collections")
    show = actions.add_parser("show", help="a collection's members, and how its entries matched")
    show.add_argument("name", metavar="NAME", type=NAME)
    export = _export_parser(actions)
    delete = actions.add_parser("delete", help="delete a collection")
    delete.add_argument("name", metavar="NAME", type=NAME)
    mark = _mark_shown_parser(actions, "new papers of collections", "--new and digest", "collection", "collections")
    embed = actions.add_parser(
        "embed", help="embed entries outside the corpus not embedded yet (an import interrupted or deferred)"
    )
    embed.add_argument("name", metavar="NAME", type=NAME, nargs="?", help="one collection (default: all of the index)")
    backup = actions.add_parser("backup", help="write every collection of the data folder to one JSON file")
    backup.add_argument(
        "-o", "--output", metavar="FILE", type=arguments.OutputFile(), required=True, help="the backup file (JSON)"
    )
    arguments.with_force(backup)
    restore = actions.add_parser("restore", help="read collections back from a backup file (another machine's too)")
    restore.add_argument(
        "file", metavar="FILE", type=arguments.existing_file, help="a file written by paperscope collection backup"
    )
    restore.add_argument(
        "--into-index", action="store_true",
        help="give every collection of the file to the --index given (default: each to the index it was kept "
        "for, known by its identity, wherever its folder is now)",
    )  # fmt: skip
    for sub, run in ((remove, cmd_collection_remove), (dismiss, cmd_collection_dismiss),
                     (undismiss, cmd_collection_undismiss), (listing, cmd_collection_list), (show, cmd_collection_show),
                     (export, cmd_collection_export), (delete, cmd_collection_delete),
                     (mark, cmd_collection_mark_shown), (embed, cmd_collection_embed),
                     (backup, cmd_collection_backup), (restore, cmd_collection_restore)):  # fmt: skip
        with_index(sub)
        sub.set_defaults(run=run)
    with_json(listing, "the collections as JSON")
    with_json(show, "the collection as JSON")


def recommend_options(recommend) -> None:
    """The ``recommend`` command's options."""
    recommend.add_argument("name", metavar="NAME", type=NAME, help="the collection to recommend from")
    recommend.add_argument(
        "--not", dest="avoid", metavar="NAME2", type=NAME, help="a collection to recommend away from"
    )
    recommend.add_argument(
        "-k", type=Whole(1, MAX_RESULTS), default=20, help=f"number of papers, 1 to {MAX_RESULTS:,} (default 20)"
    )
    fresh = recommend.add_mutually_exclusive_group()  # since the last mark, or since a date: not both
    fresh.add_argument(
        "--new", action="store_true",
        help="only papers added since the collection was last marked shown (reading marks nothing: "
        "paperscope collection mark-shown does)",
    )  # fmt: skip
    fresh.add_argument("--since", metavar="DATE", type=arguments.date, help="only papers added since DATE (2026-12-01)")
    with_index(recommend)
    with_json(recommend, "a list of result objects as JSON")


def digest_options(digest) -> None:
    """The ``digest`` command's options."""
    digest.add_argument(
        "-k", type=Whole(1, MAX_RESULTS), default=DIGEST_PAPERS,
        help=f"papers per collection and per saved search (default {DIGEST_PAPERS})",
    )  # fmt: skip
    digest.add_argument(
        "--since", metavar="DATE", type=arguments.date,
        help="papers added since DATE (2026-12-01) for every one (default: each since it was last marked shown)",
    )  # fmt: skip
    output = digest.add_mutually_exclusive_group()
    output.add_argument("--md", action="store_true", help="print Markdown (the default)")
    with_json(output, "each collection's new papers and each saved search's new matches as JSON")
    with_index(digest)


# Read by paperscope.ui.cli.make_parser: name, one-line help, options, what runs it (None: its own commands do)
COMMANDS = (
    (
        "collection",
        "your collections: create, add, remove, dismiss, list, show, export, delete, mark-shown, backup, …",
        collection_options,
        None,
    ),
    ("recommend", "papers like a collection, and a feed of new ones (--new)", recommend_options, cmd_recommend),
    (
        "watch",
        "saved searches: add, list, show (their new matches, with reasons), remove, mark-shown",
        watch_options,
        None,
    ),
    (
        "digest",
        "each collection's top new papers and each saved search's new matches since last marked shown, as Markdown "
        "or JSON",
        digest_options,
        cmd_digest,
    ),
)
