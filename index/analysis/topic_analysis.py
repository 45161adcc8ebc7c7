"""The topics of a loaded index: their overview, their shares by year (or venue, category…), two
groups of papers compared, and the papers between two topics. Read-only: the topics themselves
are computed at build time (:mod:`paperscope.index.topics`)."""

from __future__ import annotations

import datetime
import itertools
import re

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.embed.columns import stored_name
from paperscope.embed.conditions import Condition, parse
from paperscope.embed.terms import singular, words
from paperscope.errors import NotFound, UserError, shown
from paperscope.index.search.filters import check_level, present_values
from paperscope.settings import UNCLUSTERED_NAME

ALL_CANDIDATES = 100_000  # papers; a larger corpus looks for bridges among the two topics' papers only


def _topic_columns(level: str) -> tuple[str, str]:
    """The papers' columns holding a topic of ``level``: its number and its name."""
    check_level(level)
    return ("coarse_cluster", "coarse_name") if level == "coarse" else ("cluster", "cluster_name")


def topic_overview(index, level: str = "coarse") -> pd.DataFrame:
    """Every topic of ``level`` ("coarse" or "fine"), largest first.

    Columns: cluster, name, size, share (of the corpus), map_trust, central_ids and central_titles
    (its three most central papers), terms, and for fine topics the coarse topic (parent) holding it.
    """
    table = index.topics.table(level)
    central = sorted({paper_id for ids in table["central_ids"] for paper_id in ids})
    titles = index.table(index.rows(central), ["title"]).column("title").to_pylist()  # a few rows, not every abstract
    title_of = dict(zip(central, titles, strict=True))
    overview = table[["cluster", "name", "size", "map_trust", "central_ids", "terms", "parent"]].copy()
    overview.insert(3, "share", overview["size"] / len(index))
    overview["central_ids"] = [list(ids) for ids in overview["central_ids"]]
    overview["central_titles"] = [[title_of[i] for i in ids] for ids in overview["central_ids"]]
    overview["terms"] = [list(terms) for terms in overview["terms"]]
    if level == "coarse":
        overview = overview.drop(columns="parent")
    return overview.sort_values(["size", "cluster"], ascending=[False, True]).reset_index(drop=True)


def topic_listing(index, level: str = "coarse") -> pd.DataFrame:
    """:func:`topic_overview` with the papers in no topic of ``level`` as a last row, "unclustered"
    (cluster -1: their number, share and mean map trust), when there are any: sizes that add up to
    the corpus, as the app's topics table shows them."""
    overview = topic_overview(index, level)
    number_column, _ = _topic_columns(level)
    papers = index.table(columns=[number_column, "map_trust"]).to_pandas()
    outside = papers[number_column].to_numpy() < 0
    if not outside.any():
        return overview
    row = {
        "cluster": -1,
        "name": UNCLUSTERED_NAME,
        "size": int(outside.sum()),
        "share": float(outside.mean()),
        "map_trust": float(papers["map_trust"].to_numpy()[outside].mean()),
    }
    return pd.concat([overview, pd.DataFrame([row])], ignore_index=True)


def _words(text: str) -> set[str]:
    return {singular(word) for word in words(text)}


def find_topic(index, topic, level: str = "coarse") -> int:
    """The number of the topic of ``level`` given by its number, its name, a part of its name, or
    words all of which its name uses (any order, singular or plural); several candidates are a
    UserError that lists them alone."""
    table = index.topics.table(level)
    names = dict(zip(table["cluster"], table["name"], strict=True))
    text = str(topic).strip()
    if text.lstrip("-").isdigit() and int(text) in names:
        return int(text)
    asked = _words(text)
    for matches in (
        lambda name: name.lower() == text.lower(),
        lambda name: text.lower() in name.lower(),
        lambda name: bool(asked) and asked <= _words(name),
    ):
        found = [number for number, name in names.items() if matches(name)]
        if len(found) == 1:
            return found[0]
        if found:
            listed = "; ".join(f"{number}: {names[number]}" for number in sorted(found))
            raise UserError(f"topic '{shown(text)}' matches {len(found)} {level} topics ({listed}); give its number")
    known = "; ".join(f"{number}: {name}" for number, name in sorted(names.items()))
    raise UserError(
        f"topic '{shown(text)}' is not one of the {level} topics ({known}); give its number or words of its name"
    )


