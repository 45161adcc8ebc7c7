"""The topic tables and the papers' topic columns once the operations are applied."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.index.curation.labels import CENTRAL_SAMPLE, TopicState, centroid
from paperscope.index.curation.operations import COLUMNS
from paperscope.settings import UNCLUSTERED, UNCLUSTERED_NAME

CENTRAL_PAPERS = 3


def table(
    level: str, built: pd.DataFrame, state: TopicState, built_labels: np.ndarray, papers: pa.Table, vectors: np.ndarray
) -> pd.DataFrame:
    """The topic table of ``level`` after the operations: the built rows of topics whose papers did
    not change (renamed at most), rows computed anew for the others (size, central papers, label
    position, map trust), topics left without papers gone."""
    labels = state.labels[level]
    changed = labels != built_labels
    touched = set(np.unique(np.concatenate([labels[changed], built_labels[changed]])).tolist())
    original = {int(row["cluster"]): row for row in built.to_dict("records")}
    live = np.unique(labels[labels != UNCLUSTERED])
    rows = []
    for topic in live.tolist():
        if topic in original and topic not in touched:
            row = dict(original[topic])
        else:
            row = {"level": level, "cluster": topic} | _described(state.rows(level, topic), papers, vectors)
        row |= {"name": state.names[level][topic], "terms": state.terms[level][topic]}
        row["parent"] = state.parent[topic] if level == "fine" else UNCLUSTERED
        rows.append(row)
    return pd.DataFrame(rows, columns=built.columns).astype({"cluster": np.int64, "size": np.int64, "parent": np.int64})


def _described(rows: np.ndarray, papers: pa.Table, vectors: np.ndarray) -> dict:
    """A changed topic's size, three most central papers, label position (its paper nearest the
    median of its papers' positions) and mean map trust, as a build computes them."""
    sample = rows if len(rows) <= CENTRAL_SAMPLE else rows[np.linspace(0, len(rows) - 1, CENTRAL_SAMPLE).astype(int)]
    centre = centroid(vectors, sample)
    central = sample[np.argsort(-(np.asarray(vectors[sample], dtype=np.float32) @ centre), kind="stable")]
    coords = np.column_stack([papers.column(axis).take(pa.array(rows)).to_numpy() for axis in ("x", "y")])
    anchor = coords[np.argmin(((coords - np.median(coords, axis=0)) ** 2).sum(axis=1))]
    return {
        "size": len(rows),
        "central_ids": papers.column("id").take(pa.array(central[:CENTRAL_PAPERS])).to_pylist(),
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(np.mean(papers.column("map_trust").take(pa.array(rows)).to_numpy())),
    }


def with_topics(papers: pa.Table, state: TopicState, tables: dict[str, pd.DataFrame]) -> pa.Table:
    """``papers`` with its topic columns (number and name, both levels) as curated, chunked as before."""
    for level, (number_column, name_column) in COLUMNS.items():
        labels = state.labels[level]
        names = dict(zip(tables[level]["cluster"].tolist(), tables[level]["name"], strict=True))
        values, inverse = np.unique(labels, return_inverse=True)
        named = np.array([names.get(int(value), UNCLUSTERED_NAME) for value in values], dtype=object)[inverse]
        for column, data in ((number_column, labels), (name_column, named)):
            old = papers.column(column)
            whole = pa.array(data, type=old.type)
            starts = np.cumsum([0] + [len(chunk) for chunk in old.chunks])
            chunked = pa.chunked_array([whole.slice(s, e - s) for s, e in itertools.pairwise(starts)], old.type)
            papers = papers.set_column(papers.schema.get_field_index(column), column, chunked)
    return papers
