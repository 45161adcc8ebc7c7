"""Neighbour-smoothed document vectors on a labelled corpus: which neighbour count and weight.

    .venv/bin/python -m benchmarks.smoothing --index DIR [--corpus IJCAI.jsonl]

DIR is an index of the corpus. For each (k, weight), every paper's smoothed vector is computed
(``smoothing_neighbours`` and ``SmoothedVectors``, as a build and a load do) and ``similar`` is evaluated leave-one-out
against the corpus labels (P@1, P@10, macro P@10), in the default hybrid ranking and, for
reference, dense on the raw vectors. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA
from paperscope.index.analysis.evaluation import evaluate, labels_by_id
from paperscope.index.build.smoothing import smoothing_neighbours
from paperscope.index.common.smoothed import SmoothedVectors

GRID = [(1, 0.5), (2, 0.5), (3, 0.25), (3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0), (10, 0.5), (10, 1.0)]


def main() -> None:
    """Evaluate every setting and print the table."""
    parser = common_parser(__doc__, "smoothing")
    parser.add_argument("--index", required=True)
    parser.add_argument("--corpus", default=str(EVALDATA))
    args = parser.parse_args()
    from paperscope import PaperIndex
    from paperscope.index.store.generations import read_generation

    stored = read_generation(args.index)
    labels = labels_by_id(args.corpus)

    def with_smoothed(smoothed) -> PaperIndex:
        index = PaperIndex(args.index, dataclasses.replace(stored, smoothed=smoothed))
        index.papers["label"] = index.papers["id"].map(labels)
        return index

    vectors = np.asarray(stored.vectors)
    results = {"dense, raw vectors": evaluate(with_smoothed(None), "dense")}
    results["hybrid, raw vectors"] = evaluate(with_smoothed(None), "hybrid")
    for k, weight in GRID:
        smoothed = SmoothedVectors(vectors, smoothing_neighbours(vectors, stored.faiss_index, k), weight)
        results[f"hybrid, smoothed k={k} weight={weight}"] = evaluate(with_smoothed(smoothed), "hybrid")
    index = with_smoothed(None)
    report(
        [f"{len(index)} papers", "P@1", "P@10", "macro P@10"],
        [[name, *(f"{figures[m]:.3f}" for m in ("P@1", "P@10", "macro P@10"))] for name, figures in results.items()],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
