"""Which int8 quantization could keep cosine >= 0.999: speed and fidelity against fp32 ONNX, one run.

    .venv/bin/python -m benchmarks.int8_variants [--copies 3]

Each variant is ONNX Runtime's dynamic quantization of the exported model's MatMul weights
(per channel) with some layers left in fp32. Texts: the bundled sample's abstracts, repeated
--copies times, read as the model reads them (first 256 word pieces), so every variant embeds
the same batches. Fidelity: cosine to the fp32 vectors, and top-10 neighbour overlap among the
38 abstracts (one copy). Run on an idle machine.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path


def _variants(matmuls: list[str]) -> dict[str, dict]:
    """quantize_dynamic arguments of each variant, given the names of the model's MatMul nodes."""
    from onnxruntime.quantization import QuantType

    ffn_out = [n for n in matmuls if "/output/dense/" in n and "/attention/" not in n]
    ffn = ffn_out + [n for n in matmuls if "/intermediate/" in n]
    projections = [n for n in matmuls if any(f"/self/{p}/" in n for p in ("query", "key", "value"))]
    assert ffn_out and ffn != ffn_out and projections, "the exported model's MatMul nodes are named differently"
    return {
        "every MatMul weight (--quantize int8)": {},
        "every MatMul weight, reduced range": {"reduce_range": True},
        "every MatMul weight, uint8": {"weight_type": QuantType.QUInt8},
        "all but the feed-forward output": {"nodes_to_exclude": ffn_out},
        "all but the feed-forward layers": {"nodes_to_exclude": ffn},
        "query, key and value projections only": {"nodes_to_exclude": [n for n in matmuls if n not in projections]},
    }


def main() -> None:
    """Quantize each variant, embed the same texts with each, print the table."""
    from benchmarks.common import parser as common_parser
    from benchmarks.common import report

    parser = common_parser(__doc__, "int8_variants")
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from paperscope import locations
    from paperscope.embed.model import Encoder
    from paperscope.embed.onnx_backend import OnnxEncoder
    from paperscope.index.build.ann import neighbour_overlap
    from tests.support.corpora import read_corpus

    logging.getLogger().setLevel(logging.ERROR)  # quantize_dynamic's advice to pre-process
    folder = Path(tempfile.mkdtemp(prefix="paperscope-int8-"))
    encoder = Encoder(onnx_dir=folder)
    encoder.encode(["export the model"])
    fp32 = encoder.export_folder / "model.onnx"
    abstracts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    texts = [f"(copy {copy}) {abstract}" for copy in range(args.copies) for abstract in abstracts]

    def measure(onnx_file: Path):
        model = OnnxEncoder(onnx_file, encoder.path / "tokenizer.json", encoder.max_tokens + 2)
        model.embed(texts[:8])
        start = time.perf_counter()
        vectors = model.embed(texts)
        return vectors, len(texts) / (time.perf_counter() - start)

    reference, fp32_speed = measure(fp32)
    matmuls = [node.name for node in onnx.load(str(fp32)).graph.node if node.op_type == "MatMul"]
    results = {"fp32": {"texts_per_s": fp32_speed}}
    for number, (name, options) in enumerate(_variants(matmuls).items()):
        target = folder / f"variant-{number}.onnx"
        quantize_dynamic(
            str(fp32),
            str(target),
            **{"weight_type": QuantType.QInt8, "per_channel": True, "op_types_to_quantize": ["MatMul"], **options},
        )
        vectors, speed = measure(target)
        cosines = (vectors * reference).sum(axis=1)
        results[name] = {
            "texts_per_s": speed,
            "speed_up": speed / fp32_speed,
            "cosine_mean": float(cosines.mean()),
            "cosine_min": float(cosines.min()),
            "top10_overlap": neighbour_overlap(reference[: len(abstracts)], vectors[: len(abstracts)]),
        }
    report(
        [
            f"{len(texts)} abstracts, fp32 {fp32_speed:.1f} texts/s",
            "texts/s",
            "speed-up over fp32",
            "cosine mean / min",
            "top-10 overlap",
        ],
        [
            [
                name,
                f"{r['texts_per_s']:.1f}",
                f"{r['speed_up']:.2f}x",
                f"{r['cosine_mean']:.4f} / {r['cosine_min']:.4f}",
                f"{r['top10_overlap']:.2f}",
            ]
            for name, r in results.items()
            if name != "fp32"
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
