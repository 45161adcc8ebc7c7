"""Corrections to the topics, kept beside the index: renames, merges, splits and moved papers.

The log is ``DIR/curations.json``, beside the generations and ``CURRENT`` (a build or ``add``
never touches it), JSON written atomically::

    {"format": "paperscope-curations", "version": 1, "curations": [
        {"op": "rename", "level": "coarse", "topic": "old name", "members": [ids], "name": "new name", "made": …},
        {"op": "merge", "level": …, "topic": "A", "members": [ids of A], "other": "B", "other_members": [ids of B],
         "name": null (A's) or "new name", "made": …},
        {"op": "split", "level": …, "topic": …, "members": [ids], "k": 2, "parts": [[ids], [ids]],
         "names": ["name of part 1" or null, …], "terms": [[terms of part 1], …], "made": …},
        {"op": "move", "level": …, "papers": [ids], "topic": "target", "members": [ids of the target], "made": …}]}

Each entry records the papers of the topics it was made on, as they were then (after the entries
before it). Whenever the index is loaded the entries are applied in order, in memory, over each
paper's topic columns and the topic tables: the generation on disk never changes. An entry acts on
the topic of its level whose papers overlap the recorded ones most, when their Jaccard index is at
least ``MATCH_JACCARD``: so the log survives ``paperscope add`` and a rebuild into the same folder.
One that matches no topic any more is reported in a sentence, never applied.

Splits re-cluster a topic's papers with a small deterministic k-means over their vectors (numpy:
loading stays light); at coarse level, a topic of at least k fine topics is split by grouping
them, so that the two levels stay nested. This module lives in the store, not in
``index/topics``: it runs on every load of a curated index, which imports no build code.
"""

from __future__ import annotations

import datetime
import itertools
import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.embed.text import counted
from paperscope.errors import UserError, shown, write_error
from paperscope.files import atomic_path
from paperscope.index.common.kmeans import kmeans
from paperscope.limits import MAX_NAME_CHARS
from paperscope.settings import UNCLUSTERED, UNCLUSTERED_NAME

CURATIONS_FILE, CURATIONS_LOCK = "curations.json", ".curations.lock"
FORMAT_NAME, FORMAT_VERSION = "paperscope-curations", 1
MATCH_JACCARD = 0.5  # an entry acts on a topic whose papers and its recorded ones overlap this much
OPERATIONS = ("rename", "merge", "split", "move")
MAX_TERMS = 4  # a merged topic's terms: its own, then the other's, at most this many
CENTRAL_PAPERS = 3
CENTRAL_SAMPLE = 50_000  # a changed topic's central papers are looked for among this many of its papers
COLUMNS = {"fine": ("cluster", "cluster_name"), "coarse": ("coarse_cluster", "coarse_name")}


# --- the log ---------------------------------------------------------------------------------


def log_path(folder: str | Path) -> Path:
    """Where the curations of the index in ``folder`` are kept."""
    return Path(folder) / CURATIONS_FILE


def stamp(folder: str | Path) -> str:
    """A text that changes when the log does ("" without one): for caches keyed by index state."""
    try:
        status = log_path(folder).stat()
    except OSError:
        return ""
    return f"{status.st_mtime_ns}-{status.st_size}"


def read_log(folder: str | Path) -> list[dict]:
    """The entries of the log, in order ([] without a log); an unreadable log is a UserError."""
    path = log_path(folder)
    try:
        log = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path}: unreadable ({str(exc)[:100]}); fix it or remove it to drop the curations") from None
    if not isinstance(log, dict) or log.get("format") != FORMAT_NAME or not isinstance(log.get("curations"), list):
        raise UserError(f"{path}: not a paperscope curations file; fix it or remove it to drop the curations")
    if log.get("version") != FORMAT_VERSION:
        raise UserError(f"{path}: curations version {log.get('version')!r}, this paperscope reads {FORMAT_VERSION}")
    return log["curations"]


def write_log(folder: str | Path, entries: list[dict]) -> None:
    """Replace the log with ``entries``, atomically."""
    head = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION})[:-1]
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)  # an entry a line
    with atomic_path(log_path(folder)) as temporary:
        temporary.write_text(f'{head}, "curations": [\n{lines}\n]}}\n', encoding="utf-8")


