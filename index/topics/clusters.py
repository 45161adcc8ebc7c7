"""Clusters of the topic map at two levels, computed once at build time.

- Fine clusters: HDBSCAN on a 5-D UMAP of the embeddings (the layout's neighbour graph), as
  BERTopic does; papers in no cluster get label -1 ("unclustered") and stay on the map.
- Coarse topics: fine clusters merged by the similarity of their centroids (``coarse_topics``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from paperscope.index.search.kmeans import kmeans
from paperscope.index.topics.layout import umap_fit
from paperscope.settings import UNCLUSTERED

MIN_CLUSTER_PAPERS = 6
MAX_COARSE = 12  # coarse topics at most in the cut (more where a group of the cut does not hang together)
ADOPT_QUANTILE = 0.05  # a left-out paper joins a topic when it is as close to it as 95 % of members are to theirs


def cluster(vectors: np.ndarray, knn: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, dict]:
    """A cluster label per paper (-1: unclustered) and a description of the clustering."""
    from sklearn.cluster import HDBSCAN

    count = len(vectors)
    if count < MIN_CLUSTER_PAPERS:
        return np.full(count, UNCLUSTERED), {"method": "none", "reason": f"fewer than {MIN_CLUSTER_PAPERS} papers"}
    space = umap_fit(vectors, knn, n_components=5, min_dist=0.0) if count >= 20 else vectors
    min_cluster_size = max(3, round(np.sqrt(count) / 1.5))
    labels = HDBSCAN(
        min_cluster_size=min_cluster_size, min_samples=1, copy=True, cluster_selection_method="leaf"
    ).fit_predict(space)
    return labels.astype(np.int64), {
        "method": "hdbscan",
        "space": "umap-5d" if count >= 20 else "embeddings",
        "min_cluster_size": min_cluster_size,
        "selection": "leaf",
    }


def adopt_outliers(vectors: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Papers HDBSCAN left out, drawn in the topic whose centroid is nearest when they are at least
    as similar to it as the least typical members are to theirs (the ADOPT_QUANTILE of members'
    similarity to their own centroid). Returns (labels, outlying: True for adopted papers, the
    similarity threshold)."""
    fine = np.array(sorted(set(labels.tolist()) - {UNCLUSTERED}))
    grey = np.flatnonzero(labels == UNCLUSTERED)
    if not len(fine) or not len(grey):
        return labels, np.zeros(len(labels), dtype=bool), 1.0
    centroids = np.stack([np.asarray(vectors[labels == label], dtype=np.float32).mean(axis=0) for label in fine])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    members = np.flatnonzero(labels != UNCLUSTERED)
    nearest = centroids[np.searchsorted(fine, labels[members])]
    own = np.einsum("ij,ij->i", np.asarray(vectors[members], np.float32), nearest)
    threshold = float(np.quantile(own, ADOPT_QUANTILE))
    similarities = np.asarray(vectors[grey], dtype=np.float32) @ centroids.T
    close = similarities.max(axis=1) >= threshold
    adopted, outlying = labels.copy(), np.zeros(len(labels), dtype=bool)
    adopted[grey[close]] = fine[similarities[close].argmax(axis=1)]
    outlying[grey[close]] = True
    return adopted, outlying, threshold


def bisect(vectors: np.ndarray) -> np.ndarray:
    """Two groups of ``vectors`` (0 or 1 per row, 0 the larger): :func:`kmeans` with k = 2."""
    return kmeans(np.asarray(vectors, dtype=np.float32), 2)


def _ward_cut(centroids: np.ndarray, coherent) -> list[list[int]]:
    """Groups of clusters (indices into ``centroids``): Ward linkage of the normalised centroids
    cut where the merge distance jumps most, between sqrt(n) and sqrt(2n) groups (at most
    MAX_COARSE); a group of the cut that ``coherent(group)`` refuses is taken apart into the
    largest coherent groups below it."""
    from scipy.cluster.hierarchy import linkage

    count = len(centroids)
    merges = linkage(centroids, method="ward")
    heights = merges[:, 2]  # the i-th merge leaves count - 1 - i groups
    fewest, most = max(2, round(np.sqrt(count))), min(MAX_COARSE, round(np.sqrt(2 * count)), count - 1)
    wanted = max(range(fewest, max(fewest, most) + 1), key=lambda k: heights[count - k] - heights[count - k - 1])
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


def coarse_topics(vectors: np.ndarray, labels: np.ndarray, coherent=lambda clusters: True) -> dict[int, int]:
    """Fine clusters merged into coarse topics (:func:`_ward_cut` of their centroids). On IJCAI
    (27 clusters) Ward agreed with the area labels better than average linkage (adjusted mutual
    information at 7 topics 0.367 against 0.339; benchmarks/topic_quality.py). ``coherent(fine
    labels)`` says whether the papers of those fine clusters hang together as one topic (a name of
    two terms covers enough of them). Returns the coarse topic of each fine cluster; coarse topics
    are numbered from the largest."""
    fine = sorted(set(labels.tolist()) - {UNCLUSTERED})
    if len(fine) < 3:
        return {label: number for number, label in enumerate(fine)}
    centroids = np.stack([np.asarray(vectors[labels == label], dtype=np.float64).mean(axis=0) for label in fine])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)  # Euclidean on unit vectors ranks as cosine
    groups = _ward_cut(centroids, lambda group: coherent([fine[i] for i in group]))
    sizes = Counter()
    group_of = {fine[i]: number for number, group in enumerate(groups) for i in group}
    for label, group in group_of.items():
        sizes[group] += int((labels == label).sum())
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    number = {group: rank for rank, (group, _) in enumerate(ranked)}
    return {label: number[group] for label, group in group_of.items()}
