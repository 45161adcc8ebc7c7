"""Lookups, the app's first results and a build of this checkout against another version, side by side.

    .venv/bin/pip install --no-deps --target /tmp/base-pkg git+file://$PWD@COMMIT   # or a folder of it
    .venv/bin/python -m benchmarks.before_after --baseline /tmp/base-pkg --index IJCAI \\
        [--index /tmp/million/index] [--corpus ../shared/evaldata/ijcai2021_2024_area.jsonl]

Each measure runs in a fresh process, alternating the two versions (``--rounds`` times each): the
baseline through ``PYTHONPATH`` (ahead of this checkout's editable install), this checkout as
installed. Per index: in-process ``similar`` (hybrid and dense) and ``search`` p50 after load, the
load time, and the first results of a ``?paper=`` link in a fresh ``paperscope app`` in headless
Chromium; with ``--corpus``, a whole build of it (the embedding cache on and warm: both versions read the
same cached vectors, so what differs is every stage but the model's own work). Give indexes the
baseline can read (built by it: this checkout reads every earlier format-6 index). Prints a
Markdown table of the medians over rounds and writes JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks.common import parser as common_parser
from benchmarks.common import report

LOOKUPS = """
import json, statistics, sys, time
start = time.perf_counter()
from paperscope import PaperIndex
index = PaperIndex.load(sys.argv[1])
load = time.perf_counter() - start
first = index.table if hasattr(index, "table") and callable(index.table) else index.take  # a name of either version
ids = first(list(range(0, len(index), max(1, len(index) // 500)))[:500], ["id"]).column("id").to_pylist()
queries = ["making diffusion transformers faster", "graph neural networks", "privacy in federated learning",
           "watermarking language model outputs", "reinforcement learning for reasoning"]
def table(found):  # the results as a DataFrame, as either version gives them (the same work on both sides)
    return found.to_pandas() if hasattr(type(found), "to_pandas") else found
for query in queries:
    table(index.search(query))  # the query vectors are then remembered: timings exclude embedding
def p50(call, items):
    times = []
    for item in items:
        begin = time.perf_counter(); call(item); times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)
print(json.dumps({"load_s": load, "similar_ms": p50(lambda i: table(index.similar(i, k=10)), ids),
                  "similar_dense_ms": p50(lambda i: table(index.similar(i, k=10, mode="dense")), ids),
                  "search_ms": p50(lambda q: table(index.search(q, k=10)), queries * 60)}))
"""

BUILD = """
import json, sys, tempfile, time
from pathlib import Path
from paperscope import BuildSettings, build_index
with tempfile.TemporaryDirectory() as work:
    start = time.perf_counter()
    build_index([sys.argv[1]], Path(work) / "index", BuildSettings())
    print(json.dumps({"build_s": time.perf_counter() - start}))
"""

FIRST_ID = """
import json, sys
from paperscope import PaperIndex
print(json.dumps({"id": PaperIndex.load(sys.argv[1]).ids()[0]}))
"""

FIRST_RESULTS = """
import json, socket, subprocess, sys, time, urllib.request
from playwright.sync_api import sync_playwright
index, paper = sys.argv[1], sys.argv[2]
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
start = time.perf_counter()
app = [sys.executable, "-m", "paperscope.ui.cli", "app", "--index", index, "--port", str(port), "--headless"]
server = subprocess.Popen(app, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
url = f"http://127.0.0.1:{port}"
while True:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as answer:
            if answer.status == 200:
                break
    except OSError:
        time.sleep(0.05)
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{url}/?paper={paper}")
    page.wait_for_selector(".ps-title", timeout=120_000)
    seconds = time.perf_counter() - start
    browser.close()
server.terminate(); server.wait(timeout=30)
print(json.dumps({"first_results_s": seconds}))
"""


def measure(script: str, arguments: list[str], baseline: str | None) -> dict:
    """Run ``script`` in a fresh process of the baseline (``baseline``: its package folder) or of
    this checkout (None); its last line of output, as JSON."""
    environment = {**os.environ, "PYTHONPATH": baseline} if baseline else dict(os.environ)
    with tempfile.TemporaryDirectory() as elsewhere:  # not the checkout: its paperscope/ folder would come first
        done = subprocess.run(
            [sys.executable, "-c", script, *arguments],
            capture_output=True, text=True, check=True, env=environment, cwd=elsewhere,
        )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Measure both versions, alternating, and print the table."""
    parser = common_parser(__doc__, "before_after")
    parser.add_argument("--baseline", required=True, help="a folder holding the other version's `paperscope` package")
    parser.add_argument(
        "--index", action="append", required=True, help="an index folder (several: --index A --index B)"
    )
    parser.add_argument("--corpus", help="a corpus file to build from, timed (its vectors from the embedding cache)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results, rows = {}, []
    for folder in args.index:
        paper = measure(FIRST_ID, [folder], None)["id"]
        runs = {"before": [], "after": []}
        for _ in range(args.rounds):
            for side, baseline in (("before", args.baseline), ("after", None)):
                found = measure(LOOKUPS, [folder], baseline)
                found |= measure(FIRST_RESULTS, [folder, paper], baseline)
                runs[side].append(found)
        medians = {side: {k: statistics.median(r[k] for r in found) for k in found[0]} for side, found in runs.items()}
        results[folder] = {"runs": runs, "medians": medians}
        for measure_name in medians["before"]:
            before, after = medians["before"][measure_name], medians["after"][measure_name]
            rows.append([folder, measure_name, f"{before:.2f}", f"{after:.2f}", f"{after / before:.2f}"])
    if args.corpus:
        runs = {"before": [], "after": []}
        for _ in range(args.rounds):
            for side, baseline in (("before", args.baseline), ("after", None)):
                runs[side].append(measure(BUILD, [args.corpus], baseline)["build_s"])
        before, after = statistics.median(runs["before"]), statistics.median(runs["after"])
        results["build"] = {"corpus": args.corpus, "runs": runs}
        rows.append([args.corpus, "build_s", f"{before:.2f}", f"{after:.2f}", f"{after / before:.2f}"])
    report(["index", "measure (median of rounds)", "before", "after", "after / before"], rows, results, args.json)


if __name__ == "__main__":
    main()
