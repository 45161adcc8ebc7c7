"""The corpus's own columns in the app: "Filter by a column" in the sidebar (the control a column's
kind calls for, turned into ``PaperIndex.where`` conditions), "Colour the map by" a column, and the
values of those columns on the result cards, escaped.

Nothing here runs for a corpus without columns of its own beyond year, venue and categories (the
sidebar's own filters); a column's values are read (one column, not the whole table) only when a
user picks it, once per index generation.
"""

from __future__ import annotations

import base64
import html
import math
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from paperscope.embed.conditions import parse
from paperscope.errors import UserError, shown
from paperscope.index.paper_index import PaperIndex
from paperscope.ui.mapplot import UNCLUSTERED_COLOUR, map_colours
from paperscope.ui.session import Key

if TYPE_CHECKING:  # the results' values: pandas is imported with the first results, not on the first page
    import pandas as pd

COLUMN_CHOICES = 100  # a text column with more distinct values (a list with more members) is filtered by typing
SIDEBAR_COLUMNS = ("year", "venue", "categories")  # the sidebar's own controls filter these
SHOWN_VALUE_CHARS = 80  # a column's value on a result card is cut here
TOPICS = "topics"  # the map's own colours


def filterable(index: PaperIndex) -> dict[str, str]:
    """The columns "Filter by a column" offers, name → kind: the corpus's columns but those the
    sidebar filters already, and any whose name a condition could not name (one holding "=")."""
    return {name: kind for name, kind in index.columns().items() if name not in SIDEBAR_COLUMNS and _nameable(name)}


def _nameable(name: str) -> bool:
    try:
        return parse(f"{name} = x").column == name
    except UserError:
        return False


def quoted(value) -> str:
    """A value in a condition, quoted so that it is read back whole (spaces, quotes and all)."""
    return f'"{value}"'


@st.cache_resource(show_spinner=False, max_entries=64)
def column_summary(_index: PaperIndex, source: tuple[str, str], name: str, kind: str) -> dict:
    """What the filter offers for column ``name`` of the index of ``source`` (folder, generation):
    numbers and dates their lowest and highest ("low", "high"; "whole" for whole numbers), text and
    lists their values, most common first ("values"; None when over ``COLUMN_CHOICES``)."""
    values = _index.table(columns=[name]).column(name).to_pandas().dropna()
    if kind in ("number", "date"):
        if values.empty:
            return {}
        whole = kind == "number" and bool((values.astype(np.float64) % 1 == 0).all())
        return {"low": values.min(), "high": values.max(), "whole": whole}
    if kind == "list":
        values = values.map(list).explode().dropna()
    values = values.astype(str)
    counts = values[values.str.strip() != ""].value_counts()
    return {"values": counts.index.tolist() if len(counts) <= COLUMN_CHOICES else None}


def _number_range(name: str, summary: dict) -> list[list[str]]:
    low, high = summary["low"], summary["high"]
    step: float
    if summary["whole"]:
        low, high, step = int(low), int(high), 1
    else:
        low, high = float(low), float(high)
        step = 10.0 ** math.floor(math.log10((high - low) / 100)) if high > low else 1.0
    chosen = st.slider(name, low, high, (low, high), step=step, key=f"column_range_{name}")
    conditions = [f"{name} >= {chosen[0]}"] if chosen[0] > low else []
    return [conditions + ([f"{name} <= {chosen[1]}"] if chosen[1] < high else [])]


def _date_range(name: str, summary: dict) -> list[list[str]]:
    low, high = summary["low"], summary["high"]
    chosen = st.date_input(name, (low, high), min_value=low, max_value=high, key=f"column_dates_{name}")
    if not isinstance(chosen, tuple | list) or len(chosen) != 2:
        return [[]]  # the second date not picked yet
    conditions = [f"{name} >= {chosen[0].isoformat()}"] if chosen[0] > low else []
    return [conditions + ([f"{name} <= {chosen[1].isoformat()}"] if chosen[1] < high else [])]


def _values(name: str, kind: str, summary: dict) -> list[list[str]]:
    """A text or list column: any of the values (members) picked, or the text typed when there
    are too many to list."""
    if summary["values"] is None:
        label = f"{name} has the member" if kind == "list" else f"{name} contains"
        typed = st.text_input(label, key=f"column_text_{name}").strip()
        return [[f"{name} contains {quoted(typed)}"]] if typed else [[]]
    label = f"{name}: papers with any of these {'members' if kind == 'list' else 'values'}"
    chosen = st.multiselect(label, summary["values"], format_func=shown, key=f"column_values_{name}")
    operator = "contains" if kind == "list" else "="
    return [[f"{name} {operator} {quoted(value)}"] for value in chosen] or [[]]


