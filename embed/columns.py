"""The corpus's own columns, kept as the file has them, typed: text, number, date or list of text.

A column of a corpus file that is not one of the fields paperscope reads for itself (its id, title
and abstract, and the optional fields under their own names) is kept whole, under its own name.
Its kind is told from the first records of the file that has it (``settle``) and every later value
is converted to that kind (``convert``); a value that is not of it (a word in a column of numbers)
is a one-line error naming the file, the line and the column. A column named like one the index
keeps for itself (``x``, ``cluster``…) is kept as ``corpus_<name>``.
"""

from __future__ import annotations

import datetime
import json
import math
import re

import pyarrow as pa

from paperscope.embed.text import normalise_text
from paperscope.errors import UserError, shown

KINDS = ("text", "number", "date", "list")
KIND_NAMES = {"text": "text", "number": "numbers", "date": "dates", "list": "lists of text"}
# The papers' optional fields. doi and arxiv_id are stored normalised (library.normalise_doi,
# normalise_arxiv_id): the keys a library entry is matched to a paper by. url is an http(s) link,
# else made from the DOI or arXiv id (library.paper_link). year is the only one that is not a string.
OPTIONAL_FIELDS = ["year", "authors", "venue", "url", "categories", "doi", "arxiv_id"]
# Names the index keeps for itself: the papers' fields, the map's columns and a result's scores.
RESERVED = frozenset(
    {
        *("id", "title", "title_derived", "abstract", "year", "authors", "venue", "url", "categories", "doi"),
        *("arxiv_id", "source", "tokens", "vector", "x", "y", "cluster", "coarse_cluster", "cluster_name"),
        *("coarse_name", "map_trust", "placed", "outlying", "added", "rank", "score", "cosine", "keyword_score"),
    }
)
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_WHOLE = re.compile(r"[+-]?\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?")


def stored_name(column: str) -> str:
    """The name a corpus column is kept under: its own, or ``corpus_<name>`` when the index uses
    that name itself."""
    return f"corpus_{column}" if column in RESERVED else column


def as_text(value) -> str:
    """A field value (string, number, list of names, {'name': …} dicts) flattened into one string."""
    kind = type(value)
    if kind is str:  # most values: first, one test
        return normalise_text(value)
    if kind is list:  # of names, or of [last, first] lists (arXiv's authors_parsed)
        return "; ".join([text for text in _texts(value) if text])
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, dict):  # {'name': …}, or arXiv's versions: {'version': 'v1', 'created': …}
        value = value.get("name") or " ".join([v for v in value.values() if isinstance(v, str)])
    if isinstance(value, (list, tuple)):
        return "; ".join([text for text in map(as_text, value) if text])
    return normalise_text(str(value))


def _texts(items) -> list[str]:
    """:func:`as_text` of each item; an ASCII string's white space joined here (``normalise_text``'s
    result, as a call for each name of a list costs more than the work)."""
    return [
        (" ".join(item.split()) if item.isascii() else normalise_text(item)) if type(item) is str else as_text(item)
        for item in items
    ]


def _is_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and _NUMBER.fullmatch(value.strip()) is not None


def _is_date(value) -> bool:
    if isinstance(value, datetime.date):
        return True
    return isinstance(value, str) and _DATE.fullmatch(value.strip()) is not None and _date(value) is not None


def _date(text: str) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(text.strip()[:10])
    except ValueError:
        return None


NO_VALUE = frozenset({"", "n/a", "na", "nan", "null", "none", "-"})  # what a number or date column writes for none


