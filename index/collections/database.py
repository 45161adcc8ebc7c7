"""Collections on disk: one SQLite file per data folder (``$PAPERSCOPE_HOME/collections.sqlite``).

Named sets of papers, each tied to an index folder, kept outside the index's generations so that
they survive rebuilds and ``paperscope add``: members are kept by paper id (a paper gone from the
index is shown as missing, never dropped), and library entries that match no corpus paper are
kept whole ("outside" members, with their text and vector) so that they still steer
recommendations.

WAL journal, a 5-second busy wait, every write in one ``BEGIN IMMEDIATE`` transaction and
parameterised SQL only: two app sessions adding to one collection at once both land. A damaged or
locked file is a one-line UserError naming it; no index is touched either way.
"""

from __future__ import annotations

import datetime
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from paperscope import locations
from paperscope.errors import UserError

FILE_NAME = "collections.sqlite"
BUSY_SECONDS = 5.0
# 1: the first release (no user_version); 2: collections tied to the index's identity (the
# indexes table), members keep their library entry as imported (members.entry); 3: papers dismissed
# from a collection's recommendations ("not interested": the dismissed table); 4: saved searches (the watches table)
SCHEMA_VERSION = 4
SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id INTEGER PRIMARY KEY,
    index_key TEXT NOT NULL,          -- the identity of the index it belongs to (its IDENTITY file)
    name TEXT NOT NULL,
    created TEXT NOT NULL,
    shown TEXT,                       -- when its new papers were last marked shown: the feed starts there
    UNIQUE (index_key, name)
);
CREATE TABLE IF NOT EXISTS members (
    collection_id INTEGER NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    key TEXT NOT NULL,                -- the paper's id in the index, or "outside:<hash>"
    paper_id TEXT,                    -- NULL for an outside member
    matched_by TEXT NOT NULL,         -- id, doi, arxiv, title or outside
    title TEXT, abstract TEXT, doi TEXT, arxiv_id TEXT, year INTEGER, authors TEXT, venue TEXT, url TEXT,
    source TEXT,                      -- where the entry came from ("refs.bib:12"), if from a file
    vector BLOB,                      -- an outside member's float32 vector (NULL: not embedded yet) ...
    vector_key TEXT,                  -- ... and the model it was embedded with
    added TEXT NOT NULL,
    entry TEXT,                       -- the library entry as imported (JSON: BibTeX, RIS or CSL-JSON), if any
    PRIMARY KEY (collection_id, key)
);
CREATE TABLE IF NOT EXISTS indexes (
    identity TEXT PRIMARY KEY,        -- an index's identity
    path TEXT NOT NULL,               -- the folder it was last opened from
    seen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dismissed (
    collection_id INTEGER NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    paper_id TEXT NOT NULL,           -- a paper of the index, never to be recommended for it again (until undone)
    dismissed TEXT NOT NULL,          -- when
    PRIMARY KEY (collection_id, paper_id)
);
CREATE TABLE IF NOT EXISTS watches (
    id INTEGER PRIMARY KEY,
    index_key TEXT NOT NULL,          -- the identity of the index it belongs to, as a collection's
    name TEXT NOT NULL,
    query TEXT NOT NULL,              -- free text, or paper ids separated by spaces
    kind TEXT NOT NULL,               -- "text" or "ids"
    threshold REAL NOT NULL,          -- the cosine with the query a match has at least
    created TEXT NOT NULL,
    shown TEXT,                       -- when its new matches were last marked shown: they start there
    UNIQUE (index_key, name)
);
"""
# What upgrades a file of each earlier version to the next, in one transaction
# (a new table needs no statement: the schema's CREATE TABLE IF NOT EXISTS makes it after them)
UPGRADES = {1: ["ALTER TABLE members ADD COLUMN entry TEXT"], 2: [], 3: []}
MEMBER_FIELDS = ("title", "abstract", "doi", "arxiv_id", "year", "authors", "venue", "url", "source")


def now() -> str:
    """The current UTC time as the database keeps it (ISO 8601, milliseconds)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def default_path() -> Path:
    """The collections file of the data folder."""
    return locations.data_home() / FILE_NAME


class Database:
    """The collections file at ``path``; opened (and created) on first use."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    def _problem(self, exc: sqlite3.Error) -> UserError:
        message = str(exc)
        if "locked" in message or "busy" in message:
            return UserError(
                f"{self.path}: locked by another paperscope for over {BUSY_SECONDS:.0f} s; try again when it is done"
            )
        return UserError(
            f"{self.path}: not a readable collections database ({message}); move it away to start a new one"
        )

    def _upgrade(self, connection: sqlite3.Connection) -> None:
        """Bring the file to ``SCHEMA_VERSION`` in place (one transaction; nothing is dropped)."""
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{self.path}: written by a newer paperscope (collections version {version}, this one reads "
                f"up to {SCHEMA_VERSION}); upgrade paperscope"
            )
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]  # another process may have upgraded
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and "members" in tables:
                version = 1  # the first release's file
            for step in range(max(version, 1), SCHEMA_VERSION) if "members" in tables else ():
                for statement in UPGRADES[step]:
                    connection.execute(statement)
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    @contextmanager
    def connect(self, write: bool = False):
        """A connection in one transaction (``write``: taken at once, so concurrent writers queue);
        committed when the block ends, rolled back on error. SQLite errors become UserErrors. A
        file of an earlier version is upgraded first."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise UserError(f"{self.path}: cannot open the collections database ({exc})") from None
        try:
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode = WAL")
            self._upgrade(connection)
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._problem(exc) from None
        finally:
            connection.close()
