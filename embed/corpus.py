"""Read corpus files into papers: normalised text, stable ids, display titles.

Supported inputs (optionally ``.gz``-compressed): the plain-text sample format (an optional
heading line naming the collection, then abstracts separated by blank lines), CSV, TSV,
JSON (a list of records), JSON lines (the arXiv metadata snapshot among them) and Parquet.
Fields are found by common column names, or named explicitly. Library files and bibliographic
dumps (BibTeX, RIS, CSL-JSON, OpenAlex works, Semantic Scholar records) are read by
``embed.library``, which maps their fields itself.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import logging
import multiprocessing
import re
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import orjson
import pandas as pd

from paperscope.embed import library, streams
from paperscope.embed.columns import CONVERTERS, CorpusColumns, as_text, stored_name
from paperscope.embed.conditions import Condition, parse
from paperscope.embed.text import normalise_text
from paperscope.embed.titles import derive_title
from paperscope.errors import UserError
from paperscope.settings import (
    MAX_LINE_BYTES,
    PARALLEL_READ_BYTES,
    PARQUET_BATCH_ROWS,
    READ_BLOCK_CHARS,
    STREAM_HEAD_BYTES,
    STREAM_HEAD_RECORDS,
)

# Candidate column names, most specific first; matched after column_key (case, spaces,
# punctuation and bracketed notes do not count: "Paper Title (final)" is paper_title).
FIELD_NAMES = {
    "id": ["id", "paper_id", "paperid", "arxiv_id", "doi", "uid"],
    "title": ["title", "paper_title"],
    "abstract": ["abstract", "summary", "text", "abstract_text", "paper_abstract", "content"],
    "year": ["year", "publication_year", "update_date", "published", "publication_date", "date"],
    "authors": ["authors", "author", "author_names"],
    "venue": ["venue", "conference", "journal", "booktitle"],
    "url": ["url", "link", "pdf_url", "pdf", "html_url"],  # a paper's link: the first of these that is http(s)
    "categories": ["categories", "category", "primary_category", "primary_area", "subjects", "keywords"],
    "doi": ["doi"],
    "arxiv_id": ["arxiv_id", "arxiv", "arxivid", "eprint"],
}
# doi and arxiv_id are stored normalised (library.normalise_doi, normalise_arxiv_id): the keys a library
# entry is matched to a paper by. url is an http(s) link, else made from the DOI or arXiv id
# (library.paper_link). year is the only one that is not a string.
OPTIONAL_FIELDS = ["year", "authors", "venue", "url", "categories", "doi", "arxiv_id"]
logger = logging.getLogger(__name__)
MAX_ABSTRACT_CHARS = 200_000  # longer "abstracts" are whole papers pasted by mistake
TEXT_RECIPE = "title + '. ' + abstract when the paper has a real title, else the abstract alone"


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
        for label, items in [
            ("records skipped", self.skipped),
            ("duplicate ids kept once", self.duplicate_ids),
            ("duplicate abstracts kept once", self.duplicate_abstracts),
        ]:
            if items:
                shown = "; ".join(items[:5]) + (f"; … {len(items) - 5} more" if len(items) > 5 else "")
                out.append(f"{len(items)} {label}: {shown}")
        return out


def text_id(abstract: str) -> str:
    """A short stable id from the normalised abstract, so ids survive reordering and re-runs."""
    return hashlib.sha256(abstract.encode("utf-8")).hexdigest()[:12]


# Files a user may mistake for a corpus, known by their first bytes: what each is, said in the refusal
FOREIGN_SIGNATURES = (
    (b"PK\x03\x04", "a ZIP archive (a Word .docx, an Excel .xlsx, an OpenDocument file…)"),
    (b"%PDF-", "a PDF document"),
    (b"\xd0\xcf\x11\xe0", "an Office document (.doc, .xls)"),
    (b"{\\rtf", "an RTF document"),
)
FORMATS_READ = (
    "text (.txt, .md), .csv, .tsv, .json, .jsonl or .parquet, or a library file (.bib, .ris, CSL-JSON, "
    "OpenAlex or Semantic Scholar JSON lines), optionally .gz"
)


def detect_format(path: Path, head: bytes) -> str:
    """Pick a reader from the file name, falling back to the first bytes; a document of another
    kind (a .docx, a PDF…) is a UserError naming the formats read."""
    for signature, what in FOREIGN_SIGNATURES:
        if head.startswith(signature):
            raise UserError(f"{path}: {what}, not a corpus format paperscope reads; give {FORMATS_READ}")
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    ext = suffixes[-1] if suffixes else ""
    by_ext = {
        ".txt": "text",
        ".md": "text",
        ".csv": "csv",
        ".tsv": "tsv",
        ".tab": "tsv",
        ".json": "json",
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".parquet": "parquet",
        ".pq": "parquet",
        ".bib": "bib",
        ".bibtex": "bib",
        ".ris": "ris",
    }
    if ext in by_ext:
        return by_ext[ext]
    if head.startswith(b"PAR1"):
        return "parquet"
    stripped = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if re.match(rb"(%[^\n]*\n\s*)*@\s*[a-zA-Z]+\s*[{(]", stripped):
        return "bib"
    if re.match(rb"TY  - ", stripped):
        return "ris"
    if stripped.startswith(b"["):
        return "json"
    if stripped.startswith(b"{"):
        return "jsonl"
    return "text"


def _read_text_format(path: Path, lines) -> Iterator[tuple[int, dict]]:
    """Blocks separated by blank lines; a first one-line block without a full stop is a heading."""
    heading, first, start, current = "", True, 1, []

    def block(start: int, lines: list[str]):
        nonlocal first, heading
        if first:
            first = False
            only = lines[0] if len(lines) == 1 else ""
            if only and len(only) <= 120 and not only.rstrip().endswith("."):
                heading = normalise_text(only)
                return None
        return (start, {"abstract": " ".join(lines), "venue": heading})

    found = False
    for number, line in lines:
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            if (row := block(start, current)) is not None:
                found = True
                yield row
            current = []
    if current and (row := block(start, current)) is not None:
        found = True
        yield row
    if not found:
        raise UserError(f"{path}: no abstracts after the heading line (abstracts are separated by blank lines)")


def _csv_lines(chunks) -> Iterator[str]:
    """Lines split as ``io.StringIO(newline="")`` splits them: at LF, CR LF and a lone CR."""
    for _, chunk in chunks:
        if "\r" in chunk:
            yield from (piece for piece in re.split(r"(?<=\r)(?!\n)", chunk) if piece)
        else:
            yield chunk


def _read_delimited(path: Path, chunks, delimiter: str) -> Iterator[tuple[int, dict]]:
    csv.field_size_limit(MAX_ABSTRACT_CHARS * 10)
    reader = csv.reader(_csv_lines(chunks), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise UserError(f"{path}:{reader.line_num}: {len(row)} fields where the header has {len(header)}")
            yield reader.line_num, dict(zip(header, row, strict=True))
    except csv.Error as exc:
        raise UserError(
            f"{path}:{reader.line_num}: malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})"
        ) from None


class JsonLines:
    """The records of JSON lines (``chunks``: ``Source.chunks()``'s (line, text) pairs), numbered as
    ``Source.lines`` numbers them from ``start``: a line is read by orjson (3x as fast as json); any
    line orjson refuses, or may read otherwise than json would (a whole number past 64 bits comes as
    a float), and any chunk holding another line break that ``str.splitlines`` splits at, is read as
    before, a line at a time, by json (its errors). ``number``: the last line read; ``pending``:
    whether lines of the chunk read last are still to come (else the rest of ``chunks`` is unread)."""

    def __init__(self, path: Path, chunks, start: int = 0):
        self.path = path
        self.chunks = chunks
        self.number = start
        self.pending = False

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        for _, chunk in self.chunks:
            if "\r" not in chunk and "\x85" not in chunk and "\u2028" not in chunk and "\u2029" not in chunk:
                try:
                    record = orjson.loads(chunk)
                except orjson.JSONDecodeError:
                    record = None
                if type(record) is dict and _exact(record):
                    self.number += 1
                    yield self.number, record
                    continue
            lines = chunk.splitlines() or [""]
            for index, line in enumerate(lines, start=1):
                self.number += 1
                self.pending = index < len(lines)
                yield from _read_json_line(self.path, self.number, line)
            self.pending = False


def _line_count(chunk: str) -> int:
    """The lines :class:`JsonLines` numbers in one chunk (a JSON object is never more than one)."""
    return len(chunk.splitlines()) or 1


def _exact(value) -> bool:
    """Whether orjson read every number of ``value`` as json does: no float of 2**63 or more (orjson
    reads a whole number past 64 bits as one; json as an int)."""
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if (kind is float and abs(item) >= 2**63) or ((kind is dict or kind is list) and not _exact(item)):
            return False
    return True


def _read_json_line(path: Path, number: int, line: str) -> Iterator[tuple[int, dict]]:
    """One JSON line read by json: the record, nothing for a blank line, else the error naming the line."""
    if line.strip():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise UserError(f"{path}:{number}: broken JSON line ({getattr(exc, 'msg', 'nested too deeply')})") from None
        if not isinstance(record, dict):
            raise UserError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}")
        yield number, record


def _read_json_text(path: Path, text: str) -> list[tuple[int, dict]]:
    """A JSON document read whole: a list of records, or an object holding one."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"{path}{where}: broken JSON ({getattr(exc, 'msg', 'nested too deeply')})") from None
    if isinstance(data, dict):  # {"papers": [...]}, {"meta": …, "results": [...], "group_by": []} and the like
        lists = [value for value in data.values() if isinstance(value, list)]
        if len(lists) > 1 and sum(bool(value) for value in lists) == 1:  # the others empty: an API's page
            lists = [value for value in lists if value and all(isinstance(item, dict) for item in value)] or lists
        data = lists[0] if len(lists) == 1 else [data]
    if not isinstance(data, list):
        line = text[: len(text) - len(text.lstrip())].count("\n") + 1
        raise UserError(
            f"{path}:{line}: expected a JSON list of paper records (CSL-JSON too is a list of items), "
            f"found {type(data).__name__}"
        )
    bad = next((i for i, record in enumerate(data) if not isinstance(record, dict)), None)
    if bad is not None:
        lines = library.json_item_lines(text)
        where = f":{lines[bad]}" if lines and len(lines) == len(data) else ""
        raise UserError(f"{path}{where}: record {bad + 1} is a {type(data[bad]).__name__}, not a JSON object")
    return [(i + 1, record) for i, record in enumerate(data)]


def _json_lines(source: streams.Source) -> bool:
    """Whether a ``.json`` file holds a JSON object a line (the arXiv snapshot's ``.json``)."""
    head = source.head(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"{"):
        return False
    first, _, rest = source.head(streams.BUFFER_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip().partition(b"\n")
    return bool(rest.strip()) and _is_object(first.decode("utf-8", errors="replace"))


def _read_json(path: Path, source: streams.Source) -> Iterator[tuple[int, dict]]:
    """A JSON list streamed item by item (:func:`_json_items`); any other JSON (an object holding the
    list) read whole. (A file of JSON objects a line each is read as JSON lines: :func:`_rows`.)
    An error while streaming names the line it is on, the file never read again."""
    head = source.head(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"[") or source.head(2).startswith(streams.UTF16_MARKS):
        yield from _read_json_text(path, streams.decode(path, source.read_all()))  # nothing read yet: all of it
        return
    try:
        yield from enumerate(_json_items(source), start=1)
    except _BrokenJson as broken:
        where, reason = broken.args
        raise UserError(f"{path}:{where}: {reason}") from None


class _BrokenJson(Exception):
    """A JSON list that does not read: (line, what is wrong)."""


_SPACE = re.compile(r"[ \t\n\r]*")
JSON_READ_CHARS = 1024 * 1024  # characters of a JSON list decoded at a time


def _json_items(source: streams.Source) -> Iterator[dict]:
    """The objects of a top-level JSON list, each decoded by json's own decoder (``raw_decode``) as
    its text arrives, so a record reads as ``json.loads`` reads it; anything else is _BrokenJson."""
    decoder, chunks = json.JSONDecoder(), source.chunks()
    state = {"buffer": "", "start": 0, "line": 1, "done": False}

    def fill(least: int) -> bool:
        buffer = state["buffer"][state["start"] :]
        pieces, size = [buffer], len(buffer)
        for _, chunk in chunks:
            pieces.append(chunk)
            size += len(chunk)
            if size >= least:
                break
        else:
            state["done"] = True
        state["buffer"], state["start"] = "".join(pieces), 0
        return size > len(buffer)

    def next_char() -> str:
        while True:
            buffer, start = state["buffer"], state["start"]
            end = _SPACE.match(buffer, start).end()
            state["line"] += buffer.count("\n", start, end)
            state["start"] = end
            if end < len(buffer):
                return buffer[end]
            if state["done"] or not fill(JSON_READ_CHARS):
                return ""

    def broken(reason: str, at: int | None = None) -> _BrokenJson:
        """The error at the buffer's position ``at`` (default: where the next record starts)."""
        lines = state["buffer"].count("\n", state["start"], at) if at is not None else 0
        return _BrokenJson(state["line"] + lines, f"broken JSON ({reason})")

    if next_char() != "[":
        raise broken("not a JSON list")
    state["start"] += 1
    closing, count = next_char() == "]", 0
    while not closing:
        while True:
            try:
                item, end = decoder.raw_decode(state["buffer"], state["start"])
                break
            except RecursionError:
                raise broken("nested too deeply") from None
            except json.JSONDecodeError as exc:
                pending = len(state["buffer"]) - state["start"]
                if state["done"] or pending > MAX_LINE_BYTES or not fill(2 * pending + JSON_READ_CHARS):
                    raise broken(exc.msg, exc.pos) from None
        count += 1
        if not isinstance(item, dict):
            raise _BrokenJson(state["line"], f"record {count} is a {type(item).__name__}, not a JSON object")
        yield item
        state["line"] += state["buffer"].count("\n", state["start"], end)
        state["start"] = end
        following = next_char()
        state["start"] += 1
        if following == ",":
            next_char()
        elif following == "]":
            closing = True
        else:
            raise broken("expected , or ] after a record")
    if next_char():
        raise broken("extra data after the list")


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _read_parquet(path: Path, source: streams.Source) -> Iterator[tuple[int, dict]]:
    """A Parquet file a batch of rows at a time (``PARQUET_BATCH_ROWS``, within its row groups);
    a ``.parquet.gz`` (or a named pipe) is copied to a temporary file first (Parquet needs to seek)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with nullcontext() if source.seekable() else tempfile.TemporaryFile() as copy:
        if copy is not None:
            shutil.copyfileobj(source.stream, copy, streams.BUFFER_BYTES)
            copy.seek(0)
        number = 0
        try:
            parquet = pq.ParquetFile(copy if copy is not None else source.disk, pre_buffer=False)
            # a row group at a time, none read ahead
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                for record in batch.to_pylist():
                    number += 1
                    yield number, record
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise UserError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None


def column_key(name: str) -> str:
    """A column name as matched against FIELD_NAMES: lower case, bracketed notes dropped, every run
    of other characters one underscore ("Paper ID#" → paper_id, "Abstract Text" → abstract_text)."""
    name = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", name.lower())
    return re.sub(r"[^0-9a-z]+", "_", name).strip("_")


def _resolve_columns(
    path: Path, columns: list[str], overrides: dict[str, str | None], fmt: str, library_entries: bool = False
) -> dict[str, str]:
    """Map our field names to the file's column names."""
    lower = {}
    for column in columns:
        lower.setdefault(column_key(column), column)
    resolved = {}
    for name, candidates in FIELD_NAMES.items():
        override = overrides.get(name)
        if override:
            if override not in columns:
                if fmt == "text":
                    continue
                raise UserError(
                    f"{path}: no field '{override}' (given as --{name if name != 'abstract' else 'text'}-field); "
                    f"fields are: {', '.join(columns[:20])}"
                )
            resolved[name] = override
            continue
        found = next((lower[c] for c in candidates if c in lower), None)
        if found:
            resolved[name] = found
    if "abstract" in resolved or (library_entries and resolved.keys() & {"title", "doi", "arxiv_id"}):
        return resolved
    fields = f"fields are: {', '.join(columns[:20]) or 'none'}"
    if library_entries:  # a collection's entries: matched by DOI, arXiv id or title; no --text-field there
        raise UserError(
            f"{path}: not a library file paperscope knows (BibTeX, RIS, CSL-JSON, OpenAlex, Semantic Scholar) and no "
            f"title, DOI, arXiv id or abstract field; {fields}"
        )
    raise UserError(
        f"{path}: no abstract-like field (looked for {', '.join(FIELD_NAMES['abstract'])}); {fields}; "
        "name one with --text-field"
    )


_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def _year(value: str) -> int | None:
    match = _YEAR.search(value)
    return int(match.group(1)) if match else None


def read_records(
    path: str | Path,
    overrides: dict[str, str | None] | None = None,
    announce: bool = True,
    keep_without_abstract: bool = False,
) -> list[dict]:
    """Read one corpus file into a list of paper dicts with normalised fields and a ``source``
    (:func:`iter_records`, every record at once)."""
    return list(iter_records(path, overrides, announce, keep_without_abstract))


def _rows(path: Path, source: streams.Source, fmt: str) -> Iterator[tuple[int, dict]]:
    """The raw records of a file of a corpus format, streamed: (line or item number, record)."""
    if fmt == "parquet":
        return _read_parquet(path, source)
    if fmt == "jsonl" or (fmt == "json" and _json_lines(source)):
        return JsonLines(path, source.chunks())
    if fmt == "json":
        return _read_json(path, source)
    if fmt in ("csv", "tsv"):
        return _read_delimited(path, source.chunks(), "," if fmt == "csv" else "\t")
    return _read_text_format(path, source.lines())


@dataclass
class Reading:
    """What the reading of one build's files shares: the kinds of the corpus's own columns
    (``columns``: told by the first file that has each), the conditions a record must pass to be
    read (``where``: ``build --where``), how many records they left out (``left_out``) and how many
    processes map the records of a large file of JSON lines (``workers``)."""

    columns: CorpusColumns = field(default_factory=CorpusColumns)
    where: tuple[Condition, ...] = ()
    left_out: int = 0
    workers: int = 1  # processes that map a file of JSON lines of PARALLEL_READ_BYTES or more (_parallel_mapping)

    def __post_init__(self):
        self.where = tuple(parse(condition) for condition in self.where)

    def tests(self, path: Path) -> list:
        """The conditions as (condition, field or stored column, kind, bound), each column checked:
        a field of paperscope's, or a column some file read so far has."""
        tests = []
        for condition in self.where:
            if condition.column in FIELD_NAMES:
                name, kind, extra = condition.column, "number" if condition.column == "year" else "text", False
            elif stored_name(condition.column) in self.columns.kinds:
                name, extra = stored_name(condition.column), True
                kind = self.columns.kinds[name]
            else:
                known = ", ".join([*FIELD_NAMES, *self.columns.kinds])
                raise UserError(f"{path}: no column '{condition.column}' for '{condition}'; the columns are: {known}")
            tests.append((condition, name, kind, condition.bound(kind), extra))
        return tests

    def passes(self, record: dict, tests: list) -> bool:
        """Whether ``record`` passes every test of :meth:`tests` (one that does not is counted)."""
        for condition, name, kind, bound, extra in tests:
            value = record.get("extra", {}).get(name) if extra else (record.get(name) or None)
            if not condition.test(value, kind, bound):
                self.left_out += 1
                return False
        return True


def iter_records(
    path: str | Path,
    overrides: dict[str, str | None] | None = None,
    announce: bool = True,
    keep_without_abstract: bool = False,
    *,
    on_bytes=None,
    reading: Reading | None = None,
) -> Iterator[dict]:
    """Read one corpus file as paper dicts with normalised fields, the corpus's own columns
    (``extra``: stored name → typed value, ``embed.columns``) and a ``source``, one record at
    a time (memory independent of the file's size; a ``.gz`` decompressed as it is read, guarded
    against compression bombs: ``embed.streams``). The fields are chosen, and the kinds of the
    other columns told, from the first ``STREAM_HEAD_RECORDS`` records (fewer when they take over
    ``STREAM_HEAD_BYTES``). ``announce`` logs which columns were used (once per build: a second
    pass over the files passes False). Entries of a library file (BibTeX, RIS, CSL-JSON, OpenAlex,
    Semantic Scholar: read whole) without an abstract are counted in one log line and left out,
    unless ``keep_without_abstract`` (a collection's members are matched by DOI, arXiv id or title,
    abstract or not). ``on_bytes(count)`` follows the bytes of the file on disk read so far;
    ``reading`` is shared by the files of one build (the records failing its conditions are left out)."""
    path = Path(path)
    reading = reading or Reading()
    with streams.Source(path) as source:
        if not source.head(1):
            raise UserError(f"{path}: the file is empty")
        fmt = detect_format(path, source.head(64))
        if fmt in ("bib", "ris"):
            text = streams.decode(path, source.read_all())
            read = (library.read_bibtex if fmt == "bib" else library.read_ris)(path, text)
            entries = _library_records(path, read, overrides or {}, announce, keep_without_abstract)
            records = _met(path, entries, reading)
        else:
            records = _mapped_records(path, source, fmt, overrides or {}, (announce, keep_without_abstract), reading)
        reported = 0
        for record in records:  # those meeting the conditions of ``reading`` (None for one left out)
            if on_bytes:
                on_bytes(source.consumed() - reported)
                reported = source.consumed()
            if record is not None:
                yield record
        if on_bytes:
            on_bytes(max(path.stat().st_size - reported, 0))


def own_columns(columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """The corpus's own columns kept beside paperscope's fields, file column → stored name: every
    column but those read as the id, title and abstract and those read as a field of their own
    name ("year", "Authors"); a date read as the year ("update_date") is kept too."""
    taken = {mapping[name] for name in ("id", "title", "abstract") if name in mapping}
    taken |= {column for name, column in mapping.items() if column_key(column) == name}
    return {column: stored_name(column) for column in columns if column not in taken}


def _mapped_records(
    path: Path, source: streams.Source, fmt: str, overrides: dict, flags: tuple[bool, bool], reading: Reading
) -> Iterator[dict | None]:
    """The records of a corpus format, their fields mapped by the first ones' keys (``iter_records``); None
    for a record the conditions of ``reading`` leave out."""
    announce, keep_without_abstract = flags
    rows = _rows(path, source, fmt)
    head = []
    for row in rows:  # the first STREAM_HEAD_RECORDS records, or fewer in the first STREAM_HEAD_BYTES
        head.append(row)
        if len(head) >= STREAM_HEAD_RECORDS or source.decompressed() > STREAM_HEAD_BYTES:
            break
    if not head:
        raise UserError(f"{path}: no records found")
    kind = library.recognise([record for _, record in head[:20]]) if fmt in ("json", "jsonl", "parquet") else None
    if kind:  # a library dump: read whole (CSL-JSON's items are numbered by the text's lines)
        text = ""
        if kind == "csl" and fmt == "json" and source.disk.seekable():  # from a named pipe: items numbered
            with streams.Source(path) as again:
                text = streams.decode(path, again.read_all())
        read = library.map_records(path, text, kind, [*head, *rows])
        yield from _met(path, _library_records(path, read, overrides, announce, keep_without_abstract), reading)
        return
    columns = list(dict.fromkeys(key for _, record in head for key in record))
    mapping = _resolve_columns(path, columns, overrides, fmt, keep_without_abstract)
    if "arxiv_id" not in mapping and "id" in mapping and {"authors_parsed", "versions"} <= set(columns):
        mapping["arxiv_id"] = mapping["id"]  # the arXiv metadata snapshot: its ids are arXiv ids
    extras = own_columns(columns, mapping) if fmt != "text" else {}
    reading.columns.settle(path, [record for _, record in head], extras)
    if announce and fmt != "text":
        used = ", ".join(f"{'text' if name == 'abstract' else name} ← {column!r}" for name, column in mapping.items())
        derived = "" if "title" in mapping else "; no title column: titles are derived from the abstracts"
        kept = ", ".join(f"{name} ({reading.columns.kinds[name]})" for name in extras.values())
        logger.info("%s: fields %s%s%s", path.name, used, derived, f"; its own columns kept: {kept}" if kept else "")
    links = sorted(
        (column for column in columns if column_key(column) in FIELD_NAMES["url"]),
        key=lambda column: FIELD_NAMES["url"].index(column_key(column)),
    )
    large = path.stat().st_size >= PARALLEL_READ_BYTES  # a pipe's size is 0
    forks = "fork" in multiprocessing.get_all_start_methods()  # not on Windows
    if isinstance(rows, JsonLines) and not rows.pending and reading.workers > 1 and large and forks:
        yield from _mapping(path, head, mapping, extras, links, reading)
        yield from _parallel_mapping(path, rows, (mapping, extras, links), reading)
        return
    yield from _mapping(path, chain(head, rows), mapping, extras, links, reading)


def _parallel_mapping(path: Path, rows: JsonLines, plan: tuple, reading: Reading) -> Iterator[dict]:
    """The records of the rest of ``rows`` (JSON lines after its head) mapped as :func:`_mapping` maps
    them (``plan``: its mapping, own columns and links), by ``reading.workers`` processes a block of
    lines each, in order: this process reads the lines and hands them over (up to two blocks a
    process ahead); the first error is raised where the file's reading would have raised it."""
    # forked: a spawned process would run the caller's script again (one without a __main__ guard
    # builds anew); they run nothing but this module's mapping, no lock of the caller's threads
    context = multiprocessing.get_context("fork")
    start, pending = rows.number, deque()
    with ProcessPoolExecutor(reading.workers, mp_context=context, initializer=_reading_process) as pool:
        try:
            for block in _blocks(rows.chunks):
                pending.append(pool.submit(_map_block, path, start, block, plan, reading))
                start += sum(map(_line_count, block))
                while len(pending) > 2 * reading.workers or (pending and pending[0].done()):
                    yield from _block_records(pending.popleft(), reading)
            while pending:
                yield from _block_records(pending.popleft(), reading)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _blocks(chunks) -> Iterator[list[str]]:
    """``chunks`` (``Source.chunks()``'s pairs) as lists of lines of about READ_BLOCK_CHARS."""
    block, size = [], 0
    for _, chunk in chunks:
        block.append(chunk)
        size += len(chunk)
        if size >= READ_BLOCK_CHARS:
            yield block
            block, size = [], 0
    if block:
        yield block


def _reading_process() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the build, which stops its readers


def _map_block(path: Path, start: int, block: list[str], plan: tuple, reading: Reading) -> tuple[bytes | list, int]:
    """In a reading process: the records of ``block`` (the lines after line ``start``) that meet the
    conditions of ``reading``, as JSON (a third of pickle's cost each way; as they are when a number
    does not fit 64 bits), and how many they left out."""
    reading.left_out = 0
    lines = JsonLines(path, enumerate(block), start)
    records = [record for record in _mapping(path, lines, *plan, reading) if record is not None]
    try:
        return orjson.dumps(records), reading.left_out
    except orjson.JSONEncodeError:
        return records, reading.left_out


def _block_records(done: Future, reading: Reading) -> list[dict]:
    """The records of a block :func:`_map_block` mapped: own columns of dates as dates again."""
    records, left_out = done.result()
    reading.left_out += left_out
    if isinstance(records, list):
        return records
    records = orjson.loads(records)
    dates = [name for name, kind in reading.columns.kinds.items() if kind == "date"]
    for record in records:
        extra = record["extra"]
        for name in dates:
            if extra.get(name) is not None:
                extra[name] = datetime.date.fromisoformat(extra[name])
    return records


PLAIN_FIELDS = ("id", "title", "abstract", "authors", "venue", "categories")  # read as text, nothing derived


def _mapping(path: Path, rows, mapping: dict, extras: dict, links: list, reading: Reading) -> Iterator[dict | None]:
    """``rows`` as records: paperscope's fields, the url (``links``), the source and the own columns
    (``extras``); None for a record the conditions of ``reading`` leave out, tested first on what
    they read, before the rest is mapped and converted (when they read only own columns and plain
    fields: the records a subset of the arXiv snapshot leaves out cost a third of those it keeps)."""
    fields = [(name, column) for name, column in mapping.items() if name != "url"]
    kinds = [(column, name, CONVERTERS[reading.columns.kinds[name]]) for column, name in extras.items()]
    tests = reading.tests(path) if reading.where else []
    tested = {name for _, name, _, _, extra in tests if extra}
    first = [(column, name, converted) for column, name, converted in kinds if name in tested]  # what the tests read
    on_fields = {name for _, name, _, _, extra in tests if not extra}
    early = bool(tests) and on_fields <= set(PLAIN_FIELDS)
    probed = [(name, column) for name, column in fields if name in on_fields]
    for line, raw in rows:
        try:
            if early:  # the tested values alone, first
                probe = {name: as_text(raw.get(column)) for name, column in probed}
                probe["extra"] = {name: converted(raw.get(column)) for column, name, converted in first}
                if not reading.passes(probe, tests):
                    yield None  # left out: its bytes counted in the reading's progress
                    continue
            record = {name: as_text(raw.get(column)) for name, column in fields}
            if "year" in record:
                record["year"] = _year(record["year"])
            if "doi" in record:
                record["doi"] = library.normalise_doi(record["doi"])
            if "arxiv_id" in record:
                record["arxiv_id"] = library.normalise_arxiv_id(record["arxiv_id"])
            link = library.paper_link([raw.get(column) for column in links], record.get("doi"), record.get("arxiv_id"))
            if link:
                record["url"] = link
            record["source"] = f"{path.name}:{line}"
            if tests and not early:  # a record left out is left before its other columns are converted
                record["extra"] = {name: converted(raw.get(column)) for column, name, converted in first}
                if not reading.passes(record, tests):
                    yield None
                    continue
            record["extra"] = {name: converted(raw.get(column)) for column, name, converted in kinds}
        except ValueError:  # the first value not of its column's kind, named
            for column in extras:
                reading.columns.value(f"{path}:{line}", column, raw.get(column))
            raise
        yield record


def _met(path: Path, records, reading: Reading) -> Iterator[dict]:
    """The library ``records`` that meet the conditions of ``reading`` (those left out counted)."""
    tests = reading.tests(path) if reading.where else []
    for record in records:
        if not tests or reading.passes(record, tests):
            yield record


def _library_records(
    path: Path, read: library.LibraryRead, overrides: dict, announce: bool, keep_without_abstract: bool
) -> list[dict]:
    """The records of a library file: fields named with --text-field etc. applied, the fields used and
    the entries without an abstract logged, those left out unless ``keep_without_abstract``."""
    name = library.FORMAT_NAMES[read.kind]
    if not read.rows:
        shape = library.ENTRY_SHAPES.get(read.kind)
        raise UserError(f"{path}: no {name} entries found" + (f" ({shape})" if shape else ""))
    library.apply_overrides(path, read, overrides)
    missing = sum(not record.get("abstract") for _, _, record in read.rows)
    if announce:
        used = ", ".join(
            f"{'text' if field == 'abstract' else field} ← {'/'.join(repr(label) for label in labels)}"
            for field, labels in sorted(read.used.items(), key=lambda item: list(FIELD_NAMES).index(item[0]))
        )
        derived = "" if "title" in read.used else "; no titles: titles are derived from the abstracts"
        logger.info("%s: %s, %d entries; fields %s%s", path.name, name, len(read.rows), used or "none", derived)
        if missing:
            logger.info(
                "%d of %d entries in %s have no abstract: %s",
                missing,
                len(read.rows),
                path.name,
                "kept" if keep_without_abstract else "skipped",
            )
    records = []
    for line, _, record in read.rows:
        if record.get("abstract") or keep_without_abstract or missing == len(read.rows):
            records.append({**record, "source": f"{path.name}:{line}"})
    return records


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

    def admit(self, source: str, paper_id: str, text_key: str, chars: int) -> bool:
        """Whether the record at ``source`` (id, ``abstract_key`` and length of its abstract) is kept."""
        key = bytes.fromhex(text_key)
        if not chars:
            self.report.skipped.append(f"{source}: empty abstract")
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


def embedding_text(title: str | None, abstract: str | None, title_derived: bool = False) -> str:
    """The text a paper is embedded from (TEXT_RECIPE): "title. abstract" when it has a real title
    (not one derived from its abstract), else the abstract alone; a library entry without an
    abstract (outside the corpus) is embedded from its title alone. The one place the recipe is written."""
    if title_derived or not title:
        return abstract or ""
    if not abstract:
        return title
    return f"{title.rstrip('.')}. {abstract}"


def embedding_texts(papers) -> list[str]:
    """The text embedded for each paper (:func:`embedding_text`): a table or dict of columns."""
    return [
        embedding_text(title, abstract, derived)
        for title, abstract, derived in zip(papers["title"], papers["abstract"], papers["title_derived"], strict=True)
    ]


def admitted_papers(
    paths: list[str | Path],
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
            if admission.admit(row["source"], row["id"], abstract_key(row["abstract"]), len(row["abstract"])):
                yield row


def filled_fields(papers: pd.DataFrame) -> set[str]:
    """The optional fields at least one of ``papers`` has a value for (the others are left out)."""
    return {name for name in OPTIONAL_FIELDS if (papers[name].dropna().astype(str) != "").any()}
