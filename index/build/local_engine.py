"""The local engine: read and embed a corpus in this process, streaming a shard at a time.

One pass over the files: papers are embedded as they are read (the embedding cache has the
texts seen before) and each shard of ``shards.SHARD_ROWS`` papers is written as soon as it is
embedded, so memory holds one shard. Progress runs on the bytes of the files read so far.
"""

from __future__ import annotations

import logging
import time
from itertools import islice
from pathlib import Path

import pandas as pd

from paperscope import locations
from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.corpus import Admission, admitted_papers, embedding_texts
from paperscope.index.build import shards

logger = logging.getLogger(__name__)


class LocalEngine:
    """Reads and embeds in this process; ``use_cache`` reuses vectors of texts embedded before,
    ``show_progress`` draws a tqdm bar on stderr."""

    def __init__(self, use_cache: bool = True, show_progress: bool = False):
        self.use_cache = use_cache
        self.show_progress = show_progress

    def embed(self, job: shards.EmbedJob, work: Path, on_progress) -> shards.Embedded:
        """Embed ``job`` into Parquet shards in ``work`` (see the module docstring)."""
        from tqdm import tqdm  # plain text, in notebooks too (tqdm.auto wants ipywidgets there)

        logger.debug("stage %s", "read", extra={"stage": "read"})
        logger.debug("stage %s", "embed", extra={"stage": "embed"})
        begin = time.perf_counter()
        admission = Admission()
        total = sum(Path(path).stat().st_size for path in job.inputs if Path(path).is_file()) or 1
        parts, embedded, count, embedding = [], 0, 0, 0.0  # embedding: seconds spent embedding
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="reading and embedding", disable=not self.show_progress)
        with bar:
            pending = 0.0  # bytes read whose papers are not embedded yet

            def read(share: float) -> None:
                nonlocal pending
                pending += share

            rows = admitted_papers(job.inputs, job.settings.fields.overrides(), admission, on_bytes=read)
            chunk = list(islice(rows, shards.SHARD_ROWS))  # at least AUTO_FAST_PAPERS, or all papers
            job.settle(len(chunk))
            cache = (
                EmbeddingCache(locations.cache_dir(), job.encoder.vector_key, job.long_text) if self.use_cache else None
            )
            while chunk:
                per_text, pending = pending / len(chunk), 0.0

                def advance(texts: int, per_text=per_text) -> None:
                    bar.update(texts * per_text)
                    on_progress(min(bar.n / total, 1.0), "embedding")

                papers = pd.DataFrame(chunk)
                texts = embedding_texts(papers)
                started = time.perf_counter()
                vectors, fresh = encode_with_cache(job.encoder, texts, job.long_text, cache, advance)
                embedding += time.perf_counter() - started
                if cache is not None:
                    cache.flush()
                advance(len(chunk) - fresh)  # the cached ones
                embedded += fresh
                count += len(chunk)
                tokens = job.encoder.count_tokens(texts)
                path = work / f"part-{len(parts):05d}.parquet"
                parts.append(shards.write_shard(path, papers.assign(tokens=tokens), vectors))
                chunk = list(islice(rows, shards.SHARD_ROWS))
        admission.check_found(job.inputs)
        logger.info("read %d papers from %d file(s)", count, len(job.inputs))
        for line in admission.report.lines():
            logger.warning("warning: %s", line)
        seconds = {"read": round(time.perf_counter() - begin - embedding, 3), "embed": round(embedding, 3)}
        return shards.Embedded(parts, admission.report, embedded, {"name": "local"}, seconds)
