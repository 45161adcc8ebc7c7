"""Which reader a corpus file needs: told by its name, else by its first bytes; documents of
another kind (a .docx, a PDF…) refused by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

from paperscope.embed import streams
from paperscope.errors import UserError

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


def holds_json_lines(source: streams.Source) -> bool:
    """Whether a ``.json`` file holds a JSON object a line (the arXiv snapshot's ``.json``)."""
    head = source.head(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"{"):
        return False
    first, _, rest = source.head(streams.BUFFER_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip().partition(b"\n")
    return bool(rest.strip()) and _is_object(first.decode("utf-8", errors="replace"))


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, RecursionError):
        return False
