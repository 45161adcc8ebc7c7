"""Redraw docs/app.png, the README's screenshot: the app on the bundled sample, a typed query.

    .venv/bin/python -m docs.make_screenshot [--index DIR --query TEXT -o docs/app-ijcai.png]

Starts ``paperscope app`` on the default index (built on first use) or on --index and photographs
it in headless Chromium at 1440 x 900, once the results and the map are drawn. Run it from the
repository's root: it uses the test tools of ``tests/support/servers.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from paperscope.ui.launch import wait_until_healthy
from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS, free_port

QUERY = "speculative decoding to accelerate diffusion transformers"


@contextlib.contextmanager
def app_in_chromium(index: str | None):
    """``paperscope app`` on ``index`` (default: the bundled sample's) once healthy, and a headless
    Chromium: yields (browser, the app's URL); both stopped after."""
    port = free_port()
    command = [sys.executable, "-m", "paperscope.ui.cli", "app", "--port", str(port), "--headless"]
    command += ["--index", index] if index else []
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_until_healthy(f"http://127.0.0.1:{port}", server, timeout=300):
            raise SystemExit("the app did not start")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            yield browser, f"http://127.0.0.1:{port}"
            browser.close()
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    """Take the screenshot."""
    parser = argparse.ArgumentParser(description="Redraw the app's screenshot.")
    parser.add_argument("--index", help="index folder (default: the bundled sample's)")
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("-o", "--output", default=str(Path(__file__).with_name("app.png")))
    args = parser.parse_args()
    with app_in_chromium(args.index) as (browser, url):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/?q={args.query.replace(' ', '+')}")
        page.wait_for_selector(".ps-title", timeout=300_000)
        page.wait_for_selector(".ps-map[data-ready='1']", timeout=60_000)
        page.mouse.move(0, 0)  # no hover card in the picture
        page.screenshot(path=args.output)


if __name__ == "__main__":
    main()
