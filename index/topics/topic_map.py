"""The topic map, computed once at build time: 2-D layout, clusters, cluster names, map trust.

- Layout: UMAP (cosine) on the embeddings, fed the exact nearest-neighbour graph from FAISS
  (``precomputed_knn``), with a fixed seed; a PCA layout for corpora too small for UMAP.
- Clusters: HDBSCAN on a 5-D UMAP of the embeddings (the same neighbour graph), as BERTopic
  does; papers in no cluster get label -1 ("unclustered") and stay on the map.
- Coarse topics: fine clusters merged by the similarity of their centroids (``coarse_topics``).
- Names: 2–4 whole phrases per topic of either level (:mod:`paperscope.index.topics.naming`).
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
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperscope.index.search.nearest import nearest_others
from paperscope.index.search.placement import PLACE_K, TRUST_K, neighbour_share, place_by_neighbours
from paperscope.index.topics.naming import UNCLUSTERED, topic_names, topic_terms
from paperscope.settings import UNCLUSTERED_NAME

SEED = 42
MIN_UMAP_PAPERS = 4  # UMAP fails below this (zero-size arrays, eigh with k >= N)
MIN_CLUSTER_PAPERS = 6
MAP_SAMPLE = 50_000  # larger corpora: layout and clusters fitted on a sample this big, the rest placed
MAX_COARSE = 12  # coarse topics at most
CLUSTER_COLUMNS = ["level", "cluster", "name", "terms", "size", "central_ids", "x", "y", "map_trust", "parent"]


def knn_graph(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each paper's ``k`` nearest papers (itself first) and their cosine distances: exact search
    with FAISS, block by block, without copying the vectors into an index."""
    import faiss

    k = min(k, len(vectors))
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(queries: np.ndarray, count: int):
        return faiss.knn(queries, vectors, count, metric=faiss.METRIC_INNER_PRODUCT)

    own = np.arange(len(vectors))
    similarities, others = nearest_others(search, vectors, own, k - 1)
    indices = np.column_stack([own, others]).astype(np.int64)
    distances = np.column_stack([np.zeros(len(own), np.float32), np.clip(1.0 - similarities, 0.0, 2.0)])
    return indices, distances.astype(np.float32)


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
    return neighbour_share(knn_indices[:, 1 : k + 1], on_map)


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


@dataclass
class _Laid:
    """Every paper on the map: the layout sample laid out and clustered, the rest placed."""

    vectors: np.ndarray
    ids: list[str]
    sample: np.ndarray  # rows laid out (all, up to MAP_SAMPLE papers)
    sample_vectors: np.ndarray
    coords: np.ndarray
    labels: np.ndarray  # fine cluster of each paper (UNCLUSTERED: none)
    trust: np.ndarray
    rest: np.ndarray  # rows placed by their nearest sampled papers
    manifest: dict  # the "layout" and "clusters" sections


def _lay_out(vectors: np.ndarray, ids: list[str], sample_size: int) -> _Laid:
    """Lay out and cluster a sample of at most ``sample_size`` papers, and place the rest."""
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
    manifest = {"layout": layout_info, "clusters": cluster_info}
    return _Laid(vectors, ids, sample, sample_vectors, coords, labels, trust, rest, manifest)


def _topic_row(laid: _Laid, labels: np.ndarray, label: int) -> dict:
    """The topics table's columns of the topic ``label`` of ``labels`` but its name, terms and parent."""
    members = np.flatnonzero(labels == label)
    sampled = np.intersect1d(members, laid.sample, assume_unique=True)
    centroid = laid.vectors[sampled].mean(axis=0)
    central = sampled[np.argsort(-(laid.vectors[sampled] @ centroid))[:3]]
    median = np.median(laid.coords[members], axis=0)
    anchor = laid.coords[members[np.argmin(((laid.coords[members] - median) ** 2).sum(1))]]
    return {
        "cluster": label,
        "size": len(members),
        "central_ids": [laid.ids[i] for i in central],
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(laid.trust[members].mean()),
    }


