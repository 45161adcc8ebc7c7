"""How long ``paperscope map -o map.png`` takes, as a user runs it: a fresh process, the whole command.

    .venv/bin/python -m benchmarks.map_png --index /tmp/meas/ijcai [--rounds 5]

Runs the command ``--rounds`` times on the index (not changed: the PNG is written to a temporary
folder) and prints a Markdown table with each round's wall and CPU seconds (the child's, user and
system) and the load average as it ended, and the median; writes JSON.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import parser, report


def _children_cpu() -> float:
    """The CPU seconds of this process's finished children (user and system)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_png(index: str, rounds: int) -> list[dict]:
    """``paperscope map -o map.png --index INDEX``, ``rounds`` times, each in a fresh process."""
    command = Path(sys.executable).with_name("paperscope")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(1, rounds + 1):
            path = Path(work) / f"map-{round_}.png"
            start, cpu = time.perf_counter(), _children_cpu()
            subprocess.run([command, "map", "-o", path, "--index", index], capture_output=True, check=True)
            seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
            rows.append({"round": round_, "seconds": round(seconds, 2), "cpu seconds": round(cpu, 2),
                         "load average": round(os.getloadavg()[0], 1), "bytes": path.stat().st_size})  # fmt: skip
    return rows


def main() -> None:
    arguments = parser(__doc__, "map_png")
    arguments.add_argument("--index", required=True, help="the index whose map is drawn (not changed)")
    arguments.add_argument("--rounds", type=int, default=5)
    options = arguments.parse_args()
    rows = time_png(options.index, options.rounds)
    median = {
        "round": "median",
        **{key: statistics.median(row[key] for row in rows) for key in rows[0] if key != "round"},
    }
    columns = ["round", "seconds", "cpu seconds", "load average", "bytes"]
    report(columns, [[row[column] for column in columns] for row in [*rows, median]], {"rows": rows}, options.json)


if __name__ == "__main__":
    main()
