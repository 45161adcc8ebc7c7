"""Add papers to an existing index without rebuilding it: ``paperscope add FILES --index DIR``.

Only the new papers are embedded (with the index's model and preset, through the embedding
cache). They join the FAISS index; they are placed on the existing map at the weighted mean of
their nearest papers and join the topic most of those belong to (as a build places the papers
outside its layout sample); their keyword rows use the index's vocabulary and IDF. Papers whose
id or abstract the index already holds are reported and skipped. The result is written as a new
generation, atomically, under the folder's build lock: a killed ``add`` leaves the index as it was.

The layout, the topics and the vocabulary stay those of the last full build; once placed papers
are more than ``REBUILD_SHARE`` of the index, ``add`` says a full rebuild would serve it better.
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.corpus import Admission, abstract_key, admitted_papers, embedding_texts
from paperscope.errors import UserError, write_error
from paperscope.index import locations, store, topics
from paperscope.index.paper_index import PaperIndex
from paperscope.index.smoothing import smooth
from paperscope.options import UNCLUSTERED_NAME

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


def add_papers(
    inputs: list[str | Path], folder: str | Path, fields: dict | None = None, use_cache: bool = True
) -> AddReport:
    """Add the papers of ``inputs`` to the index at ``folder`` (see the module docstring)."""
    folder = Path(folder)
    begin = time.perf_counter()
    if not store.is_index(folder):
        raise UserError(f"{folder}: not a paperscope index; build one with: paperscope build FILES -o {folder}")
    try:
        return _add(inputs, folder, fields, use_cache, begin)
    except OSError as exc:
        raise write_error(exc, folder) or exc from None


def _add(inputs, folder: Path, fields, use_cache: bool, begin: float) -> AddReport:
    """:func:`add_papers` under the folder's lock."""
    with store.build_lock(folder):
        index = PaperIndex(folder, store.read_generation(folder, mapped=False))
        admission = Admission()
        sources = index.table.column("source").to_pylist()
        for paper_id, abstract, source in zip(
            index.table.column("id").to_pylist(), index.table.column("abstract").to_pylist(), sources, strict=True
        ):
            admission.know(source, paper_id, abstract_key(abstract))
        new = pd.DataFrame(list(admitted_papers(inputs, fields, admission)))
        report = admission.report
        skipped = len(report.skipped) + len(report.duplicate_ids) + len(report.duplicate_abstracts)
        for line in report.lines():
            logger.warning("skipped: %s", line)
        if new.empty:
            logger.info("no new papers in %s; the index is unchanged", ", ".join(Path(p).name for p in inputs))
            placed = float(np.mean(index.table.column("placed").to_numpy(zero_copy_only=False)))
            return AddReport(folder, 0, skipped, len(index), placed, time.perf_counter() - begin)
        texts = embedding_texts(new)
        encoder = index.encoder
        strategy = index.manifest["long_text"]["strategy"]
        cache = EmbeddingCache(locations.cache_dir(), encoder.vector_key, strategy) if use_cache else None
        vectors, fresh = encode_with_cache(encoder, texts, strategy, cache)
        if cache is not None:
            cache.flush()
        logger.info("embedded %d new papers (%d from the cache)", len(new), len(new) - fresh)
        new["tokens"] = encoder.count_tokens(texts)
        map_columns = _place(index, vectors)
        generation = _grown(index, new.join(map_columns), vectors, texts, inputs)
        store.write_generation(folder, generation)
    placed = generation.manifest["map"]["layout"]["placed_share"]
    logger.info(
        "added %d papers to %s (%d in all; %.0f%% placed on the map rather than laid out)",
        len(new),
        folder,
        len(index) + len(new),
        100 * placed,
    )
    if placed > REBUILD_SHARE:
        logger.warning(
            "more than %.0f%% of the papers were added after the last full build: their topics are the "
            "old ones; rebuild with `paperscope build` to lay out the map and find topics anew",
            100 * REBUILD_SHARE,
        )
    return AddReport(folder, len(new), skipped, len(index) + len(new), placed, time.perf_counter() - begin)


