"""Saved searches ("watches"): a query kept with the collections of an index, whose new matches
the digest lists.

A watch is free text or a list of paper ids of the index, a threshold (the cosine with the query
a match has at least) and when its new matches were last marked shown. Kept in the collections'
SQLite file (:mod:`.database`, the watches table), tied to the index's identity as collections
are; what matches is the front's (:meth:`paperscope.index.collections_group.CollectionsGroup.matches`).
"""

from __future__ import annotations

import difflib
import re
import shlex
import unicodedata
from typing import TYPE_CHECKING

from paperscope.errors import Contradiction, NotFound, UserError
from paperscope.index.collections import database
from paperscope.index.collections.collections import check_name
from paperscope.limits import MAX_QUERY_CHARS, WATCH_THRESHOLD
from paperscope.locations import index_option

if TYPE_CHECKING:  # the listing's; the app's pages list the saved searches by name, without pandas
    import pandas as pd

# Words that are paper ids wherever they appear, never text: arXiv ids (new and old style, with a version or
# not), OpenAlex work ids, DOIs. A query of only such words is a list of ids even when the index lacks some.
ID_LIKE = re.compile(r"\d{4}\.\d{4,5}(v\d+)?|[a-z][a-z.-]*/\d{7}(v\d+)?|W\d{4,}|10\.\d{4,9}/\S+", re.IGNORECASE)
NAME_CHARS = 40  # a name made from the query: its first words, up to this many characters
LISTED = ["name", "kind", "query", "threshold", "created", "shown"]


def _short(query: str, kind: str) -> str:
    """A name made from the query: its first words up to ``NAME_CHARS`` (ids: the first and how many more)."""
    words = query.split()
    if kind == "ids":
        return words[0] + (f" +{len(words) - 1}" if len(words) > 1 else "")
    name = ""
    for word in words:
        if len(name) + len(word) + 1 > NAME_CHARS:
            return (name or word[:NAME_CHARS]) + "…"
        name = f"{name} {word}".strip()
    return name


class Watches:
    """The saved searches of the index whose collections are ``owner``
    (:class:`~paperscope.index.collections.collections.Collections`): kept in its database, under
    its identity."""

    def __init__(self, owner):
        self._owner = owner

    def _kind(self, query: str) -> tuple[str, str]:
        """The query's kind and its stored form: "ids" (one space between) when every word is a
        paper id of the index, else "text"; a query of which some words are paper ids and others
        are not, or of words that can only be ids (``ID_LIKE``) the index lacks, is an error naming
        the first unknown one (a typo in an id list, or another index's ids)."""
        words = list(dict.fromkeys(query.split()))  # an id given twice counts once
        papers = self._owner.parts.papers
        known = papers.known(words)
        if words and len(known) == len(words):
            return "ids", " ".join(words)
        if known or all(ID_LIKE.fullmatch(word) for word in words):
            papers.rows(words)  # a UserError naming the first unknown id and close ones
        return "text", " ".join(query.split())

    def add(self, query: str, name: str | None = None, threshold: float | None = None) -> dict:
        """Save the search ``query`` (free text, or paper ids of the index separated by spaces) as
        ``name`` (default: a short form of the query) with ``threshold`` (default
        ``WATCH_THRESHOLD``); a name the index has already is an error. Returns it as :meth:`get` does."""
        if not isinstance(query, str) or not query.strip():
            raise UserError("a saved search needs a query: free text, or paper ids of the index")
        if len(query) > MAX_QUERY_CHARS:
            raise UserError(
                f"a saved search's query has at most {MAX_QUERY_CHARS:,} characters, this one {len(query):,}"
            )
        if any(unicodedata.category(char) in ("Cc", "Cs") for char in query):
            raise UserError(f"the query {query[:40]!r} holds control characters; give it on one line")
        threshold = WATCH_THRESHOLD if threshold is None else float(threshold)
        if not -1 < threshold <= 1:
            raise UserError(f"a saved search's threshold is a cosine in (-1, 1], got {threshold:g}")
        kind, stored = self._kind(query)
        name = check_name(name if name is not None else _short(stored, kind))
        with self._owner.database.connect(write=True) as db:
            if db.execute(
                "SELECT 1 FROM watches WHERE index_key = ? AND name = ?", (self._owner.index_key, name)
            ).fetchone():
                raise Contradiction(
                    f"a saved search named '{name}' exists already for {self._owner.parts.folder}; give another "
                    f"--name, or remove it first: paperscope watch remove {shlex.quote(name)}"
                    f"{index_option(self._owner.parts.folder)}"
                )
            db.execute(
                "INSERT INTO watches (index_key, name, query, kind, threshold, created) VALUES (?, ?, ?, ?, ?, ?)",
                (self._owner.index_key, name, stored, kind, threshold, database.now()),
            )
        return self.get(name)

    def _row(self, db, name: str):
        """The stored watch ``name``; an unknown name is a UserError suggesting close ones."""
        name = check_name(name)
        key = self._owner.index_key
        found = db.execute("SELECT * FROM watches WHERE index_key = ? AND name = ?", (key, name)).fetchone()
        if found is None:
            names = [row["name"] for row in db.execute("SELECT name FROM watches WHERE index_key = ?", (key,))]
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
            hint = (
                f"; did you mean {', '.join(close)}?" if close
                else f"; this index has {', '.join(names[:10])}" if names
                else f"; save one with: paperscope watch add TEXT --name NAME{index_option(self._owner.parts.folder)}"
            )  # fmt: skip
            raise NotFound(f"no saved search named '{name}' for {self._owner.parts.folder}{hint}")
        return found

    def get(self, name: str) -> dict:
        """The saved search ``name``: name, kind ("text" or "ids"), query, threshold, created,
        shown (when its new matches were last marked shown; None: never, they start at created)."""
        with self._owner.database.connect() as db:
            return {column: self._row(db, name)[column] for column in LISTED}

    def listing(self) -> pd.DataFrame:
        """One row per saved search of the index, by name: the columns of :meth:`get`."""
        import pandas as pd

        return pd.DataFrame(self.listing_records(), columns=LISTED)

    def listing_records(self) -> list[dict]:
        """:meth:`listing` as one dict per row (no DataFrame: the app counts them on every page)."""
        with self._owner.database.connect() as db:
            rows = db.execute(
                f"SELECT {', '.join(LISTED)} FROM watches WHERE index_key = ? ORDER BY name", (self._owner.index_key,)
            ).fetchall()
        return [dict(row) for row in rows]

    def names(self) -> list[str]:
        """The names of the index's saved searches, in alphabetical order."""
        return self.listing()["name"].tolist()

    def remove(self, name: str) -> None:
        """Forget the saved search ``name``."""
        with self._owner.database.connect(write=True) as db:
            db.execute("DELETE FROM watches WHERE id = ?", (self._row(db, name)["id"],))

    def shown(self, name: str) -> str:
        """When the new matches of ``name`` were last marked shown (at first: when it was saved)."""
        watch = self.get(name)
        return watch["shown"] or watch["created"]

    def mark_shown(self, names: list[str] | None = None) -> list[str]:
        """Mark the new matches of ``names`` (every saved search of the index when None) as shown
        now: the next digest starts there. Returns the names."""
        with self._owner.database.connect(write=True) as db:
            names = self.names() if names is None else [check_name(name) for name in names]
            for name in names:
                db.execute("UPDATE watches SET shown = ? WHERE id = ?", (database.now(), self._row(db, name)["id"]))
        return names
