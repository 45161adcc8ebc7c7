"""Neighbour-smoothed document vectors: average query expansion applied to the documents at build time.

Each paper's smoothed vector is its own vector plus ``weight`` times the mean of its ``k`` nearest
papers' vectors, renormalised: a paper is described a little by its neighbourhood, which lifts
same-topic neighbours that share its subject but not its wording (the count and the weight:
``settings.Smoothing``, measured in docs/quality.md).

The index keeps both. The smoothed vectors (``smoothed.npy``) serve the default ranking, hybrid,
for ``similar`` and ``search``; the raw ones (``vectors.npy``) serve everything that must describe
one paper alone: dense mode and its FAISS index (the candidates of hybrid ranking too), the cosine
shown beside results, explanations, near-duplicates, outliers, the map and its topics.
"""

from __future__ import annotations

import numpy as np

from paperscope.index.search.nearest import nearest_others
from paperscope.settings import Smoothing


def smooth(
    queries: np.ndarray,
    vectors: np.ndarray,
    faiss_index,
    settings: Smoothing,
    *,
    own_rows=None,
    out: np.ndarray | None = None,
    chunk: int = 20_000,
    neighbours: np.ndarray | None = None,
) -> np.ndarray:
    """Smoothed vectors of ``queries``: each plus ``settings.weight`` x the mean of its
    ``settings.k`` nearest rows of ``vectors`` (found with ``faiss_index``, which holds
    ``vectors``), renormalised. ``own_rows``: the queries' own rows in ``vectors`` (papers of the
    index: never their own neighbour), or None (papers outside it). Written into ``out`` (a
    memory-mapped file, at scale) when given. ``neighbours``: the nearest rows of queries from
    outside, at least ``settings.k`` each, best first, when already found (``add`` finds them to
    place the papers on the map: one search of the index, not two)."""
    found = np.empty((len(queries), vectors.shape[1]), dtype=np.float32) if out is None else out
    k = min(settings.k, len(vectors) - (0 if own_rows is None else 1))
    if k < 1:
        found[:] = queries
        return found
    for start in range(0, len(queries), chunk):
        own = np.ascontiguousarray(queries[start : start + chunk], dtype=np.float32)
        own_part = None if own_rows is None else np.asarray(own_rows[start : start + chunk])
        if neighbours is not None:
            near = neighbours[start : start + chunk, :k]
        else:
            _, near = nearest_others(faiss_index.search, own, own_part, k)
        mixed = own + settings.weight * np.asarray(vectors)[near].mean(axis=1)
        found[start : start + len(own)] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return found
