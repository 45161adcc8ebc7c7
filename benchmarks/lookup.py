"""Lookup latency after load: by paper id and by free text, on an index (default: the sample's).

    .venv/bin/python -m benchmarks.lookup [--index DIR] [--repeats 200] [--json benchmarks/lookup.json]

Also times `PaperIndex.load` and the end-to-end `paperscope similar` / `search` commands.
Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from benchmarks.common import parser as common_parser
from benchmarks.common import report


def _timed(function, repeats: int) -> list[float]:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        function(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    """Measure and print the table."""
    parser = common_parser(__doc__, "lookup")
    parser.add_argument("--index", help="index folder (default: the bundled sample's)")
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    from paperscope import PaperIndex, sample_index

    folder = args.index or str(sample_index())
    start = time.perf_counter()
    index = PaperIndex.load(folder)
    load_ms = (time.perf_counter() - start) * 1000
    ids = index.papers["id"].tolist()
    queries = [
        "making diffusion transformers faster",
        "graph neural networks",
        "privacy in federated learning",
        "watermarking language model outputs",
        "reinforcement learning for reasoning",
    ]
    index.search(queries[0]).to_pandas()  # loads the query model once, as a running app has
    rows = {
        "load index": [load_ms],
        "similar(id), k=10": _timed(lambda i: index.similar(ids[i % len(ids)], k=10).to_pandas(), args.repeats),
        "search(text), k=10": _timed(lambda i: index.search(queries[i % len(queries)], k=10).to_pandas(), args.repeats),
    }
    paperscope = [sys.executable, "-m", "paperscope.ui.cli"]
    for name, command in (
        ("`paperscope similar` end to end", ["similar", ids[0], "--index", folder]),
        ("`paperscope search` end to end", ["search", queries[0], "--index", folder]),
    ):
        rows[name] = _timed(
            lambda i, command=command: subprocess.run(paperscope + command, capture_output=True, check=True), 3
        )
    table = [
        [
            name,
            f"{statistics.median(times):.1f} ms",
            f"{sorted(times)[min(len(times) - 1, int(len(times) * 0.99))]:.1f} ms",
        ]
        for name, times in rows.items()
    ]
    report(
        [f"{len(index)} papers", "median", "p99 / max"],
        table,
        {name: {"median_ms": statistics.median(t), "max_ms": max(t)} for name, t in rows.items()},
        args.json,
    )


if __name__ == "__main__":
    main()