def column_filter(index: PaperIndex, source: tuple[str, str]) -> dict:
    """The sidebar's "Filter by a column" (only when the corpus has columns it offers): a column,
    then a range for numbers and dates, values for text, members for a list. Returns what to add to
    the filters: ``{"conditions": [...]}`` (all must hold: ``PaperIndex.where``'s argument) or
    ``{"any_of": [[...], ...]}`` (any group of conditions; see :func:`filters_mask`), {} when no filter."""
    columns = filterable(index)
    if not columns:
        return {}
    with st.sidebar.expander("Filter by a column", expanded=bool(st.session_state.get(Key.FILTER_COLUMN))):
        name = st.selectbox(
            "Column",
            list(columns),
            index=None,
            placeholder="choose a column",
            format_func=shown,
            key=Key.FILTER_COLUMN,
            help="Numbers and dates: a range; text: any of its values (or the text it contains, when it has many); "
            "a list: papers with any of the members picked.",
        )
        if name is None:
            return {}
        kind = columns[name]
        summary = column_summary(index, source, name, kind)
        if not summary:
            st.caption(f"No paper has a value of {shown(name)}.")
            return {}
        if kind in ("number", "date") and summary["low"] == summary["high"]:
            st.caption(f"Every paper with a value of {shown(name)} has {value_text(summary['low'])}.")
            return {}
        if kind == "number":
            groups = _number_range(name, summary)
        elif kind == "date":
            groups = _date_range(name, summary)
        else:
            groups = _values(name, kind, summary)
    groups = [group for group in groups if group]
    if len(groups) > 1:
        return {"any_of": groups}
    return {"conditions": groups[0]} if groups else {}


def filters_mask(index: PaperIndex, filters: dict) -> np.ndarray | None:
    """The mask of the papers passing ``filters`` (``PaperIndex.where``'s arguments, and
    ``any_of``: groups of conditions, a paper passing when it meets every condition of one)."""
    mask = index.where(**{key: value for key, value in filters.items() if key != "any_of"})
    if filters.get("any_of"):
        # (where with conditions is a mask: None is only where nothing is asked)
        either = np.logical_or.reduce([index.where(conditions=group) for group in filters["any_of"]])  # type: ignore[arg-type]
        mask = either if mask is None else mask & either
    return mask


def colour_select(index: PaperIndex) -> str | None:
    """The sidebar's "Colour the map by": the topics (None) or one of the corpus's columns."""
    columns = list(index.columns())
    if not columns:
        return None
    chosen = st.sidebar.selectbox(
        "Colour the map by",
        [TOPICS, *columns],
        format_func=lambda name: "topics (of the level shown)" if name == TOPICS else shown(name),
        key=Key.COLOUR_BY,
        help="A column of words: its most common values in colours, the rest grey; a list: each paper's most "
        "common member; numbers and dates: a scale from the lowest to the highest.",
    )
    return None if chosen in (None, TOPICS) else chosen


@st.cache_resource(show_spinner=False, max_entries=16)
def column_colours(_index: PaperIndex, source: tuple[str, str], name: str) -> dict:
    """The map's colours by column ``name`` of the index of ``source`` (``mapplot.map_colours``),
    once per generation."""
    values = _index.table(columns=[name]).column(name).to_pandas()
    return map_colours(values, name, _index.columns().get(name))


def paper_colours(colour: dict, rows) -> list[str]:
    """The colours the map gives the papers at ``rows`` when coloured by a column (``colour``, from
    :func:`column_colours`): a result card's dot matches its point."""
    codes = np.frombuffer(base64.b64decode(colour["values"]), dtype=np.int16)[np.asarray(rows, dtype=np.int64)]
    palette = colour["palette"]
    return [UNCLUSTERED_COLOUR if code < 0 else palette[code % len(palette)] for code in codes]


def value_text(value) -> str:
    """One value of a column as a result card shows it, escaped for HTML: a list's members joined
    by "; ", a date as YYYY-MM-DD, a whole number without ".0", "—" when missing; on one line
    (control characters written as ``\\x07``) and at most ``SHOWN_VALUE_CHARS`` characters."""
    import pandas as pd

    if isinstance(value, list | tuple | np.ndarray):
        text = "; ".join(str(item) for item in value) or "—"
    elif value is None or pd.isna(value):
        text = "—"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value)
    return html.escape(shown(text, SHOWN_VALUE_CHARS))


def column_values_html(results: pd.DataFrame, names: list[str | None]) -> list[str]:
    """Each result's values of the columns ``names`` (those the results have; None: no column) as one escaped line
    ("decision: Accept · tags: graphs; vision"), "" when there are none."""
    names = [name for name in dict.fromkeys(names) if name and name in results]
    columns = [results[name].tolist() for name in names]
    return [
        " · ".join(
            f"{html.escape(shown(name))}: {value_text(values[i])}" for name, values in zip(names, columns, strict=True)
        )
        for i in range(len(results))
    ]