def map_columns(
    coords: np.ndarray, fine: np.ndarray, coarse: np.ndarray, names: dict[str, dict], trust: np.ndarray, placed
) -> pd.DataFrame:
    """The map's columns of each paper, as the papers' table stores them: x, y, cluster,
    cluster_name, coarse_cluster, coarse_name (``names``: {"fine"|"coarse": {label: name}}),
    map_trust, placed (by its neighbours, not laid out)."""
    return pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": fine,
            "cluster_name": [names["fine"].get(label, UNCLUSTERED_NAME) for label in fine],
            "coarse_cluster": coarse,
            "coarse_name": [names["coarse"].get(label, UNCLUSTERED_NAME) for label in coarse],
            "map_trust": trust,
            "placed": placed,
        }
    )


def topic_map(
    vectors: np.ndarray, texts_of, ids: list[str], encode, sample_size: int = MAP_SAMPLE
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Everything the map needs, per paper and per cluster, plus a manifest section.

    ``texts_of(rows)`` returns the embedded texts of the given rows (only the layout sample's are
    asked for); ``encode(terms)`` embeds candidate topic names with the corpus's model. Corpora
    above ``sample_size`` papers are laid out and clustered on a random sample of that size; the
    other papers are placed by their nearest sampled papers
    (:func:`paperscope.index.search.placement.place_by_neighbours`).

    Topics come in two levels: fine clusters, and coarse topics that merge them (``coarse_topics``).
    Returns (per-paper columns, see :func:`map_columns`; one row per topic of either level with
    level ("fine" or "coarse"), cluster, name, terms, size, central_ids (3 most central sampled
    papers), x, y (label position: the member nearest the topic's median), map_trust, parent (a
    fine cluster's coarse topic; -1 for coarse rows); the manifest's "map" section).
    """
    laid = _lay_out(vectors, ids, sample_size)
    coarse_of = coarse_topics(laid.sample_vectors, laid.labels[laid.sample])
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in laid.labels], dtype=np.int64)
    levels = {"fine": laid.labels, "coarse": coarse}
    sampled_levels = {level: labels[laid.sample] for level, labels in levels.items()}
    terms = topic_terms(texts_of(laid.sample), sampled_levels, laid.sample_vectors, encode)
    names = {"coarse": topic_names(terms["coarse"])}
    names["fine"] = topic_names(
        terms["fine"], taken=set(names["coarse"].values()) - _single_child_names(coarse_of, names)
    )
    rows = [
        {"level": level, "name": names[level][label], "terms": terms[level][label]}
        | _topic_row(laid, levels[level], label)
        | {"parent": coarse_of[label] if level == "fine" else UNCLUSTERED}
        for level in ("fine", "coarse")
        for label in sorted(names[level])
    ]
    clusters = pd.DataFrame(rows, columns=CLUSTER_COLUMNS)
    placed = np.isin(np.arange(len(vectors)), laid.rest)
    per_paper = map_columns(laid.coords, laid.labels, coarse, names, laid.trust, placed)
    trust_info = {"k": min(TRUST_K, len(laid.sample) - 1), "mean": float(laid.trust.mean())}
    if len(laid.rest):
        trust_info.update(laid_out=float(laid.trust[laid.sample].mean()), placed=float(laid.trust[laid.rest].mean()))
    manifest = {
        "layout": laid.manifest["layout"],
        "clusters": {
            **laid.manifest["clusters"],
            "count": len(names["fine"]),
            "coarse_count": len(names["coarse"]),
            "merge": "Ward linkage of normalised cluster centroids, cut at the largest jump in [sqrt(n), sqrt(2n)]",
            "names": "c-TF-IDF phrases reranked by MiniLM similarity to the centroid, MMR",
            "unclustered": int((laid.labels == UNCLUSTERED).sum()),
        },
        "map_trust": trust_info,
    }
    return per_paper, clusters, manifest
