"""Retrieval quality on a labelled corpus: leave-one-out kNN label agreement.

    .venv/bin/python -m benchmarks.quality CORPUS.jsonl [--work DIR] [--json benchmarks/quality.json]

CORPUS.jsonl holds records with title, abstract and label (e.g. ../shared/evaldata/ijcai2021_2024_area.jsonl;
read it from there, never copy it into the project). Each paper's 10 most similar papers, found with
``PaperIndex.similar`` exactly as the CLI does, are compared with its label: P@1, P@10 and P@10
averaged per label (macro). Configurations: TF-IDF keyword, dense (each long-text strategy) and
hybrid (several weights). Indexes are built with ``build_index`` into --work (reusing the
embedding cache). Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser, report

HYBRID_WEIGHTS = (0.5, 0.7, 0.8, 0.9)


def label_agreement(labels: list[str], neighbour_labels: list[list[str]], k: int = 10) -> dict[str, float]:
    """P@1, P@k and per-label-averaged P@k of neighbour lists against each paper's own label."""
    at_1 = [float(neighbours[0] == label) for label, neighbours in zip(labels, neighbour_labels)]
    at_k = [np.mean([n == label for n in neighbours[:k]]) for label, neighbours in zip(labels, neighbour_labels)]
    by_label: dict[str, list[float]] = {}
    for label, precision in zip(labels, at_k):
        by_label.setdefault(label, []).append(precision)
    return {"P@1": float(np.mean(at_1)), f"P@{k}": float(np.mean(at_k)),
            f"macro P@{k}": float(np.mean([np.mean(values) for values in by_label.values()]))}


def labels_by_id(corpus: str) -> dict[str, str]:
    """Each record's label under the id the index gives it (its own id, else the abstract's hash)."""
    from embed.corpus import text_id
    from embed.text import normalise_text

    labels = {}
    with open(corpus, encoding="utf-8") as handle:
        for line in filter(str.strip, handle):
            record = json.loads(line)
            labels[str(record.get("id") or text_id(normalise_text(record["abstract"])))] = record["label"]
    return labels


def evaluate(index, mode: str, hybrid_weight: float | None = None, k: int = 10) -> dict[str, float]:
    """Leave-one-out label agreement of ``index.similar`` in ``mode``."""
    labels = index.papers["label"].tolist()
    label_of = dict(zip(index.papers["id"], labels))
    neighbours = [[label_of[i] for i in index.similar(paper_id, k=k, mode=mode, hybrid_weight=hybrid_weight)["id"]]
                  for paper_id in index.papers["id"]]
    return label_agreement(labels, neighbours, k)


def main() -> None:
    """Build, evaluate every configuration and print the table."""
    parser = common_parser(__doc__, "quality")
    parser.add_argument("corpus")
    parser.add_argument("--work", help="folder for the indexes (default: a temporary folder)")
    args = parser.parse_args()
    from index import PaperIndex, build_index

    work = Path(args.work or tempfile.mkdtemp(prefix="paperscope-quality-"))
    rows = {}
    for strategy in ("mean", "truncate"):
        folder = work / f"index-{strategy}"
        build_index([args.corpus], folder, long_text=strategy, fields={"id": None, "title": None, "abstract": None})
        index = PaperIndex.load(folder)
        index.papers["label"] = index.papers["id"].map(labels_by_id(args.corpus))
        if strategy == "mean":
            rows["keyword (TF-IDF 1-2-grams)"] = evaluate(index, "keyword")
        rows[f"dense, long text: {strategy}"] = evaluate(index, "dense")
        for weight in HYBRID_WEIGHTS:
            rows[f"hybrid {weight:.1f} dense + {1 - weight:.1f} keyword, long text: {strategy}"] = \
                evaluate(index, "hybrid", weight)
    report([f"{len(index)} papers", "P@1", "P@10", "macro P@10"],
           [[name, f"{s['P@1']:.3f}", f"{s['P@10']:.3f}", f"{s['macro P@10']:.3f}"] for name, s in rows.items()],
           rows, args.json)


if __name__ == "__main__":
    main()
