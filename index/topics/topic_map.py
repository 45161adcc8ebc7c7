"""The topic map, computed once at build time: every paper's position, topics at two levels
and map trust, and one row per topic.

The steps have rooms of their own: the layout and map trust (:mod:`.layout`), clusters and
coarse topics (:mod:`.clusters`), seed topics (:mod:`.seeds`), names (:mod:`.naming`); papers
outside the layout sample are placed as queries are (:mod:`paperscope.index.search.placement`).
:func:`topic_map` runs them in order, each handed what it reads and returning what it found
(small named tuples), with their parameters from one :class:`~paperscope.settings.TopicSettings`:
from stored vectors and texts it makes the map again with other settings, embedding nothing but
candidate names.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import NamedTuple

import numpy as np
import pandas as pd

from paperscope.index.search.placement import PLACE_K, TRUST_K, place_by_neighbours
from paperscope.index.topics.clusters import Adoption, Clustering, adopt_outliers, bisect, cluster, coarse_topics
from paperscope.index.topics.layout import Layout, knn_graph, layout, map_trust
from paperscope.index.topics.naming import (
    CorpusTerms,
    Pool,
    hangs_together,
    nameable,
    topic_names,
    topic_pools,
    topic_terms,
)
from paperscope.index.topics.remap_cache import cached_terms
from paperscope.index.topics.seeds import cluster_around_seeds
from paperscope.settings import UNCLUSTERED, UNCLUSTERED_NAME, SeedTopic, TopicSeeds, TopicSettings

CLUSTER_COLUMNS = ["level", "cluster", "name", "terms", "size", "central_ids", "x", "y", "map_trust", "parent"]


class TopicMap(NamedTuple):
    """What a build keeps of the map: the per-paper columns (:func:`map_columns`), one row per
    topic of either level (``CLUSTER_COLUMNS``) and the manifest's "map" section."""

    papers: pd.DataFrame
    topics: pd.DataFrame
    sections: dict


class Sample(NamedTuple):
    """The papers the map is fitted on (all, up to ``LayoutSettings.sample``): their row numbers,
    vectors and neighbour graph (:func:`knn_graph`)."""

    rows: np.ndarray
    vectors: np.ndarray
    knn: tuple[np.ndarray, np.ndarray]


class FineTopics(NamedTuple):
    """The fine topics of the sampled papers: a label each (UNCLUSTERED: none), True for those the
    clustering left out and drawn in their nearest topic, each topic's candidate names
    (:func:`topic_pools`), its seed topic where it is one, how many grab-bags were split, and
    the manifest's "clusters" section so far."""

    labels: np.ndarray
    outlying: np.ndarray
    pools: dict[int, Pool]
    seeds: dict[int, SeedTopic]
    split: int
    description: dict


class Placed(NamedTuple):
    """Every paper on the map: the sampled papers as laid out and clustered, the other papers
    (``rest``) placed by their nearest sampled papers; the manifest's "layout" section."""

    coords: np.ndarray
    labels: np.ndarray
    outlying: np.ndarray
    trust: np.ndarray
    rest: np.ndarray
    description: dict


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
    positions, placed_labels, trust = (np.concatenate(part) for part in zip(*parts, strict=True))
    return positions, placed_labels, trust


def _single_child_names(coarse_of: dict[int, int], names: dict) -> set[str]:
    """Names of coarse topics that hold one fine cluster: the fine cluster may share its name."""
    children = Counter(coarse_of.values())
    return {names["coarse"][group] for group, count in children.items() if count == 1}


def _sample(vectors: np.ndarray, settings: TopicSettings) -> Sample:
    """The papers the map is fitted on: all, or above ``settings.layout.sample`` papers a random
    sample of that many (seed ``settings.layout.seed``), with their neighbour graph."""
    count, size = len(vectors), settings.layout.sample
    rows = np.arange(count)
    if count > size:
        rows = np.sort(np.random.default_rng(settings.layout.seed).choice(count, size, replace=False))
    sampled = np.ascontiguousarray(vectors[rows] if len(rows) < count else vectors, dtype=np.float32)
    return Sample(rows, sampled, knn_graph(sampled, k=max(settings.layout.knn, TRUST_K + 1)))


