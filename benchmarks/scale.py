"""Large builds on this machine: the Ray engine and the streaming local engine, throughput and memory.

    .venv/bin/python -m benchmarks.scale [--ray 200000] [--local 100000] [--workers 2]

Synthetic abstracts: each joins --sentences random sentences of a real corpus (default: the
IJCAI evaluation corpus in ../shared/evaldata), so the vocabulary is real and every text unique;
they are written as 8 JSONL shards. Each build is `paperscope build --no-cache` in its own
process group; a sampler adds up the proportional memory (PSS) of every process of the build
(driver, Ray's raylet, object store and workers) twice a second, and the driver's RSS. Embedding
throughput is also given in word pieces per second, the unit that carries over to corpora of
longer abstracts. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from benchmarks.common import parser as common_parser
from benchmarks.common import report

EVALDATA = Path(__file__).resolve().parents[2] / "shared" / "evaldata" / "ijcai2021_2024_area.jsonl"


def synthetic_corpus(
    source: Path, count: int, sentences: int, folder: Path, files: int = 8, seed: int = 0
) -> list[Path]:
    """``count`` unique abstracts of ``sentences`` random sentences of ``source``, in ``files`` JSONL
    shards; another ``seed`` gives other abstracts and ids."""
    from paperscope.embed.text import split_sentences

    pool = [
        s
        for line in source.read_text().splitlines()
        for s in split_sentences(json.loads(line)["abstract"])
        if 8 <= len(s.split()) <= 60
    ]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(pool), (count, sentences))
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"part-{i}.jsonl" for i in range(files)]
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(path, "w")) for path in paths]
        for row, chosen in enumerate(picks):
            text = " ".join(pool[i] for i in chosen)
            handles[row % files].write(json.dumps({"id": f"syn{seed}-{row}", "abstract": text}) + "\n")
    return paths


def measured_build(arguments: list[str], output: Path) -> dict:
    """Run one build; its manifest's stage times, peak memory of its process tree and of the driver."""
    command = [sys.executable, "-m", "paperscope.ui.cli", "build", *arguments, "-o", str(output), "--no-cache"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    peak = {"total_pss_mb": 0.0, "driver_rss_mb": 0.0}
    stop = threading.Event()

    def sample() -> None:
        root = psutil.Process(process.pid)
        while not stop.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
                total = 0.0
                for member in tree:
                    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                        total += member.memory_full_info().pss / 2**20
                peak["total_pss_mb"] = max(peak["total_pss_mb"], total)
                peak["driver_rss_mb"] = max(peak["driver_rss_mb"], root.memory_info().rss / 2**20)
            except psutil.NoSuchProcess:
                break
            stop.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    start = time.perf_counter()
    sampler.start()
    _, stderr = process.communicate()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    if process.returncode:
        raise SystemExit(f"build failed:\n{stderr[-2000:]}")
    from paperscope import PaperIndex

    index = PaperIndex.load(output)
    manifest = index.manifest
    pieces = int(index.papers["tokens"].sum())
    embed_seconds = manifest.build_seconds["embed"]
    return {
        "papers": manifest.count,
        "engine": manifest.engine,
        "wall_s": round(wall, 1),
        "seconds": manifest.build_seconds,
        "papers_per_s": round(manifest.count / embed_seconds, 1),
        "word_pieces_per_s": round(pieces / embed_seconds),
        "mean_word_pieces": round(pieces / manifest.count, 1),
        "vectors_mb": round(manifest.count * manifest.dimension * 4 / 2**20, 1),
        "map": {"layout": manifest.map.layout, "map_trust": manifest.map.map_trust},
        **{key: round(value) for key, value in peak.items()},
    }


def main() -> None:
    """Generate the corpus, run the builds, print the table."""
    parser = common_parser(__doc__, "scale")
    parser.add_argument("--ray", type=int, default=200_000, help="papers in the Ray build (0: none)")
    parser.add_argument(
        "--local",
        type=int,
        nargs="*",
        default=[2_000, 100_000],
        help="papers in each local build (the smallest shows the fixed memory of a build)",
    )
    parser.add_argument("--workers", type=int, default=2, help="Ray embedding actors")
    parser.add_argument("--sentences", type=int, default=2, help="sentences per synthetic abstract")
    parser.add_argument("--source", type=Path, default=EVALDATA, help="JSONL corpus whose sentences are used")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="paperscope-scale-"))
    runs = {}
    builds = [(f"ray {args.ray:,}", args.ray, ["--engine", "ray", "--workers", str(args.workers)])] if args.ray else []
    builds += [(f"local {count:,}", count, []) for count in args.local]
    for name, count, options in builds:
        corpus = synthetic_corpus(args.source, count, args.sentences, work / name.replace(" ", "-").replace(",", ""))
        runs[name] = measured_build([*options, *map(str, corpus)], work / f"{name.replace(' ', '-')}-index")
        Path(args.json).write_text(json.dumps(runs, indent=2))  # each result kept as soon as it is measured
    rows = [
        [
            name,
            f"{run['papers']:,}",
            f"{run['seconds']['read']:.0f}",
            f"{run['seconds']['embed']:.0f}",
            f"{run['papers_per_s']:.1f}",
            f"{run['word_pieces_per_s']:,}",
            f"{run['seconds']['index']:.0f}",
            f"{run['seconds']['map and clusters']:.0f}",
            f"{run['seconds']['keyword index']:.0f}",
            f"{run['wall_s']:.0f}",
            f"{run['vectors_mb']:,.0f}",
            f"{run['driver_rss_mb']:,}",
            f"{run['total_pss_mb']:,}",
            f"{run['map']['map_trust']['mean']:.2f}",
        ]
        for name, run in runs.items()
    ]
    report(
        [
            "engine",
            "papers",
            "read (s)",
            "embed (s)",
            "papers/s",
            "word pieces/s",
            "index (s)",
            "map (s)",
            "keyword (s)",
            "wall (s)",
            "vectors (MB)",
            "driver peak RSS (MB)",
            "all processes peak PSS (MB)",
            "map trust",
        ],
        rows,
        runs,
        args.json,
    )


if __name__ == "__main__":
    main()
