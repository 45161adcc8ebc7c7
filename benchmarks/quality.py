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

import tempfile
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from paperscope.index.analysis.evaluation import evaluate, labels_by_id

HYBRID_WEIGHTS = (0.5, 0.7, 0.8, 0.9)


def main() -> None:
    """Build, evaluate every configuration and print the table."""
    parser = common_parser(__doc__, "quality")
    parser.add_argument("corpus")
    parser.add_argument("--work", help="folder for the indexes (default: a temporary folder)")
    args = parser.parse_args()
    from paperscope import BuildSettings, PaperIndex, build_index

    work = Path(args.work or tempfile.mkdtemp(prefix="paperscope-quality-"))
    rows = {}
    for strategy in ("mean", "truncate"):
        folder = work / f"index-{strategy}"
        build_index([args.corpus], folder, BuildSettings(long_text=strategy))
        index = PaperIndex.load(folder)
        index.papers["label"] = index.papers["id"].map(labels_by_id(args.corpus))
        if strategy == "mean":
            rows["keyword (TF-IDF 1-2-grams)"] = evaluate(index, "keyword")
        rows[f"dense, long text: {strategy}"] = evaluate(index, "dense")
        for weight in HYBRID_WEIGHTS:
            rows[f"hybrid {weight:.1f} dense + {1 - weight:.1f} keyword, long text: {strategy}"] = evaluate(
                index, "hybrid", weight
            )
    report(
        [f"{len(index)} papers", "P@1", "P@10", "macro P@10"],
        [[name, f"{s['P@1']:.3f}", f"{s['P@10']:.3f}", f"{s['macro P@10']:.3f}"] for name, s in rows.items()],
        rows,
        args.json,
    )


if __name__ == "__main__":
    main()
