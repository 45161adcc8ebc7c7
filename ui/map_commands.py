"""The command line's maps of one index side by side: ``paperscope remap`` and ``paperscope maps``.

A remap re-cuts and re-names the topics from the stored vectors and layout, in seconds, and keeps
the result as a named map beside the index, made current; ``maps`` lists them, ``maps use NAME``
switches, ``maps delete NAME`` deletes one (see :mod:`paperscope.index.store.maps`).
"""

from __future__ import annotations

import logging
import shlex

from paperscope import locations
from paperscope.errors import UserError
from paperscope.limits import MAX_NAME_CHARS
from paperscope.records import records
from paperscope.ui.arguments import Text, Whole
from paperscope.ui.loading import load, print_json, with_index, with_json

logger = logging.getLogger("paperscope")


def cmd_remap(args) -> None:
    """Make another map with --topics coarse topics (and --min-topic-size) and make it current."""
    index = load(args)
    before = index.map.current
    name = index.map.remap(args.topics, min_topic_size=args.min_topic_size, name=args.name)
    topics, clusters = (len(index.topics.table(level)) for level in ("coarse", "fine"))
    logger.info("map '%s': %d topics, %d fine clusters; now current (was '%s')", name, topics, clusters, before)
    for sentence in index.topics.report:
        logger.warning("%s", sentence)
    if len(index.topics.table("coarse")) != args.topics:
        logger.info("%d topics asked, %d made: the corrections to the topics changed the count", args.topics, topics)


def cmd_maps(args) -> None:
    """List the maps; ``use NAME`` switches to one, ``delete NAME`` deletes one."""
    if args.action in ("use", "delete") and not args.map:
        raise UserError(f"paperscope maps {args.action} needs a map's name (paperscope maps lists them)")
    if args.action == "list" and args.map:
        raise UserError(
            f"paperscope maps lists the maps; to switch to '{args.map}': "
            f"paperscope maps use {shlex.quote(args.map)}{locations.index_option(args.index)}"
        )
    index = load(args)
    if args.action == "use":
        index.map.use(args.map)
        logger.info("map '%s' is now current", args.map)
    elif args.action == "delete":
        index.map.delete(args.map)
        logger.info("map '%s' deleted", args.map)
    table = index.map.maps()
    if args.json:
        print_json(records(table))
        return
    if index.map.note:
        logger.warning("%s", index.map.note)
    for row in table.itertuples():
        mark = "*" if row.current else " "
        stale = "  (stale: made before the last build or add)" if row.stale else ""
        print(f"{mark} {row.name:<24} {row.topics:>4} topics {row.clusters:>5} clusters  {row.created}{stale}")


def remap_options(remap) -> None:
    """``paperscope remap``'s options."""
    remap.add_argument("--topics", type=Whole(2), metavar="N", required=True, help="the number of coarse topics")
    remap.add_argument(
        "--min-topic-size", type=Whole(2), metavar="N",
        help="find the fine clusters again with at least N papers each (default: keep the build's)",
    )  # fmt: skip
    remap.add_argument(
        "--name",
        metavar="NAME",
        type=Text(MAX_NAME_CHARS),
        help="the map's name (default topics-N); one of that name is replaced",
    )
    with_index(remap)


def maps_options(command) -> None:
    """``paperscope maps``'s options."""
    command.add_argument("action", nargs="?", choices=("list", "use", "delete"), default="list", help="(default: list)")
    command.add_argument("map", nargs="?", metavar="NAME", type=Text(MAX_NAME_CHARS), help="the map to use or delete")
    with_index(command)
    with_json(command, "the maps as JSON: name, topics, clusters, created, current, stale")


# Read by paperscope.ui.cli.make_parser: name, one-line help, options, what runs it
COMMANDS = (
    ("remap", "another map of the topics (--topics N) from the stored layout, in seconds", remap_options, cmd_remap),
    ("maps", "the maps of an index: list, use NAME, delete NAME", maps_options, cmd_maps),
)
