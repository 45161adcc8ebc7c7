"""A collection written out as CSV, BibTeX or RIS, for a reference manager or a spreadsheet."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from paperscope.errors import UserError
from paperscope.files import atomic_path

FORMATS = (".csv", ".bib", ".ris")
# LaTeX's special characters, written so that BibTeX reads them back as they were
BIBTEX_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip


def _bibtex_text(value) -> str:
    return "".join(BIBTEX_ESCAPES.get(char, char) for char in str(value))


def _citation_key(paper: dict, taken: set[str]) -> str:
    """A BibTeX key from the first author's surname, the year and the title's first word."""
    author = re.split(r"[;,]| and ", str(paper.get("authors") or ""))[0].split()
    title = re.findall(r"[A-Za-z0-9]+", str(paper.get("title") or ""))
    key = (
        "".join([author[-1] if author else "paper", str(paper.get("year") or ""), title[0] if title else ""]) or "paper"
    )
    key = re.sub(r"[^A-Za-z0-9]", "", key).lower() or "paper"
    unique, suffix = key, 1
    while unique in taken:
        suffix += 1
        unique = f"{key}{suffix}"
    taken.add(unique)
    return unique


def _authors(value) -> list[str]:
    return [name.strip() for name in re.split(r";| and ", str(value or "")) if name.strip()]


def as_bibtex(papers: pd.DataFrame) -> str:
    """The papers as BibTeX entries (@article, or @misc without a venue)."""
    entries, taken = [], set()
    for paper in papers.to_dict("records"):
        fields = {
            "title": paper.get("title"),
            "author": " and ".join(_authors(paper.get("authors"))),
            "year": paper.get("year"),
            "journal": paper.get("venue"),
            "doi": paper.get("doi"),
            "eprint": paper.get("arxiv_id"),
            "url": paper.get("url"),
            "abstract": paper.get("abstract"),
        }
        lines = [
            f"  {name} = {{{_bibtex_text(value)}}}" for name, value in fields.items() if pd.notna(value) and value != ""
        ]
        kind = "article" if fields["journal"] else "misc"
        entries.append(f"@{kind}{{{_citation_key(paper, taken)},\n" + ",\n".join(lines) + "\n}\n")
    return "\n".join(entries)


def as_ris(papers: pd.DataFrame) -> str:
    """The papers as RIS records (TY JOUR, or GEN without a venue)."""
    records = []
    for paper in papers.to_dict("records"):
        lines = [f"TY  - {'JOUR' if paper.get('venue') else 'GEN'}"]
        lines += [f"AU  - {name}" for name in _authors(paper.get("authors"))]
        for tag, name in (
            ("TI", "title"),
            ("PY", "year"),
            ("JO", "venue"),
            ("DO", "doi"),
            ("UR", "url"),
            ("AB", "abstract"),
        ):
            value = paper.get(name)
            if pd.notna(value) and value != "":
                lines.append(f"{tag}  - {' '.join(str(value).split())}")
        if paper.get("id"):
            lines.append(f"ID  - {paper['id']}")
        records.append("\n".join([*lines, "ER  - "]) + "\n")
    return "\n".join(records)


def as_csv(papers: pd.DataFrame) -> str:
    """The papers as CSV, a header then a row each."""
    text = io.StringIO()
    papers.to_csv(text, index=False, quoting=csv.QUOTE_MINIMAL)
    return text.getvalue()


def write(papers: pd.DataFrame, path: str | Path) -> Path:
    """Write ``papers`` to ``path`` in the format its suffix names (.csv, .bib or .ris), atomically."""
    path = Path(path)
    writers = {".csv": as_csv, ".bib": as_bibtex, ".ris": as_ris}
    if path.suffix.lower() not in writers:
        raise UserError(f"{path}: export as .csv, .bib or .ris, not '{path.suffix or 'no suffix'}'")
    text = writers[path.suffix.lower()](papers)
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path
