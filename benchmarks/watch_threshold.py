"""Where to put a saved search's default threshold: the similarity above which a match is more
likely than not in the query's own area, on a corpus with labelled areas.

    .venv/bin/python -m benchmarks.watch_threshold --index DIR [--column label]

Two kinds of saved search, as ``paperscope watch`` matches them: by paper ids (each paper of the
index as a one-paper watch: the cosine of the other papers' vectors with its own) and by text
(each paper's title as the query, embedded by the index's query encoder, the paper itself left
out). For every (query, other paper) pair: its cosine and whether the two share the label. Per
0.02-wide band of cosine: the share of pairs sharing the label (a match there is in the area
with that chance), and above each cut: the share of every match above it and the matches per
1,000 papers a query gets. The threshold chosen: the lowest band edge from which every band has
a majority sharing the label. Prints a Markdown table and writes benchmarks/watch_threshold.json.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report

BAND = 0.02


def bands(similarity: np.ndarray, same: np.ndarray) -> dict:
    """Per band of cosine (its lower edge): pairs, the share sharing the label, and above the
    edge: the share of all matches sharing it, matches per query per 1,000 papers."""
    queries, papers = similarity.shape
    edges = np.round(np.arange(0.2, 0.9, BAND), 2)
    table = {}
    for edge in edges:
        inside = (similarity >= edge) & (similarity < edge + BAND)
        above = similarity >= edge
        table[float(edge)] = {
            "pairs": int(inside.sum()),
            "band_share": float(same[inside].mean()) if inside.any() else None,
            "above_share": float(same[above].mean()) if above.any() else None,
            "above_per_1000": float(above.sum() / queries / papers * 1000),
        }
    return table


def chosen(table: dict) -> float | None:
    """The lowest edge from which every band with pairs has a majority sharing the label."""
    edges = sorted(table)
    for edge in edges:
        later = [table[e]["band_share"] for e in edges if e >= edge and table[e]["pairs"]]
        if later and all(share > 0.5 for share in later):
            return edge
    return None


def main() -> None:
    """Measure and print the table."""
    parser = common_parser(__doc__, "watch_threshold")
    parser.add_argument("--index", required=True, help="an index of a corpus with labelled areas (IJCAI)")
    parser.add_argument("--column", default="label", help="the column naming each paper's area (default: label)")
    args = parser.parse_args()
    from paperscope import PaperIndex

    index = PaperIndex.load(args.index)
    labels = np.asarray(index.papers[args.column].astype(str))
    same = labels[:, None] == labels[None, :]
    vectors = np.asarray(index.vectors, np.float32)
    others = ~np.eye(len(labels), dtype=bool)  # a paper is no match of its own
    kinds = {
        "ids": vectors @ vectors.T,
        "text": index.embed_texts(list(index.papers["title"])) @ vectors.T,
    }
    results = {}
    for kind, similarity in kinds.items():
        table = bands(np.where(others, similarity, -1.0), same)
        results[kind] = {"threshold": chosen(table), "bands": table}
    rows = []
    for edge in sorted(results["ids"]["bands"]):
        cells = [f"{edge:.2f}"]
        for kind in kinds:
            band = results[kind]["bands"][edge]
            share = "" if band["band_share"] is None else f"{band['band_share']:.2f} ({band['pairs']:,})"
            above = "" if band["above_share"] is None else f"{band['above_share']:.2f}, {band['above_per_1000']:.1f}"
            cells += [share, above]
        rows.append(cells)
    report(
        ["cosine", "ids: band share (pairs)", "ids: above: share, per 1,000", "text: band share (pairs)",
         "text: above: share, per 1,000"],
        rows,
        {"index": args.index, "papers": len(labels), "column": args.column, **results},
        args.json,
    )  # fmt: skip
    for kind in kinds:
        print(f"{kind}: threshold {results[kind]['threshold']}")


if __name__ == "__main__":
    main()
