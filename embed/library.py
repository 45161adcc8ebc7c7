"""Library files and bibliographic dumps in: BibTeX, RIS, CSL-JSON, OpenAlex works, Semantic Scholar.

Each reader turns one file's entries into records with our field names (id, title, abstract, year,
authors, venue, url, categories, doi, arxiv_id), each with the line it starts on and the raw entry
(for ``--text-field`` and the like). :func:`paperscope.embed.readers.read_records` calls them: .bib and
.ris files by their extension (or first bytes), the JSON ones when :func:`recognise` knows the keys of
their records. ``normalise_doi``, ``normalise_arxiv_id`` and ``normalise_title`` are the keys a library
entry is matched to a corpus paper by, in that order.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from paperscope.embed.text import normalise_text
from paperscope.errors import UserError

logger = logging.getLogger(__name__)
FORMAT_NAMES = {
    "bib": "BibTeX",
    "ris": "RIS",
    "csl": "CSL-JSON",
    "openalex": "OpenAlex works",
    "s2": "Semantic Scholar records",
}
ENTRY_SHAPES = {  # how an entry of the text formats begins, said when a file holds none
    "bib": "an entry starts with @TYPE{KEY, as in @article{smith2024,",
    "ris": "a record runs from a 'TY  - ' line to an 'ER  - ' line",
}
MAX_ABSTRACT_WORDS = 100_000  # positions past this in an inverted index are not an abstract


@dataclass
class LibraryRead:
    """One file's entries: ``rows`` of (line, raw entry, record with our field names), and for each of
    our fields the file's fields that filled it (for the log line that says which were used)."""

    kind: str
    rows: list[tuple[int, dict, dict]]
    used: dict[str, list[str]] = field(default_factory=dict)

    def add(self, line: int, raw: dict, values: list[tuple[str, object, str]], entry: dict | None = None) -> None:
        """An entry from ``values``: (our field, value, the file's field it came from); the first
        non-empty value of each field wins; doi and arxiv_id are normalised, the url filled from them.
        ``entry``: the entry as the file wrote it (BibTeX, RIS, CSL-JSON), kept as ``record["entry"]``
        so that a collection gives it back as it came (:mod:`paperscope.index.collections.entries`)."""
        record: dict = {"entry": entry} if entry else {}
        for name, value, label in values:
            if name in record:
                continue
            value = _year(value) if name == "year" else _clean(name, value)
            if value:
                record[name] = value
                labels = self.used.setdefault(name, [])
                if label not in labels:
                    labels.append(label)
        record.setdefault("abstract", "")
        link = paper_link([record.pop("url", "")], record.get("doi", ""), record.get("arxiv_id", ""))
        if link:
            record["url"] = link
        self.rows.append((line, raw, record))


def _clean(name: str, value) -> str:
    if name == "doi":
        return normalise_doi(value)
    if name == "arxiv_id":
        return normalise_arxiv_id(value)
    return flat_text(value)


def flat_text(value) -> str:
    """A field value (string, number, list, {'name': …}) as one normalised string; lists joined by '; '."""
    if type(value) is str:
        return normalise_text(value)
    if value is None or isinstance(value, bool) or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, dict):
        value = value.get("name") or value.get("display_name") or ""
    if isinstance(value, (list, tuple)):
        return "; ".join(dict.fromkeys(filter(None, (flat_text(item) for item in value))))
    return normalise_text(str(value))


def _year(value) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 1000 <= value <= 2999 else None
    match = re.search(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)", flat_text(value))
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------------------------------------
# Matching keys


_DOI_ESCAPE = re.compile(r"\\([_%&#$])")
_DOI = re.compile(r"10\.\d{4,9}/\S+")


def normalise_doi(value) -> str:
    """A DOI as matched: lower case, from "10." on (no https://doi.org/, dx.doi.org, doi: or BibTeX
    escapes), URL-decoded, trailing punctuation dropped; "" when there is no DOI in ``value``."""
    text = flat_text(value)
    if "\\" in text:
        text = _DOI_ESCAPE.sub(r"\1", text)
    if "%2f" in text.lower():
        text = unquote(text)
    match = _DOI.search(text)
    return match.group(0).rstrip(".,;").lower() if match else ""


_LINK = re.compile(r"https?://[^\s/?#]+\S*", re.IGNORECASE)


