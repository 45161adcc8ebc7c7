"""A living index at a million papers: load, lookups, the CLI, memory, `add` and the embedding cache.

    .venv/bin/python -m benchmarks.million --base IJCAI_INDEX --work DIR [--papers 1000000] [--make]

--make writes a synthetic arXiv-style index into DIR/index from an index built on real abstracts
(--base, e.g. the IJCAI evaluation corpus): record i copies base paper i mod n (title, abstract,
its keyword row, its topic) with its own id ("2501.0000123"), DOI, authors, categories and date; its
vector is the base paper's plus Gaussian noise (sd 0.02 per dimension), renormalised, and its map
position the base paper's plus jitter. The FAISS index is chosen as a build chooses it (HNSW above
250,000 papers, efSearch tuned to recall@10 >= 0.95) and the folder is written by the index writer.
Embedding a million real abstracts here would take days; vectors replicate as benchmarks/scale.py does.

Then, each in a fresh process where it matters: `PaperIndex.load`, dense and hybrid `similar` and
hybrid `search` p50/p99 (query vectors cached: embedding excluded), `paperscope similar` wall
time, resident memory, `add` of --add new papers (random sentences of the base corpus: new texts),
and opening an embedding cache of --papers vectors. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA

CATEGORIES = ["cs.LG", "cs.CL", "cs.CV", "cs.AI", "stat.ML", "cs.RO", "cs.IR", "math.OC"]
QUERIES = [
    "making diffusion transformers faster",
    "graph neural networks for molecules",
    "privacy in federated learning",
    "mechanistic interpretability of transformers",
    "reinforcement learning for reasoning",
]


def make_index(base_dir: Path, count: int, target: Path) -> None:
    """Write the synthetic index of ``count`` papers (see the module docstring)."""
    import dataclasses

    import pyarrow as pa
    import scipy.sparse

    from paperscope.index.build import ann
    from paperscope.index.common.keyword import KeywordIndex
    from paperscope.index.common.smoothed import SmoothedVectors
    from paperscope.index.store import generations
    from paperscope.index.store.manifest import PresetInfo
    from paperscope.settings import PRESETS

    base = generations.read_generation(base_dir)  # the stored generation itself: this writes a new one
    size = base.papers.num_rows
    rng = np.random.default_rng(0)
    rows = np.arange(count) % size
    shape = (count, base.vectors.shape[1])
    vectors = np.lib.format.open_memmap(target.parent / "vectors.tmp.npy", "w+", np.float32, shape)
    for start in range(0, count, 100_000):
        part = rows[start : start + 100_000]
        block = np.asarray(base.vectors)[part] + rng.normal(0, 0.02, (len(part), shape[1])).astype(np.float32)
        vectors[start : start + len(part)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    smoothed = None
    if isinstance(base.smoothed, SmoothedVectors):  # each copy's neighbours: its base paper's, in its own copy
        near = np.asarray(base.smoothed.neighbours)[rows] + (np.arange(count) - rows)[:, None]
        near = np.where(near < count, near, near % size).astype(np.int32)
        smoothed = SmoothedVectors(vectors, near, base.smoothed.weight)
    table = base.papers.take(pa.array(rows))
    columns = {
        "id": pa.array([f"2501.{i:07d}" for i in range(count)]),
        "authors": pa.array([f"A. Author{i % 9973}; B. Writer{i % 7919}" for i in range(count)]),
        "categories": pa.array([CATEGORIES[i % len(CATEGORIES)] for i in range(count)]),
        "doi": pa.array([f"10.5555/synthetic.{i}" for i in range(count)]),
        "year": pa.array(2016 + rows % 10, pa.int64()),
        "x": pa.array(table.column("x").to_numpy() + rng.normal(0, 0.05, count)),
        "y": pa.array(table.column("y").to_numpy() + rng.normal(0, 0.05, count)),
    }
    for name, values in columns.items():
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, values.cast(table.schema.field(name).type))
        else:
            table = table.append_column(name, values)
    keyword = KeywordIndex(
        scipy.sparse.csr_matrix(base.keyword.matrix)[rows], base.keyword.terms, base.keyword.idf,
        sorted(base.keyword.stop_words),
    )  # fmt: skip
    start = time.perf_counter()
    factory = ann.choose_factory(count)
    faiss_index = ann.build_ann(np.asarray(vectors), factory)
    quality = ann.tune(faiss_index, np.asarray(vectors))
    print(f"FAISS {factory}: {time.perf_counter() - start:.0f} s, {quality}", file=sys.stderr)
    new_id = {paper_id: f"2501.{row:07d}" for row, paper_id in enumerate(base.papers.column("id").to_pylist())}

    def scaled(topics):  # each topic's central papers: their copy 0
        central = [[new_id[i] for i in ids] for ids in topics["central_ids"]]
        return topics.assign(size=topics["size"] * count // size, central_ids=central)

    fast = PRESETS["fast"]  # what a build of this size chooses: `add` embeds the way it would
    old = base.manifest
    manifest = dataclasses.replace(
        old,
        count=count,
        files={},
        search=dataclasses.replace(old.search, faiss=factory, **quality),
        corpus=dataclasses.replace(old.corpus, sources=("synthetic arXiv-style records",)),
        preset=PresetInfo("fast", "chosen by size", **dataclasses.asdict(fast)),
        model=dataclasses.replace(old.model, quantize=fast.quantize, window=fast.window),
        long_text=dataclasses.replace(old.long_text, strategy=fast.long_text, max_tokens=fast.window),
    )
    generations.write_generation(
        target,
        generations.Generation(
            manifest, vectors, faiss_index, [table], scaled(base.clusters.to_pandas()), keyword, smoothed
        ),
    )
    (target.parent / "vectors.tmp.npy").unlink()


PROBE = """
import json, statistics, sys, time
start = time.perf_counter()
from paperscope import PaperIndex
index = PaperIndex.load(sys.argv[1])
load = time.perf_counter() - start
def memory(field):  # this process's own figures (ru_maxrss would carry the parent's peak across exec)
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
rss_load = {"private": memory("RssAnon"), "file pages": memory("RssFile")}
ids = index.table(list(range(0, len(index), len(index) // 200))[:200], ["id"]).column("id").to_pylist()
queries = json.loads(sys.argv[2])
for query in queries:
    index.search(query).to_pandas()  # the query vectors are then cached: timings below exclude embedding
def timed(call, items):
    times = []
    for item in items:
        begin = time.perf_counter(); call(item); times.append((time.perf_counter() - begin) * 1000)
    times.sort()
    return {"p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1]}
found = index.similar(ids[0], k=10).to_pandas()
print(json.dumps({
    "load_s": load,
    "rss_after_load_mb": rss_load,
    "similar dense": timed(lambda i: index.similar(i, k=10, mode="dense").to_pandas(), ids),
    "similar hybrid": timed(lambda i: index.similar(i, k=10, mode="hybrid").to_pandas(), ids),
    "search hybrid": timed(lambda q: index.search(q, k=10, mode="hybrid").to_pandas(), queries * 40),
    "rss_after_lookups_mb": {"private": memory("RssAnon"), "file pages": memory("RssFile")},
    "peak_rss_mb": memory("VmHWM"),
    "papers": len(index),
}))
"""


def probe(folder: Path, runs: int = 3) -> dict:
    """Load and lookups, each run in a fresh process; the median of each figure over ``runs``."""
    found = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(folder), json.dumps(QUERIES)], capture_output=True, text=True, check=True
        )
        found.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def median(values):
        first = values[0]
        if isinstance(first, dict):
            return {key: median([value[key] for value in values]) for key in first}
        return statistics.median(values)

    return median(found)


def cli_similar(folder: Path, paper_id: str, runs: int = 3) -> float:
    """Median wall seconds of `paperscope similar ID --index DIR`."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "paperscope.ui.cli", "similar", paper_id, "--index", str(folder)],
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def add_new(folder: Path, base_corpus: Path, count: int, work: Path) -> dict:
    """`add` of ``count`` new papers in a fresh process: wall time, and the part spent embedding."""
    from benchmarks.scale import synthetic_corpus
    from paperscope.index.paper_index import PaperIndex

    seed = len(PaperIndex.load(folder))  # papers no earlier run has added
    (path,) = synthetic_corpus(base_corpus, count, 3, work / "new", files=1, seed=seed)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "add", str(path), "--index", str(folder), "--no-cache"],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - start
    if f"added {count:,} papers" not in done.stderr:
        raise RuntimeError(f"the add did not add {count} papers: {done.stderr[-500:]}")
    from paperscope import locations
    from paperscope.embed.model import Encoder
    from paperscope.embed.text import embedding_texts
    from tests.support.corpora import read_corpus

    manifest = PaperIndex.load(folder).manifest
    encoder = Encoder(onnx_dir=locations.onnx_dir(), quantize=manifest.model.quantize, window=manifest.model.window)
    texts = embedding_texts(read_corpus([path])[0])
    start = time.perf_counter()
    encoder.encode(texts, long_text=manifest.long_text.strategy)
    embedding = time.perf_counter() - start
    return {"wall_s": wall, "embedding_s": embedding, "rest_s": wall - embedding, "log": done.stderr.strip()[-300:]}


def cache_open(count: int, work: Path) -> dict:
    """Seconds to open an embedding cache of ``count`` vectors and to look up 1,000 of them."""
    from paperscope.embed.cache import SHARD_ROWS, EmbeddingCache, text_key

    folder = work / "cache"
    cache = EmbeddingCache(folder, "synthetic", "mean")
    rng = np.random.default_rng(0)
    if len(cache) < count:
        for start in range(0, count, SHARD_ROWS):
            vectors = rng.normal(size=(SHARD_ROWS, 384)).astype(np.float32)
            cache.add(
                [text_key(f"text {i}") for i in range(start, start + SHARD_ROWS)],
                vectors / np.linalg.norm(vectors, axis=1, keepdims=True),
            )
            cache.flush()
    start = time.perf_counter()
    cache = EmbeddingCache(folder, "synthetic", "mean")
    opened = time.perf_counter() - start
    keys = [text_key(f"text {i}") for i in rng.choice(count, 1000, replace=False)]
    start = time.perf_counter()
    found = cache.get(keys)
    looked_up = time.perf_counter() - start
    return {
        "vectors": len(cache),
        "shards": len(cache.shards),
        "open_s": opened,
        "get_1000_s": looked_up,
        "all_found": all(v is not None for v in found),
    }


def app_first_results(folder: Path, runs: int = 3) -> dict:
    """Fresh `paperscope app` servers on the index: seconds to health and to the first results of
    a paper link, in headless Chromium (benchmarks/app_start.py's measure); the median of ``runs``."""
    from playwright.sync_api import sync_playwright

    from benchmarks.app_start import one_run
    from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        measured = [one_run(str(folder), "?paper=2501.0000123", browser) for _ in range(runs)]
        browser.close()
    return {key: statistics.median(run[key] for run in measured) for key in measured[0]} | {"runs": measured}


def main() -> None:
    """Make the index if asked, measure and print the table."""
    parser = common_parser(__doc__, "million")
    parser.add_argument("--base", required=True, help="index of real abstracts to replicate")
    parser.add_argument(
        "--base-corpus",
        default=str(EVALDATA),
    )
    parser.add_argument("--work", required=True)
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--add", type=int, default=1000)
    parser.add_argument("--make", action="store_true", help="write the synthetic index first")
    args = parser.parse_args()
    work = Path(args.work)
    folder = work / "index"
    results = {}
    if args.make:
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        make_index(Path(args.base), args.papers, folder)
        results["make_s"] = time.perf_counter() - start
    results["lookups"] = probe(folder)
    results["cli_similar_s"] = cli_similar(folder, "2501.0000123")
    results["app"] = app_first_results(folder)
    results["cache"] = cache_open(args.papers, work)
    results["add"] = add_new(folder, Path(args.base_corpus), args.add, work)
    results["after_add"] = probe(folder)
    lookups = results["lookups"]
    rows = [
        ["PaperIndex.load", f"{lookups['load_s']:.2f} s", "≤ 1 s"],
        *[
            [
                name,
                f"{lookups[name]['p50_ms']:.2f} / {lookups[name]['p99_ms']:.2f} ms",
                "hybrid p50 ≤ 5 ms" if "hybrid" in name else "",
            ]
            for name in ("similar dense", "similar hybrid", "search hybrid")
        ],
        ["`paperscope similar` wall (median of 3)", f"{results['cli_similar_s']:.2f} s", "≤ 1.5 s"],
        [
            "app: server healthy / first results of a paper link (median of 3)",
            f"{results['app']['healthy_s']:.2f} / {results['app']['first_results_s']:.2f} s",
            "≤ 5 s",
        ],
        [
            "memory: private after load / after lookups; file pages mapped after lookups (page cache)",
            f"{lookups['rss_after_load_mb']['private']:.0f} / {lookups['rss_after_lookups_mb']['private']:.0f} MB; "
            f"{lookups['rss_after_lookups_mb']['file pages']:.0f} MB",
            "",
        ],
        [
            f"`paperscope add` of {args.add:,} papers: wall / embedding / rest",
            f"{results['add']['wall_s']:.1f} / {results['add']['embedding_s']:.1f} / {results['add']['rest_s']:.1f} s",
            "rest ≤ 60 s",
        ],
        ["load after add", f"{results['after_add']['load_s']:.2f} s", ""],
        [
            f"embedding cache of {results['cache']['vectors']:,} vectors "
            f"({results['cache']['shards']} shards): open / 1,000 lookups",
            f"{results['cache']['open_s']:.3f} / {results['cache']['get_1000_s']:.3f} s",
            "open < 1 s",
        ],
    ]
    report([f"{lookups['papers']:,} papers", "measured", "target"], rows, results, args.json)


if __name__ == "__main__":
    main()
