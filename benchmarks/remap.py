"""How long a remap takes (another number of topics from the stored vectors and layout), at 2,690 and 200,000 papers.

    .venv/bin/python -m benchmarks.remap --index /tmp/remap/IJCAI [--papers 200000]

1. IJCAI: ``PaperIndex.map.remap`` on a copy of an index of ../shared/evaldata/ijcai2021_2024_area.jsonl
   (build one with ``paperscope build … --preset fast``), the first remap (candidate terms found and
   embedded) and a later one (kept beside the index), each in a fresh index object;
2. synthetic, ``--papers`` rows: the remap's computation (``remap_topics``) on arrays made directly
   from the IJCAI index: its vectors repeated with noise (renormalised), its layout repeated with
   jitter, 50,000 rows laid out and the rest placed (as a build of that size leaves them), its
   fine clusters repeated, its texts repeated; candidate names embedded by the index's model.
   No index of that size is built (an hour on this machine); what is not timed is reading the
   arrays from disk (memory-mapped) and writing the map (a few MB of Parquet).
Prints a Markdown table with the load average, writes JSON.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import parser, report
from paperscope import PaperIndex
from paperscope.embed.corpus import embedding_texts
from paperscope.index.topics.remap import Remapping, remap_topics

LAID_OUT = 50_000


def time_index(source: str, topics: int) -> list[dict]:
    """The first and a later remap of a copy of the index at ``source``."""
    rows = []
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "index"
        shutil.copytree(source, folder)
        shutil.rmtree(folder / "maps", ignore_errors=True)
        for run, n in (("first", topics), ("later", topics + 2)):
            index = PaperIndex.load(folder)
            index.embed_query("warm up")  # the model loaded, as in a running app or service
            start = time.perf_counter()
            index.map.remap(n)
            rows.append({"papers": len(index), "run": run, "topics": len(index.topics.table("coarse")),
                         "seconds": round(time.perf_counter() - start, 2)})  # fmt: skip
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
    start = time.perf_counter()
    made = remap_topics(vectors, texts_of, ids, built, index.embed_texts, asked=Remapping(topics))
    seconds = time.perf_counter() - start
    topics_made = made.sections["topics"]
    return {"papers": count, "run": "first (synthetic)", "topics": topics_made, "seconds": round(seconds, 1)}


def main() -> None:
    arguments = parser(__doc__, "remap")
    arguments.add_argument("--index", required=True, help="an index of the IJCAI corpus (it is copied, not changed)")
    arguments.add_argument("--papers", type=int, default=200_000, help="rows of the synthetic corpus")
    arguments.add_argument("--topics", type=int, default=8)
    options = arguments.parse_args()
    load = os.getloadavg()[0]
    rows = time_index(options.index, options.topics)
    rows.append(time_synthetic(options.index, options.papers, options.topics))
    for row in rows:
        row["load average"] = round(load, 1)
    report(
        ["papers", "run", "topics", "seconds", "load average"],
        [[row["papers"], row["run"], row["topics"], row["seconds"], row["load average"]] for row in rows],
        {"rows": rows, "cores": os.cpu_count()},
        options.json,
    )


if __name__ == "__main__":
    main()