def paper_link(urls, doi: str | None = "", arxiv_id: str | None = "") -> str:
    """The link a paper opens: the first of ``urls`` that is an absolute http(s) URL (a relative
    path, ``javascript:`` or ``file:`` is not), else its DOI at doi.org, else its arXiv abstract page
    (``doi`` and ``arxiv_id`` normalised); "" when there is none."""
    for url in urls:
        text = flat_text(url)
        if _LINK.fullmatch(text):
            return text
    if doi:
        return f"https://doi.org/{doi}"
    return f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else ""


_NEW_ARXIV = re.compile(r"(?<![\d.])(\d{2})(\d{2})\.(\d{4,5})(?:v\d+)?(?![\d])")
_OLD_ARXIV = re.compile(r"(?<![\w.-])([a-z][a-z-]+(?:\.[a-z]{2})?)/(\d{7})(?:v\d+)?(?!\d)", re.IGNORECASE)


def normalise_arxiv_id(value) -> str:
    """An arXiv id as matched: "2101.00001" or "hep-th/9901001" (no arXiv: prefix, URL or version
    suffix such as v2); "" when ``value`` holds none."""
    text = flat_text(value)
    match = _NEW_ARXIV.search(text)
    if match and 1 <= int(match.group(2)) <= 12:
        return f"{match.group(1)}{match.group(2)}.{match.group(3)}"
    match = _OLD_ARXIV.search(text)
    if match:
        archive, _, subject = match.group(1).partition(".")
        return f"{archive.lower()}{'.' + subject.upper() if subject else ''}/{match.group(2)}"
    return ""


_ARXIV_MARK = re.compile(r"arxiv(?:\.org/(?:abs|pdf)/|\s*:\s*|\.)\s*(\S+)", re.IGNORECASE)


def arxiv_in(*values) -> str:
    """The first arXiv id named as such (arXiv:…, arxiv.org/abs/…, DOI 10.48550/arXiv.…) in ``values``."""
    for value in values:
        for match in _ARXIV_MARK.finditer(flat_text(value)):
            found = normalise_arxiv_id(match.group(1))
            if found:
                return found
    return ""


_MARKUP = re.compile(
    r"</?(?:jats:|mml:)?(?:i|b|em|strong|sup|sub|span|sc|scp|p|br|italic|bold|title|sec|u|tt|"
    r"inline-formula|tex-math|math|mi|mo|mn|mrow|msub|msup|mtext)\b[^<>]*>",
    re.IGNORECASE,
)


def strip_markup(text: str) -> str:
    """``text`` without the HTML/JATS/MathML tags that titles and abstracts of CSL, Crossref and
    OpenAlex records carry (<i>, <sup>, <jats:p>, …); a lone "<" as in "a < b" stays."""
    return _MARKUP.sub(" ", text) if "<" in text else text


def normalise_title(title) -> str:
    """A title as matched: LaTeX and markup dropped, case-folded, accents and punctuation dropped,
    whitespace collapsed ("{\\"U}ber \\emph{Graphs}: a Study" → "uber graphs a study")."""
    text = strip_markup(flat_text(title))
    if re.search(r"[\\{}$]", text):
        text = latex_to_text(text)
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(char for char in text if not unicodedata.combining(char))
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


# ---------------------------------------------------------------------------------------------
# LaTeX to text (BibTeX fields)


@cache
def _latex_converter():
    """pylatexenc's LaTeX-to-text, measured right on accents ({\\"u}, \\'{e}, \\ss), \\emph/\\textit,
    --/---, ~, \\&, \\%, and math ($\\alpha$ as the Greek letter, $O(n \\log n)$, $x^2$ as x^2): a parser
    rather than a table of replacements, so nested braces and unknown macros degrade to their
    text. Added here: \\LaTeX and \\TeX (empty otherwise), \\url and \\href by their text,
    citations and labels dropped; spaces as in the source except after macros (its default,
    strict_latex_spaces=False; "based-on-source" joins "\\'{e}t\\'{e} x" into one word)."""
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

    def argument(number):
        def text(node, l2tobj):
            args = node.nodeargd.argnlist if node.nodeargd else []
            return l2tobj.nodelist_to_text([args[number]]) if len(args) > number and args[number] else ""

        return text

    parsing = latexwalker.get_default_latex_context_db()
    parsing.add_context_category(
        "paperscope",
        prepend=True,
        macros=[macrospec.MacroSpec(name, args) for name, args in (("href", "{{"), ("citep", "[[{"), ("citet", "[[{"))],
    )
    texts = get_default_latex_context_db()
    texts.add_context_category(
        "paperscope",
        prepend=True,
        macros=[
            *(MacroTextSpec(name, simplify_repl=name) for name in ("LaTeX", "TeX", "BibTeX")),
            MacroTextSpec("url", simplify_repl=argument(0)),
            MacroTextSpec("href", simplify_repl=argument(1)),
            *(
                MacroTextSpec(name, discard=True)
                for name in ("cite", "citep", "citet", "ref", "eqref", "label", "footnote")
            ),
        ],
    )
    converter = LatexNodes2Text(latex_context=texts, math_mode="text", strict_latex_spaces=False)
    return lambda latex: converter.nodelist_to_text(
        latexwalker.LatexWalker(latex, latex_context=parsing, tolerant_parsing=True).get_latex_nodes()[0]
    )


