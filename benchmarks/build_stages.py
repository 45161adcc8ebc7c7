"""Build time by stage and peak memory, for the sample, a real corpus and a large synthetic one.

    .venv/bin/python -m benchmarks.build_stages [--corpus FILE.jsonl] [--synthetic 50000]

Each real build runs `paperscope build --no-cache` in its own process (stage times from the
manifest, peak RSS of that process). The synthetic corpus replicates the real corpus's vectors
(with small noise) and texts up to --synthetic papers and runs every stage after embedding
(FAISS, map and clusters, keyword index, write) through the same functions; its embedding time
is estimated from the measured throughput, and says so. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report

STAGES = ["read", "embed", "index", "map and clusters", "keyword index", "write"]


def real_build(inputs: list[str], folder: Path) -> dict:
    """Stage seconds (from the build's last log line) and peak RSS of one `paperscope build --no-cache`."""
    done = subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "build", *inputs, "-o", str(folder), "--no-cache"],
        check=True,
        capture_output=True,
        text=True,
    )
    last = done.stderr.strip().splitlines()[-1]  # "index written to … (N papers; read 0.1 s, embed 2.0 s, …)"
    seconds = {name: float(value) for name, value in re.findall(r"([a-z ]+) ([\d.]+) s", last.split("; ", 1)[1])}
    return {
        "papers": int(re.search(r"\((\d+) papers", last).group(1)),
        "seconds": {k.strip(): v for k, v in seconds.items()},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def synthetic_build(source: Path, count: int, folder: Path, texts_per_s: float) -> dict:
    """Every stage after embedding on ``count`` replicated papers; embedding estimated."""
    import pandas as pd

    from paperscope import PaperIndex, locations
    from paperscope.embed.model import Encoder
    from paperscope.embed.text import embedding_texts
    from paperscope.index.build import ann
    from paperscope.index.build.keyword_fit import fit_keyword_index
    from paperscope.index.store import generations
    from paperscope.index.topics import topic_map

    base = PaperIndex.load(source)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(base), count)
    vectors = np.asarray(base.vectors)[rows] + rng.normal(0, 0.02, (count, base.vectors.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    papers = base.papers.iloc[rows].reset_index(drop=True).assign(id=[f"s{i}" for i in range(count)])
    texts = embedding_texts(papers)
    seconds = {"read": None, "embed": round(count / texts_per_s, 1)}
    start = time.perf_counter()
    encode = Encoder(onnx_dir=locations.onnx_dir()).encode  # names the topics, as a build does
    per_paper, clusters, _ = topic_map.topic_map(
        vectors, lambda rows: [texts[i] for i in rows], papers["id"].tolist(), encode
    )
    seconds["map and clusters"] = time.perf_counter() - start
    start = time.perf_counter()
    keyword = fit_keyword_index(texts)
    seconds["keyword index"] = time.perf_counter() - start
    start = time.perf_counter()  # FAISS last, as in index.build._finish
    index = ann.build_ann(vectors, ann.choose_factory(count))
    seconds["index"] = time.perf_counter() - start
    start = time.perf_counter()
    papers = pd.concat([papers.drop(columns=per_paper.columns), per_paper], axis=1)
    with generations.build_lock(folder):
        generations.write_generation(
            folder,
            generations.Generation(
                {"count": count, "dimension": int(vectors.shape[1])}, vectors, index, papers, clusters, keyword
            ),
        )
    seconds["write"] = time.perf_counter() - start
    return {
        "papers": count,
        "seconds": seconds,
        "embed_estimated": True,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    """Run the builds and print the table."""
    parser = common_parser(__doc__, "build_stages")
    parser.add_argument("--corpus", help="a real corpus file (e.g. ../shared/evaldata/ijcai2021_2024_area.jsonl)")
    parser.add_argument("--synthetic", type=int, default=50_000, help="papers in the synthetic build (0: none)")
    args = parser.parse_args()
    from paperscope import locations

    work = Path(tempfile.mkdtemp(prefix="paperscope-build-"))
    runs = {"bundled sample": real_build([str(p) for p in locations.bundled_corpus()], work / "sample")}
    if args.corpus:
        runs[Path(args.corpus).name] = real_build([args.corpus], work / "corpus")
    largest = list(runs.values())[-1]
    if args.synthetic:
        throughput = largest["papers"] / largest["seconds"]["embed"]
        source = work / ("corpus" if args.corpus else "sample")
        runs[f"synthetic (replicated {Path(args.corpus).name if args.corpus else 'sample'})"] = synthetic_build(
            source, args.synthetic, work / "synthetic", throughput
        )
    rows = []
    for name, run in runs.items():
        cells = [
            (
                "—"
                if run["seconds"][s] is None
                else f"{run['seconds'][s]:.1f}" + (" (est.)" if s == "embed" and run.get("embed_estimated") else "")
            )
            for s in STAGES
        ]
        rows.append([name, f"{run['papers']:,}", *cells, f"{run['peak_rss_mb']:,.0f}"])
    report(["corpus", "papers", *[f"{s} (s)" for s in STAGES], "peak RSS (MB)"], rows, runs, args.json)


if __name__ == "__main__":
    main()
