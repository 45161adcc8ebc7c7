"""PaperIndex: load an index folder and look up the nearest papers to a paper or to free text."""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import threading
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from paperscope.embed.text import normalise_text
from paperscope.errors import UnknownPaper, UserError
from paperscope.index import locations, store
from paperscope.index.topics import place_on_map
from paperscope.options import FEEDBACK, LEVELS, MODES, check_choice

MAX_QUERY_CHARS = 20_000
QUERY_MEMORY = 64
SENTENCE_MEMORY = 20_000  # sentence vectors remembered for explanations (15 MB)
ROCCHIO_NEGATIVE = 0.5
# Hybrid ranking blends exactly only the union of the dense and the keyword top CANDIDATES (and
# exact acronym matches): benchmarks/hybrid_candidates.py measures its agreement with a full blend.
CANDIDATES = 200
ACRONYM = re.compile(r"(?<![\w-])(?=[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*[A-Z0-9])[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9](?![\w-])")


def _rocchio(vectors: np.ndarray, positive: list[int], negative: list[int]) -> np.ndarray:
    """The mean of the ``positive`` rows minus ``ROCCHIO_NEGATIVE`` x the mean of the ``negative`` ones, normalised."""
    vector = vectors[positive].mean(axis=0)
    if negative:
        vector = vector - ROCCHIO_NEGATIVE * vectors[negative].mean(axis=0)
    return vector / max(np.linalg.norm(vector), 1e-12)


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_k(k) -> int:
    """Validate a result count: a positive whole number."""
    if not _is_whole(k) or k < 1:
        raise UserError(f"k must be a whole number of at least 1, got {k!r}")
    return int(k)


def clean_query(text) -> str:
    """Normalise free query text; empty, non-text or overlong queries are user errors."""
    if not isinstance(text, str):
        raise UserError(f"the query must be text, got {type(text).__name__}")
    text = normalise_text("".join(ch if ch.isprintable() else " " for ch in text))
    if not text:
        raise UserError("the query is empty; type a few words or an abstract")
    if len(text) > MAX_QUERY_CHARS:
        raise UserError(
            f"the query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,} (about ten abstracts)"
        )
    return text


def _as_frame(find, doc: str):
    """A method returning what the method ``find`` returns (rows, score columns) as the DataFrame
    of results, with ``find``'s arguments."""

    @functools.wraps(find)
    def method(self, *args, **kwargs) -> pd.DataFrame:
        return self._frame(*find(self, *args, **kwargs))

    method.__doc__ = doc
    method.__name__ = method.__qualname__ = find.__name__.removesuffix("_rows")
    method.__signature__ = inspect.signature(find).replace(return_annotation=pd.DataFrame)
    return method


