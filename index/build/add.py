"""Add papers to an existing index without rebuilding it: ``paperscope add FILES --index DIR``.

Only the new papers are embedded (with the index's model and preset, through the embedding
cache). They join the FAISS index; they are placed on the existing map at the weighted mean of
their nearest papers and join the topic most of those belong to (as a build places the papers
outside its layout sample); their keyword rows use the index's vocabulary and IDF. Papers whose
id or abstract the index already holds are reported and skipped. The result is written as a new
generation, atomically, under the folder's build lock: a killed ``add`` leaves the index as it was.

The layout, the topics and the vocabulary stay those of the last full build (and what remaps
kept of its texts holds: :func:`paperscope.index.store.maps.carry_caches`); once placed papers
are more than ``REBUILD_SHARE`` of the index, ``add`` says a full rebuild would serve it better.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope import locations
from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.columns import RESERVED, CorpusColumns, kind_of, values_array
from paperscope.embed.readers import Reading
from paperscope.embed.readers.admission import Admission, abstract_key, admitted_papers
from paperscope.embed.text import counted, embedding_texts
from paperscope.errors import UserError, write_error
from paperscope.index.build.shards import with_columns
from paperscope.index.build.smoothing import smooth
from paperscope.index.search.encoding import QueryEncoder
from paperscope.index.search.placement import TRUST_K, place_by_neighbours
from paperscope.index.store import generations, maps
from paperscope.index.topics.topic_map import map_columns
from paperscope.limits import READ_WORKERS
from paperscope.settings import UNCLUSTERED, Fields

if TYPE_CHECKING:
    from paperscope.embed.model import Encoder

logger = logging.getLogger(__name__)

# Above this share of papers placed rather than laid out, new topics may have formed that no
# existing cluster holds: suggest a full rebuild.
REBUILD_SHARE = 0.2


@dataclass
class AddReport:
    """What an ``add`` did."""

    folder: Path
    added: int
    skipped: int
    count: int  # papers in the index now
    placed_share: float  # share of the index placed on the map rather than laid out
    seconds: float
    no_topic: int = 0  # new papers that fit no topic (drawn as unclustered)


def add_papers(
    inputs: list[str | Path],
    folder: str | Path,
    fields: Fields | None = None,
    use_cache: bool = True,
    *,
    on_stage: Callable[[str], None] | None = None,
) -> AddReport:
    """Add the papers of ``inputs`` to the index at ``folder`` (see the module docstring), embedded
    as the index was; ``fields`` names the columns of ``inputs``; ``use_cache``: reuse vectors of
    texts embedded before. ``on_stage("commit")`` is called once the new generation is on disk,
    complete, and not yet current (as in :func:`~paperscope.index.build.pipeline.build_index`)."""
    folder = Path(folder)
    begin = time.perf_counter()
    if not generations.is_index(folder):
        raise UserError(f"{folder}: not a paperscope index; build one with: {generations.build_command(folder)}")
    try:
        with generations.build_lock(folder):
            report = _add(inputs, folder, fields or Fields(), use_cache, on_stage)
    except OSError as exc:
        raise write_error(exc, folder) or exc from None
    report.seconds = time.perf_counter() - begin
    return report


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A column of the papers' table; "placed" of an index from before it was kept: none placed."""
    if name == "placed" and name not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    return table.column(name).to_numpy(zero_copy_only=False)


def _new_papers(old: generations.Generation, inputs, fields: Fields) -> tuple[pd.DataFrame, int]:
    """The papers of ``inputs`` the index does not hold yet (by id or abstract), and how many were skipped."""
    table = old.papers
    own = {item.name: kind_of(item.type) for item in table.schema if item.name not in RESERVED}
    known = CorpusColumns({name: kind for name, kind in own.items() if kind})
    admission = Admission(Reading(known, workers=READ_WORKERS))
    for paper_id, abstract in zip(*(table.column(name).to_pylist() for name in ("id", "abstract")), strict=True):
        admission.know(paper_id, abstract_key(abstract))
    new = pd.DataFrame(list(admitted_papers(inputs, fields.overrides(), admission)))
    for line in admission.report.lines():
        logger.warning("skipped: %s", line)
    return new, admission.report.dropped()


