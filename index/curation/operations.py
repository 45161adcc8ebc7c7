"""The corrections to the topics as typed operations, and the log's entries read as them.

Each operation records the papers of the topic(s) it was made on, as they were then (after the
operations before it), and acts on the topic of its level whose papers overlap those most
(:func:`paperscope.index.curation.rules.apply`). An entry of the log is JSON
(:mod:`paperscope.index.store.curations`); :func:`read` types it, :func:`record` writes it back.
An entry that cannot be typed is :class:`Unreadable`: reported, never applied.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from paperscope.errors import UserError, shown
from paperscope.limits import MAX_NAME_CHARS
from paperscope.settings import LEVELS

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = {"fine": ("cluster", "cluster_name"), "coarse": ("coarse_cluster", "coarse_name")}


@dataclass(frozen=True)
class Rename:
    """Rename the topic ``topic`` (its name then; ``members``: its papers' ids then) to ``name``."""

    level: str
    members: tuple[str, ...]
    name: str
    topic: str | None = None
    made: str | None = None
    op: ClassVar[str] = "rename"

    def describe(self) -> str:
        """What it does, in a few words."""
        return f"rename {self.level} topic '{self.topic}' to '{self.name}'"


@dataclass(frozen=True)
class Merge:
    """Merge the topic ``other`` (``other_members``) into ``topic`` (``members``), named ``name``
    (None: as ``topic``)."""

    level: str
    members: tuple[str, ...]
    other_members: tuple[str, ...]
    topic: str | None = None
    other: str | None = None
    name: str | None = None
    made: str | None = None
    op: ClassVar[str] = "merge"

    def describe(self) -> str:
        """What it does, in a few words."""
        named = f" as '{self.name}'" if self.name else ""
        return f"merge {self.level} topic '{self.other}' into '{self.topic}'{named}"


@dataclass(frozen=True)
class Split:
    """Split the topic ``topic`` (``members``) into ``k`` by its papers' vectors; once recorded,
    ``parts`` (each part's ids, so that it splits the same way again) and the parts' ``names``
    (None: "X (part i)") and ``terms``."""

    level: str
    members: tuple[str, ...]
    k: int
    topic: str | None = None
    parts: tuple[tuple[str, ...], ...] | None = None
    names: tuple[str | None, ...] | None = None
    terms: tuple[tuple[str, ...], ...] | None = None
    made: str | None = None
    op: ClassVar[str] = "split"

    def describe(self) -> str:
        """What it does, in a few words."""
        return f"split {self.level} topic '{self.topic}' into {self.k}"


@dataclass(frozen=True)
class Move:
    """Move the papers ``papers`` (ids) into the topic ``topic`` (``members``: its papers then)."""

    level: str
    papers: tuple[str, ...]
    members: tuple[str, ...]
    topic: str | None = None
    made: str | None = None
    op: ClassVar[str] = "move"

    def describe(self) -> str:
        """What it does, in a few words."""
        count = len(self.papers or ())
        return f"move {count} {'paper' if count == 1 else 'papers'} to {self.level} topic '{self.topic}'"


Operation = Rename | Merge | Split | Move
KINDS: dict[str, type[Operation]] = {kind.op: kind for kind in (Rename, Merge, Split, Move)}


@dataclass(frozen=True)
class Unreadable:
    """An entry of the log that is no operation: what it seems to do, and why it cannot be applied."""

    description: str
    reason: str
    level: str | None = None
    op: str | None = None  # the operation it names, as written
    made: str | None = None

    def describe(self) -> str:
        """What it seems to do, in a few words."""
        return self.description


Entry = Operation | Unreadable  # an entry of the log, as read


def _ids(value) -> tuple[str, ...]:
    return tuple(str(paper_id) for paper_id in value)


def _nested(value) -> tuple[tuple[str, ...], ...]:
    return tuple(_ids(part) for part in value)


def _names(value) -> tuple[str | None, ...]:
    return tuple(None if name is None else str(name) for name in value)


def _same(value):
    return value


# How each field of an entry is read from JSON (the others are taken as they are).
_READ: dict[str, Callable[[Any], Any]] = {
    "members": _ids, "other_members": _ids, "papers": _ids, "parts": _nested, "terms": _nested, "names": _names,
    "k": int,
}  # fmt: skip


def read(entry) -> Entry:
    """The operation an entry of the log (JSON) records, or :class:`Unreadable` saying why none."""
    if not isinstance(entry, dict):
        return Unreadable("not an entry", "the entry is malformed (not a JSON object)")
    kind, level, op, made = KINDS.get(str(entry.get("op"))), entry.get("level"), entry.get("op"), entry.get("made")
    if kind is None or level not in LEVELS:
        what = f"unknown operation {op!r}" if kind is None else f"{op} at level {level!r}"
        return Unreadable(what, f"level {level!r} or operation {op!r} unknown (the entry is malformed)", None, op, made)
    fields = dataclasses.fields(kind)
    written: dict[str, Any] = {field.name: entry.get(field.name) for field in fields}
    sketch = kind(**written)  # as written, for its description
    needed = [field.name for field in fields if field.default is dataclasses.MISSING and field.name not in entry]
    if needed:
        return Unreadable(sketch.describe(), f"the entry is malformed (it has no '{needed[0]}')", level, op, made)
    try:
        return kind(**{field.name: _READ.get(field.name, _same)(entry[field.name]) for field in fields
                       if entry.get(field.name) is not None})  # fmt: skip
    except (TypeError, ValueError) as exc:
        return Unreadable(sketch.describe(), f"the entry is malformed ({shown(str(exc), 80)})", level, op, made)


def record(operation: Operation) -> dict:
    """The entry of the log (JSON) that records ``operation`` (its fields that are set; tuples as lists)."""
    entry: dict = {"op": operation.op}
    for field in dataclasses.fields(operation):
        value = getattr(operation, field.name)
        if value is not None:
            entry[field.name] = _json(value)
    return entry


def _json(value):
    return [_json(item) for item in value] if isinstance(value, tuple) else value


# --- making them -----------------------------------------------------------------------------


def now() -> str:
    """The time an operation is made, as the log keeps it (UTC, ISO 8601, seconds)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def clean_name(name) -> str:
    """A topic name as given, on one line; an empty or overlong one is a UserError."""
    text = " ".join(str(name).split())
    if not text:
        raise UserError("a topic name needs at least one printable character")
    if len(text) > MAX_NAME_CHARS:
        raise UserError(f"a topic name is at most {MAX_NAME_CHARS} characters, got {len(text)}")
    return text


def members(papers: pa.Table, level: str, topic: int) -> tuple[str, ...]:
    """The ids of the papers of ``topic`` (a number of ``level``) in the papers' table ``papers``."""
    labels = papers.column(COLUMNS[level][0]).to_numpy()
    return tuple(papers.column("id").take(pa.array(np.flatnonzero(labels == topic))).to_pylist())


def _name_of(topics: pd.DataFrame, topic: int) -> str:
    return str(topics.loc[topics["cluster"] == topic, "name"].iloc[0])


def rename(papers: pa.Table, topics: pd.DataFrame, level: str, topic: int, name) -> Rename:
    """The operation renaming ``topic`` (a number of ``level``; ``topics``: that level's table)."""
    return Rename(level, members(papers, level, topic), clean_name(name), topic=_name_of(topics, topic), made=now())


def merge(papers: pa.Table, topics: pd.DataFrame, level: str, pair: tuple[int, int], name=None) -> Merge:
    """The operation merging the topic ``pair[1]`` into ``pair[0]`` (named ``name``, else as A)."""
    a, b = pair
    if a == b:
        raise UserError("merge needs two different topics")
    name = None if name is None else clean_name(name)
    return Merge(level, members(papers, level, a), members(papers, level, b), topic=_name_of(topics, a),
                 other=_name_of(topics, b), name=name, made=now())  # fmt: skip


def split(papers: pa.Table, topics: pd.DataFrame, level: str, topic: int, k) -> Split:
    """The operation splitting ``topic`` into ``k`` (at least 2) topics by its papers' vectors."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 2:
        raise UserError(f"k must be a whole number of at least 2, got {shown(repr(k))}")
    return Split(level, members(papers, level, topic), int(k), topic=_name_of(topics, topic), made=now())


def move(papers: pa.Table, topics: pd.DataFrame, level: str, paper_ids: list[str], topic: int) -> Move:
    """The operation moving the papers ``paper_ids`` (ids of the index) into ``topic``."""
    paper_ids = list(dict.fromkeys(str(paper_id).strip() for paper_id in paper_ids))
    if not paper_ids:
        raise UserError("give at least one paper id to move")
    inside = set(members(papers, level, topic))
    if inside.issuperset(paper_ids):
        raise UserError(f"{'that paper is' if len(paper_ids) == 1 else 'those papers are'} already in {level} "
                        f"topic {topic} ('{_name_of(topics, topic)}')")  # fmt: skip
    return Move(level, tuple(paper_ids), tuple(sorted(inside)), topic=_name_of(topics, topic), made=now())
