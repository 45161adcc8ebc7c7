"""The topic map, computed once at build time: 2-D layout, clusters, cluster names, map trust.

- Layout: UMAP (cosine) on the embeddings, fed the exact nearest-neighbour graph from FAISS
  (``precomputed_knn``), with a fixed seed; a PCA layout for corpora too small for UMAP.
- Clusters: HDBSCAN on a 5-D UMAP of the embeddings (the same neighbour graph), as BERTopic
  does; papers in no cluster get label -1 ("unclustered") and stay on the map.
- Names: the 2–4 most distinctive terms of each cluster by class-based TF-IDF against the other
  clusters, scientific boilerplate removed.
- Map trust: the share of each paper's 10 nearest neighbours in embedding space that are also
  among its 10 nearest on the map.

umap and numba are imported here only, and only by a build.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import scipy.sparse

from paperscope.index.terms import BOILERPLATE, english_stop_words, phrases, words

SEED = 42
TRUST_K = 10
MIN_UMAP_PAPERS = 4  # UMAP fails below this (zero-size arrays, eigh with k >= N)
MIN_CLUSTER_PAPERS = 6
MAP_SAMPLE = 50_000  # larger corpora: layout and clusters fitted on a sample this big, the rest placed
PLACE_K = 5  # laid-out neighbours that place a paper or a query on the map
UNCLUSTERED = -1


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


def _umap(vectors, knn, n_components: int, min_dist: float) -> np.ndarray:
    import umap

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


def _singular(term: str) -> str:
    return " ".join(word[:-1] if word.endswith("s") and len(word) > 3 else word for word in term.split())


def cluster_terms(texts: list[str], labels: np.ndarray, n_terms: int = 4) -> dict[int, list[str]]:
    """The most distinctive terms of each cluster by class-based TF-IDF (BERTopic's c-TF-IDF)."""
    from sklearn.feature_extraction.text import CountVectorizer

    clusters = sorted(set(labels.tolist()) - {UNCLUSTERED})
    if not clusters:
        return {}
    stop_words = english_stop_words()

    def is_stop(word: str) -> bool:
        return word in stop_words or word.endswith("ly") or not word[0].isalpha()

    def candidates(text: str) -> list[str]:
        """Words and 2–3-word phrases: no English stop word, adverb or number anywhere, not starting
        with boilerplate ("video generation" and "reinforcement learning" count; "learning" alone and
        "state-of-the-art llms" do not)."""
        return [term for term in phrases(words(text), (1, 2, 3), is_stop) if term.split(" ", 1)[0] not in BOILERPLATE]

    vectorizer = CountVectorizer(analyzer=candidates, binary=True)
    try:
        presence = vectorizer.fit_transform(texts)  # paper x term, 1 where the paper uses the term
    except ValueError:  # not one term (say, no Latin letters): the clusters get numbered names
        return {label: [] for label in clusters}
    vocabulary = vectorizer.get_feature_names_out()
    classes = [*clusters, UNCLUSTERED]
    class_of_paper = np.where(labels == UNCLUSTERED, len(clusters), np.searchsorted(clusters, labels))
    membership = scipy.sparse.csr_matrix(
        (np.ones(len(labels)), (class_of_paper, np.arange(len(labels)))), shape=(len(classes), len(labels))
    )
    # Count each term once per paper, so one abstract repeating a word cannot name its cluster.
    # Sparse (class x term): a dense one is classes x vocabulary, gigabytes for 50,000 abstracts.
    counts = (membership @ presence).tocsr()
    counts.sort_indices()
    average_terms = counts.sum() / len(classes)
    idf = np.log(1 + average_terms / np.maximum(np.asarray(counts.sum(axis=0)).ravel(), 1))
    term_weight = idf * np.array([1.0 + 0.5 * term.count(" ") for term in vocabulary])  # phrases count more
    sizes = np.bincount(class_of_paper, minlength=len(classes))
    terms = {}
    for row, label in enumerate(clusters):
        columns = counts.indices[counts.indptr[row] : counts.indptr[row + 1]]
        in_papers = counts.data[counts.indptr[row] : counts.indptr[row + 1]]
        scores = in_papers / max(in_papers.sum(), 1) * term_weight[columns]
        chosen: list[str] = []
        for position in np.argsort(-scores, kind="stable"):
            term = vocabulary[columns[position]]
            if in_papers[position] < min(2, sizes[row]):
                continue  # used by a single paper of the cluster: not the cluster's topic
            term_words = set(_singular(term).split())
            if any(term_words & set(_singular(kept).split()) for kept in chosen):
                continue  # "graph" or "neural networks gnns" after "graph neural networks": nothing new
            chosen.append(term)
            if len(chosen) == n_terms:
                break
        terms[label] = chosen
    return terms


def name_clusters(terms: dict[int, list[str]]) -> dict[int, str]:
    """Distinct names of 2–4 terms each: the first two terms, more where two names would clash."""
    names: dict[int, str] = {}
    for label, label_terms in terms.items():
        candidates = [", ".join(label_terms[:size]) for size in range(min(2, len(label_terms)), len(label_terms) + 1)]
        candidates = [name for name in candidates if name] or [f"topic {label + 1}"]
        names[label] = next(
            (name for name in candidates if name not in names.values()), f"{candidates[-1]} ({label + 1})"
        )
    return names


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


def _place_rest(
    vectors, rest: np.ndarray, sample_vectors: np.ndarray, coords: np.ndarray, labels: np.ndarray, chunk: int = 20_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, cluster labels (similarity-weighted vote of the nearest laid-out papers) and map
    trust (against the laid-out papers) of the papers outside the layout sample."""
    import faiss

    on_map = faiss.IndexFlatL2(2)
    on_map.add(np.ascontiguousarray(coords))
    k = min(TRUST_K, len(sample_vectors))
    classes = np.unique(labels)
    placed, voted, trust = (
        np.empty((len(rest), 2), np.float32),
        np.empty(len(rest), np.int64),
        np.empty(len(rest), np.float32),
    )
    for start in range(0, len(rest), chunk):
        rows = rest[start : start + chunk]
        similarities, neighbours = faiss.knn(
            np.ascontiguousarray(vectors[rows], dtype=np.float32), sample_vectors, k, metric=faiss.METRIC_INNER_PRODUCT
        )
        where = place_on_map(similarities[:, :PLACE_K], neighbours[:, :PLACE_K], coords).astype(np.float32)
        weights = np.maximum(similarities[:, :PLACE_K], 1e-6) ** 4
        votes = np.stack([(weights * (labels[neighbours[:, :PLACE_K]] == c)).sum(axis=1) for c in classes], axis=1)
        _, near_on_map = on_map.search(where, k)
        part = slice(start, start + len(rows))
        placed[part], voted[part] = where, classes[votes.argmax(axis=1)]
        trust[part] = _shared(neighbours, near_on_map)
    return placed, voted, trust


def topic_map(
    vectors: np.ndarray, texts_of, ids: list[str], sample_size: int = MAP_SAMPLE
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Everything the map needs, per paper and per cluster, plus a manifest section.

    ``texts_of(rows)`` returns the embedded texts of the given rows (only the layout sample's are
    asked for). Corpora above ``sample_size`` papers are laid out and clustered on a random sample
    of that size; the other papers are placed by their nearest sampled papers (``place_on_map``)
    and join the cluster most of those belong to.

    Returns (per-paper columns x, y, cluster, cluster_name, map_trust; one row per cluster with
    cluster, name, terms, size, central_ids (3 most central sampled papers), x, y (label position:
    the member nearest the cluster's median), map_trust; the manifest's "map" section).
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
            "placement": f"similarity^4-weighted mean of the {PLACE_K} nearest laid-out papers",
        }
    terms = cluster_terms(texts_of(sample), sample_labels)
    names = name_clusters(terms)
    rows = []
    for label in sorted(names):
        members = np.flatnonzero(labels == label)
        sampled = sample[sample_labels == label]
        centroid = vectors[sampled].mean(axis=0)
        central = sampled[np.argsort(-(vectors[sampled] @ centroid))[:3]]
        median = np.median(coords[members], axis=0)
        anchor = coords[members[np.argmin(((coords[members] - median) ** 2).sum(1))]]
        rows.append(
            {
                "cluster": label,
                "name": names[label],
                "terms": terms[label],
                "size": len(members),
                "central_ids": [ids[i] for i in central],
                "x": float(anchor[0]),
                "y": float(anchor[1]),
                "map_trust": float(trust[members].mean()),
            }
        )
    clusters = pd.DataFrame(rows, columns=["cluster", "name", "terms", "size", "central_ids", "x", "y", "map_trust"])
    per_paper = pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": labels,
            "cluster_name": [names.get(label, "unclustered") for label in labels],
            "map_trust": trust,
        }
    )
    trust_info = {"k": min(TRUST_K, len(sample) - 1), "mean": float(trust.mean())}
    if len(rest):
        trust_info.update(laid_out=float(trust[sample].mean()), placed=float(trust[rest].mean()))
    manifest = {
        "layout": layout_info,
        "clusters": {**cluster_info, "count": len(names), "unclustered": int((labels == UNCLUSTERED).sum())},
        "map_trust": trust_info,
    }
    return per_paper, clusters, manifest
