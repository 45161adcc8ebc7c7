"""The topic map, computed once at build time: every paper's position, topics at two levels
and map trust, and one row per topic.

The steps have rooms of their own: the layout and map trust (:mod:`.layout`), clusters and
coarse topics (:mod:`.clusters`), names (:mod:`.naming`); papers outside the layout sample are
placed as queries are (:mod:`paperscope.index.search.placement`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paperscope.index.search.placement import PLACE_K, TRUST_K, place_by_neighbours
from paperscope.index.topics.clusters import adopt_outliers, bisect, cluster, coarse_topics
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.layout import SEED, knn_graph, layout, map_trust
from paperscope.index.topics.naming import (
    UNCLUSTERED,
    hangs_together,
    nameable,
    topic_names,
    topic_pools,
    topic_terms,
)
from paperscope.index.topics.seeds import cluster_around_seeds
from paperscope.settings import UNCLUSTERED_NAME, TopicSeeds

SPLIT_PAPERS = 30  # a cluster this big that no name covers is split in two
SPLIT_ROUNDS = 3  # and its halves checked again, this many times at most
MAP_SAMPLE = 50_000  # larger corpora: layout and clusters fitted on a sample this big, the rest placed
CLUSTER_COLUMNS = ["level", "cluster", "name", "terms", "size", "central_ids", "x", "y", "map_trust", "parent"]


def _place_rest(
    vectors, rest: np.ndarray, sample_vectors: np.ndarray, coords: np.ndarray, labels: np.ndarray, chunk: int = 20_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`place_by_neighbours` for the papers outside the layout sample, a chunk at a time."""
    import faiss

    k = min(TRUST_K, len(sample_vectors))
    parts = []
    for start in range(0, len(rest), chunk):
        similarities, neighbours = faiss.knn(
            np.ascontiguousarray(vectors[rest[start : start + chunk]], dtype=np.float32),
            sample_vectors,
            k,
            metric=faiss.METRIC_INNER_PRODUCT,
        )
        parts.append(place_by_neighbours(similarities, neighbours, coords, labels))
    return tuple(np.concatenate(part) for part in zip(*parts, strict=True))


def _single_child_names(coarse_of: dict[int, int], names: dict) -> set[str]:
    """Names of coarse topics that hold one fine cluster: the fine cluster may share its name."""
    children = Counter(coarse_of.values())
    return {names["coarse"][group] for group, count in children.items() if count == 1}


def _split_unnamed(texts: list[str], finder: TermFinder, vectors: np.ndarray, labels: np.ndarray, kept=()):
    """Clusters of at least SPLIT_PAPERS papers that no honest name covers (:func:`nameable`) are
    grab-bags of neighbouring fields: each is split in two (:func:`bisect`), and the halves
    checked again (SPLIT_ROUNDS in all); the topics ``kept`` (seeds) are never split. Returns
    (labels, {label: candidate names}, how many were split)."""
    labels, split = labels.copy(), 0
    for _ in range(SPLIT_ROUNDS):
        pools = topic_pools(texts, labels, finder)
        unnamed = [
            label
            for label, pool in pools.items()
            if label not in kept
            and (labels == label).sum() >= SPLIT_PAPERS
            and not nameable(pool, np.flatnonzero(labels == label), finder)
        ]
        if not unnamed:
            break
        for label in unnamed:
            members = np.flatnonzero(labels == label)
            labels[members[bisect(vectors[members]) == 1]] = labels.max() + 1
        split += len(unnamed)
    else:
        pools = topic_pools(texts, labels, finder)
    return labels, pools, split


@dataclass
class _Laid:
    """Every paper on the map: the layout sample laid out and clustered, the rest placed."""

    vectors: np.ndarray
    ids: list[str]
    sample: np.ndarray  # rows laid out (all, up to MAP_SAMPLE papers)
    sample_vectors: np.ndarray
    coords: np.ndarray
    labels: np.ndarray  # fine cluster of each paper (UNCLUSTERED: none)
    outlying: np.ndarray  # True: left out by the clustering, drawn in the nearest topic (adopt_outliers)
    trust: np.ndarray
    rest: np.ndarray  # rows placed by their nearest sampled papers
    manifest: dict  # the "layout" and "clusters" sections


