"""Your own library: named collections of papers of one index, their recommendations and a feed
of new papers like them.

``PaperIndex.collections`` gives the :class:`Collections` of that index; the CLI
(``paperscope collection …``, ``recommend``, ``digest``), the app and the service use it. The
collections themselves live in the data folder's SQLite file (:mod:`.database`), tied to the
index folder, so they survive rebuilds and ``paperscope add``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from paperscope.errors import UnknownCollection, UserError
from paperscope.index.collections import database
from paperscope.index.collections.database import MEMBER_FIELDS, Database
from paperscope.index.collections.matching import Matched, as_blob, from_blob, match_entries, member_text
from paperscope.index.search.ranking import Ranking

if TYPE_CHECKING:
    from paperscope.index.paper_index import PaperIndex

MAX_NAME_CHARS = 200
INSERT_MEMBER = (
    f"INSERT OR IGNORE INTO members (collection_id, key, paper_id, matched_by, {', '.join(MEMBER_FIELDS)}, vector, "
    f"vector_key, added) VALUES ({', '.join('?' for _ in range(len(MEMBER_FIELDS) + 7))})"
)
EXPORTED = ["id", "title", "year", "authors", "venue", "doi", "arxiv_id", "url", "abstract"]
MEMBER_COLUMNS = ["key", "id", "title", "matched_by", "in_index", "year", "authors", "venue", "doi", "arxiv_id", "url"]


def check_name(name) -> str:
    """A collection name: text of 1 to ``MAX_NAME_CHARS`` characters without control characters,
    not only spaces (slashes and quotes are fine: names only ever travel as SQL parameters)."""
    if not isinstance(name, str) or not name.strip():
        raise UserError("a collection needs a name of at least one character")
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"a collection name has at most {MAX_NAME_CHARS} characters, this one {len(name):,}")
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in name):
        raise UserError(f"the collection name {name[:40]!r} holds control characters")
    return name


class Collections:
    """The collections of one index (``index``), kept in ``database`` (default: the data folder's)."""

    def __init__(self, index: PaperIndex, database_path: str | Path | None = None):
        self.index = index
        self.database = Database(database_path)
        self.index_key = str(Path(index.folder).resolve())

    # --- reading ----------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The names of this index's collections, in alphabetical order."""
        with self.database.connect() as db:
            rows = db.execute("SELECT name FROM collections WHERE index_key = ? ORDER BY name", (self.index_key,))
            return [row["name"] for row in rows]

    def _id(self, db, name: str) -> int:
        """The row id of the collection ``name``; an unknown name is a UserError suggesting close ones."""
        name = check_name(name)
        found = db.execute(
            "SELECT id FROM collections WHERE index_key = ? AND name = ?", (self.index_key, name)
        ).fetchone()
        if found is None:
            rows = db.execute("SELECT name FROM collections WHERE index_key = ?", (self.index_key,))
            names = [row["name"] for row in rows]
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
            if close:
                hint = f"; did you mean {', '.join(close)}?"
            elif names:
                hint = f"; this index has {', '.join(names[:10])}"
            else:
                hint = "; create one with: paperscope collection create NAME"
            raise UnknownCollection(f"no collection named '{name}' for {self.index.folder}{hint}")
        return found["id"]

    def listing(self) -> pd.DataFrame:
        """One row per collection: name, members, in_index (members found in the index now),
        outside (library entries not in the corpus), missing (papers gone from the index),
        created, shown (when its new papers were last shown)."""
        with self.database.connect() as db:
            collections = db.execute(
                "SELECT id, name, created, shown FROM collections WHERE index_key = ? ORDER BY name", (self.index_key,)
            ).fetchall()
            members = db.execute(
                "SELECT collection_id, paper_id FROM members WHERE collection_id IN"
                " (SELECT id FROM collections WHERE index_key = ?)",
                (self.index_key,),
            ).fetchall()
        ids_of: dict[int, list] = {row["id"]: [] for row in collections}
        for member in members:
            ids_of[member["collection_id"]].append(member["paper_id"])
        present = set(self.index.known([i for ids in ids_of.values() for i in ids if i]))
        listing = []
        for row in collections:
            ids = ids_of[row["id"]]
            papers = [i for i in ids if i]
            in_index = sum(i in present for i in papers)
            listing.append({
                "name": row["name"], "members": len(ids), "in_index": in_index, "outside": len(ids) - len(papers),
                "missing": len(papers) - in_index, "created": row["created"], "shown": row["shown"],
            })  # fmt: skip
        return pd.DataFrame(listing, columns=["name", "members", "in_index", "outside", "missing", "created", "shown"])

    def members(self, name: str) -> pd.DataFrame:
        """The members of ``name``, in the order they were added: key, id (None for an outside
        entry), title (the index's for a paper in it), matched_by (id, doi, arxiv, title, outside),
        in_index, and what the entry said (year, authors, venue, doi, arxiv_id, url)."""
        with self.database.connect() as db:
            rows = db.execute(
                "SELECT * FROM members WHERE collection_id = ? ORDER BY added, rowid", (self._id(db, name),)
            ).fetchall()
        members = pd.DataFrame([dict(row) for row in rows])
        if members.empty:
            return pd.DataFrame(columns=MEMBER_COLUMNS)
        present = self.index.known([i for i in members["paper_id"] if isinstance(i, str)])
        titles = self.index.take(self.index.rows(present), ["title"]).column("title").to_pylist()
        title_of = dict(zip(present, titles, strict=True))
        members["in_index"] = [i in title_of for i in members["paper_id"]]
        members["title"] = [
            title_of.get(i, title) for i, title in zip(members["paper_id"], members["title"], strict=True)
        ]
        return members.rename(columns={"paper_id": "id"})[MEMBER_COLUMNS]

    def papers(self, name: str) -> pd.DataFrame:
        """The members of ``name`` with what is known of each: the index's metadata for a paper in
        it, the entry's own fields for the others (id, title, year, authors, venue, doi, arxiv_id,
        url, abstract, matched_by, in_index)."""
        with self.database.connect() as db:
            rows = db.execute(
                "SELECT * FROM members WHERE collection_id = ? ORDER BY added, rowid", (self._id(db, name),)
            ).fetchall()
        stored = pd.DataFrame([dict(row) for row in rows], columns=["key", "paper_id", "matched_by", *MEMBER_FIELDS])
        present = self.index.known([i for i in stored["paper_id"] if isinstance(i, str)])
        wanted = [field for field in EXPORTED if field in self.index.fields()]
        from_index = self.index.take(self.index.rows(present), wanted).to_pandas().set_index("id")
        papers = []
        for member in stored.to_dict("records"):
            known = from_index.loc[member["paper_id"]].to_dict() if member["paper_id"] in from_index.index else {}
            paper = {field: known.get(field, member.get(field)) for field in EXPORTED if field != "id"}
            papers.append({"id": member["paper_id"] or member["key"], **paper, "matched_by": member["matched_by"],
                           "in_index": bool(known)})  # fmt: skip
        frame = pd.DataFrame(papers, columns=[*EXPORTED, "matched_by", "in_index"])
        frame["year"] = pd.to_numeric(frame["year"], errors="coerce").astype("Int64")  # 2025, not 2025.0
        return frame

    def export(self, name: str, path: str | Path) -> Path:
        """Write the collection ``name`` to ``path`` as CSV, BibTeX or RIS (by its suffix)."""
        from paperscope.index.collections.export import write

        return write(self.papers(name), path)

    def show(self, name: str) -> dict:
        """The collection ``name``: its members and how its entries matched corpus papers."""
        members = self.members(name)
        ways = members["matched_by"].value_counts()
        return {
            "name": check_name(name),
            "index": str(self.index.folder),
            "members": len(members),
            "in_index": int(members["in_index"].sum()),
            "missing": int(((~members["in_index"]) & members["id"].notna()).sum()),
            "matched_by": {way: int(ways.get(way, 0)) for way in ("id", "doi", "arxiv", "title", "outside")},
            "papers": members,
        }

    # --- writing ----------------------------------------------------------------------------

    def create(self, name: str, ids: list[str] = (), files: list[str | Path] = ()) -> Matched:
        """A new collection ``name`` holding the papers ``ids`` and the entries of library
        ``files`` (BibTeX, RIS, CSL-JSON or any corpus file), matched to the index's papers."""
        name = check_name(name)
        matched = self._matched(ids, files)
        with self.database.connect(write=True) as db:
            exists = db.execute(
                "SELECT 1 FROM collections WHERE index_key = ? AND name = ?", (self.index_key, name)
            ).fetchone()
            if exists:
                raise UserError(f"a collection named '{name}' exists already for {self.index.folder}; add to it")
            db.execute(
                "INSERT INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                (self.index_key, name, database.now(), database.now()),
            )
            self._insert(db, self._id(db, name), matched)
        return matched

    def add(self, name: str, ids: list[str] = (), files: list[str | Path] = (), create: bool = False) -> Matched:
        """Add papers (``ids``) and library ``files`` to ``name`` (made first when ``create``);
        members it holds already stay as they are."""
        matched = self._matched(ids, files)
        with self.database.connect(write=True) as db:
            if create:
                db.execute(
                    "INSERT OR IGNORE INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                    (self.index_key, check_name(name), database.now(), database.now()),
                )
            self._insert(db, self._id(db, name), matched)
        return matched

    def remove(self, name: str, ids: list[str]) -> int:
        """Remove members (paper ids, or the keys of outside entries) from ``name``; how many went."""
        with self.database.connect(write=True) as db:
            collection = self._id(db, name)
            removed = 0
            for key in ids:
                removed += db.execute(
                    "DELETE FROM members WHERE collection_id = ? AND key = ?", (collection, str(key).strip())
                ).rowcount
        return removed

    def delete(self, name: str) -> None:
        """Delete the collection ``name`` and its members."""
        with self.database.connect(write=True) as db:
            db.execute("DELETE FROM collections WHERE id = ?", (self._id(db, name),))

    def _matched(self, ids, files) -> Matched:
        """Members from paper ids (each must be in the index) and from library files."""
        from paperscope.embed.corpus import read_records

        ids = [str(paper_id).strip() for paper_id in ids]
        self.index.rows(ids)  # an unknown id is a UserError suggesting close ones
        matched = Matched([{"key": i, "paper_id": i, "matched_by": "id"} for i in dict.fromkeys(ids)])
        entries = [record for path in files for record in read_records(path, keep_without_abstract=True)]
        if entries:
            columns = [column for column in ("id", "title", "doi", "arxiv_id") if column in self.index.fields()]
            found = match_entries(self.index.metadata(columns), entries)
            matched.members += found.members
            matched.unusable += found.unusable
        outside = [member for member in matched.members if member["paper_id"] is None]
        if outside:  # embedded now, in one batch, not while the database is held for writing
            vectors = self.index.embed_texts([member_text(member) for member in outside])
            for member, vector in zip(outside, vectors, strict=True):
                member["vector"] = vector
        return matched

    def _insert(self, db, collection: int, matched: Matched) -> None:
        """Insert the members of ``matched`` not in the collection yet, outside ones with their vectors."""
        vector_key, added = self._vector_key(), database.now()
        db.executemany(
            INSERT_MEMBER,
            [
                (
                    collection, member["key"], member["paper_id"], member["matched_by"],
                    *(member.get(name) for name in MEMBER_FIELDS),
                    as_blob(member["vector"]) if "vector" in member else None,
                    vector_key if "vector" in member else None,
                    added,
                )
                for member in matched.members
            ],
        )  # fmt: skip

    def _vector_key(self) -> str:
        """What an outside member's vector depends on: the index's model and how it embeds texts."""
        model = self.index.manifest["model"]
        strategy = self.index.manifest["long_text"]["strategy"]
        return json.dumps([model["fingerprint"], model.get("quantize"), model.get("window"), strategy])

    # --- recommendations and the feed --------------------------------------------------------

    def _steering(self, name: str) -> tuple[list[str], np.ndarray]:
        """What steers recommendations from ``name``: its papers in the index, and the vectors of
        its outside entries (embedded again, and kept, when the index's model changed since)."""
        with self.database.connect() as db:
            collection = self._id(db, name)
            rows = [dict(row) for row in db.execute("SELECT * FROM members WHERE collection_id = ?", (collection,))]
        ids = self.index.known([row["paper_id"] for row in rows if row["paper_id"]])
        outside = [row for row in rows if row["paper_id"] is None]
        current = self._vector_key()
        stale = [row for row in outside if row["vector_key"] != current]
        if stale:
            for row, vector in zip(stale, self.index.embed_texts([member_text(row) for row in stale]), strict=True):
                row["vector"] = as_blob(vector)
            with self.database.connect(write=True) as db:
                db.executemany(
                    "UPDATE members SET vector = ?, vector_key = ? WHERE collection_id = ? AND key = ?",
                    [(row["vector"], current, collection, row["key"]) for row in stale],
                )
        vectors = [from_blob(row["vector"]) for row in outside]
        dimension = self.index.vectors.shape[1]
        return ids, np.stack(vectors) if vectors else np.zeros((0, dimension), np.float32)

    def recommend(self, name: str, avoid: str | None = None, k: int = 20, new: bool = False, since=None, within=None):
        """Papers like the collection ``name`` (its members excluded), and unlike the collection
        ``avoid``, as a results DataFrame (the columns of ``similar``). ``new``: only papers that
        came into the index since the collection was last shown (or since ``since``), which then
        counts as shown; ``within``: only the papers of this mask (``PaperIndex.where``)."""
        ids, vectors = self._steering(name)
        if not ids and not len(vectors):
            nothing = Ranking(np.zeros(0, np.int64), {"score": np.zeros(0, np.float32)})
            note = f"the collection '{name}' has no member in this index to recommend from; add papers to it"
            return self.index.frame(dataclasses.replace(nothing, note=note))
        avoid_ids, avoid_vectors = self._steering(avoid) if avoid else ([], None)
        if new or since is not None:
            fresh = self.index.where(added_since=since if since is not None else self._shown(name))
            within = fresh if within is None else within & fresh
        found = self.index.recommend(
            ids, negative=avoid_ids, k=k, within=within, positive_vectors=vectors, negative_vectors=avoid_vectors
        )
        if new:
            self._mark_shown(name)
        return found

    def _shown(self, name: str) -> str:
        with self.database.connect() as db:
            row = db.execute("SELECT shown, created FROM collections WHERE id = ?", (self._id(db, name),)).fetchone()
        return row["shown"] or row["created"]

    def _mark_shown(self, name: str) -> None:
        with self.database.connect(write=True) as db:
            db.execute("UPDATE collections SET shown = ? WHERE id = ?", (database.now(), self._id(db, name)))

    def digest(self, k: int = 5) -> list[dict]:
        """Each collection's top ``k`` new papers (come into the index since it was last shown),
        which then count as shown: a list of {name, since, papers (a results DataFrame)}."""
        found = []
        for name in self.names():
            since = self._shown(name)
            found.append({"name": name, "since": since, "papers": self.recommend(name, k=k, new=True)})
        return found
