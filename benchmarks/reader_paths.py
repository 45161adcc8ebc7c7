"""What reading a record of the arXiv snapshot costs, by path: the reader a build uses against the
faster-looking alternatives, so that the 50,000 records/s goal is argued from numbers.

    .venv/bin/python -m benchmarks.reader_paths [--records 200000]

Writes a synthetic snapshot of ``--records`` records (``benchmarks.arxiv_snapshot.write_snapshot``)
and measures, in CPU microseconds per record (this process's CPU time, so other work on the machine
counts little):
1. the build's whole reading: ``embed.corpus.admitted_papers`` (parse, fields, own columns, admission);
2. its parsing alone: orjson, a line at a time;
3. Arrow's JSON reader (``pyarrow.json.read_json``) on the same file, one thread and all threads
   (wall time too): columns in C++, parsed only;
4. the normalisation of the abstracts (``embed.text.normalise_text``) one at a time, against the
   same done on a whole column joined into one string (the way a columnar reader would do it).
Prints a Markdown table with the load average, writes JSON.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import orjson
import pyarrow.json as arrow_json

from benchmarks.arxiv_snapshot import write_snapshot
from benchmarks.common import parser, report
from paperscope.embed.corpus import Admission, Reading, admitted_papers
from paperscope.embed.text import normalise_text


def timed(work) -> tuple[float, float]:
    """Wall and CPU seconds of ``work()``."""
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


def joined_normalised(texts: list[str]) -> list[str]:
    """ASCII texts normalised as one string joined by NUL, split again (what a columnar reader does)."""
    joined = "\0".join(texts).replace("\n", " ")
    while "  " in joined:
        joined = joined.replace("  ", " ")
    return [text.strip() for text in joined.split("\0")]


def measure(path: Path, records: int) -> dict:
    """Each path's CPU microseconds per record (and wall seconds) on ``path``."""
    lines = path.read_bytes().splitlines()
    abstracts = [orjson.loads(line)["abstract"] for line in lines]
    paths = {
        "admitted_papers (the build)": lambda: sum(1 for _ in admitted_papers([path], None, Admission(Reading()))),
        "orjson, a line at a time": lambda: [orjson.loads(line) for line in lines],
        "Arrow JSON reader, 1 thread": lambda: arrow_json.read_json(
            path, read_options=arrow_json.ReadOptions(use_threads=False)
        ),
        "Arrow JSON reader, all threads": lambda: arrow_json.read_json(path),
        "abstracts normalised one at a time": lambda: [normalise_text(text) for text in abstracts],
        "abstracts normalised as one joined column": lambda: [
            joined_normalised(abstracts[start : start + 1024]) for start in range(0, len(abstracts), 1024)
        ],
    }
    results = {}
    for label, work in paths.items():
        wall, cpu = timed(work)
        results[label] = {"wall_s": round(wall, 2), "cpu_us_per_record": round(cpu / records * 1e6, 1)}
    return results


def main() -> None:
    """Make the file, measure each path, print the table and write the JSON."""
    arguments = parser(__doc__, "reader_paths")
    arguments.add_argument("--records", type=int, default=200_000, help="records in the synthetic snapshot")
    args = arguments.parse_args()
    with tempfile.TemporaryDirectory(prefix="paperscope-reader-") as folder:
        path = Path(folder) / "snapshot.json"
        write_snapshot(path, args.records)
        load = os.getloadavg()
        results = {"records": args.records, "load_average": load, "paths": measure(path, args.records)}
    print(f"{args.records:,} records, load average {load[0]:.1f}")
    rows = [[label, run["cpu_us_per_record"], run["wall_s"]] for label, run in results["paths"].items()]
    report(["path", "CPU µs a record", "wall s"], rows, results, args.json)


if __name__ == "__main__":
    main()
