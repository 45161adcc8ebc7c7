"""What the command line's commands share: the index they act on, and how results are printed."""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from paperscope.errors import UserError, shown
from paperscope.ui import arguments


def index_folder(args) -> Path:
    """The --index folder, or the default sample index, built on first use (only then is the
    build's code imported: a lookup in a given folder loads none of it)."""
    if args.index:
        return Path(args.index)
    from paperscope.index.build.pipeline import sample_index

    return sample_index()


def load(args):
    """The :class:`~paperscope.index.paper_index.PaperIndex` of --index (and --model, if given)."""
    from paperscope.index.paper_index import PaperIndex

    return PaperIndex.load(index_folder(args), model_path=getattr(args, "model", None))


def print_json(value) -> None:
    """Print a JSON value as ``--json`` does: indented, Unicode as is."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_results(results, as_json: bool, show: Sequence[str] = ()) -> None:
    """Print ranked papers (:class:`~paperscope.index.search.results.Results`): a line each, with
    the values of the ``show`` columns after the title, or a JSON list of records; when there are
    none, why (on stderr)."""
    if not len(results) and results.note:
        logging.getLogger("paperscope").info("%s", results.note)
    if as_json:
        print_json(results.to_records())
        return
    records = results.to_records()
    for name in show:
        if records and name not in records[0]:
            raise UserError(f"no column '{shown(name)}' to show; the columns are: {', '.join(records[0])}")
    for row in records:
        values = "".join(f"  [{name}: {_shown_value(row[name])}]" for name in show)
        title = marked_title(row["title"], row.get("status"))
        print(f"{row['rank']:>3}  {row['score']:6.3f}  {row['id']:<14}  {title}{values}")
        if row.get("because"):
            print(f"{'':13}{reason_text(row['because'])}")


def marked_title(title, status) -> str:
    """A result's title as it is shown: a paper its source withdrew, deleted or retracted (its
    ``status``, kept by ``add`` and ``update``; None or "active" for others) with the status first:
    "[withdrawn] Title"."""
    return f"[{status}] {title}" if isinstance(status, str) and status != "active" else str(title)


REASON_TITLE_CHARS = 70  # a member's title in a reason, cut to this many characters


def reason_text(because: dict) -> str:
    """A recommendation's reason in words, its closest members by title (inside or outside the
    index): 'like "Federated averaging" (0.71), "Private SGD" (0.65); shares federated learning, privacy'."""
    members = ", ".join(
        f"“{_cut(shown(member.get('title') or member.get('citation_key') or member['id']))}” "
        f"({member['similarity']:.2f})"
        for member in because["members"]
    )
    text = f"like {members}" if members else "like the collection"
    text += f"; shares {', '.join(shown(term) for term in because['terms'])}" if because["terms"] else ""
    if because.get("added"):  # a new paper of a feed
        came = datetime.datetime.fromtimestamp(because["added"] / 1000, datetime.UTC)
        text += f"; new, came {came:%Y-%m-%d %H:%M} UTC"
    return text


def _cut(text: str) -> str:
    return text if len(text) <= REASON_TITLE_CHARS else text[: REASON_TITLE_CHARS - 1].rstrip() + "…"


def _shown_value(value) -> str:
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return "" if value is None else shown(str(value))


def with_index(command) -> None:
    """The --index option of a command."""
    command.add_argument(
        "--index",
        metavar="DIR",
        type=arguments.index_folder,
        help="index folder (default: the bundled NeurIPS 2025 sample, built on first use)",
    )


def with_json(command, what: str) -> None:
    """The --json option of a command that prints ``what``."""
    command.add_argument("--json", action="store_true", help=f"print {what}")
