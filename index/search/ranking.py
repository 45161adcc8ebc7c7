"""Ranking: the one place that owns candidate sets and score blending.

- dense: FAISS's nearest vectors (cosine);
- keyword: TF-IDF cosine over the postings of the query's terms;
- hybrid: ``weight`` x dense + the rest x keyword, blended exactly over the union of the dense and
  keyword top ``QuerySettings.candidates`` (and exact acronym matches), as txtai does; dense here
  is the cosine with the neighbour-smoothed vectors when the index has them;
- several papers, or papers to avoid: Rocchio (the mean of the positives minus
  ``QuerySettings.negative`` x the mean of the negatives), in vector and in term space;
- short text queries: pseudo-relevance feedback (``QuerySettings.feedback``).

Filters arrive as a boolean mask over rows (``within``); FAISS skips the other rows while it
searches (an ``IDSelectorBitmap``), so a filter never cuts a ranking short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import numpy as np

from paperscope.errors import UserError
from paperscope.index.common.smoothed import RowVectors
from paperscope.settings import Mode, QuerySettings

FIRST_BONUS = 0.25  # added to the score of a paper using the query's acronym (in the score shown: it ranks by it)


def _no_rows() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


class Reason(TypedDict):
    """Why a paper is recommended (``recommend.reasons``): the collection's members in the index it
    is closest to ((row, cosine) pairs, closest first) and the terms it shares with them; with
    members outside the index, theirs ("outside": (member number, cosine) pairs, which the
    collections group names: {key, citation_key, title, similarity}); for a feed of new papers,
    when the paper came into the index ("added", Unix milliseconds)."""

    members: list[tuple[int, float]]
    terms: list[str]
    outside: NotRequired[list[Any]]
    added: NotRequired[int]


@dataclass(frozen=True)
class Ranking:
    """Rows of the papers found, best first, and their score columns ("score", and in hybrid
    mode "cosine" and "keyword_score"; in keyword mode "keyword_score")."""

    rows: np.ndarray
    scores: dict[str, np.ndarray]
    note: str | None = None  # why there are no results, when a query matched nothing
    reasons: list[Reason] | None = None  # recommendations: why each (``recommend.reasons``)


@dataclass(frozen=True)
class Query:
    """What is ranked against: ``vector`` (in the ranking's space: smoothed when the index has
    smoothed vectors and the mode is hybrid), ``raw_vector`` (in the raw vectors' space: it finds
    the dense candidates and gives the ``cosine`` column; None: ``vector``), ``keyword`` (a 1-row
    sparse TF-IDF query), rows to ``exclude`` and rows that go ``first``."""

    vector: np.ndarray | None
    keyword: object
    raw_vector: np.ndarray | None = None
    exclude: np.ndarray = field(default_factory=_no_rows)
    first: np.ndarray = field(default_factory=_no_rows)

    @property
    def dense(self) -> np.ndarray:
        """``vector``, which every mode but keyword ranks by (a keyword query may have none)."""
        if self.vector is None:
            raise ValueError("a query without a vector ranked in a dense or hybrid mode")
        return self.vector


def rocchio(vectors: RowVectors, positive: list[int], negative: list[int], weight: float) -> np.ndarray:
    """The mean of the ``positive`` rows minus ``weight`` x the mean of the ``negative`` ones, normalised."""
    vector = vectors[positive].mean(axis=0)
    if negative:
        vector = vector - weight * vectors[negative].mean(axis=0)
    return vector / max(np.linalg.norm(vector), 1e-12)


class Ranker:
    """Ranks the rows of one index generation: its vectors, smoothed vectors (or None), FAISS index,
    keyword index, and the search section of its manifest (a
    :class:`~paperscope.index.store.manifest.SearchInfo`: default modes and weights, HNSW depth)."""

    def __init__(self, vectors: np.ndarray, smoothed: RowVectors | None, faiss_index, keyword, search):
        self.vectors = vectors
        self.smoothed = smoothed
        self.faiss_index = faiss_index
        self.keyword = keyword
        self.search_info = search
        if search.ef_search is not None:  # HNSW: the search depth the build tuned for recall
            import faiss

            # faiss's generated stubs lack its SWIG classes' attributes
            faiss.downcast_index(faiss_index).hnsw.efSearch = search.ef_search  # type: ignore[attr-defined]

    @property
    def documents(self) -> RowVectors:
        """What the papers are ranked as: the smoothed vectors when the index has them, else the raw ones."""
        return self.vectors if self.smoothed is None else self.smoothed

    def __len__(self) -> int:
        return len(self.vectors)

    def faiss_search(self, query: np.ndarray, count: int, within: np.ndarray | None = None):
        """FAISS's ``count`` nearest rows to each row of ``query`` (scores, rows), only among the
        rows of the mask ``within`` (FAISS skips the others while it searches); missing ones are -1."""
        query = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(-1, self.vectors.shape[1]))
        if within is None:
            return self.faiss_index.search(query, count)
        import faiss

        bits = np.packbits(np.asarray(within, dtype=bool), bitorder="little")
        selector = faiss.IDSelectorBitmap(len(within), faiss.swig_ptr(bits))
        if self.search_info.ef_search is not None:  # HNSW: keep the search depth the build tuned
            # faiss's generated stubs lack its SWIG classes' attributes
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=self.search_info.ef_search)  # type: ignore[attr-defined]
        else:
            # faiss's generated stubs lack its SWIG classes' attributes
            params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        return self.faiss_index.search(query, count, params=params)

    def nearest(self, vector: np.ndarray, k: int, exclude=(), within: np.ndarray | None = None) -> Ranking:
        """The ``k`` rows nearest to ``vector`` by cosine (FAISS), skipping ``exclude``, among ``within``."""
        exclude = {int(row) for row in exclude}
        scores, rows = self.faiss_search(vector, min(k + len(exclude), len(self)), within)
        keep = [(row, score) for row, score in zip(rows[0], scores[0], strict=True) if row >= 0 and row not in exclude]
        keep = keep[:k]
        return Ranking(
            np.array([row for row, _ in keep], np.int64), {"score": np.array([s for _, s in keep], np.float32)}
        )

    def rank(self, query: Query, k: int, mode: Mode, *, weight: float, candidates: int, within=None) -> Ranking:
        """The ``k`` best rows for ``query`` in ``mode`` (see the module docstring), hybrid scores
        blended with the dense share ``weight`` over the top ``candidates`` of each side;
        ``within``: a boolean mask over rows, only its rows are ranked."""
        if within is not None and (np.shape(within) != (len(self),) or np.asarray(within).dtype != bool):
            raise UserError(f"within must be a boolean mask of the index's {len(self)} papers (see where())")
        if mode == "dense":
            return self.nearest(query.dense, k, query.exclude, within)
        first = query.first
        if mode == "hybrid":
            rows, first, columns = self._hybrid_candidates(query, k, candidates, within)
            scores = weight * columns.pop("blend_cosine") + (1 - weight) * columns["keyword_score"]
        else:  # keyword: only papers that use a term of the query, or that go first
            rows = np.arange(len(self)) if within is None else np.flatnonzero(within)
            scores = self.keyword.scores(query.keyword)[rows]
            used = (scores > 0) | np.isin(rows, first)
            rows, scores = rows[used], scores[used]
            columns = {"keyword_score": scores}
        scores = scores + FIRST_BONUS * np.isin(rows, first)  # the score shown is the one ranked by
        order = scores.astype(np.float64)
        order[np.isin(rows, query.exclude)] = -np.inf
        top = np.argpartition(-order, k)[:k] if k < len(order) else np.arange(len(order))
        top = np.array([i for i in top[np.argsort(-order[top], kind="stable")] if np.isfinite(order[i])], np.int64)
        return Ranking(rows[top], {"score": scores[top], **{name: values[top] for name, values in columns.items()}})

    def _hybrid_candidates(self, query: Query, k: int, count: int, within) -> tuple[np.ndarray, np.ndarray, dict]:
        """The rows a hybrid ranking blends (the dense and keyword top ``count``, and those that go
        first), the rows that go first among them, and their cosine and keyword score columns
        ("blend_cosine": the cosine the blend uses, smoothed when the index has smoothed vectors)."""
        wanted = min(max(count, k) + len(query.exclude), len(self))
        raw = np.asarray(query.vector if query.raw_vector is None else query.raw_vector, np.float32)
        dense = self.faiss_search(raw, wanted, within)[1][0]
        keyword, first = self.keyword.candidates(query.keyword, wanted), query.first
        if within is not None:
            keyword, first = keyword[within[keyword]], first[within[first]]
        candidates = np.union1d(np.union1d(dense[dense >= 0], keyword), first)
        cosine = np.asarray(self.vectors[candidates] @ raw, dtype=np.float32)
        columns = {"cosine": cosine, "keyword_score": self.keyword.row_scores(candidates, query.keyword)}
        if self.smoothed is not None:  # documents described a little by their neighbours
            cosine = np.asarray(self.smoothed[candidates] @ np.asarray(query.vector, np.float32), dtype=np.float32)
        return candidates, first, {**columns, "blend_cosine": cosine}

    def similar(
        self, positive: list[int], negative: list[int], k: int, settings: QuerySettings, within=None
    ) -> Ranking:
        """The ``k`` rows most like the rows ``positive`` and least like ``negative`` (Rocchio in
        vector and in term space), those rows excluded."""
        mode = settings.mode or self.search_info.similar_mode
        weight = self.search_info.hybrid_weight if settings.hybrid_weight is None else settings.hybrid_weight
        share = [1 / len(positive)] * len(positive) + [-settings.negative / max(len(negative), 1)] * len(negative)
        raw = rocchio(self.vectors, positive, negative, settings.negative)
        smoothed = self.smoothed if mode == "hybrid" else None  # the papers' smoothed vectors are the query too
        query = Query(
            vector=raw if smoothed is None else rocchio(smoothed, positive, negative, settings.negative),
            keyword=self.keyword.weighted_rows(positive + negative, share),
            raw_vector=raw,
            exclude=np.asarray(positive + negative, dtype=np.int64),
        )
        return self.rank(query, k, mode, weight=weight, candidates=settings.candidates, within=within)

    def search(self, query: Query, text_words: int, k: int, settings: QuerySettings, within=None) -> Ranking:
        """The ``k`` rows most like a text query of ``text_words`` words; a short one (at most
        ``settings.feedback.max_words``) is moved towards the mean of its first results and ranked
        again (pseudo-relevance feedback), unless the mode is keyword or feedback is off."""
        mode = settings.mode or self.search_info.search_mode
        weight = self.search_info.text_weight if settings.hybrid_weight is None else settings.hybrid_weight
        ranked = {"weight": weight, "candidates": settings.candidates, "within": within}
        feedback = settings.feedback
        if feedback.on and mode != "keyword" and text_words <= feedback.max_words:
            top = self.rank(query, feedback.results, mode, **ranked).rows
            vector = query.dense
            if len(top):
                vector = vector + feedback.weight * self.documents[np.sort(top)].mean(axis=0)
            query = Query(vector / max(np.linalg.norm(vector), 1e-12), query.keyword, first=query.first)
        return self.rank(query, k, mode, **ranked)
