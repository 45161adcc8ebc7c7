"""Which FAISS index serves the dense search, and how good an approximate one is.

Exact inner product (``Flat``) up to ``EXACT_LIMIT`` vectors: on these 2-core machines a Flat search
of 200,000 x 384 vectors takes ~5 ms (shared/NOTES.md), well inside the 50 ms query budget.
Above that, HNSW (``HNSW32,Flat``), whose ``efSearch`` is raised until recall@10 against exact
search, measured on sampled papers, reaches ``TARGET_RECALL``. Any ``faiss.index_factory``
string can be given instead.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import numpy as np

EXACT_LIMIT = 250_000
TARGET_RECALL = 0.95
EF_SEARCH_STEPS = (32, 64, 128, 256, 512)
RECALL_SAMPLES = 500
CHECK_DIMENSION = 1536  # checks a factory string: divisible as PQ's and OPQ's M need, for common models


def choose_factory(count: int, override: str | None = None) -> str:
    """The index_factory string for ``count`` vectors."""
    return override or ("Flat" if count <= EXACT_LIMIT else "HNSW32,Flat")


def check_factory(factory: str, dimension: int = CHECK_DIMENSION) -> str:
    """``factory`` when FAISS can make an index of it (no vectors: instant), else a UserError: the
    command line checks ``--faiss`` so before a build embeds anything."""
    import faiss

    from paperscope.errors import UserError, shown

    try:
        faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        reason = str(exc).splitlines()[-1].rpartition(": ")[2][:80]  # FAISS's C++ location before it
        raise UserError(f"'{shown(factory)}' is not a FAISS index_factory string ({reason})") from None
    return factory


def build_ann(vectors: np.ndarray, factory: str):
    """A trained FAISS index (inner product) holding ``vectors``."""
    import faiss

    from paperscope.errors import UserError

    try:
        ann = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise UserError(
            f"--faiss '{factory}' is not a FAISS index_factory string ({str(exc).splitlines()[-1][:80]})"
        ) from None
    try:
        if not ann.is_trained:
            ann.train(vectors)
        ann.add(vectors)
    except RuntimeError as exc:
        raise UserError(
            f"--faiss '{factory}' cannot be trained on {len(vectors)} papers "
            f"({str(exc).splitlines()[-1][:80]}); use Flat or HNSW32,Flat"
        ) from None
    return ann


def recall_at_10(ann, vectors: np.ndarray, seed: int = 0) -> float:
    """Mean share of the exact 10 nearest papers that ``ann`` returns, on sampled papers as queries."""
    import faiss

    rng = np.random.default_rng(seed)
    queries = np.ascontiguousarray(vectors[rng.choice(len(vectors), min(RECALL_SAMPLES, len(vectors)), replace=False)])
    k = min(10, len(vectors))
    _, exact = faiss.knn(queries, np.ascontiguousarray(vectors), k, metric=faiss.METRIC_INNER_PRODUCT)
    _, found = ann.search(queries, k)
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, found, strict=True)]))


def neighbour_overlap(reference: np.ndarray, other: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's k nearest rows under ``reference`` that it also has under ``other``
    (the same texts embedded two ways; rows compared among themselves)."""
    k = min(k, len(reference) - 1)
    if k < 1:
        return 1.0

    def nearest(vectors: np.ndarray) -> np.ndarray:
        return np.argsort(-(vectors @ vectors.T), axis=1)[:, 1 : k + 1]

    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(nearest(reference), nearest(other), strict=True)]))


class Tuning(TypedDict):
    """What :func:`tune` measured: the manifest's ``search.recall_at_10`` and ``search.ef_search``."""

    recall_at_10: float
    ef_search: NotRequired[int]  # HNSW only


def tune(ann, vectors: np.ndarray) -> Tuning:
    """Measure recall@10 (raising HNSW's efSearch until it meets TARGET_RECALL); a manifest section."""
    import faiss

    # faiss's generated stubs lack its SWIG classes' attributes
    hnsw = faiss.downcast_index(ann).hnsw if "HNSW" in type(faiss.downcast_index(ann)).__name__ else None  # type: ignore[attr-defined]
    if hnsw is None:
        exact = type(faiss.downcast_index(ann)).__name__ in ("IndexFlatIP", "IndexFlat")
        return {"recall_at_10": 1.0 if exact else recall_at_10(ann, vectors)}
    for ef_search in EF_SEARCH_STEPS:
        hnsw.efSearch = ef_search
        recall = recall_at_10(ann, vectors)
        if recall >= TARGET_RECALL:
            break
    return {"recall_at_10": recall, "ef_search": ef_search}
