"""Seed topics: topics a researcher names before the build (``paperscope build --topics-from FILE``).

The file is read by :func:`paperscope.embed.seeds.read_seed_topics`. Each seed's text (name and
description) is embedded with the corpus's model; a paper whose cosine similarity to its closest
seed reaches the threshold (:data:`paperscope.settings.SEED_SIMILARITY`, ``--seed-similarity``)
joins that seed, as
BERTopic's zero-shot topics do; the other papers are clustered as without seeds. A cluster of
those others where the seed's own name is found in most papers (the papers that say "federated
learning" yet fell short of the threshold; ``ClusterSettings.claim_coverage``) joins the seed too,
so that no second topic of the same name appears beside it. A seed is a topic at both levels, named
as the file names it.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np

from paperscope.index.topics.clusters import Clustering, cluster
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.layout import knn_graph
from paperscope.settings import (
    UNCLUSTERED,
    SeedTopic,
    TopicSeeds,
    TopicSettings,
)

logger = logging.getLogger(__name__)


def seed_of(vectors: np.ndarray, seeds: TopicSeeds, encode) -> np.ndarray:
    """The seed each paper joins (its number in ``seeds.topics``), or -1: its closest seed by
    cosine similarity, when at least ``seeds.similarity``. ``encode(texts)`` is the corpus's model."""
    if not seeds.topics or not len(vectors):
        return np.full(len(vectors), UNCLUSTERED, dtype=np.int64)
    embedded = np.asarray(encode([topic.text() for topic in seeds.topics]), dtype=np.float32)
    similarities = np.asarray(vectors, dtype=np.float32) @ embedded.T
    closest = similarities.argmax(axis=1)
    return np.where(similarities.max(axis=1) >= seeds.similarity, closest, UNCLUSTERED).astype(np.int64)


class Seeded(NamedTuple):
    """Fine topics with the seed topics among them: a label per paper (numbered 0…n-1, -1: none),
    the seed of each label that is one, and how many clusters joined each seed (by its name)."""

    labels: np.ndarray
    seeds: dict[int, SeedTopic]
    claimed: dict[str, int]


def with_seeds(labels: np.ndarray, joined: np.ndarray, seeds: TopicSeeds, finder: TermFinder, claim: float) -> Seeded:
    """``labels`` (clusters of the papers not in a seed; -1 for the others) with the seeded papers
    (``joined``: from :func:`seed_of`) as topics of their own, numbered after the clusters, and
    the clusters whose papers use a seed's name in at least ``claim`` of them
    (``ClusterSettings.claim_coverage``) joined to it."""
    labels = labels.copy()
    first = int(labels.max()) + 1 if (labels >= 0).any() else 0
    seeded = joined >= 0
    labels[seeded] = first + joined[seeded]
    claimed: dict[str, int] = {}
    for label in sorted(set(labels[~seeded].tolist()) - {UNCLUSTERED}):
        members = np.flatnonzero(labels == label)
        uses = [finder.coverage(members, [topic.name]) for topic in seeds.topics]
        best = int(np.argmax(uses))
        if uses[best] >= claim:
            labels[members] = first + best
            claimed[seeds.topics[best].name] = claimed.get(seeds.topics[best].name, 0) + 1
    present = np.array(sorted(set(labels.tolist()) - {UNCLUSTERED}), dtype=np.int64)
    number = {int(label): index for index, label in enumerate(present)}
    seed_labels = {number[first + i]: topic for i, topic in enumerate(seeds.topics) if first + i in number}
    for topic in seeds.topics:
        if topic not in seed_labels.values():
            logger.warning("seed topic '%s' is close to no paper: no topic of that name", topic.name)
    labels = np.where(labels == UNCLUSTERED, UNCLUSTERED, np.searchsorted(present, labels)).astype(np.int64)
    return Seeded(labels, seed_labels, claimed)


def cluster_around_seeds(
    vectors: np.ndarray, knn, seeds: TopicSeeds, encode, finder: TermFinder, settings: TopicSettings
) -> Clustering:
    """Fine topics of ``vectors`` with seeds: each paper close enough to a seed joins it
    (:func:`seed_of`), the others are clustered (:func:`~paperscope.index.topics.clusters.cluster`,
    on their own neighbour graph, by ``settings``), and clusters using a seed's name join it
    (:func:`with_seeds`). ``knn``: the neighbour graph of all of ``vectors``. The clustering's
    description has a "seeds" section."""
    joined = seed_of(vectors, seeds, encode)
    rest = np.flatnonzero(joined == UNCLUSTERED)
    labels = np.full(len(vectors), UNCLUSTERED, dtype=np.int64)
    info = {"method": "none", "reason": "every paper is in a seed topic"}
    if len(rest):
        graph = knn if len(rest) == len(vectors) else knn_graph(vectors[rest], k=knn[0].shape[1])
        labels[rest], info, _ = cluster(vectors[rest], graph, settings)
    labels, seed_labels, claimed = with_seeds(labels, joined, seeds, finder, settings.clusters.claim_coverage)
    sizes = {topic.name: int((labels == label).sum()) for label, topic in seed_labels.items()}
    info = info | {
        "seeds": {
            "source": seeds.source,
            "similarity": seeds.similarity,
            "joined": int((joined >= 0).sum()),
            "topics": [
                {
                    "name": topic.name,
                    "description": topic.description,
                    "papers": sizes.get(topic.name, 0),
                    "clusters_joined": claimed.get(topic.name, 0),
                }
                for topic in seeds.topics
            ],
        }
    }
    return Clustering(labels, info, seed_labels)