def _clusters(
    sample: Sample, terms: CorpusTerms, encode, settings: TopicSettings, seeds: TopicSeeds | None
) -> Clustering:
    """The sampled papers' clusters: :func:`cluster`, or around ``seeds`` (:func:`cluster_around_seeds`)."""
    if seeds and seeds.topics:
        return cluster_around_seeds(sample.vectors, sample.knn, seeds, encode, terms.finder, settings)
    return cluster(sample.vectors, sample.knn, settings)


def _refine(
    sample: Sample, found: Clustering, adopted: Adoption, terms: CorpusTerms, settings: TopicSettings
) -> FineTopics:
    """The fine topics: the clusters ``found`` with the papers they left out ``adopted``
    (:func:`adopt_outliers`); those of at least ``split_papers`` papers that no honest name covers
    (:func:`nameable`) are grab-bags of neighbouring fields, each split in two (:func:`bisect`) and
    the halves checked again (``split_rounds`` in all); a piece of a split that no honest name
    covers either is what is left of the grab-bag, not a topic: its papers are drawn grey. Seed topics
    are never split. Returns the :class:`FineTopics` with each topic's candidate names."""
    chosen, naming = settings.clusters, settings.names
    labels, split, pieces = adopted.labels.copy(), 0, set()

    def unnamed(pools: dict[int, Pool], least: int) -> list[int]:
        return [
            label
            for label, pool in pools.items()
            if label not in found.seeds
            and (labels == label).sum() >= least
            and not nameable(pool, np.flatnonzero(labels == label), terms.finder, naming)
        ]

    for _ in range(chosen.split_rounds):
        pools = topic_pools(terms, labels, naming)
        grab_bags = unnamed(pools, chosen.split_papers)
        if not grab_bags:
            break
        for label in grab_bags:
            members = np.flatnonzero(labels == label)
            labels[members[bisect(sample.vectors[members]) == 1]] = labels.max() + 1
            pieces |= {label, int(labels.max())}
        split += len(grab_bags)
    else:
        pools = topic_pools(terms, labels, naming)
    left = [label for label in unnamed(pools, 1) if label in pieces]
    grey = np.isin(labels, left)
    labels[grey] = UNCLUSTERED
    description = {
        **found.description,
        "left_out": int(adopted.outlying.sum()) + int((adopted.labels == UNCLUSTERED).sum()),
        "adopted": int(adopted.outlying.sum()),
        "adopt_similarity": round(adopted.threshold, 4),
        "left_unnamed": int(grey.sum()),
    }
    pools = {label: pool for label, pool in pools.items() if label not in left}
    return FineTopics(labels, adopted.outlying & ~grey, pools, found.seeds, split, description)


def _place(vectors: np.ndarray, sample: Sample, laid_out: Layout, fine: FineTopics) -> Placed:
    """Every paper on the map: the sample as laid out and clustered, the rest placed by their
    nearest sampled papers (:func:`place_by_neighbours`), each paper's map trust."""
    count = len(vectors)
    coords, labels, trust = (np.empty((count, 2), np.float32), np.empty(count, np.int64), np.empty(count, np.float32))
    coords[sample.rows], labels[sample.rows] = laid_out.coords, fine.labels
    trust[sample.rows] = map_trust(sample.knn[0], laid_out.coords)
    outlying = np.zeros(count, dtype=bool)
    outlying[sample.rows] = fine.outlying
    rest = np.setdiff1d(np.arange(count), sample.rows)
    description = laid_out.description
    if len(rest):
        coords[rest], labels[rest], trust[rest] = _place_rest(
            vectors, rest, sample.vectors, laid_out.coords, fine.labels
        )
        description = {
            **description,
            "fitted_on": len(sample.rows),
            "placed": len(rest),
            "placed_share": len(rest) / count,
            "placement": f"similarity^4-weighted mean of the {PLACE_K} nearest laid-out papers",
        }
    return Placed(coords, labels, outlying, trust, rest, description)


