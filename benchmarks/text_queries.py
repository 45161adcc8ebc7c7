"""Text queries on a labelled corpus: titles and author keywords as queries, and judged topic queries.

    .venv/bin/python -m benchmarks.text_queries --index DIR [--corpus IJCAI.jsonl] [--sample 1000]

DIR is an index of the corpus (``paperscope build CORPUS -o DIR``). For each ranking variant:
- **titles**: each sampled paper's title as the query: MRR@10 of the paper itself, the share found
  first, and same-area P@10 of the other papers returned (the paper itself left out);
- **keywords**: each sampled paper's author keywords (IJCAI: "Machine Learning: Online Learning",
  joined without the area prefix) as the query: same-area P@10, the paper left out;
- **judged**: short hand-written topic queries; a paper is relevant when its title names the topic
  (the patterns in ``JUDGED``, whose matches were read through by hand): P@10 and MRR of the
  first relevant paper, averaged over the queries.
Also each variant's median query time (query embedding included). Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import json
import re
import statistics
import time

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA
from paperscope.index import paper_index

JUDGED = {
    "multi-agent path finding": r"path.?finding|\bMAPF\b",
    "federated learning": r"federated",
    "explaining the predictions of neural networks": r"interpretab|explainab|explanation",
    "knowledge graph embedding": r"knowledge graph",
    "fairness in machine learning": r"\bfair",
    "voting rules and social choice": r"\bvoting\b|social choice",
    "time series forecasting": r"time series",
    "abstract argumentation semantics": r"argumentation",
    "recommender systems": r"recommend",
    "adversarial attacks on neural networks": r"adversarial",
}


def variants() -> dict[str, dict]:
    """The rankings compared: keyword, dense, hybrid at several weights, with and without feedback."""
    found = {"keyword": {"mode": "keyword", "feedback": False}, "dense": {"mode": "dense", "feedback": False}}
    for weight in (0.5, 0.6, 0.7, 0.8):
        found[f"hybrid {weight}"] = {"mode": "hybrid", "hybrid_weight": weight, "feedback": False}
        found[f"hybrid {weight} + feedback"] = {"mode": "hybrid", "hybrid_weight": weight, "feedback": True}
    found["dense + feedback"] = {"mode": "dense", "feedback": True}
    return found


def measure(index, records: dict, sample: list[str], settings: dict) -> dict:
    """Every figure of one ranking variant."""
    times = []

    def ranked(query: str, k: int = 11) -> list[str]:
        start = time.perf_counter()
        ids = index.search(query, k=k, **settings).to_pandas()["id"].tolist()
        times.append(time.perf_counter() - start)
        return ids

    reciprocal, first, title_p10, keyword_p10 = [], [], [], []
    for paper_id in sample:
        record = records[paper_id]
        ids = ranked(record["title"])
        rank = ids.index(paper_id) + 1 if paper_id in ids[:10] else None
        reciprocal.append(1 / rank if rank else 0.0)
        first.append(rank == 1)
        others = [i for i in ids if i != paper_id][:10]
        title_p10.append(np.mean([records[i]["label"] == record["label"] for i in others]))
        if record.get("keywords"):
            query = "; ".join(keyword.split(": ", 1)[-1] for keyword in record["keywords"])
            others = [i for i in ranked(query) if i != paper_id][:10]
            keyword_p10.append(np.mean([records[i]["label"] == record["label"] for i in others]))
    judged_p10, judged_rr = [], []
    for query, pattern in JUDGED.items():
        ids = ranked(query, 10)
        relevant = [bool(re.search(pattern, records[i]["title"], re.I)) for i in ids]
        judged_p10.append(np.mean(relevant))
        judged_rr.append(1 / (relevant.index(True) + 1) if any(relevant) else 0.0)
    return {
        "title MRR@10": float(np.mean(reciprocal)),
        "title self first": float(np.mean(first)),
        "title P@10": float(np.mean(title_p10)),
        "keywords P@10": float(np.mean(keyword_p10)) if keyword_p10 else None,
        "judged P@10": float(np.mean(judged_p10)),
        "judged MRR": float(np.mean(judged_rr)),
        "p50_ms": statistics.median(times) * 1000,
    }


def main() -> None:
    """Measure every variant and print the table."""
    parser = common_parser(__doc__, "text_queries")
    parser.add_argument("--index", required=True)
    parser.add_argument("--corpus", default=str(EVALDATA))
    parser.add_argument("--sample", type=int, default=1000)
    args = parser.parse_args()
    from paperscope import PaperIndex

    paper_index.QUERY_MEMORY = 100_000  # each title is embedded once, not once per variant
    index = PaperIndex.load(args.index)
    records = {}
    with open(args.corpus, encoding="utf-8") as handle:
        for line in filter(str.strip, handle):
            record = json.loads(line)
            records[record["id"]] = record
    ids = index.ids()
    sample = [ids[i] for i in np.random.default_rng(0).choice(len(ids), min(args.sample, len(ids)), replace=False)]
    results = {name: measure(index, records, sample, settings) for name, settings in variants().items()}
    names = ["title MRR@10", "title self first", "title P@10", "keywords P@10", "judged P@10", "judged MRR"]
    report(
        [f"{len(index)} papers, {len(sample)} title queries", *names, "p50"],
        [
            [
                name,
                *[f"{figures[n]:.3f}" if figures[n] is not None else "—" for n in names],
                f"{figures['p50_ms']:.1f} ms",
            ]
            for name, figures in results.items()
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
