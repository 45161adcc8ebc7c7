"""Embedding throughput: sentence-transformers on torch vs ONNX Runtime fp32 vs int8, same texts, one run.

    .venv/bin/python -m benchmarks.embedding [--copies 3] [--json benchmarks/embedding.json]

Texts: the bundled sample's abstracts (17 of 38 longer than 256 word pieces), repeated --copies
times, embedded whole (long texts as windows, averaged) by each backend. Fidelity against the
torch vectors: cosine and top-10 neighbour overlap. Run on an idle machine.
"""

from __future__ import annotations

import tempfile
import time

from benchmarks.common import parser as common_parser
from benchmarks.common import report


def main() -> None:
    """Measure every backend and print the table."""
    parser = common_parser(__doc__, "embedding")
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()
    from paperscope import locations
    from paperscope.embed.model import Encoder
    from paperscope.index.build.ann import neighbour_overlap
    from tests.support.corpora import read_corpus

    abstracts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    texts = [f"{abstract} (copy {copy})" for copy in range(args.copies) for abstract in abstracts]
    onnx_dir = tempfile.mkdtemp(prefix="paperscope-onnx-")
    encoders = {
        "sentence-transformers, torch fp32": Encoder(),
        "ONNX Runtime fp32": Encoder(onnx_dir=onnx_dir),
        "ONNX Runtime int8 (per-channel MatMul)": Encoder(onnx_dir=onnx_dir, quantize="int8"),
    }
    plain = encoders["sentence-transformers, torch fp32"].model
    runs = {
        "plain sentence-transformers encode() (truncates at 256)": lambda: plain.encode(
            texts, batch_size=32, normalize_embeddings=True
        ),
        **{name: (lambda e=encoder: e.encode(texts)) for name, encoder in encoders.items()},
    }
    for encoder in encoders.values():
        encoder.encode(texts[:4])  # load the model (and export / quantize) outside the timing
    vectors, speed = {}, {}
    for name, run in runs.items():
        start = time.perf_counter()
        vectors[name] = run()
        speed[name] = len(texts) / (time.perf_counter() - start)
    reference = vectors["sentence-transformers, torch fp32"]
    results = {
        name: {
            "texts_per_s": speed[name],
            "cosine_mean": float((v * reference).sum(1).mean()),
            "cosine_min": float((v * reference).sum(1).min()),
            "top10_overlap": neighbour_overlap(reference, v),
        }
        for name, v in vectors.items()
    }
    base = results["plain sentence-transformers encode() (truncates at 256)"]["texts_per_s"]
    report(
        [
            f"{len(texts)} abstracts",
            "texts/s",
            "speed-up",
            "cosine to torch, whole text (mean / min)",
            "top-10 overlap",
        ],
        [
            [
                name,
                f"{r['texts_per_s']:.1f}",
                f"{r['texts_per_s'] / base:.2f}x",
                f"{r['cosine_mean']:.4f} / {r['cosine_min']:.4f}",
                f"{r['top10_overlap']:.2f}",
            ]
            for name, r in results.items()
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
