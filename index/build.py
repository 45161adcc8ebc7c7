"""Build an index folder from corpus files: read, embed (with cache), FAISS, map, store."""

from __future__ import annotations

import datetime
import hashlib
import shutil
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from embed import LONG_TEXT_STRATEGIES, EmbeddingCache, Encoder, ReadReport, UserError, encode_with_cache
from embed.corpus import OPTIONAL_FIELDS, TEXT_RECIPE, Admission, abstract_key, admitted_papers, embedding_texts, filled_fields
from index import ann, locations, shards, store, topics
from index.keyword import KeywordIndex
from index.paper_index import DEFAULT_MODES

ENGINES = ("local", "ray")
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
    start = time.perf_counter()
    yield
    seconds[name] = round(time.perf_counter() - start, 3)


def _versions() -> dict[str, str]:
    names = ["paperscope", "faiss-cpu", "numpy", "sentence-transformers", "torch", "transformers", "umap-learn",
             "scikit-learn", "pandas", "pyarrow"]
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def quantization_fidelity(encoder, texts_of, vectors: np.ndarray, long_text: str, sample: int = 200) -> dict:
    """How close the int8 vectors are to fp32 ones, on a sample of the corpus: cosine, and the
    overlap of each sampled paper's 10 nearest neighbours within the sample. ``texts_of(rows)``
    gives the embedded texts of rows."""
    rows = np.sort(np.random.default_rng(0).choice(len(vectors), min(sample, len(vectors)), replace=False))
    reference = Encoder(encoder.path, onnx_dir=encoder.onnx_dir).encode(texts_of(rows), long_text=long_text)
    quantized = np.asarray(vectors[rows])
    cosines = (reference * quantized).sum(axis=1)
    return {"sample": len(rows), "cosine_mean": float(cosines.mean()), "cosine_min": float(cosines.min()),
            "top10_overlap": ann.neighbour_overlap(reference, quantized)}


@dataclass
class Embedded:
    """What an engine hands on: the papers, in corpus order, embedded into Parquet shards."""

    shards: list[Path]
    read_report: ReadReport
    embedded: int  # texts embedded anew (the others came from the cache)
    engine: dict  # the manifest's "engine" section
    seconds: dict[str, float] = field(default_factory=dict)


def embed_locally(inputs, fields, encoder: Encoder, long_text: str, use_cache: bool, work: Path,
                  log, show_progress: bool, on_progress) -> Embedded:
    """The local engine, streaming: a first pass over the files counts the papers and reports what
    is dropped; the second embeds them (the cache has the texts seen before) a shard at a time."""
    from tqdm.auto import tqdm

    seconds: dict[str, float] = {}
    with _stage(seconds, "read"):
        admission = Admission()
        count = sum(1 for _ in admitted_papers(inputs, fields, admission))
        admission.check_found(inputs)
        log(f"read {count} papers from {len(inputs)} file(s)")
        for line in admission.report.lines():
            log(f"warning: {line}")
    cache = EmbeddingCache(locations.cache_dir(), encoder.vector_key, long_text) if use_cache else None
    parts, embedded, done = [], 0, 0
    with _stage(seconds, "embed"), tqdm(total=count, unit="text", desc="embedding", disable=not show_progress) as bar:
        def advance(papers: int) -> None:
            nonlocal done
            done += papers
            bar.update(papers)
            on_progress(done / count, "embedding")

        rows = admitted_papers(inputs, fields, Admission())
        while chunk := list(islice(rows, shards.SHARD_ROWS)):
            papers = pd.DataFrame(chunk)
            texts = embedding_texts(papers)
            vectors, fresh = encode_with_cache(encoder, texts, long_text, cache, advance)
            advance(len(chunk) - fresh)  # the cached ones
            embedded += fresh
            parts.append(shards.write_shard(work / f"part-{len(parts):05d}.parquet",
                                            papers.assign(tokens=encoder.count_tokens(texts)), vectors))
    return Embedded(parts, admission.report, embedded, {"name": "local"}, seconds)


