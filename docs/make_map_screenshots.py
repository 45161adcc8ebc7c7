"""Redraw docs/topic-map-ijcai-coarse.png and docs/topic-map-ijcai-fine.png: the app's map of an
index at its coarse topics and at its fine ones (docs/app-ijcai.png: ``docs.make_screenshot``).

    .venv/bin/python -m docs.make_map_screenshots --index DIR [--prefix docs/topic-map-ijcai]

Starts ``paperscope app`` on ``--index`` and photographs it in headless Chromium at 1280 x 800
once the map is drawn: first as it opens (coarse labels), then with "fine" picked as the sidebar's
topic level, the sidebar folded again and the view reset. Prints how many labels are drawn and
the farthest from its papers. Run it from the repository's root: it uses the test tools of ``tests/support/servers.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docs.make_screenshot import app_in_chromium
from tests.support.servers import MAP_LABEL_DISTANCES, show_fine_level


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
    with app_in_chromium(args.index) as (browser, url):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/")
        _shoot(page, f"{args.prefix}-coarse.png")
        show_fine_level(page)
        _shoot(page, f"{args.prefix}-fine.png")


if __name__ == "__main__":
    main()
