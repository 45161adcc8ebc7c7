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
import gzip
import hashlib
import io
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from paperscope.embed import library
from paperscope.embed.text import normalise_text
from paperscope.embed.titles import derive_title
from paperscope.errors import UserError

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
MAX_FILE_BYTES = 2 * 1024**3
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


def detect_format(path: Path, head: bytes) -> str:
    """Pick a reader from the file name, falling back to the first bytes."""
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


def _read_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise UserError(f"{path}: is a directory; pass the corpus files inside it")
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise UserError(f"{path}: larger than {MAX_FILE_BYTES // 1024**3} GiB; split it into several files")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path}: broken gzip data ({exc})") from None
    if not data.strip():
        raise UserError(f"{path}: the file is empty")
    return data


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) text; binary data and other encodings are refused."""
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not utf16 and b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise UserError(
            f"{path}:{line}: binary data (NUL bytes), not a text corpus; pass CSV, TSV, JSON, JSONL, TXT or Parquet"
        )
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
            "save it as UTF-8 or pass a CSV/JSON/Parquet file"
        ) from None
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise UserError(f"{path}:{line}: NUL character in text; this looks like a binary file, not a corpus")
    return text


def _read_text_format(path: Path, text: str) -> list[tuple[int, dict]]:
    """Blocks separated by blank lines; a first one-line block without a full stop is a heading."""
    blocks, start, current = [], 1, []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            blocks.append((start, current))
            current = []
    if current:
        blocks.append((start, current))
    heading = ""
    first_lines = blocks[0][1] if blocks else []
    if len(first_lines) == 1 and len(first_lines[0]) <= 120 and not first_lines[0].rstrip().endswith("."):
        heading = normalise_text(first_lines[0])
        blocks = blocks[1:]
    if not blocks:
        raise UserError(f"{path}: no abstracts after the heading line (abstracts are separated by blank lines)")
    return [(line, {"abstract": " ".join(lines), "venue": heading}) for line, lines in blocks]


def _read_delimited(path: Path, text: str, delimiter: str) -> list[tuple[int, dict]]:
    csv.field_size_limit(MAX_ABSTRACT_CHARS * 10)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
        rows = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise UserError(f"{path}:{reader.line_num}: {len(row)} fields where the header has {len(header)}")
            rows.append((reader.line_num, dict(zip(header, row, strict=True))))
    except csv.Error as exc:
        raise UserError(
            f"{path}:{reader.line_num}: malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})"
        ) from None
    return rows


def _read_jsonl(path: Path, text: str) -> list[tuple[int, dict]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise UserError(f"{path}:{number}: broken JSON line ({getattr(exc, 'msg', 'nested too deeply')})") from None
        if not isinstance(record, dict):
            raise UserError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}")
        rows.append((number, record))
    return rows


def _read_json(path: Path, text: str) -> list[tuple[int, dict]]:
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


def _read_parquet(path: Path, data: bytes) -> list[tuple[int, dict]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    return [(i + 1, record) for i, record in enumerate(table.to_pylist())]


def _as_text(value) -> str:
    """Flatten a field value (string, number, list of names, {'name': …} dicts) into one string."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, dict):
        value = value.get("name") or " ".join(str(v) for v in value.values() if isinstance(v, str))
    if isinstance(value, (list, tuple)):
        return "; ".join(filter(None, (_as_text(item) for item in value)))
    return normalise_text(str(value))


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


def _year(value: str) -> int | None:
    match = re.search(r"\b(1[89]\d\d|20\d\d)\b", value)
    return int(match.group(1)) if match else None


