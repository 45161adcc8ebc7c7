"""The topic map, computed once at build time: 2-D layout, clusters, cluster names, map trust.

- Layout: UMAP (cosine) on the embeddings, fed the exact nearest-neighbour graph from FAISS
  (``precomputed_knn``), with a fixed seed; a PCA layout for corpora too small for UMAP.
- Clusters: HDBSCAN on a 5-D UMAP of the embeddings (the same neighbour graph), as BERTopic
  does; papers in no cluster get label -1 ("unclustered") and stay on the map.
- Coarse topics: fine clusters merged by the similarity of their centroids (``coarse_topics``).
- Names: 2–4 whole phrases per topic of either level (:mod:`paperscope.index.naming`).
- Map trust: the share of each paper's 10 nearest neighbours in embedding space that are also
  among its 10 nearest on the map.

umap and numba are imported here only, and only by a build. umap compiles ~250 numba functions
without numba's on-disk cache; ``_umap`` turns that cache on for them, so they are compiled once per
installation, not once per build (a 300-paper map: 5.2 s the first time, 0.4 s after).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from collections import Counter

import numpy as np
import pandas as pd

from paperscope.index.naming import UNCLUSTERED, topic_names, topic_terms
from paperscope.options import UNCLUSTERED_NAME

SEED = 42
TRUST_K = 10
MIN_UMAP_PAPERS = 4  # UMAP fails below this (zero-size arrays, eigh with k >= N)
MIN_CLUSTER_PAPERS = 6
MAP_SAMPLE = 50_000  # larger corpora: layout and clusters fitted on a sample this big, the rest placed
PLACE_K = 5  # laid-out neighbours that place a paper or a query on the map
MAX_COARSE = 12  # coarse topics at most
CLUSTER_COLUMNS = ["level", "cluster", "name", "terms", "size", "central_ids", "x", "y", "map_trust", "parent"]


def knn_graph(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each paper's ``k`` nearest papers (itself first) and their cosine distances: exact search
    with FAISS, block by block, without copying the vectors into an index."""
    import faiss

    k = min(k, len(vectors))
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    similarities, indices = faiss.knn(vectors, vectors, k, metric=faiss.METRIC_INNER_PRODUCT)
    own = np.arange(len(vectors))
    if not (indices[:, 0] == own).all():  # exact duplicates can tie with the paper itself
        for row in np.flatnonzero(indices[:, 0] != own):
            others = [i for i in indices[row] if i != row][: k - 1]
            indices[row] = [row, *others]
            similarities[row] = [1.0] + [float(vectors[row] @ vectors[i]) for i in others]
    return indices.astype(np.int64), np.clip(1.0 - similarities, 0.0, 2.0).astype(np.float32)


@functools.cache
def _cache_umap_compilations() -> None:
    """Turn on numba's on-disk cache (beside the installed package, else in the user's cache
    folder; ``NUMBA_CACHE_DIR`` overrides) for the compiled functions of umap and pynndescent."""
    import umap  # noqa: F401  (imports the modules whose functions are cached)
    from numba.core.registry import CPUDispatcher

    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in ("umap", "pynndescent") and module is not None:
            for value in list(vars(module).values()):
                if isinstance(value, CPUDispatcher):
                    with contextlib.suppress(RuntimeError):  # no place to keep a cache: compiled each time
                        value.enable_caching()


