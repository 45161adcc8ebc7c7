"""Where papers and queries outside a layout sit on the map: from their nearest laid-out papers.

A query's star in the app, a paper added by ``paperscope add`` and, at scale, the papers outside
the layout sample of a build are all placed this way: milliseconds, no umap.
"""

from __future__ import annotations

import numpy as np

TRUST_K = 10  # neighbours compared in embedding space and on the map (map trust)
PLACE_K = 5  # laid-out neighbours that place a paper or a query on the map


def neighbour_share(rows: np.ndarray, other_rows: np.ndarray) -> np.ndarray:
    """Per row, the share of the entries of ``rows`` that are also in the same row of ``other_rows``."""
    return (rows[:, :, None] == other_rows[:, None, :]).any(axis=2).mean(axis=1).astype(np.float32)


def place_on_map(similarities: np.ndarray, neighbours: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Map positions of papers or queries outside the layout: the mean position of their nearest
    laid-out papers (``neighbours``, rows of ``coords``), weighted by similarity^4 to favour the closest."""
    weights = np.maximum(np.asarray(similarities, dtype=np.float64), 1e-6) ** 4
    return (weights[..., None] * coords[neighbours]).sum(axis=-2) / weights.sum(axis=-1, keepdims=True)


def place_by_neighbours(
    similarities: np.ndarray, neighbours: np.ndarray, coords: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, cluster labels and map trust of papers outside a layout, from their nearest
    laid-out papers (``similarities`` and ``neighbours``: rows of ``coords`` and ``labels``, best
    first, ``TRUST_K`` of them): the similarity^4-weighted mean position of the ``PLACE_K``
    nearest, the label with the most similarity^4 among them, and the share of the nearest that
    are also nearest on the map."""
    from scipy.spatial import (
        cKDTree,
    )  # exact, as a flat search, but not over every paper: 700,000 on the map 4.7 s -> 0.5

    nearest = neighbours[:, :PLACE_K]
    where = place_on_map(similarities[:, :PLACE_K], nearest, coords).astype(np.float32)
    weights = np.maximum(similarities[:, :PLACE_K], 1e-6) ** 4
    classes = np.unique(labels[nearest])
    votes = np.stack([(weights * (labels[nearest] == c)).sum(axis=1) for c in classes], axis=1)
    _, near_on_map = cKDTree(np.asarray(coords, dtype=np.float64)).query(where, k=neighbours.shape[1])
    near_on_map = np.asarray(near_on_map).reshape(len(where), neighbours.shape[1])
    return where, classes[votes.argmax(axis=1)], neighbour_share(neighbours, near_on_map)
