"""What the command line's commands share: the index they act on, and how results are printed."""

from __future__ import annotations

import json
import logging
from pathlib import Path


def index_folder(args) -> Path:
    """The --index folder, or the default sample index, built on first use."""
    from paperscope.index.build.pipeline import sample_index

    return Path(args.index) if args.index else sample_index()


def load(args):
    """The :class:`~paperscope.index.paper_index.PaperIndex` of --index (and --model, if given)."""
    from paperscope.index.paper_index import PaperIndex

    return PaperIndex.load(index_folder(args), model_path=getattr(args, "model", None))


def print_json(value) -> None:
    """Print a JSON value as ``--json`` does: indented, Unicode as is."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_results(results, as_json: bool) -> None:
    """Print ranked papers (:class:`~paperscope.index.search.results.Results`): a line each, or a
    JSON list of records; when there are none, why (on stderr)."""
    if not len(results) and results.note:
        logging.getLogger("paperscope").info("%s", results.note)
    if as_json:
        print_json(results.to_records())
        return
    for row in results.to_pandas().itertuples():
        print(f"{row.rank:>3}  {row.score:6.3f}  {row.id:<14}  {row.title}")


def with_index(command) -> None:
    """The --index option of a command."""
    command.add_argument(
        "--index", metavar="DIR", help="index folder (default: the bundled NeurIPS 2025 sample, built on first use)"
    )


def with_json(command, what: str) -> None:
    """The --json option of a command that prints ``what``."""
    command.add_argument("--json", action="store_true", help=f"print {what}")