MAX_VALUES = 12  # values of a column shown apart (the most common); the rest are summed as "other"
DEFAULT_BINS = 4  # a number column of more than MAX_VALUES values is split at its quartiles
LIST_FIELDS = ("authors", "categories")  # fields the readers store as lists joined by "; "
ARXIV_CODES = re.compile(r"[a-z-]+(\.[A-Za-z-]+)?(\s+[a-z-]+(\.[A-Za-z-]+)?)*")  # "cs.LG stat.ML"
SMOOTHING = 0.5  # papers added to each topic's count in both groups before their shares are divided


def group_columns(index) -> list[str]:
    """The papers' metadata columns topics can be split by (year, venue, categories… and the
    corpus's own columns: those it has values in; never the index's own, such as x, y or
    cluster), in the table's order."""
    return [name for name in index.columns() if _has_values(index.papers[name])]


def _has_values(values: pd.Series) -> bool:
    values = values.dropna()
    if values.dtype == object and len(values) and not isinstance(values.iloc[0], str):
        return bool(values.map(len).any()) if hasattr(values.iloc[0], "__len__") else True
    return bool(len(values)) and bool((values.astype(str).str.strip() != "").any())


def _split(column: str, text: str) -> list[str]:
    """The values of one paper's ``column``: a list field (authors, categories) as its readers
    joined it ("a; b"), arXiv categories by spaces ("cs.LG stat.ML"); any other field whole."""
    if column not in LIST_FIELDS:
        return [text]
    parts = [part.strip() for part in text.split(";")]
    if column == "categories" and len(parts) == 1 and "." in text and ARXIV_CODES.fullmatch(text):
        parts = text.split()
    return [part for part in parts if part]


def _column(index, column: str) -> tuple[str, str]:
    """The stored name and kind of the corpus column ``column`` (one named like the index's own
    is kept as corpus_<name>); one the corpus lacks, or has no value in, is a NotFound listing
    those it has."""
    kinds = index.columns()
    name = column if column in kinds else stored_name(column)
    if name in kinds and _has_values(index.papers[name]):
        return name, kinds[name]
    present = group_columns(index)
    known = ", ".join(present) if present else "none"
    if column == "year":
        raise NotFound(
            f"this corpus has no years (no 'year' field in its files): topics over time need one; "
            f"the columns it has are: {known}"
        )
    missing = "no value in its column" if name in kinds else "no column"
    raise NotFound(f"this corpus has {missing} '{shown(column)}' to split topics by; the columns it has are: {known}")


def column_values(index, column: str) -> pd.Series:
    """The values of ``column``, one entry per paper and value, indexed by the paper's row: a
    paper without a value has none, one of a list (a list column, authors, categories) one per
    member. Whole numbers (years among them) are integers, other numbers floats, dates
    ``datetime.date``, other values text. A column the corpus lacks, or has no value in, is a
    UserError listing those it has."""
    name, kind = _column(index, column)
    values = index.papers[name].reset_index(drop=True).dropna()
    if kind == "number":
        whole = (values.astype(np.float64) % 1 == 0).all()
        return values.astype(np.int64) if whole else values.astype(np.float64)
    if kind == "date":
        return values
    if kind == "list":
        return values.map(list).explode().dropna().astype(str)
    values = values.astype(str).str.strip()
    values = values[values != ""]
    if name in LIST_FIELDS:
        values = values.map(lambda text: _split(name, text)).explode().dropna()
    return values


def _number(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:.3g}"


