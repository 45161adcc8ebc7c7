"""The front's ``ix.collections``: the collections of an index and the recommendations from them.

Part of the front (:mod:`paperscope.index.paper_index`), imported when ``ix.collections`` is first
used: a lookup loads no collections code.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import threading
from typing import Literal, NotRequired, TypedDict

import numpy as np

from paperscope.errors import Contradiction
from paperscope.index.collections.collections import Collections, IndexParts, check_name, citation_key, empty_note
from paperscope.index.collections.matching import from_blob, member_text
from paperscope.index.collections.watches import Watches
from paperscope.index.loaded import Front
from paperscope.index.search.ranking import Ranking
from paperscope.index.search.recommend import above, reasons
from paperscope.index.search.results import Results


class Digest(TypedDict):
    """One part of :meth:`CollectionsGroup.digest`: a collection's top new papers (``kind``
    "collection"), or a saved search's new matches ("watch", with its ``query`` and
    ``threshold``), since ``since`` (when they were last marked shown, or the time asked)."""

    kind: Literal["collection", "watch"]
    name: str
    since: str
    papers: Results
    query: NotRequired[str]
    threshold: NotRequired[float]


# Recommendations remembered by what they were made from (``_made_from``): a page's reruns ask for the same ones
# while a collection is shown (50,000 papers: 55 ms each, two FAISS searches and a fitted classifier).
RECOMMENDATIONS_KEPT = 16


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
        self.watches = Watches(self)  # the index's saved searches, kept beside its collections
        self._recommended: dict[bytes, Results] = {}  # oldest first, at most RECOMMENDATIONS_KEPT
        self._recommended_lock = threading.Lock()  # sessions of the app share the index

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
        rows, ids, vectors = self._steering(name)
        if not ids and not len(vectors):
            nothing = Ranking(np.zeros(0, np.int64), {"score": np.zeros(0, np.float32)}, note=empty_note(name))
            return Results(nothing, self._state.papers)
        avoid_ids, avoid_vectors = self.steering(avoid) if avoid else ([], None)
        avoid_ids = list(dict.fromkeys([*avoid_ids, *self.steering_away(name)]))  # its dismissed papers too
        if new or since is not None:
            fresh = self._index.where(added_since=since if since is not None else self.shown(name))
            within = fresh if within is None or not fresh.any() else within & fresh  # none new: its note says so
        made_from = self._made_from(rows, k, within, avoid_ids, avoid_vectors, dated=new or since is not None)
        with self._recommended_lock:
            kept = self._recommended.get(made_from)
        if kept is not None:
            return kept.copy()
        found = self._index.recommend(
            ids, negative=avoid_ids, k=k, within=within, positive_vectors=vectors, negative_vectors=avoid_vectors
        )
        if found.ranking.reasons is not None and len(vectors):
            self._with_outside_reasons(rows, ids, found)
        if (new or since is not None) and found.ranking.reasons is not None and self._state.papers.has("added"):
            came = self._index.table(found.rows, ["added"]).column("added").to_pylist()
            for reason, added in zip(found.ranking.reasons, came, strict=True):  # why a new paper: also when it came
                reason["added"] = added
        with self._recommended_lock:
            self._recommended[made_from] = found.copy()
            while len(self._recommended) > RECOMMENDATIONS_KEPT:
                del self._recommended[next(iter(self._recommended))]
        return found

    @staticmethod
    def _made_from(rows: list[dict], k: int, within, avoid_ids: list[str], avoid_vectors, dated: bool) -> bytes:
        """A digest of what recommendations are made from, in this state of the index: the
        collection's stored members ``rows`` (papers, and entries outside the index with their
        vectors and texts), the papers and vectors they steer away from, ``k``, the mask ``within``
        and whether a new paper's reason says when it came (``dated``)."""
        digest = hashlib.blake2b(digest_size=16)
        for row in rows:  # a vector's bytes as they are (their repr is four times longer), each value after its length
            for value in row.values():
                encoded = value if isinstance(value, bytes) else repr(value).encode()
                digest.update(len(encoded).to_bytes(8, "little") + encoded)
        digest.update(repr((avoid_ids, k, dated)).encode())
        for array in (avoid_vectors, within):
            digest.update(b"none" if array is None else repr((np.shape(array), np.asarray(array).dtype)).encode())
            if array is not None:
                digest.update(np.ascontiguousarray(array).tobytes())
        return digest.digest()

    def _with_outside_reasons(self, rows: list[dict], ids: list[str], found: Results) -> None:
        """``found``'s reasons made again with the collection's members outside the index (of its
        stored members ``rows``, those :meth:`steering` gave vectors of, in its order): the closest
        members of either kind, and the terms shared with their titles and abstracts too; an outside
        member named by its title and its own citation key ("outside": [{key, citation_key, title,
        similarity}])."""
        outside = [row for row in rows if row["paper_id"] is None and row["vector"]]
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

    def matches(self, name: str, k: int = 20, new: bool = True, since=None) -> Results:
        """The saved search ``name``'s matches (:attr:`watches`): up to ``k`` papers whose cosine
        with its query is at least its threshold, best first (text: the query's vector; paper ids:
        the mean of theirs, those papers left out), each with its reasons as a recommendation's
        (the query's papers it is closest to, or the query text, and the terms shared). ``new``:
        only papers added since it was last marked shown; ``since``: since that time instead;
        neither: every match. Nothing is marked shown."""
        watch = self.watches.get(name)
        start = (since if since is not None else self.watches.shown(name)) if new or since is not None else None
        within = None if start is None else self._index.where(added_since=start)
        ranker, threshold = self._state.ranker, watch["threshold"]
        if watch["kind"] == "ids":
            present = self.parts.papers.known(watch["query"].split())  # a paper gone from the index: the others
            if not present:
                note = f"none of the papers of the saved search '{watch['name']}' is in the index any more"
                return Results(Ranking(np.zeros(0, np.int64), {"score": np.zeros(0, np.float32)}, note=note),
                               self._state.papers)  # fmt: skip
            positive = self._index.rows(present)
            vector = np.asarray(self._index.vectors[positive], np.float32).mean(axis=0)
            found = above(ranker, vector / max(float(np.linalg.norm(vector)), 1e-12), threshold, k, within=within,
                          positive=positive)  # fmt: skip
        else:
            vector = self._state.queries.query(watch["query"])
            found = above(ranker, vector, threshold, k, within=within, text=watch["query"])
        for reason in found.reasons or []:  # the query text named as the closest "member"
            reason["outside"] = [
                {"key": None, "citation_key": None, "title": watch["query"], "similarity": round(cosine, 3)}
                for _, cosine in reason.get("outside", [])
            ]
        if start is not None and found.reasons and self._state.papers.has("added"):
            came = self._index.table(found.rows, ["added"]).column("added").to_pylist()
            for reason, added in zip(found.reasons, came, strict=True):  # a new match: also when it came
                reason["added"] = added
        if not len(found.rows):
            among = "" if start is None else f" added since {str(start)[:16].replace('T', ' ')}"
            note = f"no paper{among} is {threshold:.2f} or more like the saved search '{watch['name']}'"
            found = dataclasses.replace(found, note=note)
        return Results(found, self._state.papers)

    def digest(self, k: int = 5, since=None) -> list[Digest]:
        """Each collection's top ``k`` new papers and each saved search's top ``k`` new matches:
        come into the index since ``since`` (a time), or when None since each was last marked
        shown. A list of {kind ("collection" or "watch"), name, since, papers (:class:`Results`)},
        a watch's with its query and threshold. Nothing is marked shown."""
        asked = since.isoformat() if isinstance(since, (datetime.date, datetime.datetime)) else str(since)
        entries = [
            Digest(
                kind="collection", name=name, since=asked if since is not None else self.shown(name),
                papers=self.recommend(name, k=k, new=since is None, since=since),
            )
            for name in self.names()
        ]  # fmt: skip
        for watch in self.watches.listing().to_dict("records"):
            entries.append(
                Digest(
                    kind="watch", name=watch["name"], query=watch["query"], threshold=watch["threshold"],
                    since=asked if since is not None else watch["shown"] or watch["created"],
                    papers=self.matches(watch["name"], k=k, new=since is None, since=since),
                )
            )  # fmt: skip
        return entries
