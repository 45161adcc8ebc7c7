"""Build an index folder from corpus files: read and embed (an engine), then map, keyword index,
FAISS and manifest, written atomically by :mod:`paperscope.index.store.generations`.

Log lines go to the ``paperscope`` logger (the command line prints them on stderr). One encoder
per build: the engine makes it once the preset is settled (:meth:`shards.EmbedJob.settle`), and
the same object embeds the papers, names the topics and describes the model in the manifest.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from paperscope import locations
from paperscope.embed.columns import OPTIONAL_FIELDS
from paperscope.embed.model import model_folder
from paperscope.embed.text import TEXT_RECIPE, counted
from paperscope.errors import UserError, write_error
from paperscope.files import TEMPORARY_PREFIX
from paperscope.index.build import ann, shards
from paperscope.index.build.keyword_fit import fit_keyword_index
from paperscope.index.build.local_engine import LocalEngine
from paperscope.index.build.smoothing import smoothing_neighbours
from paperscope.index.common.smoothed import SmoothedVectors
from paperscope.index.store import generations, maps
from paperscope.index.store.manifest import (
    CorpusInfo,
    Fidelity,
    LongTextInfo,
    Manifest,
    MapInfo,
    ModelInfo,
    Origin,
    PresetInfo,
    SearchInfo,
)  # fmt: skip
from paperscope.index.topics import topic_map
from paperscope.index.topics.remap_cache import VECTORS, NameVectors
from paperscope.settings import DEFAULT_MODES, BuildSettings

logger = logging.getLogger(__name__)


@dataclass
class BuildReport:
    """What a build did, for the CLI and the app to show."""

    folder: Path
    count: int
    embedded: int
    long_texts: int
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each stage


@dataclass
class _Stages:
    """The stages of a build after embedding: ``on_stage(name)`` as each starts, its wall time in ``seconds``."""

    on_stage: Callable[[str], None]
    seconds: dict[str, float]

    @contextmanager
    def stage(self, name: str):
        """Run the stage ``name``: say it starts, then time it."""
        self.on_stage(name)
        start = time.perf_counter()
        yield
        self.seconds[name] = round(time.perf_counter() - start, 3)


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
    return {**found, generations.CODE_VERSION: generations.code_digest()}


def fidelity_sample(count: int, sample: int = 100) -> np.ndarray:
    """The sorted rows of a corpus of ``count`` papers on which int8 is measured against fp32."""
    return np.sort(np.random.default_rng(0).choice(count, min(sample, count), replace=False))


def quantization_fidelity(encoder, texts: list[str], quantized: np.ndarray, long_text: str) -> Fidelity:
    """How close the int8 vectors ``quantized`` of ``texts`` (a sample of the corpus, see
    :func:`fidelity_sample`) are to the fp32 ones of the same model: cosine, and the overlap of
    each sampled paper's 10 nearest neighbours within the sample."""
    reference = encoder.unquantized().encode(texts, long_text=long_text)
    quantized = np.asarray(quantized)
    cosines = (reference * quantized).sum(axis=1)
    return {
        "sample": len(texts),
        "cosine_mean": float(cosines.mean()),
        "cosine_min": float(cosines.min()),
        "top10_overlap": ann.neighbour_overlap(reference, quantized),
    }


