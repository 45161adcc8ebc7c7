"""The topics as curated so far, while a log is applied: each paper's topic at both levels, each
topic's name and terms; matching an operation to a topic by its papers; a topic's centroid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.index.curation.operations import COLUMNS
from paperscope.settings import UNCLUSTERED

MATCH_JACCARD = 0.5  # an operation acts on a topic whose papers and its recorded ones overlap this much
CENTRAL_SAMPLE = 50_000  # a topic's centroid is the mean of this many of its papers at most


class Skipped(Exception):
    """An operation that cannot be applied: ``reason`` says why, ``unmatched`` when no topic matches it."""

    def __init__(self, reason: str, unmatched: bool = False):
        super().__init__(reason)
        self.reason, self.unmatched = reason, unmatched


@dataclass
class TopicState:
    """The topics as curated so far: each paper's topic at both levels; each topic's name, terms
    and (fine topics) coarse topic; the highest number each level has used."""

    labels: dict[str, np.ndarray]
    names: dict[str, dict[int, str]]
    terms: dict[str, dict[int, list[str]]]
    parent: dict[int, int]
    highest: dict[str, int]

    def rows(self, level: str, topic: int) -> np.ndarray:
        """The rows of the papers of ``topic`` of ``level``."""
        return np.flatnonzero(self.labels[level] == topic)

    def fresh(self, level: str) -> int:
        """A number for a new topic of ``level``, above every one it has used."""
        self.highest[level] += 1
        return self.highest[level]

    def drop(self, level: str, topic: int) -> None:
        """Forget ``topic`` of ``level`` (its papers have gone elsewhere)."""
        self.names[level].pop(topic, None)
        self.terms[level].pop(topic, None)
        if level == "fine":
            self.parent.pop(topic, None)

    def check_name(self, level: str, name: str, allowed: tuple[int, ...]) -> None:
        """A UserError-like Skipped when another live topic of ``level`` has ``name``."""
        live = set(np.unique(self.labels[level]).tolist())
        for topic, other in self.names[level].items():
            if other == name and topic not in allowed and topic in live:
                raise Skipped(f"{level} topic {topic} is already named '{name}': choose another name, or merge them")


def topic_state(papers: pa.Table, topics: dict[str, pd.DataFrame]) -> TopicState:
    """The topics of ``papers`` (its topic columns) and ``topics`` (the tables by level), before any operation."""
    labels = {level: np.array(papers.column(COLUMNS[level][0]).to_numpy(), dtype=np.int64) for level in COLUMNS}
    numbers = {level: topics[level]["cluster"].tolist() for level in COLUMNS}
    names = {level: dict(zip(numbers[level], topics[level]["name"], strict=True)) for level in COLUMNS}
    terms = {level: dict(zip(numbers[level], topics[level]["terms"], strict=True)) for level in COLUMNS}
    fine = topics["fine"]
    parent = dict(zip(fine["cluster"].tolist(), fine["parent"].tolist(), strict=True))
    highest = {level: int(max([*names[level], labels[level].max(initial=UNCLUSTERED)])) for level in COLUMNS}
    return TopicState(labels, names, terms, parent, highest)


def match(state: TopicState, level: str, recorded: tuple[str, ...], ids: pd.Index) -> int:
    """The topic of ``level`` whose papers overlap the ``recorded`` ids most (Jaccard index of at
    least ``MATCH_JACCARD``); none is Skipped saying where the papers went."""
    if not recorded:
        raise Skipped("it records no papers", unmatched=True)
    rows = ids.get_indexer(pd.Index(list(recorded)))
    present = rows[rows >= 0]
    labels = state.labels[level]
    found = labels[present]
    found = found[found != UNCLUSTERED]
    if len(found):
        topics, inside = np.unique(found, return_counts=True)
        sizes = np.bincount(labels[labels != UNCLUSTERED])[topics]
        overlap = inside / (len(recorded) + sizes - inside)
        best = int(np.argmax(overlap))
        if overlap[best] >= MATCH_JACCARD:
            return int(topics[best])
    if len(present) < MATCH_JACCARD * len(recorded):
        gone = len(recorded) - len(present)
        if not len(present):
            raise Skipped("none of its papers is in the index any more", unmatched=True)
        raise Skipped(f"{gone} of its {len(recorded)} papers are no longer in the index", unmatched=True)
    raise Skipped("its papers are now spread over other topics", unmatched=True)


def centroid(vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The unit-length mean of the vectors of ``rows`` (a sample of ``CENTRAL_SAMPLE`` of them at most)."""
    if len(rows) > CENTRAL_SAMPLE:
        rows = rows[np.linspace(0, len(rows) - 1, CENTRAL_SAMPLE).astype(np.int64)]
    mean = np.asarray(vectors[rows], dtype=np.float32).mean(axis=0)
    return mean / max(float(np.linalg.norm(mean)), 1e-12)
