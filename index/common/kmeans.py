"""Deterministic k-means of unit vectors, in numpy (no scikit-learn: a curated index's splits
run on every load): the build's bisection of grab-bag clusters
(:func:`paperscope.index.topics.clusters.bisect`) and the curations' splits
(:mod:`paperscope.index.curation.splits`)."""

from __future__ import annotations

import numpy as np

KMEANS_SEED, KMEANS_STARTS, KMEANS_ROUNDS = 0, 4, 50


def kmeans(points: np.ndarray, k: int, weights=None, seeds: np.ndarray | None = None) -> np.ndarray:
    """Each point's part (0 to k-1, each part non-empty): Lloyd's k-means of unit vectors, started
    from ``seeds`` (parts then numbered as the seeds), else the best of ``KMEANS_STARTS`` k-means++
    starts with a fixed seed (parts numbered largest first). Deterministic; ``weights`` per point."""
    points = np.asarray(points, dtype=np.float32)
    weights = np.ones(len(points), np.float32) if weights is None else np.asarray(weights, np.float32)
    if seeds is not None:
        return _lloyd(points, weights, np.asarray(seeds, np.float32))[0]
    random = np.random.default_rng(KMEANS_SEED)
    found = [_lloyd(points, weights, _plus_plus(points, weights, k, random)) for _ in range(KMEANS_STARTS)]
    part = min(found, key=lambda result: result[1])[0]
    sizes = np.bincount(part, weights=weights, minlength=k)
    order = sorted(range(k), key=lambda i: (-sizes[i], int(np.flatnonzero(part == i)[0])))
    return np.argsort(order)[part]


def _plus_plus(points: np.ndarray, weights: np.ndarray, k: int, random) -> np.ndarray:
    """k starting centres by k-means++ (weighted by ``weights``)."""
    chosen = [int(random.choice(len(points), p=weights / weights.sum()))]
    distance = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        chance = weights * distance
        if chance.sum() <= 0:  # every point sits on a centre: take the next one not chosen
            chosen.append(next(i for i in range(len(points)) if i not in chosen))
        else:
            chosen.append(int(random.choice(len(points), p=chance / chance.sum())))
        distance = np.minimum(distance, ((points - points[chosen[-1]]) ** 2).sum(axis=1))
    return points[chosen].copy()


def _lloyd(points: np.ndarray, weights: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, float]:
    """Lloyd's iterations from ``centres``: each point's part and the weighted inertia. A part left
    empty takes the point farthest from its centre among the parts of more than one point."""
    k, part = len(centres), None
    squares = (points**2).sum(axis=1)
    for _ in range(KMEANS_ROUNDS):
        distance = squares[:, None] - 2 * points @ centres.T + (centres**2).sum(axis=1)[None, :]
        new = np.argmin(distance, axis=1)
        for empty in np.setdiff1d(np.arange(k), new):
            own = distance[np.arange(len(points)), new]
            crowded = np.isin(new, np.flatnonzero(np.bincount(new, minlength=k) > 1))
            new[int(np.argmax(np.where(crowded, own, -np.inf)))] = empty
        if part is not None and np.array_equal(new, part):
            break
        part = new
        for i in range(k):
            inside = part == i
            centres[i] = np.average(points[inside], axis=0, weights=weights[inside])
    assert part is not None  # KMEANS_ROUNDS >= 1
    distance = ((points - centres[part]) ** 2).sum(axis=1)
    return part, float((weights * distance).sum())