def build_index(
    inputs: Sequence[str | Path],
    output: str | Path,
    settings: BuildSettings | None = None,
    *,
    on_progress=None,
    show_progress: bool | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> BuildReport:
    """Read ``inputs``, embed them and write the index folder ``output`` atomically, as
    ``settings`` say (default: :class:`~paperscope.settings.BuildSettings`).

    ``on_progress(fraction, stage)`` follows the whole build; ``show_progress`` draws a bar on
    stderr (default: when it is a terminal). ``on_stage(name)`` is called as each stage starts, in
    this order: "read", "embed", "map and clusters", "keyword index", "index", "smoothing" (when
    the build smooths), "write" (the names of :attr:`BuildReport.seconds`), then "commit": the new
    generation is on disk, complete, and not yet current. Raises :class:`paperscope.UserError` for
    bad input, in which case an existing index at ``output`` is left as it was.
    """
    settings = _with_earlier_seeds(settings or BuildSettings(), Path(output))
    if settings.engine == "ray":
        from paperscope.index.build.ray_engine import RayEngine

        embedder: shards.Engine = RayEngine(settings.address, settings.workers)
    else:
        embedder = LocalEngine(settings.use_cache, sys.stderr.isatty() if show_progress is None else show_progress)
    on_progress = on_progress or (lambda fraction, stage: None)
    output = Path(output)
    model_folder(settings.model_path)  # a bad model folder fails before anything is read
    job = shards.EmbedJob([Path(path) for path in inputs], settings)
    if on_stage is not None:
        job.on_stage = on_stage
    try:
        with generations.build_lock(output):  # lock before reading: a second build fails at once
            report = _build(job, output, embedder, on_progress)
    except OSError as exc:
        raise write_error(exc, output) or exc from None
    stages = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.seconds.items())
    logger.info("index written to %s (%d papers; %s)", output, report.count, stages)
    return report


def check_output(output: str | Path, with_files: bool, force: bool = False) -> None:
    """Refuse, before any work, a build into ``output`` that would replace what a user has, unless
    ``force``: a folder that is not an index (an empty one is fine), or, for a build of the bundled
    sample (``with_files`` False), an index of other files. (A file there is the command line's
    ``-o`` type's to refuse, as it parses.)"""
    output = Path(output)
    if force or not output.is_dir():
        return
    if not generations.holds_index(output) and any(output.iterdir()):
        raise UserError(
            f"{output}: a folder that is not a paperscope index; build into a new or empty folder, "
            "or give --force to build into this one"
        )
    if with_files or not generations.is_index(output):
        return
    sources, count = generations.built_from(output)
    if sources != generations.sample_names():
        held = f"an index of {count:,} papers" if count is not None else "an index"
        of = "whose files its manifest does not name"
        if sources:  # None: a manifest of another format, which names no files
            of = "of " + ", ".join(sources[:3]) + (f" and {len(sources) - 3} more files" if len(sources) > 3 else "")
        raise UserError(
            f"{output}: holds {held} {of}, not the bundled sample; rebuild it from them "
            f"({generations.build_command(output, sources)}), or give --force to build the sample there"
        )


def _with_earlier_seeds(settings: BuildSettings, output: Path) -> BuildSettings:
    """``settings`` with the seed topics of the index being rebuilt at ``output`` when they name
    none (``seeds`` None): seed topics, like curations, survive a rebuild."""
    if settings.seeds is not None or not generations.is_index(output):
        return settings
    try:
        earlier = generations.read_manifest(output).settings.seeds
    except (UserError, TypeError):  # an index of an older format: no seeds kept
        return settings
    if earlier and earlier.topics:
        logger.info(
            "seed topics of the earlier build kept: %d from %s (--topics-from none drops them)",
            len(earlier.topics), earlier.source or "a file",
        )  # fmt: skip
    return dataclasses.replace(settings, seeds=earlier)