def _place(index: PaperIndex, vectors: np.ndarray) -> pd.DataFrame:
    """Map columns of new papers: position and topic from their nearest papers in the index."""
    fine = np.asarray(index.table.column("cluster").to_numpy(), dtype=np.int64)
    similarities, neighbours = index.faiss_index.search(
        np.ascontiguousarray(vectors, dtype=np.float32), min(topics.TRUST_K, len(index))
    )
    coords, labels, trust = topics.place_by_neighbours(similarities, neighbours, index.coordinates, fine)
    names = dict(zip(index.clusters["cluster"], index.clusters["name"], strict=True))
    coarse_of = dict(zip(index.clusters["cluster"], index.clusters["parent"], strict=True))
    coarse_names = dict(zip(index.coarse_clusters["cluster"], index.coarse_clusters["name"], strict=True))
    coarse = np.array([coarse_of.get(label, topics.UNCLUSTERED) for label in labels], dtype=np.int64)
    return pd.DataFrame(
        {
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": labels,
            "cluster_name": [names.get(label, UNCLUSTERED_NAME) for label in labels],
            "coarse_cluster": coarse,
            "coarse_name": [coarse_names.get(label, UNCLUSTERED_NAME) for label in coarse],
            "map_trust": trust,
            "placed": True,
        }
    )


def _grown(index: PaperIndex, new: pd.DataFrame, vectors: np.ndarray, texts: list[str], inputs) -> store.Generation:
    """The next generation: the index's papers, vectors, keyword rows and FAISS index plus the new ones."""
    schema = index.table.schema
    dropped = sorted(name for name in set(new.columns) - set(schema.names) if new[name].notna().any())
    if dropped:
        logger.info("fields the index does not have are left out: %s", ", ".join(dropped))
    new_table = pa.Table.from_pandas(new.reindex(columns=schema.names), schema=schema, preserve_index=False)
    smoothed = None
    if index.smoothed is not None:  # the new papers' from their neighbours; the others' stay as built
        settings = index.manifest["search"]["smoothing"]
        new_smoothed = smooth(vectors, index.vectors, index.faiss_index, settings["k"], settings["weight"])
        smoothed = np.concatenate([np.asarray(index.smoothed), new_smoothed])
    index.faiss_index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    keyword = index.keyword.appended(index.keyword.transform(texts))
    count = len(index) + len(new)
    fine = np.concatenate([index.table.column("cluster").to_numpy(), new["cluster"].to_numpy()])
    coarse = np.concatenate([index.table.column("coarse_cluster").to_numpy(), new["coarse_cluster"].to_numpy()])
    clusters = pd.concat([index.clusters, index.coarse_clusters], ignore_index=True)
    clusters["size"] = [
        int(((fine if level == "fine" else coarse) == label).sum())
        for level, label in zip(clusters["level"], clusters["cluster"], strict=True)
    ]
    placed = int(index.table.column("placed").to_numpy(zero_copy_only=False).sum()) + len(new)
    manifest = dict(index.manifest)
    manifest.pop("files", None)
    manifest["count"] = count
    manifest["corpus"] = {
        **manifest["corpus"],
        "sources": [*manifest["corpus"]["sources"], *[Path(p).name for p in inputs]],
        "added": [
            *manifest["corpus"].get("added", []),
            {
                "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "sources": [Path(p).name for p in inputs],
                "papers": len(new),
            },
        ],
    }
    manifest["map"] = {
        **manifest["map"],
        "layout": {**manifest["map"]["layout"], "placed": placed, "placed_share": placed / count},
    }
    return store.Generation(
        manifest,
        np.concatenate([np.asarray(index.vectors), vectors.astype(np.float32)]),
        index.faiss_index,
        [index.table, new_table],
        clusters,
        keyword,
        smoothed,
    )
