"""Neighbour-smoothed document vectors: average query expansion applied to the documents at build time.

Each paper's smoothed vector is its own vector plus ``weight`` times the mean of its ``k`` nearest
papers' vectors, renormalised: a paper is described a little by its neighbourhood, which lifts
same-topic neighbours that share its subject but not its wording (the count and the weight:
``settings.Smoothing``, measured in docs/quality.md).

The index keeps the raw vectors and each paper's nearest rows (``smoothing_neighbours.npy``); the
smoothed vectors are made from them when rows are asked for
(:class:`paperscope.index.common.smoothed.SmoothedVectors`). They serve the default ranking,
hybrid, for ``similar`` and ``search``; the raw ones serve everything that must describe one paper
alone: dense mode and its FAISS index (the candidates of hybrid ranking too), the cosine shown
beside results, explanations, near-duplicates, outliers, the map and its topics.
"""

from __future__ import annotations

import numpy as np

from paperscope.index.search.nearest import nearest_others


def smoothing_neighbours(vectors: np.ndarray, faiss_index, k: int, chunk: int = 20_000) -> np.ndarray:
    """Each row's ``k`` nearest other rows of ``vectors`` (found with ``faiss_index``, which holds
    them), best first, as int32 (n, k); fewer columns when the index has fewer other papers."""
    k = min(k, len(vectors) - 1)
    found = np.empty((len(vectors), max(k, 0)), dtype=np.int32)
    for start in range(0, len(vectors) if k > 0 else 0, chunk):
        own = np.ascontiguousarray(vectors[start : start + chunk], dtype=np.float32)
        _, near = nearest_others(faiss_index.search, own, np.arange(start, start + len(own)), k)
        found[start : start + len(own)] = near
    return found
