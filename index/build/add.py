"""Add papers to an existing index without rebuilding it: ``paperscope add FILES --index DIR``.

Only the new papers are embedded (with the index's model and preset, through the embedding
cache). They join the FAISS index; they are placed on the existing map at the weighted mean of
their nearest papers and join the topic most of those belong to (as a build places the papers
outside its layout sample); their keyword rows use the index's vocabulary and IDF. A record of a
paper the index holds (by id) whose title, abstract or ``version`` changed (a new arXiv version)
replaces that paper's text, vector, keyword row, smoothed vector and map place in its row, keeping
its id and when it came; one whose ``status`` is withdrawn, deleted or retracted marks the paper
(its ``status`` column: it stays findable, and lookups show it); the same paper again, or a new id
with an abstract the index holds, is reported and skipped. The result is written as a new
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
from paperscope.embed.readers import Reading, iter_records
from paperscope.embed.readers.admission import GONE, Admission, abstract_key, paper_row
from paperscope.embed.text import counted, embedding_texts
from paperscope.errors import UserError, write_error
from paperscope.index.build.shards import with_columns
from paperscope.index.common.smoothed import SmoothedVectors, smoothed
from paperscope.index.search.encoding import QueryEncoder
from paperscope.index.search.nearest import other_rows
from paperscope.index.search.placement import TRUST_K, place_by_neighbours
from paperscope.index.store import generations, maps
from paperscope.index.store.manifest import Origin
from paperscope.index.topics.topic_map import map_columns
from paperscope.limits import READ_WORKERS
from paperscope.settings import UNCLUSTERED, Fields

if TYPE_CHECKING:
    from paperscope.embed.model import Encoder

logger = logging.getLogger(__name__)

# Above this share of papers placed rather than laid out, new topics may have formed that no
# existing cluster holds: suggest a full rebuild.
REBUILD_SHARE = 0.2
MAX_PARTS = 1000  # record batches of the papers' table above which an add writes it as one again


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
    replaced: int = 0  # papers whose text a new version replaced
    marked: int = 0  # papers marked withdrawn, deleted or retracted


@dataclass
class _Arrivals:
    """What the records of an ``add`` bring: papers the index lacks (``new``), new texts of papers
    it holds (``replaced``, for its sorted ``rows``), statuses to mark ({row: status}), and how many
    records were skipped."""

    new: pd.DataFrame
    replaced: pd.DataFrame
    rows: np.ndarray
    marks: dict[int, str]
    skipped: int


def add_papers(
    inputs: list[str | Path],
    folder: str | Path,
    fields: Fields | None = None,
    use_cache: bool = True,
    *,
    on_stage: Callable[[str], None] | None = None,
    origins: tuple[Origin, ...] | None = None,
) -> AddReport:
    """Add the papers of ``inputs`` to the index at ``folder`` (see the module docstring), embedded
    as the index was; ``fields`` names the columns of ``inputs``; ``use_cache``: reuse vectors of
    texts embedded before. ``on_stage("commit")`` is called once the new generation is on disk,
    complete, and not yet current (as in :func:`~paperscope.index.build.pipeline.build_index`).
    ``origins``: the sources the index follows from now on (an update's new watermarks), written
    in the same generation as the papers (None: as they were); a generation is written for them
    even when no paper changed."""
    folder = Path(folder)
    begin = time.perf_counter()
    if not generations.is_index(folder):
        raise UserError(f"{folder}: not a paperscope index; build one with: {generations.build_command(folder)}")
    try:
        with generations.build_lock(folder):
            report = _add(inputs, folder, fields or Fields(), use_cache, on_stage, origins)
    except OSError as exc:
        raise write_error(exc, folder) or exc from None
    report.seconds = time.perf_counter() - begin
    return report


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A column of the papers' table; "placed" of an index from before it was kept: none placed."""
    if name == "placed" and name not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    return table.column(name).to_numpy(zero_copy_only=False)


def _arrivals(old: generations.Generation, inputs, fields: Fields) -> _Arrivals:
    """What the records of ``inputs`` bring to the index (see :class:`_Arrivals`); of several
    records of one paper it holds, the last (a fetch writes the newest last)."""
    table = old.papers
    own = {item.name: kind_of(item.type) for item in table.schema if item.name not in RESERVED}
    known = CorpusColumns({name: kind for name, kind in own.items() if kind})
    admission = Admission(Reading(known, workers=READ_WORKERS))
    overrides, reading = fields.overrides(), admission.reading
    papers = [paper_row(record) for path in inputs for record in iter_records(path, overrides, reading=reading)]
    held: dict[int, dict] = {}  # row → the last record of a paper the index holds
    new = []
    for paper, row in zip(papers, _rows_of(table, [paper["id"] for paper in papers]).tolist(), strict=True):
        if row >= 0:
            held[row] = paper
        elif admission.admit(
            paper["source"], paper["id"], abstract_key(paper["abstract"]), len(paper["abstract"]),
            paper["extra"].get("status"),
        ):  # fmt: skip
            new.append(paper)
    again = _abstracts_held(table, new)
    arrivals = _changes(table, held, pd.DataFrame([paper for paper, seen in zip(new, again, strict=True) if not seen]))
    admission.report.known += arrivals.skipped + int(again.sum())
    for line in admission.report.lines():
        logger.warning("skipped: %s", line)
    arrivals.skipped = admission.report.dropped()
    return arrivals


def _rows_of(table: pa.Table, ids: list[str]) -> np.ndarray:
    """The row of each of ``ids`` in the index's papers, -1 where it has none: looked up in Arrow,
    not in a dict of every id (700,000 papers: 0.8 s)."""
    import pyarrow.compute as pc

    column = table.column("id")
    found = pc.index_in(pa.array(ids, pa.string()).cast(column.type), value_set=column.combine_chunks())
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _abstracts_held(table: pa.Table, papers: list[dict]) -> np.ndarray:
    """Whether each of ``papers`` (new ids) has an abstract a paper of the index has, up to case:
    counted as that paper again. The index's abstracts are looked up among the few new ones in
    Arrow, a part of the table at a time, not hashed a paper at a time (700,000 papers: 5 s -> 2)."""
    import pyarrow.compute as pc

    wanted = pc.utf8_lower(pa.array([paper["abstract"] for paper in papers], pa.string()))
    found: set[str] = set()
    for chunk in table.column("abstract").chunks if papers else ():
        lowered = pc.utf8_lower(chunk)
        found.update(lowered.filter(pc.is_in(lowered, value_set=wanted)).to_pylist())
    return np.array([text in found for text in wanted.to_pylist()], dtype=bool)


def _changes(table: pa.Table, held: dict[int, dict], new: pd.DataFrame) -> _Arrivals:
    """The arrivals of ``new`` papers and of records ``held`` of papers the index holds (by row):
    a status in admission.GONE that the paper lacks marks it; a changed title, abstract or version replaces
    its text; anything else is the same paper again (counted as skipped)."""
    rows = sorted(held)

    def before(name: str) -> list:  # a value at a time: a take of the mapped table copied it whole (700,000: 1.2 s)
        column = table.column(name) if name in table.column_names else None
        return [column[row].as_py() for row in rows] if column is not None else [None] * len(rows)

    replaced, replaced_rows, marks, same = [], [], {}, 0
    for row, paper, title, abstract, status, version in zip(
        rows, (held[row] for row in rows), before("title"), before("abstract"), before("status"), before("version"),
        strict=True,
    ):  # fmt: skip
        extra = paper["extra"]
        if extra.get("status") in GONE:
            if extra["status"] == status:
                same += 1
            else:
                marks[row] = extra["status"]
        elif paper["abstract"] and (
            (paper["title"], paper["abstract"]) != (title, abstract) or extra.get("version", version) != version
        ):
            replaced.append(paper)
            replaced_rows.append(row)
        else:
            same += 1
    return _Arrivals(new, pd.DataFrame(replaced), np.array(replaced_rows, dtype=np.int64), marks, same)


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


def _add(inputs, folder: Path, fields: Fields, use_cache: bool, on_stage, origins) -> AddReport:
    """:func:`add_papers` under the folder's lock."""
    old = generations.read_generation(folder, mapped=False)
    count = old.papers.num_rows
    arrivals = _arrivals(old, inputs, fields)
    changed = pd.concat([arrivals.replaced, arrivals.new], ignore_index=True)
    if changed.empty and not arrivals.marks and origins is None:
        logger.info("no new papers in %s; the index is unchanged", ", ".join(Path(p).name for p in inputs))
        return AddReport(folder, 0, arrivals.skipped, count, float(np.mean(_column(old.papers, "placed"))), 0.0)
    texts, vectors = [], np.empty((0, old.manifest.dimension), dtype=np.float32)
    neighbours = (np.empty((0, TRUST_K), np.float32), np.empty((0, TRUST_K), np.int64))
    if not changed.empty:
        texts = embedding_texts(changed)
        vectors, fresh, encoder = _embed(old, texts, use_cache)
        logger.info("embedded %s (%d from the cache)", counted(len(changed), "paper"), len(changed) - fresh)
        changed["tokens"] = encoder.count_tokens(texts)
        neighbours = _nearest(old, vectors)
        changed = changed.join(_place(old, vectors, *neighbours))
    generation = _grown(old, changed, arrivals, vectors, texts, inputs, origins, neighbours[1])
    written = generations.write_generation(folder, generation, on_stage=on_stage)
    maps.carry_caches(folder, old.name or "", written.name)  # the same texts laid out: what a remap kept holds
    added, replaced, marked = len(arrivals.new), len(arrivals.replaced), len(arrivals.marks)
    placed = generation.manifest.map.placed_share
    logger.info(
        "added %s, replaced %s, marked %s in %s (%d in all; %.0f%% placed on the map rather than laid out)",
        counted(added, "paper"), counted(replaced, "text"), counted(marked, "paper"), folder, count + added,
        100 * placed,
    )  # fmt: skip
    no_topic = int((changed["cluster"].to_numpy() == UNCLUSTERED).sum()) if not changed.empty else 0
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
    return AddReport(folder, added, arrivals.skipped, count + added, placed, 0.0, no_topic, replaced, marked)


def _nearest(old: generations.Generation, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The nearest papers of the index to each of ``vectors`` and their similarities, best first:
    as many as the map's placement and the smoothing ask, in one search for both."""
    smoothing = old.manifest.settings.smoothing
    count = min(max(TRUST_K, smoothing.k + 1 if smoothing else 0), old.papers.num_rows)  # + a new version's old self
    return old.faiss_index.search(np.ascontiguousarray(vectors, dtype=np.float32), count)


def _place(old: generations.Generation, vectors: np.ndarray, similarities, neighbours) -> pd.DataFrame:
    """Map columns of new papers: position and topic from their nearest papers in the index
    (``similarities`` and ``neighbours``, :func:`_nearest`'s)."""
    table, topics = old.papers, old.clusters.to_pandas()
    coordinates = np.column_stack([_column(table, "x"), _column(table, "y")]).astype(np.float64)
    fine_labels = np.asarray(_column(table, "cluster"), dtype=np.int64)
    trusted = min(TRUST_K, table.num_rows)
    coords, fine, trust = place_by_neighbours(
        similarities[:, :trusted], neighbours[:, :trusted], coordinates, fine_labels
    )
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
    names = dict.fromkeys(name for extra in extras for name in extra)  # each once: not once a paper
    own_new = {name: values_array([extra.get(name) for extra in extras]) for name in names}
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
    old: generations.Generation,
    changed: pd.DataFrame,
    arrivals: _Arrivals,
    vectors: np.ndarray,
    texts: list[str],
    inputs,
    origins: tuple[Origin, ...] | None,
    neighbours: np.ndarray,
) -> generations.Generation:
    """The next generation: the index's papers, vectors, keyword rows and FAISS index with the
    ``changed`` papers (the replaced ones first, in their ``arrivals.rows``, then the new ones
    appended; ``vectors``, ``texts`` and nearest papers of the index theirs) and the marks."""
    table, rows, count = old.papers, arrivals.rows, old.papers.num_rows
    if "added" not in table.column_names:  # an index built before papers kept when they came: its build's time
        created = int(old.manifest.created_at.timestamp() * 1000)
        table = table.append_column("added", pa.array(np.full(table.num_rows, created, dtype=np.int64)))
    if len(rows):  # a new version came now, the paper before: its first arrival stays
        changed.loc[: len(rows) - 1, "added"] = _column(table, "added")[rows]
    papers = _spliced_papers(*_with_new_columns(table, changed), rows) if not changed.empty else table
    if arrivals.marks:
        papers = _marked(papers, arrivals.marks)
    at = np.concatenate([rows, count + np.arange(len(arrivals.new))])
    faiss_index, all_vectors = _with_vectors(old, rows, vectors.astype(np.float32, copy=False))
    smoothed = _smoothed(old, rows, at, all_vectors, neighbours)
    keyword = old.keyword.with_rows(at, old.keyword.transform(texts)) if len(at) else old.keyword
    fine, coarse = _column(papers, "cluster"), _column(papers, "coarse_cluster")
    clusters = old.clusters.to_pandas()
    sizes = {level: dict(zip(*np.unique(labels, return_counts=True), strict=True))
             for level, labels in (("fine", fine), ("coarse", coarse))}  # fmt: skip
    clusters["size"] = [
        int(sizes[level].get(label, 0)) for level, label in zip(clusters["level"], clusters["cluster"], strict=True)
    ]
    was_placed = _column(old.papers, "placed")  # the old papers' (an index from before it was kept: none)
    placed = int(was_placed.sum() - was_placed[rows].sum()) + len(rows) + len(arrivals.new)  # each new text placed
    manifest = old.manifest.grown(
        papers.num_rows, placed, list(generations.recorded_sources(inputs)), len(arrivals.new),
        replaced=len(rows), marked=len(arrivals.marks), origins=origins,
    )  # fmt: skip
    return generations.Generation(manifest, all_vectors, faiss_index, papers, clusters, keyword, smoothed)


def _smoothed(old: generations.Generation, rows: np.ndarray, at: np.ndarray, vectors: np.ndarray, neighbours):
    """The next generation's smoothed vectors: the changed papers' (at rows ``at``, the replaced
    ``rows`` first) made from their ``neighbours`` in the index (:func:`_nearest`'s, a new
    version's old self left out), the others' kept; over the next generation's ``vectors``."""
    smoothing = old.manifest.settings.smoothing
    if old.smoothed is None or smoothing is None:
        return None
    own = np.concatenate([rows, np.full(len(at) - len(rows), -1)])
    near = other_rows(neighbours, own, min(smoothing.k, neighbours.shape[1]))
    if isinstance(old.smoothed, SmoothedVectors):
        kept = np.asarray(old.smoothed.neighbours)
        grown = np.concatenate([kept, np.zeros((len(at) - len(rows), kept.shape[1]), kept.dtype)])
        grown[at] = near[:, : kept.shape[1]]
        return SmoothedVectors(vectors, grown, smoothing.weight)
    grown = np.concatenate([np.asarray(old.smoothed), np.zeros((len(at) - len(rows), vectors.shape[1]), np.float32)])
    grown[at] = smoothed(vectors[at], vectors[near], smoothing.weight)  # an index that kept the vectors themselves
    return grown


def _spliced_papers(table: pa.Table, changed: pa.Table, rows: np.ndarray) -> pa.Table:
    """The index's papers ``table`` with its ``rows`` replaced by the first of ``changed`` and the
    rest of ``changed`` after: slices, not copies (700,000 papers: a take of 3 s). Once the parts
    pass ``MAX_PARTS``, they are made one (a copy, every few dozen updates)."""
    parts, begin = [], 0
    for number, row in enumerate(rows.tolist()):
        parts += [table.slice(begin, row - begin), changed.slice(number, 1)]
        begin = row + 1
    papers = pa.concat_tables([*parts, table.slice(begin), changed.slice(len(rows))])
    return papers.combine_chunks() if papers.column(0).num_chunks > MAX_PARTS else papers


def _marked(papers: pa.Table, marks: dict[int, str]) -> pa.Table:
    """``papers`` with the ``status`` of the rows ``marks`` names set ({row: status})."""
    status = (
        papers.column("status").to_numpy(zero_copy_only=False).astype(object)
        if "status" in papers.column_names
        else np.full(papers.num_rows, None, dtype=object)
    )
    status[list(marks)] = list(marks.values())
    column = pa.array(status, pa.string())
    if "status" in papers.column_names:
        return papers.set_column(papers.column_names.index("status"), "status", column)
    return papers.append_column("status", column)


def _with_vectors(old: generations.Generation, rows: np.ndarray, vectors: np.ndarray) -> tuple[object, np.ndarray]:
    """The FAISS index and the vectors of the next generation: the index's own with its ``rows``
    replaced by the first of ``vectors`` and the rest after. A flat index or an HNSW graph's flat
    storage has the rows overwritten in place and the rest added (HNSW keeps the links the old
    texts had: a new version's text is close to the old one's, and the next full build links anew),
    and the vectors are that storage, not a copy (700,000 papers: 1.1 GB not copied again): the old
    generation's vectors, a view of the same storage, are not to be read after;
    any other kind of index is built again from the vectors (or added to, when no row is replaced)."""
    from paperscope.index.build.ann import build_ann

    faiss_index = old.faiss_index
    stored = generations.flat_vectors(faiss_index, writeable=True)
    if stored is None:
        all_vectors = np.concatenate([np.asarray(old.vectors), vectors[len(rows) :]])
        all_vectors[rows] = vectors[: len(rows)]
        if len(rows):
            return build_ann(all_vectors, old.manifest.search.faiss), all_vectors
        faiss_index.add(np.ascontiguousarray(vectors))
        return faiss_index, all_vectors
    stored[rows] = vectors[: len(rows)]
    del stored  # adding may move the storage
    faiss_index.add(np.ascontiguousarray(vectors[len(rows) :]))
    grown = generations.flat_vectors(faiss_index)
    assert grown is not None  # a flat storage stays one
    return faiss_index, grown
