"""A file's columns mapped to paperscope's fields (found by common names, or named by the user), the
corpus's own columns kept beside them, and the conditions a record must meet (``Reading``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paperscope.embed import library
from paperscope.embed.columns import CONVERTERS, CorpusColumns, as_text, stored_name
from paperscope.embed.conditions import Condition, parse
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


def column_key(name: str) -> str:
    """A column name as matched against FIELD_NAMES: lower case, bracketed notes dropped, every run
    of other characters one underscore ("Paper ID#" → paper_id, "Abstract Text" → abstract_text)."""
    name = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", name.lower())
    return re.sub(r"[^0-9a-z]+", "_", name).strip("_")


def resolve_columns(
    path: Path, columns: list[str], overrides: dict[str, str | None], fmt: str, library_entries: bool = False
) -> dict[str, str]:
    """Map our field names to the file's column names."""
    lower: dict[str, str] = {}
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


def own_columns(columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """The corpus's own columns kept beside paperscope's fields, file column → stored name: every
    column but those read as the id, title and abstract and those read as a field of their own
    name ("year", "Authors"); a date read as the year ("update_date") is kept too."""
    taken = {mapping[name] for name in ("id", "title", "abstract") if name in mapping}
    taken |= {column for name, column in mapping.items() if column_key(column) == name}
    return {column: stored_name(column) for column in columns if column not in taken}


_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def _year(value: str) -> int | None:
    match = _YEAR.search(value)
    return int(match.group(1)) if match else None


@dataclass
class Reading:
    """What the reading of one build's files shares: the kinds of the corpus's own columns
    (``columns``: told by the first file that has each), the conditions a record must pass to be
    read (``where``: ``build --where``), how many records they left out (``left_out``) and how many
    processes map the records of a large file of JSON lines (``workers``)."""

    columns: CorpusColumns = field(default_factory=CorpusColumns)
    where: tuple[Condition | str, ...] = ()  # given as text or parsed; parsed once made
    left_out: int = 0
    workers: int = 1  # processes that map a file of JSON lines of PARALLEL_READ_BYTES or more (parallel_mapping)

    def __post_init__(self):
        self.where = tuple(parse(condition) for condition in self.where)

    def tests(self, path: Path) -> list:
        """The conditions as (condition, field or stored column, kind, bound), each column checked:
        a field of paperscope's, or a column some file read so far has."""
        tests = []
        for condition in map(parse, self.where):  # (already parsed: parse passes them through)
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


PLAIN_FIELDS = ("id", "title", "abstract", "authors", "venue", "categories")  # read as text, nothing derived


def map_rows(path: Path, rows, mapping: dict, extras: dict, links: list, reading: Reading) -> Iterator[dict | None]:
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
                probe: dict[str, Any] = {name: as_text(raw.get(column)) for name, column in probed}
                probe["extra"] = {name: converted(raw.get(column)) for column, name, converted in first}
                if not reading.passes(probe, tests):
                    yield None  # left out: its bytes counted in the reading's progress
                    continue
            record: dict[str, Any] = {name: as_text(raw.get(column)) for name, column in fields}
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


def met(path: Path, records, reading: Reading) -> Iterator[dict]:
    """The library ``records`` that meet the conditions of ``reading`` (those left out counted)."""
    tests = reading.tests(path) if reading.where else []
    for record in records:
        if not tests or reading.passes(record, tests):
            yield record
