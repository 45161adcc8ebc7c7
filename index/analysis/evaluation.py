"""Measures of how well an index serves its users, shared by the benchmarks, the tests and notebooks.

- Retrieval quality on a labelled corpus: leave-one-out agreement of each paper's nearest
  papers with its own label (``evaluate``; ``labels_by_id`` reads the labels).
- Near-duplicates: the edited versions of an abstract that a second upload or a camera-ready
  revision would produce (``edited_versions``), to place the duplicate threshold.
"""

from __future__ import annotations

import json
import re

import numpy as np

from paperscope.embed.readers.admission import text_id
from paperscope.embed.text import normalise_text, split_sentences
from paperscope.settings import QuerySettings


def label_agreement(labels: list[str], neighbour_labels: list[list[str]], k: int = 10) -> dict[str, float]:
    """P@1, P@k and per-label-averaged P@k of neighbour lists against each paper's own label."""
    at_1 = [float(neighbours[0] == label) for label, neighbours in zip(labels, neighbour_labels, strict=True)]
    at_k = [
        np.mean([n == label for n in neighbours[:k]])
        for label, neighbours in zip(labels, neighbour_labels, strict=True)
    ]
    by_label: dict[str, list[float]] = {}
    for label, precision in zip(labels, at_k, strict=True):
        by_label.setdefault(label, []).append(float(precision))
    return {
        "P@1": float(np.mean(at_1)),
        f"P@{k}": float(np.mean(at_k)),
        f"macro P@{k}": float(np.mean([np.mean(values) for values in by_label.values()])),
    }


def labels_by_id(corpus: str) -> dict[str, str]:
    """Each record's label under the id the index gives it (its own id, else the abstract's hash)."""
    labels = {}
    with open(corpus, encoding="utf-8") as handle:
        for line in filter(str.strip, handle):
            record = json.loads(line)
            labels[str(record.get("id") or text_id(normalise_text(record["abstract"])))] = record["label"]
    return labels


def evaluate(index, mode: str, hybrid_weight: float | None = None, k: int = 10) -> dict[str, float]:
    """Leave-one-out label agreement of ``index.similar`` in ``mode``."""
    labels = index.papers["label"].tolist()
    label_of = dict(zip(index.papers["id"], labels, strict=True))
    neighbours = [
        [
            label_of[i]
            for i in index.similar(paper_id, k=k, mode=mode, settings=QuerySettings(hybrid_weight=hybrid_weight)).ids
        ]
        for paper_id in index.papers["id"]
    ]
    return label_agreement(labels, neighbours, k)


REWORDING = {
    "we propose": "this paper presents",
    "We propose": "This paper presents",
    "novel": "new",
    "demonstrate": "show",
    "significantly": "substantially",
    "method": "approach",
    "results": "findings",
    "However": "Yet",
    "existing": "current",
    "achieves": "reaches",
}


def edited_versions(abstract: str) -> dict[str, str]:
    """Versions of an abstract a second upload or a camera-ready revision would produce."""
    sentences = split_sentences(abstract)
    versions = {}
    if len(sentences) >= 3:
        versions["sentence dropped"] = " ".join(sentences[:-2] + sentences[-1:])
        versions["sentences swapped"] = " ".join([sentences[0], sentences[2], sentences[1], *sentences[3:]])
    reworded = abstract
    for old, new in REWORDING.items():
        reworded = reworded.replace(old, new)
    versions["reworded"] = "In this work, " + reworded[0].lower() + reworded[1:] if reworded == abstract else reworded
    versions["numbers changed"] = re.sub(r"\d", lambda m: str((int(m.group()) + 3) % 10), abstract)
    versions["every 15th word dropped"] = " ".join(w for i, w in enumerate(abstract.split()) if i % 15 != 7)
    return versions
