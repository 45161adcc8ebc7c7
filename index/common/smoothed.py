"""Neighbour-smoothed vectors (:mod:`paperscope.index.build.smoothing`), made when their rows are asked for.

A paper's smoothed vector is its own vector plus ``weight`` times the mean of its nearest papers'
vectors, renormalised. An index keeps each paper's nearest rows (``k`` integers a paper), not a
second matrix of vectors: at 700,000 papers 8 MB instead of 1.1 GB, which every build and every
``add`` would write again. Every use reads a few rows (the candidates of a ranking, a collection,
the recommendations' sample), and making them costs a gather of ``k`` rows each.
"""

from __future__ import annotations

import numpy as np


def smoothed(own: np.ndarray, near: np.ndarray, weight: float) -> np.ndarray:
    """``own`` vectors (m, d) plus ``weight`` x the mean of their neighbours' vectors ``near``
    (m, k, d), renormalised, float32; with no neighbours (k = 0), ``own`` as they are."""
    own = np.asarray(own, dtype=np.float32)
    if near.shape[1] == 0:
        return own.copy()
    mixed = own + weight * np.asarray(near, dtype=np.float32).mean(axis=1)
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32, copy=False)


class SmoothedVectors:
    """The smoothed vectors of an index's papers, indexed by rows like an array: ``vectors`` (the
    raw ones, (n, d)), ``neighbours`` (n, k: each paper's nearest other rows) and the ``weight``."""

    def __init__(self, vectors: np.ndarray, neighbours: np.ndarray, weight: float):
        self.vectors, self.neighbours, self.weight = vectors, neighbours, weight

    @property
    def shape(self) -> tuple[int, int]:
        """(papers, dimension), as the raw vectors'."""
        return self.vectors.shape

    def __len__(self) -> int:
        return len(self.vectors)

    def __getitem__(self, rows) -> np.ndarray:
        """The smoothed vectors of ``rows`` (a row, a list or array of rows, a boolean mask or a slice)."""
        if isinstance(rows, slice):
            rows = np.arange(len(self))[rows]
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        many = np.atleast_1d(rows)
        found = smoothed(self.vectors[many], np.asarray(self.vectors)[self.neighbours[many]], self.weight)
        return found if rows.ndim else found[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """All of them, made a block of rows at a time."""
        whole = np.concatenate([self[start : start + 20_000] for start in range(0, len(self), 20_000)])
        return whole if dtype is None else whole.astype(dtype)


RowVectors = np.ndarray | SmoothedVectors  # vectors of papers, given by row: stored or made when asked for