_PLAIN_DASHES = (("---", "\u2014"), ("--", "\u2013"), ("``", "\u201c"), ("''", "\u201d"), ("~", " "))


def latex_to_text(text: str) -> str:
    """A BibTeX field's LaTeX as plain text (see ``_latex_converter``). Bare % & # (not LaTeX but
    common in exported abstracts: "by 5%", "R&D") are kept as characters. Text without a backslash or
    a $ skips the parser (braces dropped, dashes and ~ replaced): most entries, and many times faster."""
    if not re.search(r"[\\$]", text):
        for latex, plain in _PLAIN_DASHES:
            text = text.replace(latex, plain)
        return normalise_text(text.replace("{", "").replace("}", ""))
    escaped = re.sub(r"(?<!\\)([%&#])", r"\\\1", text)
    try:
        return normalise_text(_latex_converter()(escaped))
    except Exception:  # the parser's own failure on odd input: the crude way, never an error
        crude = re.sub(r"\\[a-zA-Z]+\*?|\\(.)", r"\1", text)
        return normalise_text(re.sub(r"[{}$]", "", crude))


# ---------------------------------------------------------------------------------------------
# Names


def person_name(name: str) -> str:
    """ "Family, Given" (BibTeX, RIS) as "Given Family"; "Family, Jr, Given" as "Given Family Jr"."""
    parts = [part.strip() for part in name.split(",")]
    if len(parts) == 2 and all(parts):
        return f"{parts[1]} {parts[0]}"
    if len(parts) == 3 and parts[0] and parts[2]:
        return f"{parts[2]} {parts[0]} {parts[1]}".replace("  ", " ")
    return name.strip()


def bibtex_names(value: str) -> list[str]:
    """The people of a BibTeX name field ("Last, First and First von Last and {Some Team}") as
    "First von Last Jr", LaTeX as text: BibTeX's own name grammar, through bibtexparser's."""
    from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts
    from bibtexparser.middlewares.names import split_multiple_persons_names as split

    names = []
    for name in split(value):
        if name.strip().lower() == "others":
            continue
        try:
            parts = parse_single_name_into_parts(name, strict=False)
            name = " ".join([*parts.first, *parts.von, *parts.last, *parts.jr])
        except InvalidNameError:
            pass
        names.append(latex_to_text(name))
    return [name for name in names if name]


# ---------------------------------------------------------------------------------------------
# BibTeX

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")  # fmt: skip
# BibTeX's own macros: jan … dec
BIBTEX_MACROS = {month[:3]: month.capitalize() for month in MONTHS}


def _bibtex_value(raw: str, macros: dict[str, str], unknown: set[str]) -> str:
    """A field's value as written ({…}, "…", a number, a @string name, or parts joined by #) as its
    text: braces and quotes around it dropped, macros resolved (an unknown one kept as its name)."""
    if "#" not in raw:  # one part (most values): no need to look for the joins
        part = raw.strip()
        if len(part) >= 2 and (part[0], part[-1]) in (("{", "}"), ('"', '"')):
            return part[1:-1]
        if part.lower() in macros:
            return macros[part.lower()]
        if part and not part.isdigit():
            unknown.add(part)
        return part
    parts, depth, quoted, start = [], 0, False, 0
    for position, char in enumerate(raw):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == '"' and depth == 0:
            quoted = not quoted
        elif char == "#" and depth == 0 and not quoted:
            parts.append(raw[start:position])
            start = position + 1
    parts.append(raw[start:])
    text = []
    for part in (part.strip() for part in parts):
        if len(part) >= 2 and (part[0], part[-1]) in (("{", "}"), ('"', '"')):
            text.append(part[1:-1])
        elif part.lower() in macros:
            text.append(macros[part.lower()])
        else:
            if part and not part.isdigit():
                unknown.add(part)
            text.append(part)
    return "".join(text)