def _edges(numbers: np.ndarray, bins, parse) -> np.ndarray:
    """The edges of ``bins``: a count (that many groups of about as many papers: quantiles) or
    the edges themselves (``parse`` reads each given as text); at least two, distinct."""
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if not 2 <= bins <= MAX_VALUES:
            raise UserError(f"bins: a number of groups from 2 to {MAX_VALUES}, or the edges between them; got {bins}")
        return np.unique(np.quantile(numbers, np.linspace(0, 1, bins + 1)))
    edges = np.unique([parse(str(edge).strip()) for edge in bins])
    if len(edges) < 2:
        raise UserError(f"bins: give at least two different edges, such as 0,5,10; got {', '.join(map(str, bins))}")
    return edges


def binned(values: pd.Series, kind: str, bins) -> tuple[pd.Series, list[str]]:
    """Numbers or dates in groups between edges (:func:`_edges`): each value as its group's label
    ("3–5", the last group closed: "5–10"; beyond the edges given "< 0" and "> 10"), and the
    labels in order."""
    if kind == "date":
        numbers = np.array([value.toordinal() for value in values], dtype=np.float64)
        edges = _edges(numbers, bins, lambda text: _date_bound(text).toordinal())
        show = lambda edge: datetime.date.fromordinal(int(edge)).isoformat()  # noqa: E731
    else:
        numbers = values.to_numpy(dtype=np.float64)
        edges = _edges(numbers, bins, _number_bound)
        show = _number
    if len(edges) < 2:  # every value the same
        return values.map(lambda value: show(edges[0])), [show(edges[0])]
    group = np.searchsorted(edges, numbers, side="right")
    group[numbers == edges[-1]] = len(edges) - 1
    labels = [f"< {show(edges[0])}"] + [f"{show(low)}–{show(high)}" for low, high in itertools.pairwise(edges)]
    labels.append(f"> {show(edges[-1])}")
    present = sorted(set(group.tolist()))
    return pd.Series([labels[g] for g in group], index=values.index), [labels[g] for g in present]


def _number_bound(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"bins: '{shown(text)}' is not a number") from None


