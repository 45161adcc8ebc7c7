"""Filters: the papers that pass every condition given, as a boolean mask over rows.

The mask is handed to ranking as ``within``; the app's sidebar offers the choices of
:func:`choices`. Columns are read with Arrow compute from the memory-mapped table (imported by
the functions that use it: a lookup without filters loads none of it, 0.05 s).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import pyarrow as pa

from paperscope.embed.columns import stored_name
from paperscope.embed.conditions import Condition, parse
from paperscope.embed.text import counted
from paperscope.errors import Contradiction, NotFound, UserError, shown
from paperscope.index.common.papers import PaperTable
from paperscope.locations import index_option
from paperscope.settings import LEVELS, check_choice

TOPIC_COLUMNS = {"coarse": ["coarse_name"], "fine": ["cluster_name"], None: ["coarse_name", "cluster_name"]}
SHOWN_VALUES = 8  # a column's values listed when a condition on it matches no paper


class Mask(np.ndarray):
    """A boolean mask over rows, as :func:`where` makes it: ``note`` says why no row passes (the
    filter no paper matches, and what the papers hold instead), None while some row does. A mask
    numpy makes of it (``mask & other``) has no note: the lookups then say only that none passes."""

    note: str | None = None


@dataclass(frozen=True)
class _Test:
    """One filter of a :class:`Filters`: how a person writes it ("decision = oral", "years 2030 to
    2031"), which papers pass it, and what the papers hold instead (said when none passes)."""

    label: str
    passed: pa.Array | pa.ChunkedArray
    present: Callable[[], str]


def check_level(level: str) -> str:
    """``level`` if it is a topic level ("coarse" or "fine"), else a UserError naming them."""
    return check_choice(level, LEVELS, "topic level")


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _names(what: str, names) -> list[str]:
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise UserError(f"{what} must be a list of names, got {shown(repr(names))}")
    return list(names)


def _field(papers: PaperTable, name: str):
    if not papers.has(name):
        raise NotFound(f"the papers of {papers.folder} have no '{name}' field to filter on")
    return papers.column(name)


def _topics_condition(papers: PaperTable, topics, level: str | None):
    import pyarrow.compute as pc

    names = pa.array(_names("topics", topics), pa.string())
    if level not in TOPIC_COLUMNS:
        raise UserError(f"unknown topic level '{level}'; choose one of {', '.join(LEVELS)}")
    columns = [papers.column(name) for name in TOPIC_COLUMNS[level]]
    known = set().union(*(pc.unique(column).to_pylist() for column in columns))
    for name in names.to_pylist():
        if name not in known:
            listing = f"paperscope topics{index_option(papers.folder)}"
            raise NotFound(f"no topic named '{shown(name)}' in {papers.folder}; `{listing}` lists them")
    return functools.reduce(pc.or_, (pc.is_in(column, value_set=names) for column in columns))


@dataclass(frozen=True)
class Filters:
    """What the papers must pass (None: no condition): ``years`` one year or a (low, high) pair,
    inclusive, either end None for an open range;
    ``topics`` names of topics of ``level`` ("coarse" or "fine"; None: of either); ``venues`` venue
    names; ``category`` text the paper's categories contain, in any case; ``added_since`` a time
    (Unix milliseconds, a datetime, or ISO-8601 text) from which the paper came into the index;
    ``conditions`` on any of the corpus's columns, as text ("decision = Accept", "citations >= 10",
    "tags contains graphs", "date >= 2024-01-01": ``embed.conditions``)."""

    years: int | tuple[int | None, int | None] | None = None
    topics: list[str] | None = None
    venues: list[str] | None = None
    category: str | None = None
    level: str | None = None
    added_since: object = None
    conditions: tuple = ()  # texts or Conditions on the corpus's columns: "citations >= 10" (embed.conditions)


def year_range(years) -> tuple[int, int]:
    """The inclusive (low, high) of a years filter: one year (2024), or a pair of which either end
    may be None (open: ``(2022, None)`` is 2022 on)."""
    if _is_whole(years):
        return int(years), int(years)
    if isinstance(years, (list, tuple)) and len(years) == 2 and all(y is None or _is_whole(y) for y in years):
        low, high = years
        if low is not None and high is not None and low > high:
            raise Contradiction(f"years from {low} to {high}: the first is after the last; give ({high}, {low})")
        return (-(2**62) if low is None else int(low)), (2**62 if high is None else int(high))
    raise UserError(f"years must be a year or a (low, high) pair of years, either of which may be open, got {years!r}")


def moment(value) -> int:
    """A time as Unix milliseconds (as the papers' ``added`` column keeps it): milliseconds, a
    datetime (naive: UTC) or ISO-8601 text ("2026-12-01", "2026-12-01T08:00"); anything else is a
    UserError."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            raise UserError(f"'{value}' is not a date; give one as 2026-12-01 or 2026-12-01T08:00") from None
    if isinstance(value, datetime.datetime):
        return round((value if value.tzinfo else value.replace(tzinfo=datetime.UTC)).timestamp() * 1000)
    if isinstance(value, datetime.date):
        return moment(datetime.datetime(value.year, value.month, value.day))
    raise UserError(f"a time must be a date, a datetime or Unix seconds, got {value!r}")


def where(papers: PaperTable, wanted: Filters, created: int) -> Mask | None:
    """The papers that pass every condition of ``wanted``, as a boolean :class:`Mask` over rows
    (None when none is given) whose ``note`` says why, when no paper passes. ``created``: when the
    index was built (Unix ms), the time of every paper of an index that does not record when each
    came. A field the papers lack, or a topic the index lacks, is a UserError; a reversed range of
    years a :class:`~paperscope.errors.Contradiction`."""
    tests = _tests(papers, wanted, created)
    if not tests:
        return None
    mask = np.ones(len(papers), dtype=bool).view(Mask)
    passed = [test.passed.fill_null(False).to_numpy(zero_copy_only=False) for test in tests]
    for one in passed:
        mask &= one
    if not mask.any():
        mask.note = _why_none(tests, passed)
    return mask


def _tests(papers: PaperTable, wanted: Filters, created: int) -> list[_Test]:
    """Each filter ``wanted`` gives, as a :class:`_Test`."""
    import pyarrow.compute as pc

    tests = []

    def add(label: str, passed, column, kind: str) -> None:
        tests.append(_Test(label, passed, functools.partial(present_values, column, kind)))

    if wanted.years is not None:
        low, high = year_range(wanted.years)
        column = _field(papers, "year")
        passed = pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))
        add(_years_label(low, high), passed, column, "number")
    if wanted.topics is not None:
        passed = _topics_condition(papers, wanted.topics, wanted.level)
        add(f"topics {', '.join(wanted.topics)}", passed, papers.column(TOPIC_COLUMNS[wanted.level][0]), "text")
    if wanted.venues is not None:
        venues, column = _names("venues", wanted.venues), _field(papers, "venue")
        add(f"venue {' or '.join(venues)}", pc.is_in(column, pa.array(venues, pa.string())), column, "text")
    if wanted.category is not None:
        if not isinstance(wanted.category, str):
            raise UserError(f"category must be text, got {wanted.category!r}")
        column = _field(papers, "categories")
        passed = pc.match_substring(column, wanted.category, ignore_case=True)
        add(f"categories contain {wanted.category}", passed, column, "text")
    if wanted.added_since is not None:
        since = moment(wanted.added_since)
        added = papers.column("added") if papers.has("added") else pa.array(np.full(len(papers), created))
        newest = functools.partial(_newest, added)
        tests.append(_Test(f"added since {_time_text(since)}", pc.greater_equal(added, since), newest))
    if isinstance(wanted.conditions, (str, Condition)):
        raise UserError(f"conditions must be a list, such as ['{wanted.conditions}']")
    for text in wanted.conditions:
        condition = parse(text)
        name, kind = _column_of(papers, condition)
        add(str(condition), condition_mask(papers, condition), papers.column(name), kind)
    return tests


def _why_none(tests: list[_Test], passed: list[np.ndarray]) -> str:
    """Why no paper passes every test: the first that no paper passes alone, and what the papers
    hold instead; else how many each passes alone."""
    counts = [int(np.count_nonzero(one)) for one in passed]
    for test, count in zip(tests, counts, strict=True):
        if not count:
            return f"no paper matches {shown(test.label)}; {test.present()}"
    alone = ", ".join(
        f"{shown(test.label)} matches {counted(count, 'paper')}" for test, count in zip(tests, counts, strict=True)
    )
    return f"no paper matches {' and '.join(shown(test.label) for test in tests)} together; alone, {alone}"


def _years_label(low: int, high: int) -> str:
    if low == high:
        return f"year {low}"
    if high == 2**62:
        return f"year >= {low}"
    return f"year <= {high}" if low == -(2**62) else f"years {low} to {high}"


def _newest(added) -> str:
    import pyarrow.compute as pc

    return f"the newest came {_time_text(pc.max(added).as_py())}"


def _time_text(milliseconds: int) -> str:
    return f"{datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.UTC):%Y-%m-%d %H:%M} UTC"


def _plain(value) -> str:
    """A number or date as a person writes it: 2024, not 2024.0; 2024-05-01."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    return shown(f"{value:g}" if isinstance(value, float) else str(value))


def present_values(values: pa.Array | pa.ChunkedArray, kind: str) -> str:
    """What a column of ``kind`` holds, said when a condition on it matches no paper: the range of
    numbers and dates ("its values run from 2019 to 2025"), else the most common values ("its
    values include poster, spotlight, oral"); ``values``: the column (a list column's lists)."""
    import pyarrow.compute as pc

    if kind == "list":
        values = pc.list_flatten(values)
    values = pc.drop_null(values)
    if kind not in ("number", "date"):
        values = pc.filter(values, pc.not_equal(pc.utf8_trim_whitespace(values.cast(pa.string())), ""))
    if not len(values):
        return "it has no values"
    if kind in ("number", "date"):
        span = pc.min_max(values)
        return f"its values run from {_plain(span['min'].as_py())} to {_plain(span['max'].as_py())}"
    counts = pc.value_counts(values)
    common = sorted(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True),
                    key=lambda pair: (-pair[1], str(pair[0])))  # fmt: skip
    listed = ", ".join(shown(str(value)) for value, _ in common[:SHOWN_VALUES])
    more = f" and {len(common) - SHOWN_VALUES} more" if len(common) > SHOWN_VALUES else ""
    return f"its values include {listed}{more}"


