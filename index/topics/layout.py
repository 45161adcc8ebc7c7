"""The map's 2-D layout, computed once at build time.

- Layout: UMAP (cosine) on the embeddings, fed the exact nearest-neighbour graph from FAISS
  (``precomputed_knn``), with a fixed seed; a PCA layout for corpora too small for UMAP. Its
  parameters are :class:`~paperscope.settings.LayoutSettings`.
- Map trust: the share of each paper's 10 nearest neighbours in embedding space that are also
  among its 10 nearest on the map.

umap and numba are imported here only, and only by a build. umap compiles ~250 numba functions
without numba's on-disk cache; ``umap_fit`` turns that cache on for them, so they are compiled once
per installation, not once per build (a 300-paper map: 5.2 s the first time, 0.4 s after).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from typing import NamedTuple

import numpy as np

from paperscope.index.search.nearest import without_own
from paperscope.index.search.placement import TRUST_K, neighbour_share
from paperscope.settings import LayoutSettings

MIN_UMAP_PAPERS = 4  # UMAP fails below this (zero-size arrays, eigh with k >= N)


class Layout(NamedTuple):
    """The map's 2-D coordinates of each paper laid out, and how they were made (the manifest's
    "layout" section)."""

    coords: np.ndarray
    description: dict


def knn_graph(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each paper's ``k`` nearest papers (itself first) and their cosine distances: exact search
    with FAISS, block by block, without copying the vectors into an index."""
    import faiss

    k = min(k, len(vectors))
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    own = np.arange(len(vectors))
    similarities, found = faiss.knn(vectors, vectors, k, metric=faiss.METRIC_INNER_PRODUCT)
    itself = np.where(found[:, 0] == own, similarities[:, 0], 1.0)  # as FAISS computed it: UMAP sees the difference
    similarities, others = without_own(similarities, found, own, k - 1)
    indices = np.column_stack([own, others]).astype(np.int64)
    distances = np.clip(1.0 - np.column_stack([itself, similarities]), 0.0, 2.0)
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


def umap_fit(vectors, knn, n_components: int, min_dist: float, settings: LayoutSettings) -> np.ndarray:
    """UMAP of ``vectors`` (cosine, ``settings``' neighbours and seed) into ``n_components``
    dimensions, fed the neighbour graph ``knn`` (indices, distances; see :func:`knn_graph`)."""
    import umap

    _cache_umap_compilations()
    n_neighbors = min(settings.n_neighbors, len(vectors) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state": reproducibility wins
        reducer = umap.UMAP(
            n_neighbors=n_neighbors,
            n_components=n_components,
            metric="cosine",
            min_dist=min_dist,
            random_state=settings.seed,
            init="spectral" if len(vectors) > 10 else "pca",
            precomputed_knn=(knn[0][:, :n_neighbors], knn[1][:, :n_neighbors]),
        )
        return reducer.fit_transform(vectors).astype(np.float32)


def layout(vectors: np.ndarray, knn: tuple[np.ndarray, np.ndarray], settings: LayoutSettings) -> Layout:
    """2-D map coordinates for each paper of ``vectors`` (neighbour graph ``knn``, see
    :func:`knn_graph`) and a description of how they were made."""
    count = len(vectors)
    if count >= MIN_UMAP_PAPERS:
        coords = umap_fit(vectors, knn, 2, settings.min_dist, settings)
        return Layout(
            coords,
            {
                "method": "umap",
                "n_neighbors": min(settings.n_neighbors, count - 1),
                "metric": "cosine",
                "seed": settings.seed,
                "precomputed_knn": True,
            },
        )
    centred = vectors - vectors.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((count, 2), dtype=np.float32)
    projected = centred @ components[:2].T
    coords[:, : projected.shape[1]] = projected
    reason = f"UMAP needs at least {MIN_UMAP_PAPERS} papers, the corpus has {count}"
    return Layout(coords, {"method": "pca", "reason": reason})


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