@contextmanager
def _locked(folder: Path):
    """Hold the log's lock (one writer at a time); a folder we cannot write to is a UserError."""
    from filelock import FileLock, Timeout

    try:
        with FileLock(folder / CURATIONS_LOCK, timeout=30):
            yield
    except Timeout:
        raise UserError(f"{folder}: another process keeps the curations locked; try again") from None
    except OSError as exc:
        raise write_error(exc, folder) or exc from None


def record(folder: str | Path, entry: dict, apply, name_parts=None) -> tuple[list[dict], Curated]:
    """Append ``entry`` to the log of ``folder`` when it applies: ``apply(entries)`` gives the
    :class:`Curated` index of the log plus ``entry``; one that does not apply is a UserError and
    the log stays as it was. A split records the papers of its parts and, with ``name_parts``
    (``name_parts(entry)`` of an entry with its parts: {"names": [name or None per part],
    "terms": [terms per part]}), their names. Returns the entries now in the log and the Curated."""
    folder = Path(folder)
    with _locked(folder):
        entries = read_log(folder)
        curated = apply([*entries, entry])
        outcome = curated.outcomes[-1]
        if not outcome.applied:
            raise UserError(f"cannot {entry['op']}: {outcome.reason}")
        if entry["op"] == "split":
            entry = {**entry, "parts": [curated.members(entry["level"], topic) for topic in outcome.topics]}
            if name_parts is not None:
                entry |= name_parts(entry)
                curated = apply([*entries, entry])
        try:
            write_log(folder, [*entries, entry])
        except OSError as exc:
            raise write_error(exc, folder) or exc from None
    return [*entries, entry], curated


def describe(entry: dict) -> str:
    """What an entry does, in a few words ("rename coarse topic 'a' to 'b'")."""
    if not isinstance(entry, dict):
        return "not an entry"
    level, topic = entry.get("level"), entry.get("topic")
    if entry.get("op") == "rename":
        return f"rename {level} topic '{topic}' to '{entry.get('name')}'"
    if entry.get("op") == "merge":
        named = f" as '{entry['name']}'" if entry.get("name") else ""
        return f"merge {level} topic '{entry.get('other')}' into '{topic}'{named}"
    if entry.get("op") == "split":
        return f"split {level} topic '{topic}' into {entry.get('k')}"
    if entry.get("op") == "move":
        count = len(entry.get("papers") or [])
        return f"move {count} {'paper' if count == 1 else 'papers'} to {level} topic '{topic}'"
    return f"unknown operation {entry.get('op')!r}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def clean_name(name) -> str:
    """A topic name as given, on one line; an empty or overlong one is a UserError."""
    text = " ".join(str(name).split())
    if not text:
        raise UserError("a topic name needs at least one printable character")
    if len(text) > MAX_NAME_CHARS:
        raise UserError(f"a topic name is at most {MAX_NAME_CHARS} characters, got {len(text)}")
    return text


# --- making entries --------------------------------------------------------------------------


def members(papers: pa.Table, level: str, topic: int) -> list[str]:
    """The ids of the papers of ``topic`` (a number of ``level``) in the papers' table ``papers``."""
    labels = papers.column(COLUMNS[level][0]).to_numpy()
    return papers.column("id").take(pa.array(np.flatnonzero(labels == topic))).to_pylist()


def _name_of(topics: pd.DataFrame, topic: int) -> str:
    return str(topics.loc[topics["cluster"] == topic, "name"].iloc[0])


def rename_entry(papers: pa.Table, topics: pd.DataFrame, level: str, topic: int, name) -> dict:
    """The log entry renaming ``topic`` (a number of ``level``; ``topics``: that level's table)."""
    was = _name_of(topics, topic)
    return {"op": "rename", "level": level, "topic": was, "members": members(papers, level, topic),
            "name": clean_name(name), "made": _now()}  # fmt: skip


def merge_entry(papers: pa.Table, topics: pd.DataFrame, level: str, pair: tuple[int, int], name=None) -> dict:
    """The log entry merging the topic ``pair[1]`` into ``pair[0]`` (named ``name``, else as A)."""
    a, b = pair
    if a == b:
        raise UserError("merge needs two different topics")
    return {
        "op": "merge", "level": level, "topic": _name_of(topics, a), "members": members(papers, level, a),
        "other": _name_of(topics, b), "other_members": members(papers, level, b),
        "name": None if name is None else clean_name(name), "made": _now(),
    }  # fmt: skip


