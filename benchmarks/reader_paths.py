"""What reading a record of the arXiv snapshot costs, by path: the reader a build uses against the
faster-looking alternatives, so that the 50,000 records/s goal is argued from numbers.

    .venv/bin/python -m benchmarks.reader_paths [--records 200000] [--snapshot FILE]

Writes a synthetic snapshot of ``--records`` records (``benchmarks.arxiv_snapshot.write_snapshot``;
or reads ``--snapshot``) and measures, in CPU microseconds per record (the CPU time of this process
and of those it started, so other work on the machine counts little) and wall seconds:
1. the build's whole reading: ``embed.readers.admission.admitted_papers`` (parse, fields, own columns,
   admission), in one process and with the build's reading processes (``limits.READ_WORKERS``;
   the file passes ``limits.PARALLEL_READ_BYTES`` from ~40,000 records);
2. its parsing alone: orjson, a line at a time;
3. Arrow's JSON reader (``pyarrow.json.read_json``) on the same file, one thread and all threads:
   columns in C++, parsed only;
4. the normalisation of the abstracts: ``embed.text.normalise_text`` one at a time; the same on a
   whole column joined into one string; Arrow's string kernels on the column (what a columnar reader
   would use): one regular expression, or literal replaces.
Prints a Markdown table with the load average, writes JSON.
"""

from __future__ import annotations

import os
import resource
import tempfile
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as arrow_json

from benchmarks.arxiv_snapshot import write_snapshot
from benchmarks.common import parser, report
from paperscope.embed.readers import Reading
from paperscope.embed.readers.admission import Admission, admitted_papers
from paperscope.embed.text import normalise_text
from paperscope.limits import READ_WORKERS

SPACES = r"[\t\n\x0b\x0c\r\x1c-\x1f ]+"  # the ASCII white space normalise_text joins


def timed(work) -> tuple[float, float]:
    """Wall and CPU seconds of ``work()``, the CPU of the processes it started and ended included."""
    started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    work()
    return time.perf_counter() - started, time.process_time() - cpu + _children_cpu() - children


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def arrow_normalised(abstracts: pa.Array, pattern: str | None) -> pa.Array:
    """The abstracts' white space joined by Arrow's string kernels: one regular expression
    (``pattern``), else literal replaces repeated until no double space is left."""
    if pattern:
        return pc.utf8_trim(pc.replace_substring_regex(abstracts, pattern, " "), " ")
    joined = pc.replace_substring(abstracts, "\n", " ")
    while pc.any(pc.match_substring(joined, "  ")).as_py():
        joined = pc.replace_substring(joined, "  ", " ")
    return pc.utf8_trim(joined, " ")


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
    column = pa.array(abstracts)

    def build(workers: int) -> int:
        return sum(1 for _ in admitted_papers([path], None, Admission(Reading(workers=workers)), announce=False))

    paths = {
        "admitted_papers, one process": lambda: build(1),
        f"admitted_papers, {READ_WORKERS} reading processes (the build)": lambda: build(READ_WORKERS),
        "orjson, a line at a time": lambda: [orjson.loads(line) for line in lines],
        "Arrow JSON reader, 1 thread": lambda: arrow_json.read_json(
            path, read_options=arrow_json.ReadOptions(use_threads=False)
        ),
        "Arrow JSON reader, all threads": lambda: arrow_json.read_json(path),
        "abstracts normalised one at a time": lambda: [normalise_text(text) for text in abstracts],
        "abstracts normalised as one joined column": lambda: [
            joined_normalised(abstracts[start : start + 1024]) for start in range(0, len(abstracts), 1024)
        ],
        "abstracts normalised by Arrow, one regular expression": lambda: arrow_normalised(column, SPACES),
        "abstracts normalised by Arrow, literal replaces": lambda: arrow_normalised(column, None),
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
    arguments.add_argument("--snapshot", type=Path, help="a synthetic snapshot written before (its records counted)")
    args = arguments.parse_args()
    with tempfile.TemporaryDirectory(prefix="paperscope-reader-") as folder:
        path = args.snapshot or Path(folder) / "snapshot.json"
        if args.snapshot is None:
            write_snapshot(path, args.records)
        with open(path, "rb") as lines:
            records = sum(1 for _ in lines)
        load = os.getloadavg()
        results = {"records": records, "load_average": load, "paths": measure(path, records)}
    print(f"{records:,} records, load average {load[0]:.1f}")
    rows = [[label, run["cpu_us_per_record"], run["wall_s"]] for label, run in results["paths"].items()]
    report(["path", "CPU µs a record", "wall s"], rows, results, args.json)


if __name__ == "__main__":
    main()