class _Shards:
    """The embedded papers as the later stages read them: column by column, shard by shard."""

    def __init__(self, parts: list[Path]):
        self.parts = parts
        self.lengths = shards.shard_lengths(parts)
        self.count = sum(self.lengths)

    def columns(self, names: list[str]):
        """Each shard's ``names`` columns, in order."""
        return (shards.read_columns(path, names) for path in self.parts)

    def texts(self):
        """The embedded text of every paper, in order."""
        for frame in self.columns(["title", "abstract", "title_derived"]):
            yield from embedding_texts(frame)

    def texts_of(self, rows: np.ndarray) -> list[str]:
        """The embedded texts of the given (sorted) rows."""
        found, start = [], 0
        for path, length in zip(self.parts, self.lengths):
            local = rows[(rows >= start) & (rows < start + length)] - start
            if len(local):
                found += embedding_texts(shards.read_columns(path, ["title", "abstract", "title_derived"]).iloc[local])
            start += length
        return found

    def vectors(self, path: Path) -> np.ndarray:
        """All vectors, copied shard by shard into a memory-mapped .npy file at ``path``."""
        first = shards.read_vectors(self.parts[0])
        vectors = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(self.count, first.shape[1]))
        start = 0
        for part in self.parts:
            block = shards.read_vectors(part)
            vectors[start: start + len(block)] = block
            start += len(block)
        pa.default_memory_pool().release_unused()  # else Arrow's allocator keeps the decoded shards' pages
        return vectors

    def summary(self) -> tuple[list[str], np.ndarray, list[str], str]:
        """Ids, word pieces per text, the optional fields some paper fills, and the corpus fingerprint."""
        ids, tokens, filled, keys = [], [], set(), []
        for frame in self.columns(["id", "abstract", "tokens", *OPTIONAL_FIELDS]):
            ids += frame["id"].tolist()
            tokens.append(frame["tokens"].to_numpy())
            filled |= filled_fields(frame)
            keys += [f"{paper_id}\0{abstract_key(abstract)}" for paper_id, abstract in zip(frame["id"], frame["abstract"])]
        fingerprint = hashlib.sha256("\0".join(sorted(keys)).encode()).hexdigest()[:16]
        return ids, np.concatenate(tokens), [name for name in OPTIONAL_FIELDS if name in filled], fingerprint


def build_index(inputs: list[str | Path], output: str | Path, model_path: str | Path | None = None,
                long_text: str = "mean", fields: dict[str, str | None] | None = None, use_cache: bool = True,
                show_progress: bool | None = None, log=None, on_progress=None,
                faiss_factory: str | None = None, quantize: str | None = None,
                engine: str = "local", address: str | None = None, workers: int | None = None) -> BuildReport:
    """Read ``inputs``, embed them and write the index folder ``output`` atomically.

    ``fields`` overrides column names ({"id": …, "title": …, "abstract": …}); ``log`` receives
    progress lines (default: stderr); ``on_progress(fraction, stage)`` follows the whole build;
    ``faiss_factory`` overrides the automatic FAISS index choice (see :mod:`index.ann`);
    ``quantize="int8"`` embeds with the int8 ONNX model and records its fidelity to fp32.
    ``engine="ray"`` reads and embeds on Ray Data (:mod:`index.ray_engine`): a local Ray with
    ``workers`` CPUs, or the cluster at ``address``; it does not use the embedding cache.
    Raises :class:`embed.UserError` for bad input, in which case an existing index at ``output``
    is left as it was.
    """
    if engine not in ENGINES:
        raise UserError(f"unknown engine '{engine}'; choose one of {', '.join(ENGINES)}")
    if engine == "local" and (address or workers):
        raise UserError("--address and --workers go with --engine ray")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UserError(f"--workers must be a whole number of at least 1, got {workers!r}")
    if long_text not in LONG_TEXT_STRATEGIES:
        raise UserError(f"unknown long-text strategy '{long_text}'; choose one of {', '.join(LONG_TEXT_STRATEGIES)}")
    log = log or (lambda line: print(line, file=sys.stderr))
    on_progress = on_progress or (lambda fraction, stage: None)
    show_progress = sys.stderr.isatty() if show_progress is None else show_progress
    output = Path(output)
    encoder = Encoder(model_path, onnx_dir=locations.onnx_dir(), quantize=quantize)
    with store.build_lock(output):  # lock before reading: a second build fails at once
        work = output / f".tmp-shards-{uuid.uuid4().hex[:8]}"  # a killed build's is removed by the next
        work.mkdir()
        try:
            embed_progress = lambda fraction, stage: on_progress(0.05 + 0.75 * fraction, stage)  # noqa: E731
            if engine == "ray":
                from index.ray_engine import embed_with_ray

                embedded = embed_with_ray(inputs, fields, encoder, long_text, work, address, workers, log, embed_progress)
            else:
                embedded = embed_locally(inputs, fields, encoder, long_text, use_cache, work, log, show_progress,
                                         embed_progress)
            report = _finish(embedded, inputs, output, work, encoder, long_text, faiss_factory, quantize, log, on_progress)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log(f"index written to {output} ({report.count} papers; "
        + ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items()) + ")")
    return report