class PaperIndex:
    """A loaded index folder: papers, their vectors, the FAISS and keyword indexes, the map.

    ``similar(paper_ids, k)`` and ``search(text, k)`` return a DataFrame with one row per
    result, best first: ``rank``, ``id``, ``title``, ``score`` (the ranking score: cosine
    similarity in dense mode, its blend with the keyword cosine in hybrid mode, which adds
    ``cosine`` and ``keyword_score`` columns) and the paper's metadata columns. Threads may share
    one PaperIndex (``paperscope serve`` does).
    """

    def __init__(self, folder: Path, generation: store.Generation, model_path: str | Path | None = None):
        self.folder = folder
        self.manifest = generation.manifest
        self.vectors = generation.vectors
        self.faiss_index = generation.faiss_index
        self.table = generation.papers  # memory-mapped Arrow table: rows are taken, never all decoded
        topics = generation.clusters
        self.clusters = topics[topics["level"] == "fine"].reset_index(drop=True)  # fine topics
        self.coarse_clusters = topics[topics["level"] == "coarse"].reset_index(drop=True)  # merged ones
        self.keyword = generation.keyword
        self.smoothed = generation.smoothed  # neighbour-smoothed vectors for hybrid ranking, or None
        self._model_path = model_path
        self._query_vectors: dict[str, np.ndarray] = {}
        self._sentences: dict[str, np.ndarray] = {}  # sentence → vector, for explanations
        self._memory_lock = threading.Lock()  # the two memories above, for threads sharing the index
        if "ef_search" in self.manifest["search"]:  # HNSW: the search depth the build tuned for recall
            import faiss

            faiss.downcast_index(self.faiss_index).hnsw.efSearch = self.manifest["search"]["ef_search"]

    @classmethod
    def load(cls, folder: str | Path, model_path: str | Path | None = None) -> PaperIndex:
        """Load the index folder (memory-mapped: milliseconds, whatever its size; checksums are
        checked by ``paperscope verify``); ``model_path`` overrides where the query model is loaded from."""
        folder = Path(folder)
        for _ in range(3):  # a concurrent build may replace the generation while we read it
            generation = store.current_generation_name(folder)
            try:
                return cls(folder, store.read_generation(folder), model_path=model_path)
            except (UserError, FileNotFoundError):
                if generation is None or store.current_generation_name(folder) == generation:
                    raise
        raise UserError(f"{folder}: the index kept changing while loading; try again")

    def warm(self) -> None:
        """Load now what lookups otherwise load on first use (the query model, the id hash, the
        record batches), so that a service's first requests are as quick as the ones after."""
        self.embed_query("warm up")
        self.rows([self.table.column("id")[0].as_py()])
        self.take([0])

    def __len__(self) -> int:
        return self.table.num_rows

    @cached_property
    def papers(self) -> pd.DataFrame:
        """Every paper's metadata as a DataFrame (decoded on first use: the app and the analyses
        want it; lookups take rows from the memory-mapped table instead)."""
        return self.table.to_pandas()

    @cached_property
    def coordinates(self) -> np.ndarray:
        """(n, 2) map positions of the papers."""
        return np.column_stack([self.table.column(axis).to_numpy() for axis in ("x", "y")]).astype(np.float64)

    def __repr__(self) -> str:
        return f"PaperIndex({str(self.folder)!r}, papers={len(self)}, model={self.manifest['model']['name']!r})"

    @cached_property
    def encoder(self):
        """The query encoder: the model the index was built with, checked by fingerprint."""
        from paperscope.embed.model import BUNDLED_MODEL_NAME, Encoder, bundled_model_path

        built_with = self.manifest["model"]
        path = self._model_path or built_with["path"]
        if not self._model_path and not Path(path).is_dir() and built_with["name"] == BUNDLED_MODEL_NAME:
            path = bundled_model_path()  # the index was built on another machine or in another venv
        if not Path(path).is_dir():
            raise UserError(f"the model this index was built with is not at {path}; pass its folder with --model")
        encoder = Encoder(
            path, onnx_dir=locations.onnx_dir(), quantize=built_with.get("quantize"), window=built_with.get("window")
        )
        if encoder.fingerprint != built_with["fingerprint"]:
            raise UserError(
                f"the model at {path} (fingerprint {encoder.fingerprint}) is not the one this index was "
                f"built with ({built_with['name']}, {built_with['fingerprint']}); rebuild the index or pass --model"
            )
        return encoder

    def row(self, paper_id: str) -> int:
        """Row number of ``paper_id``; an unknown id raises a UserError suggesting close ids or titles."""
        return int(self.rows([paper_id])[0])

    def rows(self, paper_ids: list[str]) -> np.ndarray:
        """Row numbers of ``paper_ids`` (one hash of the id column: fast for a lasso of thousands);
        an unknown id raises a UserError suggesting close ids or titles."""
        paper_ids = [str(paper_id).strip() for paper_id in paper_ids]
        found = self._id_index.get_indexer(paper_ids) if len(paper_ids) != 1 else self._one_row(paper_ids[0])
        if (found < 0).any():
            raise self._unknown(paper_ids[int(np.flatnonzero(found < 0)[0])])
        return found.astype(np.int64)

    def _one_row(self, paper_id: str) -> np.ndarray:
        """``rows`` of one id: a hash lookup without ``get_indexer``'s cost of building arrays (0.2 ms)."""
        try:
            return np.array([self._id_index.get_loc(paper_id)], dtype=np.int64)
        except KeyError:
            return np.array([-1], dtype=np.int64)

    @cached_property
    def _id_index(self) -> pd.Index:
        """The papers' ids, hashed once (0.3 s at a million papers), then looked up in microseconds."""
        return pd.Index(self.table.column("id").to_numpy(zero_copy_only=False))

    def known(self, paper_ids: list[str]) -> list[str]:
        """Those of ``paper_ids`` that are papers of the index, in their order."""
        paper_ids = [str(paper_id).strip() for paper_id in paper_ids]
        return [
            paper_id for paper_id, row in zip(paper_ids, self._id_index.get_indexer(paper_ids), strict=True) if row >= 0
        ]

    def where(self, years=None, topics=None, venues=None, category=None, level: str | None = None) -> np.ndarray | None:
        """The papers that pass every filter given, as a boolean mask over rows (None when none is
        given), for the ``within`` argument of :meth:`similar` and :meth:`search`: ``years`` a
        (low, high) pair, inclusive; ``topics`` names of topics of ``level`` ("coarse" or "fine";
        None: of either); ``venues`` venue names; ``category`` text the paper's categories
        contain, in any case. A field the papers lack, or a topic the index lacks, is a UserError."""
        conditions = []
        if years is not None:
            if not (isinstance(years, (list, tuple)) and len(years) == 2 and all(_is_whole(year) for year in years)):
                raise UserError(f"years must be a (low, high) pair of whole numbers, got {years!r}")
            column = self._filter_column("year")
            conditions.append(pc.and_(pc.greater_equal(column, years[0]), pc.less_equal(column, years[1])))
        if topics is not None:
            names = pa.array(self._names("topics", topics), pa.string())
            levels = {"coarse": ["coarse_name"], "fine": ["cluster_name"], None: ["coarse_name", "cluster_name"]}
            if level not in levels:
                raise UserError(f"unknown topic level '{level}'; choose one of {', '.join(LEVELS)}")
            columns = [self.table.column(name) for name in levels[level]]
            known = set().union(*(pc.unique(column).to_pylist() for column in columns))
            for name in names.to_pylist():
                if name not in known:
                    raise UserError(f"no topic named '{name}' in {self.folder}; `paperscope topics` lists them")
            conditions.append(functools.reduce(pc.or_, (pc.is_in(column, value_set=names) for column in columns)))
        if venues is not None:
            conditions.append(
                pc.is_in(self._filter_column("venue"), pa.array(self._names("venues", venues), pa.string()))
            )
        if category is not None:
            if not isinstance(category, str):
                raise UserError(f"category must be text, got {category!r}")
            conditions.append(pc.match_substring(self._filter_column("categories"), category, ignore_case=True))
        if not conditions:
            return None
        mask = np.ones(len(self), dtype=bool)
        for condition in conditions:
            mask &= condition.fill_null(False).to_numpy(zero_copy_only=False)
        return mask

    def _filter_column(self, name: str):
        """A metadata column to filter on; a UserError when the papers lack it."""
        if name not in self.table.column_names:
            raise UserError(f"the papers of {self.folder} have no '{name}' field to filter on")
        return self.table.column(name)

    @staticmethod
    def _names(what: str, names) -> list[str]:
        if isinstance(names, str) or not all(isinstance(name, str) for name in names):
            raise UserError(f"{what} must be a list of names, got {names!r}")
        return list(names)

    def _unknown(self, paper_id: str) -> UnknownPaper:
        """The error for an unknown id, with close ids and titles containing it as suggestions."""
        ids = self.table.column("id")
        close = difflib.get_close_matches(paper_id, ids.to_pylist(), n=3, cutoff=0.6) if len(ids) <= 100_000 else []
        titles = self.table.column("title")
        in_title = pc.match_substring(titles, paper_id, ignore_case=True)
        by_title = pc.filter(self.table.column("id"), in_title).slice(0, 3).to_pylist() if paper_id else []
        suggestions = list(dict.fromkeys(close + by_title))
        if not suggestions:
            return UnknownPaper(
                f"no paper with id '{paper_id}' in {self.folder}; `paperscope search TEXT` finds papers by text"
            )
        named = self.take(self.rows(suggestions), ["id", "title"]).to_pylist()
        listed = ", ".join(f"{paper['id']} ({paper['title'][:50]})" for paper in named)
        return UnknownPaper(f"no paper with id '{paper_id}' in {self.folder}; did you mean {listed}?")

    def take(self, rows, columns: list[str] | None = None) -> pa.Table:
        """The papers at ``rows``, in that order, as an Arrow table (all columns, or ``columns``),
        decoded from the memory-mapped table record batch by record batch (Arrow's ``take`` on the
        whole table would first join every batch of every column: a copy of all abstracts)."""
        rows = np.asarray(rows, dtype=np.int64)
        batch_of = np.searchsorted(self._batch_starts, rows, side="right") - 1
        parts, order = [], []
        for batch in np.unique(batch_of):
            chosen = np.flatnonzero(batch_of == batch)
            record_batch = self._batches[batch] if columns is None else self._batches[batch].select(columns)
            parts.append(record_batch.take(pa.array(rows[chosen] - self._batch_starts[batch])))
            order.append(chosen)
        if not parts:
            return (self.table.schema if columns is None else self.table.select(columns).schema).empty_table()
        taken = pa.Table.from_batches(parts)
        if len(parts) == 1:  # one batch: taken in the order asked
            return taken
        return taken.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))

    @cached_property
    def _batches(self) -> list[pa.RecordBatch]:
        return self.table.to_batches()

    @cached_property
    def _batch_starts(self) -> np.ndarray:
        return np.cumsum([0] + [batch.num_rows for batch in self._batches])[:-1]

    def paper(self, paper_id: str) -> dict:
        """The metadata of one paper as a dict (a missing value as None)."""
        return self.take([self.row(paper_id)]).to_pylist()[0]

    def embed_query(self, text: str) -> np.ndarray:
        """The query vector of free text, as the index's papers were embedded (the last few are kept:
        an app reruns the same query for its results, its map position and its explanations)."""
        text = clean_query(text)
        with self._memory_lock:
            vector = self._query_vectors.get(text)
        if vector is None:
            strategy = self.manifest["long_text"]["strategy"]
            vector = self.encoder.encode([text], long_text=strategy)[0]
            with self._memory_lock:
                if len(self._query_vectors) >= QUERY_MEMORY:
                    self._query_vectors.pop(next(iter(self._query_vectors)))
                self._query_vectors[text] = vector
        return vector

    def search_vector(self, vector: np.ndarray, k: int = 10, exclude_rows=()) -> pd.DataFrame:
        """Papers nearest to ``vector`` (normalised, the index's dimension) by cosine, skipping ``exclude_rows``."""
        return self._frame(*self._nearest(vector, check_k(k), exclude_rows))

    def _nearest(
        self, vector: np.ndarray, k: int, exclude_rows=(), within: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows and cosines of the ``k`` papers nearest to ``vector`` (FAISS), skipping ``exclude_rows``,
        among the rows of the mask ``within`` (all when None)."""
        exclude = {int(r) for r in exclude_rows}
        wanted = min(k + len(exclude), len(self))
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        scores, rows = self._faiss_search(query, wanted, within)
        keep = [(row, score) for row, score in zip(rows[0], scores[0], strict=True) if row >= 0 and row not in exclude]
        keep = keep[:k]
        return np.array([row for row, _ in keep], np.int64), {
            "score": np.array([score for _, score in keep], np.float32)
        }

    def _faiss_search(self, query: np.ndarray, count: int, within: np.ndarray | None):
        """FAISS's ``count`` nearest rows to ``query``, only among the rows of the mask ``within``
        (FAISS skips the others while it searches: an ``IDSelectorBitmap``); missing ones are -1."""
        if within is None:
            return self.faiss_index.search(query, count)
        import faiss

        bits = np.packbits(np.asarray(within, dtype=bool), bitorder="little")
        selector = faiss.IDSelectorBitmap(len(within), faiss.swig_ptr(bits))
        if "ef_search" in self.manifest["search"]:  # HNSW: keep the search depth the build tuned
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=self.manifest["search"]["ef_search"])
        else:
            params = faiss.SearchParameters(sel=selector)
        return self.faiss_index.search(query, count, params=params)

    def rank(
        self,
        vector: np.ndarray | None,
        keyword_query,
        k: int = 10,
        mode: str = "hybrid",
        exclude_rows=(),
        hybrid_weight: float | None = None,
        first_rows=(),
        raw_vector: np.ndarray | None = None,
        within: np.ndarray | None = None,
    ) -> pd.DataFrame:
        """Rank papers by ``mode``: "dense" (cosine of ``vector``), "keyword" (TF-IDF cosine of
        the 1-row sparse ``keyword_query``) or "hybrid" (``hybrid_weight`` x dense + the rest x
        keyword, blended over the union of the dense and keyword top ``CANDIDATES``, as txtai does;
        dense here is the cosine with the smoothed vectors when the index has them).
        ``raw_vector``: the query in the raw vectors' space when ``vector`` is smoothed (it finds
        the dense candidates and gives the ``cosine`` column). ``first_rows`` (exact acronym
        matches) go before all others, in score order. ``within``: a mask from :meth:`where`;
        only its rows are ranked."""
        k = check_k(k)
        return self._frame(
            *self._ranked(vector, keyword_query, k, mode, exclude_rows, hybrid_weight, first_rows, raw_vector, within)
        )

    def _ranked(
        self, vector, keyword_query, k: int, mode: str, exclude_rows, hybrid_weight, first_rows, raw_vector, within
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The rows :meth:`rank` returns, best first, and their score columns (no table built)."""
        check_choice(mode, MODES, "mode")
        if within is not None and (np.shape(within) != (len(self),) or np.asarray(within).dtype != bool):
            raise UserError(f"within must be a boolean mask of the index's {len(self)} papers (see where())")
        if mode == "dense":
            return self._nearest(vector, k, exclude_rows, within)
        weight = self.manifest["search"]["hybrid_weight"] if hybrid_weight is None else hybrid_weight
        exclude, first = (np.asarray(list(rows), dtype=np.int64) for rows in (exclude_rows, first_rows))
        if mode == "hybrid":
            wanted = min(max(CANDIDATES, k) + len(exclude), len(self))
            raw = np.ascontiguousarray(np.asarray(vector if raw_vector is None else raw_vector, np.float32)[None])
            dense = self._faiss_search(raw, wanted, within)[1][0]
            keyword = self.keyword.candidates(keyword_query, wanted)
            if within is not None:
                keyword, first = keyword[within[keyword]], first[within[first]]
            candidates = np.union1d(np.union1d(dense[dense >= 0], keyword), first)
            keyword_scores = self.keyword.row_scores(candidates, keyword_query)
            cosine = np.asarray(self.vectors[candidates] @ raw[0], dtype=np.float32)
            columns = {"cosine": cosine, "keyword_score": keyword_scores}
            if self.smoothed is not None:  # documents described a little by their neighbours
                cosine = np.asarray(self.smoothed[candidates] @ np.asarray(vector, np.float32), dtype=np.float32)
            scores = weight * cosine + (1 - weight) * keyword_scores
        else:
            candidates = np.arange(len(self)) if within is None else np.flatnonzero(within)
            scores = self.keyword.scores(keyword_query)[candidates]
            columns = {"keyword_score": scores}
        order = scores.astype(np.float64)
        order[np.isin(candidates, first)] += 10.0  # above any blend of cosines
        order[np.isin(candidates, exclude)] = -np.inf
        top = np.argpartition(-order, k)[:k] if k < len(order) else np.arange(len(order))
        top = np.array([i for i in top[np.argsort(-order[top], kind="stable")] if np.isfinite(order[i])], np.int64)
        return candidates[top], {"score": scores[top], **{name: values[top] for name, values in columns.items()}}

    def results(self, rows: np.ndarray, scores: dict[str, np.ndarray]) -> pa.Table:
        """Result rows as an Arrow table: rank, id, title, the score columns, then the papers'
        metadata (``similar_rows`` and ``search_rows`` give ``rows`` and ``scores``)."""
        papers = self.take(rows)
        columns = {
            "rank": pa.array(np.arange(1, len(rows) + 1)),
            "id": papers.column("id"),
            "title": papers.column("title"),
            **{name: pa.array(np.asarray(values, dtype=np.float32).clip(-1, 1)) for name, values in scores.items()},
        }
        metadata = papers.drop_columns(["id", "title"])
        return pa.table(columns | dict(zip(metadata.column_names, metadata.columns, strict=True)))

    def _frame(self, rows: np.ndarray, scores: dict[str, np.ndarray]) -> pd.DataFrame:
        return self.results(rows, scores).to_pandas(use_threads=False)  # threads cost more than they save on 10 rows

    def map_position(self, vector: np.ndarray, k: int = 5) -> np.ndarray:
        """Where a vector not in the corpus (a query, a new paper) sits on the map: the average of
        its ``k`` nearest papers' positions, weighted by similarity (``topics.place_on_map``). Milliseconds, no umap."""
        query = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        scores, rows = self.faiss_index.search(query, min(k, len(self)))
        return place_on_map(scores[0], rows[0], self.coordinates)

    def similar_rows(
        self,
        paper_ids: str | list[str],
        k: int = 10,
        mode: str | None = None,
        negative: list[str] = (),
        hybrid_weight: float | None = None,
        within: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The ``k`` papers most similar to one paper, or to several ("more like these"), and least
        like the ``negative`` ones (Rocchio: mean of the positives minus half the mean of the
        negatives), as arrays: rows best first and their score columns (:meth:`similar` gives the
        DataFrame, :meth:`results` the Arrow table). The given papers are excluded. ``mode``:
        dense, keyword or hybrid (default: the index's, chosen by benchmarks/quality.py).
        ``within``: only the papers of this mask (:meth:`where` makes one from filters)."""
        k = check_k(k)
        mode = mode or self.manifest["search"]["similar_mode"]
        positive = self.rows([paper_ids] if isinstance(paper_ids, str) else list(paper_ids)).tolist()
        negative = self.rows(list(negative)).tolist()
        if not positive:
            raise UserError("give at least one paper id")
        keyword_query = self.keyword.weighted_rows(  # the same Rocchio mean in term space
            positive + negative,
            [1 / len(positive)] * len(positive) + [-ROCCHIO_NEGATIVE / max(len(negative), 1)] * len(negative),
        )
        raw = _rocchio(self.vectors, positive, negative)
        # hybrid with smoothed vectors: the papers' smoothed vectors are the query too
        vector = _rocchio(self.smoothed, positive, negative) if self.smoothed is not None and mode == "hybrid" else raw
        return self._ranked(vector, keyword_query, k, mode, positive + negative, hybrid_weight, (), raw, within)

    def search_rows(
        self,
        text: str,
        k: int = 10,
        mode: str | None = None,
        hybrid_weight: float | None = None,
        feedback: bool | None = None,
        within: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The ``k`` papers most similar to free ``text``, as arrays like :meth:`similar_rows` (and
        :meth:`search` as a DataFrame). ``mode`` as in :meth:`similar_rows`; the hybrid weight of
        text queries is the index's ``search_weight``, tuned on text queries. ``feedback``: for a
        short query (``FEEDBACK["max_words"]`` words or fewer), pseudo-relevance feedback: the
        query vector plus ``FEEDBACK["weight"]`` x the mean of its first ``FEEDBACK["results"]``
        results, ranked again (default: ``FEEDBACK["on"]``). ``within``: as in :meth:`similar_rows`."""
        k = check_k(k)
        search = self.manifest["search"]
        mode = mode or search["search_mode"]
        hybrid_weight = search.get("search_weight", search["hybrid_weight"]) if hybrid_weight is None else hybrid_weight
        text = clean_query(text)
        vector = self.embed_query(text) if mode != "keyword" else None
        first = self.acronym_matches(text) if mode != "dense" else ()
        keyword_query = self.keyword.transform([text])
        feedback = FEEDBACK["on"] if feedback is None else feedback
        if feedback and mode != "keyword" and len(text.split()) <= FEEDBACK["max_words"]:
            top, _ = self._ranked(
                vector, keyword_query, FEEDBACK["results"], mode, (), hybrid_weight, first, None, within
            )
            documents = self.smoothed if self.smoothed is not None else self.vectors
            if len(top):
                vector = vector + FEEDBACK["weight"] * documents[np.sort(top)].mean(axis=0)
            vector = vector / max(np.linalg.norm(vector), 1e-12)
        return self._ranked(vector, keyword_query, k, mode, (), hybrid_weight, first, None, within)

    similar = _as_frame(similar_rows, "The papers :meth:`similar_rows` finds, as a results DataFrame.")
    search = _as_frame(search_rows, "The papers :meth:`search_rows` finds, as a results DataFrame.")

    def acronym_matches(self, text: str) -> np.ndarray:
        """Rows of the papers that use every acronym of the query ("GRPO", "DiT", "T2I"; plural "s" allowed).

        The keyword index narrows the candidates to papers with the word; the exact, case-sensitive
        check runs on those alone (on all papers only for an acronym the vocabulary lacks)."""
        if not ACRONYM.search(text):
            return np.zeros(0, dtype=np.int64)
        found = np.arange(len(self))
        for acronym in ACRONYM.findall(text):
            if acronym.endswith("s") and acronym[-2].isupper():
                acronym = acronym[:-1]  # "LLMs" also finds "LLM"
            candidates = [self.keyword.rows_with_term(form.lower()) for form in (acronym, acronym + "s")]
            if all(rows is None for rows in candidates):
                rows = found
            else:
                rows = np.intersect1d(found, np.concatenate([r for r in candidates if r is not None]))
            # the acronym as a whole word, matched by Arrow (RE2, no look-arounds) over the texts
            pattern = rf"(?:^|[^\w-]){re.escape(acronym)}s?(?:$|[^\w-])"
            texts = self.take(rows, ["title", "abstract"])
            uses = pc.or_(*(pc.match_substring_regex(texts.column(name), pattern) for name in ("title", "abstract")))
            found = np.asarray(rows, dtype=np.int64)[uses.fill_null(False).to_numpy(zero_copy_only=False)]
        return found

    def topics(self, level: str = "coarse") -> pd.DataFrame:
        """Every topic of ``level`` ("coarse" or "fine") with its size, share, map trust and three
        most central papers: see :func:`paperscope.index.analysis.topic_overview`."""
        from paperscope.index.analysis import topic_overview

        return topic_overview(self, level)

    def bridges(self, a, b, level: str = "coarse", k: int = 10) -> pd.DataFrame:
        """Up to ``k`` papers between topics ``a`` and ``b`` (numbers or names), most evenly split
        first: see :func:`paperscope.index.analysis.bridges`."""
        from paperscope.index.analysis import bridges

        return bridges(self, a, b, level=level, limit=check_k(k))

    def explain(self, paper_id: str, other_id: str | None = None, query: str | None = None):
        """Why ``paper_id`` is similar to another paper (``other_id``) or to free text (``query``):
        an :class:`index.explain.Explanation` with best sentence pairs and shared distinctive terms."""
        from paperscope.index.explain import explain_pair

        if (other_id is None) == (query is None):
            raise UserError("explain needs either a second paper id or a query text")
        row = self.row(paper_id)
        if other_id is not None:
            other_text, other_vector = self.abstract(self.row(other_id)), self.vectors[self.row(other_id)]
        else:
            other_text, other_vector = clean_query(query), self.embed_query(query)
        score = float(self.vectors[row] @ other_vector)
        return explain_pair(
            self.abstract(row), other_text, score, self._sentence_vectors, self.keyword.idf_of,
            self.keyword.stop_words,
        )  # fmt: skip

    def abstract(self, row: int) -> str:
        """The abstract of the paper at ``row``."""
        return self.table.column("abstract")[int(row)].as_py()

    def _sentence_vectors(self, sentences: list[str]) -> np.ndarray:
        """Sentence vectors for explanations, remembered: the selected paper's or the query's
        sentences are explained against every result (encoded once, not once per result)."""
        with self._memory_lock:
            known = {sentence: self._sentences[sentence] for sentence in sentences if sentence in self._sentences}
        missing = [sentence for sentence in dict.fromkeys(sentences) if sentence not in known]
        if missing:
            known.update(zip(missing, self.encoder.encode(missing, long_text="mean"), strict=True))
            with self._memory_lock:
                if len(self._sentences) + len(missing) > SENTENCE_MEMORY:
                    self._sentences.clear()
                self._sentences.update((sentence, known[sentence]) for sentence in missing)
        return np.stack([known[sentence] for sentence in sentences])
