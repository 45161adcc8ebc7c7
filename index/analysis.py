"""Corpus-level analysis over a loaded index: near-duplicate pairs, outliers, and topics (their
overview, their shares over the years, and the papers between two topics).

Near-duplicate threshold (``DUPLICATE_THRESHOLD``), measured with
``benchmarks/duplicates_threshold.py``: edited versions of the 38 sample abstracts (sentences
swapped, wording changed, numbers changed, every 15th word dropped) score at least 0.931 against
their original, a version with one sentence dropped at least 0.901. Different papers score at
most 0.680 in the sample and 0.902 in the 2,690-abstract IJCAI corpus (two papers on chore
allocation). 0.92 finds every version but a few with a sentence dropped, and no different pair.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paperscope.errors import UserError
from paperscope.options import DUPLICATE_THRESHOLD, LEVELS, check_choice


def near_duplicates(index, threshold: float = DUPLICATE_THRESHOLD, neighbours: int = 10) -> pd.DataFrame:
    """Pairs of papers whose cosine similarity is at least ``threshold``, most similar first.

    Columns: id_a, title_a, id_b, title_b, score. Each pair appears once.
    """
    if not 0 < threshold <= 1:
        raise UserError(f"threshold must be in (0, 1], got {threshold}")
    vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
    scores, rows = index.faiss_index.search(vectors, min(neighbours + 1, len(index)))
    pairs = {}
    for row in range(len(vectors)):
        for other, score in zip(rows[row], scores[row], strict=True):
            if other >= 0 and other != row and score >= threshold:
                pairs[(min(row, other), max(row, other))] = float(score)
    ids, titles = index.papers["id"].to_numpy(), index.papers["title"].to_numpy()
    records = [
        {"id_a": ids[a], "title_a": titles[a], "id_b": ids[b], "title_b": titles[b], "score": score}
        for (a, b), score in sorted(pairs.items(), key=lambda item: -item[1])
    ]
    return pd.DataFrame(records, columns=["id_a", "title_a", "id_b", "title_b", "score"])


def outliers(index, count: int = 5) -> pd.DataFrame:
    """The ``count`` papers least similar to everything else (lowest similarity to their nearest paper).

    Columns: id, title, cluster_name, nearest_id, nearest_score.
    """
    vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
    scores, rows = index.faiss_index.search(vectors, min(2, len(index)))
    own = np.arange(len(vectors))
    nearest = np.where(rows[:, 0] == own, rows[:, -1], rows[:, 0])
    nearest_score = np.where(rows[:, 0] == own, scores[:, -1], scores[:, 0])
    order = np.argsort(nearest_score)[:count]
    papers = index.papers
    return pd.DataFrame(
        {
            "id": papers["id"].to_numpy()[order],
            "title": papers["title"].to_numpy()[order],
            "cluster_name": papers["cluster_name"].to_numpy()[order],
            "nearest_id": papers["id"].to_numpy()[nearest[order]],
            "nearest_score": nearest_score[order],
        }
    )


ALL_CANDIDATES = 100_000  # papers; a larger corpus looks for bridges among the two topics' papers only


def _topic_columns(level: str) -> tuple[str, str]:
    """The papers' columns holding a topic of ``level``: its number and its name."""
    check_choice(level, LEVELS, "topic level")
    return ("coarse_cluster", "coarse_name") if level == "coarse" else ("cluster", "cluster_name")


def _topic_table(index, level: str) -> pd.DataFrame:
    """The index's topics of ``level``."""
    _topic_columns(level)
    return index.coarse_clusters if level == "coarse" else index.clusters


def topic_overview(index, level: str = "coarse") -> pd.DataFrame:
    """Every topic of ``level`` ("coarse" or "fine"), largest first.

    Columns: cluster, name, size, share (of the corpus), map_trust, central_ids and central_titles
    (its three most central papers), terms, and for fine topics the coarse topic (parent) holding it.
    """
    table = _topic_table(index, level)
    title_of = dict(zip(index.papers["id"], index.papers["title"], strict=True))
    overview = table[["cluster", "name", "size", "map_trust", "central_ids", "terms", "parent"]].copy()
    overview.insert(3, "share", overview["size"] / len(index))
    overview["central_ids"] = [list(ids) for ids in overview["central_ids"]]
    overview["central_titles"] = [[title_of[i] for i in ids] for ids in overview["central_ids"]]
    overview["terms"] = [list(terms) for terms in overview["terms"]]
    if level == "coarse":
        overview = overview.drop(columns="parent")
    return overview.sort_values(["size", "cluster"], ascending=[False, True]).reset_index(drop=True)


def find_topic(index, topic, level: str = "coarse") -> int:
    """The number of the topic of ``level`` given by its number or by (part of) its name."""
    table = _topic_table(index, level)
    names = dict(zip(table["cluster"], table["name"], strict=True))
    text = str(topic).strip()
    if text.lstrip("-").isdigit() and int(text) in names:
        return int(text)
    exact = [number for number, name in names.items() if name.lower() == text.lower()]
    partial = [number for number, name in names.items() if text.lower() in name.lower()]
    if len(exact) == 1 or len(partial) == 1:
        return (exact or partial)[0]
    known = "; ".join(f"{number}: {name}" for number, name in sorted(names.items()))
    what = "matches several" if partial else "is not one of the"
    raise UserError(f"topic '{text}' {what} {level} topics ({known}); give its number or more of its name")


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
    table = _topic_table(index, level)
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
    vectors = np.ascontiguousarray(index.vectors[rows], dtype=np.float32)
    _, found = index.faiss_index.search(vectors, min(neighbours + 1, len(index)))
    found = np.where(found == rows[:, None], -1, found)[:, : neighbours + 1]  # not the paper itself
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