def _column_of(papers: PaperTable, condition: Condition) -> tuple[str, str]:
    """The stored name and kind of the column ``condition`` is on; one the corpus lacks is a
    NotFound listing those it has."""
    kinds = papers.corpus_columns()
    name = condition.column if condition.column in kinds else stored_name(condition.column)
    if name not in kinds:
        known = ", ".join(kinds) or "none"
        raise NotFound(f"the papers of {papers.folder} have no column '{shown(condition.column)}' for "
                       f"'{shown(str(condition))}'; the columns are: {known}")  # fmt: skip
    return name, kinds[name]


_ORDERED = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal", "=": "equal"}  # pyarrow.compute's


def condition_mask(papers: PaperTable, condition: Condition) -> pa.Array:
    """Which papers pass one condition on a column of the corpus (``embed.conditions``: text in any
    case, a member of a list, numbers and dates by value; an empty value passes only ``!=``), as
    a boolean Arrow array; a column the corpus lacks is a UserError listing those it has."""
    import pyarrow.compute as pc

    name, kind = _column_of(papers, condition)
    column = papers.column(name)
    bound, negated = condition.bound(kind), condition.operator == "!="
    if kind == "list":
        column = column.combine_chunks()
        hits = pc.equal(pc.utf8_lower(pc.list_flatten(column)), bound).fill_null(False).to_numpy(zero_copy_only=False)
        member = np.zeros(len(column), dtype=bool)
        member[pc.list_parent_indices(column).to_numpy()[hits]] = True
        return pa.array(member != negated)
    if kind == "text" and condition.operator == "contains":
        return pc.match_substring(column, condition.value, ignore_case=True).fill_null(False)
    if kind == "text":
        column = pc.utf8_lower(column)
    elif kind == "date":
        column, bound = column.cast(pa.date32()), pa.scalar(bound, pa.date32())
    found = getattr(pc, _ORDERED["=" if negated else condition.operator])(column, bound)
    return pc.invert(found).fill_null(True) if negated else found.fill_null(False)


class FilterChoices(TypedDict):
    """:func:`choices`: topic names of each level, the years' range (None without years), the
    venues, and whether papers have categories."""

    coarse: list[str]
    fine: list[str]
    years: tuple[int, int] | None
    venues: list[str]
    categories: bool


def choices(papers: PaperTable) -> FilterChoices:
    """What the filters can offer, read with Arrow (a million papers: 0.1 s): topic names of each
    level ("coarse", "fine"), the years' range ("years": (low, high), or None without years), the
    venues, and whether papers have categories."""
    import pyarrow.compute as pc

    years: dict = pc.min_max(papers.column("year")).as_py() if papers.has("year") else {"min": None}
    return {
        "coarse": papers.values("coarse_name"),
        "fine": papers.values("cluster_name"),
        "years": (years["min"], years["max"]) if years["min"] is not None else None,
        "venues": papers.values("venue"),
        "categories": papers.has("categories"),
    }
