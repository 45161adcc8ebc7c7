"""Seed topics: topics a researcher names before the build (``paperscope build --topics-from FILE``).

The file is read by :func:`paperscope.embed.seed_file.read_seed_topics`. Each seed's text (name and
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

from paperscope.embed.terms import BOILERPLATE, english_stop_words, words
from paperscope.index.topics.clusters import Clustering, cluster
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.layout import knn_graph
from paperscope.limits import SEED_SURE
from paperscope.settings import UNCLUSTERED, SeedTopic, TopicSeeds, TopicSettings

logger = logging.getLogger(__name__)


def seed_words(topic: SeedTopic) -> list[str]:
    """The words of a seed's name that mark its papers: its words but stop words and scientific
    boilerplate ("spiking" of "spiking neural networks"; "fairness" and "machine" of "fairness in
    machine learning"), hyphenated words whole; all of them where every word is one of those."""
    named = words(topic.name, compounds=True)
    stop = english_stop_words()
    content = [word for word in named if word not in stop and word not in BOILERPLATE]
    return content or [word for word in named if word not in stop]


def uses_seed(topic: SeedTopic, finder: TermFinder) -> np.ndarray:
    """Whether each text of ``finder`` uses the seed's words: its name as written (or the acronym
    it gives, "large language models (LLMs)"), the acronym of its initials when of three letters
    or more ("GNN" for "graph neural networks"), or at least half of :func:`seed_words`."""
    found = finder.found(topic.name).copy()
    initials = "".join(word[0] for word in words(topic.name))
    if len(initials) >= 3:
        found |= finder.found(initials)
    marks = seed_words(topic)
    hits = np.sum([finder.found(word) for word in marks], axis=0) if marks else np.zeros(len(finder))
    return found | (2 * hits >= len(marks)) & (hits > 0)


class SeedChoice(NamedTuple):
    """The seed each paper joins (-1: none), its cosine similarity to its seed, and how many
    standard deviations above that seed's mean over the corpus it is (its ``spread``)."""

    seed: np.ndarray
    similarity: np.ndarray
    spread: np.ndarray


def seed_of(vectors: np.ndarray, seeds: TopicSeeds, encode, finder: TermFinder | None = None) -> SeedChoice:
    """The seed each paper joins: the one it is most unusually close to (its cosine similarity in
    standard deviations above the seed's mean over ``vectors``), when the paper uses the seed's
    words (:func:`uses_seed`; ``finder``: the papers' texts in the order of ``vectors``; without
    one, similarity alone), its similarity is at least ``seeds.similarity``, and its spread at
    least ``seeds.spread`` or its similarity :data:`~paperscope.limits.SEED_SURE` (for a seed
    whose papers are a large share of the corpus). ``encode(texts)`` is the corpus's model. The
    evidence holds per seed: one whose papers are all a little like it takes no more for it."""
    count = len(vectors)
    if not seeds.topics or not count:
        return SeedChoice(np.full(count, UNCLUSTERED, dtype=np.int64), np.zeros(count), np.zeros(count))
    embedded = np.asarray(encode([topic.text() for topic in seeds.topics]), dtype=np.float32)
    similarities = np.asarray(vectors, dtype=np.float32) @ embedded.T
    spreads = (similarities - similarities.mean(axis=0)) / np.maximum(similarities.std(axis=0), 1e-6)
    if finder is not None:
        uses = np.stack([uses_seed(topic, finder) for topic in seeds.topics], axis=1)
        spreads = np.where(uses, spreads, -np.inf)
    rows = np.arange(count)
    closest = spreads.argmax(axis=1)
    similarity, spread = similarities[rows, closest], spreads[rows, closest]
    joins = (similarity >= seeds.similarity) & ((spread >= seeds.spread) | (similarity >= SEED_SURE))
    return SeedChoice(np.where(joins, closest, UNCLUSTERED).astype(np.int64), similarity, spread)


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


def _sureness(choice: SeedChoice, number: int) -> dict:
    """How many papers seed ``number`` took by its evidence, and how sure: the median and the least
    cosine similarity and spread (standard deviations above the seed's mean) of those papers."""
    taken = choice.seed == number
    if not taken.any():
        return {"taken": 0}
    similarity, spread = choice.similarity[taken], choice.spread[taken]
    return {
        "taken": int(taken.sum()),
        "similarity_median": round(float(np.median(similarity)), 4),
        "similarity_least": round(float(similarity.min()), 4),
        "spread_median": round(float(np.median(spread)), 3),
        "spread_least": round(float(spread.min()), 3),
    }


def cluster_around_seeds(
    vectors: np.ndarray, knn, seeds: TopicSeeds, encode, finder: TermFinder, settings: TopicSettings
) -> Clustering:
    """Fine topics of ``vectors`` with seeds: each paper close enough to a seed joins it
    (:func:`seed_of`), the others are clustered (:func:`~paperscope.index.topics.clusters.cluster`,
    on their own neighbour graph, by ``settings``), and clusters using a seed's name join it
    (:func:`with_seeds`). ``knn``: the neighbour graph of all of ``vectors``. The clustering's
    description has a "seeds" section."""
    choice = seed_of(vectors, seeds, encode, finder)
    joined = choice.seed
    rest = np.flatnonzero(joined == UNCLUSTERED)
    labels = np.full(len(vectors), UNCLUSTERED, dtype=np.int64)
    info: dict[str, object] = {"method": "none", "reason": "every paper is in a seed topic"}
    if len(rest):
        graph = knn if len(rest) == len(vectors) else knn_graph(vectors[rest], k=knn[0].shape[1])
        labels[rest], info, _ = cluster(vectors[rest], graph, settings)
    labels, seed_labels, claimed = with_seeds(labels, joined, seeds, finder, settings.clusters.claim_coverage)
    sizes = {topic.name: int((labels == label).sum()) for label, topic in seed_labels.items()}
    info = info | {
        "seeds": {
            "source": seeds.source,
            "similarity": seeds.similarity,
            "spread": seeds.spread,
            "joined": int((joined >= 0).sum()),
            "topics": [
                {
                    "name": topic.name,
                    "description": topic.description,
                    "papers": sizes.get(topic.name, 0),
                    "clusters_joined": claimed.get(topic.name, 0),
                }
                | _sureness(choice, number)
                for number, topic in enumerate(seeds.topics)
            ],
        }
    }
    return Clustering(labels, info, seed_labels)
