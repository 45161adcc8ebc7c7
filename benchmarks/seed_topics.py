"""Seed topics: how many papers a seed takes at each similarity threshold, and how many of them use its words.

For each seed phrase and a pattern of the words that mark its papers (a paper about federated
learning says "federated"), papers are assigned to their closest seed when the cosine similarity
reaches the threshold, as ``paperscope build --topics-from`` does. Precision: the share of taken
papers whose title or abstract matches their seed's pattern; recall: the share of papers matching
any pattern that are taken by the seed they match. Chooses the default
``paperscope.settings.SEED_SIMILARITY``.

    .venv/bin/python -m benchmarks.seed_topics --index IJCAI_INDEX
"""

from __future__ import annotations

import re

import numpy as np

from benchmarks.common import parser, report
from paperscope import PaperIndex

PROBE = {
    "spiking neural networks": r"spiking",
    "federated learning": r"federated",
    "multi-agent reinforcement learning": r"multi-agent reinforcement|marl",
    "knowledge graph completion": r"knowledge graph",
    "adversarial robustness": r"adversarial",
    "graph neural networks": r"graph neural|gnn",
    "fairness in machine learning": r"fair",
    "time series forecasting": r"time series|forecast",
    "recommender systems": r"recommend",
    "automated planning": r"planning",
    "causal inference": r"causal",
    "large language models": r"language model|llm",
}
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def main() -> None:
    arguments = parser(__doc__, "seed_topics")
    arguments.add_argument("--index", required=True, help="an index of a labelled corpus (e.g. IJCAI)")
    args = arguments.parse_args()
    index = PaperIndex.load(args.index)
    papers = index.papers
    texts = [f"{title} {abstract}".lower() for title, abstract in zip(papers["title"], papers["abstract"], strict=True)]
    uses = np.array([[bool(re.search(pattern, text)) for pattern in PROBE.values()] for text in texts])
    similarities = index.vectors @ index.embed_texts(list(PROBE)).T
    closest, best = similarities.argmax(axis=1), similarities.max(axis=1)
    right = uses[np.arange(len(texts)), closest]
    rows, results = [], {"papers": len(texts), "seeds": PROBE, "thresholds": []}
    for threshold in THRESHOLDS:
        taken = best >= threshold
        precision = float(right[taken].mean()) if taken.any() else 0.0
        recall = float((taken & right).sum() / uses.any(axis=1).sum())
        results["thresholds"].append(
            {"similarity": threshold, "taken": int(taken.sum()), "precision": precision, "recall": recall}
        )
        rows.append([threshold, f"{taken.sum()} ({taken.mean():.1%})", f"{precision:.3f}", f"{recall:.3f}"])
    report(["similarity", "papers taken", "precision", "recall"], rows, results, args.json)


if __name__ == "__main__":
    main()
