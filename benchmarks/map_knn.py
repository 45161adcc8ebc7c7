"""Time saved by handing UMAP the FAISS neighbour graph (precomputed_knn) instead of letting it
search again with NN-descent. Vectors: an index's embeddings, replicated with small noise up to
--n rows (UMAP switches to NN-descent above 4,096 points).

    .venv/bin/python -m benchmarks.map_knn [--index DIR] [--n 6000] [--json benchmarks/map_knn.json]

Two settings, side by side: "fresh process" (what each `paperscope build` meets: UMAP's layout code
already compiled, NN-descent not yet) and "warm" (NN-descent compiled too, e.g. a second fit in a
notebook). Prints a Markdown table and writes JSON. Run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report


def _vectors(index_dir: str | None, count: int) -> np.ndarray:
    from paperscope import PaperIndex, locations

    index = PaperIndex.load(index_dir or locations.default_index_dir())
    base = np.asarray(index.vectors, dtype=np.float32)
    rng = np.random.default_rng(0)
    vectors = base[rng.integers(0, len(base), count)] + rng.normal(0, 0.03, (count, base.shape[1])).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _fit(vectors: np.ndarray, precomputed: bool) -> float:
    """Seconds for one 2-D UMAP fit, FAISS graph included when ``precomputed``."""
    import umap

    from paperscope.index.topics.layout import knn_graph
    from paperscope.settings import LayoutSettings

    start = time.perf_counter()
    knn = None
    if precomputed:
        graph = knn_graph(vectors, 15)
        knn = (graph[0], graph[1])
    umap.UMAP(
        n_neighbors=15, metric="cosine", random_state=LayoutSettings().seed, precomputed_knn=knn or (None, None)
    ).fit_transform(vectors)
    return time.perf_counter() - start


def _worker(index_dir: str | None, count: int, precomputed: bool) -> None:
    """One fresh process: compile the layout on a small fit, then time the full fit."""
    import umap

    warnings.simplefilter("ignore")
    vectors = _vectors(index_dir, count)
    umap.UMAP(n_neighbors=15, metric="cosine", random_state=0).fit(vectors[:300])
    print(json.dumps({"seconds": _fit(vectors, precomputed)}))


def main() -> None:
    """Run the comparison and print the table."""
    parser = common_parser(__doc__, "map_knn")
    parser.add_argument("--index", help="index folder (default: the bundled sample's)")
    parser.add_argument("--n", type=int, default=6000, help="number of vectors (default 6000)")
    parser.add_argument("--worker", choices=["own", "precomputed"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.index, args.n, args.worker == "precomputed")
        return
    fresh = {}
    for mode in ("own", "precomputed"):
        command = [sys.executable, "-m", "benchmarks.map_knn", "--n", str(args.n), "--worker", mode] + (
            ["--index", args.index] if args.index else []
        )
        fresh[mode] = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)["seconds"]
    warnings.simplefilter("ignore")
    vectors = _vectors(args.index, args.n)
    _fit(vectors, precomputed=False)  # compiles NN-descent
    warm = {mode: _fit(vectors, precomputed=mode == "precomputed") for mode in ("own", "precomputed")}
    results = {"vectors": args.n, "fresh_process_s": fresh, "warm_s": warm}
    rows = [
        [
            name,
            args.n,
            f"{timing['own']:.2f} s",
            f"{timing['precomputed']:.2f} s",
            f"{timing['own'] - timing['precomputed']:.2f} s "
            f"({(timing['own'] - timing['precomputed']) / timing['own']:.0%})",
        ]
        for name, timing in (("fresh process (a build)", fresh), ("warm (compiled)", warm))
    ]
    report(
        ["setting", "vectors", "UMAP with its own kNN search", "FAISS graph + UMAP precomputed_knn", "saved"],
        rows,
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
