"""A collection's members written back as library entries: BibTeX, RIS or CSL-JSON.

An entry imported from a library file is kept as the file wrote it (``record["entry"]`` of
:mod:`paperscope.embed.library`) and written back with its own citation key, entry type and
every field it had: in its own format field for field, in another through the pivot below (CSL's
types and names, the model every reference manager maps to). Where the entry and the corpus
disagree the entry wins and the corpus only fills what the entry lacks (``prefer="entry"``);
``prefer="corpus"`` lets the corpus's values replace the entry's. A paper added from the corpus
gets a readable key, surnameYEARword, unique within the file. The corpus's own columns (a
review's decision, its tags) are written only when asked (``corpus_fields``), and in BibTeX under
names no style reads (``paperscope-decision``).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from paperscope.embed.library import (
    BIBTEX_MACROS,
    bibtex_names,
    flat_text,
    latex_to_text,
    person_name,
    split_keywords,
)
from paperscope.errors import UserError

logger = logging.getLogger(__name__)

# An entry in CSL's terms (the pivot between the formats): concept -> value, a text, a list of
# texts (authors, keywords), a month number or the corpus's own columns ("extra"); keyed by
# concept names that come from HOLDERS, so a dict rather than a TypedDict.
Pivot = dict[str, Any]
FORMATS = {".bib": "bib", ".ris": "ris", ".json": "csl", ".csv": "csv"}
PREFERENCES = ("entry", "corpus")
# LaTeX's special characters, written so that BibTeX reads them back as they were
BIBTEX_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip
BIB_TYPES = {"article": "article-journal", "inproceedings": "paper-conference", "conference": "paper-conference",
             "book": "book", "proceedings": "book", "incollection": "chapter", "inbook": "chapter",
             "phdthesis": "thesis", "mastersthesis": "thesis", "thesis": "thesis", "techreport": "report",
             "report": "report", "manual": "report", "unpublished": "manuscript", "online": "webpage",
             "misc": "document"}  # fmt: skip
TO_BIB_TYPE = {"article-journal": "article", "paper-conference": "inproceedings", "book": "book",
               "chapter": "incollection", "thesis": "phdthesis", "report": "techreport", "manuscript": "unpublished",
               "article": "misc", "document": "misc", "webpage": "misc"}  # fmt: skip
RIS_TYPES = {"JOUR": "article-journal", "EJOUR": "article-journal", "JFULL": "article-journal",
             "CPAPER": "paper-conference", "CONF": "paper-conference", "BOOK": "book", "EBOOK": "book",
             "EDBOOK": "book", "CHAP": "chapter", "ECHAP": "chapter", "THES": "thesis", "RPRT": "report",
             "UNPB": "manuscript", "MANSCPT": "manuscript", "ELEC": "webpage", "GEN": "document"}  # fmt: skip
TO_RIS_TYPE = {"article-journal": "JOUR", "paper-conference": "CPAPER", "book": "BOOK", "chapter": "CHAP",
               "thesis": "THES", "report": "RPRT", "manuscript": "UNPB", "webpage": "ELEC", "article": "GEN",
               "document": "GEN"}  # fmt: skip
# Where a BibTeX entry of each type names its venue
BIB_VENUE = {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
             "techreport": "institution", "phdthesis": "school"}  # fmt: skip
# Each field of the pivot, and the fields of each format that hold it (the first is written)
HOLDERS = {
    "bib": {"title": ["title"], "authors": ["author"], "year": ["year", "date"],
            "venue": ["journal", "journaltitle", "booktitle", "institution", "school", "howpublished"],
            "publisher": ["publisher"], "doi": ["doi"], "url": ["url"], "abstract": ["abstract"],
            "keywords": ["keywords"], "arxiv_id": ["eprint"], "volume": ["volume"], "issue": ["number"],
            "pages": ["pages"], "isbn": ["isbn"], "issn": ["issn"], "note": ["note"]},
    "ris": {"title": ["title", "primary_title"], "authors": ["authors", "first_authors"],
            "year": ["year", "publication_year", "date"],
            "venue": ["secondary_title", "journal_name", "alternate_title3", "alternate_title1"],
            "publisher": ["publisher"], "doi": ["doi"], "url": ["urls"], "abstract": ["abstract", "notes_abstract"],
            "keywords": ["keywords"], "volume": ["volume"], "issue": ["number"], "pages": ["start_page"],
            "isbn": ["issn"], "note": ["notes"]},
    "csl": {"title": ["title"], "authors": ["author"], "year": ["issued"], "venue": ["container-title"],
            "publisher": ["publisher"], "doi": ["DOI"], "url": ["URL"], "abstract": ["abstract"],
            "keywords": ["keyword"], "arxiv_id": ["number"], "volume": ["volume"], "issue": ["issue"],
            "pages": ["page"], "isbn": ["ISBN"], "issn": ["ISSN"], "note": ["note"]},
}  # fmt: skip


@dataclass
class Member:
    """One member as exported: ``entry`` as imported (None for a paper added by id, or a member
    from before entries were kept), ``paper`` what is known of it (the corpus's fields for a paper
    in the index, else the entry's as read: title, authors "; "-joined, year, venue, doi, arxiv_id,
    url, abstract, categories), ``in_index``."""

    entry: dict | None
    paper: dict
    in_index: bool


# ---------------------------------------------------------------------------------------------
# Into the pivot: {type (CSL's), key, title, authors [First von Last], year, venue, doi, url, ...}


def _names(person) -> str:
    if isinstance(person, dict):
        return person.get("literal") or " ".join(
            flat_text(person.get(part)) for part in ("given", "non-dropping-particle", "family") if person.get(part)
        )
    return flat_text(person)


def from_paper(paper: dict) -> Pivot:
    """The pivot of a paper as the index (or a member's stored fields) knows it."""
    venue = flat_text(paper.get("venue"))
    arxiv = flat_text(paper.get("arxiv_id"))
    kind = "paper-conference" if venue else "article" if arxiv else "document"
    if re.search(r"journal|transactions|letters|review", venue, re.IGNORECASE):
        kind = "article-journal"
    authors = [name.strip() for name in flat_text(paper.get("authors")).split(";") if name.strip()]
    keywords = [word.strip() for word in flat_text(paper.get("categories")).split(";") if word.strip()]
    year = paper.get("year")
    pivot: Pivot = {
        "type": kind, "title": flat_text(paper.get("title")), "authors": authors,
        "year": str(int(year)) if isinstance(year, (int, float)) and year == year else flat_text(year),
        "venue": venue, "doi": flat_text(paper.get("doi")), "url": flat_text(paper.get("url")),
        "abstract": flat_text(paper.get("abstract")), "keywords": keywords, "arxiv_id": arxiv,
    }  # fmt: skip
    own = {name: _own_value(value) for name, value in (paper.get("extra") or {}).items()}
    pivot["extra"] = {name: value for name, value in own.items() if value not in (None, "", [])}
    return {name: value for name, value in pivot.items() if value}


def _own_value(value):
    """A value of one of the corpus's own columns as exported: text, a whole number as an int, a
    date as ISO text, a list as a list of text; None when empty."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return value if isinstance(value, (str, int, float)) else str(value)


def _own_text(value) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value)


def field_name(column: str) -> str:
    """A column's name as a BibTeX field no BibTeX or biblatex style reads: paperscope- before it
    in lower case, other characters than letters, digits, - and _ as one _ ("Review Score" →
    paperscope-review_score; a column "label" must not become biblatex's citation label)."""
    return "paperscope-" + (re.sub(r"[^a-z0-9_-]+", "_", column.lower()).strip("_") or "field")


def key_and_type(entry: dict) -> tuple[str, str]:
    """An entry's own citation key ("" if it has none) and its type in CSL's terms."""
    if entry["format"] == "bib":
        return entry["key"], BIB_TYPES.get(entry["type"], "document")
    if entry["format"] == "ris":
        fields = entry["fields"]
        return fields.get("id") or "", RIS_TYPES.get(fields.get("type_of_reference", "GEN"), "document")
    item = entry["item"]
    return str(item.get("citation-key") or item.get("id") or ""), item.get("type") or "document"


def from_entry(entry: dict) -> Pivot:
    """The pivot of an imported entry: its own key, its type and fields in CSL's terms."""
    fmt = entry["format"]
    key, kind = key_and_type(entry)
    if fmt == "bib":
        fields = {name.lower(): value for name, value in entry["fields"].items()}
        pivot: Pivot = {"type": kind, "key": key}
        for concept, holders in HOLDERS["bib"].items():
            value = next((fields[name] for name in holders if fields.get(name)), "")
            if concept == "authors":
                pivot[concept] = bibtex_names(value)
            elif concept == "keywords":
                pivot[concept] = split_keywords(latex_to_text(value))
            elif value:
                pivot[concept] = value if concept in ("url", "doi") else latex_to_text(value)
        pivot["month"] = _month(fields.get("month")) or _month(fields.get("date", "")[5:7])
        return {name: value for name, value in pivot.items() if value}
    if fmt == "ris":
        fields = entry["fields"]
        pivot = {"type": kind, "key": key}
        for concept, holders in HOLDERS["ris"].items():
            value = next((fields[name] for name in holders if fields.get(name)), "")
            if concept in ("authors", "keywords"):
                pivot[concept] = [person_name(n) if concept == "authors" else n for n in value or [] if n]
            elif concept == "url":
                pivot[concept] = value[0] if value else ""
            elif concept == "note":
                pivot[concept] = "; ".join(value) if isinstance(value, list) else value
            elif concept == "pages" and fields.get("end_page"):
                pivot[concept] = f"{value}--{fields['end_page']}"
            else:
                pivot[concept] = flat_text(value)
        pivot["month"] = _month([*str(fields.get("date") or "").split("/"), ""][1])
        return {name: value for name, value in pivot.items() if value}
    item = entry["item"]
    pivot = {"type": kind, "key": key}
    for concept, (holder, *_) in HOLDERS["csl"].items():
        value = item.get(holder)
        if concept == "authors":
            pivot[concept] = [_names(person) for person in value or [] if _names(person)]
        elif concept == "year":
            issued = value if isinstance(value, dict) else {"raw": value}
            parts = issued.get("date-parts")
            pivot[concept] = (
                str(parts[0][0]) if isinstance(parts, list) and parts and parts[0] else flat_text(issued.get("raw"))
            )
        elif concept == "keywords":
            pivot[concept] = split_keywords(flat_text(value))
        else:
            pivot[concept] = flat_text(value)
    parts = (item.get("issued") or {}).get("date-parts") if isinstance(item.get("issued"), dict) else None
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and len(parts[0]) > 1:
        pivot["month"] = _month(parts[0][1])
    return {name: value for name, value in pivot.items() if value}


def _month(value) -> int | None:
    """A month as its number (1-12): from 6, "06", "jun", "June"; None for anything else."""
    text = str(value or "").strip().lower()
    names = list(BIBTEX_MACROS)
    number = int(text) if text.isdigit() else names.index(text[:3]) + 1 if text[:3] in names else 0
    return number if 1 <= number <= 12 else None


def _name_parts(name: str) -> tuple[str, str]:
    """("given", "von family") of a "First von Last" name, by BibTeX's grammar."""
    from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts

    try:
        parts = parse_single_name_into_parts(name.replace(",", " "), strict=False)
    except InvalidNameError:
        return "", name
    return " ".join(parts.first), " ".join([*parts.von, *parts.last, *parts.jr])


# ---------------------------------------------------------------------------------------------
# Out of the pivot


_LATEX_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|[$&%#_]|[^\\$&%#_]+", re.DOTALL)


def _bibtex_text(value) -> str:
    """``value`` as BibTeX text, escaped once: plain text has LaTeX's special characters escaped;
    text that is LaTeX already (a corpus built from BibTeX: "6.9\\%", "\\emph{x}", "$x_1$", with
    balanced braces) keeps its commands, escapes and math, only bare & % # and _ outside math escaped."""
    text = str(value)
    if ("\\" not in text and "$" not in text) or not _balanced(text):
        return "".join(BIBTEX_ESCAPES.get(char, char) for char in text)
    tokens = _LATEX_TOKEN.findall(text)
    math_ok = tokens.count("$") % 2 == 0
    written, in_math = [], False
    for token in tokens:
        if token == "$" and math_ok:
            in_math = not in_math
        elif token in "$&%#" or (token == "_" and not in_math):
            token = "\\" + token
        written.append(token)
    return "".join(written)


def _balanced(text: str) -> bool:
    depth = 0
    for char in re.sub(r"\\[{}]", "", text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def to_bib(pivot: Pivot) -> dict:
    """A BibTeX entry {type, key, fields} of ``pivot`` (its text escaped for LaTeX)."""
    kind = TO_BIB_TYPE.get(pivot.get("type", ""), "misc")
    fields, macros = {}, {}
    for concept, value in pivot.items():
        if concept in ("type", "key"):
            continue
        if concept == "venue":
            fields[BIB_VENUE.get(kind, "howpublished")] = _bibtex_text(value)
        elif concept == "authors":
            fields["author"] = " and ".join(f"{{{name}}}" if "," in name else name for name in value)
        elif concept == "keywords":
            fields["keywords"] = _bibtex_text(", ".join(value))
        elif concept == "arxiv_id":
            fields.update(eprint=value, archiveprefix="arXiv")
        elif concept == "month":
            macros["month"] = list(BIBTEX_MACROS)[value - 1]
            fields["month"] = BIBTEX_MACROS[macros["month"]]
        elif concept in HOLDERS["bib"]:
            fields[HOLDERS["bib"][concept][0]] = value if concept in ("url", "doi") else _bibtex_text(value)
    for column, value in pivot.get("extra", {}).items():  # the corpus's own columns, when asked for
        fields.setdefault(field_name(column), _bibtex_text(_own_text(value)))
    entry = {"format": "bib", "type": kind, "key": pivot.get("key", ""), "fields": fields}
    return {**entry, "macros": macros} if macros else entry


def to_ris(pivot: Pivot) -> dict:
    """A RIS record (rispy's field names) of ``pivot``."""
    fields: dict[str, Any] = {"type_of_reference": TO_RIS_TYPE.get(pivot.get("type", ""), "GEN")}
    for concept, value in pivot.items():
        if concept == "authors":
            fields["authors"] = [f"{family}, {given}" if given else family for given, family in map(_name_parts, value)]
        elif concept == "url":
            fields["urls"] = [value]
        elif concept == "keywords":
            fields["keywords"] = list(value)
        elif concept == "key":
            fields["id"] = value
        elif concept == "pages":
            start, *end = re.split(r"\s*-+\s*", value, maxsplit=1)
            fields.update(start_page=start, **({"end_page": end[0]} if end and end[0] else {}))
        elif concept == "note":
            fields["notes"] = [value]
        elif concept == "arxiv_id":
            fields.setdefault("notes", []).append(f"arXiv:{value}")
        elif concept == "month" and str(pivot.get("year", "")).isdigit():
            fields["date"] = f"{pivot['year']}/{value:02d}//"
        elif concept in HOLDERS["ris"]:
            fields[HOLDERS["ris"][concept][0]] = value
    for column, value in pivot.get("extra", {}).items():  # RIS has no fields of one's own: notes
        fields.setdefault("notes", []).append(f"{column}: {_own_text(value)}")
    return {"format": "ris", "fields": fields}


def to_csl(pivot: Pivot) -> dict:
    """A CSL-JSON item of ``pivot``."""
    item = {"id": pivot.get("key", ""), "type": pivot.get("type", "document")}
    for concept, value in pivot.items():
        if concept == "authors":
            item["author"] = [
                {"family": family, "given": given} if given else {"literal": family}
                for given, family in map(_name_parts, value)
            ]
        elif concept == "year":
            month = [pivot["month"]] if pivot.get("month") else []
            item["issued"] = {"date-parts": [[int(value), *month]]} if str(value).isdigit() else {"raw": value}
        elif concept == "keywords":
            item["keyword"] = ", ".join(value)
        elif concept == "key":
            item["citation-key"] = value
        elif concept in HOLDERS["csl"] and concept != "type":
            item[HOLDERS["csl"][concept][0]] = value
    if pivot.get("extra"):  # CSL-JSON's place for fields of one's own
        item["custom"] = dict(pivot["extra"])
    return {"format": "csl", "item": item}


CONVERT = {"bib": to_bib, "ris": to_ris, "csl": to_csl}


def _fields(entry: dict) -> dict:
    return entry["item"] if entry["format"] == "csl" else entry["fields"]


def _holds(fields: dict, fmt: str, concept: str) -> bool:
    names = {name.lower() for name, value in fields.items() if value not in ("", None, [], {})}
    return any(holder.lower() in names for holder in HOLDERS[fmt].get(concept, [concept]))


def merged(member: Member, fmt: str, prefer: str = "entry", corpus_fields: bool = False) -> dict:
    """``member`` as an entry of ``fmt``: its own entry (converted when it came in another format),
    the corpus's fields filling what it lacks (``prefer="corpus"``: replacing what it has), and the
    corpus's own columns only with ``corpus_fields``."""
    corpus = from_paper(member.paper)
    if not corpus_fields:
        corpus.pop("extra", None)
    if member.entry is None:
        return CONVERT[fmt](corpus)
    entry = member.entry if member.entry["format"] == fmt else CONVERT[fmt](from_entry(member.entry))
    entry = json.loads(json.dumps(entry))  # a copy: the stored entry stays as it is
    if not member.in_index:
        return entry
    fields, filling = _fields(entry), _fields(CONVERT[fmt]({**corpus, "type": key_and_type(entry)[1]}))
    concept_of = {holder.lower(): concept for concept, holders in HOLDERS[fmt].items() for holder in holders}
    for name, value in filling.items():
        concept = concept_of.get(name.lower())
        if concept is None or name in ("id", "type", "type_of_reference", "citation-key", "archiveprefix"):
            continue
        if prefer == "corpus" and _holds(fields, fmt, concept):
            for holder in HOLDERS[fmt][concept]:
                for present in [n for n in fields if n.lower() == holder.lower()]:
                    del fields[present]
        if not _holds(fields, fmt, concept):
            fields[name] = value
            if name == "eprint":
                fields["archiveprefix"] = "arXiv"
    _fill_own(fields, fmt, corpus.get("extra", {}))
    return entry


def _fill_own(fields: dict, fmt: str, own: dict) -> None:
    """An imported entry's ``fields`` given the corpus's own columns it lacks (as ``to_bib``,
    ``to_ris`` and ``to_csl`` write them); what the entry has stays."""
    if fmt == "bib":
        present = {name.lower() for name in fields}
        for column, value in own.items():
            if field_name(column) not in present:
                fields[field_name(column)] = _bibtex_text(_own_text(value))
    elif fmt == "ris":
        notes = fields.setdefault("notes", []) if own else []
        notes += [note for note in (f"{c}: {_own_text(v)}" for c, v in own.items()) if note not in notes]
    elif own:
        fields["custom"] = {**own, **(fields.get("custom") or {})}


def readable_key(pivot: Pivot, taken: set[str]) -> str:
    """surnameYEARword (the first author's family name, the year, the title's first long word),
    lower case ASCII, with b, c, … added until it is not in ``taken`` (then added to it)."""
    import unicodedata

    authors = pivot.get("authors") or []
    family = _name_parts(authors[0])[1].split()[-1] if authors else "anon"
    words = [w for w in re.findall(r"[^\W\d_]+", pivot.get("title", "")) if len(w) > 3] or ["paper"]
    key = f"{family}{pivot.get('year', '')}{words[0]}"
    key = unicodedata.normalize("NFKD", key).encode("ascii", "ignore").decode().lower()
    key = re.sub(r"[^a-z0-9]", "", key) or "paper"
    unique, suffix = key, ord("a")
    while unique in taken:
        suffix += 1
        unique = f"{key}{chr(suffix)}" if suffix <= ord("z") else f"{key}{suffix - ord('z')}"
    taken.add(unique)
    return unique


def entries(members: list[Member], fmt: str, prefer: str = "entry", corpus_fields: bool = False) -> list[dict]:
    """The members as entries of ``fmt``, in order; imported entries keep their keys (two sharing
    one, as they came, with a warning naming it), the others get readable keys unique within the file."""
    if prefer not in PREFERENCES:
        raise UserError(f"prefer the entry's fields or the corpus's ('entry' or 'corpus'), not {prefer!r}")
    written = [merged(member, fmt, prefer, corpus_fields) for member in members]
    keys = [key_and_type(entry)[0] for entry, member in zip(written, members, strict=True) if member.entry]
    shared = sorted({key for key in keys if key and keys.count(key) > 1})
    if shared:
        logger.warning("citation keys used by more than one entry, written as they came: %s", ", ".join(shared))
    taken = {key_and_type(entry)[0] for entry, member in zip(written, members, strict=True) if member.entry}
    for entry, member in zip(written, members, strict=True):
        if member.entry is None:
            key = readable_key(from_paper(member.paper), taken)
            fields = _fields(entry)
            if fmt == "bib":
                entry["key"] = key
            elif fmt == "ris":
                fields["id"] = key
            else:
                fields.update({"id": key, "citation-key": key})
    return written


def bibtex_entry(entry: dict, strings: dict[str, str]) -> str:
    """One BibTeX entry's text: each field in braces, or bare where it was written as a macro that
    still holds its text (``month = jun``; ``series = pmlr`` where ``strings``, the file's @string
    definitions, give ``pmlr`` that text); a field it inherited from its ``crossref`` parent is left
    to the parent (written after it)."""
    macros, inherited = entry.get("macros") or {}, entry.get("inherited") or {}
    lines = []
    for name, value in entry["fields"].items():
        if name in inherited and inherited[name] == value:
            continue
        macro = macros.get(name)
        defined = strings.get(macro, BIBTEX_MACROS.get(macro.lower())) if macro else None
        lines.append(f"\t{name} = {macro if defined == value else '{' + value + '}'}")
    return f"@{entry['type']}{{{entry['key']},\n" + ",\n".join(lines) + "\n}\n"


def _bibtex_file(written: list[dict]) -> str:
    """A .bib file of entries: the @string definitions their macros need (the first of each name),
    the entries, then the ``crossref`` parents they name."""
    parents = {json.dumps(e["parent"], sort_keys=True): e["parent"] for e in written if e.get("parent")}
    blocks = [*written, *parents.values()]
    strings: dict[str, str] = {}
    for entry in blocks:
        for name, text in (entry.get("strings") or {}).items():
            strings.setdefault(name, text)
    header = "".join(f"@string{{{name} = {{{text}}}}}\n" for name, text in strings.items())
    texts = [bibtex_entry(entry, strings) for entry in blocks]
    return "\n".join([header, *texts] if header else texts)


def as_text(members: list[Member], fmt: str, prefer: str = "entry", corpus_fields: bool = False) -> str:
    """The members written as a BibTeX, RIS or CSL-JSON file's text (BibTeX written here, not by
    bibtexparser: its library refuses two entries sharing a key, which a user's file may hold)."""
    written = entries(members, fmt, prefer, corpus_fields)
    if fmt == "bib":
        return _bibtex_file(written)
    if fmt == "ris":
        import rispy

        class Writer(rispy.RisWriter):
            def set_header(self, count):  # no "1." before each record
                return None

        records = [{"type_of_reference": e["fields"].get("type_of_reference", "GEN"), **e["fields"]} for e in written]
        return rispy.dumps(records, implementation=Writer) if records else ""
    return json.dumps([e["item"] for e in written], indent=2, ensure_ascii=False) + "\n"