def _empty(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return isinstance(value, str) and not value.strip()


def _no_value(value) -> bool:
    """Empty, or a word that stands for no value ("n/a", "null"…) in a column of numbers or dates."""
    return _empty(value) or (isinstance(value, str) and value.strip().lower() in NO_VALUE)


def infer_kind(values: list) -> str:
    """The kind of a column from some of its values (nulls and empty text left out): lists → "list",
    numbers (or text that reads as one) → "number", ISO dates → "date", anything else "text";
    words for no value ("n/a", "null"…) count for none of them."""
    values = [value for value in values if not _empty(value)]
    if not values:
        return "text"
    if all(isinstance(value, (list, tuple)) for value in values):
        return "list"
    values = [value for value in values if not _no_value(value)] or ["n/a"]
    if all(_is_number(value) for value in values):
        return "number"
    if all(_is_date(value) for value in values):
        return "date"
    return "text"


def _text_value(value) -> str | None:
    return as_text(value) or None  # None for None, NaN and white space


def _number_value(value) -> int | float | None:
    if _no_value(value):
        return None
    if not _is_number(value) or (isinstance(value, float) and math.isinf(value)):
        raise ValueError(f"{shown(repr(value))[:60]} is not a number")
    if isinstance(value, str):
        text = value.strip()
        return int(text) if _WHOLE.fullmatch(text) else float(text)
    return value


def _date_value(value) -> datetime.date | None:
    if type(value) is str and len(value) == 10 and value[4] == "-" == value[7]:
        try:  # YYYY-MM-DD, the common form, read at once (fromisoformat takes ASCII digits only)
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass
    if _no_value(value):
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    found = _date(value) if isinstance(value, str) and _DATE.fullmatch(value.strip()) else None
    if found is None:
        raise ValueError(f"{shown(repr(value))[:60]} is not a date (YYYY-MM-DD)")
    return found


def _list_value(value) -> list[str] | None:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [text for text in _texts(items) if text] or None  # None for None, NaN and white space


CONVERTERS = {"text": _text_value, "number": _number_value, "date": _date_value, "list": _list_value}


def convert(value, kind: str):
    """``value`` as a value of ``kind`` (None when empty, or for a number or date a word for none
    such as "n/a"): text as one normalised string, a number
    as an int or float, a date as a ``datetime.date``, a list as a list of non-empty strings.
    A value not of the kind raises ValueError saying why. (``CONVERTERS[kind]`` is the same function.)"""
    return CONVERTERS[kind](value)


ARROW_TYPES = {"text": pa.string(), "number": pa.float64(), "date": pa.date32(), "list": pa.list_(pa.string())}


def kind_of(arrow_type: pa.DataType) -> str | None:
    """The kind of a stored column's Arrow type (None for types no corpus column has)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return "number"
    if pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type):
        return "date"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    return None


def arrow_array(values: list, kind: str) -> pa.Array:
    """A column's values (converted) as Arrow: whole numbers as int64, else float64."""
    if kind == "number" and all(value is None or isinstance(value, int) for value in values):
        return pa.array(values, pa.int64())
    return pa.array(values, ARROW_TYPES[kind])


def _kind_of_value(value) -> str:
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, datetime.date):
        return "date"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number"
    return "text"


def values_array(values: list) -> pa.Array:
    """A column's converted values as Arrow, their kind told by their Python type (a
    column of nothing but nulls: Arrow's null type, for the kind other shards give it)."""
    first = next((value for value in values if value is not None), None)
    if first is None:
        return pa.nulls(len(values))
    return arrow_array(values, _kind_of_value(first))


class CorpusColumns:
    """The kinds of the corpus's own columns in one build (or one ``add``), by stored name: each
    column's kind is told by the first file that has it, and holds for every later file."""

    def __init__(self, known: dict[str, str] | None = None, origin: str = "the index"):
        self.kinds: dict[str, str] = dict(known or {})
        self.origins: dict[str, str] = dict.fromkeys(self.kinds, origin)

    def settle(self, path, head: list[dict], columns: dict[str, str]) -> None:
        """Tell the kinds of ``columns`` (the file's column → stored name) that no earlier file had,
        from the values in ``head`` (the file's first records)."""
        for column, name in columns.items():
            if name not in self.kinds:
                self.kinds[name] = infer_kind([record.get(column) for record in head])
                self.origins[name] = str(path)

    def value(self, where: str, column: str, value):
        """``value`` of the file's ``column`` converted to the kind of the column it is kept as;
        one not of it is a UserError naming ``where`` (file:line) and the column."""
        name = stored_name(column)
        kind = self.kinds[name]
        try:
            return convert(value, kind)
        except ValueError as exc:
            told = "" if self.origins[name] == where.rsplit(":", 1)[0] else f" (as {self.origins[name]} has it)"
            raise UserError(
                f"{where}: column '{shown(column)}': {exc}, but the column holds {KIND_NAMES[kind]}{told}"
            ) from None


def to_json(own: dict) -> str:
    """A paper's own columns (stored name -> converted value) as JSON text, dates tagged
    ({"$date": "2024-05-01"}), for a trip between processes (Ray's reading tasks)."""
    return json.dumps(own, default=lambda value: {"$date": value.isoformat()})


def from_json(text: str) -> dict:
    """The own columns :func:`to_json` wrote, dates as ``datetime.date`` again (no value of an own
    column is a dict: a dict is always a tagged date)."""

    def dated(found: dict):
        return datetime.date.fromisoformat(found["$date"]) if "$date" in found else found

    return json.loads(text, object_hook=dated)
