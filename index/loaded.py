"""A loaded index's state, immutable, and what the front's groups use of the front.

Part of the front (:mod:`paperscope.index.paper_index`, :mod:`.groups`,
:mod:`.collections_group`), imported by each of them and importing none: the groups are handed the
index as a :class:`Front` and read its :class:`Loaded` state. A correction to the topics, a remap or
another map made current makes a new state (:meth:`Loaded.with_map`, :meth:`Loaded.with_curations`),
which the front then shows; what is derived from a state (the papers as a DataFrame, the map's
coordinates) is cached on it, so a new state starts without stale copies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa

from paperscope.errors import UserError
from paperscope.index.common.papers import PaperTable, as_numpy
from paperscope.index.curation import operations
from paperscope.index.curation.operations import Entry
from paperscope.index.search.encoding import QueryEncoder
from paperscope.index.search.ranking import Ranker
from paperscope.index.store import curations, maps
from paperscope.settings import LEVELS

if TYPE_CHECKING:  # a lookup needs no pandas, no curation rules (a curated index's load does)
    import pandas as pd

    from paperscope.index.curation.rules import Curated, Outcome
    from paperscope.index.store.generations import Generation
    from paperscope.index.store.manifest import Manifest


@dataclass(frozen=True)
class Loaded:
    """What a loaded index shows: the generation as read, its ranker and query encoder, the map
    shown (``chosen``) and its papers and topics before the curations (``built_papers``,
    ``clusters``), and with them (``papers``, :attr:`topics`), the log's entries and what became of each."""

    folder: Path
    generation: Generation
    ranker: Ranker
    queries: QueryEncoder
    chosen: maps.Chosen
    built_papers: pa.Table
    clusters: pa.Table  # the map's topics as built, both levels (as read: Arrow)
    papers: PaperTable
    curated_topics: dict[str, pd.DataFrame] | None = None  # by level; None: none applied
    entries: tuple[Entry, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    report: tuple[str, ...] = ()  # a sentence for each curation not applied

    @classmethod
    def read(cls, folder: Path, generation: Generation, model_path: str | Path | None = None) -> Loaded:
        """The state of ``generation`` of the index in ``folder``, its current map shown, the
        curations applied (``model_path``: where the query model is loaded from, else the manifest's)."""
        manifest = generation.manifest
        ranker = Ranker(
            generation.vectors, generation.smoothed, generation.faiss_index, generation.keyword, manifest.search
        )
        queries = QueryEncoder(manifest.model, manifest.long_text.strategy, model_path)
        return _shown(folder, generation, ranker, queries)

    def with_map(self) -> Loaded:
        """A new state showing the folder's current map (read again), the curations applied to it."""
        return _shown(self.folder, self.generation, self.ranker, self.queries)

    def curate(self, entries: list[Entry]) -> Curated:
        """The map's topics with the operations ``entries`` applied (:func:`~paperscope.index.curation.rules.apply`)."""
        from paperscope.index.curation import rules  # the rules (and pandas' Index) for a curated index alone

        return rules.apply(entries, self.built_papers, self.built_topics, self.ranker.vectors)

    def with_curations(self, entries: list[Entry], curated: Curated) -> Loaded:
        """A new state showing ``curated``, the map's topics with the log ``entries`` applied."""
        return dataclasses.replace(
            self,
            papers=PaperTable(curated.papers, self.folder),
            curated_topics=curated.topics,
            entries=tuple(entries),
            outcomes=tuple(curated.outcomes),
            report=tuple(curated.report),
        )

    @cached_property
    def built_topics(self) -> dict[str, pd.DataFrame]:
        """The map's topic tables as built, by level (made on first use: a lookup never needs them)."""
        clusters = self.clusters.to_pandas()
        return {level: clusters[clusters["level"] == level].reset_index(drop=True) for level in LEVELS}

    @property
    def topics(self) -> dict[str, pd.DataFrame]:
        """The topic tables shown, by level: the map's with the curations applied."""
        return self.built_topics if self.curated_topics is None else self.curated_topics

    def topic_columns(self, level: str, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """The columns ``names`` of the topic table of ``level`` shown, as numpy arrays: read from the
        map's Arrow table while no curation applies (no DataFrame made, nor pandas imported)."""
        if self.curated_topics is not None:
            return {name: self.curated_topics[level][name].to_numpy() for name in names}
        at = np.asarray(self.clusters.column("level").to_pylist()) == level
        return {name: as_numpy(self.clusters.column(name))[at] for name in names}

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Every paper's metadata as a DataFrame, decoded once per state."""
        return self.papers.frame(None)

    @cached_property
    def coordinates(self) -> np.ndarray:
        """(n, 2) map positions of the papers on the map shown."""
        return np.column_stack([self.papers.column(axis).to_numpy() for axis in ("x", "y")]).astype(np.float64)


def _shown(folder: Path, generation: Generation, ranker: Ranker, queries: QueryEncoder) -> Loaded:
    """The state showing the folder's current map (:mod:`~paperscope.index.store.maps`: the build's,
    or one a remap made) with the topic corrections applied to it; an unreadable log is reported."""
    papers, clusters = generation.papers, generation.clusters
    chosen = maps.read_current(folder, generation.name or "", papers.num_rows)
    if chosen.papers is not None:
        papers, clusters = maps.with_map(papers, chosen.papers), chosen.clusters
    plain = Loaded(folder, generation, ranker, queries, chosen, papers, clusters, PaperTable(papers, folder))
    try:
        entries = [operations.read(entry) for entry in curations.read_log(folder)]
    except UserError as exc:
        return dataclasses.replace(plain, report=(f"no curation applied: {exc}",))
    return plain.with_curations(entries, plain.curate(entries)) if entries else plain


class Front(Protocol):
    """What the groups use of the index (:class:`~paperscope.index.paper_index.PaperIndex`): its
    folder, manifest, loaded state and public verbs."""

    folder: Path
    manifest: Manifest
    generation: str | None

    @property
    def state(self) -> Loaded: ...

    @property
    def vectors(self) -> np.ndarray: ...

    def __len__(self) -> int: ...

    def table(self, rows=None, columns: list[str] | None = None) -> pa.Table: ...

    def rows(self, paper_ids) -> np.ndarray: ...

    def neighbours(self, rows, k: int) -> tuple[np.ndarray, np.ndarray]: ...

    def embed_texts(self, texts: list[str]) -> np.ndarray: ...

    def where(
        self, years=None, topics=None, venues=None, category=None, level=None, added_since=None, conditions=()
    ): ...

    def recommend(
        self, positive, negative=(), k: int = 20, within=None, positive_vectors=None, negative_vectors=None
    ): ...
