"""Clusters of the topic map at two levels, computed once at build time.

- Fine clusters: HDBSCAN on a 5-D UMAP of the embeddings (the layout's neighbour graph), as
  BERTopic does; papers in no cluster get label -1 ("unclustered") and stay on the map.
- Coarse topics: fine clusters merged by the similarity of their centroids (``coarse_topics``).

Their parameters are :class:`~paperscope.settings.ClusterSettings` (the UMAP's neighbours and
seed the layout's, :class:`~paperscope.settings.LayoutSettings`).
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from paperscope.index.common.kmeans import kmeans
from paperscope.index.topics.layout import umap_fit
from paperscope.settings import UNCLUSTERED, ClusterSettings, SeedTopic, TopicSettings


class Clustering(NamedTuple):
    """Fine clusters: a label per paper (UNCLUSTERED: none), how they were found (the manifest's
    "clusters" section), and the seed topic of each label that is one (:mod:`.seeds`)."""

    labels: np.ndarray
    description: dict
    seeds: dict[int, SeedTopic]


class Adoption(NamedTuple):
    """Labels with the papers the clustering left out drawn in their nearest topic where close
    enough (:func:`adopt_outliers`): True in ``outlying`` for those; ``threshold`` the similarity
    asked of them."""

    labels: np.ndarray
    outlying: np.ndarray
    threshold: float


def cluster(vectors: np.ndarray, knn: tuple[np.ndarray, np.ndarray], settings: TopicSettings) -> Clustering:
    """A cluster label per paper (-1: unclustered) and a description of the clustering
    (``settings.clusters``; the UMAP's neighbours and seed from ``settings.layout``)."""
    from sklearn.cluster import HDBSCAN

    count, chosen = len(vectors), settings.clusters
    if count < chosen.min_papers:
        reason = f"fewer than {chosen.min_papers} papers"
        return Clustering(np.full(count, UNCLUSTERED), {"method": "none", "reason": reason}, {})
    reduced = count >= chosen.space_from
    space = umap_fit(vectors, knn, chosen.space_dims, chosen.space_min_dist, settings.layout) if reduced else vectors
    min_cluster_size = max(chosen.min_size_floor, round(np.sqrt(count) / chosen.min_size_divisor))
    labels = HDBSCAN(
        min_cluster_size=min_cluster_size,
        min_samples=chosen.min_samples,
        copy=True,
        cluster_selection_method=chosen.selection,
    ).fit_predict(space)
    description = {
        "method": "hdbscan",
        "space": f"umap-{chosen.space_dims}d" if reduced else "embeddings",
        "min_cluster_size": min_cluster_size,
        "selection": chosen.selection,
    }
    return Clustering(labels.astype(np.int64), description, {})


def adopt_outliers(vectors: np.ndarray, labels: np.ndarray, quantile: float) -> Adoption:
    """Papers HDBSCAN left out, drawn in the topic whose centroid is nearest when they are at least
    as similar to it as the least typical members are to theirs (the ``quantile`` of members'
    similarity to their own centroid: ``ClusterSettings.adopt_quantile``)."""
    fine = np.array(sorted(set(labels.tolist()) - {UNCLUSTERED}))
    grey = np.flatnonzero(labels == UNCLUSTERED)
    if not len(fine) or not len(grey):
        return Adoption(labels, np.zeros(len(labels), dtype=bool), 1.0)
    centroids = np.stack([np.asarray(vectors[labels == label], dtype=np.float32).mean(axis=0) for label in fine])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    members = np.flatnonzero(labels != UNCLUSTERED)
    nearest = centroids[np.searchsorted(fine, labels[members])]
    own = np.einsum("ij,ij->i", np.asarray(vectors[members], np.float32), nearest)
    threshold = float(np.quantile(own, quantile))
    similarities = np.asarray(vectors[grey], dtype=np.float32) @ centroids.T
    close = similarities.max(axis=1) >= threshold
    adopted, outlying = labels.copy(), np.zeros(len(labels), dtype=bool)
    adopted[grey[close]] = fine[similarities[close].argmax(axis=1)]
    outlying[grey[close]] = True
    return Adoption(adopted, outlying, threshold)


def bisect(vectors: np.ndarray) -> np.ndarray:
    """Two groups of ``vectors`` (0 or 1 per row, 0 the larger): :func:`kmeans` with k = 2."""
    return kmeans(np.asarray(vectors, dtype=np.float32), 2)


def _ward_cut(centroids: np.ndarray, coherent, max_coarse: int, groups: int | None = None) -> list[list[int]]:
    """Groups of clusters (indices into ``centroids``): Ward linkage of the normalised centroids
    cut where the merge distance jumps most, between sqrt(n) and sqrt(2n) groups (at most
    ``max_coarse``), or into ``groups`` groups when given; a group of the cut that ``coherent(group)``
    refuses is taken apart into the largest coherent groups below it."""
    from scipy.cluster.hierarchy import linkage

    count = len(centroids)
    merges = linkage(centroids, method="ward")
    heights = merges[:, 2]  # the i-th merge leaves count - 1 - i groups
    fewest, most = max(2, round(np.sqrt(count))), min(max_coarse, round(np.sqrt(2 * count)), count - 1)
    wanted = max(range(fewest, max(fewest, most) + 1), key=lambda k: heights[count - k] - heights[count - k - 1])
    wanted = wanted if groups is None else min(groups, count)
    leaves = {node: [node] for node in range(count)}
    children, whole = {}, dict.fromkeys(range(count), True)
    roots = set(range(count))
    for step, (left, right, _, _) in enumerate(merges[: count - wanted]):
        node, left, right = count + step, int(left), int(right)
        leaves[node], children[node] = leaves[left] + leaves[right], (left, right)
        whole[node] = whole[left] and whole[right] and coherent(leaves[node])
        roots -= {left, right}
        roots.add(node)

    def parts(node: int) -> list[list[int]]:
        return [leaves[node]] if whole[node] else [part for child in children[node] for part in parts(child)]

    return [part for root in sorted(roots) for part in parts(root)]


def coarse_topics(
    vectors: np.ndarray,
    labels: np.ndarray,
    settings: ClusterSettings,
    coherent=lambda clusters: True,
    groups: int | None = None,
) -> dict[int, int]:
    """Fine clusters merged into coarse topics (:func:`_ward_cut` of their centroids, at most
    ``settings.max_coarse`` where every group of the cut is ``coherent``; Ward agrees with
    labelled areas better than average linkage: docs/benchmarks.md). ``coherent(fine
    labels)`` says whether the papers of those fine clusters hang together as one topic (a name of
    two terms covers enough of them); ``groups``: cut into that many instead (a remap), each group
    of the cut kept whole. Returns the coarse topic of each fine cluster; coarse topics are
    numbered from the largest."""
    fine = sorted(set(labels.tolist()) - {UNCLUSTERED})
    if len(fine) < 3 or (groups is not None and groups >= len(fine)):
        return {label: number for number, label in enumerate(fine)}
    centroids = np.stack([np.asarray(vectors[labels == label], dtype=np.float64).mean(axis=0) for label in fine])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)  # Euclidean on unit vectors ranks as cosine
    cut = _ward_cut(centroids, lambda group: coherent([fine[i] for i in group]), settings.max_coarse, groups)
    sizes: Counter[int] = Counter()
    group_of = {fine[i]: number for number, group in enumerate(cut) for i in group}
    for label, group in group_of.items():
        sizes[group] += int((labels == label).sum())
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    number = {group: rank for rank, (group, _) in enumerate(ranked)}
    return {label: number[group] for label, group in group_of.items()}