def _embed(old: generations.Generation, texts: list[str], use_cache: bool) -> tuple[np.ndarray, int, Encoder]:
    """The vectors of ``texts`` as the index's papers were embedded, how many were embedded anew,
    and the encoder (the model the index was built with, checked by fingerprint): the one encoder
    of an ``add``, which also counts the new texts' word pieces."""
    strategy = old.manifest.long_text.strategy
    encoder = QueryEncoder(old.manifest.model, strategy).encoder
    cache = EmbeddingCache(locations.cache_dir(), encoder.vector_key, strategy) if use_cache else None
    vectors, fresh = encode_with_cache(encoder, texts, strategy, cache)
    if cache is not None:
        cache.flush()
    return vectors, fresh, encoder


def _add(inputs, folder: Path, fields: Fields, use_cache: bool, on_stage) -> AddReport:
    """:func:`add_papers` under the folder's lock."""
    old = generations.read_generation(folder, mapped=False)
    count = old.papers.num_rows
    new, skipped = _new_papers(old, inputs, fields)
    if new.empty:
        logger.info("no new papers in %s; the index is unchanged", ", ".join(Path(p).name for p in inputs))
        return AddReport(folder, 0, skipped, count, float(np.mean(_column(old.papers, "placed"))), 0.0)
    texts = embedding_texts(new)
    vectors, fresh, encoder = _embed(old, texts, use_cache)
    logger.info("embedded %s (%d from the cache)", counted(len(new), "paper"), len(new) - fresh)
    new["tokens"] = encoder.count_tokens(texts)
    map_columns_of_new = _place(old, vectors)
    generation = _grown(old, new.join(map_columns_of_new), vectors, texts, inputs)
    written = generations.write_generation(folder, generation, on_stage=on_stage)
    maps.carry_caches(folder, old.name or "", written.name)  # the same texts laid out: what a remap kept holds
    placed = generation.manifest.map.placed_share
    logger.info(
        "added %s to %s (%d in all; %.0f%% placed on the map rather than laid out)",
        counted(len(new), "paper"), folder, count + len(new), 100 * placed,
    )  # fmt: skip
    no_topic = int((map_columns_of_new["cluster"].to_numpy() == UNCLUSTERED).sum())
    rebuild = generations.build_command(folder, generation.manifest.corpus.sources)
    if no_topic:
        logger.warning(
            "%s fit no topic: rebuild the map (%s) to place them as a topic of their own",
            counted(no_topic, "new paper"), rebuild,
        )  # fmt: skip
    if placed > REBUILD_SHARE:
        logger.warning(
            "more than %.0f%% of the papers were added after the last full build: their topics are the "
            "old ones; rebuild (%s) to lay out the map and find topics anew",
            100 * REBUILD_SHARE, rebuild,
        )  # fmt: skip
    return AddReport(folder, len(new), skipped, count + len(new), placed, 0.0, no_topic)


def _place(old: generations.Generation, vectors: np.ndarray) -> pd.DataFrame:
    """Map columns of new papers: position and topic from their nearest papers in the index."""
    table, topics = old.papers, old.clusters.to_pandas()
    coordinates = np.column_stack([_column(table, "x"), _column(table, "y")]).astype(np.float64)
    fine_labels = np.asarray(_column(table, "cluster"), dtype=np.int64)
    similarities, neighbours = old.faiss_index.search(
        np.ascontiguousarray(vectors, dtype=np.float32), min(TRUST_K, table.num_rows)
    )
    coords, fine, trust = place_by_neighbours(similarities, neighbours, coordinates, fine_labels)
    fine = np.where(_fits_topic(old, vectors, fine, fine_labels), fine, UNCLUSTERED)
    fine_topics, coarse_topics = (topics[topics["level"] == level] for level in ("fine", "coarse"))
    coarse_of = dict(zip(fine_topics["cluster"], fine_topics["parent"], strict=True))
    coarse = np.array([coarse_of.get(label, UNCLUSTERED) for label in fine], dtype=np.int64)
    names = {
        "fine": dict(zip(fine_topics["cluster"], fine_topics["name"], strict=True)),
        "coarse": dict(zip(coarse_topics["cluster"], coarse_topics["name"], strict=True)),
    }
    flags = {"placed": np.ones(len(vectors), dtype=bool), "outlying": np.zeros(len(vectors), dtype=bool)}
    placed = map_columns(coords, fine, coarse, names, trust, flags)
    return placed.assign(added=np.int64(time.time() * 1000))  # Unix milliseconds