def read_records(
    path: str | Path,
    overrides: dict[str, str | None] | None = None,
    announce: bool = True,
    keep_without_abstract: bool = False,
) -> list[dict]:
    """Read one corpus file into a list of paper dicts with normalised fields and a ``source``;
    ``announce`` logs which columns were used (once per build: a second pass over the files passes False).
    Entries of a library file (BibTeX, RIS, CSL-JSON, OpenAlex, Semantic Scholar) without an abstract
    are counted in one log line and left out, unless ``keep_without_abstract`` (a collection's members
    are matched by DOI, arXiv id or title, abstract or not)."""
    path = Path(path)
    data = _read_bytes(path)
    fmt = detect_format(path, data[:64])
    text = ""
    if fmt == "parquet":
        rows = _read_parquet(path, data)
    elif fmt in ("bib", "ris"):
        text = _decode(path, data)
        read = (library.read_bibtex if fmt == "bib" else library.read_ris)(path, text)
        return _library_records(path, read, overrides or {}, announce, keep_without_abstract)
    else:
        text = _decode(path, data)
        readers = {
            "text": _read_text_format,
            "jsonl": _read_jsonl,
            "json": _read_json,
            "csv": lambda p, t: _read_delimited(p, t, ","),
            "tsv": lambda p, t: _read_delimited(p, t, "\t"),
        }
        rows = readers[fmt](path, text)
    if not rows:
        raise UserError(f"{path}: no records found")
    kind = library.recognise([record for _, record in rows[:20]]) if fmt in ("json", "jsonl", "parquet") else None
    if kind:
        read = library.map_records(path, text, kind, rows)
        return _library_records(path, read, overrides or {}, announce, keep_without_abstract)
    columns = list(dict.fromkeys(key for _, record in rows for key in record))
    mapping = _resolve_columns(path, columns, overrides or {}, fmt, keep_without_abstract)
    if "arxiv_id" not in mapping and "id" in mapping and {"authors_parsed", "versions"} <= set(columns):
        mapping["arxiv_id"] = mapping["id"]  # the arXiv metadata snapshot: its ids are arXiv ids
    if announce and fmt != "text":
        used = ", ".join(f"{'text' if name == 'abstract' else name} ← {column!r}" for name, column in mapping.items())
        derived = "" if "title" in mapping else "; no title column: titles are derived from the abstracts"
        logger.info("%s: fields %s%s", path.name, used, derived)
    links = sorted(
        (column for column in columns if column_key(column) in FIELD_NAMES["url"]),
        key=lambda column: FIELD_NAMES["url"].index(column_key(column)),
    )
    records = []
    for line, raw in rows:
        record = {name: _as_text(raw.get(column)) for name, column in mapping.items() if name != "url"}
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
        records.append(record)
    return records


def _library_records(
    path: Path, read: library.LibraryRead, overrides: dict, announce: bool, keep_without_abstract: bool
) -> list[dict]:
    """The records of a library file: fields named with --text-field etc. applied, the fields used and
    the entries without an abstract logged, those left out unless ``keep_without_abstract``."""
    name = library.FORMAT_NAMES[read.kind]
    if not read.rows:
        raise UserError(f"{path}: no {name} entries found")
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
    title (derived from the abstract when there is none), abstract, optional fields, source."""
    abstract = record.get("abstract", "")
    title = record.get("title", "")
    return {
        "id": record.get("id") or text_id(abstract),
        "title": title or (derive_title(abstract) if abstract else ""),
        "title_derived": not title,
        "abstract": abstract,
        **{name: record.get(name) for name in OPTIONAL_FIELDS},
        "source": record["source"],
    }


KNOWN = "the index"  # the "source" of a paper an index holds already


class Admission:
    """Decides, record by record in corpus order, which become papers: the first of each id and of
    each abstract (up to case) is kept; empty and overlong abstracts are skipped. ``report`` says why."""

    def __init__(self):
        self.report = ReadReport()
        self._id_sources: dict[str, str] = {}
        self._text_sources: dict[str, str] = {}

    def admit(self, source: str, paper_id: str, text_key: str, chars: int) -> bool:
        """Whether the record at ``source`` (id, ``abstract_key`` and length of its abstract) is kept."""
        if not chars:
            self.report.skipped.append(f"{source}: empty abstract")
        elif chars > MAX_ABSTRACT_CHARS:
            self.report.skipped.append(f"{source}: abstract of {chars:,} characters (limit {MAX_ABSTRACT_CHARS:,})")
        elif self._text_sources.get(text_key, "") is KNOWN or self._id_sources.get(paper_id, "") is KNOWN:
            self.report.known += 1
        elif text_key in self._text_sources:
            self.report.duplicate_abstracts.append(f"{source} repeats {self._text_sources[text_key]}")
        elif paper_id in self._id_sources:
            self.report.duplicate_ids.append(f"{paper_id} at {source} and {self._id_sources[paper_id]}")
        else:
            self._id_sources[paper_id], self._text_sources[text_key] = source, source
            return True
        return False

    def know(self, paper_id: str, text_key: str) -> None:
        """Record a paper the index holds already: records repeating it are counted (``report.known``)."""
        self._id_sources.setdefault(paper_id, KNOWN)
        self._text_sources.setdefault(text_key, KNOWN)

    def check_found(self, paths) -> None:
        """Raise the user error for a corpus in which nothing was admitted."""
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
    order; ``announce`` as in ``read_records``. ``on_bytes(count)`` follows the reading: each
    record, kept or not, accounts for an equal share of its file's bytes on disk."""
    if not paths:
        raise UserError("no corpus files given")
    for path in paths:
        records = read_records(path, overrides, announce)
        share = Path(path).stat().st_size / len(records)
        for record in records:
            row = paper_row(record)
            if on_bytes:
                on_bytes(share)
            if admission.admit(row["source"], row["id"], abstract_key(row["abstract"]), len(row["abstract"])):
                yield row


def filled_fields(papers: pd.DataFrame) -> set[str]:
    """The optional fields at least one of ``papers`` has a value for (the others are left out)."""
    return {name for name in OPTIONAL_FIELDS if (papers[name].dropna().astype(str) != "").any()}
