"""The command line's corrections to the topics: ``paperscope topics rename|merge|split|move|curations``.

Each is kept beside the index (``DIR/curations.json``) and applied whenever it is loaded: see
:mod:`paperscope.index.curation`. ``paperscope topics`` alone still lists the topics.
"""

from __future__ import annotations

import argparse
import logging

from paperscope.embed.text import counted
from paperscope.errors import UserError
from paperscope.limits import MAX_NAME_CHARS
from paperscope.settings import LEVELS
from paperscope.ui.arguments import Text, Whole, index_folder
from paperscope.ui.loading import load, print_json

logger = logging.getLogger("paperscope")


def report(index) -> None:
    """Log each curation of ``index`` that matches no topic any more (one sentence each, on stderr)."""
    for sentence in index.topics.report:
        logger.warning("%s", sentence)


def _loaded(args, default_level: str, reported: bool = True):
    """The index of a correction (its curation report logged when ``reported``) and the level it acts at."""
    if getattr(args, "by", None) or getattr(args, "compare", None):
        raise UserError(f"--by and --compare list topics; `paperscope topics {args.action}` takes neither")
    index = load(args)
    if reported:
        report(index)
    return index, args.level or default_level


def _named(index, level: str, topic: int) -> str:
    table = index.topics.table(level)
    row = table[table["cluster"] == topic].iloc[0]
    return f"{level} topic {topic} '{row['name']}' ({counted(int(row['size']), 'paper')})"


def cmd_rename(args) -> None:
    """Rename a topic."""
    index, level = _loaded(args, "coarse")
    names = index.topics.table(level).set_index("cluster")["name"]
    topic = index.topics.rename(args.topic, args.name, level)
    renamed = index.topics.table(level).set_index("cluster")["name"]
    logger.info("%s topic %d '%s' is now '%s'", level, topic, names[topic], renamed[topic])


def cmd_merge(args) -> None:
    """Merge topic B into topic A."""
    index, level = _loaded(args, "coarse")
    other = index.topics.find(args.second, level)
    merged = _named(index, level, other)
    topic = index.topics.merge(args.first, other, name=args.name, level=level)
    logger.info("merged %s into %s", merged, _named(index, level, topic))


def cmd_split(args) -> None:
    """Split a topic into k by its papers."""
    index, level = _loaded(args, "coarse")
    made = index.topics.split(args.topic, k=args.k, level=level)
    logger.info("split into %s", "; ".join(_named(index, level, topic) for topic in made))


def cmd_move(args) -> None:
    """Move papers into a topic."""
    index, level = _loaded(args, "fine")
    topic = index.topics.move(args.paper_ids, args.to, level=level)
    count = len(dict.fromkeys(args.paper_ids))
    logger.info("moved %d %s into %s", count, "paper" if count == 1 else "papers", _named(index, level, topic))


def cmd_curations(args) -> None:
    """List the index's curations, and whether each still applies."""
    index, _ = _loaded(args, "coarse", reported=False)  # the listing says it
    listing = index.topics.curations()
    if getattr(args, "json", False):
        from paperscope.records import records

        print_json(records(listing))
        return
    if listing.empty:
        logger.info("no curations yet; correct topics with: paperscope topics rename|merge|split|move")
    for row in listing.itertuples():
        print(f"{row.number:>3}  {'applied' if row.applied else 'NOT applied':<11}  {row.description}")
        if not row.applied:
            print(f"     {row.note}")


def _common(sub, level_default: str | None, json_help: str | None = None) -> None:
    """--level (``level_default``: its default; None: no --level), --index (and --json) of a
    correction; given before the action they count too."""
    if level_default:
        sub.add_argument("--level", choices=LEVELS, default=argparse.SUPPRESS,
                         help=f"level of the topics (default: {level_default})")  # fmt: skip
    sub.add_argument("--index", metavar="DIR", type=index_folder, default=argparse.SUPPRESS,
                     help="index folder (default: the bundled NeurIPS 2025 sample)")  # fmt: skip
    if json_help:
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=f"print {json_help}")


TOPIC = "a topic: its number or (part of) its name, see paperscope topics"
NAME = Text(MAX_NAME_CHARS)  # a topic's number, name or part of it
MAX_SPLIT = 100  # parts a split makes, at most (each is named by its papers' terms)


def add_actions(topics, parser_class) -> None:
    """The corrections, as actions of the ``topics`` command's parser."""
    actions = topics.add_subparsers(
        dest="action", metavar="[ACTION]", parser_class=parser_class, required=False,
        title="corrections (kept beside the index in curations.json, applied on every load)",
    )  # fmt: skip
    rename = actions.add_parser("rename", help="rename a topic")
    rename.add_argument("topic", metavar="TOPIC", type=NAME, help=TOPIC)
    rename.add_argument("name", metavar="NAME", type=NAME, help="its new name")
    merge = actions.add_parser("merge", help="merge topic B into topic A")
    merge.add_argument("first", metavar="A", type=NAME, help=TOPIC)
    merge.add_argument("second", metavar="B", type=NAME, help="the topic merged into A")
    merge.add_argument("--name", type=NAME, help="the merged topic's name (default: A's)")
    split = actions.add_parser("split", help="split a topic into k by its papers")
    split.add_argument("topic", metavar="TOPIC", type=NAME, help=TOPIC)
    split.add_argument(
        "-k", type=Whole(2, MAX_SPLIT), default=2, help="number of topics it becomes, 2 or more (default 2)"
    )
    move = actions.add_parser("move", help="move papers into another topic")
    move.add_argument("paper_ids", metavar="PAPER_ID", type=Text(), nargs="+", help="the papers' ids")
    move.add_argument("--to", metavar="TOPIC", type=NAME, required=True, help=TOPIC)
    listing = actions.add_parser("curations", help="the corrections made, and whether each still applies")
    for sub, run, level in ((rename, cmd_rename, "coarse"), (merge, cmd_merge, "coarse"), (split, cmd_split, "coarse"),
                            (move, cmd_move, "fine"), (listing, cmd_curations, None)):  # fmt: skip
        _common(sub, level, "the curations as JSON" if sub is listing else None)
        sub.set_defaults(run=run)
