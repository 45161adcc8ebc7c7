"""The rules that apply the operations of a log, in order, in memory, over each paper's topic
columns and the topic tables (the generation on disk never changes), and the recording of a new one.

An operation acts on the topic of its level whose papers overlap the recorded ones most, when
their Jaccard index is at least ``MATCH_JACCARD``: so the log survives ``paperscope add`` and a
rebuild into the same folder. One that matches no topic any more is reported in a sentence, never
applied. This runs on every load of a curated index: it imports no build code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.errors import UserError, shown
from paperscope.index.curation import operations
from paperscope.index.curation.labels import Skipped, TopicState, centroid, match, topic_state
from paperscope.index.curation.operations import COLUMNS, Entry, Merge, Move, Operation, Rename, Split, clean_name
from paperscope.index.curation.splits import split
from paperscope.index.curation.tables import table, with_topics
from paperscope.index.store import curations

MAX_TERMS = 4  # a merged topic's terms: its own, then the other's, at most this many


@dataclass(frozen=True)
class Outcome:
    """What became of one operation: applied (and the topics it made or changed), or why not."""

    applied: bool
    topics: list[int] = field(default_factory=list)
    reason: str | None = None  # why it was not applied
    note: str | None = None  # the sentence reporting it


@dataclass(frozen=True)
class Curated:
    """An index's topics with its curations applied: the papers' table (topic columns replaced),
    the topic tables by level, what became of each operation, and the report of those not applied."""

    papers: pa.Table
    topics: dict[str, pd.DataFrame]
    outcomes: list[Outcome]
    labels: dict[str, np.ndarray]

    @property
    def report(self) -> list[str]:
        """One sentence for each operation not applied."""
        return [outcome.note or "" for outcome in self.outcomes if not outcome.applied]

    def members(self, level: str, topic: int) -> tuple[str, ...]:
        """The ids of the papers of ``topic`` of ``level``."""
        rows = pa.array(np.flatnonzero(self.labels[level] == topic))
        return tuple(self.papers.column("id").take(rows).to_pylist())


def apply(entries: list[Entry], papers: pa.Table, topics: dict[str, pd.DataFrame], vectors: np.ndarray) -> Curated:
    """The index's papers' table and topic tables (``topics``: by level, as built) with the
    operations ``entries`` applied in order (see the module docstring); ``vectors``: the papers' vectors."""
    state = topic_state(papers, topics)
    built = {level: labels.copy() for level, labels in state.labels.items()}
    ids = pd.Index(papers.column("id").to_numpy(zero_copy_only=False))
    outcomes = []
    for number, entry in enumerate(entries, 1):
        try:
            outcomes.append(Outcome(True, _apply_one(entry, state, ids, vectors)))
        except Skipped as skipped:
            what = f"curation {number} ({shown(entry.describe(), 120)})"
            note = (f"{what} matches no {entry.level} topic any more: {skipped.reason}; it is not applied"
                    if skipped.unmatched else f"{what} is not applied: {skipped.reason}")  # fmt: skip
            outcomes.append(Outcome(False, reason=skipped.reason, note=note))
    if not any(outcome.applied for outcome in outcomes):
        return Curated(papers, topics, outcomes, built)
    tables = {level: table(level, topics[level], state, built[level], papers, vectors) for level in COLUMNS}
    return Curated(with_topics(papers, state, tables), tables, outcomes, state.labels)


def _apply_one(entry: Entry, state: TopicState, ids: pd.Index, vectors: np.ndarray) -> list[int]:
    """Apply one operation to ``state``; returns the topics it made or changed."""
    try:
        if isinstance(entry, Rename):
            topic = match(state, entry.level, entry.members, ids)
            name = clean_name(entry.name)
            state.check_name(entry.level, name, (topic,))
            state.names[entry.level][topic] = name
            return [topic]
        if isinstance(entry, Merge):
            return [_merge(state, entry, ids)]
        if isinstance(entry, Split):
            return split(state, entry, ids, vectors)
        if isinstance(entry, Move):
            return [_move(state, entry, ids, vectors)]
    except (TypeError, ValueError, UserError) as exc:
        raise Skipped(f"the entry is malformed ({shown(str(exc), 80)})") from None
    raise Skipped(entry.reason)  # an entry of the log that is no operation


def _merge(state: TopicState, entry: Merge, ids: pd.Index) -> int:
    """Merge the topic matching ``other_members`` into the one matching ``members``."""
    level = entry.level
    a = match(state, level, entry.members, ids)
    b = match(state, level, entry.other_members, ids)
    name = clean_name(entry.name) if entry.name else None
    if name:
        state.check_name(level, name, (a, b))
    if a != b:  # the same: already one topic (a rebuild may have put them together)
        rows = state.rows(level, b)
        state.labels[level][rows] = a
        if level == "fine":  # its papers join A's coarse topic too: the levels stay nested
            state.labels["coarse"][rows] = state.parent[a]
        else:
            state.parent.update({fine: a for fine, coarse in state.parent.items() if coarse == b})
        state.terms[level][a] = list(dict.fromkeys([*state.terms[level][a], *state.terms[level][b]]))[:MAX_TERMS]
        state.drop(level, b)
    if name:
        state.names[level][a] = name
    return a


def _move(state: TopicState, entry: Move, ids: pd.Index, vectors: np.ndarray) -> int:
    """Move the operation's papers (those still in the index) into the topic matching ``members``."""
    rows = ids.get_indexer(pd.Index(list(entry.papers)))
    rows = rows[rows >= 0]
    if not len(rows):
        raise Skipped("its papers are no longer in the index", unmatched=True)
    target = match(state, entry.level, entry.members, ids)
    rows = np.sort(rows[state.labels[entry.level][rows] != target])
    if entry.level == "fine":
        state.labels["fine"][rows] = target
        state.labels["coarse"][rows] = state.parent[target]
    elif len(rows):  # each joins the fine topic of the target nearest to it: the levels stay nested
        children = np.unique(state.labels["fine"][state.labels["coarse"] == target])
        centroids = np.stack([centroid(vectors, state.rows("fine", child)) for child in children])
        nearest = np.argmax(np.asarray(vectors[rows], dtype=np.float32) @ centroids.T, axis=1)
        state.labels["fine"][rows] = children[nearest]
        state.labels["coarse"][rows] = target
    return target


# --- recording a new one ---------------------------------------------------------------------


def record(
    folder: str | Path,
    operation: Operation,
    apply: Callable[[list[Entry]], Curated],
    name_parts: Callable[[Split], Split] | None = None,
) -> tuple[list[Entry], Curated]:
    """Append ``operation`` to the log of ``folder`` when it applies: ``apply(entries)`` gives the
    :class:`Curated` index of the log plus ``operation``; one that does not apply is a UserError and
    the log stays as it was. A split records the papers of its parts and, with ``name_parts`` (the
    split with its parts' names and terms), their names. Returns the entries now in the log and the
    Curated. The entries already written are written back as they were."""
    with curations.locked(folder):
        written = curations.read_log(folder)
        entries = [operations.read(entry) for entry in written]
        curated = apply([*entries, operation])
        outcome = curated.outcomes[-1]
        if not outcome.applied:
            raise UserError(f"cannot {operation.op}: {outcome.reason}")
        if isinstance(operation, Split):
            parts = tuple(curated.members(operation.level, topic) for topic in outcome.topics)
            operation = dataclasses.replace(operation, parts=parts)
            if name_parts is not None:
                operation = name_parts(operation)
                curated = apply([*entries, operation])
        curations.write_log(folder, [*written, operations.record(operation)])
    return [*entries, operation], curated
