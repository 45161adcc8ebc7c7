"""PaperIndex: the one public front of an index folder.

Each verb delegates to a room with one job: the papers' table (:mod:`~paperscope.index.common.papers`),
ranking (:mod:`~paperscope.index.search.ranking`), filters (:mod:`~paperscope.index.search.filters`),
query embedding (:mod:`~paperscope.index.search.encoding`), explanations
(:mod:`~paperscope.index.search.explain`), the analyses (:mod:`paperscope.index.analysis`) and
the collections (:mod:`paperscope.index.collections`); the verbs of the map, the topics and the
collections are grouped (``ix.map``, ``ix.topics``, ``ix.collections``: :mod:`.groups`). Nothing
outside ``index/`` touches the stored arrays or the Arrow table: what the CLI, the app and the
service need is a name here. The functions of an index folder as a whole (is it one, its
current generation, verify, leftovers) are this module's too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paperscope.embed.text import counted
from paperscope.errors import Contradiction, UserError, shown
from paperscope.index.groups import MapGroup, TopicsGroup
from paperscope.index.loaded import Loaded
from paperscope.index.search import filters
from paperscope.index.search.acronym_boost import acronym_rows
from paperscope.index.search.encoding import clean_query, searchable
from paperscope.index.search.filters import FilterChoices
from paperscope.index.search.ranking import Query, Ranking
from paperscope.index.search.results import Results, check_k
from paperscope.index.store import curations, generations, maps
from paperscope.index.store.generations import (
    current_generation_name,
    is_current_format,
    is_index,
    leftovers,
    sample_is_current,
    verify,
)
from paperscope.records import Record
from paperscope.settings import QuerySettings

if TYPE_CHECKING:  # the tables it returns; a lookup loads no pandas
    import pandas as pd

    from paperscope.index.collections_group import CollectionsGroup

__all__ = [
    "FilterChoices",
    "PaperIndex",
    "Results",
    "check_k",
    "current_generation_name",
    "is_current_format",
    "is_index",
    "leftovers",
    "reload_stamp",
    "sample_is_current",
    "searchable",
    "verify",
]  # fmt: skip


def reload_stamp(folder: str | Path) -> str:
    """What changes, besides its current generation, when the index at ``folder`` must be loaded
    anew: its identity (another index copied into the folder may have a generation of the same
    name, and collections of its own), its topic corrections and its current map. An index of an
    earlier release gets its identity now, as its load would give it (else the first load's stamp
    would differ from the next and the index be loaded twice); a folder that is not an index, none."""
    identity = generations.identity(folder, create=generations.is_index(folder))
    return f"{identity}|{curations.stamp(folder)}|{maps.stamp(folder)}"


def _settings(settings: QuerySettings | None, mode: str | None) -> QuerySettings:
    """``settings`` (default: the index's) with ``mode`` when one is given."""
    settings = settings or QuerySettings()
    return settings if mode is None else dataclasses.replace(settings, mode=mode)  # type: ignore[arg-type]  # QuerySettings checks it


def _ids(paper_ids) -> list[str]:
    return [paper_ids] if isinstance(paper_ids, str) else list(paper_ids)


class PaperIndex:
    """A loaded index folder: papers, their vectors, the FAISS and keyword indexes, the map.

    :meth:`similar`, :meth:`search` and :meth:`recommend` return
    :class:`~paperscope.index.search.results.Results`: the papers found, best first, which turn
    into a DataFrame (``.to_pandas()``), an Arrow table (``.to_arrow()``) or JSON-ready records
    (``.to_records()``) with ``rank``, ``id``, ``title``, ``score`` (cosine similarity in dense
    mode, its blend with the keyword cosine in hybrid mode, which adds ``cosine`` and
    ``keyword_score``) and the paper's metadata columns. The map's verbs are ``ix.map``, the
    topics' ``ix.topics``, the collections' ``ix.collections``. Threads may share one PaperIndex
    (``paperscope serve`` does).
    """

    def __init__(self, folder: Path, generation: generations.Generation, model_path: str | Path | None = None):
        self.folder = Path(folder)
        self.manifest = generation.manifest
        self.generation = generation.name
        self._state = Loaded.read(self.folder, generation, model_path)
        self.map = MapGroup(self, self._show)
        self.topics = TopicsGroup(self, self._show)
        self._collections: tuple[Loaded, CollectionsGroup] | None = None  # made on first use, for one state

    @property
    def state(self) -> Loaded:
        """What this index shows now, immutable (:class:`~paperscope.index.loaded.Loaded`): the
        papers' table with the map and the topic corrections applied, the ranker, the topics."""
        return self._state

    def _show(self, state: Loaded) -> None:
        """Show ``state`` from now on (a group made it: the topics corrected, another map)."""
        self._state = state

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
        self.table([0])

    def __len__(self) -> int:
        return len(self._state.papers)

    def __repr__(self) -> str:
        return f"PaperIndex({str(self.folder)!r}, papers={len(self)}, model={self.manifest.model.name!r})"

    # --- what the index is -------------------------------------------------------------------

    def info(self) -> dict:
        """The manifest as JSON (counts, model, settings, recipe, versions, files), the folder and
        the corpus's columns with their kinds (:meth:`columns`)."""
        return {**self.manifest.to_json(), "folder": str(self.folder), "columns": self.columns()}

    @property
    def vectors(self) -> np.ndarray:
        """The papers' vectors, (n, dimension) float32, L2-normalised, memory-mapped."""
        return self._state.ranker.vectors

    # --- papers ------------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """Every paper's id, in row order."""
        return self._state.papers.column("id").to_pylist()

    def rows(self, paper_ids) -> np.ndarray:
        """Row numbers of ``paper_ids`` (one id, or a list: one hash of the id column, fast for a
        lasso of thousands); an unknown id raises a UserError suggesting close ids or titles."""
        return self._state.papers.rows(_ids(paper_ids))

    def known(self, paper_ids: list[str]) -> list[str]:
        """Those of ``paper_ids`` that are papers of the index, in their order."""
        return self._state.papers.known(paper_ids)

    def paper(self, paper_id: str) -> Record:
        """The metadata of one paper as a dict (a missing value as None)."""
        return self.table(self.rows(paper_id)).to_pylist()[0]

    def table(self, rows=None, columns: list[str] | None = None) -> pa.Table:
        """The papers at ``rows`` (row numbers, in that order; default: all) as an Arrow table, every
        column or only ``columns``. Read from the memory-mapped table: a few rows cost microseconds."""
        if rows is None:
            return self._state.papers.table if columns is None else self._state.papers.table.select(columns)
        return self._state.papers.take(rows, columns)

    @property
    def papers(self) -> pd.DataFrame:
        """Every paper's metadata as a DataFrame, decoded once (notebooks and the analyses want it;
        lookups take rows with :meth:`table` instead)."""
        return self._state.frame

    def columns(self) -> dict[str, str]:
        """The corpus's metadata columns and their kinds ("text", "number", "date", "list" of text):
        the optional fields it fills (year, authors, venue…) and every other column of its files,
        kept as they were; what ``where`` filters, ``topics.by`` groups and the map colours by."""
        return self._state.papers.corpus_columns()

    def fields(self) -> list[str]:
        """The names of the papers' fields (id, title, abstract, the optional ones, the map's)."""
        return list(self._state.papers.table.column_names)

    @property
    def collections(self) -> CollectionsGroup:
        """This index's collections, kept in the data folder's SQLite file, and recommendations
        from them: :class:`paperscope.index.collections_group.CollectionsGroup` (made again when
        what the index shows changes)."""
        from paperscope.index.collections_group import CollectionsGroup

        state = self._state
        if self._collections is None or self._collections[0] is not state:
            self._collections = (state, CollectionsGroup(self))
        return self._collections[1]

    # --- lookups --------------------------------------------------------------------------------

    def where(
        self,
        years=None,
        topics=None,
        venues=None,
        category=None,
        level: str | None = None,
        added_since=None,
        conditions=(),
    ) -> np.ndarray | None:
        """The papers that pass every filter given, as a boolean mask over rows (None when none is
        given), for the ``within`` argument of :meth:`similar` and :meth:`search`: see
        :class:`paperscope.index.search.filters.Filters`; ``conditions`` on any of :meth:`columns`,
        such as ``["decision = Accept", "citations >= 10", "tags contains graphs"]``."""
        wanted = filters.Filters(years, topics, venues, category, level, added_since, conditions or ())
        return filters.where(self._state.papers, wanted, filters.moment(self.manifest.created))

    def filter_choices(self) -> FilterChoices:
        """What filters can offer: see :func:`paperscope.index.search.filters.choices`."""
        return filters.choices(self._state.papers)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts (papers outside the index: "title. abstract") embedded as its papers were, (n, dimension)."""
        return self._state.queries.texts(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """The query vector of free text, as the index's papers were embedded (the last few are kept)."""
        return self._state.queries.query(text)

    def similar(
        self, paper_ids, k: int = 10, mode: str | None = None, negative=(), within=None, settings=None
    ) -> Results:
        """The ``k`` papers most similar to one paper (an id), or to several ("more like these"),
        and least like the ``negative`` ids (Rocchio), as :class:`Results`; the given papers are
        excluded. ``mode``: dense, keyword or hybrid (default: the index's); ``settings``: a
        :class:`~paperscope.settings.QuerySettings`; ``within``: only the papers of this mask
        (:meth:`where` makes one from filters)."""
        k = check_k(k)
        positive = self.rows(paper_ids).tolist()
        if not positive:
            raise UserError("give at least one paper id")
        negative = self.rows(negative).tolist()
        both = sorted(set(positive) & set(negative))
        if both:
            given = self._state.papers.take(both[:3], ["id"]).column("id").to_pylist()
            named = ", ".join(f"'{shown(i)}'" for i in given)
            more = f" and {len(both) - 3} more" if len(both) > 3 else ""
            raise Contradiction(f"{named}{more}: both a paper to be like and one to be unlike (not); give each once")
        found = self._state.ranker.similar(positive, negative, k, _settings(settings, mode), within)
        return self._results(found, within, len(set(positive + negative)))

    def search(self, text: str, k: int = 10, mode: str | None = None, within=None, settings=None) -> Results:
        """The ``k`` papers most similar to free ``text``, as :class:`Results`. Papers using every
        acronym of the text go first (keyword and hybrid modes); a short query gets pseudo-relevance
        feedback (``QuerySettings.feedback``); empty text is a UserError. Other arguments as in :meth:`similar`."""
        k = check_k(k)
        settings = _settings(settings, mode)
        mode = settings.mode or self.manifest.search.search_mode
        text = clean_query(text)
        state = self._state
        query = Query(
            vector=self.embed_query(text) if mode != "keyword" else None,
            keyword=state.ranker.keyword.query(text),
            first=acronym_rows(text, state.papers, state.ranker.keyword) if mode != "dense" else np.zeros(0, np.int64),
        )
        found = state.ranker.search(query, len(text.split()), k, _settings(settings, mode), within)
        if mode == "keyword" and not len(found.rows):
            where = " among the papers passing the filters" if within is not None else ""
            note = f"no paper{where} contains a word of '{text[:80]}'; --mode hybrid finds papers by meaning too"
            found = dataclasses.replace(found, note=note)
        return self._results(found, within, 0)

    def recommend(
        self, positive, negative=(), k: int = 20, within=None, positive_vectors=None, negative_vectors=None
    ) -> Results:
        """The ``k`` papers most like the ids ``positive`` (and papers outside the index by their
        vectors ``positive_vectors``, (m, dimension) as :meth:`embed_texts` makes them) and least
        like the ids ``negative`` and ``negative_vectors``, as :class:`Results` (``score``: the
        classifier's margin, above 0 on the positive side); the given papers are excluded;
        ``within``: only the papers of this mask. A linear SVM per collection: see
        :func:`paperscope.index.search.recommend.recommend`.
        From a collection by name: ``ix.collections.recommend(name)``."""
        from paperscope.index.search.recommend import recommend

        k = check_k(k)
        empty = np.zeros((0, self.vectors.shape[1]), np.float32)
        positive_vectors = empty if positive_vectors is None else positive_vectors
        negative_vectors = empty if negative_vectors is None else negative_vectors
        positive, negative = self.rows(positive), self.rows(negative)
        found = recommend(self._state.ranker, positive, positive_vectors, negative, negative_vectors, k, within=within)
        return self._results(found, within, len(set(positive.tolist() + negative.tolist())))

    def _results(self, found: Ranking, within, given: int) -> Results:
        """The :class:`Results` of a lookup among the papers of the mask ``within``, excluding the
        ``given`` papers it was asked about; when there are none and nothing says why, the note
        says: no paper passes the filters (and which, for a mask :meth:`where` made), or every
        paper that does was given."""
        if len(found.rows) or found.note:
            return Results(found, self._state.papers)
        passing = len(self) if within is None else int(np.count_nonzero(within))
        if not passing:
            note = getattr(within, "note", None) or "no paper passes the filters"
        elif within is None:
            note = f"the index has no paper besides the {counted(given, 'paper')} given"
        else:
            note = f"every paper passing the filters ({counted(passing, 'paper')}) is one of the papers given"
        return Results(dataclasses.replace(found, note=note), self._state.papers)

    # --- why, and the corpus as a whole --------------------------------------------------------

    def explain(self, paper_id: str, other_id: str | None = None, query: str | None = None):
        """Why ``paper_id`` is similar to another paper (``other_id``) or to free text (``query``):
        an :class:`~paperscope.index.search.explain.Explanation` with best sentence pairs and
        shared distinctive terms."""
        from paperscope.index.search.explain import explain_pair

        if (other_id is None) == (query is None):
            raise UserError("explain needs either a second paper id or a query text")
        row = int(self.rows(paper_id)[0])
        abstracts = self._state.papers.column("abstract")
        if other_id is not None:
            other = int(self.rows(other_id)[0])
            other_text, other_vector = abstracts[other].as_py(), self.vectors[other]
        elif query is not None:  # (one of the two is given: checked above)
            other_text, other_vector = clean_query(query), self.embed_query(query)
        score = float(self.vectors[row] @ other_vector)
        return explain_pair(
            (abstracts[row].as_py(), other_text), score, self._state.queries.sentences, self._state.ranker.keyword
        )

    def neighbours(self, rows, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest papers to the papers at ``rows`` and their cosines, best first, never
        the paper itself (-1 where the corpus has fewer): for near-duplicates, outliers, bridges."""
        from paperscope.index.search.nearest import nearest_others

        rows = np.asarray(rows, dtype=np.int64)
        return nearest_others(self._state.ranker.faiss_search, self.vectors[rows], rows, k)

    def duplicates(self, threshold: float | None = None) -> pd.DataFrame:
        """Pairs of papers at least ``threshold`` similar (default: ``DUPLICATE_THRESHOLD``), most
        similar first: id_a, title_a, id_b, title_b, score. See
        :func:`paperscope.index.analysis.duplicates_outliers.near_duplicates`."""
        from paperscope.index.analysis.duplicates_outliers import near_duplicates
        from paperscope.limits import DUPLICATE_THRESHOLD

        return near_duplicates(self, DUPLICATE_THRESHOLD if threshold is None else threshold)

    def outliers(self, count: int = 5) -> pd.DataFrame:
        """The ``count`` papers least similar to everything else: id, title, cluster_name,
        nearest_id, nearest_score. See :func:`paperscope.index.analysis.duplicates_outliers.outliers`."""
        from paperscope.index.analysis.duplicates_outliers import outliers

        return outliers(self, count)
