"""Build an index folder from corpus files: read and embed (an engine), then map, keyword index,
FAISS and manifest, written atomically by :mod:`paperscope.index.store`.

Log lines go to the ``paperscope`` logger (the command line prints them on stderr).
"""

from __future__ import annotations

import datetime
import functools
import logging
import shutil
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

from paperscope.embed.corpus import OPTIONAL_FIELDS, TEXT_RECIPE
from paperscope.embed.model import Encoder
from paperscope.errors import UserError, write_error
from paperscope.files import TEMPORARY_PREFIX, reserved_array
from paperscope.index import ann, locations, shards, store, topics
from paperscope.index.checkpoints import checkpoint
from paperscope.index.keyword import KeywordIndex
from paperscope.index.local_engine import LocalEngine
from paperscope.index.smoothing import smooth
from paperscope.options import (
    DEFAULT_MODES,
    ENGINES,
    LONG_TEXT_STRATEGIES,
    PRESETS,
    QUANTIZE_CHOICES,
    SMOOTHING,
    check_choice,
)

logger = logging.getLogger(__name__)


@dataclass
class BuildReport:
    """What a build did, for the CLI and the app to show."""

    folder: Path
    count: int
    embedded: int
    long_texts: int
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each stage


@contextmanager
def _stage(seconds: dict[str, float], name: str):
    checkpoint(name)
    start = time.perf_counter()
    yield
    seconds[name] = round(time.perf_counter() - start, 3)


def _versions() -> dict[str, str]:
    names = [
        "paperscope",
        "faiss-cpu",
        "numpy",
        "sentence-transformers",
        "torch",
        "transformers",
        "umap-learn",
        "scikit-learn",
        "pandas",
        "pyarrow",
    ]
    found = {}
    for name in names:
        with suppress(metadata.PackageNotFoundError):
            found[name] = metadata.version(name)
    return found


def quantization_fidelity(encoder, texts_of, vectors: np.ndarray, long_text: str, sample: int = 100) -> dict:
    """How close the int8 vectors are to fp32 ones, on a sample of the corpus: cosine, and the
    overlap of each sampled paper's 10 nearest neighbours within the sample. ``texts_of(rows)``
    gives the embedded texts of rows."""
    rows = np.sort(np.random.default_rng(0).choice(len(vectors), min(sample, len(vectors)), replace=False))
    reference = Encoder(encoder.path, onnx_dir=encoder.onnx_dir, window=encoder.window).encode(
        texts_of(rows), long_text=long_text
    )
    quantized = np.asarray(vectors[rows])
    cosines = (reference * quantized).sum(axis=1)
    return {
        "sample": len(rows),
        "cosine_mean": float(cosines.mean()),
        "cosine_min": float(cosines.min()),
        "top10_overlap": ann.neighbour_overlap(reference, quantized),
    }