def _crossref(entries: list[dict]) -> set[int]:
    """Fields a BibTeX entry inherits from the entry its ``crossref`` names: every field it lacks
    (the parent's title as its booktitle), as BibTeX and biblatex do; each child keeps its parent
    ({type, key, fields}) and what it took ("inherited"). Returns the ``id()`` of the parents."""
    parents: dict[str, dict] = {}
    used: set[int] = set()
    for entry in entries:
        parents.setdefault(entry["key"].lower(), entry)
    for entry in entries:
        fields = entry["fields"]
        names = {name.lower() for name in fields}
        parent = parents.get(next((v for n, v in fields.items() if n.lower() == "crossref"), "").strip().lower())
        if parent is None or parent is entry:
            continue
        used.add(id(parent))
        kept = ("type", "key", "fields", "macros", "strings")
        entry["parent"] = {name: parent[name] for name in kept if name in parent}
        entry["inherited"] = {}
        for name, value in parent["fields"].items():
            inherited = "booktitle" if name.lower() == "title" else name
            if inherited.lower() not in names and name.lower() != "crossref":
                fields[inherited] = entry["inherited"][inherited] = value
                names.add(inherited.lower())
    return used


def _macro_fields(fields, macros: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The fields written as one macro (``month = jun``, ``series = pmlr``): {field: macro name},
    and the definitions of the file's own among them ({name: text}; BibTeX's month macros need
    none): kept so that an export writes them as macros again, with their @string. A value that
    joins parts with ``#`` is kept resolved."""
    found, strings = {}, {}
    for written in fields:
        name = written.value.strip() if isinstance(written.value, str) else ""
        if name.lower() not in macros:
            continue
        found[written.key] = name
        if macros[name.lower()] != BIBTEX_MACROS.get(name.lower()):
            strings[name] = macros[name.lower()]
    return found, strings


def _readable_entries(path: Path, library) -> list:
    """The entries bibtexparser read, with those it set aside for a repeated key or field; each
    entry it had to abort is skipped with one warning line naming its line and why, and when none
    is left the first one is a UserError."""
    from bibtexparser.model import DuplicateBlockKeyBlock, DuplicateFieldKeyBlock, Entry

    parsed, broken = list(library.entries), []
    for block in library.failed_blocks:
        recovered = block.ignore_error_block
        if isinstance(block, (DuplicateBlockKeyBlock, DuplicateFieldKeyBlock)) and isinstance(recovered, Entry):
            parsed.append(recovered)
            continue
        line = (block.start_line or 0) + 1
        start = re.match(r"\s*(@\w+[{(][^,\s]*)", block.raw or "")
        what = f"entry {start.group(1)}" if start else "entry"
        reason = getattr(block.error, "abort_reason", None) or str(block.error) or type(block.error).__name__
        broken.append(f"{path}:{line}: broken BibTeX {what} ({_one_line(reason)}); check its braces and quotes")
    if broken and not parsed:
        raise UserError(broken[0])
    for problem in broken:
        logger.warning("%s; skipped, the other entries are read", problem)
    return parsed


