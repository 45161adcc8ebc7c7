"""The front's groups of verbs: ``ix.map`` and ``ix.topics`` (``ix.collections``: :mod:`.collections_group`).

Part of the front (:mod:`paperscope.index.paper_index`): each verb delegates to a room, as the
front's own do. A group is handed the index as a :class:`~paperscope.index.loaded.Front` and reads
its :class:`~paperscope.index.loaded.Loaded` state; a verb that changes what the index shows (a
correction to the topics, a remap, another map) makes a new state and hands it to ``show``, which
the index gave the group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paperscope.errors import UserError
from paperscope.index.common.papers import as_numpy
from paperscope.index.curation import operations
from paperscope.index.curation.operations import Operation, Split
from paperscope.index.loaded import Front, Loaded
from paperscope.index.search import filters
from paperscope.index.search.placement import PLACE_K, place_on_map
from paperscope.index.search.results import check_k
from paperscope.index.store import maps
from paperscope.settings import MAP_COLUMNS

if TYPE_CHECKING:  # the tables the verbs return; a lookup loads no pandas (nor the curation rules)
    import pandas as pd

TOPIC_LABEL_COLUMNS = ("cluster", "name", "size", "x", "y")  # what a map names of a topic (TopicsGroup.labels)


class MapGroup:
    """``ix.map``: where the papers sit on the topic map, and the map as a notebook widget."""

    def __init__(self, index: Front, show: Callable[[Loaded], None]):
        self._index = index
        self._show = show  # shows a new state: another map

    def table(self) -> pd.DataFrame:
        """What the map draws of every paper: ``MAP_COLUMNS`` (title, position, topics, map trust)."""
        return self._index.table(columns=list(MAP_COLUMNS)).to_pandas()

    def points(self) -> dict[str, np.ndarray]:
        """:meth:`table` as a numpy array per column, made without pandas (the app's first page)."""
        papers = self._index.table(columns=list(MAP_COLUMNS))
        return {name: as_numpy(papers.column(name)) for name in MAP_COLUMNS}

    @property
    def coordinates(self) -> np.ndarray:
        """(n, 2) map positions of the papers."""
        return self._index.state.coordinates

    def position(self, vector: np.ndarray, k: int = PLACE_K) -> np.ndarray:
        """Where a vector not in the corpus (a query, a new paper) sits on the map: the average of
        its ``k`` nearest papers' positions, weighted by similarity. Milliseconds, no umap."""
        scores, rows = self._index.state.ranker.faiss_search(vector, min(k, len(self._index)))
        return place_on_map(scores[0], rows[0], self.coordinates)

    def neighbours(self, k: int) -> np.ndarray:
        """Each paper's ``k`` nearest rows (fewer in a smaller corpus), itself excluded."""
        return self._index.neighbours(np.arange(len(self._index)), min(k, len(self._index) - 1))[1]

    def widget(self, level: str = "coarse", colour_by: str | None = None, height: int = 620, k: int = 10):
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
        return MapWidget(self._index, level=level, colour_by=colour_by, height=height, k=k)

    # --- maps side by side ------------------------------------------------------------------

    @property
    def current(self) -> str:
        """The name of the map shown: "build" (the build's own) or one :meth:`remap` made."""
        return self._index.state.chosen.name

    @property
    def note(self) -> str:
        """Why the folder's current map is not the one shown ("" when it is)."""
        return self._index.state.chosen.note

    def maps(self) -> pd.DataFrame:
        """Every map of the index: name, topics (coarse), clusters (fine), created, current, stale
        (made from an earlier generation: never shown until remade)."""
        index, manifest = self._index, self._index.manifest
        levels = index.state.generation.clusters.column("level").to_pylist()
        build: maps.BuildMap = {
            "topics": levels.count("coarse"),
            "clusters": levels.count("fine"),
            "created": manifest.created,
        }
        rows = maps.listing(index.folder, index.generation or "", build)
        import pandas as pd

        return pd.DataFrame(rows, columns=["name", "topics", "clusters", "created", "current", "stale"])

    def remap(self, topics: int, min_topic_size: int | None = None, name: str | None = None) -> str:
        """Another map from the stored vectors and layout, with ``topics`` coarse topics (and fine
        clusters of at least ``min_topic_size`` papers found again, else the build's kept), named
        ``name`` (default "topics-N"), written beside the index and made current; this index shows
        it at once, the topic corrections applied to it. No paper is embedded or laid out again.
        Returns its name. Imports the build's topic code when called (a lookup never does)."""
        from paperscope.index.build.remap import remap

        made = remap(self._index.folder, self._index.embed_texts, topics, min_topic_size, name=name)
        self._show(self._index.state.with_map())
        return made

    def use(self, name: str) -> None:
        """Make the map ``name`` current (``"build"``: the build's own) and show it."""
        maps.use(self._index.folder, name, self._index.generation or "")
        self._show(self._index.state.with_map())

    def delete(self, name: str) -> None:
        """Delete the map ``name`` (never "build", nor the current one)."""
        maps.delete(self._index.folder, name)


class TopicsGroup:
    """``ix.topics``: the topics at two levels ("coarse" and "fine"), their analyses, and the
    corrections to them. A correction (rename, merge, split, move) is kept in the folder's
    ``curations.json``, applied on each load (the generation on disk is never changed) to the topic
    whose papers overlap the recorded ones most, so it survives ``paperscope add`` and a rebuild;
    one that matches no topic any more is reported in :attr:`report`."""

    def __init__(self, index: Front, show: Callable[[Loaded], None]):
        self._index = index
        self._show = show  # shows a new state: the topics corrected

    @property
    def report(self) -> list[str]:
        """A sentence for each curation that matches no topic any more (or why none was applied)."""
        return list(self._index.state.report)

    # --- reading ------------------------------------------------------------------------------

    def table(self, level: str = "fine") -> pd.DataFrame:
        """The topics of ``level`` as built and curated: cluster, name, terms, size, central_ids,
        x, y, map_trust, parent (a fine topic's coarse one)."""
        filters.check_level(level)
        return self._index.state.topics[level]

    def labels(self, level: str = "fine") -> dict[str, np.ndarray]:
        """What the map names of each topic of ``level``, as :meth:`table` has it: cluster, name,
        size and the label's x, y, numpy arrays (an uncorrected index makes no DataFrame for them)."""
        filters.check_level(level)
        return self._index.state.topic_columns(level, TOPIC_LABEL_COLUMNS)

    def overview(self, level: str = "coarse", unclustered: bool = False) -> pd.DataFrame:
        """Every topic of ``level`` with its size, share, map trust, three most central papers and
        terms, largest first; ``unclustered``: the papers in no topic as a last row, when there are
        any. See :func:`paperscope.index.analysis.topic_analysis.topic_overview`."""
        from paperscope.index.analysis.topic_analysis import topic_listing, topic_overview

        return (topic_listing if unclustered else topic_overview)(self._index, level)

    def find(self, topic, level: str = "coarse") -> int:
        """The number of the topic of ``level`` given by its number, its name, a part of its name, or
        words all of which its name uses; several candidates are a UserError listing them."""
        from paperscope.index.analysis.topic_analysis import find_topic

        filters.check_level(level)
        return find_topic(self._index, topic, level)

    def columns(self) -> list[str]:
        """The papers' metadata columns :meth:`by` can split topics by (year, venue, categories…)."""
        from paperscope.index.analysis.topic_analysis import group_columns

        return group_columns(self._index)

    def values(self, column: str) -> pd.Series:
        """The values of ``column``, one entry per paper and value (a list field's one per value),
        indexed by the paper's row: see :func:`paperscope.index.analysis.topic_analysis.column_values`."""
        from paperscope.index.analysis.topic_analysis import column_values

        return column_values(self._index, column)

    def by(self, column: str, level: str = "coarse", bins=None) -> pd.DataFrame:
        """Each topic of ``level``'s share of the papers of each value of ``column`` (year, venue,
        categories, any column of the corpus; over time, also each topic's change); numbers and
        dates grouped by ``bins`` (a count of groups, or their edges such as ``[0, 5, 10]``): see
        :func:`paperscope.index.analysis.topic_analysis.topics_by`."""
        from paperscope.index.analysis.topic_analysis import topics_by

        return topics_by(self._index, column, level, bins)

    def compare(self, a, b, level: str = "coarse") -> pd.DataFrame:
        """The topics of ``level`` over-represented in one group of papers against another, each
        group a (column, value) such as ("venue", "ICML") or ("year", 2024), or a condition such
        as "review_score >= 6", with their papers in each: see
        :func:`paperscope.index.analysis.topic_analysis.topics_compare`."""
        from paperscope.index.analysis.topic_analysis import topics_compare

        return topics_compare(self._index, a, b, level)

    def bridges(self, a, b, level: str = "coarse", k: int = 10) -> pd.DataFrame:
        """Up to ``k`` papers between topics ``a`` and ``b`` (numbers or names), most evenly split
        first: see :func:`paperscope.index.analysis.topic_analysis.bridges`."""
        from paperscope.index.analysis.topic_analysis import bridges

        return bridges(self._index, a, b, level=level, limit=check_k(k))

    # --- correcting ---------------------------------------------------------------------------

    def rename(self, topic, name: str, level: str = "coarse") -> int:
        """Rename a topic of ``level`` (its number, its name or words of it). Returns its number."""
        number = self.find(topic, level)
        return self._record(operations.rename(self._papers, self.table(level), level, number, name))[0]

    def merge(self, a, b, name: str | None = None, level: str = "coarse") -> int:
        """Merge topic ``b`` into topic ``a`` (both of ``level``), named ``name`` (default: A's).
        Merging fine topics of two coarse ones puts the result in A's; merging coarse topics makes
        B's fine topics A's. Returns A's number."""
        pair = (self.find(a, level), self.find(b, level))
        return self._record(operations.merge(self._papers, self.table(level), level, pair, name))[0]

    def split(self, topic, k: int = 2, level: str = "coarse") -> list[int]:
        """Split a topic of ``level`` into ``k`` topics by its papers' vectors (a deterministic
        k-means; a coarse topic of at least ``k`` fine ones is split by grouping them), numbered
        above every topic, part 1 the largest, each named by its own papers' terms as a build
        names topics (:meth:`_name_parts`). Returns the new numbers."""
        number = self.find(topic, level)
        return self._record(operations.split(self._papers, self.table(level), level, number, k))

    def move(self, paper_ids, topic, level: str = "fine") -> int:
        """Move papers (ids) into a topic of ``level``: a fine topic's papers also join its coarse
        one; at coarse level each joins the topic's fine topic nearest to it. Returns its number."""
        paper_ids = [paper_ids] if isinstance(paper_ids, str) else list(paper_ids)
        self._index.rows(paper_ids)  # an unknown id is a UserError suggesting close ones
        number = self.find(topic, level)
        return self._record(operations.move(self._papers, self.table(level), level, paper_ids, number))[0]

    def curations(self) -> pd.DataFrame:
        """The curations applied when this index was loaded (or changed since), in order: number,
        operation, level, description, applied, topics (those it made or changed), note (why it was
        not applied) and made (when)."""
        state = self._index.state
        rows = [
            {"number": number, "operation": entry.op, "level": entry.level, "description": entry.describe(),
             "applied": outcome.applied, "topics": outcome.topics, "note": outcome.note, "made": entry.made}
            for number, (entry, outcome) in enumerate(zip(state.entries, state.outcomes, strict=True), 1)
        ]  # fmt: skip
        columns = ["number", "operation", "level", "description", "applied", "topics", "note", "made"]
        import pandas as pd

        return pd.DataFrame(rows, columns=columns)

    @property
    def _papers(self) -> pa.Table:
        return self._index.state.papers.table

    def _record(self, operation: Operation) -> list[int]:
        """Write ``operation`` to the log when it applies (else a UserError) and show the result here;
        returns the topics it made or changed (a split's new ones, else one)."""
        from paperscope.index.curation import rules

        state = self._index.state
        entries, curated = rules.record(self._index.folder, operation, state.curate, self._name_parts)
        self._show(state.with_curations(entries, curated))
        topics = curated.outcomes[-1].topics
        return topics if isinstance(operation, Split) else topics[:1]

    def _name_parts(self, split: Split) -> Split:
        """``split`` with the names and terms of its parts, each from its papers' terms, distinct
        from the other topics' names (:func:`~paperscope.index.curation.split_names.name_parts`: the
        topic-naming code, imported when a split is made)."""
        from paperscope.index.curation.split_names import name_parts

        return name_parts(self._index, split, set(self.table(split.level)["name"]) - {split.topic})