def _umap(vectors, knn, n_components: int, min_dist: float) -> np.ndarray:
    import umap

    _cache_umap_compilations()
    n_neighbors = min(15, len(vectors) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state": reproducibility wins
        reducer = umap.UMAP(
            n_neighbors=n_neighbors,
            n_components=n_components,
            metric="cosine",
            min_dist=min_dist,
            random_state=SEED,
            init="spectral" if len(vectors) > 10 else "pca",
            precomputed_knn=(knn[0][:, :n_neighbors], knn[1][:, :n_neighbors]),
        )
        return reducer.fit_transform(vectors).astype(np.float32)


def layout(vectors: np.ndarray, knn: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, dict]:
    """2-D map coordinates for each paper and a description of how they were made."""
    count = len(vectors)
    if count >= MIN_UMAP_PAPERS:
        coords = _umap(vectors, knn, n_components=2, min_dist=0.1)
        return coords, {
            "method": "umap",
            "n_neighbors": min(15, count - 1),
            "metric": "cosine",
            "seed": SEED,
            "precomputed_knn": True,
        }
    centred = vectors - vectors.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((count, 2), dtype=np.float32)
    projected = centred @ components[:2].T
    coords[:, : projected.shape[1]] = projected
    return coords, {"method": "pca", "reason": f"UMAP needs at least {MIN_UMAP_PAPERS} papers, the corpus has {count}"}


def cluster(vectors: np.ndarray, knn: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, dict]:
    """A cluster label per paper (-1: unclustered) and a description of the clustering."""
    from sklearn.cluster import HDBSCAN

    count = len(vectors)
    if count < MIN_CLUSTER_PAPERS:
        return np.full(count, UNCLUSTERED), {"method": "none", "reason": f"fewer than {MIN_CLUSTER_PAPERS} papers"}
    space = _umap(vectors, knn, n_components=5, min_dist=0.0) if count >= 20 else vectors
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


def coarse_topics(vectors: np.ndarray, labels: np.ndarray) -> dict[int, int]:
    """Fine clusters merged into coarse topics: Ward clustering of the clusters' normalised
    centroids, cut where the merge distance jumps most, between sqrt(n) and sqrt(2n) topics for
    n clusters (at most 12). On IJCAI (27 clusters) Ward agreed with the area labels better than
    average linkage (adjusted mutual information at 7 topics 0.367 against 0.339;
    benchmarks/topic_quality.py). Returns the coarse topic of each fine cluster; coarse topics
    are numbered from the largest."""
    from scipy.cluster.hierarchy import fcluster, linkage

    fine = sorted(set(labels.tolist()) - {UNCLUSTERED})
    if len(fine) < 3:
        return {label: number for number, label in enumerate(fine)}
    centroids = np.stack([np.asarray(vectors[labels == label], dtype=np.float64).mean(axis=0) for label in fine])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)  # Euclidean on unit vectors ranks as cosine
    merges = linkage(centroids, method="ward")
    heights = merges[:, 2]  # the i-th merge leaves len(fine) - 1 - i groups
    fewest, most = max(2, round(np.sqrt(len(fine)))), min(MAX_COARSE, round(np.sqrt(2 * len(fine))), len(fine) - 1)
    wanted = max(
        range(fewest, max(fewest, most) + 1), key=lambda k: heights[len(fine) - k] - heights[len(fine) - k - 1]
    )
    merged = fcluster(merges, t=wanted, criterion="maxclust")
    sizes = Counter()
    for label, group in zip(fine, merged, strict=True):
        sizes[group] += int((labels == label).sum())
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    number = {group: rank for rank, (group, _) in enumerate(ranked)}
    return {label: number[group] for label, group in zip(fine, merged, strict=True)}


def map_trust(knn_indices: np.ndarray, coords: np.ndarray, k: int = TRUST_K) -> np.ndarray:
    """Per paper, the share of its k nearest neighbours in embedding space that are also its k nearest on the map."""
    import faiss

    count = len(coords)
    k = min(k, count - 1)
    if k < 1:
        return np.ones(count, dtype=np.float32)
    points = np.ascontiguousarray(coords, dtype=np.float32)
    flat = faiss.IndexFlatL2(points.shape[1])
    flat.add(points)
    _, near = flat.search(points, k + 1)  # each point itself first, unless another lies on it
    others_first = np.argsort(near == np.arange(count)[:, None], axis=1, kind="stable")
    on_map = np.take_along_axis(near, others_first, axis=1)[:, :k]
    return _shared(knn_indices[:, 1 : k + 1], on_map)


def _shared(rows: np.ndarray, other_rows: np.ndarray) -> np.ndarray:
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
    import faiss

    on_map = faiss.IndexFlatL2(2)
    on_map.add(np.ascontiguousarray(coords, dtype=np.float32))
    nearest = neighbours[:, :PLACE_K]
    where = place_on_map(similarities[:, :PLACE_K], nearest, coords).astype(np.float32)
    weights = np.maximum(similarities[:, :PLACE_K], 1e-6) ** 4
    classes = np.unique(labels[nearest])
    votes = np.stack([(weights * (labels[nearest] == c)).sum(axis=1) for c in classes], axis=1)
    _, near_on_map = on_map.search(where, neighbours.shape[1])
    return where, classes[votes.argmax(axis=1)], _shared(neighbours, near_on_map)


