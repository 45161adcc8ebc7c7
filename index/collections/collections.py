"""Your own library: named collections of papers of one index, their recommendations and a feed
of new papers like them.

``PaperIndex.collections`` gives the collections of that index (this module's
:class:`Collections`, handed the parts of the index it needs, with the front's recommendations
and digest added by :class:`paperscope.index.collections_group.CollectionsGroup`); the CLI
(``paperscope collection …``, ``recommend``, ``digest``), the app and the service use it. The
collections themselves live in the data folder's SQLite file (:mod:`.database`), tied to the
index's identity (its ``IDENTITY`` file, not its path), so they survive rebuilds and
``paperscope add`` and move with the folder. Every write is one transaction: an import, a
replacement of the members or a delete lands whole or not at all. Reading never changes anything:
the feed's papers count as shown only when :meth:`Collections.mark_shown` says so.
"""

from __future__ import annotations

import base64
import difflib
import json
import logging
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.columns import OPTIONAL_FIELDS
from paperscope.embed.text import counted
from paperscope.errors import Contradiction, UnknownCollection, UserError
from paperscope.index.collections import database
from paperscope.index.collections.database import MEMBER_FIELDS, Database
from paperscope.index.collections.entries import Member, as_text, key_and_type
from paperscope.index.collections.matching import (
    Matched,
    as_blob,
    from_blob,
    match_entries,
    member_text,
    outside_key,
)
from paperscope.index.common.papers import PaperTable
from paperscope.index.search.encoding import QueryEncoder
from paperscope.index.store.generations import identity, new_identity
from paperscope.index.store.manifest import Manifest
from paperscope.limits import MAX_NAME_CHARS
from paperscope.locations import cache_dir, index_option
from paperscope.progress import ProgressLines

if TYPE_CHECKING:  # the tables of a collection; the app's pages list the collections without pandas (0.35 s)
    import pandas as pd

logger = logging.getLogger(__name__)
EMBED_BATCH = 32  # outside entries embedded, their vectors committed and progress logged, this many at a time
STORED = ("key", "paper_id", "matched_by", *MEMBER_FIELDS, "vector", "vector_key", "added", "entry")
INSERT_MEMBER = (
    f"INSERT OR IGNORE INTO members (collection_id, {', '.join(STORED)}) VALUES ({', '.join('?' * (len(STORED) + 1))})"
)
LISTING_COLUMNS = ("name", "members", "in_index", "outside", "missing", "created", "shown")  # listing()'s
EXPORTED = ["id", "title", "year", "authors", "venue", "doi", "arxiv_id", "url", "abstract"]
MEMBER_COLUMNS = ["key", "citation_key", "id", "title", "matched_by", "in_index", "year", "authors", "venue", "doi",
                  "arxiv_id", "url"]  # fmt: skip
BACKUP_FORMAT, BACKUP_VERSION = "paperscope-collections", 1
WATCH_FIELDS = ("name", "query", "kind", "threshold", "created", "shown")  # a saved search as a backup keeps it
# (database, folder, identity) checked in this process → the folder whose collections it shares (a copy's)
_ATTACHED: dict[tuple[str, str, str], str | None] = {}


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


def _vector(text: str | None, size: int) -> bytes | None:
    """A backed-up vector (base64 float32) of ``size`` bytes, else None (embedded again when needed)."""
    blob = base64.b64decode(text, validate=True) if text else b""
    return blob if len(blob) == size else None


def empty_note(name: str) -> str:
    """What an empty collection means, said the same way by the CLI, the service and the app."""
    return f"the collection '{name}' has no members in this index yet; add papers to it"


def citation_key(member: dict) -> str | None:
    """A stored member's own citation key (its entry's: BibTeX's key, RIS's ID, CSL's id), or None."""
    return (key_and_type(json.loads(member["entry"]))[0] or None) if member.get("entry") else None


def _same_entry(first: dict, second: dict) -> bool:
    """Whether two imported members are one entry: every field equal but the citation key (and
    the line), as :func:`outside_key` compares them; a member without an entry is the paper alone."""
    return not first.get("entry") or outside_key(first) == outside_key(second)


def _is_list(value) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


class Shown(TypedDict):
    """:meth:`Collections.show`: a collection's members and how its entries matched papers
    (``matched_by``: members matched each way), with the ids dismissed from its recommendations."""

    name: str
    index: str
    members: int
    in_index: int
    missing: int
    matched_by: dict[str, int]
    papers: pd.DataFrame
    dismissed: list[str]