def _lay_out(vectors: np.ndarray, ids: list[str], sample: np.ndarray, group, refine) -> _Laid:
    """Lay out and cluster the papers of ``sample`` (row numbers), and place the rest.
    ``group(sample_vectors, knn)`` returns the clusters and their description (:func:`cluster`),
    ``refine(sample_vectors, labels)`` the clusters improved (:func:`_split_unnamed`)."""
    count = len(vectors)
    sample_vectors = np.ascontiguousarray(vectors[sample] if len(sample) < count else vectors, dtype=np.float32)
    knn = knn_graph(sample_vectors, k=max(16, TRUST_K + 1))
    sample_coords, layout_info = layout(sample_vectors, knn)
    sample_labels, cluster_info = group(sample_vectors, knn)
    sample_labels, sample_outlying, threshold = adopt_outliers(sample_vectors, sample_labels)
    sample_labels = refine(sample_vectors, sample_labels)
    cluster_info |= {"left_out": int(sample_outlying.sum()) + int((sample_labels == UNCLUSTERED).sum())}
    cluster_info |= {"adopted": int(sample_outlying.sum()), "adopt_similarity": round(threshold, 4)}
    coords, labels, trust = (np.empty((count, 2), np.float32), np.empty(count, np.int64), np.empty(count, np.float32))
    coords[sample], labels[sample], trust[sample] = sample_coords, sample_labels, map_trust(knn[0], sample_coords)
    outlying = np.zeros(count, dtype=bool)
    outlying[sample] = sample_outlying
    rest = np.setdiff1d(np.arange(count), sample)
    if len(rest):
        coords[rest], labels[rest], trust[rest] = _place_rest(
            vectors, rest, sample_vectors, sample_coords, sample_labels
        )
        layout_info = {
            **layout_info,
            "fitted_on": len(sample),
            "placed": len(rest),
            "placed_share": len(rest) / count,
            "placement": f"similarity^4-weighted mean of the {PLACE_K} nearest laid-out papers",
        }
    manifest = {"layout": layout_info, "clusters": cluster_info}
    return _Laid(vectors, ids, sample, sample_vectors, coords, labels, outlying, trust, rest, manifest)


def _topic_row(laid: _Laid, labels: np.ndarray, label: int) -> dict:
    """The topics table's columns of the topic ``label`` of ``labels`` but its name, terms and parent."""
    members = np.flatnonzero(labels == label)
    sampled = np.intersect1d(members, laid.sample, assume_unique=True)
    centroid = laid.vectors[sampled].mean(axis=0)
    central = sampled[np.argsort(-(laid.vectors[sampled] @ centroid))[:3]]
    median = np.median(laid.coords[members], axis=0)
    anchor = laid.coords[members[np.argmin(((laid.coords[members] - median) ** 2).sum(1))]]
    return {
        "cluster": label,
        "size": len(members),
        "central_ids": [laid.ids[i] for i in central],
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(laid.trust[members].mean()),
    }


def map_columns(
    coords: np.ndarray, fine: np.ndarray, coarse: np.ndarray, names: dict[str, dict], trust: np.ndarray, flags
) -> pd.DataFrame:
    """The map's columns of each paper, as the papers' table stores them: x, y, cluster,
    cluster_name, coarse_cluster, coarse_name (``names``: {"fine"|"coarse": {label: name}}),
    map_trust, and the boolean columns ``flags`` ({"placed": by its neighbours, not laid out;
    "outlying": left out by the clustering, drawn in the nearest topic})."""
    return pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": fine,
            "cluster_name": [names["fine"].get(label, UNCLUSTERED_NAME) for label in fine],
            "coarse_cluster": coarse,
            "coarse_name": [names["coarse"].get(label, UNCLUSTERED_NAME) for label in coarse],
            "map_trust": trust,
        }
        | flags
    )


def _coarse_levels(laid: _Laid, fine_sampled: np.ndarray, coherent, seeded: dict) -> dict[int, int]:
    """The coarse topic of each fine topic (:func:`coarse_topics`); a seed topic (``seeded``:
    {fine label: seed}) is a coarse topic of its own. Coarse topics are numbered from the largest."""
    merged = np.where(np.isin(fine_sampled, list(seeded)), UNCLUSTERED, fine_sampled)
    coarse_of = coarse_topics(laid.sample_vectors, merged, coherent)
    groups = {label: ("merged", group) for label, group in coarse_of.items()}
    groups |= {label: ("seed", label) for label in seeded}
    sizes = Counter()
    for label, group in groups.items():
        sizes[group] += int((laid.labels == label).sum())
    largest = sorted(sizes, key=lambda group: (-sizes[group], group))
    return {label: largest.index(group) for label, group in groups.items()}


def _names(terms: dict, coarse_of: dict[int, int], seeded: dict) -> dict[str, dict[int, str]]:
    """Each topic's name at both levels ({level: {label: name}}): a seed's as its file gives it,
    the others' from their terms (:func:`topic_names`), none taking a seed's name."""
    seed_names = {coarse_of[label]: topic.name for label, topic in seeded.items()}
    names = {"coarse": topic_names(terms["coarse"], taken=set(seed_names.values())) | seed_names}
    taken = set(names["coarse"].values()) - _single_child_names(coarse_of, names)
    names["fine"] = topic_names(terms["fine"], taken=taken) | {label: topic.name for label, topic in seeded.items()}
    return names