def _fits_topic(old: generations.Generation, vectors: np.ndarray, fine: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Whether each new paper is as close to the centroid of the topic its neighbours give it as
    the build asked of the papers it drew in a topic (the manifest's "adopt_similarity")."""
    threshold = old.manifest.map.adopt_similarity
    fits = fine != UNCLUSTERED
    if threshold is None:  # an index built before papers were adopted: every placement stands
        return fits
    for label in set(fine[fits].tolist()):
        centroid = np.asarray(old.vectors[labels == label], dtype=np.float32).mean(axis=0)
        rows = fine == label
        fits[rows] = np.asarray(vectors[rows], dtype=np.float32) @ (centroid / np.linalg.norm(centroid)) >= threshold
    return fits


def _with_new_columns(table: pa.Table, new: pd.DataFrame) -> tuple[pa.Table, pa.Table]:
    """The index's papers and the new ones as tables of one schema: the columns either has (the
    corpus's own, and optional fields the index lacked), nulls where the other lacks them; a
    column of whole numbers in one and fractions in the other becomes float64."""
    core_names = [name for name in table.column_names if name in RESERVED]
    extras = new["extra"].tolist() if "extra" in new else [{} for _ in range(len(new))]
    own_new = {name: values_array([extra.get(name) for extra in extras]) for extra in extras for name in extra}
    for name in new.columns:  # an optional field (venue, doi…) the index lacked
        if name in RESERVED and name not in core_names and new[name].notna().any():
            values = pa.array(new[name], from_pandas=True)
            own_new[name] = values.cast(pa.int64()) if name == "year" else values
    own_old = table.drop_columns(core_names)
    merged = pa.unify_schemas([own_old.schema, pa.table(own_new).schema], promote_options="permissive")
    merged = pa.schema([item.with_type(pa.string()) if pa.types.is_null(item.type) else item for item in merged])
    added = [name for name in merged.names if name not in own_old.column_names]
    if added:
        logger.info("columns the index did not have, empty for its papers: %s", ", ".join(added))
    old_table = with_columns(table.select(core_names), own_old, merged)
    core = table.select(core_names).schema
    new_core = pa.Table.from_pandas(new.reindex(columns=core_names), schema=core, preserve_index=False)
    new_table = with_columns(new_core, pa.table(own_new), merged).cast(old_table.schema)
    return old_table, new_table


def _grown(
    old: generations.Generation, new: pd.DataFrame, vectors: np.ndarray, texts: list[str], inputs
) -> generations.Generation:
    """The next generation: the index's papers, vectors, keyword rows and FAISS index plus the new ones."""
    table = old.papers
    if "added" not in table.column_names:  # an index built before papers kept when they came: its build's time
        created = int(old.manifest.created_at.timestamp() * 1000)
        table = table.append_column("added", pa.array(np.full(table.num_rows, created, dtype=np.int64)))
    table, new_table = _with_new_columns(table, new)
    smoothed = None
    settings = old.manifest.settings
    if old.smoothed is not None and settings.smoothing is not None:  # the new papers' from their neighbours
        new_smoothed = smooth(vectors, old.vectors, old.faiss_index, settings.smoothing)
        smoothed = np.concatenate([np.asarray(old.smoothed), new_smoothed])
    old.faiss_index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    keyword = old.keyword.appended(old.keyword.transform(texts))
    count = old.papers.num_rows + len(new)
    fine = np.concatenate([_column(old.papers, "cluster"), new["cluster"].to_numpy()])
    coarse = np.concatenate([_column(old.papers, "coarse_cluster"), new["coarse_cluster"].to_numpy()])
    clusters = old.clusters.to_pandas()
    clusters["size"] = [
        int(((fine if level == "fine" else coarse) == label).sum())
        for level, label in zip(clusters["level"], clusters["cluster"], strict=True)
    ]
    placed = int(_column(old.papers, "placed").sum()) + len(new)
    return generations.Generation(
        old.manifest.grown(count, placed, [Path(p).name for p in inputs], len(new)),
        np.concatenate([np.asarray(old.vectors), vectors.astype(np.float32)]),
        old.faiss_index,
        [table, new_table],
        clusters,
        keyword,
        smoothed,
    )
