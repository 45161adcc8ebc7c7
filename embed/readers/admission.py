"""Which records become papers: one paper row a record, the first of each id and of each abstract
kept, empty and overlong abstracts skipped, and a report of what was dropped and why."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from paperscope.embed.columns import OPTIONAL_FIELDS
from paperscope.embed.readers import Reading, iter_records
from paperscope.embed.titles import derive_title
from paperscope.errors import UserError
from paperscope.limits import MAX_ABSTRACT_CHARS


@dataclass
class ReadReport:
    """What reading dropped and why, for the build to report."""

    skipped: list[str] = field(default_factory=list)  # "file:line: reason"
    duplicate_ids: list[str] = field(default_factory=list)
    duplicate_abstracts: list[str] = field(default_factory=list)
    known: int = 0  # records repeating a paper the index holds already (its id or abstract)

    def dropped(self) -> int:
        """How many records were not kept, for whatever reason."""
        return len(self.skipped) + len(self.duplicate_ids) + len(self.duplicate_abstracts) + self.known

    def lines(self) -> list[str]:
        """Human-readable summary lines (empty when nothing was dropped)."""
        out = []
        if self.known:
            paper = "paper" if self.known == 1 else "papers"
            out.append(f"{self.known:,} {paper} already in the index (the same id or abstract)")
        for what, label, items in [
            ("record", "skipped", self.skipped),
            ("duplicate id", "kept once", self.duplicate_ids),
            ("duplicate abstract", "kept once", self.duplicate_abstracts),
        ]:
            if items:
                shown = "; ".join(items[:5]) + (f"; … {len(items) - 5} more" if len(items) > 5 else "")
                out.append(f"{len(items)} {what}{'' if len(items) == 1 else 's'} {label}: {shown}")
        return out


def text_id(abstract: str) -> str:
    """A short stable id from the normalised abstract, so ids survive reordering and re-runs."""
    return hashlib.sha256(abstract.encode("utf-8")).hexdigest()[:12]


def abstract_key(abstract: str) -> str:
    """What two abstracts share when they are the same text up to case (the duplicate check)."""
    return hashlib.sha256(abstract.casefold().encode("utf-8")).hexdigest()[:32]


def paper_row(record: dict) -> dict:
    """One paper from one normalised record: id (the record's, else from the text), display
    title (derived from the abstract when there is none), abstract, optional fields, source, and
    the corpus's own columns (``extra``: stored name → value)."""
    abstract = record.get("abstract", "")
    title = record.get("title", "")
    return {
        "id": record.get("id") or text_id(abstract),
        "title": title or (derive_title(abstract) if abstract else ""),
        "title_derived": not title,
        "abstract": abstract,
        **{name: record.get(name) for name in OPTIONAL_FIELDS},
        "source": record["source"],
        "extra": record.get("extra") or {},
    }


KNOWN = "the index"  # the "source" of a paper an index holds already
GONE = ("withdrawn", "deleted", "retracted")  # statuses a source gives a paper taken back (sources/)


class Admission:
    """Decides, record by record in corpus order, which become papers: the first of each id and of
    each abstract (up to case) is kept; empty and overlong abstracts are skipped. ``report`` says why;
    ``reading``: the kinds of the corpus's own columns and the conditions records must pass. What it
    keeps of each paper is small (all of arXiv is 2.7M papers): the text key as 16 bytes, the
    source ("file:line") as one int, the file's number and the line."""

    def __init__(self, reading: Reading | None = None):
        self.report = ReadReport()
        self.reading = reading or Reading()
        self._id_sources: dict[str, int | str] = {}
        self._text_sources: dict[bytes, int | str] = {}
        self._files: dict[str, int] = {}  # file name → number, in the packed sources

    def _packed(self, source: str) -> int | str:
        name, _, line = source.rpartition(":")
        if not (line.isascii() and line.isdigit()):
            return source
        return self._files.setdefault(name, len(self._files)) << 40 | int(line)

    def _source(self, packed: int | str) -> str:
        if isinstance(packed, str):
            return packed
        name = next(name for name, number in self._files.items() if number == packed >> 40)
        return f"{name}:{packed & (1 << 40) - 1}"

    def admit(self, source: str, paper_id: str, text_key: str, chars: int, status: str | None = None) -> bool:
        """Whether the record at ``source`` (id, ``abstract_key`` and length of its abstract, its
        ``status`` column where it has one) is kept."""
        key = bytes.fromhex(text_key)
        if not chars:  # a source's deleted or withdrawn record has no abstract: said as what it is
            reason = f"{status}, no abstract" if status in GONE else "empty abstract"
            self.report.skipped.append(f"{source}: {reason}")
        elif chars > MAX_ABSTRACT_CHARS:
            self.report.skipped.append(f"{source}: abstract of {chars:,} characters (limit {MAX_ABSTRACT_CHARS:,})")
        elif self._text_sources.get(key, "") is KNOWN or self._id_sources.get(paper_id, "") is KNOWN:
            self.report.known += 1
        elif key in self._text_sources:
            self.report.duplicate_abstracts.append(f"{source} repeats {self._source(self._text_sources[key])}")
        elif paper_id in self._id_sources:
            self.report.duplicate_ids.append(f"{paper_id} at {source} and {self._source(self._id_sources[paper_id])}")
        else:
            self._id_sources[paper_id] = self._text_sources[key] = self._packed(source)
            return True
        return False

    def know(self, paper_id: str, text_key: str) -> None:
        """Record a paper the index holds already: records repeating it are counted (``report.known``)."""
        self._id_sources.setdefault(paper_id, KNOWN)
        self._text_sources.setdefault(bytes.fromhex(text_key), KNOWN)

    def check_found(self, paths) -> None:
        """Raise the user error for a corpus in which nothing was admitted."""
        if not self._id_sources and self.reading.left_out:
            conditions = " and ".join(f"'{condition}'" for condition in self.reading.where)
            raise UserError(
                f"no paper of {', '.join(str(p) for p in paths)} meets {conditions} "
                f"({self.reading.left_out:,} records left out)"
            )
        if not self._id_sources:
            raise UserError(
                f"no abstracts found in {', '.join(str(p) for p in paths)}"
                + (f" ({self.report.skipped[0]})" if self.report.skipped else "")
            )


def admitted_papers(
    paths: Sequence[str | Path],
    overrides: dict[str, str | None] | None,
    admission: Admission,
    announce: bool = True,
    on_bytes=None,
):
    """The papers (``paper_row`` dicts) ``admission`` keeps, reading one file at a time, in corpus
    order, a record at a time (:func:`iter_records`); ``announce`` as in ``read_records``.
    ``on_bytes(count)`` follows the reading: the bytes of the files on disk read so far."""
    if not paths:
        raise UserError("no corpus files given")
    for path in paths:
        for record in iter_records(path, overrides, announce, on_bytes=on_bytes, reading=admission.reading):
            row = paper_row(record)
            key, chars, status = abstract_key(row["abstract"]), len(row["abstract"]), row["extra"].get("status")
            if admission.admit(row["source"], row["id"], key, chars, status):
                yield row


def filled_fields(papers: pd.DataFrame) -> set[str]:
    """The optional fields at least one of ``papers`` has a value for (the others are left out)."""
    return {name for name in OPTIONAL_FIELDS if (papers[name].dropna().astype(str) != "").any()}
