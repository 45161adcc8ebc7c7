"""The local engine: read and embed a corpus in this process, streaming a shard at a time.

One pass over the files: papers are embedded as they are read (the embedding cache has the
texts seen before) and each shard of ``shards.SHARD_ROWS`` papers is written as soon as it is
embedded, so memory holds one shard. Progress runs on the bytes of the files read so far: a bar on
a terminal, else a log line every ``PROGRESS_STEP`` with the time left (:class:`EmbeddingProgress`).
"""

from __future__ import annotations

import logging
import time
from itertools import islice
from pathlib import Path

import pandas as pd

from paperscope import locations
from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.readers import Reading
from paperscope.embed.readers.admission import Admission, admitted_papers
from paperscope.embed.text import embedding_texts
from paperscope.index.build import shards
from paperscope.limits import FAST_P_AT_10, FAST_SPEEDUP, READ_WORKERS
from paperscope.progress import PROGRESS_STEP, ProgressLines, duration
from paperscope.settings import PRESETS

logger = logging.getLogger(__name__)
SUGGEST_FAST_SECONDS = 60  # an exact embedding expected to take longer says once what the fast preset saves


class EmbeddingProgress:
    """How far the embedding is, in bytes of the files (``total``): ``on_progress(fraction,
    "embedding")`` at each step; with ``show_bar`` a tqdm bar on stderr, else a log line every
    ``PROGRESS_STEP`` with the time left, from the pace since the first step (the model loaded by
    then). With ``suggest_fast`` (the exact preset), once the embedding looks to take over
    ``SUGGEST_FAST_SECONDS``, one line quotes the fast preset's measured speed-up and cost."""

    def __init__(self, total: float, on_progress, *, show_bar: bool, suggest_fast: bool, clock=time.monotonic):
        from tqdm import tqdm  # plain text, in notebooks too (tqdm.auto wants ipywidgets there)

        self.bar = tqdm(total=total, unit="B", unit_scale=True, desc="reading and embedding", disable=not show_bar)
        self.total = total
        self.on_progress = on_progress
        self.lines = not show_bar  # a bar, or lines
        self.suggest_fast = suggest_fast
        self.clock = clock
        self.done = 0.0
        self.first: tuple[float, float] | None = None  # (time, fraction) at the first step
        self.next_line = PROGRESS_STEP

    def advance(self, amount: float) -> None:
        """``amount`` more bytes embedded."""
        self.done += amount
        self.bar.update(amount)
        fraction = min(self.done / self.total, 1.0)
        self.on_progress(fraction, "embedding")
        now = self.clock()
        if self.first is None:
            self.first = (now, fraction)
            return
        started, begun = self.first
        if not begun < fraction < 1.0:
            return
        per_fraction = (now - started) / (fraction - begun)
        if self.suggest_fast and per_fraction > SUGGEST_FAST_SECONDS:
            self.suggest_fast = False
            with self.bar.external_write_mode():  # one line, the bar drawn again under it
                logger.info(
                    "the embedding looks to take about %s; --preset fast embeds %.1f× as fast (int8, the first %d "
                    "word pieces of each text) for IJCAI P@10 %.3f against %.3f (docs/benchmarks.md)",
                    duration(per_fraction), FAST_SPEEDUP, PRESETS["fast"].window, FAST_P_AT_10[1], FAST_P_AT_10[0],
                )  # fmt: skip
        if self.lines and fraction + 1e-9 >= self.next_line:
            self.next_line = (int(fraction / PROGRESS_STEP + 1e-9) + 1) * PROGRESS_STEP
            left = duration(per_fraction * (1.0 - fraction))
            percent = int(fraction * 100 + 1e-6)
            logger.info("embedding: %d %% done, about %s left", percent, left, extra={"progress": fraction})

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


class LocalEngine:
    """Reads and embeds in this process; ``use_cache`` reuses vectors of texts embedded before,
    ``show_progress`` draws a tqdm bar on stderr."""

    def __init__(self, use_cache: bool = True, show_progress: bool = False):
        self.use_cache = use_cache
        self.show_progress = show_progress

    def embed(self, job: shards.EmbedJob, work: Path, on_progress) -> shards.Embedded:
        """Embed ``job`` into Parquet shards in ``work`` (see the module docstring)."""
        job.on_stage("read")
        begin = time.perf_counter()
        admission = Admission(Reading(where=job.settings.where, workers=READ_WORKERS))
        total = sum(Path(path).stat().st_size for path in job.inputs if Path(path).is_file()) or 1
        parts: list[Path] = []
        embedded, count, embedding = 0, 0, 0.0  # embedding: seconds spent embedding
        pending = 0.0  # bytes read whose papers are not embedded yet
        # until the first shard is read (with --where, much of a large file may be), lines on the reading
        reading: ProgressLines | None = ProgressLines(total, "reading", logger, counts=False)

        def read(share: float) -> None:
            nonlocal pending
            pending += share
            if reading is not None:
                reading.advance(share)

        rows = admitted_papers(job.inputs, job.settings.fields.overrides(), admission, on_bytes=read)
        chunk = list(islice(rows, shards.SHARD_ROWS))  # at least AUTO_FAST_PAPERS, or all papers
        reading = None  # from here, the embedding's progress (in bytes of the files) says how far it is
        job.settle(len(chunk))
        encoder = job.settled_encoder
        job.on_stage("embed")  # reading goes on: each shard is read, then embedded
        progress = EmbeddingProgress(
            total, on_progress, show_bar=self.show_progress, suggest_fast=job.choice["name"] == "exact"
        )
        try:
            cache = EmbeddingCache(locations.cache_dir(), encoder.vector_key, job.long_text) if self.use_cache else None
            while chunk:
                per_text, pending = pending / len(chunk), 0.0

                def advance(texts: int, per_text=per_text) -> None:
                    progress.advance(texts * per_text)

                papers = pd.DataFrame(chunk)
                texts = embedding_texts(papers)
                started = time.perf_counter()
                vectors, fresh = encode_with_cache(encoder, texts, job.long_text, cache, advance)
                embedding += time.perf_counter() - started
                if cache is not None:
                    cache.flush()
                advance(len(chunk) - fresh)  # the cached ones
                embedded += fresh
                count += len(chunk)
                tokens = encoder.count_tokens(texts)
                path = work / f"part-{len(parts):05d}.parquet"
                parts.append(shards.write_shard(path, papers.assign(tokens=tokens), vectors))
                chunk = list(islice(rows, shards.SHARD_ROWS))
        finally:
            progress.close()
        admission.check_found(job.inputs)
        logger.info("read %d papers from %d file(s)", count, len(job.inputs))
        if admission.reading.where:
            conditions = " and ".join(f"'{condition}'" for condition in admission.reading.where)
            logger.info("%s records left out by %s", f"{admission.reading.left_out:,}", conditions)
        for line in admission.report.lines():
            logger.warning("%s", line)
        seconds = {"read": round(time.perf_counter() - begin - embedding, 3), "embed": round(embedding, 3)}
        return shards.Embedded(parts, admission.report, embedded, {"name": "local"}, seconds)