def split_entry(papers: pa.Table, topics: pd.DataFrame, level: str, topic: int, k) -> dict:
    """The log entry splitting ``topic`` into ``k`` (at least 2) topics by its papers' vectors."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 2:
        raise UserError(f"k must be a whole number of at least 2, got {shown(repr(k))}")
    return {"op": "split", "level": level, "topic": _name_of(topics, topic), "members": members(papers, level, topic),
            "k": int(k), "made": _now()}  # fmt: skip


def move_entry(papers: pa.Table, topics: pd.DataFrame, level: str, paper_ids: list[str], topic: int) -> dict:
    """The log entry moving the papers ``paper_ids`` (ids of the index) into ``topic``."""
    paper_ids = list(dict.fromkeys(str(paper_id).strip() for paper_id in paper_ids))
    if not paper_ids:
        raise UserError("give at least one paper id to move")
    inside = set(members(papers, level, topic))
    if inside.issuperset(paper_ids):
        raise UserError(f"{'that paper is' if len(paper_ids) == 1 else 'those papers are'} already in {level} "
                        f"topic {topic} ('{_name_of(topics, topic)}')")  # fmt: skip
    return {"op": "move", "level": level, "papers": paper_ids, "topic": _name_of(topics, topic),
            "members": sorted(inside), "made": _now()}  # fmt: skip


# --- applying them -----------------------------------------------------------------------------


class _Skipped(Exception):
    """An entry that cannot be applied: ``reason`` says why, ``unmatched`` when no topic matches it."""

    def __init__(self, reason: str, unmatched: bool = False):
        super().__init__(reason)
        self.reason, self.unmatched = reason, unmatched


@dataclass
class Outcome:
    """What became of one entry: applied (and the topics it made or changed), or why not."""

    applied: bool
    topics: list[int] = field(default_factory=list)
    reason: str | None = None  # why it was not applied
    note: str | None = None  # the sentence reporting it


@dataclass
class _State:
    """The topics as curated so far: each paper's topic at both levels; each topic's name, terms
    and (fine topics) coarse topic; the highest number each level has used."""

    labels: dict[str, np.ndarray]
    names: dict[str, dict[int, str]]
    terms: dict[str, dict[int, object]]
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
        """A UserError-like _Skipped when another live topic of ``level`` has ``name``."""
        live = set(np.unique(self.labels[level]).tolist())
        for topic, other in self.names[level].items():
            if other == name and topic not in allowed and topic in live:
                raise _Skipped(f"{level} topic {topic} is already named '{name}': choose another name, or merge them")


@dataclass
class Curated:
    """An index's topics with its curations applied: the papers' table (topic columns replaced),
    the topic tables by level, what became of each entry, and the report of those not applied."""

    papers: pa.Table
    topics: dict[str, pd.DataFrame]
    outcomes: list[Outcome]
    labels: dict[str, np.ndarray]

    @property
    def report(self) -> list[str]:
        """One sentence for each entry not applied."""
        return [outcome.note for outcome in self.outcomes if not outcome.applied]

    def members(self, level: str, topic: int) -> list[str]:
        """The ids of the papers of ``topic`` of ``level``."""
        return self.papers.column("id").take(pa.array(np.flatnonzero(self.labels[level] == topic))).to_pylist()


def _state(papers: pa.Table, topics: dict[str, pd.DataFrame]) -> _State:
    labels = {level: np.array(papers.column(COLUMNS[level][0]).to_numpy(), dtype=np.int64) for level in COLUMNS}
    numbers = {level: topics[level]["cluster"].tolist() for level in COLUMNS}
    names = {level: dict(zip(numbers[level], topics[level]["name"], strict=True)) for level in COLUMNS}
    terms = {level: dict(zip(numbers[level], topics[level]["terms"], strict=True)) for level in COLUMNS}
    fine = topics["fine"]
    parent = dict(zip(fine["cluster"].tolist(), fine["parent"].tolist(), strict=True))
    highest = {level: int(max([*names[level], labels[level].max(initial=UNCLUSTERED)])) for level in COLUMNS}
    return _State(labels, names, terms, parent, highest)


def apply(entries: list[dict], papers: pa.Table, topics: dict[str, pd.DataFrame], vectors: np.ndarray) -> Curated:
    """The index's papers' table and topic tables (``topics``: by level, as built) with
    ``entries`` applied in order (see the module docstring); ``vectors``: the papers' vectors."""
    state = _state(papers, topics)
    built = {level: labels.copy() for level, labels in state.labels.items()}
    ids = pd.Index(papers.column("id").to_numpy(zero_copy_only=False))
    outcomes = []
    for number, entry in enumerate(entries, 1):
        try:
            outcomes.append(Outcome(True, _apply_one(entry, state, ids, vectors)))
        except _Skipped as skipped:
            what = f"curation {number} ({shown(describe(entry), 120)})"
            level = entry.get("level") if isinstance(entry, dict) else None
            note = (f"{what} matches no {level} topic any more: {skipped.reason}; it is not applied"
                    if skipped.unmatched else f"{what} is not applied: {skipped.reason}")  # fmt: skip
            outcomes.append(Outcome(False, reason=skipped.reason, note=note))
    if not any(outcome.applied for outcome in outcomes):
        return Curated(papers, topics, outcomes, built)
    tables = {level: _table(level, topics[level], state, built[level], papers, vectors) for level in COLUMNS}
    return Curated(_with_topics(papers, state, tables), tables, outcomes, state.labels)