def _date_bound(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise UserError(f"bins: '{shown(text)}' is not a date (YYYY-MM-DD)") from None


def _rows(index, number_column: str, counted: np.ndarray) -> pd.DataFrame:
    """The topics of a table by topic (cluster, name), plus "unclustered" (cluster -1) when
    some of the ``counted`` papers' topics (their numbers) are none."""
    table = index.topics.table("coarse" if number_column == "coarse_cluster" else "fine")
    rows = table.loc[table["cluster"] >= 0, ["cluster", "name"]]
    if (counted < 0).any():
        rows = pd.concat([rows, pd.DataFrame({"cluster": [-1], "name": [UNCLUSTERED_NAME]})])
    return rows.reset_index(drop=True)


def topics_by(index, column: str, level: str = "coarse", bins=None) -> pd.DataFrame:
    """Each topic's share of the papers of each value of ``column`` (year, venue, categories, or
    any column of the corpus: see :func:`group_columns`); a paper of several values (authors,
    categories, a list column) counts in each.

    One row per topic (cluster, name), then one column per value, then over time (years, dates)
    ``change``, the share's change from the first value to the last. Years are every year, dates
    grouped by year, in order, topics sorted by change (grew most first); numbers are grouped by
    ``bins`` (a count of groups split at quantiles, or the edges: :func:`binned`; None: each value
    when there are at most ``MAX_VALUES``, else ``DEFAULT_BINS`` quantile groups), as are dates
    when ``bins`` is given, in order; other values are the ``MAX_VALUES`` most common, most common
    first, the rest summed as "other"; topics largest first. Papers in no topic are the last row,
    "unclustered" (cluster -1): each value's shares sum to 1.
    ``attrs``: column, values (the value columns), papers (each value's number of papers) and
    over_time (whether ``change`` is there).
    """
    number_column, _ = _topic_columns(level)
    name, kind = _column(index, column)
    values = column_values(index, column)
    topic = index.papers[number_column].to_numpy()[values.index.to_numpy()]
    over_time = name == "year" or (kind == "date" and bins is None)
    if bins is not None and kind not in ("number", "date"):
        raise UserError(f"bins group numbers and dates; '{shown(column)}' holds {kind}")
    if kind == "date" and bins is None:
        values = values.map(lambda day: day.year)
    order: list  # the values (numbers, texts or bins' labels) in the order shown
    if over_time:
        order = [int(value) for value in sorted(values.unique())]
    elif kind in ("number", "date") and (bins is not None or values.nunique() > MAX_VALUES):
        values, order = binned(values, kind, DEFAULT_BINS if bins is None else bins)
    elif kind == "number":
        order = sorted(values.unique().tolist())
    else:
        frequency = values.value_counts()
        common = sorted(frequency.index, key=lambda value: (-frequency[value], value))
        order = common[:MAX_VALUES]
        if len(common) > MAX_VALUES:
            rest = "other" if "other" not in order else "other values"
            values = values.where(values.isin(order), rest)
            order.append(rest)
    counts = pd.crosstab(topic, values.to_numpy()).reindex(columns=order, fill_value=0)
    rows = _rows(index, number_column, topic)
    counts = counts.reindex(rows["cluster"], fill_value=0)
    papers = counts.sum(axis=0)
    result = rows.copy()
    for value in order:
        result[value] = (counts[value] / papers[value]).to_numpy()
    if over_time:
        result["change"] = result[order[-1]] - result[order[0]]
        key = result["change"]
    else:
        key = pd.Series(counts.sum(axis=1).to_numpy(), dtype=np.float64)
    clustered = result["cluster"] >= 0
    ranked = key.where(clustered, -np.inf).to_numpy()
    result = result.iloc[np.lexsort((result["cluster"].to_numpy(), -ranked))].reset_index(drop=True)
    result.attrs = {
        "column": column, "values": order, "papers": {value: int(papers[value]) for value in order},
        "over_time": over_time,
    }  # fmt: skip
    return result


def as_group(group) -> Condition:
    """A group of papers as a condition: (column, value) (the papers with that value), a
    condition's text ("review_score >= 6", "venue=ICML") or a ``Condition``."""
    if isinstance(group, (tuple, list)) and len(group) == 2:
        return Condition(str(group[0]).strip(), "=", str(group[1]).strip())
    return parse(group)


def _group_rows(index, group) -> tuple[str, np.ndarray]:
    """The label ("column=value", or the condition) and rows of the papers of one group
    (:func:`as_group`): a value matched as its column holds it (a number, a date, a member of a
    list, text in any case); one matching no paper is a UserError listing some values."""
    condition = as_group(group)
    column, value = condition.column, condition.value
    label = f"{column}={value}" if condition.operator == "=" else str(condition)
    values = column_values(index, column)
    _, kind = _column(index, column)
    if condition.operator != "=":
        mask = index.where(conditions=[condition])
        matched = pd.Series(mask[values.index.to_numpy()], index=values.index)
    elif kind in ("number", "date"):
        matched = values == condition.bound(kind)
    else:
        matched = values.str.casefold() == value.casefold()
    if not matched.any():
        wanted = f"has {column} '{shown(value)}'" if condition.operator == "=" else f"meets '{shown(label)}'"
        held = present_values(pa.array(values.tolist()), "text" if kind == "list" else kind)  # lists: one per member
        raise NotFound(f"no paper {wanted}; {held}")
    return label, np.unique(values.index.to_numpy()[matched.to_numpy()])


def topics_compare(index, group_a, group_b, level: str = "coarse") -> pd.DataFrame:
    """The topics over-represented in one group of papers against another; a group is (column,
    value), such as ("venue", "ICML") or ("year", 2024), or a condition on any column, such as
    "review_score >= 6" or "tags contains graphs" (:func:`as_group`).

    One row per topic: cluster, name, papers_a and papers_b (its papers in each group), share_a
    and share_b (of the group's papers), ratio (share in A over share in B, each count plus
    ``SMOOTHING`` so that a topic absent from a group has a finite ratio), most over-represented
    in A first, most over-represented in B last; papers in no topic last, as "unclustered".
    ``attrs``: groups (the two labels) and papers (each group's number of papers).
    """
    number_column, _ = _topic_columns(level)
    (label_a, rows_a), (label_b, rows_b) = _group_rows(index, group_a), _group_rows(index, group_b)
    if np.array_equal(rows_a, rows_b):
        same = f"{shown(label_a)} and {shown(label_b)} are the same papers"
        raise UserError(f"compare needs two different groups: {same}")
    topic = index.papers[number_column].to_numpy()
    rows = _rows(index, number_column, np.concatenate([topic[rows_a], topic[rows_b]]))
    result = rows.copy()
    for name, members in (("a", rows_a), ("b", rows_b)):
        counts = pd.Series(topic[members]).value_counts().reindex(rows["cluster"], fill_value=0).to_numpy()
        result[f"papers_{name}"] = counts
        result[f"share_{name}"] = counts / len(members)
        result[f"smoothed_{name}"] = (counts + SMOOTHING) / (len(members) + SMOOTHING * len(rows))
    result["ratio"] = result["smoothed_a"] / result["smoothed_b"]
    result = result[["cluster", "name", "papers_a", "papers_b", "share_a", "share_b", "ratio"]]
    ranked = result["ratio"].where(result["cluster"] >= 0, -np.inf).to_numpy()
    result = result.iloc[np.lexsort((result["cluster"].to_numpy(), -ranked))].reset_index(drop=True)
    result.attrs = {"groups": [label_a, label_b], "papers": [len(rows_a), len(rows_b)]}
    return result


def bridges(index, a, b, level: str = "coarse", neighbours: int = 10, limit: int = 10) -> pd.DataFrame:
    """Papers between topics ``a`` and ``b`` (numbers or names, see ``find_topic``): those whose
    ``neighbours`` nearest papers fall in both. Ranked by balance, the share of the neighbours that
    pair up across the two (2 x the smaller count / neighbours: 1.0 when half are in each), then
    by evenness (the smaller count over the larger). Every paper is a candidate, whatever its own
    topic; above ``ALL_CANDIDATES`` papers, only those of both topics and those in no topic.

    Columns: id, title, topic (the paper's own), in_a, in_b, balance, evenness.
    """
    number_column, name_column = _topic_columns(level)
    first, second = find_topic(index, a, level), find_topic(index, b, level)
    if first == second:
        raise UserError("bridges need two different topics")
    topic = index.papers[number_column].to_numpy()
    rows = (
        np.arange(len(topic)) if len(topic) <= ALL_CANDIDATES else np.flatnonzero(np.isin(topic, [first, second, -1]))
    )
    columns = ["id", "title", "topic", "in_a", "in_b", "balance", "evenness"]
    if len(rows) == 0:
        return pd.DataFrame(columns=columns)
    _, found = index.neighbours(rows, min(neighbours, len(index) - 1))
    near = np.where(found >= 0, topic[np.maximum(found, 0)], -2)
    in_a, in_b = (near == first).sum(axis=1), (near == second).sum(axis=1)
    between = (in_a > 0) & (in_b > 0)
    evenness = np.minimum(in_a, in_b) / np.maximum(np.maximum(in_a, in_b), 1)
    balance = 2 * np.minimum(in_a, in_b) / neighbours
    order = np.lexsort((-evenness, -balance))
    order = order[between[order]][:limit]
    papers = index.papers.iloc[rows[order]]
    return pd.DataFrame(
        {
            "id": papers["id"].to_numpy(),
            "title": papers["title"].to_numpy(),
            "topic": papers[name_column].to_numpy(),
            "in_a": in_a[order],
            "in_b": in_b[order],
            "balance": balance[order],
            "evenness": evenness[order],
        },
        columns=columns,
    )
