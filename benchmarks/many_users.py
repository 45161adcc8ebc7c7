"""Ten people opening the app at once: the paperscope app beside the smallest Streamlit page, in one run.

    .venv/bin/python -m benchmarks.many_users [--index DIR] [--sessions 10] [--rounds 2]

Each round opens --sessions Playwright contexts of one headless Chromium at once, each on its own
text query, and waits until every page shows its ten results: against ``paperscope app`` on the
index (default: the bundled sample's), then against a Streamlit page that only shows a text box
and ten lines (the floor: what Streamlit and Chromium cost a session with nothing of ours). For
each: wall seconds until all have answered, CPU seconds of the server and of Chromium (by process
kind). Browsers and server share this machine's cores, as in tests/app/test_app_browser.py. Run on
an idle machine. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from paperscope import locations
from paperscope.ui.launch import wait_until_healthy
from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS, free_port, paperscope_server

FLOOR_PAGE = """
import streamlit as st
st.set_page_config(layout="wide", initial_sidebar_state="collapsed")
query = st.text_input("Search by text", value=st.query_params.get("q", ""))
for rank in range(1, 11):
    st.html(f"<div class='ps-title'>{rank}. a result for {query}</div>")
"""
QUERIES = [
    "speculative decoding for diffusion transformers", "graph neural networks", "robust reinforcement learning",
    "privacy attacks on language models", "protein structure", "time series forecasting", "backdoor attacks",
    "preference optimization", "quantile regression", "image generation and depth",
]  # fmt: skip


@contextlib.contextmanager
def floor_server(folder: Path):
    """The smallest Streamlit page, served; yields its URL and process."""
    page = folder / "floor.py"
    page.write_text(FLOOR_PAGE)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(page), "--server.port", str(port)]
    process = subprocess.Popen(
        [*command, "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not wait_until_healthy(f"http://127.0.0.1:{port}", process, 60):
            raise RuntimeError("the Streamlit floor page did not start")
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        process.wait(30)


def _cpu(processes) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def _kind(process) -> str:
    with contextlib.suppress(psutil.NoSuchProcess):
        found = re.search(r"--type=([\w-]+)", " ".join(process.cmdline()))
        return found.group(1) if found else "browser"
    return "gone"


def sessions_at_once(browser, url: str, server: subprocess.Popen, count: int) -> dict:
    """Open ``count`` contexts at once on ``url``, each with its own query; time until all show ten results."""
    contexts = [browser.new_context(viewport={"width": 1440, "height": 900}) for _ in range(count)]
    pages = [context.new_page() for context in contexts]
    server_tree = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    chromium = [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name()]
    before = {process.pid: _cpu([process]) for process in chromium}
    server_before = _cpu(server_tree)
    start = time.perf_counter()
    for page, query in zip(pages, QUERIES * count, strict=False):
        page.goto(f"{url}/?q={query.replace(' ', '+')}", wait_until="commit")
    for page in pages:
        page.wait_for_function("() => document.querySelectorAll('.ps-title').length === 10", timeout=300_000)
    wall = time.perf_counter() - start
    by_kind = Counter()
    for process in [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name()]:
        by_kind[_kind(process)] += _cpu([process]) - before.get(process.pid, 0.0)
    for context in contexts:
        context.close()
    return {
        "wall_s": round(wall, 2),
        "server_cpu_s": round(_cpu(server_tree) - server_before, 2),
        "chromium_cpu_s": round(sum(by_kind.values()), 2),
        "chromium_cpu_by_kind_s": {kind: round(seconds, 2) for kind, seconds in by_kind.items()},
    }


def main() -> None:
    """Alternate the app and the floor page --rounds times; print the medians."""
    from playwright.sync_api import sync_playwright

    parser = common_parser(__doc__, "many_users")
    parser.add_argument("--index", default=str(locations.default_index_dir()))
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    runs = {"paperscope app": [], "smallest Streamlit page": []}
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for _ in range(args.rounds):
            for name, server in (
                (
                    "paperscope app",
                    paperscope_server("app", args.index, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                ),
                ("smallest Streamlit page", floor_server(Path(folder))),
            ):
                with server as (url, process):
                    runs[name].append(sessions_at_once(browser, url, process, args.sessions))
        browser.close()
    keys = ("wall_s", "server_cpu_s", "chromium_cpu_s")
    rows = [
        [name, *(f"{statistics.median(run[key] for run in measured):.1f}" for key in keys)]
        for name, measured in runs.items()
    ]
    header = [f"{args.sessions} sessions at once (median of {args.rounds})", "all answered, s", "server CPU s"]
    report([*header, "Chromium CPU s"], rows, runs, args.json)


if __name__ == "__main__":
    main()