def bibtex_entries(path: Path, text: str) -> list[dict]:
    """A .bib file's entries in file order, each {"format": "bib", "type", "key", "fields" (names as
    written, values as text with their LaTeX: macros and # resolved, crossref inherited), "line",
    "macros" where fields were written as one macro: {field: "jun"}, and "strings", the file's
    @string definitions of those: {"pmlr": "Proceedings of Machine Learning Research"}}.
    Entries sharing a key are all kept, with one warning line for each such key naming its lines;
    an entry the parser had to abort (unbalanced braces, cut off) is skipped with a warning line
    naming its line and why (a UserError when no entry is left). A ``crossref`` parent is no entry
    of its own: its children inherit from it and keep it as their "parent" (with the fields they
    took from it as "inherited"), so that an export writes it after them as BibTeX wants."""
    import bibtexparser

    logging.getLogger("bibtexparser").setLevel(logging.ERROR)  # its warnings repeat the line we write
    try:
        library = bibtexparser.parse_string(text, parse_stack=[])  # values as written: resolved here
    except Exception as exc:  # its "invalid state" errors: not an entry we can name
        raise UserError(f"{path}: not readable as BibTeX ({_one_line(exc)})") from None
    parsed = _readable_entries(path, library)
    macros, unknown = dict(BIBTEX_MACROS), set[str]()
    for string in sorted(library.strings, key=lambda s: s.start_line or 0):
        macros[string.key.lower()] = _bibtex_value(string.value, macros, unknown)
    entries = []
    for entry in sorted(parsed, key=lambda e: e.start_line or 0):
        fields = {f.key: _bibtex_value(f.value, macros, unknown) for f in entry.fields if isinstance(f.value, str)}
        line = (entry.start_line or 0) + 1
        entries.append({"format": "bib", "type": entry.entry_type.lower(), "key": entry.key, "fields": fields,
                        "line": line})  # fmt: skip
        named, strings = _macro_fields(entry.fields, macros)
        if named:
            entries[-1]["macros"] = named
        if strings:
            entries[-1]["strings"] = strings
    parents = _crossref(entries)
    entries = [entry for entry in entries if id(entry) not in parents]
    lines: dict[str, list[int]] = {}
    for entry in entries:
        lines.setdefault(entry["key"], []).append(entry["line"])
    for key, at in lines.items():
        if len(at) > 1:
            logger.warning(
                "%s: the citation key '%s' is used by %d entries (lines %s); all are read",
                path.name, key, len(at), ", ".join(map(str, at)),
            )  # fmt: skip
    if unknown:
        logger.warning("%s: undefined @string macros kept as their names: %s", path.name, ", ".join(sorted(unknown)))
    return entries


def read_bibtex(path: Path, text: str) -> LibraryRead:
    """A .bib file's entries (:func:`bibtex_entries`), fields' LaTeX turned into text; a repeated
    citation key is kept (the build reports duplicate ids)."""
    read = LibraryRead("bib", [])
    for entry in bibtex_entries(path, text):
        raw = {key.lower(): value for key, value in entry["fields"].items()}
        raw["ID"] = entry["key"]
        latex = {key: latex_to_text(value) for key, value in raw.items() if key in _BIBTEX_TEXT_FIELDS}
        eprint_type = (raw.get("archiveprefix") or raw.get("eprinttype") or "").lower()
        eprint = raw.get("eprint", "")
        is_arxiv = eprint_type == "arxiv" or _NEW_ARXIV.fullmatch(eprint.strip())
        read.add(
            entry["line"],
            raw,
            [
                ("id", entry["key"], "citation key"),
                ("title", latex.get("title"), "title"),
                ("abstract", latex.get("abstract"), "abstract"),
                ("year", raw.get("year"), "year"),
                ("year", raw.get("date"), "date"),
                ("authors", bibtex_names(raw.get("author", "")), "author"),
                *(("venue", latex.get(key), key) for key in ("journal", "journaltitle", "booktitle")),
                ("url", re.sub(r"\\([_%&#~])", r"\1", raw.get("url", "")), "url"),
                ("doi", raw.get("doi"), "doi"),
                ("arxiv_id", eprint if is_arxiv else "", "eprint"),
                ("arxiv_id", arxiv_in(*(raw.get(key) for key in ("journal", "url", "doi", "note"))), "journal/url/doi"),
                ("categories", split_keywords(latex.get("keywords", "")), "keywords"),
            ],
            entry,
        )
    return read


_BIBTEX_TEXT_FIELDS = {"title", "abstract", "journal", "journaltitle", "booktitle", "keywords"}


def split_keywords(text: str) -> list[str]:
    """Keywords written "a, b; c" as a list."""
    return [word.strip() for word in re.split(r"[,;]", text) if word.strip()]


def _one_line(value) -> str:
    return " ".join(str(value).split()).rstrip(".")


# ---------------------------------------------------------------------------------------------
# RIS

_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")


