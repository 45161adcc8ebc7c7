"""Build an index folder from corpus files: read, embed (with cache), FAISS, map, store."""

from __future__ import annotations

import datetime
import hashlib
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from embed import EmbeddingCache, Encoder, encode_with_cache, read_corpus
from index import ann, locations, store, topics
from index.keyword import KeywordIndex
from index.paper_index import DEFAULT_MODES

TEXT_RECIPE = "title + '. ' + abstract when the paper has a real title, else the abstract alone"


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


def embedding_texts(papers) -> list[str]:
    """The text embedded for each paper (see TEXT_RECIPE)."""
    return [abstract if derived else f"{title.rstrip('.')}. {abstract}"
            for title, abstract, derived in zip(papers["title"], papers["abstract"], papers["title_derived"])]


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


def _corpus_fingerprint(papers) -> str:
    digest = hashlib.sha256()
    for paper_id, abstract in sorted(zip(papers["id"], papers["abstract"])):
        digest.update(f"{paper_id}\0{abstract}\0".encode())
    return digest.hexdigest()[:16]


def quantization_fidelity(encoder, texts: list[str], vectors: np.ndarray, long_text: str, sample: int = 200) -> dict:
    """How close the int8 vectors are to fp32 ones, on a sample of the corpus: cosine, and the
    overlap of each sampled paper's 10 nearest neighbours within the sample."""
    rows = np.random.default_rng(0).choice(len(texts), min(sample, len(texts)), replace=False)
    reference = Encoder(encoder.path, onnx_dir=encoder.onnx_dir).encode([texts[i] for i in rows], long_text=long_text)
    quantized = vectors[rows]
    cosines = (reference * quantized).sum(axis=1)
    return {"sample": len(rows), "cosine_mean": float(cosines.mean()), "cosine_min": float(cosines.min()),
            "top10_overlap": ann.neighbour_overlap(reference, quantized)}


