"""Which int8 quantization could keep cosine >= 0.999: speed and fidelity against fp32 ONNX, one run.

    .venv/bin/python -m benchmarks.int8_variants [--copies 3]

Each variant is ONNX Runtime's dynamic quantization of the exported model's MatMul weights
(per channel) with some layers left in fp32, its inputs scaled per batch; the last is the graph
paperscope writes from a BERT model's weights (``--quantize int8`` and the int8 presets): the
same int8 weights, its inputs scaled per token. Texts: the bundled sample's abstracts, repeated
--copies times, read as the model reads them (first 256 word pieces), so every variant embeds
the same batches. Fidelity: cosine to the fp32 vectors, and top-10 neighbour overlap among the
38 abstracts (one copy); batch dependence: the largest 1 - cosine between a text's vector in its
batch and the same text embedded alone (10 texts). Run on an idle machine.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import numpy as np


def _variants(matmuls: list[str]) -> dict[str, dict]:
    """quantize_dynamic arguments of each variant, given the names of the model's MatMul nodes."""
    from onnxruntime.quantization import QuantType

    ffn_out = [n for n in matmuls if "/output/dense/" in n and "/attention/" not in n]
    ffn = ffn_out + [n for n in matmuls if "/intermediate/" in n]
    projections = [n for n in matmuls if any(f"/self/{p}/" in n for p in ("query", "key", "value"))]
    assert ffn_out and ffn != ffn_out and projections, "the exported model's MatMul nodes are named differently"
    return {
        "every MatMul weight": {},
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
    from paperscope.embed.onnx_backend import OnnxEncoder, write_bert_graph
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
        speed = len(texts) / (time.perf_counter() - start)
        alone = np.stack([model.embed([text])[0] for text in texts[:10]])
        return vectors, speed, float((1 - (alone * vectors[:10]).sum(axis=1)).max())

    reference, fp32_speed, _ = measure(fp32)
    matmuls = [node.name for node in onnx.load(str(fp32)).graph.node if node.op_type == "MatMul"]
    files = {}
    for number, (name, options) in enumerate(_variants(matmuls).items()):
        files[name] = folder / f"variant-{number}.onnx"
        quantize_dynamic(
            str(fp32),
            str(files[name]),
            **{"weight_type": QuantType.QInt8, "per_channel": True, "op_types_to_quantize": ["MatMul"], **options},
        )
    files["written from the weights, inputs per token (--quantize int8)"] = write_bert_graph(
        encoder.path, folder / "written-int8.onnx", int8=True
    )
    results = {"fp32": {"texts_per_s": fp32_speed}}
    for name, onnx_file in files.items():
        vectors, speed, moved = measure(onnx_file)
        cosines = (vectors * reference).sum(axis=1)
        results[name] = {
            "texts_per_s": speed,
            "speed_up": speed / fp32_speed,
            "cosine_mean": float(cosines.mean()),
            "cosine_min": float(cosines.min()),
            "top10_overlap": neighbour_overlap(reference[: len(abstracts)], vectors[: len(abstracts)]),
            "batch_dependence": moved,
        }
    report(
        [
            f"{len(texts)} abstracts, fp32 {fp32_speed:.1f} texts/s",
            "texts/s",
            "speed-up over fp32",
            "cosine mean / min",
            "top-10 overlap",
            "batch dependence (max 1 - cos)",
        ],
        [
            [
                name,
                f"{r['texts_per_s']:.1f}",
                f"{r['speed_up']:.2f}x",
                f"{r['cosine_mean']:.4f} / {r['cosine_min']:.4f}",
                f"{r['top10_overlap']:.2f}",
                f"{r['batch_dependence']:.1e}",
            ]
            for name, r in results.items()
            if name != "fp32"
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