def build_index(
    inputs: list[str | Path],
    output: str | Path,
    model_path: str | Path | None = None,
    long_text: str | None = None,
    fields: dict[str, str | None] | None = None,
    use_cache: bool = True,
    show_progress: bool | None = None,
    on_progress=None,
    faiss_factory: str | None = None,
    quantize: str | None = None,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    preset: str | None = None,
    smoothing: dict | None = SMOOTHING,
) -> BuildReport:
    """Read ``inputs``, embed them and write the index folder ``output`` atomically.

    ``fields`` overrides column names ({"id": …, "title": …, "abstract": …}); ``on_progress(fraction,
    stage)`` follows the whole build; ``show_progress`` draws a bar on stderr (default: when it is a
    terminal); ``faiss_factory`` overrides the automatic FAISS index choice (see :mod:`paperscope.index.ann`).
    ``preset`` is "fast" or "exact" (``paperscope.options.PRESETS``; default: "fast" from
    ``AUTO_FAST_PAPERS`` papers); instead of a preset, ``long_text`` ("mean" or "truncate") and
    ``quantize="int8"`` (the int8 ONNX model, its fidelity to fp32 recorded) can be given.
    ``smoothing`` ({"k": …, "weight": …}, or None for none) adds neighbour-smoothed vectors for
    hybrid ranking (:mod:`paperscope.index.smoothing`).
    ``engine="ray"`` reads and embeds on Ray Data (:mod:`paperscope.index.ray_engine`): a local Ray with
    ``workers`` CPUs, or the cluster at ``address``; it does not use the embedding cache.
    Raises :class:`paperscope.UserError` for bad input, in which case an existing index at ``output``
    is left as it was.
    """
    check_choice(engine, ENGINES, "engine")
    custom = {name: value for name, value in (("long_text", long_text), ("quantize", quantize)) if value is not None}
    if preset is not None:
        check_choice(preset, tuple(PRESETS), "preset")
        if custom:
            raise UserError("--preset sets --long-text and --quantize; give one or the others")
    if long_text is not None:
        check_choice(long_text, LONG_TEXT_STRATEGIES, "long-text strategy")
    if quantize is not None:
        check_choice(quantize, QUANTIZE_CHOICES, "quantization")
    if engine == "local" and (address or workers):
        raise UserError("--address and --workers go with --engine ray")
    if engine == "ray":
        from paperscope.index.ray_engine import RayEngine

        embedder = RayEngine(address, workers)
    else:
        embedder = LocalEngine(use_cache, sys.stderr.isatty() if show_progress is None else show_progress)
    on_progress = on_progress or (lambda fraction, stage: None)
    output = Path(output)
    Encoder(model_path)  # a bad model folder fails before anything is read
    try:
        report = _build(
            inputs, output, embedder, model_path, fields, preset, custom, faiss_factory, smoothing, on_progress
        )
    except OSError as exc:
        raise write_error(exc, output) or exc from None
    stages = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds.items())
    logger.info("index written to %s (%d papers; %s)", output, report.count, stages)
    return report


def _build(inputs, output, embedder, model_path, fields, preset, custom, faiss_factory, smoothing, on_progress):
    """Embed with ``embedder`` and finish the index, under the folder's lock."""
    with store.build_lock(output):  # lock before reading: a second build fails at once
        work = output / f"{TEMPORARY_PREFIX}shards-{uuid.uuid4().hex[:8]}"  # a killed build's: removed by the next
        work.mkdir()
        try:
            job = shards.EmbedJob(list(inputs), fields, model_path, preset, custom)
            embedded = embedder.embed(job, work, lambda fraction, stage: on_progress(0.05 + 0.75 * fraction, stage))
            report = _finish(embedded, inputs, output, work, job, faiss_factory, smoothing, on_progress)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return report


