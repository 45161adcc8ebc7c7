"""Filters: the papers that pass every condition given, as a boolean mask over rows.

The mask is handed to ranking as ``within``; the app's sidebar offers the choices of
:func:`choices`. Columns are read with Arrow compute from the memory-mapped table.
"""

from __future__ import annotations

import datetime
import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paperscope.embed.columns import stored_name
from paperscope.embed.conditions import Condition, parse
from paperscope.errors import NotFound, UserError, shown
from paperscope.index.common.papers import PaperTable
from paperscope.locations import index_option
from paperscope.settings import LEVELS, check_choice

TOPIC_COLUMNS = {"coarse": ["coarse_name"], "fine": ["cluster_name"], None: ["coarse_name", "cluster_name"]}


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


def where(papers: PaperTable, wanted: Filters, created: int):
    """The papers that pass every condition of ``wanted``, as a boolean mask over rows (None when
    none is given). ``created``: when the index was built (Unix ms), the time of every paper of an index
    that does not record when each came. A field the papers lack, or a topic the index lacks, is
    a UserError."""
    conditions = []
    if wanted.years is not None:
        low, high = year_range(wanted.years)
        column = _field(papers, "year")
        conditions.append(pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high)))
    if wanted.topics is not None:
        conditions.append(_topics_condition(papers, wanted.topics, wanted.level))
    if wanted.venues is not None:
        conditions.append(pc.is_in(_field(papers, "venue"), pa.array(_names("venues", wanted.venues), pa.string())))
    if wanted.category is not None:
        if not isinstance(wanted.category, str):
            raise UserError(f"category must be text, got {wanted.category!r}")
        conditions.append(pc.match_substring(_field(papers, "categories"), wanted.category, ignore_case=True))
    if wanted.added_since is not None:
        since = moment(wanted.added_since)
        added = papers.column("added") if papers.has("added") else pa.array(np.full(len(papers), created))
        conditions.append(pc.greater_equal(added, since))
    if isinstance(wanted.conditions, (str, Condition)):
        raise UserError(f"conditions must be a list, such as ['{wanted.conditions}']")
    conditions += [condition_mask(papers, parse(condition)) for condition in wanted.conditions]
    if not conditions:
        return None
    mask = np.ones(len(papers), dtype=bool)
    for condition in conditions:
        mask &= condition.fill_null(False).to_numpy(zero_copy_only=False)
    return mask


_ORDERED = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal, "=": pc.equal}


def condition_mask(papers: PaperTable, condition: Condition) -> pa.Array:
    """Which papers pass one condition on a column of the corpus (``embed.conditions``: text in any
    case, a member of a list, numbers and dates by value; an empty value passes only ``!=``), as
    a boolean Arrow array; a column the corpus lacks is a UserError listing those it has."""
    kinds = papers.corpus_columns()
    name = condition.column if condition.column in kinds else stored_name(condition.column)
    if name not in kinds:
        known = ", ".join(kinds) or "none"
        raise NotFound(f"the papers of {papers.folder} have no column '{shown(condition.column)}' for "
                       f"'{shown(str(condition))}'; the columns are: {known}")  # fmt: skip
    kind, column = kinds[name], papers.column(name)
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
    found = _ORDERED["=" if negated else condition.operator](column, bound)
    return pc.invert(found).fill_null(True) if negated else found.fill_null(False)


def choices(papers: PaperTable) -> dict:
    """What the filters can offer, read with Arrow (a million papers: 0.1 s): topic names of each
    level ("coarse", "fine"), the years' range ("years": (low, high), or None without years), the
    venues, and whether papers have categories."""
    years = pc.min_max(papers.column("year")).as_py() if papers.has("year") else {"min": None}
    return {
        "coarse": papers.values("coarse_name"),
        "fine": papers.values("cluster_name"),
        "years": (years["min"], years["max"]) if years["min"] is not None else None,
        "venues": papers.values("venue"),
        "categories": papers.has("categories"),
    }
