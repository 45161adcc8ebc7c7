"""Nearest neighbours of papers among papers: never a paper itself.

The one place that drops a paper's own row from its neighbours, for smoothing, the topic map's
neighbour graph, near-duplicates, outliers and bridges.
"""

from __future__ import annotations

import numpy as np


def nearest_others(search, queries: np.ndarray, own_rows: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows to each of ``queries`` and their scores, best first, never the
    query's own row (``own_rows``, one per query; None: queries from outside the rows).
    ``search(queries, count)`` returns (scores, rows) as FAISS does; rows it could not fill are -1."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    scores, rows = search(queries, k + (0 if own_rows is None else 1))
    if own_rows is None:
        return scores[:, :k], rows[:, :k]
    return without_own(scores, rows, own_rows, k)


def _others_first(rows: np.ndarray, own_rows: np.ndarray, k: int) -> np.ndarray:
    """The positions of the first ``k`` found ``rows`` of each query that are not its own row."""
    own = rows == np.asarray(own_rows, dtype=rows.dtype)[:, None]
    return np.argsort(own, axis=1, kind="stable")[:, :k]


def without_own(scores: np.ndarray, rows: np.ndarray, own_rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` of each row of a search's ``scores`` and ``rows`` that are not the query's
    own row (``own_rows``, one per query): a paper's own row is usually first, but an exact
    duplicate can tie with it."""
    order = _others_first(rows, own_rows, k)
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


def other_rows(rows: np.ndarray, own_rows: np.ndarray, k: int) -> np.ndarray:
    """:func:`without_own` for the found ``rows`` alone."""
    return np.take_along_axis(rows, _others_first(rows, own_rows, k), axis=1)
