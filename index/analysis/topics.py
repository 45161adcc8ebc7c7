"""The topics of a loaded index: their overview, their shares over the years, and the papers
between two topics. Read-only: the topics themselves are computed at build time
(:mod:`paperscope.index.topics`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from paperscope.embed.terms import singular, words
from paperscope.errors import UserError, shown
from paperscope.index.search.filters import check_level

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
    table = index.topic_table(level)
    title_of = dict(zip(index.papers["id"], index.papers["title"], strict=True))
    overview = table[["cluster", "name", "size", "map_trust", "central_ids", "terms", "parent"]].copy()
    overview.insert(3, "share", overview["size"] / len(index))
    overview["central_ids"] = [list(ids) for ids in overview["central_ids"]]
    overview["central_titles"] = [[title_of[i] for i in ids] for ids in overview["central_ids"]]
    overview["terms"] = [list(terms) for terms in overview["terms"]]
    if level == "coarse":
        overview = overview.drop(columns="parent")
    return overview.sort_values(["size", "cluster"], ascending=[False, True]).reset_index(drop=True)


def _words(text: str) -> set[str]:
    return {singular(word) for word in words(text)}


def find_topic(index, topic, level: str = "coarse") -> int:
    """The number of the topic of ``level`` given by its number, its name, a part of its name, or
    words all of which its name uses (any order, singular or plural); several candidates are a
    UserError that lists them alone."""
    table = index.topic_table(level)
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


def topics_by_year(index, level: str = "coarse") -> pd.DataFrame:
    """Each topic's share of each year's papers, and its change from the first year to the last.

    One row per topic (cluster, name, then one column per year, then change, in share points);
    a corpus without years raises a UserError saying so.
    """
    number_column, _ = _topic_columns(level)
    papers = index.papers
    if "year" not in papers or papers["year"].notna().sum() == 0:
        raise UserError("this corpus has no years (no 'year' field in its files): topics over time need one")
    dated = papers[papers["year"].notna()]
    shares = pd.crosstab(dated[number_column], dated["year"].astype(int), normalize="columns")
    table = index.topic_table(level)
    shares = shares.reindex(table["cluster"], fill_value=0.0)
    years = list(shares.columns)
    result = pd.DataFrame({"cluster": table["cluster"].to_numpy(), "name": table["name"].to_numpy()})
    for year in years:
        result[year] = shares[year].to_numpy()
    result["change"] = result[years[-1]] - result[years[0]]
    return result.sort_values("change", ascending=False).reset_index(drop=True)


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
    _, found = index.nearest_others(rows, min(neighbours, len(index) - 1))
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
