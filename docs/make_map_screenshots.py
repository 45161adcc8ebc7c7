"""Redraw docs/topic-map-ijcai-coarse.png and docs/topic-map-ijcai-fine.png: the app's map of an
index at its coarse topics and at its fine ones; and docs/app-ijcai.png, a typed query's results
starred on the map at 1440 x 900.

    .venv/bin/python -m docs.make_map_screenshots --index DIR [--prefix docs/topic-map-ijcai]

Starts ``paperscope app`` on ``--index`` and photographs it in headless Chromium at 1280 x 800
once the map is drawn: first as it opens (coarse labels), then with "fine" picked as the sidebar's
topic level, the sidebar folded again and the view reset. Prints each label's leader length and how many labels
are drawn. Run it from the repository's root: it uses the test tools of ``tests/servers.py``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from paperscope.ui.launch import wait_until_healthy
from tests.servers import CHROMIUM, CHROMIUM_FLAGS, MAP_LABEL_DISTANCES, free_port, show_fine_level


def _shoot(page, path: str) -> None:
    """Wait for the map, move the pointer off it, take the picture and say what its labels are."""
    page.wait_for_selector(".ps-map[data-ready='1']", timeout=300_000)
    page.wait_for_function("() => !document.querySelector('.ps-map').parentElement.__paperscopeMap.pending")
    page.mouse.move(0, 0)  # no hover card in the picture
    page.screenshot(path=path)
    labels = page.evaluate(MAP_LABEL_DISTANCES)
    farthest = max((label["distance"] for label in labels), default=0)
    print(f"{path}: {len(labels)} labels, farthest {farthest:.0f} px from a paper of its topic")


def main() -> None:
    """Take both screenshots."""
    parser = argparse.ArgumentParser(description="Redraw the topic map's screenshots.")
    parser.add_argument("--index", required=True, help="index folder")
    parser.add_argument("--prefix", default=str(Path(__file__).with_name("topic-map-ijcai")))
    args = parser.parse_args()
    port = free_port()
    command = [sys.executable, "-m", "paperscope.ui.cli", "app", "--port", str(port), "--headless"]
    server = subprocess.Popen([*command, "--index", args.index], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_until_healthy(f"http://127.0.0.1:{port}", server, timeout=300):
            raise SystemExit("the app did not start")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"http://127.0.0.1:{port}/")
            _shoot(page, f"{args.prefix}-coarse.png")
            show_fine_level(page)
            _shoot(page, f"{args.prefix}-fine.png")
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?q=graph+neural+networks+for+traffic+forecasting")
            page.wait_for_selector(".ps-title", timeout=300_000)
            page.wait_for_function("() => document.querySelector('.ps-map')?.parentElement.__paperscopeMap?.star")
            _shoot(page, str(Path(args.prefix).with_name("app-ijcai.png")))
            browser.close()
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
