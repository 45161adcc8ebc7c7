"""PaperIndex: the one public front of an index folder.

Each verb delegates to a room with one job: the papers' table (:mod:`~paperscope.index.store.papers`),
ranking (:mod:`~paperscope.index.search.ranking`), filters (:mod:`~paperscope.index.search.filters`),
query embedding (:mod:`~paperscope.index.search.encoding`), explanations
(:mod:`~paperscope.index.search.explain`), map placement (:mod:`~paperscope.index.search.placement`)
and the analyses (:mod:`paperscope.index.analysis`). Nothing outside ``index/`` touches the stored
arrays or the Arrow table: what the CLI, the app and the service need is a method here.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.errors import UserError
from paperscope.index.search import filters
from paperscope.index.search.acronyms import acronym_rows
from paperscope.index.search.encoding import QueryEncoder, clean_query
from paperscope.index.search.placement import PLACE_K, place_on_map
from paperscope.index.search.ranking import Query, Ranker, Ranking
from paperscope.index.store import curations, generations
from paperscope.index.store.papers import PaperTable
from paperscope.settings import MAP_COLUMNS, MAX_RESULTS, BuildSettings, QuerySettings


def check_k(k) -> int:
    """Validate a result count: a whole number from 1 to ``MAX_RESULTS`` (the service's limit too)."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= MAX_RESULTS:
        raise UserError(f"k must be a whole number from 1 to {MAX_RESULTS:,}, got {k!r}")
    return int(k)


def _settings(settings: QuerySettings | None, mode: str | None) -> QuerySettings:
    """``settings`` (default: the index's) with ``mode`` when one is given."""
    settings = settings or QuerySettings()
    return settings if mode is None else dataclasses.replace(settings, mode=mode)


class PaperIndex:
    """A loaded index folder: papers, their vectors, the FAISS and keyword indexes, the map.

    :meth:`similar` and :meth:`search` return a DataFrame with one row per result, best first:
    ``rank``, ``id``, ``title``, ``score`` (the ranking score: cosine similarity in dense mode,
    its blend with the keyword cosine in hybrid mode, which adds ``cosine`` and ``keyword_score``
    columns) and the paper's metadata columns. Threads may share one PaperIndex (``paperscope
    serve`` does).
    """

    def __init__(self, folder: Path, generation: generations.Generation, model_path: str | Path | None = None):
        self.folder = Path(folder)
        self.manifest = generation.manifest
        self.generation = generation.name
        self._papers = PaperTable(generation.papers, self.folder)
        topics = generation.clusters
        self._topics = {level: topics[topics["level"] == level].reset_index(drop=True) for level in ("fine", "coarse")}
        self._built = (generation.papers, self._topics)  # the topics as built, before the curations
        self.ranker = Ranker(
            generation.vectors, generation.smoothed, generation.faiss_index, generation.keyword, self.manifest.search
        )
        self._queries = QueryEncoder(self.manifest.model, self.manifest.long_text.strategy, model_path)
        self.curation_report: list[str] = []  # a sentence for each curation that matches no topic any more
        self._curated: tuple[list[dict], list[curations.Outcome]] = ([], [])
        self._apply_curations()

    @classmethod
    def load(cls, folder: str | Path, model_path: str | Path | None = None) -> PaperIndex:
        """Load the index folder (memory-mapped: milliseconds, whatever its size; checksums are
        checked by ``paperscope verify``); ``model_path`` overrides where the query model is loaded from."""
        folder = Path(folder)
        for _ in range(3):  # a concurrent build may replace the generation while we read it
            name = generations.current_generation_name(folder)
            try:
                return cls(folder, generations.read_generation(folder), model_path=model_path)
            except (UserError, FileNotFoundError):
                if name is None or generations.current_generation_name(folder) == name:
                    raise
        raise UserError(f"{folder}: the index kept changing while loading; try again")

    def warm(self) -> None:
        """Load now what lookups otherwise load on first use (the query model, the id hash, the
        record batches), so that a service's first requests are as quick as the ones after."""
        self.embed_query("warm up")
        self.rows(self.ids()[:1])
        self.take([0])

    def __len__(self) -> int:
        return len(self._papers)

    def __repr__(self) -> str:
        return f"PaperIndex({str(self.folder)!r}, papers={len(self)}, model={self.manifest.model.name!r})"

    # --- what the index is -------------------------------------------------------------------

    def info(self) -> dict:
        """The manifest (counts, model, settings, recipe, versions, files) and the folder."""
        return {**self.manifest.to_json(), "folder": str(self.folder)}

    @property
    def settings(self) -> BuildSettings:
        """The settings the index was built with."""
        return self.manifest.settings

    @property
    def encoder(self):
        """The query model (:class:`paperscope.embed.model.Encoder`), loaded on first use."""
        return self._queries.encoder

    # --- papers ------------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """Every paper's id, in row order."""
        return self._papers.column("id").to_pylist()

    def row(self, paper_id: str) -> int:
        """Row number of ``paper_id``; an unknown id raises a UserError suggesting close ids or titles."""
        return int(self.rows([paper_id])[0])

    def rows(self, paper_ids: list[str]) -> np.ndarray:
        """Row numbers of ``paper_ids`` (one hash of the id column: fast for a lasso of thousands);
        an unknown id raises a UserError suggesting close ids or titles."""
        return self._papers.rows(paper_ids)

    def known(self, paper_ids: list[str]) -> list[str]:
        """Those of ``paper_ids`` that are papers of the index, in their order."""
        return self._papers.known(paper_ids)

    def take(self, rows, columns: list[str] | None = None) -> pa.Table:
        """The papers at ``rows``, in that order, as an Arrow table (all columns, or ``columns``)."""
        return self._papers.take(rows, columns)

    def paper(self, paper_id: str) -> dict:
        """The metadata of one paper as a dict (a missing value as None)."""
        return self.take([self.row(paper_id)]).to_pylist()[0]

    def abstract(self, row: int) -> str:
        """The abstract of the paper at ``row``."""
        return self._papers.column("abstract")[int(row)].as_py()

    def fields(self) -> list[str]:
        """The names of the papers' fields (id, title, abstract, the optional ones, the map's)."""
        return list(self._papers.table.column_names)

    def metadata(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Every paper's metadata (or only ``columns``) as a DataFrame, in row order."""
        return self._papers.frame(columns)

    @cached_property
    def papers(self) -> pd.DataFrame:
        """Every paper's metadata as a DataFrame, decoded once (notebooks and the analyses want it;
        lookups take rows from the memory-mapped table instead)."""
        return self.metadata()

    @cached_property
    def collections(self):
        """This index's collections, kept in the data folder's SQLite file:
        :class:`paperscope.index.collections.collections.Collections`."""
        from paperscope.index.collections.collections import Collections

        return Collections(self)

    # --- the map and its topics ----------------------------------------------------------------

    def topic_table(self, level: str = "fine") -> pd.DataFrame:
        """The topics of ``level`` as built and curated: cluster, name, terms, size, central_ids,
        x, y, map_trust, parent (a fine topic's coarse one)."""
        filters.check_level(level)
        return self._topics[level]

    def map_table(self) -> pd.DataFrame:
        """What the map draws of every paper: ``MAP_COLUMNS`` (title, position, topics, map trust)."""
        return self.metadata(list(MAP_COLUMNS))

    def map_widget(self, level: str = "coarse", colour_by: str | None = None, height: int = 620, k: int = 10):
        """The topic map as a two-way Jupyter widget (:class:`paperscope.ui.widget.MapWidget`): what
        you select in it is ``w.selected`` (ids) and ``w.selection`` (papers); ``w.selected = ids``
        draws a selection, ``w.query = "text"`` stars a query joined to its ``k`` results,
        ``w.colour_by = COLUMN`` colours the papers, ``w.on_select(callback)``. The one verb that
        reaches into ``ui/``: imported only when called (anywidget too), so a load stays light."""
        try:
            from paperscope.ui.widget import MapWidget
        except ModuleNotFoundError as exc:
            if exc.name not in ("anywidget", "ipywidgets"):
                raise
            raise UserError("the map widget needs anywidget: pip install 'paperscope[notebook]'") from None
        return MapWidget(self, level=level, colour_by=colour_by, height=height, k=k)

    @cached_property
    def coordinates(self) -> np.ndarray:
        """(n, 2) map positions of the papers."""
        return np.column_stack([self._papers.column(axis).to_numpy() for axis in ("x", "y")]).astype(np.float64)

    def map_position(self, vector: np.ndarray, k: int = PLACE_K) -> np.ndarray:
        """Where a vector not in the corpus (a query, a new paper) sits on the map: the average of
        its ``k`` nearest papers' positions, weighted by similarity. Milliseconds, no umap."""
        scores, rows = self.ranker.faiss_search(vector, min(k, len(self)))
        return place_on_map(scores[0], rows[0], self.coordinates)

    def map_neighbours(self, k: int) -> np.ndarray:
        """Each paper's ``k`` nearest rows (fewer in a smaller corpus), itself excluded."""
        from paperscope.index.search.nearest import nearest_others

        k = min(k, len(self) - 1)
        return nearest_others(self.ranker.faiss_search, self.vectors, np.arange(len(self)), k)[1]

    @property
    def vectors(self) -> np.ndarray:
        """The papers' vectors, (n, dimension) float32, L2-normalised, memory-mapped."""
        return self.ranker.vectors

    # --- lookups --------------------------------------------------------------------------------

    def where(
        self, years=None, topics=None, venues=None, category=None, level: str | None = None, added_since=None
    ) -> np.ndarray | None:
        """The papers that pass every filter given, as a boolean mask over rows (None when none is
        given), for the ``within`` argument of :meth:`similar` and :meth:`search`: see
        :class:`paperscope.index.search.filters.Filters`."""
        wanted = filters.Filters(years, topics, venues, category, level, added_since)
        return filters.where(self._papers, wanted, filters.moment(self.manifest.created))

    def filter_choices(self) -> dict:
        """What filters can offer: see :func:`paperscope.index.search.filters.choices`."""
        return filters.choices(self._papers)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts (papers outside the index: "title. abstract") embedded as its papers were, (n, dimension)."""
        return self._queries.texts(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """The query vector of free text, as the index's papers were embedded (the last few are kept)."""
        return self._queries.query(text)

    def similar_rows(
        self, paper_ids, k: int = 10, mode: str | None = None, negative=(), within=None, settings=None
    ) -> Ranking:
        """The ``k`` papers most similar to one paper (an id), or to several ("more like these"),
        and least like the ``negative`` ids (Rocchio), as a :class:`Ranking` (rows best first and
        their score columns); the given papers are excluded. ``mode``: dense, keyword or hybrid
        (default: the index's); ``settings``: a :class:`~paperscope.settings.QuerySettings`;
        ``within``: only the papers of this mask (:meth:`where` makes one from filters)."""
        k = check_k(k)
        positive = self.rows([paper_ids] if isinstance(paper_ids, str) else list(paper_ids)).tolist()
        if not positive:
            raise UserError("give at least one paper id")
        negative = self.rows(list(negative)).tolist()
        return self.ranker.similar(positive, negative, k, _settings(settings, mode), within)

    def similar(self, paper_ids, k: int = 10, mode: str | None = None, negative=(), within=None, settings=None):
        """The papers :meth:`similar_rows` finds, as a results DataFrame (see the class docstring)."""
        return self.frame(self.similar_rows(paper_ids, k, mode, negative, within, settings))

    def search_rows(self, text: str, k: int = 10, mode: str | None = None, within=None, settings=None) -> Ranking:
        """The ``k`` papers most similar to free ``text``, as a :class:`Ranking`. Papers using every
        acronym of the text go first (keyword and hybrid modes); a short query gets pseudo-relevance
        feedback (``QuerySettings.feedback``). Other arguments as in :meth:`similar_rows`."""
        k = check_k(k)
        settings = _settings(settings, mode)
        mode = settings.mode or self.manifest.search.search_mode
        text = clean_query(text)
        query = Query(
            vector=self.embed_query(text) if mode != "keyword" else None,
            keyword=self.ranker.keyword.transform([text]),
            first=acronym_rows(text, self._papers, self.ranker.keyword) if mode != "dense" else np.zeros(0, np.int64),
        )
        found = self.ranker.search(query, len(text.split()), k, _settings(settings, mode), within)
        if mode == "keyword" and not len(found.rows):
            where = " among the papers passing the filters" if within is not None else ""
            note = f"no paper{where} contains a word of '{text[:80]}'; --mode hybrid finds papers by meaning too"
            return dataclasses.replace(found, note=note)
        return found

    def search(self, text: str, k: int = 10, mode: str | None = None, within=None, settings=None) -> pd.DataFrame:
        """The papers :meth:`search_rows` finds, as a results DataFrame (see the class docstring)."""
        return self.frame(self.search_rows(text, k, mode, within, settings))

    def recommend_rows(
        self, positive, negative=(), k: int = 20, within=None, positive_vectors=None, negative_vectors=None
    ) -> Ranking:
        """The ``k`` papers most like a collection (the ids ``positive``, and papers outside the
        index by their vectors ``positive_vectors``, (m, dimension) as :meth:`embed_query` makes
        them) and least like the ids ``negative`` and ``negative_vectors``, as a :class:`Ranking`;
        the given papers are excluded; ``within``: only the papers of this mask. A linear SVM
        per collection, chosen by ``benchmarks/recommend.py``: see
        :func:`paperscope.index.search.recommend.recommend`."""
        from paperscope.index.search.recommend import recommend

        k = check_k(k)
        empty = np.zeros((0, self.vectors.shape[1]), np.float32)
        positive_vectors = empty if positive_vectors is None else positive_vectors
        negative_vectors = empty if negative_vectors is None else negative_vectors
        positive = self.rows([positive] if isinstance(positive, str) else list(positive))
        negative = self.rows([negative] if isinstance(negative, str) else list(negative))
        return recommend(self.ranker, positive, positive_vectors, negative, negative_vectors, k, within=within)

    def recommend(
        self, positive, negative=(), k: int = 20, within=None, positive_vectors=None, negative_vectors=None
    ) -> pd.DataFrame:
        """The papers :meth:`recommend_rows` finds, as a results DataFrame (the columns of
        :meth:`similar`; ``score`` is the classifier's margin, above 0 on the collection's side)."""
        return self.frame(self.recommend_rows(positive, negative, k, within, positive_vectors, negative_vectors))

    def results(self, ranking: Ranking) -> pa.Table:
        """A ranking's papers as an Arrow table: rank, id, title, the score columns, then the papers'
        metadata (what ``--json`` prints and the service answers)."""
        papers = self.take(ranking.rows)
        columns = {
            "rank": pa.array(np.arange(1, len(ranking.rows) + 1)),
            "id": papers.column("id"),
            "title": papers.column("title"),
            **{
                name: pa.array(np.asarray(values, dtype=np.float32).clip(-1, 1))
                for name, values in ranking.scores.items()
            },
        }
        metadata = papers.drop_columns(["id", "title"])
        return pa.table(columns | dict(zip(metadata.column_names, metadata.columns, strict=True)))

    def frame(self, ranking: Ranking) -> pd.DataFrame:
        """A ranking's papers as a results DataFrame (:meth:`results` in pandas); when there are
        none, ``frame.attrs["note"]`` may say why."""
        frame = self.results(ranking).to_pandas(use_threads=False)  # threads cost more than they save on 10 rows
        if ranking.note:
            frame.attrs["note"] = ranking.note
        return frame

    # --- why, and the corpus as a whole --------------------------------------------------------

    def explain(self, paper_id: str, other_id: str | None = None, query: str | None = None):
        """Why ``paper_id`` is similar to another paper (``other_id``) or to free text (``query``):
        an :class:`~paperscope.index.search.explain.Explanation` with best sentence pairs and
        shared distinctive terms."""
        from paperscope.index.search.explain import explain_pair

        if (other_id is None) == (query is None):
            raise UserError("explain needs either a second paper id or a query text")
        row = self.row(paper_id)
        if other_id is not None:
            other_text, other_vector = self.abstract(self.row(other_id)), self.vectors[self.row(other_id)]
        else:
            other_text, other_vector = clean_query(query), self.embed_query(query)
        score = float(self.vectors[row] @ other_vector)
        return explain_pair((self.abstract(row), other_text), score, self._queries.sentences, self.ranker.keyword)

    def topics(self, level: str = "coarse") -> pd.DataFrame:
        """Every topic of ``level`` ("coarse" or "fine") with its size, share, map trust and three
        most central papers: see :func:`paperscope.index.analysis.topics.topic_overview`."""
        from paperscope.index.analysis.topics import topic_overview

        return topic_overview(self, level)

    def topics_by(self, column: str, level: str = "coarse") -> pd.DataFrame:
        """Each topic of ``level``'s share of the papers of each value of ``column`` (year, venue,
        categories…; for years, also each topic's change): see
        :func:`paperscope.index.analysis.topics.topics_by`."""
        from paperscope.index.analysis.topics import topics_by

        return topics_by(self, column, level)

    def compare_topics(self, a: tuple[str, object], b: tuple[str, object], level: str = "coarse") -> pd.DataFrame:
        """The topics of ``level`` over-represented in one group of papers against another, each
        group a (column, value) such as ("venue", "ICML") or ("year", 2024), with their papers in
        each: see :func:`paperscope.index.analysis.topics.topics_compare`."""
        from paperscope.index.analysis.topics import topics_compare

        return topics_compare(self, a, b, level)

    def bridges(self, a, b, level: str = "coarse", k: int = 10) -> pd.DataFrame:
        """Up to ``k`` papers between topics ``a`` and ``b`` (numbers or names), most evenly split
        first: see :func:`paperscope.index.analysis.topics.bridges`."""
        from paperscope.index.analysis.topics import bridges

        return bridges(self, a, b, level=level, limit=check_k(k))

    # --- correcting the topics: curations, kept beside the index ------------------------------

    def rename_topic(self, topic, name: str, level: str = "coarse") -> int:
        """Rename a topic of ``level`` (its number, its name or words of it, as :meth:`bridges`
        takes them). Like every curation it is kept in the folder's ``curations.json``, applied on
        each load (the generation on disk is never changed) to the topic whose papers overlap the
        recorded ones most, so it survives ``paperscope add`` and a rebuild; one that matches no
        topic any more is reported in :attr:`curation_report`. Returns the topic's number."""
        number = self._topic(topic, level)
        entry = curations.rename_entry(self._papers.table, self._topics[level], level, number, name)
        return self._record(entry)[0]

    def merge_topics(self, a, b, name: str | None = None, level: str = "coarse") -> int:
        """Merge topic ``b`` into topic ``a`` (both of ``level``), named ``name`` (default: A's).
        Merging fine topics of two coarse ones puts the result in A's; merging coarse topics makes
        B's fine topics A's. Kept as :meth:`rename_topic` says. Returns A's number."""
        pair = (self._topic(a, level), self._topic(b, level))
        return self._record(curations.merge_entry(self._papers.table, self._topics[level], level, pair, name))[0]

    def split_topic(self, topic, k: int = 2, level: str = "coarse") -> list[int]:
        """Split a topic of ``level`` into ``k`` topics by its papers' vectors (a deterministic
        k-means; a coarse topic of at least ``k`` fine ones is split by grouping them), numbered
        above every topic and named after it, "(part 1)" the largest. Kept as
        :meth:`rename_topic` says. Returns the new topics' numbers."""
        number = self._topic(topic, level)
        return self._record(curations.split_entry(self._papers.table, self._topics[level], level, number, k))

    def move_papers(self, paper_ids, topic, level: str = "fine") -> int:
        """Move papers (ids) into a topic of ``level``: a fine topic's papers also join its coarse
        one; at coarse level each joins the topic's fine topic nearest to it. Kept as
        :meth:`rename_topic` says. Returns the topic's number."""
        paper_ids = [paper_ids] if isinstance(paper_ids, str) else list(paper_ids)
        self.rows(paper_ids)  # an unknown id is a UserError suggesting close ones
        number = self._topic(topic, level)
        return self._record(curations.move_entry(self._papers.table, self._topics[level], level, paper_ids, number))[0]

    def curations(self) -> pd.DataFrame:
        """The curations applied when this index was loaded (or changed since), in order: number,
        operation, level, description, applied, topics (those it made or changed), note (why it was
        not applied) and made (when)."""
        entries, outcomes = self._curated
        rows = [
            {"number": number, "operation": entry.get("op"), "level": entry.get("level"),
             "description": curations.describe(entry), "applied": outcome.applied, "topics": outcome.topics,
             "note": outcome.note, "made": entry.get("made")}
            for number, (entry, outcome) in enumerate(zip(entries, outcomes, strict=True), 1)
        ]  # fmt: skip
        columns = ["number", "operation", "level", "description", "applied", "topics", "note", "made"]
        return pd.DataFrame(rows, columns=columns)

    def _topic(self, topic, level: str) -> int:
        from paperscope.index.analysis.topics import find_topic

        filters.check_level(level)
        return find_topic(self, topic, level)

    def _record(self, entry: dict):
        """Write ``entry`` to the log when it applies (else a UserError) and show the result here;
        returns the topics it made or changed (a split's new ones, else one)."""
        entries, curated = curations.record(self.folder, entry, self._curated_by)
        self._take(entries, curated)
        topics = curated.outcomes[-1].topics
        return topics if entry["op"] == "split" else topics[:1]

    def _curated_by(self, entries: list[dict]) -> curations.Curated:
        return curations.apply(entries, *self._built, self.vectors)

    def _apply_curations(self) -> None:
        """Apply the folder's curations to the topics as built; an unreadable log is reported."""
        try:
            entries = curations.read_log(self.folder)
        except UserError as exc:
            self.curation_report = [f"no curation applied: {exc}"]
            return
        if entries:
            self._take(entries, self._curated_by(entries))

    def _take(self, entries: list[dict], curated: curations.Curated) -> None:
        self._papers = PaperTable(curated.papers, self.folder)
        self._topics = curated.topics
        self._curated = (entries, curated.outcomes)
        self.curation_report = curated.report
        self.__dict__.pop("papers", None)  # decoded again on next use

    def nearest_others(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest papers to the papers at ``rows`` and their cosines, best first, never
        the paper itself (-1 where the corpus has fewer): for near-duplicates, outliers, bridges."""
        from paperscope.index.search.nearest import nearest_others

        rows = np.asarray(rows, dtype=np.int64)
        return nearest_others(self.ranker.faiss_search, self.vectors[rows], rows, k)
