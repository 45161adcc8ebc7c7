"""Seed topics: how many papers a seed takes, and how many of them use its words.

For each seed phrase and a pattern of the words that mark its papers (a paper about federated
learning says "federated"), papers are assigned to seeds as ``paperscope build --topics-from``
does (:func:`paperscope.index.topics.seeds.seed_of`). Precision: the share of taken papers whose
title or abstract matches their seed's pattern; recall: the share of papers matching any pattern
that are taken by the seed they match. Compared: the former rule (one cosine for every seed, its
closest seed, no words) at several thresholds, and today's (a paper needs its seed's words and a
similarity ``spread`` standard deviations above that seed's mean) at several spreads; per seed,
for the default, how many papers it took, how sure (median cosine and spread) and its precision
and recall. Chooses ``paperscope.settings.SEED_SPREAD``.

    .venv/bin/python -m benchmarks.seed_topics --index IJCAI_INDEX
"""

from __future__ import annotations

import re

import numpy as np

from benchmarks.common import parser, report
from paperscope import PaperIndex
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.seeds import seed_of
from paperscope.settings import SEED_SIMILARITY, SEED_SPREAD, SeedTopic, TopicSeeds

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
THRESHOLDS = (0.35, 0.4, 0.45, 0.5, 0.55)
SPREADS = (1.5, 2.0, 2.25, 2.5, 3.0)


def measured(seed: np.ndarray, uses: np.ndarray) -> tuple[float, float]:
    """Precision and recall of ``seed`` (each paper's seed, -1: none) against ``uses`` (paper x seed)."""
    taken = seed >= 0
    right = taken & uses[np.arange(len(seed)), np.maximum(seed, 0)]
    precision = float(right[taken].mean()) if taken.any() else 0.0
    return precision, float(right.sum() / max(uses.any(axis=1).sum(), 1))


def per_seed(choice, uses: np.ndarray) -> list[dict]:
    """For each seed: papers taken, median cosine and spread of them, precision, recall."""
    rows = []
    for number, name in enumerate(PROBE):
        taken = choice.seed == number
        right = taken & uses[:, number]
        rows.append({"seed": name, "taken": int(taken.sum()),
                     "similarity_median": float(np.median(choice.similarity[taken])) if taken.any() else 0.0,
                     "spread_median": float(np.median(choice.spread[taken])) if taken.any() else 0.0,
                     "precision": float(right.sum() / taken.sum()) if taken.any() else 0.0,
                     "recall": float(right.sum() / max(uses[:, number].sum(), 1))})  # fmt: skip
    return rows


def main() -> None:
    """Measure each rule and print the tables."""
    arguments = parser(__doc__, "seed_topics")
    arguments.add_argument("--index", required=True, help="an index of a labelled corpus (e.g. IJCAI)")
    args = arguments.parse_args()
    index = PaperIndex.load(args.index)
    papers = index.papers
    texts = [f"{title}. {abstract}" for title, abstract in zip(papers["title"], papers["abstract"], strict=True)]
    uses = np.array([[bool(re.search(pattern, text.lower())) for pattern in PROBE.values()] for text in texts])
    finder, topics = TermFinder(texts), tuple(SeedTopic(name) for name in PROBE)
    vectors = np.asarray(index.vectors, dtype=np.float32)
    rows, results = [], {"papers": len(texts), "seeds": PROBE, "rules": [], "per_seed": []}
    for rule, values in (("one cosine, no words", THRESHOLDS), ("spread and words", SPREADS)):
        for value in values:
            seeds = TopicSeeds(topics, value, spread=0.0) if rule.startswith("one") else (
                TopicSeeds(topics, SEED_SIMILARITY, spread=value))  # fmt: skip
            choice = seed_of(vectors, seeds, index.embed_texts, None if rule.startswith("one") else finder)
            if rule.startswith("one"):  # the former rule: the closest seed by cosine
                similarities = vectors @ index.embed_texts(list(PROBE)).T
                best = similarities.max(axis=1)
                choice = choice._replace(seed=np.where(best >= value, similarities.argmax(axis=1), -1))
            precision, recall = measured(choice.seed, uses)
            taken = int((choice.seed >= 0).sum())
            results["rules"].append({"rule": rule, "value": value, "taken": taken,
                                     "precision": precision, "recall": recall})  # fmt: skip
            rows.append([rule, value, f"{taken} ({taken / len(texts):.1%})", f"{precision:.3f}", f"{recall:.3f}"])
            if rule.startswith("spread") and value == SEED_SPREAD:
                results["per_seed"] = per_seed(choice, uses)
    report(["rule", "cosine / spread", "papers taken", "precision", "recall"], rows, results, args.json)
    print()
    report(["seed", "taken", "median cosine", "median spread", "precision", "recall"],
           [[r["seed"], r["taken"], f"{r['similarity_median']:.3f}", f"{r['spread_median']:.2f}",
             f"{r['precision']:.3f}", f"{r['recall']:.3f}"] for r in results["per_seed"]],
           results, args.json)  # fmt: skip


if __name__ == "__main__":
    main()
