"""Another map of the same index: the topics re-cut and re-named from the stored vectors and layout.

A remap never embeds a paper again nor lays the map out again: each paper keeps its position
(x, y), its map trust and whether it was placed. With a number of coarse topics alone, the fine
clusters stay the build's and the Ward linkage of their centroids is cut into that many groups
(:func:`~.clusters.coarse_topics` with ``groups``). With a minimum topic size, or more topics
than the build's fine clusters (a minimum size then chosen to fit: :func:`_fitting_fine`), the fine
clusters are found again: HDBSCAN on the stored 2-D layout of the laid-out papers (as close to the
labelled areas as the build's 5-D UMAP, and much faster: docs/benchmarks.md), the papers it
leaves out adopted and grab-bags split as a build does (:func:`.topic_map._refine`), and a placed
paper joins the topic most of its 5 nearest laid-out papers on the map are in. Both levels are
then named as a build names them.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np
import pandas as pd

from paperscope.errors import UserError
from paperscope.index.topics.clusters import Clustering, adopt_outliers, coarse_topics
from paperscope.index.topics.naming import topic_pools, topic_terms
from paperscope.index.topics.remap_cache import REMAP_SAMPLE, cached_terms
from paperscope.index.topics.topic_map import (
    CLUSTER_COLUMNS,
    Placed,
    Sample,
    TopicMap,
    _names,
    _refine,
    map_columns,
    topic_rows,
)
from paperscope.settings import UNCLUSTERED, TopicSettings

PLACE_VOTES = 5  # a placed paper joins the topic most of this many nearest laid-out papers are in


class Remapping(NamedTuple):
    """What a remap asks for: ``topics`` coarse topics and, when given, fine clusters of at least
    ``min_topic_size`` papers found again (else the build's are kept)."""

    topics: int
    min_topic_size: int | None = None
    laid_out: int = 0  # how many papers the map laid out (set by the remap)


def _check(asked: Remapping, count: int, of: str = "fine clusters") -> None:
    """A number of topics that ``count`` fine clusters (or laid-out papers: ``of``) allow, a minimum
    size of at least 2 (a UserError if not); ``asked.min_topic_size``: the user's (the message says
    what to change)."""
    if asked.min_topic_size is not None and (not isinstance(asked.min_topic_size, int) or asked.min_topic_size < 2):
        raise UserError(f"--min-topic-size must be a whole number of at least 2, got {asked.min_topic_size}")
    if not isinstance(asked.topics, int) or asked.topics < 2:
        raise UserError(f"--topics must be a whole number of at least 2, got {asked.topics}")
    if asked.topics > count:
        sized = f" of at least {asked.min_topic_size} papers" if asked.min_topic_size and of == "fine clusters" else ""
        hint = "; a smaller --min-topic-size makes more" if of == "fine clusters" else ""
        raise UserError(f"--topics {asked.topics}: the map has {count} {of}{sized}, so at most {count} topics{hint}")


def _vote(coords: np.ndarray, sampled: np.ndarray, labels: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The topic of each paper of ``rest``: the one most of its ``PLACE_VOTES`` nearest ``sampled``
    papers on the map are in (the nearest first among ties)."""
    import faiss

    on_map = faiss.IndexFlatL2(2)
    on_map.add(np.ascontiguousarray(coords[sampled], dtype=np.float32))
    _, nearest = on_map.search(np.ascontiguousarray(coords[rest], dtype=np.float32), min(PLACE_VOTES, len(sampled)))
    votes = labels[nearest]
    classes = np.unique(votes)
    counts = np.stack([(votes == c).sum(axis=1) + 0.1 * (votes[:, 0] == c) for c in classes], axis=1)
    return classes[counts.argmax(axis=1)]


def _sample(vectors: np.ndarray, placed: np.ndarray, settings: TopicSettings) -> Sample:
    """The laid-out papers, or above ``REMAP_SAMPLE`` of them a random sample of that many (seed: the layout's)."""
    rows = np.flatnonzero(~placed)
    if len(rows) > REMAP_SAMPLE:
        rows = np.sort(np.random.default_rng(settings.layout.seed).choice(rows, REMAP_SAMPLE, replace=False))
    empty = np.empty((0, 0))
    return Sample(rows, np.ascontiguousarray(vectors[rows], dtype=np.float32), (empty, empty))


def _hdbscan(coords: np.ndarray, min_size: int, share: float, settings: TopicSettings) -> np.ndarray:
    """HDBSCAN's clusters of the map positions ``coords`` with at least ``min_size`` papers,
    the size scaled by ``share`` (the sample's share of the laid-out papers)."""
    from sklearn.cluster import HDBSCAN

    chosen = settings.clusters
    return HDBSCAN(
        min_cluster_size=max(2, round(min_size * share)),
        min_samples=chosen.min_samples,
        copy=True,
        cluster_selection_method=chosen.selection,
    ).fit_predict(coords)


def _fitting_size(coords: np.ndarray, asked: Remapping, share: float, settings: TopicSettings, start: int = 0) -> int:
    """The largest minimum topic size, from ``start`` (default: the laid-out papers over the topics
    asked) down by a fifth each step, whose clusters on the map (``coords``: the sampled papers')
    number at least the topics asked; 2 if none does."""
    size = max(2, start or asked.laid_out // asked.topics)
    while size > 2 and _hdbscan(coords, size, share, settings).max() + 1 < asked.topics:
        size = max(2, int(size * 0.8))
    return size


def _fitting_fine(sample: Sample, coords: np.ndarray, terms, asked: Remapping, settings: TopicSettings):
    """The fine clusters found again (:func:`_fine_again`) with the minimum size of
    :func:`_fitting_size`; a size whose refined clusters are fewer than the topics asked (the
    refinement greys a grab-bag no name covers) is made a fifth smaller until they are not, or is 2."""
    share = len(sample.rows) / asked.laid_out
    least = _fitting_size(coords[sample.rows], asked, share, settings)
    while True:
        fine = _fine_again(sample, coords, terms, asked, least, settings)
        if least == 2 or len(set(fine.labels.tolist()) - {UNCLUSTERED}) >= asked.topics:
            return fine
        least = _fitting_size(coords[sample.rows], asked, share, settings, start=max(2, int(least * 0.8)))


def _fine_again(sample: Sample, coords: np.ndarray, terms, asked: Remapping, min_size: int, settings: TopicSettings):
    """The fine clusters found again on the sampled papers' map positions, adopted and refined; the
    minimum size ``min_size`` (as asked, or :func:`_fitting_size`) scaled to the sample's share of the
    laid-out papers (``laid_out``: their count)."""
    share = len(sample.rows) / asked.laid_out
    labels = _hdbscan(coords[sample.rows], min_size, share, settings)
    found = Clustering(
        labels.astype(np.int64),
        {"method": "hdbscan", "space": "layout-2d", "min_cluster_size": min_size},
        {},
    )
    adopted = adopt_outliers(sample.vectors, found.labels, settings.clusters.adopt_quantile)
    return _refine(sample, found, adopted, terms, settings)


def _coarse(sample: Sample, fine_labels: np.ndarray, labels: np.ndarray, topics: int, settings) -> dict[int, int]:
    """The coarse topic of each fine one: their centroids' Ward linkage cut into ``topics`` groups,
    numbered from the largest (by their papers among all, ``labels``)."""
    coarse_of = coarse_topics(sample.vectors, fine_labels, settings.clusters, groups=topics)
    sizes: Counter[int] = Counter()
    for label, group in coarse_of.items():
        sizes[group] += int((labels == label).sum())
    largest = sorted(sizes, key=lambda group: (-sizes[group], group))
    return {label: largest.index(group) for label, group in coarse_of.items()}


def remap_topics(vectors: np.ndarray, texts_of, ids: list[str], built: pd.DataFrame, encode, **options) -> TopicMap:
    """Another map from the stored one (``built``: each paper's x, y, map_trust, placed, outlying
    and cluster, the fine topic as built): options ``asked`` (a :class:`Remapping`) and ``settings``
    (the build's :class:`~paperscope.settings.TopicSettings`). ``texts_of(rows)`` gives the
    embedded texts of laid-out papers, ``encode(terms)`` embeds candidate names; ``cache``:
    (read(kind), write(kind, arrays)) reading the texts' candidate terms a build or a remap kept
    and keeping them for the next (:func:`~.remap_cache.cached_terms`).
    Returns a :class:`~.topic_map.TopicMap` whose per-paper columns keep the stored positions;
    its manifest section says how it was made. A UserError for a number the clusters do not allow."""
    asked, settings = options["asked"], options.get("settings") or TopicSettings()
    coords = built[["x", "y"]].to_numpy(np.float32)
    placed = built["placed"].to_numpy(bool)
    asked = asked._replace(laid_out=int((~placed).sum()))
    sample = _sample(vectors, placed, settings)
    rows = sample.rows
    built_fine = len(set(built["cluster"].tolist()) - {UNCLUSTERED})
    again = asked.min_topic_size is not None or asked.topics > built_fine  # else the build's fine clusters kept
    _check(asked, *((asked.laid_out, "laid-out papers") if again else (built_fine,)))  # before the slow part
    terms = cached_terms(texts_of(rows), rows, settings.names.max_words, options.get("cache"))
    labels, outlying = built["cluster"].to_numpy(np.int64).copy(), built["outlying"].to_numpy(bool).copy()
    description = {"fine": "as built"}
    if not again:
        pools = topic_pools(terms, labels[rows], settings.names)
    else:
        fine = (
            _fine_again(sample, coords, terms, asked, asked.min_topic_size, settings)
            if asked.min_topic_size
            else _fitting_fine(sample, coords, terms, asked, settings)
        )
        rest = np.setdiff1d(np.arange(len(labels)), rows)
        labels[rows], outlying[rows], outlying[rest] = fine.labels, fine.outlying, False
        if len(rest):
            labels[rest] = _vote(coords, rows, fine.labels, rest)
        pools, description = fine.pools, {"fine": fine.description | {"split_unnamed": fine.split}}
    _check(asked, len(set(labels[rows].tolist()) - {UNCLUSTERED}))
    coarse_of = _coarse(sample, labels[rows], labels, asked.topics, settings)
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in labels], dtype=np.int64)
    levels = {"fine": labels, "coarse": coarse}
    sampled = {level: values[rows] for level, values in levels.items()}
    named = topic_terms(terms, sampled, sample.vectors, encode, settings.names, pools={"fine": pools})
    names = _names(named, coarse_of, {})
    trust = built["map_trust"].to_numpy(np.float32)
    where = Placed(coords, labels, outlying, trust, np.flatnonzero(placed), {})
    table = topic_rows((vectors, ids, sample, where), levels, named, names, coarse_of)
    per_paper = map_columns(coords, labels, coarse, names, trust, {"placed": placed, "outlying": outlying})
    sections = description | {
        "topics": len(names["coarse"]),
        "clusters": len(names["fine"]),
        "unclustered": int((labels == UNCLUSTERED).sum()),
        "asked": {"topics": asked.topics, "min_topic_size": asked.min_topic_size},
        "named_on": len(rows),
    }
    return TopicMap(per_paper, pd.DataFrame(table, columns=CLUSTER_COLUMNS), sections)
