"""Corpus files read into records, one module a format; what callers use is here: ``iter_records``
(a file's records one at a time), ``read_records`` (all at once) and ``Reading`` (what the reading
of one build's files shares). Admission into a build's papers is ``readers.admission``.

Supported inputs (optionally ``.gz``-compressed): the plain-text sample format (``text_files``),
CSV and TSV (``csv_files``), JSON (a list of records: ``json_files``), JSON lines (the arXiv
metadata snapshot among them: ``json_lines``, a large file mapped by several processes:
``forked``) and Parquet (``parquet_files``); ``sniff`` picks the reader. Fields are found by common
column names, or named explicitly (``mapping``). Library files and bibliographic dumps (BibTeX,
RIS, CSL-JSON, OpenAlex works, Semantic Scholar records) are read by ``embed.library``, which maps
their fields itself.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path

from paperscope.embed import library, streams
from paperscope.embed.readers.csv_files import read_delimited
from paperscope.embed.readers.forked import parallel_mapping
from paperscope.embed.readers.json_files import read_json
from paperscope.embed.readers.json_lines import JsonLines
from paperscope.embed.readers.mapping import (
    FIELD_NAMES,
    Reading,
    column_key,
    map_rows,
    met,
    own_columns,
    resolve_columns,
)
from paperscope.embed.readers.parquet_files import read_parquet
from paperscope.embed.readers.sniff import detect_format, holds_json_lines
from paperscope.embed.readers.text_files import read_text
from paperscope.errors import UserError
from paperscope.limits import PARALLEL_READ_BYTES, STREAM_HEAD_BYTES, STREAM_HEAD_RECORDS

__all__ = ["Reading", "iter_records", "read_records"]
logger = logging.getLogger("paperscope")


def read_records(
    path: str | Path,
    overrides: dict[str, str | None] | None = None,
    announce: bool = True,
    keep_without_abstract: bool = False,
) -> list[dict]:
    """Read one corpus file into a list of paper dicts with normalised fields and a ``source``
    (:func:`iter_records`, every record at once)."""
    return list(iter_records(path, overrides, announce, keep_without_abstract))


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
            records: Iterator[dict | None] = met(path, entries, reading)
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


def _rows(path: Path, source: streams.Source, fmt: str) -> Iterable[tuple[int, dict]]:
    """The raw records of a file of a corpus format, streamed: (line or item number, record)."""
    if fmt == "parquet":
        return read_parquet(path, source)
    if fmt == "jsonl" or (fmt == "json" and holds_json_lines(source)):
        return JsonLines(path, source.chunks())
    if fmt == "json":
        return read_json(path, source)
    if fmt in ("csv", "tsv"):
        return read_delimited(path, source.chunks(), "," if fmt == "csv" else "\t")
    return read_text(path, source.lines())


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
        yield from met(path, _library_records(path, read, overrides, announce, keep_without_abstract), reading)
        return
    columns = list(dict.fromkeys(key for _, record in head for key in record))
    mapping = resolve_columns(path, columns, overrides, fmt, keep_without_abstract)
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
        yield from map_rows(path, head, mapping, extras, links, reading)
        yield from parallel_mapping(path, rows, (mapping, extras, links), reading)
        return
    yield from map_rows(path, chain(head, rows), mapping, extras, links, reading)


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