def build_index(inputs: list[str | Path], output: str | Path, model_path: str | Path | None = None,
                long_text: str = "mean", fields: dict[str, str | None] | None = None, use_cache: bool = True,
                show_progress: bool | None = None, log=None, on_progress=None,
                faiss_factory: str | None = None, quantize: str | None = None) -> BuildReport:
    """Read ``inputs``, embed them and write the index folder ``output`` atomically.

    ``fields`` overrides column names ({"id": …, "title": …, "abstract": …}); ``log`` receives
    progress lines (default: stderr); ``on_progress(fraction, stage)`` follows the whole build;
    ``faiss_factory`` overrides the automatic FAISS index choice (see :mod:`index.ann`);
    ``quantize="int8"`` embeds with the int8 ONNX model and records its fidelity to fp32.
    Raises :class:`embed.UserError` for bad input, in which case an existing index at ``output``
    is left as it was.
    """
    log = log or (lambda line: print(line, file=sys.stderr))
    on_progress = on_progress or (lambda fraction, stage: None)
    show_progress = sys.stderr.isatty() if show_progress is None else show_progress
    output = Path(output)
    encoder = Encoder(model_path, onnx_dir=locations.onnx_dir(), quantize=quantize)
    seconds: dict[str, float] = {}
    with store.build_lock(output):  # lock before reading: a second build fails at once
        with _stage(seconds, "read"):
            papers, read_report = read_corpus(inputs, fields)
            log(f"read {len(papers)} papers from {len(inputs)} file(s)")
            for line in read_report.lines():
                log(f"warning: {line}")
            texts = embedding_texts(papers)
            token_counts = encoder.count_tokens(texts)
            long_count = int((token_counts > encoder.max_tokens).sum())
            if long_count:
                action = "averaged over windows" if long_text == "mean" else "truncated to their first window"
                log(f"{long_count} of {len(texts)} texts are longer than the model's {encoder.max_tokens} word pieces: "
                    f"{action} (--long-text {long_text})")
        cache = EmbeddingCache(locations.cache_dir(), encoder.vector_key, long_text) if use_cache else None
        on_progress(0.05, "embedding")
        with _stage(seconds, "embed"):
            vectors, embedded = encode_with_cache(encoder, texts, long_text, cache, show_progress,
                                                  lambda done, total: on_progress(0.05 + 0.75 * done / total, "embedding"))
        log(f"embedded {embedded} texts ({len(texts) - embedded} from the cache)")
        fidelity = quantization_fidelity(encoder, texts, vectors, long_text) if quantize else None
        if fidelity:
            log(f"int8 against fp32 on {fidelity['sample']} texts: cosine {fidelity['cosine_mean']:.4f} "
                f"(min {fidelity['cosine_min']:.4f}), top-10 overlap {fidelity['top10_overlap']:.2f}")
        factory = ann.choose_factory(len(vectors), faiss_factory)
        with _stage(seconds, "index"):
            faiss_index = ann.build_ann(vectors, factory)
            ann_quality = ann.tune(faiss_index, vectors)
        if factory != "Flat":
            log(f"FAISS {factory}: recall@10 {ann_quality['recall_at_10']:.3f} against exact search")
        log("laying out the topic map and naming clusters")
        on_progress(0.8, "laying out the topic map")
        with _stage(seconds, "map and clusters"):
            per_paper, clusters, map_manifest = topics.topic_map(vectors, faiss_index, texts, papers["id"].tolist())
        log(f"{map_manifest['clusters']['count']} clusters, {map_manifest['clusters']['unclustered']} papers "
            f"unclustered; map trust {map_manifest['map_trust']['mean']:.2f} ({map_manifest['layout']['method']} layout)")
        papers = pd.concat([papers.assign(tokens=token_counts).reset_index(drop=True), per_paper], axis=1)
        with _stage(seconds, "keyword index"):
            keyword = KeywordIndex.fit(texts)
        manifest = {
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "count": len(papers),
            "dimension": int(vectors.shape[1]),
            "model": {"name": encoder.name, "path": str(encoder.path), "fingerprint": encoder.fingerprint,
                      "max_tokens": encoder.max_tokens, "backend": encoder.backend,
                      "quantize": quantize, **({"int8_fidelity": fidelity} if fidelity else {})},
            "text_recipe": TEXT_RECIPE,
            "long_text": {"strategy": long_text, "long_texts": long_count, "max_tokens": encoder.max_tokens},
            "corpus": {"fingerprint": _corpus_fingerprint(papers), "sources": [Path(p).name for p in inputs],
                       "skipped": len(read_report.skipped), "duplicate_ids": len(read_report.duplicate_ids),
                       "duplicate_abstracts": len(read_report.duplicate_abstracts)},
            "search": {"faiss": factory, **ann_quality, "metric": "cosine (inner product of normalised vectors)",
                       "keyword": {"kind": "tf-idf", "terms": len(keyword.terms)}, **DEFAULT_MODES},
            "map": map_manifest,
            "versions": _versions(),
            "build_seconds": dict(seconds),
        }
        on_progress(0.95, "writing the index")
        with _stage(seconds, "write"):
            store.write_generation(output, store.Generation(manifest, vectors, faiss_index, papers, clusters, keyword))
        on_progress(1.0, "done")
    log(f"index written to {output} ({len(papers)} papers; " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()) + ")")
    return BuildReport(output, len(papers), embedded, long_count, seconds)


def sample_index(log=None, on_progress=None) -> Path:
    """The default index of the bundled NeurIPS 2025 sample, built on first use; returns its folder."""
    folder = locations.default_index_dir()
    if not store.is_current_format(folder):
        (log or (lambda line: print(line, file=sys.stderr)))(
            f"first run of this version: building the bundled NeurIPS 2025 sample index at {folder}")
        build_index(locations.bundled_corpus(), folder, log=log, on_progress=on_progress)
    return folder