def topic_map(
    vectors: np.ndarray,
    texts_of,
    ids: list[str],
    encode,
    sample_size: int = MAP_SAMPLE,
    *,
    seeds: TopicSeeds | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Everything the map needs, per paper and per cluster, plus a manifest section.

    ``texts_of(rows)`` returns the embedded texts of the given rows (only the layout sample's are
    asked for); ``encode(terms)`` embeds candidate topic names with the corpus's model. Corpora
    above ``sample_size`` papers are laid out and clustered on a random sample of that size; the
    other papers are placed by their nearest sampled papers
    (:func:`paperscope.index.search.placement.place_by_neighbours`). With ``seeds``, papers close
    enough to a seed topic form it, and the rest are clustered (:mod:`.seeds`).

    Topics come in two levels: fine clusters, and coarse topics that merge them (``coarse_topics``).
    Returns (per-paper columns, see :func:`map_columns`; one row per topic of either level with
    level ("fine" or "coarse"), cluster, name, terms, size, central_ids (3 most central sampled
    papers), x, y (label position: the member nearest the topic's median), map_trust, parent (a
    fine cluster's coarse topic; -1 for coarse rows); the manifest's "map" section).
    """
    sample = np.arange(len(vectors))
    if len(vectors) > sample_size:
        sample = np.sort(np.random.default_rng(SEED).choice(len(vectors), sample_size, replace=False))
    texts = texts_of(sample)
    finder = TermFinder(texts)
    refined, seeded = {}, {}

    def group(sample_vectors: np.ndarray, knn) -> tuple[np.ndarray, dict]:
        if not (seeds and seeds.topics):
            return cluster(sample_vectors, knn)
        labels, topics, info = cluster_around_seeds(sample_vectors, knn, seeds, encode, finder)
        seeded.update(topics)
        return labels, info

    def refine(sample_vectors: np.ndarray, labels: np.ndarray) -> np.ndarray:
        refined["labels"], refined["pools"], refined["split"] = _split_unnamed(
            texts, finder, sample_vectors, labels, kept=set(seeded)
        )
        return refined["labels"]

    laid = _lay_out(vectors, ids, sample, group, refine)
    fine_sampled, fine_pools, split = refined["labels"], refined["pools"], refined["split"]

    def coherent(clusters: list[int]) -> bool:
        parts = [np.flatnonzero(fine_sampled == label) for label in clusters]
        return hangs_together(finder, parts, sorted({term for label in clusters for term, _ in fine_pools[label]}))

    coarse_of = _coarse_levels(laid, fine_sampled, coherent, seeded)
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in laid.labels], dtype=np.int64)
    levels = {"fine": laid.labels, "coarse": coarse}
    sampled_levels = {level: labels[laid.sample] for level, labels in levels.items()}
    terms = topic_terms(texts, sampled_levels, laid.sample_vectors, encode, finder, {"fine": fine_pools})
    names = _names(terms, coarse_of, seeded)
    rows = [
        {"level": level, "name": names[level][label], "terms": terms[level][label].terms}
        | _topic_row(laid, levels[level], label)
        | {"parent": coarse_of[label] if level == "fine" else UNCLUSTERED}
        for level in ("fine", "coarse")
        for label in sorted(names[level])
    ]
    clusters = pd.DataFrame(rows, columns=CLUSTER_COLUMNS)
    flags = {"placed": np.isin(np.arange(len(vectors)), laid.rest), "outlying": laid.outlying}
    per_paper = map_columns(laid.coords, laid.labels, coarse, names, laid.trust, flags)
    return per_paper, clusters, _manifest(laid, names, split)


def _manifest(laid: _Laid, names: dict, split: int) -> dict:
    """The manifest's "map" section."""
    trust_info = {"k": min(TRUST_K, len(laid.sample) - 1), "mean": float(laid.trust.mean())}
    if len(laid.rest):
        trust_info.update(laid_out=float(laid.trust[laid.sample].mean()), placed=float(laid.trust[laid.rest].mean()))
    return {
        "layout": laid.manifest["layout"],
        "clusters": {
            **laid.manifest["clusters"],
            "count": len(names["fine"]),
            "coarse_count": len(names["coarse"]),
            "merge": "Ward linkage of normalised cluster centroids, cut at the largest jump in [sqrt(n), sqrt(2n)];"
            " a group two terms do not name taken apart",
            "names": "terms most papers use with lift >= 2, picked for coverage, lift and MiniLM similarity",
            "unclustered": int((laid.labels == UNCLUSTERED).sum()),
            "split_unnamed": split,
        },
        "map_trust": trust_info,
    }