@dataclass(frozen=True)
class IndexParts:
    """What collections need of an index: its folder (its identity is the collections' key), its
    papers' table, its manifest (the model an outside entry's vector depends on) and its query
    encoder (to embed outside entries as its papers were)."""

    folder: Path
    papers: PaperTable
    manifest: Manifest
    queries: QueryEncoder


class Collections:
    """The collections of one index (its ``parts``), kept in ``database`` (default: the data folder's)."""

    def __init__(self, parts: IndexParts, database_path: str | Path | None = None):
        self.parts = parts
        self.database = Database(database_path)
        self.shared_with: str | None = None  # a copy's original, whose collections it shares
        self.index_key = self._attach()  # the index's identity: the key of its collections

    @staticmethod
    def empty_note(name: str) -> str:
        """What an empty collection means: :func:`empty_note`."""
        return empty_note(name)

    def _attach(self) -> str:
        """The index's identity, with what the data folder knew of it brought up to date: a
        moved or renamed index keeps its collections (logged); a copy shares them with the folder
        it was copied from (logged each time it is opened, so that nobody is surprised); the
        collections of a file from before identities, tied to this folder's path, are its own."""
        folder = Path(self.parts.folder).resolve()
        key = identity(folder)
        memo = (str(self.database.path), str(folder), key)
        if memo in _ATTACHED:
            self.shared_with = _ATTACHED[memo]
            return key
        with self.database.connect() as db:
            known = db.execute("SELECT path FROM indexes WHERE identity = ?", (key,)).fetchone()
            legacy = (
                key != str(folder)
                and db.execute("SELECT 1 FROM collections WHERE index_key = ? LIMIT 1", (str(folder),)).fetchone()
            )
        moved = known is not None and known["path"] != str(folder)
        if moved and Path(known["path"]).is_dir() and identity(known["path"], create=False) == key:
            self.shared_with = known["path"]
            option = index_option(folder)
            logger.info(
                "%s is a copy of the index at %s: the two share their collections; to give this copy collections of "
                "its own: paperscope collection backup -o collections.json%s, then paperscope collection restore "
                "collections.json --into-index%s", folder, known["path"], option, option,
            )  # fmt: skip
        elif known is None or moved or legacy:
            if moved:
                logger.info("the index moved from %s to %s; its collections came with it", known["path"], folder)
            with self.database.connect(write=True) as db:
                db.execute(
                    "UPDATE collections SET index_key = ? WHERE index_key = ? AND name NOT IN"
                    " (SELECT name FROM collections WHERE index_key = ?)",
                    (key, str(folder), key),
                )
                db.execute(
                    "INSERT INTO indexes (identity, path, seen) VALUES (?, ?, ?) ON CONFLICT (identity)"
                    " DO UPDATE SET path = excluded.path, seen = excluded.seen",
                    (key, str(folder), database.now()),
                )
        _ATTACHED[memo] = self.shared_with
        return key

    def _say_shared(self) -> None:
        """Before a write to a copy's collections: say which index's collections it changes too."""
        if self.shared_with:
            logger.info(
                "this changes the collections of the index at %s too: %s is a copy and shares them",
                self.shared_with, self.parts.folder,
            )  # fmt: skip

    def _own_identity(self) -> None:
        """Give this index, a copy sharing the identity of the folder it was copied from, an
        identity of its own (registered, and said), so that what is written now is its own."""
        folder = Path(self.parts.folder).resolve()
        key = new_identity(folder)
        with self.database.connect(write=True) as db:
            db.execute(
                "INSERT INTO indexes (identity, path, seen) VALUES (?, ?, ?)", (key, str(folder), database.now())
            )
        logger.info(
            "%s had the identity of the index at %s, and so its collections; it has its own now",
            folder, self.shared_with,
        )  # fmt: skip
        _ATTACHED[(str(self.database.path), str(folder), key)] = None
        self.index_key, self.shared_with = key, None

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
                hint = f"; create one with: paperscope collection create NAME{index_option(self.parts.folder)}"
            raise UnknownCollection(f"no collection named '{name}' for {self.parts.folder}{hint}")
        return found["id"]

    def _rows(self, name: str) -> list[dict]:
        """The stored members of ``name``, in the order they were added."""
        with self.database.connect() as db:
            rows = db.execute(
                "SELECT * FROM members WHERE collection_id = ? ORDER BY added, rowid", (self._id(db, name),)
            ).fetchall()
        return [dict(row) for row in rows]

    def listing(self) -> pd.DataFrame:
        """One row per collection: name, members, in_index (members found in the index now),
        outside (library entries not in the corpus), missing (papers gone from the index),
        created, shown (when its new papers were last marked shown)."""
        import pandas as pd

        return pd.DataFrame(self.listing_records(), columns=list(LISTING_COLUMNS))

    def listing_records(self) -> list[dict]:
        """:meth:`listing` as one dict per row (no DataFrame: the app lists them on every page)."""
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
        present = set(self.parts.papers.known([i for ids in ids_of.values() for i in ids if i]))
        listing = []
        for row in collections:
            ids = ids_of[row["id"]]
            papers = [i for i in ids if i]
            in_index = sum(i in present for i in papers)
            listing.append({
                "name": row["name"], "members": len(ids), "in_index": in_index, "outside": len(ids) - len(papers),
                "missing": len(papers) - in_index, "created": row["created"], "shown": row["shown"],
            })  # fmt: skip
        return listing

    def members(self, name: str) -> pd.DataFrame:
        """The members of ``name``, in the order they were added: key, citation_key (the entry's
        own, None for a paper added by id), id (None for an outside entry), title (the index's for
        a paper in it), matched_by (id, doi, arxiv, title, outside), in_index, and what the entry
        said (year, authors, venue, doi, arxiv_id, url)."""
        import pandas as pd

        members = pd.DataFrame(self._rows(name))
        if members.empty:
            return pd.DataFrame(columns=MEMBER_COLUMNS)
        present = self.parts.papers.known([i for i in members["paper_id"] if isinstance(i, str)])
        titles = self.parts.papers.take(self.parts.papers.rows(present), ["title"]).column("title").to_pylist()
        title_of = dict(zip(present, titles, strict=True))
        members["in_index"] = [i in title_of for i in members["paper_id"]]
        members["title"] = [
            title_of.get(i, title) for i, title in zip(members["paper_id"], members["title"], strict=True)
        ]
        members["year"] = pd.to_numeric(members["year"], errors="coerce").astype("Int64")  # 2025, not 2025.0
        members["citation_key"] = [citation_key(row) for row in members.to_dict("records")]
        return members.rename(columns={"paper_id": "id"})[MEMBER_COLUMNS]

    def _own_columns(self) -> list[str]:
        """The corpus's own columns (beyond paperscope's fields), exported with each paper."""
        return [name for name in self.parts.papers.corpus_columns() if name not in OPTIONAL_FIELDS]

    def _known(self, rows: list[dict]) -> pd.DataFrame:
        """The index's metadata (``EXPORTED``, categories, the corpus's own columns) of the members
        of ``rows`` it holds, by id."""
        present = self.parts.papers.known([row["paper_id"] for row in rows if row["paper_id"]])
        wanted = [*EXPORTED, "categories", *self._own_columns()]
        wanted = [field for field in wanted if field in self.parts.papers.table.column_names]
        return self.parts.papers.take(self.parts.papers.rows(present), wanted).to_pandas().set_index("id")

    def papers(self, name: str) -> pd.DataFrame:
        """The members of ``name`` with what is known of each: the index's metadata for a paper in
        it, the entry's own fields for the others (id, title, year, authors, venue, doi, arxiv_id,
        url, abstract, the corpus's own columns, matched_by, in_index)."""
        import pandas as pd

        rows, own = self._rows(name), self._own_columns()
        from_index = self._known(rows)
        papers = []
        for member in rows:
            known = from_index.loc[member["paper_id"]].to_dict() if member["paper_id"] in from_index.index else {}
            paper = {field: known.get(field, member.get(field)) for field in EXPORTED if field != "id"}
            papers.append({"id": member["paper_id"] or member["key"], **paper, **{n: known.get(n) for n in own},
                           "matched_by": member["matched_by"], "in_index": bool(known)})  # fmt: skip
        frame = pd.DataFrame(papers, columns=[*EXPORTED, *own, "matched_by", "in_index"])
        frame["year"] = pd.to_numeric(frame["year"], errors="coerce").astype("Int64")  # 2025, not 2025.0
        return frame

    def export_text(self, name: str, fmt: str, prefer: str = "entry", corpus_fields: bool = False) -> str:
        """The collection ``name`` as a file's text: "bib", "ris" or "csl" (CSL-JSON) give each
        imported entry back with its own key, type and fields (the corpus fills what it lacks;
        ``prefer="corpus"``: the corpus's values replace the entry's; its own columns only with
        ``corpus_fields``), "csv" a row per member."""
        if fmt == "csv":
            papers = self.papers(name)
            for column in self._own_columns():  # lists as "a; b", dates as 2024-05-01
                papers[column] = papers[column].map(lambda value: "; ".join(value) if _is_list(value) else value)
            return papers.to_csv(index=False)
        rows, own = self._rows(name), self._own_columns()
        from_index = self._known(rows)
        members = []
        for row in rows:
            in_index = row["paper_id"] in from_index.index
            paper = from_index.loc[row["paper_id"]].to_dict() if in_index else {**row, "categories": None}
            paper["extra"] = {column: paper.pop(column) for column in own if column in paper}
            members.append(Member(json.loads(row["entry"]) if row["entry"] else None, paper, in_index))
        return as_text(members, fmt, prefer, corpus_fields)

    def export(self, name: str, path: str | Path, prefer: str = "entry", corpus_fields: bool = False) -> Path:
        """Write the collection ``name`` to ``path`` as BibTeX, RIS, CSL-JSON (.json) or CSV, by its
        suffix (see :meth:`export_text`), atomically."""
        from paperscope.files import atomic_path
        from paperscope.index.collections.entries import FORMATS

        path = Path(path)
        if path.suffix.lower() not in FORMATS:
            raise UserError(f"{path}: export as .bib, .ris, .json (CSL-JSON) or .csv, not '{path.suffix or 'none'}'")
        text = self.export_text(name, FORMATS[path.suffix.lower()], prefer, corpus_fields)
        with atomic_path(path) as temporary:
            temporary.write_text(text, encoding="utf-8")
        return path

    def show(self, name: str) -> Shown:
        """The collection ``name``: its members and how its entries matched corpus papers, and the
        ids of the papers dismissed from its recommendations."""
        members = self.members(name)
        ways = members["matched_by"].value_counts()
        return {
            "name": check_name(name),
            "index": str(self.parts.folder),
            "members": len(members),
            "in_index": int(members["in_index"].sum()),
            "missing": int(((~members["in_index"]) & members["id"].notna()).sum()),
            "matched_by": {way: int(ways.get(way, 0)) for way in ("id", "doi", "arxiv", "title", "outside")},
            "papers": members,
            "dismissed": self.dismissed(name),
        }

    # --- writing ----------------------------------------------------------------------------

    def create(
        self, name: str, ids: Sequence[str] = (), files: Sequence[str | Path] = (), embed: bool = True
    ) -> Matched:
        """A new collection ``name`` holding the papers ``ids`` and the entries of library
        ``files`` (BibTeX, RIS, CSL-JSON or any corpus file), matched to the index's papers; the
        entries outside the corpus embedded after (``embed``; else when recommendations need them)."""
        self._say_shared()
        name = check_name(name)
        matched = self._matched(ids, files)
        with self.database.connect(write=True) as db:
            exists = db.execute(
                "SELECT 1 FROM collections WHERE index_key = ? AND name = ?", (self.index_key, name)
            ).fetchone()
            if exists:
                raise UserError(f"a collection named '{name}' exists already for {self.parts.folder}; add to it")
            db.execute(
                "INSERT INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                (self.index_key, name, database.now(), database.now()),
            )
            self._insert(db, self._id(db, name), matched)
        if embed:
            self.embed_outside(name)
        return matched

    def add(
        self,
        name: str,
        ids: Sequence[str] = (),
        files: Sequence[str | Path] = (),
        create: bool = False,
        embed: bool = True,
    ) -> Matched:
        """Add papers (``ids``) and library ``files`` to ``name`` (made first when ``create``);
        members it holds already stay as they are (``Matched.present`` counts them)."""
        self._say_shared()
        matched = self._matched(ids, files)
        with self.database.connect(write=True) as db:
            if create:
                db.execute(
                    "INSERT OR IGNORE INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                    (self.index_key, check_name(name), database.now(), database.now()),
                )
            self._insert(db, self._id(db, name), matched)
        if embed:
            self.embed_outside(name)
        return matched

    def replace(self, name: str, keys: list[str]) -> None:
        """Make ``keys`` the members of ``name`` (created if new), in one transaction: paper ids of
        the index, or keys of outside members it holds now (kept with their entries and vectors).
        Every key is checked first: an unknown one changes nothing."""
        self._say_shared()
        name = check_name(name)
        keys = list(dict.fromkeys(str(key).strip() for key in keys))
        with self.database.connect(write=True) as db:
            found = db.execute(
                "SELECT id FROM collections WHERE index_key = ? AND name = ?", (self.index_key, name)
            ).fetchone()
            outside = set()
            if found is not None:
                rows = db.execute(
                    "SELECT key FROM members WHERE collection_id = ? AND (paper_id IS NULL OR key != paper_id)",
                    (found["id"],),
                )
                outside = {row["key"] for row in rows}
            papers = [key for key in keys if key not in outside]
            self.parts.papers.rows(papers)  # an unknown id is a UserError suggesting close ones, before any write
            if found is None:
                db.execute(
                    "INSERT INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                    (self.index_key, name, database.now(), database.now()),
                )
            collection = self._id(db, name)
            kept = f"AND key NOT IN ({', '.join('?' * len(keys))})" if keys else ""
            db.execute(f"DELETE FROM members WHERE collection_id = ? {kept}", (collection, *keys))
            self._insert(db, collection, Matched([{"key": i, "paper_id": i, "matched_by": "id"} for i in papers]))

    def remove(self, name: str, ids: list[str]) -> int:
        """Remove members (paper ids, or the keys of outside entries) from ``name`` in one
        transaction; how many went (ids that are not members are counted out, not an error)."""
        self._say_shared()
        with self.database.connect(write=True) as db:
            collection = self._id(db, name)
            removed = 0
            for key in dict.fromkeys(str(key).strip() for key in ids):
                removed += db.execute(
                    "DELETE FROM members WHERE collection_id = ? AND key = ?", (collection, key)
                ).rowcount
        return removed

    def dismiss(self, name: str, ids: str | list[str]) -> int:
        """Keep the papers ``ids`` (one id or a list) as dismissed from the recommendations of
        ``name`` ("not interested"): never recommended for it again, and steering its
        recommendations away, until :meth:`undismiss`. One transaction; an unknown id, or a member
        of the collection, changes nothing. Returns how many were not dismissed already."""
        self._say_shared()
        ids = list(dict.fromkeys(str(paper_id).strip() for paper_id in ([ids] if isinstance(ids, str) else ids)))
        if not ids:
            raise UserError("name at least one paper to dismiss")
        self.parts.papers.rows(ids)  # an unknown id is a UserError suggesting close ones, before any write
        with self.database.connect(write=True) as db:
            collection = self._id(db, name)
            marks = ", ".join("?" * len(ids))
            members = [
                row["key"]
                for row in db.execute(
                    f"SELECT key FROM members WHERE collection_id = ? AND key IN ({marks})", (collection, *ids)
                )
            ]
            if members:
                raise Contradiction(
                    f"'{members[0]}' is a member of '{check_name(name)}', not one of its recommendations; "
                    "remove it from the collection first"
                )
            held = db.execute(f"SELECT COUNT(*) FROM dismissed WHERE collection_id = ? AND paper_id IN ({marks})",
                              (collection, *ids)).fetchone()[0]  # fmt: skip
            db.executemany(
                "INSERT OR IGNORE INTO dismissed (collection_id, paper_id, dismissed) VALUES (?, ?, ?)",
                [(collection, paper_id, database.now()) for paper_id in ids],
            )
        return len(ids) - held

    def undismiss(self, name: str, ids: str | list[str]) -> int:
        """Bring papers dismissed from the recommendations of ``name`` back (one id or a list; one
        transaction); how many were dismissed (ids that were not are counted out, not an error)."""
        self._say_shared()
        unique = dict.fromkeys(str(paper_id).strip() for paper_id in ([ids] if isinstance(ids, str) else ids))
        with self.database.connect(write=True) as db:
            collection = self._id(db, name)
            return sum(
                db.execute("DELETE FROM dismissed WHERE collection_id = ? AND paper_id = ?", (collection, i)).rowcount
                for i in unique
            )

    def dismissed(self, name: str) -> list[str]:
        """The ids of the papers dismissed from the recommendations of ``name``, in the order they
        were dismissed (a paper gone from the index since is still listed)."""
        with self.database.connect() as db:
            rows = db.execute(
                "SELECT paper_id FROM dismissed WHERE collection_id = ? ORDER BY dismissed, rowid",
                (self._id(db, name),),
            )
            return [row["paper_id"] for row in rows]

    def delete(self, name: str) -> None:
        """Delete the collection ``name`` and its members (one transaction)."""
        self._say_shared()
        with self.database.connect(write=True) as db:
            db.execute("DELETE FROM collections WHERE id = ?", (self._id(db, name),))

    def _matched(self, ids, files) -> Matched:
        """Members from paper ids (each must be in the index) and from library files, each key
        once (``Matched.repeated`` counts the entries naming a member found before)."""
        from paperscope.embed.readers import read_records

        ids = [str(paper_id).strip() for paper_id in ids]
        self.parts.papers.rows(ids)  # an unknown id is a UserError suggesting close ones
        matched = Matched([{"key": i, "paper_id": i, "matched_by": "id"} for i in ids])
        entries = [record for path in files for record in read_records(path, keep_without_abstract=True)]
        if entries:
            columns = [
                column
                for column in ("id", "title", "doi", "arxiv_id")
                if column in self.parts.papers.table.column_names
            ]
            found = match_entries(self.parts.papers.frame(columns), entries)
            matched.members += found.members
            matched.unusable += found.unusable
        unique: dict[str, dict] = {}
        for member in matched.members:
            if member["key"] in unique and member.get("entry") and not _same_entry(unique[member["key"]], member):
                # another entry for the same paper (a preprint and its published version): a member of its own
                member = {**member, "key": f"{member['paper_id']}#{outside_key(member).removeprefix('outside:')}"}
            unique.setdefault(member["key"], member)
        matched.repeated = len(matched.members) - len(unique)
        matched.members = list(unique.values())
        return matched

    def _insert(self, db, collection: int, matched: Matched) -> None:
        """Insert the members of ``matched`` that are not in the collection yet (those that are go
        to ``matched.present``), outside ones without vectors (:meth:`embed_outside` adds them)."""
        rows = db.execute("SELECT key, paper_id, entry FROM members WHERE collection_id = ?", (collection,)).fetchall()
        held = {row["key"] for row in rows}
        # outside members kept under the keys of before entries were told apart by their content
        imported = [json.loads(row["entry"]) for row in rows if row["entry"] and not row["paper_id"]]
        held |= {outside_key({"entry": entry}) for entry in imported}
        matched.present = [member for member in matched.members if member["key"] in held]
        matched.members = [member for member in matched.members if member["key"] not in held]
        added = database.now()
        db.executemany(  # a paper dismissed from its recommendations and then added is a member, not dismissed
            "DELETE FROM dismissed WHERE collection_id = ? AND paper_id = ?",
            [(collection, member["paper_id"]) for member in matched.members if member["paper_id"]],
        )
        db.executemany(
            INSERT_MEMBER,
            [
                (
                    collection, member["key"], member["paper_id"], member["matched_by"],
                    *(member.get(name) for name in MEMBER_FIELDS), None, None, added,
                    json.dumps(member["entry"], ensure_ascii=False) if member.get("entry") else None,
                )
                for member in matched.members
            ],
        )  # fmt: skip

    def _vector_key(self) -> str:
        """What an outside member's vector depends on: the index's model and how it embeds texts."""
        model = self.parts.manifest.model
        return json.dumps([model.fingerprint, model.quantize, model.window, self.parts.manifest.long_text.strategy])

    def embed_outside(self, name: str | None = None) -> int:
        """Embed the outside members of ``name`` (every collection of the index when None) that
        have no vector for the index's model yet, ``EMBED_BATCH`` at a time, each batch's vectors
        committed at once: an interrupted run keeps what it embedded, the next goes on from there.
        A text embedded before with the index's model (another collection from the same file, the
        same file again, a paper's text) is taken from the embedding cache, by its content; what is
        embedded anew is added to it. Progress with the time left is logged. Returns how many got
        their vectors."""
        current = self._vector_key()
        with self.database.connect() as db:
            collections = [self._id(db, name)] if name is not None else [
                row["id"] for row in db.execute("SELECT id FROM collections WHERE index_key = ?", (self.index_key,))
            ]  # fmt: skip
            marks = ", ".join("?" * len(collections))
            pending = [
                dict(row)
                for row in db.execute(
                    f"SELECT collection_id, key, title, abstract FROM members WHERE paper_id IS NULL AND"
                    f" collection_id IN ({marks}) AND (vector IS NULL OR vector_key IS NOT ?)",
                    (*collections, current),
                )
            ]
        if not pending:
            return 0
        queries = self.parts.queries
        cache = EmbeddingCache(cache_dir(), queries.encoder.vector_key, queries.long_text)
        progress = ProgressLines(len(pending), "embedding entries outside the corpus", logger)
        if len(pending) > EMBED_BATCH:
            logger.info("embedding %d entries outside the corpus (kept as they are done)", len(pending))
        anew = 0
        try:
            for start in range(0, len(pending), EMBED_BATCH):
                batch = pending[start : start + EMBED_BATCH]
                texts = [member_text(row) for row in batch]
                vectors, fresh = encode_with_cache(queries.encoder, texts, queries.long_text, cache)
                anew += fresh
                with self.database.connect(write=True) as db:
                    db.executemany(
                        "UPDATE members SET vector = ?, vector_key = ? WHERE collection_id = ? AND key = ?",
                        [
                            (as_blob(v), current, row["collection_id"], row["key"])
                            for row, v in zip(batch, vectors, strict=True)
                        ],
                    )
                progress.advance(len(batch))
        finally:
            cache.flush()
        if anew < len(pending):
            logger.info("%d of %d entries outside the corpus taken from the embedding cache (embedded before)",
                        len(pending) - anew, len(pending))  # fmt: skip
        return len(pending)

    # --- recommendations and the feed --------------------------------------------------------

    def steering(self, name: str) -> tuple[list[str], np.ndarray]:
        """What steers recommendations from ``name``: its papers in the index, and the vectors of
        its outside entries (embedded first where missing, or made with another model)."""
        _, ids, vectors = self._steering(name)
        return ids, vectors

    def _steering(self, name: str) -> tuple[list[dict], list[str], np.ndarray]:
        """:meth:`steering`, with the stored members it was read from (:meth:`_rows`)."""
        self.embed_outside(name)
        rows = self._rows(name)
        ids = self.parts.papers.known(list(dict.fromkeys(row["paper_id"] for row in rows if row["paper_id"])))
        vectors = [from_blob(row["vector"]) for row in rows if row["paper_id"] is None and row["vector"]]
        dimension = self.parts.manifest.dimension
        return rows, ids, np.stack(vectors) if vectors else np.zeros((0, dimension), np.float32)

    def steering_away(self, name: str) -> list[str]:
        """The papers dismissed from the recommendations of ``name`` that the index holds: they
        steer its recommendations away and are never among them."""
        return self.parts.papers.known(self.dismissed(name))

    def shown(self, name: str) -> str:
        """When the new papers of ``name`` were last marked shown (at first: when it was created)."""
        with self.database.connect() as db:
            row = db.execute("SELECT shown, created FROM collections WHERE id = ?", (self._id(db, name),)).fetchone()
        return row["shown"] or row["created"]

    def mark_shown(self, names: list[str] | None = None) -> list[str]:
        """Mark the new papers of ``names`` (every collection when None) as shown now: the next
        ``--new`` and digest start there. Returns the names."""
        self._say_shared()
        with self.database.connect(write=True) as db:
            names = self.names() if names is None else [check_name(name) for name in names]
            for name in names:
                db.execute("UPDATE collections SET shown = ? WHERE id = ?", (database.now(), self._id(db, name)))
        return names

    # --- backup and restore ------------------------------------------------------------------

    def backup(self) -> dict:
        """Every collection of the data folder (of every index), as one JSON value: names, times,
        members with their entries and vectors (base64 float32), the papers dismissed from its
        recommendations; and every saved search ("watches"). :meth:`restore` reads it back."""
        with self.database.connect() as db:
            paths = {row["identity"]: row["path"] for row in db.execute("SELECT identity, path FROM indexes")}
            collections = [dict(row) for row in db.execute("SELECT * FROM collections ORDER BY index_key, name")]
            members = [dict(row) for row in db.execute("SELECT * FROM members ORDER BY added, rowid")]
            dismissed = [dict(row) for row in db.execute("SELECT * FROM dismissed ORDER BY dismissed, rowid")]
            watches = [dict(row) for row in db.execute("SELECT * FROM watches ORDER BY index_key, name")]
        of: dict[int, list] = {}
        away: dict[int, list] = {}
        for row in dismissed:
            away.setdefault(row.pop("collection_id"), []).append(row)
        for member in members:
            member["vector"] = base64.b64encode(member["vector"]).decode() if member["vector"] else None
            member["entry"] = json.loads(member["entry"]) if member["entry"] else None
            of.setdefault(member.pop("collection_id"), []).append(member)
        return {
            "format": BACKUP_FORMAT, "version": BACKUP_VERSION, "written": database.now(),
            "collections": [
                {"index": row["index_key"], "index_path": paths.get(row["index_key"]), "name": row["name"],
                 "created": row["created"], "shown": row["shown"], "members": of.get(row["id"], []),
                 "dismissed": away.get(row["id"], [])}
                for row in collections
            ],
            "watches": [
                {"index": row["index_key"], "index_path": paths.get(row["index_key"]),
                 **{field: row[field] for field in WATCH_FIELDS}}
                for row in watches
            ],
        }  # fmt: skip

    def restore(self, backup: dict, source: str, into_this_index: bool = False) -> list[str]:
        """Read a :meth:`backup` back (``source`` names it in errors), in one transaction: each
        collection to the index it was kept for (the same identity), or with ``into_this_index``
        all of them to this index; a copy sharing the identity of the folder it was copied from
        gets an identity of its own first, and the collections of that identity only. A
        collection that exists already is an error; nothing changes."""
        if not isinstance(backup, dict) or backup.get("format") != BACKUP_FORMAT:
            raise UserError(f'{source}: not a paperscope collections backup (no "format": "{BACKUP_FORMAT}")')
        if backup.get("version") != BACKUP_VERSION:
            raise UserError(
                f"{source}: a backup of version {backup.get('version')!r}; this paperscope reads {BACKUP_VERSION}"
            )
        collections = backup.get("collections") or []
        if into_this_index and self.shared_with:  # a copy: its own identity, and the original's collections
            shared = self.index_key
            collections = [c for c in collections if isinstance(c, dict) and str(c.get("index")) == shared]
            backup = {**backup, "watches": [w for w in backup.get("watches") or [] if w.get("index") == shared]}
            self._own_identity()
        restored, size = (
            [],
            4 * self.parts.manifest.dimension,
        )  # a vector of another size: embedded again when needed
        with self.database.connect(write=True) as db:
            for number, collection in enumerate(collections, start=1):
                try:
                    key = self.index_key if into_this_index else str(collection["index"])
                    name = check_name(collection["name"])
                    members = collection["members"]
                    rows = [
                        (*(member.get(field) for field in STORED[:-4]),
                         _vector(member.get("vector"), size),
                         member.get("vector_key"), member.get("added") or database.now(),
                         json.dumps(member["entry"], ensure_ascii=False) if member.get("entry") else None)
                        for member in members
                    ]  # fmt: skip
                    away = [(str(row["paper_id"]), row.get("dismissed") or database.now())
                            for row in collection.get("dismissed") or []]  # fmt: skip
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise UserError(
                        f"{source}: collection {number} is incomplete ({type(exc).__name__}: {exc})"
                    ) from None
                if db.execute("SELECT 1 FROM collections WHERE index_key = ? AND name = ?", (key, name)).fetchone():
                    raise UserError(
                        f"{source}: the collection '{name}' exists already here; delete it or rename it first"
                    )
                cursor = db.execute(
                    "INSERT INTO collections (index_key, name, created, shown) VALUES (?, ?, ?, ?)",
                    (key, name, collection.get("created") or database.now(), collection.get("shown")),
                )
                db.executemany(INSERT_MEMBER, [(cursor.lastrowid, *row) for row in rows])
                db.executemany(
                    "INSERT OR IGNORE INTO dismissed (collection_id, paper_id, dismissed) VALUES (?, ?, ?)",
                    [(cursor.lastrowid, *row) for row in away],
                )
                restored.append(name)
            self._restore_watches(db, backup.get("watches") or [], source, into_this_index)
        return restored

    def _restore_watches(self, db, watches: list, source: str, into_this_index: bool) -> None:
        """The saved searches of a :meth:`backup`, in ``restore``'s transaction (``db``): each to
        the index it was kept for, or all to this one; a name the index has already is an error."""
        for number, watch in enumerate(watches, start=1):
            try:
                key = self.index_key if into_this_index else str(watch["index"])
                if watch["kind"] not in ("text", "ids") or not str(watch["query"]).strip():
                    raise ValueError(f"kind {watch['kind']!r}, query {watch['query']!r}")
                row = (key, check_name(watch["name"]), str(watch["query"]), watch["kind"], float(watch["threshold"]),
                       str(watch["created"]), watch.get("shown"))  # fmt: skip
            except (KeyError, TypeError, ValueError) as exc:
                raise UserError(
                    f"{source}: saved search {number} is incomplete ({type(exc).__name__}: {exc})"
                ) from None
            if db.execute("SELECT 1 FROM watches WHERE index_key = ? AND name = ?", row[:2]).fetchone():
                raise UserError(f"{source}: the saved search '{row[1]}' exists already here; remove it first")
            db.execute(
                f"INSERT INTO watches (index_key, {', '.join(WATCH_FIELDS)}) VALUES (?{', ?' * len(WATCH_FIELDS)})", row
            )
        if watches:
            logger.info("restored %s", counted(len(watches), "saved search", "saved searches"))
