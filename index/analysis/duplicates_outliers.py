"""Corpus-level analysis over a loaded index: near-duplicate pairs and outliers.

Two papers are near-duplicates from a cosine similarity of ``limits.DUPLICATE_THRESHOLD``: an
edited version of an abstract scores above it, two different papers below (measured:
docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paperscope.errors import UserError
from paperscope.limits import DUPLICATE_THRESHOLD


def near_duplicates(index, threshold: float = DUPLICATE_THRESHOLD, neighbours: int = 10) -> pd.DataFrame:
    """Pairs of papers whose cosine similarity is at least ``threshold``, most similar first.

    Columns: id_a, title_a, id_b, title_b, score. Each pair appears once.
    """
    if not 0 < threshold <= 1:
        raise UserError(f"threshold must be in (0, 1], got {threshold}")
    scores, rows = index.neighbours(np.arange(len(index)), min(neighbours, len(index) - 1))
    pairs = {}
    for row, (others, similarities) in enumerate(zip(rows, scores, strict=True)):
        for other, score in zip(others, similarities, strict=True):
            if other >= 0 and score >= threshold:
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
    scores, rows = index.neighbours(np.arange(len(index)), 1)
    nearest, nearest_score = rows[:, 0], scores[:, 0]
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
