"""How well the topics agree with a corpus's labels, how many papers they leave grey, how well
their names cover their papers, and how other clusterings of the same vectors compare.

    .venv/bin/pip install -e ".[bench]"  # evoc and fast-hdbscan, the clusterings compared
    .venv/bin/python -m benchmarks.topic_quality CORPUS.jsonl [--index DIR [--remap]] [--before DIR] \
        [--no-clusterings] [--json benchmarks/topic_quality.json]

CORPUS.jsonl holds records with a label (e.g. ../shared/evaldata/ijcai2021_2024_area.jsonl; read it
from there). Builds an index of it (or reads --index); --before reads an index of the same corpus
built by an earlier paperscope, for a side-by-side table; --remap measures, as "after", the map
this checkout makes from --index's stored vectors and texts (the naming stages again, in a minute).
Reports:
1. per index and level: topics, adjusted mutual information (AMI) against the labels over all
   papers (grey papers as one group of their own: the map as drawn) and over the papers in a
   topic, purity, and the share of papers in no topic;
2. the clusterings of the issue on the index's vectors: today's 5-D UMAP + HDBSCAN, EVoC (every
   layer) and fast-hdbscan's PLSCAN (every layer, on the embeddings and on the 5-D UMAP), with time;
3. per index, every coarse topic and every fine topic of at least 30 papers: its name's coverage
   (share of its papers where a term of the name is found) and its terms' smallest lift.
Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from paperscope.index.analysis.evaluation import labels_by_id

NAMED_PAPERS = 30  # fine topics this big are held to the coverage goal


def purity(predicted: np.ndarray, truth: np.ndarray) -> float:
    """Share of papers whose topic's most common label is their own."""
    frame = pd.DataFrame({"topic": predicted, "label": truth})
    return float(frame.groupby("topic")["label"].agg(lambda labels: labels.value_counts().iloc[0]).sum() / len(frame))


def agreement(labels: np.ndarray, truth: np.ndarray) -> dict:
    """Topics, AMI over all papers and over those in a topic, purity, share in no topic."""
    from sklearn.metrics import adjusted_mutual_info_score

    inside = labels >= 0
    return {
        "topics": len(set(labels[inside].tolist())),
        "ami_all": float(adjusted_mutual_info_score(truth, labels)),
        "ami_in_topics": float(adjusted_mutual_info_score(truth[inside], labels[inside])),
        "purity": purity(labels[inside], truth[inside]),
        "unclustered": float(1 - inside.mean()),
    }


def clusterings(vectors: np.ndarray, truth: np.ndarray) -> list[dict]:
    """Today's clustering and the two candidates of the issue, every layer, with time."""
    import evoc
    import fast_hdbscan

    from paperscope.index.topics.clusters import cluster
    from paperscope.index.topics.layout import knn_graph, umap_fit
    from paperscope.settings import TopicSettings

    found = []
    started = time.perf_counter()
    settings = TopicSettings()
    knn = knn_graph(vectors, settings.layout.knn)
    umap_5d = umap_fit(vectors, knn, settings.clusters.space_dims, settings.clusters.space_min_dist, settings.layout)
    umap_time = time.perf_counter() - started
    labels = cluster(vectors, knn, settings).labels
    found.append({"method": "5-D UMAP + HDBSCAN (leaf)", "layer": 0, "seconds": time.perf_counter() - started}
                 | agreement(labels, truth))  # fmt: skip
    evoc.EVoC(random_state=42).fit_predict(vectors[:200])  # numba compiles once, outside the timing
    for space, data, extra in (("embeddings", vectors, 0.0), ("5-D UMAP", umap_5d, umap_time)):
        started = time.perf_counter()
        model = fast_hdbscan.PLSCAN(metric="cosine" if space == "embeddings" else "euclidean").fit(data)
        seconds = time.perf_counter() - started + extra
        for layer, labels in enumerate(model.cluster_layers_):
            measured = agreement(labels, truth)
            found.append({"method": f"PLSCAN on {space}", "layer": layer, "seconds": seconds} | measured)
    started = time.perf_counter()
    model = evoc.EVoC(random_state=42)
    model.fit_predict(vectors)
    seconds = time.perf_counter() - started
    for layer, labels in enumerate(model.cluster_layers_):
        found.append({"method": "EVoC", "layer": layer, "seconds": seconds} | agreement(labels, truth))
    return found


