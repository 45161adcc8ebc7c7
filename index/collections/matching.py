"""Library entries matched to the papers of an index: by id, then DOI, then arXiv id, then title.

An entry that matches no paper is kept as an "outside" member: its text is embedded with the
index's model (as the papers were) so that it still steers recommendations.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from paperscope.embed.library import normalise_arxiv_id, normalise_doi, normalise_title
from paperscope.embed.text import embedding_text

if TYPE_CHECKING:  # the index's papers an import matches; loading the collections' code imports no pandas
    import pandas as pd

WAYS = ("id", "doi", "arxiv", "title")  # in the order they are tried


@dataclass
class Matched:
    """What an import brings: ``members`` to add (found in the index, with ``paper_id`` and how:
    one of ``WAYS``; or "outside" with ``paper_id`` None), ``present`` those already members,
    ``repeated`` entries naming a member found earlier in the same import, ``unusable`` entries
    with neither a match nor any text to embed."""

    members: list[dict] = field(default_factory=list)
    unusable: int = 0
    repeated: int = 0
    present: list[dict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many new members were matched each way, and how many are outside the index."""
        found = Counter(member["matched_by"] for member in self.members)
        return {way: found[way] for way in (*WAYS, "outside")}

    def summary(self) -> str:
        """The import in one line, counted as ``collection show`` counts members: "20 entries: 15
        new members matched to corpus papers (3 by DOI, 12 by title), 5 outside the corpus; …"."""
        counts = self.counts()
        read = len(self.members) + len(self.present) + self.repeated + self.unusable
        names = {"id": "by id", "doi": "by DOI", "arxiv": "by arXiv id", "title": "by title"}
        ways = ", ".join(f"{counts[way]} {names[way]}" for way in WAYS if counts[way])
        matched = sum(counts[way] for way in WAYS)
        parts = [f"{matched} new member{'s' * (matched != 1)} matched to corpus papers ({ways})"] if matched else []
        if counts["outside"]:
            parts.append(f"{counts['outside']} new outside the corpus")
        if self.present:
            parts.append(f"{len(self.present)} already {'a member' if len(self.present) == 1 else 'members'}")
        if self.repeated:
            parts.append(f"{self.repeated} repeating an entry read before")
        if self.unusable:
            parts.append(f"{self.unusable} without a title or an abstract, left out")
        return f"{read} entr{'ies' if read != 1 else 'y'}: {'; '.join(parts) or 'nothing to add'}"


def _lookup(papers: pd.DataFrame, column: str, normalise) -> dict[str, str]:
    """Normalised value of ``column`` → the id of the first paper holding it."""
    if column not in papers:
        return {}
    found: dict[str, str] = {}
    for paper_id, value in zip(papers["id"], papers[column], strict=True):
        key = normalise(value) if isinstance(value, str) and value else ""
        if key:
            found.setdefault(key, paper_id)
    return found


def _arxiv_ids(papers: pd.DataFrame) -> dict[str, str]:
    """arXiv id → paper id, from an ``arxiv_id`` column and from ids that are arXiv ids themselves."""
    found = _lookup(papers, "arxiv_id", normalise_arxiv_id)
    for paper_id in papers["id"]:
        key = normalise_arxiv_id(paper_id)
        if key:
            found.setdefault(key, paper_id)
    return found


def outside_key(entry: dict) -> str:
    """A stable key for an entry outside the index, from its content: every field of the entry as
    the file wrote it but its citation key and line (two entries are one only when every other
    field is equal: Zotero's ``x`` and ``x-1`` are two), else the record's fields but its id."""
    raw = entry.get("entry")
    if raw:
        content = {name: value for name, value in raw.items() if name not in ("key", "line")}
        for fields in (content.get("fields"), content.get("item")):
            if isinstance(fields, dict):
                content = {**content, "fields": {n: v for n, v in fields.items() if n not in ("id", "citation-key")}}
                content.pop("item", None)
    else:
        content = {name: value for name, value in entry.items() if name not in ("id", "source", "line")}
    basis = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return "outside:" + hashlib.sha256(basis.encode()).hexdigest()[:16]


def match_entries(papers: pd.DataFrame, entries: list[dict]) -> Matched:
    """Match library ``entries`` (records as :func:`paperscope.embed.readers.read_records` gives
    them) to ``papers`` (id, title and, when the index has them, doi and arxiv_id columns)."""
    ids = set(papers["id"])
    tables = {
        "doi": (_lookup(papers, "doi", normalise_doi), "doi", normalise_doi),
        "arxiv": (_arxiv_ids(papers), "arxiv_id", normalise_arxiv_id),
    }
    titles = None  # normalised only when an entry needs them (a million titles take seconds)
    matched = Matched()
    for entry in entries:
        paper_id, way = (entry.get("id"), "id") if entry.get("id") in ids else (None, None)
        for name, (table, key, normalise) in tables.items():
            if paper_id is None and entry.get(key) and normalise(entry[key]) in table:
                paper_id, way = table[normalise(entry[key])], name
        if paper_id is None and entry.get("title"):
            titles = titles if titles is not None else _lookup(papers, "title", normalise_title)
            if normalise_title(entry["title"]) in titles:
                paper_id, way = titles[normalise_title(entry["title"])], "title"
        if paper_id is not None:
            matched.members.append({**entry, "key": paper_id, "paper_id": paper_id, "matched_by": way})
        elif entry.get("title") or entry.get("abstract"):
            matched.members.append({**entry, "key": outside_key(entry), "paper_id": None, "matched_by": "outside"})
        else:
            matched.unusable += 1
    return matched


def member_text(member: dict) -> str:
    """The text embedded for an outside member, as papers are embedded (:func:`embedding_text`)."""
    return embedding_text((member.get("title") or "").strip(), (member.get("abstract") or "").strip())


def as_blob(vector: np.ndarray) -> bytes:
    """A vector as stored (float32 bytes)."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    """A stored vector."""
    return np.frombuffer(blob, dtype=np.float32)