def _apply_one(entry: dict, state: _State, ids: pd.Index, vectors: np.ndarray) -> list[int]:
    """Apply one entry to ``state``; returns the topics it made or changed."""
    try:
        level, operation = entry["level"], entry["op"]
        if level not in COLUMNS or operation not in OPERATIONS:
            raise _Skipped(f"level {level!r} or operation {operation!r} unknown (the entry is malformed)")
        if operation == "rename":
            topic = _match(state, level, entry["members"], ids)
            name = clean_name(entry["name"])
            state.check_name(level, name, (topic,))
            state.names[level][topic] = name
            return [topic]
        if operation == "merge":
            return [_merge(state, level, entry, ids)]
        if operation == "split":
            return _split(state, level, entry, ids, vectors)
        return [_move(state, level, entry, ids, vectors)]
    except KeyError as exc:
        raise _Skipped(f"the entry is malformed (it has no {shown(str(exc), 40)})") from None
    except (TypeError, ValueError, AttributeError, UserError) as exc:
        raise _Skipped(f"the entry is malformed ({shown(str(exc), 80)})") from None


def _match(state: _State, level: str, recorded: list[str], ids: pd.Index) -> int:
    """The topic of ``level`` whose papers overlap the ``recorded`` ids most (Jaccard index of at
    least ``MATCH_JACCARD``); none is _Skipped saying where the papers went."""
    if not recorded:
        raise _Skipped("it records no papers", unmatched=True)
    rows = ids.get_indexer([str(paper_id) for paper_id in recorded])
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
            raise _Skipped("none of its papers is in the index any more", unmatched=True)
        raise _Skipped(f"{gone} of its {len(recorded)} papers are no longer in the index", unmatched=True)
    raise _Skipped("its papers are now spread over other topics", unmatched=True)


def _merge(state: _State, level: str, entry: dict, ids: pd.Index) -> int:
    """Merge the topic matching ``other_members`` into the one matching ``members``."""
    a = _match(state, level, entry["members"], ids)
    b = _match(state, level, entry["other_members"], ids)
    name = clean_name(entry["name"]) if entry.get("name") else None
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


def _move(state: _State, level: str, entry: dict, ids: pd.Index, vectors: np.ndarray) -> int:
    """Move the entry's papers (those still in the index) into the topic matching ``members``."""
    rows = ids.get_indexer([str(paper_id) for paper_id in entry["papers"]])
    rows = rows[rows >= 0]
    if not len(rows):
        raise _Skipped("its papers are no longer in the index", unmatched=True)
    target = _match(state, level, entry["members"], ids)
    rows = np.sort(rows[state.labels[level][rows] != target])
    if level == "fine":
        state.labels["fine"][rows] = target
        state.labels["coarse"][rows] = state.parent[target]
    elif len(rows):  # each joins the fine topic of the target nearest to it: the levels stay nested
        children = np.unique(state.labels["fine"][state.labels["coarse"] == target])
        centroids = np.stack([_centroid(vectors, state.rows("fine", child)) for child in children])
        nearest = np.argmax(np.asarray(vectors[rows], dtype=np.float32) @ centroids.T, axis=1)
        state.labels["fine"][rows] = children[nearest]
        state.labels["coarse"][rows] = target
    return target