def name_coverage(papers: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> list[dict]:
    """Coverage and smallest lift of every coarse topic's name and every fine one of >= 30 papers
    (``tables``: {level: the topics table of that level})."""
    from paperscope.index.topics.coverage import TermFinder

    finder = TermFinder((papers["title"].fillna("") + ". " + papers["abstract"]).tolist())
    rows = []
    for level, column in (("coarse", "coarse_cluster"), ("fine", "cluster")):
        for topic in tables[level].itertuples():
            members = np.flatnonzero(papers[column].to_numpy() == topic.cluster)
            if level == "fine" and len(members) < NAMED_PAPERS:
                continue
            terms = topic.name.split(", ")
            rows.append({"level": level, "papers": len(members), "name": topic.name,
                         "coverage": finder.coverage(members, terms),
                         "min_lift": min(finder.lift(members, term) for term in terms)})  # fmt: skip
    return rows


def topics_of(index, remap: bool) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The papers (with their topic columns) and each level's topics table: the index's own, or with
    ``remap`` the map this checkout makes from the index's stored vectors and texts (nothing but
    candidate names embedded), to compare naming code on one index."""
    if not remap:
        return index.papers, {level: index.topics.table(level) for level in ("coarse", "fine")}
    from paperscope.embed.text import embedding_texts
    from paperscope.index.topics.topic_map import topic_map

    papers, texts = index.papers.copy(), embedding_texts(index.papers)
    vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
    per_paper, topics, _ = topic_map(vectors, lambda rows: [texts[i] for i in rows], papers["id"].tolist(),
                                     index.embed_texts)  # fmt: skip
    for column in ("cluster", "cluster_name", "coarse_cluster", "coarse_name"):
        papers[column] = per_paper[column].to_numpy()
    return papers, {level: topics[topics["level"] == level] for level in ("coarse", "fine")}


def main() -> None:
    """Build or read the indexes, measure and print the tables."""
    parser = common_parser(__doc__, "topic_quality")
    parser.add_argument("corpus")
    parser.add_argument("--index", help="an index of the corpus already built (default: build one)")
    parser.add_argument("--before", help="an index of the same corpus built by an earlier paperscope")
    parser.add_argument("--remap", action="store_true", help="after: the map this checkout makes of --index's vectors")
    parser.add_argument("--no-clusterings", action="store_true", help="skip the other clusterings (EVoC, PLSCAN)")
    args = parser.parse_args()
    from paperscope import PaperIndex, build_index

    folder = Path(args.index or tempfile.mkdtemp(prefix="paperscope-topics-")) / ("" if args.index else "index")
    if not args.index:
        build_index([args.corpus], folder)
    indexes = {"after": PaperIndex.load(folder)} | ({"before": PaperIndex.load(args.before)} if args.before else {})
    label_of = labels_by_id(args.corpus)
    results = {"papers": len(indexes["after"]), "labels": len(set(label_of.values())), "levels": [], "names": []}
    maps = {version: topics_of(index, args.remap and version == "after") for version, index in indexes.items()}
    rows = []
    for version, (papers, _) in maps.items():
        truth = papers["id"].map(label_of).to_numpy()
        for level, column in (("fine", "cluster"), ("coarse", "coarse_cluster")):
            measured = {"index": version, "level": level} | agreement(papers[column].to_numpy(), truth)
            results["levels"].append(measured)
            rows.append([version, level, measured["topics"], f"{measured['ami_all']:.3f}",
                         f"{measured['ami_in_topics']:.3f}", f"{measured['purity']:.3f}",
                         f"{measured['unclustered']:.1%}"])  # fmt: skip
    report(["index", "level", "topics", "AMI (all papers)", "AMI (in a topic)", "purity", "in no topic"],
           rows, results, args.json)  # fmt: skip

    after = indexes["after"]
    results["clusterings"] = [] if args.no_clusterings else clusterings(
        np.ascontiguousarray(after.vectors, dtype=np.float32), after.papers["id"].map(label_of).to_numpy()
    )  # fmt: skip
    print()
    report(["clustering", "layer", "topics", "AMI (all)", "AMI (in a topic)", "in no topic", "seconds"],
           [[c["method"], c["layer"], c["topics"], f"{c['ami_all']:.3f}", f"{c['ami_in_topics']:.3f}",
             f"{c['unclustered']:.1%}", f"{c['seconds']:.1f}"] for c in results["clusterings"]],
           results, args.json)  # fmt: skip

    for version, (papers, tables) in maps.items():
        named = [{"index": version} | row for row in name_coverage(papers, tables)]
        results["names"].extend(named)
        print()
        report([f"{version}: level", "papers", "coverage", "min lift", "name"],
               [[r["level"], r["papers"], f"{r['coverage']:.0%}", f"{r['min_lift']:.1f}", r["name"]] for r in named],
               results, args.json)  # fmt: skip


if __name__ == "__main__":
    main()
