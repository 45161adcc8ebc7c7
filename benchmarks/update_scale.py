"""An update's fixed cost at 700,000 papers: what ``paperscope update`` spends besides embedding.

    .venv/bin/python -m benchmarks.update_scale --base INDEX --work DIR [--papers 700000] [--new 1500] [--make]

--make writes a synthetic arXiv-style index of --papers into DIR/index from the index --base (any
built index, e.g. the bundled sample's: its papers replicated with their own ids, vectors with
noise, as benchmarks/million.py makes one; no embedding), and marks it as following arXiv's cs.*
(a manifest origin, as a build from a fetched file records). Then one day's update arrives as the
file an update fetches: --new new papers (random sentences of the IJCAI corpus: new texts), 23 new
versions of papers it holds (new texts, ids kept) and 2 withdrawals; it is added as ``update``
adds it (``add_papers`` with the new watermark, in one generation), in a fresh process, profiled.
The fetch itself is left out: one OAI-PMH page of 2,000 records, its time the network's and
arXiv's 3 s between requests. Prints the total, the embedding, the fixed cost (total - embedding)
and the stages, and checks the result with ``verify``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from benchmarks.scale import EVALDATA

REPLACED, WITHDRAWN = 23, 2
# The stages of an add, by the functions that run them (cumulative seconds, from the profile).
STAGES = {
    "read the generation": ("read_generation",),
    "read the records, sort them": ("_arrivals",),
    "embed": ("encode_with_cache",),  # the model's loading is not in it: a fixed cost
    "nearest papers (one HNSW search)": ("_nearest",),
    "place on the map": ("_place",),
    "grow: papers, vectors, FAISS, keyword rows, smoothed": ("_grown",),
    "write the generation (files, their checksums in threads)": ("write_generation",),
    "carry the remap caches": ("carry_caches",),
}

RUN = """
import cProfile, json, pstats, sys, time
from paperscope.index.build.add import add_papers
from paperscope.index.store import generations
from paperscope.index.store.manifest import Origin
from paperscope.settings import SourceQuery
folder, path = sys.argv[1], sys.argv[2]
day = "2026-12-05T00:00:00Z"
origins = (Origin(SourceQuery("arxiv", (("category", "cs"),)), day, day, "cs.jsonl"),)
profile = cProfile.Profile()
begin = time.perf_counter()
profile.enable()
report = add_papers([path], folder, use_cache=False, origins=origins)
profile.disable()
profile.dump_stats(sys.argv[4])
total = time.perf_counter() - begin
stats = pstats.Stats(profile).stats
stages = json.loads(sys.argv[3])
seconds = {name: sum(v[3] for k, v in stats.items() if k[2] in names) for name, names in stages.items()}
print(json.dumps({"total_s": total, "stages_s": seconds, "added": report.added, "replaced": report.replaced,
                  "marked": report.marked, "count": report.count}))
"""


def make_index(base: Path, count: int, folder: Path) -> None:
    """The synthetic index (benchmarks/million.py's), following arXiv's cs.* (a manifest origin)."""
    import json as json_module

    from benchmarks.million import make_index as replicate
    from paperscope.index.store import generations
    from paperscope.index.store.manifest import Origin
    from paperscope.settings import SourceQuery

    replicate(base, count, folder)
    generation = folder / str(generations.current_generation_name(folder))
    manifest = json_module.loads((generation / generations.MANIFEST_FILE).read_text())
    origin = Origin(SourceQuery("arxiv", (("category", "cs"),)), "2026-12-04T00:00:00Z", "2026-12-04T00:00:00Z", "cs")
    manifest["origins"] = [origin.to_json()]
    (generation / generations.MANIFEST_FILE).write_text(json_module.dumps(manifest, indent=2))  # no checksum of it


def day_file(corpus: Path, count: int, papers: int, work: Path) -> Path:
    """One day's fetched file: ``count`` new papers, REPLACED new versions, WITHDRAWN withdrawals
    (of the first ``papers``); the new papers' ids follow the index's count (a run after another adds anew)."""
    from benchmarks.scale import synthetic_corpus
    from paperscope.index.store import generations

    held = generations.read_manifest(work / "index").count

    (part,) = synthetic_corpus(corpus, count + REPLACED, 3, work / "day", files=1, seed=int(time.time()))
    records = [json.loads(line) for line in part.read_text().splitlines()]
    lines = [
        {"id": f"2512.{held + i:07d}", "title": f"New paper {i}", "abstract": r["abstract"], "version": "v1",
         "status": "active"}
        for i, r in enumerate(records[:count])
    ]  # fmt: skip
    step = papers // (REPLACED + WITHDRAWN + 1)
    shift = held % (step // 2)  # other papers on each run
    for i, record in enumerate(records[count:]):
        revised = {"title": f"Revised {i}", "abstract": record["abstract"], "version": f"v{held}"}
        lines.append({"id": f"2501.{(i + 1) * step + shift:07d}", **revised})
    for i in range(WITHDRAWN):
        withdrawn = {"id": f"2501.{(REPLACED + 1 + i) * step + shift:07d}", "status": "withdrawn"}
        lines.append(withdrawn | {"version": f"v{held}"})
    path = work / "day.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def main() -> None:
    """Make the index if asked, add one day to it in a fresh process, print the table."""
    parser = common_parser(__doc__, "update_scale")
    parser.add_argument("--base", required=True, help="a built index to replicate (e.g. the bundled sample's)")
    parser.add_argument(
        "--corpus",
        default=str(EVALDATA),
        help="JSON lines whose sentences make the new papers' texts",
    )
    parser.add_argument("--work", required=True)
    parser.add_argument("--papers", type=int, default=700_000)
    parser.add_argument("--new", type=int, default=1500)
    parser.add_argument("--make", action="store_true", help="write the synthetic index first")
    args = parser.parse_args()
    work = Path(args.work)
    folder = work / "index"
    results: dict = {"papers": args.papers, "new": args.new}
    if args.make:
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        make_index(Path(args.base), args.papers, folder)
        results["make_s"] = time.perf_counter() - start
    path = day_file(Path(args.corpus), args.new, args.papers, work)
    results["load"] = Path("/proc/loadavg").read_text().split()[:3]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(folder), str(path), json.dumps(STAGES), str(work / "add.prof")],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    results["process_s"] = time.perf_counter() - start
    results |= json.loads(done.stdout.strip().splitlines()[-1])
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "paperscope.ui.cli", "verify", "--index", str(folder)], check=True)
    results["verify_s"] = time.perf_counter() - start
    stages = results["stages_s"]
    results["fixed_s"] = results["total_s"] - stages["embed"]
    rows = [
        ["update's add, in all", f"{results['total_s']:.1f} s"],
        ["embedding", f"{stages['embed']:.1f} s"],
        ["fixed cost (all - embedding)", f"{results['fixed_s']:.1f} s (target < 30 s)"],
        *[[f"· {name}", f"{seconds:.1f} s"] for name, seconds in stages.items() if name != "embed"],
        ["process (imports, model load, the add)", f"{results['process_s']:.1f} s"],
        ["load average (1, 5, 15 min)", " ".join(results["load"])],
    ]
    report(
        [f"{args.papers:,} papers + {args.new:,} new, {REPLACED} new versions, {WITHDRAWN} withdrawn", "seconds"],
        rows,
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
