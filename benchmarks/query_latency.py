"""Dense query latency at 5k, 100k and 1M vectors: exact FAISS, HNSW (tuned by index.ann), and the
full cosine pass that hybrid ranking adds.

    .venv/bin/python -m benchmarks.query_latency [--sizes 5000 100000 1000000] [--queries 200]

Synthetic clustered unit vectors (384-d); one query at a time, as the app and CLI ask.
Prints a Markdown table and writes JSON. Run on an idle machine (the 1M HNSW build takes minutes).
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report


def synthetic_vectors(count: int, dimension: int = 384, clusters: int = 200, seed: int = 0) -> np.ndarray:
    """Unit vectors around random topic centres, like embeddings of a real corpus."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dimension)).astype(np.float32)
    vectors = centres[rng.integers(0, clusters, count)] + rng.normal(0, 0.7, (count, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _latencies(search, queries: np.ndarray) -> tuple[float, float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        search(query.reshape(1, -1))
        times.append((time.perf_counter() - start) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 99))


def main() -> None:
    """Measure and print the table."""
    parser = common_parser(__doc__, "query_latency")
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    from paperscope.index.build import ann

    results = []
    for size in args.sizes:
        vectors = synthetic_vectors(size)
        queries = synthetic_vectors(args.queries, seed=1)
        row = {"vectors": size}
        flat = ann.build_ann(vectors, "Flat")
        row["flat_p50_ms"], row["flat_p99_ms"] = _latencies(lambda q, flat=flat: flat.search(q, 10), queries)
        row["hybrid_pass_p50_ms"], row["hybrid_pass_p99_ms"] = _latencies(
            lambda q, vectors=vectors: vectors @ q[0], queries
        )
        start = time.perf_counter()
        hnsw = ann.build_ann(vectors, "HNSW32,Flat")
        quality = ann.tune(hnsw, vectors)
        row["hnsw_build_s"], row["hnsw_recall_at_10"], row["hnsw_ef_search"] = (
            time.perf_counter() - start,
            quality["recall_at_10"],
            quality["ef_search"],
        )
        row["hnsw_p50_ms"], row["hnsw_p99_ms"] = _latencies(lambda q, hnsw=hnsw: hnsw.search(q, 10), queries)
        results.append(row)
    report(
        [
            "vectors",
            "exact p50 / p99",
            "HNSW p50 / p99",
            "HNSW recall@10 (efSearch)",
            "HNSW build",
            "hybrid cosine pass p50 / p99",
        ],
        [
            [
                f"{r['vectors']:,}",
                f"{r['flat_p50_ms']:.2f} / {r['flat_p99_ms']:.2f} ms",
                f"{r['hnsw_p50_ms']:.2f} / {r['hnsw_p99_ms']:.2f} ms",
                f"{r['hnsw_recall_at_10']:.3f} ({r['hnsw_ef_search']})",
                f"{r['hnsw_build_s']:.0f} s",
                f"{r['hybrid_pass_p50_ms']:.2f} / {r['hybrid_pass_p99_ms']:.2f} ms",
            ]
            for r in results
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
