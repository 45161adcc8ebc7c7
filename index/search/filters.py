"""Filters: the papers that pass every condition given, as a boolean mask over rows.

The mask is handed to ranking as ``within``; the app's sidebar offers the choices of
:func:`choices`. Columns are read with Arrow compute from the memory-mapped table.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paperscope.errors import UserError
from paperscope.index.store.papers import PaperTable
from paperscope.settings import LEVELS, check_choice

TOPIC_COLUMNS = {"coarse": ["coarse_name"], "fine": ["cluster_name"], None: ["coarse_name", "cluster_name"]}


def check_level(level: str) -> str:
    """``level`` if it is a topic level ("coarse" or "fine"), else a UserError naming them."""
    return check_choice(level, LEVELS, "topic level")


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _names(what: str, names) -> list[str]:
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise UserError(f"{what} must be a list of names, got {names!r}")
    return list(names)


def _field(papers: PaperTable, name: str):
    if not papers.has(name):
        raise UserError(f"the papers of {papers.folder} have no '{name}' field to filter on")
    return papers.column(name)


def _topics_condition(papers: PaperTable, topics, level: str | None):
    names = pa.array(_names("topics", topics), pa.string())
    if level not in TOPIC_COLUMNS:
        raise UserError(f"unknown topic level '{level}'; choose one of {', '.join(LEVELS)}")
    columns = [papers.column(name) for name in TOPIC_COLUMNS[level]]
    known = set().union(*(pc.unique(column).to_pylist() for column in columns))
    for name in names.to_pylist():
        if name not in known:
            raise UserError(f"no topic named '{name}' in {papers.folder}; `paperscope topics` lists them")
    return functools.reduce(pc.or_, (pc.is_in(column, value_set=names) for column in columns))


def where(papers: PaperTable, years=None, topics=None, venues=None, category=None, level: str | None = None):
    """The papers that pass every filter given, as a boolean mask over rows (None when none is
    given): ``years`` a (low, high) pair, inclusive; ``topics`` names of topics of ``level``
    ("coarse" or "fine"; None: of either); ``venues`` venue names; ``category`` text the paper's
    categories contain, in any case. A field the papers lack, or a topic the index lacks, is a UserError."""
    conditions = []
    if years is not None:
        if not (isinstance(years, (list, tuple)) and len(years) == 2 and all(_is_whole(year) for year in years)):
            raise UserError(f"years must be a (low, high) pair of whole numbers, got {years!r}")
        column = _field(papers, "year")
        conditions.append(pc.and_(pc.greater_equal(column, years[0]), pc.less_equal(column, years[1])))
    if topics is not None:
        conditions.append(_topics_condition(papers, topics, level))
    if venues is not None:
        conditions.append(pc.is_in(_field(papers, "venue"), pa.array(_names("venues", venues), pa.string())))
    if category is not None:
        if not isinstance(category, str):
            raise UserError(f"category must be text, got {category!r}")
        conditions.append(pc.match_substring(_field(papers, "categories"), category, ignore_case=True))
    if not conditions:
        return None
    mask = np.ones(len(papers), dtype=bool)
    for condition in conditions:
        mask &= condition.fill_null(False).to_numpy(zero_copy_only=False)
    return mask


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
