"""How long a remap takes (another number of topics from the stored vectors and layout), at 2,690 and 200,000 papers.

    .venv/bin/python -m benchmarks.remap --index /tmp/remap/IJCAI [--papers 200000]
    .venv/bin/python -m benchmarks.remap --index /tmp/remap/IJCAI --commands   # 3. only


1. IJCAI: ``PaperIndex.map.remap`` on a copy of an index of ../shared/evaldata/ijcai2021_2024_area.jsonl
   as this checkout builds it (``paperscope build … --preset fast``; no remap made on it): the
   first remap (reading the candidate terms and names' vectors the build kept), a later one, and
   a first one with nothing kept (the terms found and the names embedded, as for an index built
   before builds kept them), each in a fresh index object;
2. synthetic, ``--papers`` rows: the remap's computation (``remap_topics``) on arrays made directly
   from the IJCAI index: its vectors repeated with noise (renormalised), its layout repeated with
   jitter, 50,000 rows laid out and the rest placed (as a build of that size leaves them), its
   fine clusters repeated, its texts repeated; candidate names embedded by the index's model.
   No index of that size is built (an hour on this machine); what is not timed is reading the
   arrays from disk (memory-mapped) and writing the map (a few MB of Parquet).
3. ``--commands``: ``paperscope remap --topics N`` as a user runs it, for N = 8, 15, 25, 40, 60
   (``--counts``), each in a fresh process on a fresh copy of the index: the whole command's wall
   time and the topics it made (beyond the build's fine clusters, with a minimum topic size chosen
   to fit).
Prints a Markdown table with the wall and CPU seconds (this process's, all threads) and the load
average as each run ends, writes JSON.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import parser, report
from paperscope import PaperIndex
from paperscope.embed.text import embedding_texts
from paperscope.index.store import maps
from paperscope.index.topics.recut import Remapping, remap_topics

LAID_OUT = 50_000


def _load() -> float:
    """The load average over the last minute (as a run ends)."""
    return round(os.getloadavg()[0], 1)


def _remap(folder: Path, topics: int, run: str) -> dict:
    """One remap of the index in ``folder`` into ``topics`` topics, in a fresh index object with the model loaded."""
    index = PaperIndex.load(folder)
    index.embed_query("warm up")  # the model loaded, as in a running app or service
    start, cpu = time.perf_counter(), time.process_time()
    index.map.remap(topics)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"papers": len(index), "run": run, "topics": len(index.topics.table("coarse")),
            "seconds": round(seconds, 2), "cpu seconds": round(cpu, 2), "load average": _load()}  # fmt: skip


def time_index(source: str, topics: int) -> list[dict]:
    """On a copy of the index at ``source``: the first remap (what the build kept read), a later
    one, and a first one with nothing kept (as for an index built before builds kept it)."""
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "index"
        shutil.copytree(source, folder)
        rows = [_remap(folder, topics, "first"), _remap(folder, topics + 2, "later")]
        for path in maps.maps_dir(folder).glob(".*.npz"):
            path.unlink()
        rows.append(_remap(folder, topics + 4, "first, nothing kept"))
    return rows


def time_synthetic(source: str, count: int, topics: int) -> dict:
    """``remap_topics`` on ``count`` synthetic rows made from the index at ``source``."""
    index = PaperIndex.load(source)
    rng = np.random.default_rng(0)
    base = np.asarray(index.vectors, dtype=np.float32)
    take = np.arange(count) % len(base)
    vectors = base[take] + rng.normal(0, 0.02, (count, base.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    stored = index.table(columns=["x", "y", "map_trust", "cluster", "outlying", "title", "abstract", "title_derived"])
    stored = stored.to_pandas()
    built = stored.iloc[take].reset_index(drop=True)
    built[["x", "y"]] += rng.normal(0, 0.05, (count, 2))
    built["placed"] = True
    built.loc[rng.choice(count, min(LAID_OUT, count), replace=False), "placed"] = False
    built.loc[built["placed"], "outlying"] = False
    texts = embedding_texts(stored)

    def texts_of(rows: np.ndarray) -> list[str]:
        return [texts[i] for i in take[rows]]

    ids = [f"p{i}" for i in range(count)]
    index.embed_query("warm up")
    start, cpu = time.perf_counter(), time.process_time()
    made = remap_topics(vectors, texts_of, ids, built, index.embed_texts, asked=Remapping(topics))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"papers": count, "run": "first (synthetic)", "topics": made.sections["topics"],
            "seconds": round(seconds, 1), "cpu seconds": round(cpu, 1), "load average": _load()}  # fmt: skip


def _children_cpu() -> float:
    """The CPU seconds of this process's finished children (user and system)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_commands(source: str, counts: list[int]) -> list[dict]:
    """``paperscope remap --topics N`` for each of ``counts``, each in a fresh process on a fresh
    copy of the index at ``source``: the command's wall time and the topics made."""
    command = Path(sys.executable).with_name("paperscope")
    rows = []
    for topics in counts:
        with tempfile.TemporaryDirectory() as work:
            folder = Path(work) / "index"
            shutil.copytree(source, folder)
            start, cpu = time.perf_counter(), _children_cpu()
            done = subprocess.run([command, "remap", "--topics", str(topics), "--index", folder],
                                  capture_output=True, text=True, check=True)  # fmt: skip
            seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
        made = re.search(r"map '[^']*': (\d+) topics, (\d+) fine clusters", done.stderr)
        assert made, done.stderr
        rows.append({"papers": "command", "run": f"paperscope remap --topics {topics}", "topics": int(made[1]),
                     "seconds": round(seconds, 2), "cpu seconds": round(cpu, 2), "load average": _load()})  # fmt: skip
    return rows


def main() -> None:
    arguments = parser(__doc__, "remap")
    arguments.add_argument("--index", required=True, help="an index of the IJCAI corpus (it is copied, not changed)")
    arguments.add_argument("--papers", type=int, default=200_000, help="rows of the synthetic corpus")
    arguments.add_argument("--topics", type=int, default=8)
    arguments.add_argument("--commands", action="store_true", help="only the command-line remaps (3.)")
    arguments.add_argument("--counts", default="8,15,25,40,60", help="the topics of the command-line remaps")
    options = arguments.parse_args()
    rows = time_commands(options.index, [int(count) for count in options.counts.split(",")])
    if not options.commands:
        synthetic = time_synthetic(options.index, options.papers, options.topics)
        rows = [*time_index(options.index, options.topics), synthetic, *rows]
    columns = ["papers", "run", "topics", "seconds", "cpu seconds", "load average"]
    report(
        columns,
        [[row[column] for column in columns] for row in rows],
        {"rows": rows, "cores": os.cpu_count()},
        options.json,
    )


if __name__ == "__main__":
    main()
