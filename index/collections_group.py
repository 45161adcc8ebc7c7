"""The front's ``ix.collections``: the collections of an index and the recommendations from them.

Part of the front (:mod:`paperscope.index.paper_index`), imported when ``ix.collections`` is first
used: a lookup loads no collections code.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from paperscope.errors import Contradiction
from paperscope.index.collections.collections import Collections, IndexParts, check_name, citation_key, empty_note
from paperscope.index.collections.matching import from_blob, member_text
from paperscope.index.loaded import Front
from paperscope.index.search.ranking import Ranking
from paperscope.index.search.recommend import reasons
from paperscope.index.search.results import Results


class Digest(TypedDict):
    """One collection's part of :meth:`CollectionsGroup.digest`: its top new papers since ``since``
    (when they were last marked shown)."""

    name: str
    since: str
    papers: Results


class CollectionsGroup(Collections):
    """``ix.collections``: the index's collections (:class:`Collections`, kept in ``database_path``,
    default: the data folder's), and recommendations from them: one collection's papers steer,
    another's may steer away, the feed keeps to papers new since a time. Made for one state of the
    index: the index makes another for a new state (the topics corrected, another map)."""

    def __init__(self, index: Front, database_path=None):
        self._state = index.state
        super().__init__(
            IndexParts(index.folder, self._state.papers, index.manifest, self._state.queries), database_path
        )
        self._index = index

    def recommend(self, name: str, avoid: str | None = None, k: int = 20, new: bool = False, since=None, within=None):
        """Papers like the collection ``name`` (its members excluded), and unlike the collection
        ``avoid`` and the papers dismissed from its recommendations (:meth:`dismiss`; never
        recommended again), as :class:`~paperscope.index.search.results.Results`. ``new``: only papers that
        came into the index since the collection was last marked shown; ``since``: since that time
        instead; ``within``: only the papers of this mask (``PaperIndex.where``). Nothing is marked
        shown (:meth:`mark_shown` does that). A new paper's reason (``because``) says when it came
        (``added``, Unix ms)."""
        if new and since is not None:
            raise Contradiction(
                "new (papers added since the collection was last marked shown) and since (papers added since a "
                "date) contradict each other; give one"
            )
        if avoid is not None and check_name(avoid) == check_name(name):
            raise Contradiction(f"the collection to avoid is '{check_name(name)}' itself; name another collection")
        ids, vectors = self.steering(name)
        if not ids and not len(vectors):
            nothing = Ranking(np.zeros(0, np.int64), {"score": np.zeros(0, np.float32)}, note=empty_note(name))
            return Results(nothing, self._state.papers)
        avoid_ids, avoid_vectors = self.steering(avoid) if avoid else ([], None)
        avoid_ids = list(dict.fromkeys([*avoid_ids, *self.steering_away(name)]))  # its dismissed papers too
        if new or since is not None:
            fresh = self._index.where(added_since=since if since is not None else self.shown(name))
            within = fresh if within is None or not fresh.any() else within & fresh  # none new: its note says so
        found = self._index.recommend(
            ids, negative=avoid_ids, k=k, within=within, positive_vectors=vectors, negative_vectors=avoid_vectors
        )
        if found.ranking.reasons is not None and len(vectors):
            self._with_outside_reasons(name, ids, found)
        if (new or since is not None) and found.ranking.reasons is not None and self._state.papers.has("added"):
            came = self._index.table(found.rows, ["added"]).column("added").to_pylist()
            for reason, added in zip(found.ranking.reasons, came, strict=True):  # why a new paper: also when it came
                reason["added"] = added
        return found

    def _with_outside_reasons(self, name: str, ids: list[str], found: Results) -> None:
        """``found``'s reasons made again with the members of ``name`` outside the index (those
        :meth:`steering` gave vectors of, in its order): the closest members of either kind, and
        the terms shared with their titles and abstracts too; an outside member named by its
        title and its own citation key ("outside": [{key, citation_key, title, similarity}])."""
        outside = [row for row in self._rows(name) if row["paper_id"] is None and row["vector"]]
        vectors = np.stack([from_blob(row["vector"]) for row in outside])
        texts = [member_text(row) for row in outside]
        positive = self.parts.papers.rows(ids) if ids else np.zeros(0, np.int64)
        kept = found.ranking.reasons
        if kept is None:  # not a recommendation's results
            return
        kept[:] = reasons(self._state.ranker, found.rows, positive, vectors, texts)
        for reason in kept:
            reason["outside"] = [
                {"key": outside[j]["key"], "citation_key": citation_key(outside[j]), "title": outside[j]["title"],
                 "similarity": round(similarity, 3)}
                for j, similarity in reason["outside"]
            ]  # fmt: skip

    def digest(self, k: int = 5) -> list[Digest]:
        """Each collection's top ``k`` new papers (come into the index since it was last marked
        shown): a list of {name, since, papers (:class:`Results`)}. Nothing is marked shown."""
        return [
            Digest(name=name, since=self.shown(name), papers=self.recommend(name, k=k, new=True))
            for name in self.names()
        ]