def _finish(
    embedded: shards.Embedded,
    inputs,
    output: Path,
    work: Path,
    job: shards.EmbedJob,
    faiss_factory: str | None,
    smoothing: dict | None,
    on_progress,
) -> BuildReport:
    """The stages every engine shares: map and clusters, keyword index, FAISS, manifest, write."""
    encoder, long_text, quantize = job.encoder, job.long_text, job.encoder.quantize
    encoder.release()  # the later stages need the memory, not the model
    seconds = dict(embedded.seconds)
    papers = shards.ShardSet(embedded.shards)
    ids, token_counts, filled, corpus_fingerprint = papers.summary()
    long_count = int((token_counts > encoder.max_tokens).sum())
    if long_count:
        action = "averaged over windows" if long_text == "mean" else "truncated to their first window"
        logger.info(
            "%d of %d texts are longer than the model's %d word pieces: %s (--long-text %s)",
            long_count,
            papers.count,
            encoder.max_tokens,
            action,
            long_text,
        )
    logger.info("embedded %d texts (%d from the cache)", embedded.embedded, papers.count - embedded.embedded)
    vectors = papers.vectors(work / "vectors.npy")
    logger.info("laying out the topic map and naming clusters")
    on_progress(0.8, "laying out the topic map")
    # int8's fidelity is measured (fp32 on a sample) while the map is laid out, mostly on one core:
    # a 300-paper first build 11.2 -> 10.7 s on two cores (medians of 3)
    with ThreadPoolExecutor(max_workers=1) as background, _stage(seconds, "map and clusters"):
        measuring = (
            background.submit(quantization_fidelity, encoder, papers.texts_of, vectors, long_text) if quantize else None
        )
        encode = functools.partial(encoder.encode, long_text=long_text)  # embeds candidate topic names
        per_paper, clusters, map_manifest = topics.topic_map(vectors, papers.texts_of, ids, encode)
        encoder.release()
        fidelity = measuring.result() if measuring else None
    if fidelity:
        logger.info(
            "int8 against fp32 on %d texts: cosine %.4f (min %.4f), top-10 overlap %.2f",
            fidelity["sample"],
            fidelity["cosine_mean"],
            fidelity["cosine_min"],
            fidelity["top10_overlap"],
        )
    logger.info(
        "%d clusters, %d papers unclustered; map trust %.2f (%s layout)",
        map_manifest["clusters"]["count"],
        map_manifest["clusters"]["unclustered"],
        map_manifest["map_trust"]["mean"],
        map_manifest["layout"]["method"],
    )
    with _stage(seconds, "keyword index"):
        keyword = KeywordIndex.fit(papers.texts(), papers.count)
    factory = ann.choose_factory(len(vectors), faiss_factory)
    on_progress(0.9, "building the search index")
    with _stage(seconds, "index"):  # last: its copy of the vectors is not held during the map
        faiss_index = ann.build_ann(vectors, factory)
        ann_quality = ann.tune(faiss_index, vectors)
    if factory != "Flat":
        logger.info("FAISS %s: recall@10 %.3f against exact search", factory, ann_quality["recall_at_10"])
    if smoothing:
        with _stage(seconds, "smoothing"):
            out = reserved_array(work / "smoothed.npy", vectors.shape)
            smooth(vectors, vectors, faiss_index, smoothing["k"], smoothing["weight"], np.arange(len(vectors)), out)
    manifest = {
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "count": papers.count,
        "dimension": int(vectors.shape[1]),
        "engine": embedded.engine,
        "model": {
            "name": encoder.name,
            "path": str(encoder.path),
            "fingerprint": encoder.fingerprint,
            "max_tokens": encoder.max_tokens,
            "backend": encoder.backend,
            "quantize": quantize,
            "window": encoder.window,
            **({"int8_fidelity": fidelity} if fidelity else {}),
        },
        "preset": job.choice,
        "text_recipe": TEXT_RECIPE,
        "long_text": {"strategy": long_text, "long_texts": long_count, "max_tokens": encoder.max_tokens},
        "corpus": {
            "fingerprint": corpus_fingerprint,
            "sources": [Path(p).name for p in inputs],
            "skipped": len(embedded.read_report.skipped),
            "duplicate_ids": len(embedded.read_report.duplicate_ids),
            "duplicate_abstracts": len(embedded.read_report.duplicate_abstracts),
        },
        "search": {
            "faiss": factory,
            **ann_quality,
            "metric": "cosine (inner product of normalised vectors)",
            "keyword": {"kind": "tf-idf", "terms": len(keyword.terms)},
            "smoothing": smoothing,
            **DEFAULT_MODES,
        },
        "map": map_manifest,
        "versions": _versions(),
        "build_seconds": dict(seconds),
    }
    on_progress(0.95, "writing the index")
    with _stage(seconds, "write"):
        kept = [name for name in shards.PAPER_COLUMNS if name not in OPTIONAL_FIELDS or name in filled]
        store.write_generation(
            output,
            store.Generation(
                manifest,
                vectors,
                faiss_index,
                shards.paper_tables(embedded.shards, kept, per_paper),
                clusters,
                keyword,
                out if smoothing else None,
            ),
        )
    on_progress(1.0, "done")
    return BuildReport(output, papers.count, embedded.embedded, long_count, seconds)


def sample_index(on_progress=None) -> Path:
    """The default index of the bundled NeurIPS 2025 sample, built on first use; returns its folder."""
    folder = locations.default_index_dir()
    if not store.is_current_format(folder):
        logger.info("first run of this version: building the bundled NeurIPS 2025 sample index at %s", folder)
        build_index(locations.bundled_corpus(), folder, on_progress=on_progress)
    return folder