def _place_rest(
    vectors, rest: np.ndarray, sample_vectors: np.ndarray, coords: np.ndarray, labels: np.ndarray, chunk: int = 20_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`place_by_neighbours` for the papers outside the layout sample, a chunk at a time."""
    import faiss

    k = min(TRUST_K, len(sample_vectors))
    parts = []
    for start in range(0, len(rest), chunk):
        similarities, neighbours = faiss.knn(
            np.ascontiguousarray(vectors[rest[start : start + chunk]], dtype=np.float32),
            sample_vectors,
            k,
            metric=faiss.METRIC_INNER_PRODUCT,
        )
        parts.append(place_by_neighbours(similarities, neighbours, coords, labels))
    return tuple(np.concatenate(part) for part in zip(*parts, strict=True))


def _single_child_names(coarse_of: dict[int, int], names: dict) -> set[str]:
    """Names of coarse topics that hold one fine cluster: the fine cluster may share its name."""
    children = Counter(coarse_of.values())
    return {names["coarse"][group] for group, count in children.items() if count == 1}


def _topic_row(level, label, labels, name, terms, vectors, sample, coords, trust, ids) -> dict:
    """One row of the topics table (see ``topic_map``)."""
    members = np.flatnonzero(labels == label)
    sampled = np.intersect1d(members, sample, assume_unique=True)
    centroid = vectors[sampled].mean(axis=0)
    central = sampled[np.argsort(-(vectors[sampled] @ centroid))[:3]]
    median = np.median(coords[members], axis=0)
    anchor = coords[members[np.argmin(((coords[members] - median) ** 2).sum(1))]]
    return {
        "level": level,
        "cluster": label,
        "name": name,
        "terms": terms,
        "size": len(members),
        "central_ids": [ids[i] for i in central],
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(trust[members].mean()),
    }


def topic_map(
    vectors: np.ndarray, texts_of, ids: list[str], encode, sample_size: int = MAP_SAMPLE
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Everything the map needs, per paper and per cluster, plus a manifest section.

    ``texts_of(rows)`` returns the embedded texts of the given rows (only the layout sample's are
    asked for); ``encode(terms)`` embeds candidate topic names with the corpus's model. Corpora
    above ``sample_size`` papers are laid out and clustered on a random sample
    of that size; the other papers are placed by their nearest sampled papers (``place_on_map``)
    and join the cluster most of those belong to.

    Topics come in two levels: fine clusters, and coarse topics that merge them (``coarse_topics``).
    Returns (per-paper columns x, y, cluster, cluster_name, coarse_cluster, coarse_name, map_trust,
    placed;
    one row per topic of either level with level ("fine" or "coarse"), cluster, name, terms, size,
    central_ids (3 most central sampled papers), x, y (label position: the member nearest the
    topic's median), map_trust, parent (a fine cluster's coarse topic; -1 for coarse rows); the
    manifest's "map" section).
    """
    count = len(vectors)
    sample, sample_vectors = np.arange(count), np.ascontiguousarray(vectors, dtype=np.float32)
    if count > sample_size:
        sample = np.sort(np.random.default_rng(SEED).choice(count, sample_size, replace=False))
        sample_vectors = np.ascontiguousarray(vectors[sample], dtype=np.float32)
    knn = knn_graph(sample_vectors, k=max(16, TRUST_K + 1))
    sample_coords, layout_info = layout(sample_vectors, knn)
    sample_labels, cluster_info = cluster(sample_vectors, knn)
    coords, labels, trust = (np.empty((count, 2), np.float32), np.empty(count, np.int64), np.empty(count, np.float32))
    coords[sample], labels[sample], trust[sample] = sample_coords, sample_labels, map_trust(knn[0], sample_coords)
    rest = np.setdiff1d(np.arange(count), sample)
    if len(rest):
        coords[rest], labels[rest], trust[rest] = _place_rest(
            vectors, rest, sample_vectors, sample_coords, sample_labels
        )
        layout_info = {
            **layout_info,
            "fitted_on": len(sample),
            "placed": len(rest),
            "placed_share": len(rest) / count,
            "placement": f"similarity^4-weighted mean of the {PLACE_K} nearest laid-out papers",
        }
    coarse_of = coarse_topics(sample_vectors, sample_labels)
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in labels], dtype=np.int64)
    texts = texts_of(sample)
    levels = {"fine": labels, "coarse": coarse}
    terms = topic_terms(texts, {level: levels[level][sample] for level in levels}, sample_vectors, encode)
    names = {"coarse": topic_names(terms["coarse"])}
    names["fine"] = topic_names(
        terms["fine"], taken=set(names["coarse"].values()) - _single_child_names(coarse_of, names)
    )
    rows = [
        _topic_row(
            level, label, levels[level], names[level][label], terms[level][label], vectors, sample, coords, trust, ids
        )
        | {"parent": coarse_of[label] if level == "fine" else UNCLUSTERED}
        for level in ("fine", "coarse")
        for label in sorted(names[level])
    ]
    clusters = pd.DataFrame(rows, columns=CLUSTER_COLUMNS)
    per_paper = pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": labels,
            "cluster_name": [names["fine"].get(label, UNCLUSTERED_NAME) for label in labels],
            "coarse_cluster": coarse,
            "coarse_name": [names["coarse"].get(label, UNCLUSTERED_NAME) for label in coarse],
            "map_trust": trust,
            "placed": np.isin(np.arange(count), rest),  # placed by neighbours, not laid out
        }
    )
    trust_info = {"k": min(TRUST_K, len(sample) - 1), "mean": float(trust.mean())}
    if len(rest):
        trust_info.update(laid_out=float(trust[sample].mean()), placed=float(trust[rest].mean()))
    manifest = {
        "layout": layout_info,
        "clusters": {
            **cluster_info,
            "count": len(names["fine"]),
            "coarse_count": len(names["coarse"]),
            "merge": "Ward linkage of normalised cluster centroids, cut at the largest jump in [sqrt(n), sqrt(2n)]",
            "names": "c-TF-IDF phrases reranked by MiniLM similarity to the centroid, MMR",
            "unclustered": int((labels == UNCLUSTERED).sum()),
        },
        "map_trust": trust_info,
    }
    return per_paper, clusters, manifest