def _centroid(vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The unit-length mean of the vectors of ``rows`` (a sample of ``CENTRAL_SAMPLE`` of them at most)."""
    if len(rows) > CENTRAL_SAMPLE:
        rows = rows[np.linspace(0, len(rows) - 1, CENTRAL_SAMPLE).astype(np.int64)]
    mean = np.asarray(vectors[rows], dtype=np.float32).mean(axis=0)
    return mean / max(float(np.linalg.norm(mean)), 1e-12)


# --- splits ----------------------------------------------------------------------------------


def _split(state: _State, level: str, entry: dict, ids: pd.Index, vectors: np.ndarray) -> list[int]:
    """Split the topic matching ``members`` into ``k`` new ones, numbered above every topic."""
    topic = _match(state, level, entry["members"], ids)
    k = int(entry["k"])
    rows = state.rows(level, topic)
    if k < 2:
        raise _Skipped(f"k is {k}, a split needs at least 2")
    if len(rows) < k:
        raise _Skipped(f"{level} topic {topic} has {counted(len(rows), 'paper')}, fewer than k={k}")
    seeds = _seeds(entry.get("parts"), ids, rows, vectors, k)
    if level == "fine":
        part = kmeans(np.asarray(vectors[rows], dtype=np.float32), k, seeds=seeds)
        return _fine_parts(state, topic, rows, part, entry)
    children = np.unique(state.labels["fine"][rows])
    if len(children) >= k:  # whole fine topics grouped by their centroids
        centroids = np.stack([_centroid(vectors, state.rows("fine", child)) for child in children])
        sizes = np.array([len(state.rows("fine", child)) for child in children], dtype=np.float32)
        grouped = kmeans(centroids, k, weights=sizes, seeds=seeds)
        part = grouped[np.searchsorted(children, state.labels["fine"][rows])]
    else:  # too few fine topics: the papers themselves, their fine topics split along
        part = kmeans(np.asarray(vectors[rows], dtype=np.float32), k, seeds=seeds)
    made = []
    for i in range(k):
        new = state.fresh("coarse")
        made.append(new)
        state.names["coarse"][new], state.terms["coarse"][new] = _part_name(state, "coarse", topic, entry, i)
        state.labels["coarse"][rows[part == i]] = new
    pieces = set()  # a fine topic across parts: a piece in each
    for child in children:
        inside = state.labels["fine"][rows] == child
        parts = np.unique(part[inside]).tolist()
        if len(parts) == 1:
            state.parent[child] = made[parts[0]]
            continue
        for i in parts:
            pieces.add(_new_fine(state, child, rows[inside & (part == i)], made[i], f" (part {i + 1})"))
        state.drop("fine", child)
    state.drop("coarse", topic)
    for new in made:  # a part whose one fine topic is a piece: the piece is the part, and named so
        inside = [fine for fine, coarse in state.parent.items() if coarse == new]
        if len(inside) == 1 and inside[0] in pieces:
            state.names["fine"][inside[0]] = state.names["coarse"][new]
            state.terms["fine"][inside[0]] = state.terms["coarse"][new]
    return made


def _fine_parts(state: _State, topic: int, rows: np.ndarray, part: np.ndarray, entry: dict) -> list[int]:
    """New fine topics for the parts of ``rows``, the papers of fine ``topic`` (which goes), in its
    coarse topic, named as ``entry`` recorded (:func:`_part_name`)."""
    made = [_new_fine(state, topic, rows[part == i], state.parent[topic], "") for i in range(int(entry["k"]))]
    for i, new in enumerate(made):
        state.names["fine"][new], state.terms["fine"][new] = _part_name(state, "fine", topic, entry, i)
    state.drop("fine", topic)
    return made


def _part_name(state: _State, level: str, topic: int, entry: dict, i: int) -> tuple[str, object]:
    """The name and terms of part ``i`` of the split ``entry`` of ``topic``: those the split
    recorded (named by its papers' own terms when it was made), else the topic's name with
    " (part i)" and its terms."""
    names, terms = entry.get("names") or [], entry.get("terms") or []
    if len(names) == len(terms) == int(entry["k"]) and names[i]:
        return clean_name(names[i]), list(terms[i])
    return f"{state.names[level][topic]} (part {i + 1})", state.terms[level][topic]


def _new_fine(state: _State, like: int, rows: np.ndarray, coarse: int, suffix: str) -> int:
    """A new fine topic of the papers ``rows`` in the coarse topic ``coarse``, named as the fine
    topic ``like`` plus ``suffix``, with its terms."""
    new = state.fresh("fine")
    state.names["fine"][new] = state.names["fine"][like] + suffix
    state.terms["fine"][new] = state.terms["fine"][like]
    state.parent[new] = coarse
    state.labels["fine"][rows] = new
    state.labels["coarse"][rows] = coarse
    return new


def _seeds(parts, ids: pd.Index, rows: np.ndarray, vectors: np.ndarray, k: int) -> np.ndarray | None:
    """Starting centres from the parts a split recorded (their papers still in the topic), so that
    it splits the same way again; None when there are none or one has no paper left."""
    if not parts or len(parts) != k:
        return None
    centres = []
    for part in parts:
        found = ids.get_indexer([str(paper_id) for paper_id in part])
        found = np.intersect1d(found[found >= 0], rows)
        if not len(found):
            return None
        centres.append(_centroid(vectors, found))
    return np.stack(centres)


# --- the curated tables ----------------------------------------------------------------------


def _table(
    level: str, built: pd.DataFrame, state: _State, built_labels: np.ndarray, papers: pa.Table, vectors: np.ndarray
) -> pd.DataFrame:
    """The topic table of ``level`` after the curations: the built rows of topics whose papers did
    not change (renamed at most), rows computed anew for the others (size, central papers, label
    position, map trust), topics left without papers gone."""
    labels = state.labels[level]
    changed = labels != built_labels
    touched = set(np.unique(np.concatenate([labels[changed], built_labels[changed]])).tolist())
    original = {int(row["cluster"]): row for row in built.to_dict("records")}
    live = np.unique(labels[labels != UNCLUSTERED])
    rows = []
    for topic in live.tolist():
        if topic in original and topic not in touched:
            row = dict(original[topic])
        else:
            row = {"level": level, "cluster": topic} | _described(state.rows(level, topic), papers, vectors)
        row |= {"name": state.names[level][topic], "terms": state.terms[level][topic]}
        row["parent"] = state.parent[topic] if level == "fine" else UNCLUSTERED
        rows.append(row)
    return pd.DataFrame(rows, columns=built.columns).astype({"cluster": np.int64, "size": np.int64, "parent": np.int64})


def _described(rows: np.ndarray, papers: pa.Table, vectors: np.ndarray) -> dict:
    """A changed topic's size, three most central papers, label position (its paper nearest the
    median of its papers' positions) and mean map trust, as a build computes them."""
    sample = rows if len(rows) <= CENTRAL_SAMPLE else rows[np.linspace(0, len(rows) - 1, CENTRAL_SAMPLE).astype(int)]
    centre = _centroid(vectors, sample)
    central = sample[np.argsort(-(np.asarray(vectors[sample], dtype=np.float32) @ centre), kind="stable")]
    coords = np.column_stack([papers.column(axis).take(pa.array(rows)).to_numpy() for axis in ("x", "y")])
    anchor = coords[np.argmin(((coords - np.median(coords, axis=0)) ** 2).sum(axis=1))]
    return {
        "size": len(rows),
        "central_ids": papers.column("id").take(pa.array(central[:CENTRAL_PAPERS])).to_pylist(),
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(np.mean(papers.column("map_trust").take(pa.array(rows)).to_numpy())),
    }


def _with_topics(papers: pa.Table, state: _State, tables: dict[str, pd.DataFrame]) -> pa.Table:
    """``papers`` with its topic columns (number and name, both levels) as curated, chunked as before."""
    for level, (number_column, name_column) in COLUMNS.items():
        labels = state.labels[level]
        names = dict(zip(tables[level]["cluster"].tolist(), tables[level]["name"], strict=True))
        values, inverse = np.unique(labels, return_inverse=True)
        named = np.array([names.get(int(value), UNCLUSTERED_NAME) for value in values], dtype=object)[inverse]
        for column, data in ((number_column, labels), (name_column, named)):
            old = papers.column(column)
            whole = pa.array(data, type=old.type)
            starts = np.cumsum([0] + [len(chunk) for chunk in old.chunks])
            chunked = pa.chunked_array([whole.slice(s, e - s) for s, e in itertools.pairwise(starts)], old.type)
            papers = papers.set_column(papers.schema.get_field_index(column), column, chunked)
    return papers