def _build(job: shards.EmbedJob, output: Path, embedder: shards.Engine, on_progress) -> BuildReport:
    """Embed ``job`` with ``embedder`` and finish the index (under the folder's lock), in a work
    folder of shards that a killed build leaves for the next one to remove."""
    work = output / f"{TEMPORARY_PREFIX}shards-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    try:
        embedded = embedder.embed(job, work, lambda fraction, stage: on_progress(0.05 + 0.75 * fraction, stage))
        return _finish(embedded, output, work, job, on_progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def first_seen(folder: Path, ids: list[str]) -> np.ndarray:
    """When each paper first came into the index at ``folder`` (Unix milliseconds, for the feed of
    new papers): as the current generation says for a paper it holds, else now. A rebuild keeps them."""
    stamp = int(time.time() * 1000)
    if not generations.is_index(folder):
        return np.full(len(ids), stamp, dtype=np.int64)
    try:
        known = generations.read_generation(folder).papers.select(["id", "added"]).to_pandas()
    except (UserError, KeyError):  # an index of an older format or without the column: all of it new
        return np.full(len(ids), stamp, dtype=np.int64)
    added = pd.Series(known["added"].to_numpy(), index=known["id"].to_numpy())
    return pd.Series(ids).map(added).fillna(stamp).to_numpy(dtype=np.int64)


def origins_of(inputs: Sequence[str | Path]) -> tuple[Origin, ...]:
    """The sources the files ``inputs`` were fetched from: each file whose fetch state
    (``FILE.fetch.json``, :func:`paperscope.sources.read_state`) says it is complete."""
    from paperscope.sources import read_state  # a build of plain files imports none of the clients

    origins = []
    for path in inputs:
        state = read_state(Path(path))
        if state is not None and state.complete:
            origins.append(Origin(state.query, state.watermark, state.updated_at, Path(path).name))
    return tuple(origins)


def _log_long_texts(count: int, total: int, max_tokens: int, long_text: str) -> None:
    if count:
        action = "averaged over windows" if long_text == "mean" else "truncated to their first window"
        logger.info(
            "%d of %d texts are longer than the model's %d word pieces: %s (--long-text %s)",
            count, total, max_tokens, action, long_text,
        )  # fmt: skip


def _map_and_fidelity(job: shards.EmbedJob, papers: shards.ShardSet, read: shards.ReadBack, stages: _Stages):
    """The topic map (per-paper columns, topics, manifest section), for an int8 build its
    fidelity to fp32, measured on a sample (whose texts ``read`` holds) in a background thread
    while the map is laid out (mostly on one core: a 300-paper first build 11.2 -> 10.7 s on two
    cores, medians of 3), and what a remap need not find again ({kind: arrays}: the candidate
    terms and names' vectors, :mod:`paperscope.index.topics.remap_cache`)."""
    encoder, long_text, vectors = job.settled_encoder, job.long_text, read.vectors
    with ThreadPoolExecutor(max_workers=1) as background, stages.stage("map and clusters"):
        measuring = None
        if encoder.quantize:
            quantized = vectors[read.rows]
            measuring = background.submit(quantization_fidelity, encoder, read.texts, quantized, long_text)
        names = NameVectors(functools.partial(encoder.encode, long_text=long_text))  # embeds candidate topic names
        kept: dict[str, dict[str, np.ndarray]] = {}
        per_paper, clusters, map_sections = topic_map.topic_map(
            vectors, papers.texts_of, read.ids, names, job.settings.topics, seeds=job.settings.seeds,
            cache=(None, kept.__setitem__),
        )  # fmt: skip
        if (arrays := names.arrays()) is not None:
            kept[VECTORS] = arrays
        encoder.release()
        fidelity = measuring.result() if measuring else None
    map_info = MapInfo(**map_sections)
    if fidelity:
        logger.info(
            "int8 against fp32 on %d texts: cosine %.4f (min %.4f), top-10 overlap %.2f",
            fidelity["sample"], fidelity["cosine_mean"], fidelity["cosine_min"], fidelity["top10_overlap"],
        )  # fmt: skip
    logger.info(
        "%d clusters, %d papers unclustered; map trust %.2f (%s layout)",
        map_info.cluster_count, map_info.unclustered, map_info.trust, map_info.method,
    )  # fmt: skip
    return per_paper, clusters, map_info, fidelity, kept


def _search_side(vectors, papers: shards.ShardSet, settings: BuildSettings, work: Path, stages: _Stages) -> tuple:
    """The keyword index, the FAISS index, the manifest's search section (with the index's measured
    quality) and the smoothed vectors (or None)."""
    with stages.stage("keyword index"):  # reads the texts once more, streamed: all of them are not held
        keyword = fit_keyword_index(papers.texts(), papers.count)
    factory = ann.choose_factory(len(vectors), settings.faiss_factory)
    with stages.stage("index"):  # last: its copy of the vectors is not held during the map
        faiss_index = ann.build_ann(vectors, factory)
        tuning = ann.tune(faiss_index, vectors)
    if factory != "Flat":
        logger.info("FAISS %s: recall@10 %.3f against exact search", factory, tuning["recall_at_10"])
    smoothed = None
    if settings.smoothing:
        with stages.stage("smoothing"):
            neighbours = smoothing_neighbours(vectors, faiss_index, settings.smoothing.k)
            smoothed = SmoothedVectors(vectors, neighbours, settings.smoothing.weight)
    return (
        keyword,
        faiss_index,
        SearchInfo(
            faiss=factory,
            **tuning,
            keyword={"kind": "tf-idf", "terms": len(keyword.terms)},
            smoothing=settings.smoothing,
            **DEFAULT_MODES,
        ),
        smoothed,
    )


def _finish(embedded: shards.Embedded, output: Path, work: Path, job: shards.EmbedJob, on_progress) -> BuildReport:
    """The stages every engine shares: map and clusters, keyword index, FAISS, manifest, write."""
    encoder, settings = job.settled_encoder, job.settings
    encoder.release()  # the later stages need the memory, not the model
    stages = _Stages(job.on_stage, dict(embedded.seconds))
    seconds = stages.seconds
    papers = shards.ShardSet(embedded.shards)
    sample = fidelity_sample(papers.count) if encoder.quantize else np.array([], dtype=np.int64)
    read = papers.read_back(work / "vectors.npy", sample)  # the one read of the shards before the map
    vectors = read.vectors
    long_count = int((read.tokens > encoder.max_tokens).sum())
    _log_long_texts(long_count, papers.count, encoder.max_tokens, job.long_text)
    logger.info("embedded %s (%d from the cache)", counted(embedded.embedded, "text"), papers.count - embedded.embedded)
    logger.info("laying out the topic map and naming clusters")
    on_progress(0.8, "laying out the topic map")
    per_paper, clusters, map_info, fidelity, for_remap = _map_and_fidelity(job, papers, read, stages)
    per_paper["added"] = first_seen(output, read.ids)
    on_progress(0.9, "building the search index")
    keyword, faiss_index, search_info, smoothed = _search_side(vectors, papers, settings, work, stages)
    manifest = Manifest(
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        count=papers.count,
        dimension=int(vectors.shape[1]),
        engine=embedded.engine,
        settings=settings,
        model=ModelInfo(
            encoder.name, str(encoder.path), encoder.fingerprint, encoder.max_tokens, encoder.backend,
            encoder.quantize, encoder.window, fidelity,
        ),
        preset=PresetInfo(**job.choice),
        text_recipe=TEXT_RECIPE,
        long_text=LongTextInfo(job.long_text, long_count, encoder.max_tokens),
        corpus=CorpusInfo(
            read.fingerprint, generations.recorded_sources(job.inputs), len(embedded.read_report.skipped),
            len(embedded.read_report.duplicate_ids), len(embedded.read_report.duplicate_abstracts),
        ),
        search=search_info,
        map=map_info,
        origins=origins_of(job.inputs),
        versions=_versions(),
        build_seconds=dict(seconds),
    )  # fmt: skip
    on_progress(0.95, "writing the index")
    with stages.stage("write"):
        kept = [name for name in shards.PAPER_COLUMNS if name not in OPTIONAL_FIELDS or name in read.filled]
        tables = shards.paper_tables(embedded.shards, kept, per_paper)
        generation = generations.Generation(manifest, vectors, faiss_index, tables, clusters, keyword, smoothed)
        written = generations.write_generation(output, generation, on_stage=job.on_stage)
        for kind, arrays in for_remap.items():  # beside it: the first remap finds them
            maps.write_cache(output, written.name, kind, arrays)
    on_progress(1.0, "done")
    return BuildReport(output, papers.count, embedded.embedded, long_count, seconds)


def sample_index(on_progress=None) -> Path:
    """The default index of the bundled NeurIPS 2025 sample, built on first use and again after an update
    that changes what an index holds (:func:`generations.sample_is_current`); returns its folder."""
    folder = locations.default_index_dir()
    if not generations.sample_is_current(folder):
        logger.info("first run of this version: building the bundled NeurIPS 2025 sample index at %s", folder)
        build_index(locations.bundled_corpus(), folder, on_progress=on_progress)
    return folder
