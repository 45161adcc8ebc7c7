"""Splits: a topic's papers re-clustered by a small deterministic k-means over their vectors
(numpy: a load stays light); at coarse level, a topic of at least k fine topics is split by
grouping them, so that the two levels stay nested."""

from __future__ import annotations

import numpy as np
import pandas as pd

from paperscope.embed.text import counted
from paperscope.index.common.kmeans import kmeans
from paperscope.index.curation.labels import Skipped, TopicState, centroid, match
from paperscope.index.curation.operations import Split, clean_name


def split(state: TopicState, entry: Split, ids: pd.Index, vectors: np.ndarray) -> list[int]:
    """Split the topic matching ``entry.members`` into ``entry.k`` new ones, numbered above every topic."""
    level, k = entry.level, entry.k
    topic = match(state, level, entry.members, ids)
    rows = state.rows(level, topic)
    if k < 2:
        raise Skipped(f"k is {k}, a split needs at least 2")
    if len(rows) < k:
        raise Skipped(f"{level} topic {topic} has {counted(len(rows), 'paper')}, fewer than k={k}")
    seeds = _seeds(entry.parts, ids, rows, vectors, k)
    if level == "fine":
        part = kmeans(np.asarray(vectors[rows], dtype=np.float32), k, seeds=seeds)
        return _fine_parts(state, topic, rows, part, entry)
    children = np.unique(state.labels["fine"][rows])
    if len(children) >= k:  # whole fine topics grouped by their centroids
        centroids = np.stack([centroid(vectors, state.rows("fine", child)) for child in children])
        sizes = np.array([len(state.rows("fine", child)) for child in children], dtype=np.float32)
        grouped = kmeans(centroids, k, weights=sizes, seeds=seeds)
        part = grouped[np.searchsorted(children, state.labels["fine"][rows])]
    else:  # too few fine topics: the papers themselves, their fine topics split along
        part = kmeans(np.asarray(vectors[rows], dtype=np.float32), k, seeds=seeds)
    made = []
    for i in range(k):
        new = state.fresh("coarse")
        made.append(new)
        state.names["coarse"][new], state.terms["coarse"][new] = _part_name(state, "coarse", topic, entry, i)
        state.labels["coarse"][rows[part == i]] = new
    pieces = set()  # a fine topic across parts: a piece in each
    for child in children:
        inside = state.labels["fine"][rows] == child
        parts = np.unique(part[inside]).tolist()
        if len(parts) == 1:
            state.parent[child] = made[parts[0]]
            continue
        for i in parts:
            pieces.add(_new_fine(state, child, rows[inside & (part == i)], made[i], f" (part {i + 1})"))
        state.drop("fine", child)
    state.drop("coarse", topic)
    for new in made:  # a part whose one fine topic is a piece: the piece is the part, and named so
        inside = [fine for fine, coarse in state.parent.items() if coarse == new]
        if len(inside) == 1 and inside[0] in pieces:
            state.names["fine"][inside[0]] = state.names["coarse"][new]
            state.terms["fine"][inside[0]] = state.terms["coarse"][new]
    return made


def _fine_parts(state: TopicState, topic: int, rows: np.ndarray, part: np.ndarray, entry: Split) -> list[int]:
    """New fine topics for the parts of ``rows``, the papers of fine ``topic`` (which goes), in its
    coarse topic, named as ``entry`` recorded (:func:`_part_name`)."""
    made = [_new_fine(state, topic, rows[part == i], state.parent[topic], "") for i in range(entry.k)]
    for i, new in enumerate(made):
        state.names["fine"][new], state.terms["fine"][new] = _part_name(state, "fine", topic, entry, i)
    state.drop("fine", topic)
    return made


def _part_name(state: TopicState, level: str, topic: int, entry: Split, i: int) -> tuple[str, list[str]]:
    """The name and terms of part ``i`` of the split ``entry`` of ``topic``: those the split
    recorded (named by its papers' own terms when it was made), else the topic's name with
    " (part i)" and its terms."""
    names, terms = entry.names or (), entry.terms or ()
    if len(names) == len(terms) == entry.k and names[i]:
        return clean_name(names[i]), list(terms[i])
    return f"{state.names[level][topic]} (part {i + 1})", state.terms[level][topic]


def _new_fine(state: TopicState, like: int, rows: np.ndarray, coarse: int, suffix: str) -> int:
    """A new fine topic of the papers ``rows`` in the coarse topic ``coarse``, named as the fine
    topic ``like`` plus ``suffix``, with its terms."""
    new = state.fresh("fine")
    state.names["fine"][new] = state.names["fine"][like] + suffix
    state.terms["fine"][new] = state.terms["fine"][like]
    state.parent[new] = coarse
    state.labels["fine"][rows] = new
    state.labels["coarse"][rows] = coarse
    return new


def _seeds(
    parts: tuple[tuple[str, ...], ...] | None, ids: pd.Index, rows: np.ndarray, vectors: np.ndarray, k: int
) -> np.ndarray | None:
    """Starting centres from the parts a split recorded (their papers still in the topic), so that
    it splits the same way again; None when there are none or one has no paper left."""
    if not parts or len(parts) != k:
        return None
    centres = []
    for part in parts:
        found = ids.get_indexer(pd.Index(list(part)))
        found = np.intersect1d(found[found >= 0], rows)
        if not len(found):
            return None
        centres.append(centroid(vectors, found))
    return np.stack(centres)