def _finish(embedded: Embedded, inputs, output: Path, work: Path, encoder: Encoder, long_text: str,
            faiss_factory: str | None, quantize: str | None, log, on_progress) -> BuildReport:
    """The stages every engine shares: map and clusters, keyword index, FAISS, manifest, write."""
    encoder.release()  # the later stages need the memory, not the model
    seconds = dict(embedded.seconds)
    papers = _Shards(embedded.shards)
    ids, token_counts, filled, corpus_fingerprint = papers.summary()
    long_count = int((token_counts > encoder.max_tokens).sum())
    if long_count:
        action = "averaged over windows" if long_text == "mean" else "truncated to their first window"
        log(f"{long_count} of {papers.count} texts are longer than the model's {encoder.max_tokens} word pieces: "
            f"{action} (--long-text {long_text})")
    log(f"embedded {embedded.embedded} texts ({papers.count - embedded.embedded} from the cache)")
    vectors = papers.vectors(work / "vectors.npy")
    fidelity = quantization_fidelity(encoder, papers.texts_of, vectors, long_text) if quantize else None
    if fidelity:
        log(f"int8 against fp32 on {fidelity['sample']} texts: cosine {fidelity['cosine_mean']:.4f} "
            f"(min {fidelity['cosine_min']:.4f}), top-10 overlap {fidelity['top10_overlap']:.2f}")
    log("laying out the topic map and naming clusters")
    on_progress(0.8, "laying out the topic map")
    with _stage(seconds, "map and clusters"):
        per_paper, clusters, map_manifest = topics.topic_map(vectors, papers.texts_of, ids)
    log(f"{map_manifest['clusters']['count']} clusters, {map_manifest['clusters']['unclustered']} papers "
        f"unclustered; map trust {map_manifest['map_trust']['mean']:.2f} ({map_manifest['layout']['method']} layout)")
    with _stage(seconds, "keyword index"):
        keyword = KeywordIndex.fit(papers.texts(), papers.count)
    factory = ann.choose_factory(len(vectors), faiss_factory)
    on_progress(0.9, "building the search index")
    with _stage(seconds, "index"):  # last: its copy of the vectors is not held during the map
        faiss_index = ann.build_ann(vectors, factory)
        ann_quality = ann.tune(faiss_index, vectors)
    if factory != "Flat":
        log(f"FAISS {factory}: recall@10 {ann_quality['recall_at_10']:.3f} against exact search")
    manifest = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "count": papers.count,
        "dimension": int(vectors.shape[1]),
        "engine": embedded.engine,
        "model": {"name": encoder.name, "path": str(encoder.path), "fingerprint": encoder.fingerprint,
                  "max_tokens": encoder.max_tokens, "backend": encoder.backend,
                  "quantize": quantize, **({"int8_fidelity": fidelity} if fidelity else {})},
        "text_recipe": TEXT_RECIPE,
        "long_text": {"strategy": long_text, "long_texts": long_count, "max_tokens": encoder.max_tokens},
        "corpus": {"fingerprint": corpus_fingerprint, "sources": [Path(p).name for p in inputs],
                   "skipped": len(embedded.read_report.skipped),
                   "duplicate_ids": len(embedded.read_report.duplicate_ids),
                   "duplicate_abstracts": len(embedded.read_report.duplicate_abstracts)},
        "search": {"faiss": factory, **ann_quality, "metric": "cosine (inner product of normalised vectors)",
                   "keyword": {"kind": "tf-idf", "terms": len(keyword.terms)}, **DEFAULT_MODES},
        "map": map_manifest,
        "versions": _versions(),
        "build_seconds": dict(seconds),
    }
    on_progress(0.95, "writing the index")
    with _stage(seconds, "write"):
        kept = [name for name in shards.PAPER_COLUMNS if name not in OPTIONAL_FIELDS or name in filled]
        store.write_generation(output, store.Generation(manifest, vectors, faiss_index,
                                                        shards.paper_tables(embedded.shards, kept, per_paper),
                                                        clusters, keyword))
    on_progress(1.0, "done")
    return BuildReport(output, papers.count, embedded.embedded, long_count, seconds)


def sample_index(log=None, on_progress=None) -> Path:
    """The default index of the bundled NeurIPS 2025 sample, built on first use; returns its folder."""
    folder = locations.default_index_dir()
    if not store.is_current_format(folder):
        (log or (lambda line: print(line, file=sys.stderr)))(
            f"first run of this version: building the bundled NeurIPS 2025 sample index at {folder}")
        build_index(locations.bundled_corpus(), folder, log=log, on_progress=on_progress)
    return folder
