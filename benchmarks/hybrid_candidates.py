"""Hybrid ranking over candidates against the full blend: top-10 agreement and latency.

    .venv/bin/python -m benchmarks.hybrid_candidates --index DIR [--json benchmarks/hybrid_candidates.json]

``PaperIndex.rank`` blends dense and keyword scores only for the union of the FAISS top N and the
keyword top N (found from the query's heaviest terms). Here every paper is a `similar` query and
every title a `search` query; each candidate setting's top 10 is compared with the blend of all
papers' scores (share of the 10 ids in common, averaged). Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import scipy.sparse

from benchmarks.common import parser as common_parser
from benchmarks.common import ranker_of, report
from paperscope.index.search import keyword as keyword_module
from paperscope.index.search.ranking import Query

SETTINGS = [(50, 12), (100, 12), (200, 8), (200, 12), (200, 24), (400, 12)]


def full_blend(index, vector, keyword_query, exclude: list[int], k: int = 10) -> list[int]:
    """Top-k rows of the blend over every paper (the ranking before candidates)."""
    ranker = ranker_of(index)
    weight = index.manifest.search.hybrid_weight
    documents = ranker.documents
    scores = weight * (documents @ vector) + (1 - weight) * ranker.keyword.scores(keyword_query)
    scores[exclude] = -np.inf
    return np.argsort(-scores, kind="stable")[:k].tolist()


def main() -> None:
    """Measure every setting and print the table."""
    parser = common_parser(__doc__, "hybrid_candidates")
    parser.add_argument("--index", required=True)
    parser.add_argument("--queries", type=int, default=1000, help="papers and titles used as queries")
    args = parser.parse_args()
    from paperscope import PaperIndex

    index = PaperIndex.load(args.index)
    ranker = ranker_of(index)
    rows = np.random.default_rng(0).permutation(len(index))[: args.queries]
    titles = index.table(rows, ["title"]).column("title").to_pylist()
    documents = ranker.documents  # what similar() queries with
    queries = {
        "similar (paper)": [
            (documents[row], scipy.sparse.csr_matrix(ranker.keyword.matrix[row]), [int(row)], index.vectors[row])
            for row in rows
        ],
        "search (title)": [(index.embed_query(title), ranker.keyword.transform([title]), [], None) for title in titles],
    }
    reference = {
        kind: [full_blend(index, vector, query, exclude) for vector, query, exclude, _ in items]
        for kind, items in queries.items()
    }
    table, results = [], {}
    for candidates, terms in SETTINGS:
        keyword_module.CANDIDATE_TERMS = terms
        for kind, items in queries.items():
            agreement, times = [], []
            for (vector, query, exclude, raw), expected in zip(items, reference[kind], strict=True):
                start = time.perf_counter()
                asked = Query(vector, query, raw_vector=raw, exclude=np.asarray(exclude, dtype=np.int64))
                weight = index.manifest.search.hybrid_weight
                found = ranker.rank(asked, 10, "hybrid", weight=weight, candidates=candidates)
                times.append((time.perf_counter() - start) * 1000)
                rows_found = found.rows.tolist()
                agreement.append(len(set(rows_found) & set(expected)) / len(expected))
            name = f"N={candidates}, {terms} terms, {kind}"
            results[name] = {"agreement": float(np.mean(agreement)), "p50_ms": statistics.median(times)}
            table.append([name, f"{np.mean(agreement):.4f}", f"{statistics.median(times):.2f} ms"])
    report([f"{len(index)} papers, {len(rows)} queries each", "top-10 agreement", "p50"], table, results, args.json)


if __name__ == "__main__":
    main()