def read_ris(path: Path, text: str) -> LibraryRead:
    """A .ris file's records ("TY  - " to "ER  - "). A record without its ER line, or a tag line
    outside any record, is a UserError naming the line; other text between records is ignored."""
    import rispy

    chunks: list[tuple[int, list[str]]] = []
    current: tuple[int, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _RIS_TAG.match(line)
        tag = match.group(1) if match else None
        if tag == "TY":
            if current is not None:
                raise UserError(
                    f"{path}:{current[0]}: RIS record has no 'ER  - ' line before the next one (line {number})"
                )
            current = (number, [line])
        elif current is not None:
            current[1].append(line)
            if tag == "ER":
                chunks.append(current)
                current = None
        elif tag is not None:
            raise UserError(f"{path}:{number}: RIS tag {tag} outside a record (a record starts with 'TY  - ')")
    if current is not None:
        raise UserError(f"{path}:{current[0]}: RIS record has no 'ER  - ' line (is the file cut off?)")
    read = LibraryRead("ris", [])
    for start, lines in chunks:
        try:
            (raw,) = rispy.loads("\n".join(lines))
        except Exception as exc:
            raise UserError(f"{path}:{start}: broken RIS record ({_one_line(exc)})") from None
        fields = {**raw, "unknown_tag": dict(raw.get("unknown_tag") or {})}
        entry: dict[str, Any] = {"format": "ris", "line": start, "fields": fields}
        if not entry["fields"]["unknown_tag"]:
            del entry["fields"]["unknown_tag"]
        raw = {key: value for key, value in raw.items() if key != "unknown_tag"}
        urls = raw.get("urls") or []
        read.add(
            start,
            raw,
            [
                ("id", raw.get("id"), "ID"),
                ("title", raw.get("title"), "TI"),
                ("title", raw.get("primary_title"), "T1"),
                ("abstract", raw.get("abstract"), "AB"),
                ("abstract", raw.get("notes_abstract"), "N2"),
                ("year", raw.get("year"), "PY"),
                ("year", raw.get("publication_year"), "Y1"),
                ("year", raw.get("date"), "DA"),
                ("authors", [person_name(n) for n in (raw.get("authors") or raw.get("first_authors") or [])], "AU"),
                ("venue", raw.get("journal_name"), "JO"),
                ("venue", raw.get("alternate_title3"), "JF"),
                ("venue", raw.get("secondary_title"), "T2"),
                ("venue", raw.get("alternate_title1"), "J2"),
                ("url", urls[:1], "UR"),
                ("doi", raw.get("doi"), "DO"),
                ("arxiv_id", arxiv_in(raw.get("doi"), *urls, *(raw.get("notes") or []), raw.get("note")), "DO/UR/N1"),
                ("categories", raw.get("keywords"), "KW"),
            ],
            entry,
        )
    return read


# ---------------------------------------------------------------------------------------------
# JSON records: CSL-JSON, OpenAlex works, Semantic Scholar

_OPENALEX = "https://openalex.org/"
# CSL's own keys (not DOI or URL alone: a plain JSON corpus may have those, and a type column)
_CSL_KEYS = {"issued", "container-title", "citation-key", "accessed", "event-title", "collection-title"}


def recognise(records: list[dict]) -> str | None:
    """Which library format parsed JSON records are in, from the keys of the first ones: "openalex"
    (abstract_inverted_index, or an https://openalex.org/ id), "s2" (paperId or corpusid with
    externalIds; the old open corpus's paperAbstract), "csl" (type with CSL's own keys), else None."""
    sample = [record for record in records[:20] if isinstance(record, dict)]
    keys = set().union(*(record.keys() for record in sample)) if sample else set()
    if "abstract_inverted_index" in keys or any(str(r.get("id", "")).startswith(_OPENALEX) for r in sample):
        return "openalex"
    s2_id = keys & {"paperId", "corpusid", "corpusId"}
    if (s2_id and keys & {"externalIds", "externalids"}) or "paperAbstract" in keys:
        return "s2"
    if any(re.fullmatch(r"[0-9a-f]{40}", str(r.get("paperId", ""))) for r in sample):
        return "s2"
    if "type" in keys and (keys & _CSL_KEYS or any(_is_csl_names(r.get("author")) for r in sample)):
        return "csl"
    return None


def _is_csl_names(value) -> bool:
    return isinstance(value, list) and any(isinstance(n, dict) and n.keys() & {"family", "literal"} for n in value)


def map_records(path: Path, text: str, kind: str, rows: list[tuple[int, dict]]) -> LibraryRead:
    """Parsed JSON records (line or item number, record) of a recognised ``kind`` as a LibraryRead."""
    read = LibraryRead(kind, [])
    mapper = {"csl": _csl, "openalex": _openalex, "s2": _semantic_scholar}[kind]
    lines = json_item_lines(text) if kind == "csl" else None
    for index, (line, raw) in enumerate(rows):
        if lines and len(lines) == len(rows):
            line = lines[index]
        wrong = _csl_wrong_type(raw) if kind == "csl" else None
        if wrong:
            logger.warning("%s:%s: CSL-JSON item %r: %s; skipped, the other items are read", path, line,
                           str(raw.get("id", index + 1)), wrong)  # fmt: skip
            continue
        entry = {"format": "csl", "line": line, "item": raw} if kind == "csl" else None
        read.add(line, raw, mapper(raw), entry)
    return read


# CSL-JSON's schema: the fields read here and the JSON types each may hold
_CSL_TYPES = {
    **dict.fromkeys(("title", "abstract", "container-title", "DOI", "URL", "keyword", "citation-key",
                     "event-title", "note", "publisher"), (str,)),
    "id": (str, int), "author": (list,), "issued": (dict,), "number": (str, int, float),
}  # fmt: skip
_JSON_TYPES = {str: "text", int: "a number", float: "a number", list: "a list", dict: "an object", bool: "true/false"}


def _csl_wrong_type(item: dict) -> str:
    """What is wrong with a CSL-JSON item's field of a type its schema does not allow (a title of
    123 is no title "123"), or ""."""
    for name, allowed in _CSL_TYPES.items():
        value = item.get(name)
        if value is not None and (type(value) not in allowed):
            wanted = " or ".join(dict.fromkeys(_JSON_TYPES[kind] for kind in allowed))
            found = _JSON_TYPES.get(type(value), type(value).__name__)
            return f'"{name}" is {found} ({_one_line(value)[:40]}), not {wanted}'
    return ""


def json_item_lines(text: str) -> list[int] | None:
    """The line each item of a top-level JSON list starts on (None when ``text`` is no JSON list)."""
    decoder = json.JSONDecoder()
    position = len(text) - len(text.lstrip())
    if not text.startswith("[", position):
        return None
    lines: list[int] = []
    line, counted = 1, 0
    position += 1
    try:
        while True:
            while position < len(text) and text[position] in " \t\r\n,":
                position += 1
            if position >= len(text) or text[position] == "]":
                return lines
            line += text.count("\n", counted, position)
            counted = position
            lines.append(line)
            _, position = decoder.raw_decode(text, position)
    except json.JSONDecodeError:
        return None


def _csl_names(value) -> list[str]:
    if not isinstance(value, list):
        return [value] if isinstance(value, str) else []
    names = []
    for person in value:
        if isinstance(person, dict):
            given = " ".join(flat_text(person.get(k)) for k in ("given", "non-dropping-particle") if person.get(k))
            names.append(person.get("literal") or " ".join(filter(None, [given, flat_text(person.get("family"))])))
        elif isinstance(person, str):
            names.append(person)
    return names


def _csl_year(issued) -> object:
    if isinstance(issued, dict):
        parts = issued.get("date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            first = parts[0][0]
            return int(first) if isinstance(first, (int, str)) and str(first).strip().isdigit() else first
        return issued.get("raw") or issued.get("literal")
    return issued


def _csl(item: dict) -> list[tuple[str, object, str]]:
    """One CSL-JSON item (Zotero's CSL JSON and Better CSL JSON exports)."""
    title = strip_markup(flat_text(item.get("title")))
    return [
        ("id", item.get("id"), "id"),
        ("id", item.get("citation-key"), "citation-key"),
        ("title", title, "title"),
        ("abstract", strip_markup(flat_text(item.get("abstract"))), "abstract"),
        ("year", _csl_year(item.get("issued")), "issued"),
        ("authors", _csl_names(item.get("author")), "author"),
        ("venue", item.get("container-title"), "container-title"),
        ("venue", item.get("event-title") or item.get("event"), "event-title"),
        ("url", item.get("URL"), "URL"),
        ("doi", item.get("DOI"), "DOI"),
        ("arxiv_id", arxiv_in(*(item.get(key) for key in ("number", "DOI", "URL", "note"))), "number/DOI/URL"),
        ("categories", split_keywords(flat_text(item.get("keyword"))), "keyword"),
    ]


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def inverted_abstract(index) -> str:
    """The text of an OpenAlex ``abstract_inverted_index`` ({word: [positions]}), words in order."""
    if not isinstance(index, dict):
        return ""
    words: dict[int, str] = {}
    for word, positions in index.items():
        for position in positions if isinstance(positions, list) else []:
            if isinstance(position, int) and 0 <= position < MAX_ABSTRACT_WORDS:
                words[position] = word
    return " ".join(words[position] for position in sorted(words))


def _short_openalex_id(value) -> str:
    text = flat_text(value)
    return text.removeprefix(_OPENALEX)


def _openalex(work: dict) -> list[tuple[str, object, str]]:
    """One OpenAlex work (the API's and the snapshot's JSON lines)."""
    primary, ids, topic = _dict(work.get("primary_location")), _dict(work.get("ids")), _dict(work.get("primary_topic"))
    source = _dict(primary.get("source"))
    locations = [_dict(place) for place in _list(work.get("locations"))]
    return [
        ("id", _short_openalex_id(work.get("id") or ids.get("openalex")), "id"),
        ("title", strip_markup(flat_text(work.get("title") or work.get("display_name"))), "title"),
        ("abstract", strip_markup(inverted_abstract(work.get("abstract_inverted_index"))), "abstract_inverted_index"),
        ("abstract", work.get("abstract"), "abstract"),
        ("year", work.get("publication_year"), "publication_year"),
        ("year", work.get("publication_date"), "publication_date"),
        (
            "authors",
            [
                _dict(authorship.get("author")).get("display_name") or authorship.get("raw_author_name")
                for authorship in map(_dict, _list(work.get("authorships")))
            ],
            "authorships",
        ),
        ("venue", source.get("display_name"), "primary_location.source"),
        ("venue", _dict(work.get("host_venue")).get("display_name"), "host_venue"),
        ("url", primary.get("landing_page_url"), "primary_location.landing_page_url"),
        ("doi", work.get("doi") or ids.get("doi"), "doi"),
        (
            "arxiv_id",
            arxiv_in(
                ids.get("arxiv"), work.get("doi"), *(place.get("landing_page_url") for place in [primary, *locations])
            ),
            "locations",
        ),
        ("categories", topic.get("display_name"), "primary_topic"),
    ]


def _semantic_scholar(paper: dict) -> list[tuple[str, object, str]]:
    """One Semantic Scholar record: the Graph API's paper, the datasets' papers/abstracts lines, the
    old open corpus's."""
    external = _dict(paper.get("externalIds") or paper.get("externalids"))
    external = {str(key).lower(): value for key, value in external.items()}
    journal, venue = _dict(paper.get("journal")), _dict(paper.get("publicationVenue"))
    fields = _list(paper.get("s2FieldsOfStudy") or paper.get("s2fieldsofstudy"))
    return [
        ("id", paper.get("paperId"), "paperId"),
        ("id", paper.get("corpusid") or paper.get("corpusId"), "corpusid"),
        ("id", paper.get("id"), "id"),
        ("title", paper.get("title"), "title"),
        ("abstract", paper.get("abstract"), "abstract"),
        ("abstract", paper.get("paperAbstract"), "paperAbstract"),
        ("year", paper.get("year"), "year"),
        ("year", paper.get("publicationDate") or paper.get("publicationdate"), "publicationdate"),
        ("authors", paper.get("authors"), "authors"),
        ("venue", paper.get("venue"), "venue"),
        ("venue", journal.get("name") or venue.get("name") or paper.get("journalName"), "journal"),
        ("url", paper.get("url") or paper.get("s2Url"), "url"),
        ("doi", external.get("doi") or paper.get("doi"), "externalIds.DOI"),
        ("arxiv_id", external.get("arxiv"), "externalIds.ArXiv"),
        ("categories", paper.get("fieldsOfStudy"), "fieldsOfStudy"),
        ("categories", [_dict(subject).get("category") for subject in fields], "s2fieldsofstudy"),
    ]


# ---------------------------------------------------------------------------------------------
# Named fields (--id-field, --title-field, --text-field)


def apply_overrides(path: Path, read: LibraryRead, overrides: dict[str, str | None]) -> None:
    """Fill our fields from the file's fields named in ``overrides`` (BibTeX field names in any case)."""
    flags = {"id": "--id-field", "title": "--title-field", "abstract": "--text-field"}
    for name, wanted in overrides.items():
        if not wanted:
            continue
        key = wanted.lower() if read.kind == "bib" and wanted != "ID" else wanted
        if not any(key in raw for _, raw, _ in read.rows):
            known = list(dict.fromkeys(k for _, raw, _ in read.rows[:50] for k in raw))
            raise UserError(
                f"{path}: no field '{wanted}' (given as {flags.get(name, name)}); fields are: {', '.join(known[:20])}"
            )
        for _, raw, record in read.rows:
            value = raw.get(key)
            record[name] = latex_to_text(value) if read.kind == "bib" and isinstance(value, str) else flat_text(value)
        read.used[name] = [wanted]
