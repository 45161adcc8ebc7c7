"""Wall time of a lookup from the command line: `paperscope similar` and `search` in a fresh process.

    .venv/bin/python -m benchmarks.cli_lookup [--index DIR] [--rounds 20] [--other PYTHON] [--json FILE]

Runs, ``--rounds`` times each and interleaved, ``python -c pass`` (Python's own start),
``paperscope similar ID --index DIR`` and ``paperscope search TEXT --index DIR``, each a fresh
process, and reports the medians and what a lookup takes beyond Python's start. ``--other PYTHON``:
the same for another checkout, run by that Python (its venv's ``paperscope`` beside it), on the same
index. An earlier checkout gets a venv of its own that borrows this one's packages (and its
setuptools, for the editable install), without touching this one::

    git worktree add /tmp/before e398427
    python3 -m venv /tmp/before/.venv
    PACKAGES=$PWD/.venv/lib/python3.11/site-packages
    echo "$PACKAGES" > /tmp/before/.venv/lib/python3.11/site-packages/main.pth
    PYTHONPATH=$PACKAGES /tmp/before/.venv/bin/pip install -q --no-deps --no-build-isolation -e /tmp/before
    .venv/bin/python -m benchmarks.cli_lookup --other /tmp/before/.venv/bin/python

Run it on an idle machine: the processes are timed by the wall clock.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report

QUERY = "graph neural networks"
# As a user runs it: Python's compiled bytecode written once and read after (a shell with
# PYTHONDONTWRITEBYTECODE set would compile every module again at each start, ~0.08 s).
WITH_BYTECODE = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str]) -> float:
    """Seconds of wall time ``command`` takes, its output discarded; a failure stops the benchmark."""
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=WITH_BYTECODE)
    return time.perf_counter() - start


def commands(python: str, index_dir: str, paper_id: str) -> dict[str, list[str]]:
    """The three commands timed, for the checkout whose Python is ``python``."""
    paperscope = str(Path(python).parent / "paperscope")
    return {
        "python -c pass": [python, "-c", "pass"],
        "paperscope similar ID": [paperscope, "similar", paper_id, "--index", index_dir],
        "paperscope search TEXT": [paperscope, "search", QUERY, "--index", index_dir],
    }


def measure(pythons: dict[str, str], index_dir: str, paper_id: str, rounds: int) -> dict[str, dict[str, float]]:
    """Median seconds of each command of each checkout, the rounds interleaved (a busy moment hits all)."""
    runs = {name: commands(python, index_dir, paper_id) for name, python in pythons.items()}
    for each in runs.values():  # once untimed: the files in the page cache, the bytecode written
        for command in each.values():
            timed(command)
    times = {name: {what: [] for what in each} for name, each in runs.items()}
    for _ in range(rounds):
        for name, each in runs.items():
            for what, command in each.items():
                times[name][what].append(timed(command))
    return {name: {what: statistics.median(values) for what, values in each.items()} for name, each in times.items()}


def main() -> None:
    """Run the measurement, print the table and write the JSON."""
    parser = common_parser(__doc__, "cli_lookup")
    parser.add_argument("--index", help="index folder (default: the bundled sample's)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--other", metavar="PYTHON", help="the Python of another checkout's venv, to compare with")
    args = parser.parse_args()
    from paperscope import PaperIndex, sample_index

    index_dir = args.index or str(sample_index())
    paper_id = PaperIndex.load(index_dir).ids()[0]
    pythons = {"this checkout": sys.executable} | ({"other": args.other} if args.other else {})
    medians = measure(pythons, index_dir, paper_id, args.rounds)
    rows = []
    for name, each in medians.items():
        start = each["python -c pass"]
        for what, seconds in each.items():
            beyond = "" if what == "python -c pass" else f"{seconds - start:.2f} s"
            rows.append([name, what, f"{seconds:.2f} s", beyond])
    results = {"index": index_dir, "rounds": args.rounds, "pythons": pythons, "median_s": medians}
    report(["checkout", "command", "median wall time", "beyond Python's start"], rows, results, args.json)


if __name__ == "__main__":
    main()
