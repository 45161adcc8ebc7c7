"""Time from starting `paperscope app` on a built index to the first answer in a real browser.

    .venv/bin/python -m benchmarks.app_start [--index DIR] [--runs 3] [--json benchmarks/app_start.json]

Measures, per run (a fresh server each time): server health, first results for a `?paper=` link
(no model needed) and for a `?q=` link (loads the query model). Needs /usr/bin/chromium.
Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import statistics
import time

from benchmarks.common import app_server, report
from benchmarks.common import parser as common_parser
from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS


def one_run(index_dir: str, link: str, browser) -> dict:
    """Start a server, open ``link`` and time health and first results."""
    start = time.perf_counter()
    with app_server(index_dir) as url:
        healthy = time.perf_counter() - start
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/{link}")
        page.wait_for_selector(".ps-title", timeout=120_000)
        answered = time.perf_counter() - start
        page.close()
    return {"healthy_s": round(healthy, 2), "first_results_s": round(answered, 2)}


def main() -> None:
    """Run the measurement and print the table."""
    parser = common_parser(__doc__, "app_start")
    parser.add_argument("--index", help="index folder (default: the bundled sample's)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from paperscope import PaperIndex, sample_index

    index_dir = args.index or str(sample_index())
    paper_id = PaperIndex.load(index_dir).papers["id"][0]
    links = {"paper link (?paper=ID)": f"?paper={paper_id}", "text query (?q=…)": "?q=making+diffusion+faster"}
    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for name, link in links.items():
            results[name] = [one_run(index_dir, link, browser) for _ in range(args.runs)]
        browser.close()
    rows = [
        [
            name,
            f"{statistics.median(r['healthy_s'] for r in runs):.2f} s",
            f"{statistics.median(r['first_results_s'] for r in runs):.2f} s",
            f"{max(r['first_results_s'] for r in runs):.2f} s",
        ]
        for name, runs in results.items()
    ]
    report(
        ["start-up, fresh server", "server healthy (median)", "first results (median)", "first results (max)"],
        rows,
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
