"""How well the topics agree with a corpus's labels, at both levels, and how the merge is chosen.

    .venv/bin/python -m benchmarks.topic_quality CORPUS.jsonl [--index DIR] [--json benchmarks/topic_quality.json]

CORPUS.jsonl holds records with a label (e.g. ../shared/evaldata/ijcai2021_2024_area.jsonl; read it
from there). Builds an index of it (or reads --index), then reports, for the fine clusters and the
coarse topics, adjusted mutual information (AMI) and purity against the labels over the papers in
a topic, the number of topics and the share of papers in none; then AMI of the other ways to merge
the same fine clusters (average or Ward linkage, at every number of topics the rule may choose).
Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from paperscope.index.analysis.evaluation import labels_by_id


def purity(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Share of papers whose topic's most common label is their own."""
    frame = pd.DataFrame({"topic": predicted, "label": truth})
    return float(frame.groupby("topic")["label"].agg(lambda labels: labels.value_counts().iloc[0]).sum() / len(frame))


def main() -> None:
    """Build or read the index, measure and print the tables."""
    parser = common_parser(__doc__, "topic_quality")
    parser.add_argument("corpus")
    parser.add_argument("--index", help="an index of the corpus already built (default: build one)")
    args = parser.parse_args()
    from scipy.cluster.hierarchy import fcluster, linkage
    from sklearn.metrics import adjusted_mutual_info_score

    from paperscope import PaperIndex, build_index

    folder = Path(args.index or tempfile.mkdtemp(prefix="paperscope-topics-")) / ("" if args.index else "index")
    if not args.index:
        build_index([args.corpus], folder)
    index = PaperIndex.load(folder)
    truth = index.papers["id"].map(labels_by_id(args.corpus)).to_numpy()
    results = {"papers": len(index), "labels": len(set(truth)), "levels": {}, "merges": []}
    rows = []
    for level, column in (("fine", "cluster"), ("coarse", "coarse_cluster")):
        topic = index.papers[column].to_numpy()
        inside = topic >= 0
        measured = {
            "topics": len(set(topic[inside])),
            "ami": float(adjusted_mutual_info_score(truth[inside], topic[inside])),
            "purity": purity(topic[inside], truth[inside]),
            "unclustered": float(1 - inside.mean()),
        }
        results["levels"][level] = measured
        rows.append([level, measured["topics"], f"{measured['ami']:.3f}", f"{measured['purity']:.3f}",
                     f"{measured['unclustered']:.1%}"])  # fmt: skip
    report(["level", "topics", "AMI", "purity", "in no topic"], rows, results, args.json)

    fine = index.papers["cluster"].to_numpy()
    inside = fine >= 0
    clusters = sorted(set(fine[inside]))
    centroids = np.stack([np.asarray(index.vectors[fine == c], dtype=np.float64).mean(axis=0) for c in clusters])
    unit = centroids / np.linalg.norm(centroids, axis=1, keepdims=True)
    chosen = len(index.topic_table("coarse"))
    merge_rows = []
    for method, merges in (("average (cosine)", linkage(centroids, "average", metric="cosine")),
                           ("ward (unit vectors)", linkage(unit, "ward"))):  # fmt: skip
        for count in range(max(2, round(np.sqrt(len(clusters)))), min(12, round(np.sqrt(2 * len(clusters)))) + 1):
            group = dict(zip(clusters, fcluster(merges, t=count, criterion="maxclust"), strict=True))
            merged = np.array([group[c] for c in fine[inside]])
            ami = float(adjusted_mutual_info_score(truth[inside], merged))
            results["merges"].append(
                {"method": method, "topics": count, "ami": ami, "purity": purity(merged, truth[inside])}
            )
            mark = " (built)" if method.startswith("ward") and count == chosen else ""
            merge_rows.append([method + mark, count, f"{ami:.3f}", f"{purity(merged, truth[inside]):.3f}"])
    print()
    report(["merge of the fine clusters", "topics", "AMI", "purity"], merge_rows, results, args.json)


if __name__ == "__main__":
    main()