def _topic_row(
    vectors: np.ndarray, ids: list[str], sample: Sample, placed: Placed, labels: np.ndarray, label: int
) -> dict:
    """The topics table's columns of the topic ``label`` of ``labels`` but its name, terms and parent."""
    members = np.flatnonzero(labels == label)
    sampled = np.intersect1d(members, sample.rows, assume_unique=True)
    centroid = vectors[sampled].mean(axis=0)
    central = sampled[np.argsort(-(vectors[sampled] @ centroid))[:3]]
    median = np.median(placed.coords[members], axis=0)
    anchor = placed.coords[members[np.argmin(((placed.coords[members] - median) ** 2).sum(1))]]
    return {
        "cluster": label,
        "size": len(members),
        "central_ids": [ids[i] for i in central],
        "x": float(anchor[0]),
        "y": float(anchor[1]),
        "map_trust": float(placed.trust[members].mean()),
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


def _coherent(fine: FineTopics, terms: CorpusTerms, settings: TopicSettings, clusters: list[int]) -> bool:
    """Whether the fine topics ``clusters`` hang together as one coarse topic (:func:`hangs_together`
    with their candidate names)."""
    parts = [np.flatnonzero(fine.labels == label) for label in clusters]
    pool = sorted({term for label in clusters for term, _ in fine.pools[label]})
    return hangs_together(terms.finder, parts, pool, settings.names)


def _coarse_levels(
    sample: Sample, fine: FineTopics, labels: np.ndarray, terms: CorpusTerms, settings: TopicSettings
) -> dict[int, int]:
    """The coarse topic of each fine topic (:func:`coarse_topics` of those that hang together); a
    seed topic is a coarse topic of its own. Coarse topics are numbered from the largest (by their
    papers among all, ``labels``: the fine topic of each paper)."""
    merged = np.where(np.isin(fine.labels, list(fine.seeds)), UNCLUSTERED, fine.labels)
    coherent = functools.partial(_coherent, fine, terms, settings)
    coarse_of = coarse_topics(sample.vectors, merged, settings.clusters, coherent)
    groups = {label: ("merged", group) for label, group in coarse_of.items()}
    groups |= {label: ("seed", label) for label in fine.seeds}
    sizes: Counter[tuple[str, int]] = Counter()
    for label, group in groups.items():
        sizes[group] += int((labels == label).sum())
    largest = sorted(sizes, key=lambda group: (-sizes[group], group))
    return {label: largest.index(group) for label, group in groups.items()}


def topic_rows(
    where: tuple[np.ndarray, list[str], Sample, Placed],
    levels: dict,
    named: dict,
    names: dict,
    coarse_of: dict[int, int],
) -> list[dict]:
    """The topics table's rows, fine then coarse, each topic's name, terms, parent and
    :func:`_topic_row`; ``where``: (vectors, ids, sample, placed); ``levels``: each level's labels."""
    return [
        {"level": level, "name": names[level][label], "terms": named[level][label].terms}
        | _topic_row(*where, levels[level], label)
        | {"parent": coarse_of[label] if level == "fine" else UNCLUSTERED}
        for level in ("fine", "coarse")
        for label in sorted(names[level])
    ]


def _names(named: dict, coarse_of: dict[int, int], seeded: dict[int, SeedTopic]) -> dict[str, dict[int, str]]:
    """Each topic's name at both levels ({level: {label: name}}) from its terms (``named``,
    :func:`topic_terms`; :func:`topic_names`); a seed's (``seeded``: {fine label: seed}) as its
    file gives it, no other topic taking a seed's name."""
    seed_names = {coarse_of[label]: topic.name for label, topic in seeded.items()}
    names = {"coarse": topic_names(named["coarse"], taken=set(seed_names.values())) | seed_names}
    taken = set(names["coarse"].values()) - _single_child_names(coarse_of, names)
    parents = {label: names["coarse"][group] for label, group in coarse_of.items()}  # shared when nothing else is left
    names["fine"] = topic_names(named["fine"], taken, parents) | {label: topic.name for label, topic in seeded.items()}
    return names


def topic_map(
    vectors: np.ndarray,
    texts_of,
    ids: list[str],
    encode,
    settings: TopicSettings | None = None,
    *,
    seeds: TopicSeeds | None = None,
    cache=None,
) -> TopicMap:
    """Everything the map needs, per paper and per topic, plus a manifest section, from the
    papers' vectors (stored ones will do: nothing is embedded again but candidate names).

    ``texts_of(rows)`` returns the embedded texts of the given rows (only the layout sample's are
    asked for); ``encode(terms)`` embeds candidate topic names with the corpus's model;
    ``settings`` (default: :class:`~paperscope.settings.TopicSettings`) are the stages'
    parameters. Corpora above ``settings.layout.sample`` papers are laid out and clustered on a
    random sample of that size; the other papers are placed by their nearest sampled papers
    (:func:`paperscope.index.search.placement.place_by_neighbours`). With ``seeds``, papers close
    enough to a seed topic form it, and the rest are clustered (:mod:`.seeds`). ``cache``:
    (read(kind) or None, write(kind, arrays)) keeping the candidate terms for a remap
    (:func:`~.remap_cache.cached_terms`).

    The stages: the layout (:func:`layout`), clusters (:func:`_clusters`) with the papers they
    left out adopted (:func:`adopt_outliers`), grab-bags split (:func:`_refine`), every paper
    placed (:func:`_place`), fine topics merged into coarse ones (:func:`_coarse_levels`), and
    names at both levels (:func:`topic_terms`, :func:`_names`); the candidate terms they read are
    found once (:func:`~.naming.corpus_terms`). Returns a :class:`TopicMap`: per-paper columns (see
    :func:`map_columns`); one row per topic of either level with level ("fine" or "coarse"),
    cluster, name, terms, size, central_ids (3 most central sampled papers), x, y (label
    position: the member nearest the topic's median), map_trust, parent (a fine cluster's coarse
    topic; -1 for coarse rows); the manifest's "map" section.
    """
    settings = settings or TopicSettings()
    sample = _sample(vectors, settings)
    terms = cached_terms(texts_of(sample.rows), sample.rows, settings.names.max_words, cache)
    laid_out = layout(sample.vectors, sample.knn, settings.layout)
    found = _clusters(sample, terms, encode, settings, seeds)
    adopted = adopt_outliers(sample.vectors, found.labels, settings.clusters.adopt_quantile)
    fine = _refine(sample, found, adopted, terms, settings)
    placed = _place(vectors, sample, laid_out, fine)
    coarse_of = _coarse_levels(sample, fine, placed.labels, terms, settings)
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in placed.labels], dtype=np.int64)
    levels = {"fine": placed.labels, "coarse": coarse}
    sampled = {level: labels[sample.rows] for level, labels in levels.items()}
    named = topic_terms(terms, sampled, sample.vectors, encode, settings.names, pools={"fine": fine.pools})
    names = _names(named, coarse_of, fine.seeds)
    rows = topic_rows((vectors, ids, sample, placed), levels, named, names, coarse_of)
    flags = {"placed": np.isin(np.arange(len(vectors)), placed.rest), "outlying": placed.outlying}
    per_paper = map_columns(placed.coords, placed.labels, coarse, names, placed.trust, flags)
    sections = _sections(sample, placed, fine, names, settings)
    return TopicMap(per_paper, pd.DataFrame(rows, columns=CLUSTER_COLUMNS), sections)


def _sections(sample: Sample, placed: Placed, fine: FineTopics, names: dict, settings: TopicSettings) -> dict:
    """The manifest's "map" section."""
    trust = placed.trust
    trust_info = {"k": min(TRUST_K, len(sample.rows) - 1), "mean": float(trust.mean())}
    if len(placed.rest):
        trust_info.update(laid_out=float(trust[sample.rows].mean()), placed=float(trust[placed.rest].mean()))
    return {
        "layout": placed.description,
        "clusters": {
            **fine.description,
            "count": len(names["fine"]),
            "coarse_count": len(names["coarse"]),
            "merge": "Ward linkage of normalised cluster centroids, cut at the largest jump in [sqrt(n), sqrt(2n)];"
            " a group two terms do not name taken apart",
            "names": f"terms most papers use with lift >= {settings.names.min_lift:g}, picked for coverage, lift"
            " and MiniLM similarity",
            "unclustered": int((placed.labels == UNCLUSTERED).sum()),
            "split_unnamed": fine.split,
        },
        "map_trust": trust_info,
    }
