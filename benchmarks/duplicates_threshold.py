"""Where to put the near-duplicate threshold: similarity of edited versions of an abstract to the
original against similarity of different papers.

    .venv/bin/python -m benchmarks.duplicates_threshold [--index DIR] [--other-index DIR]

Edits applied to each sample abstract (see ``edited_versions``): a sentence dropped, two sentences
swapped, the wording of the opening changed, numbers changed, words dropped. "Different papers":
the most similar pair of distinct papers in the index (and in --other-index, e.g. a larger corpus).
Prints a Markdown table and writes benchmarks/duplicates_threshold.json.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import ranker_of, report
from paperscope.index.analysis.evaluation import edited_versions


def max_distinct_pair(index) -> float:
    """Highest cosine similarity between two different papers of an index."""
    ranker = ranker_of(index)
    scores, rows = ranker.faiss_index.search(np.ascontiguousarray(index.vectors, dtype=np.float32), 2)
    own = np.arange(len(index))
    return float(np.where(rows[:, 0] == own, scores[:, 1], scores[:, 0]).max())


def main() -> None:
    """Measure and print the table."""
    parser = common_parser(__doc__, "duplicates_threshold")
    parser.add_argument("--index", help="index of the sample (default: the bundled sample's)")
    parser.add_argument("--other-index", help="a larger index for the different-papers side")
    args = parser.parse_args()
    from paperscope import PaperIndex, locations

    index = PaperIndex.load(args.index or locations.default_index_dir())
    by_edit: dict[str, list[float]] = {}
    for row, abstract in enumerate(index.papers["abstract"]):
        for edit, text in edited_versions(abstract).items():
            by_edit.setdefault(edit, []).append(float(index.embed_query(text) @ index.vectors[row]))
    different = {"sample": max_distinct_pair(index)}
    if args.other_index:
        different["other index"] = max_distinct_pair(PaperIndex.load(args.other_index))
    from paperscope.limits import DUPLICATE_THRESHOLD

    rows = [
        [
            f"edited: {edit}",
            f"{min(scores):.3f}",
            f"{np.median(scores):.3f}",
            f"{sum(score >= DUPLICATE_THRESHOLD for score in scores)} of {len(scores)}",
        ]
        for edit, scores in by_edit.items()
    ]
    rows += [
        [f"different papers, most similar pair ({name})", f"{score:.3f} (max)", "", ""]
        for name, score in different.items()
    ]
    report(
        ["pair", "min similarity", "median", f"found at {DUPLICATE_THRESHOLD}"],
        rows,
        {"edited_min": {e: min(s) for e, s in by_edit.items()}, "different_max": different},
        args.json,
    )


if __name__ == "__main__":
    main()
