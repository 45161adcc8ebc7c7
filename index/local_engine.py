"""The local engine: read and embed a corpus in this process, streaming a shard at a time.

A first pass over the files counts the papers and reports what is dropped; the second embeds
them (the embedding cache has the texts seen before) and writes each shard of
``shards.SHARD_ROWS`` papers as soon as it is embedded, so memory holds one shard.
"""

from __future__ import annotations

import logging
import time
from itertools import islice
from pathlib import Path

import pandas as pd

from paperscope.embed.cache import EmbeddingCache, encode_with_cache
from paperscope.embed.corpus import Admission, admitted_papers, embedding_texts
from paperscope.index import locations, shards
from paperscope.index.checkpoints import checkpoint

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

        checkpoint("read")
        begin = time.perf_counter()
        admission = Admission()
        count = sum(1 for _ in admitted_papers(job.inputs, job.fields, admission))
        admission.check_found(job.inputs)
        logger.info("read %d papers from %d file(s)", count, len(job.inputs))
        for line in admission.report.lines():
            logger.warning("warning: %s", line)
        seconds = {"read": round(time.perf_counter() - begin, 3)}
        checkpoint("embed")
        begin = time.perf_counter()
        cache = EmbeddingCache(locations.cache_dir(), job.encoder.vector_key, job.long_text) if self.use_cache else None
        parts, embedded, done = [], 0, 0
        with tqdm(total=count, unit="text", desc="embedding", disable=not self.show_progress) as bar:

            def advance(papers: int) -> None:
                nonlocal done
                done += papers
                bar.update(papers)
                on_progress(done / count, "embedding")

            rows = admitted_papers(job.inputs, job.fields, Admission(), announce=False)  # the second pass
            while chunk := list(islice(rows, shards.SHARD_ROWS)):
                papers = pd.DataFrame(chunk)
                texts = embedding_texts(papers)
                vectors, fresh = encode_with_cache(job.encoder, texts, job.long_text, cache, advance)
                advance(len(chunk) - fresh)  # the cached ones
                embedded += fresh
                tokens = job.encoder.count_tokens(texts)
                path = work / f"part-{len(parts):05d}.parquet"
                parts.append(shards.write_shard(path, papers.assign(tokens=tokens), vectors))
        seconds["embed"] = round(time.perf_counter() - begin, 3)
        return shards.Embedded(parts, admission.report, embedded, {"name": "local"}, seconds)
