"""How the map (ui/map.js) behaves with many points in headless Chromium (software rendering, no GPU).

    .venv/bin/python -m benchmarks.map_render [--points 5000 50000 200000] [--index DIR ...]
                                              [--json benchmarks/map_render.json]

Standalone: synthetic clustered points (60 fine topics in 10 coarse ones) written as the HTML
export, which runs the same map code as the app: time to build the data (Python), file size, first
draw (navigation to the map drawn), one redraw after a zoom, a hover lookup, a lasso selection.
App (--index): a fresh `paperscope app` server on a built index; first draw of the map, a click on
a point until the results for that paper are shown, a box selection until it is listed; then at
1440x900 and 1280x720 the map's share of the page and its labels' boxes read from the page, zoomed
out, zoomed in on the five largest fine topics and zoomed out at the fine level (the sidebar's
topic level): overlapping pairs, labels outside the map, and the farthest any label's box sits from
the nearest paper of its topic. Prints Markdown tables and writes JSON; fails (exit status 1) when
labels overlap, leave the map or sit farther from their papers than ``LABEL_REACH`` of the map's
smaller side.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import app_server, report
from benchmarks.common import parser as common_parser
from tests.support.servers import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    LABEL_REACH,
    MAP_LABEL_DISTANCES,
    MAP_LABEL_LAYOUT,
    show_fine_level,
)

MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"


def synthetic_map(count: int, fine: int = 60, coarse: int = 10) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Clustered 2-D points with the columns the map draws, and both topic tables."""
    rng = np.random.default_rng(0)
    parent = np.arange(fine) % coarse
    centres = rng.uniform(-20, 20, (coarse, 2))[parent] + rng.normal(0, 3, (fine, 2))
    labels = rng.integers(-1, fine, count)
    coords = centres[np.maximum(labels, 0)] + rng.normal(0, 1.0, (count, 2))
    papers = pd.DataFrame(
        {
            "title": [f"Paper {i}" for i in range(count)],
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": labels,
            "coarse_cluster": np.where(labels < 0, -1, parent[np.maximum(labels, 0)]),
            "map_trust": rng.uniform(0, 1, count),
        }
    )

    def table(column: str, size: int, name: str) -> pd.DataFrame:
        groups = papers[papers[column] >= 0].groupby(column)
        return pd.DataFrame(
            {
                "cluster": range(size),
                "name": [f"{name} topic {t} with a longer name" for t in range(size)],
                "size": groups.size().reindex(range(size), fill_value=0).to_numpy(),
                "x": groups["x"].median().reindex(range(size)).to_numpy(),
                "y": groups["y"].median().reindex(range(size)).to_numpy(),
            }
        )

    return papers, table("cluster", fine, "fine"), table("coarse_cluster", coarse, "coarse")


def standalone(browser, count: int, folder: Path) -> dict:
    """First draw, zoom, hover and lasso on the HTML export of ``count`` synthetic points."""
    from paperscope.ui.mapplot import map_payload, save_html

    papers, fine, coarse = synthetic_map(count)
    start = time.perf_counter()
    payload = map_payload(papers, fine, coarse, key="benchmark")
    path = folder / f"map{count}.html"
    save_html(payload, path, f"{count:,} points")
    build_s = time.perf_counter() - start
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    start = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
    first_draw_s = time.perf_counter() - start
    box = page.locator(".ps-map").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -240)
    page.wait_for_function("() => Number(document.querySelector('.ps-map').dataset.zoom) > 1", timeout=10_000)
    zoom_ms = float(page.locator(".ps-map").get_attribute("data-draw-ms"))
    timings = page.evaluate(
        f"""() => {{ const map = {MAP}; let t = performance.now();
            for (let i = 0; i < 100; i++) map.nearest(map.width * (i % 10) / 10, map.height * Math.floor(i / 10) / 10);
            const hover = (performance.now() - t) / 100;
            const w = map.width, h = map.height;
            const polygon = Array.from({{length: 60}}, (_, i) => [w / 2 + w / 4 * Math.cos(i / 9.55),
                                                                  h / 2 + h / 4 * Math.sin(i / 9.55)]);
            t = performance.now(); const rows = map.rowsInside(polygon);
            return {{hover, lasso: performance.now() - t, lassoRows: rows.length}}; }}"""
    )
    page.close()
    return {
        "points": count,
        "build_s": round(build_s, 2),
        "html_mb": round(path.stat().st_size / 1e6, 1),
        "first_draw_s": round(first_draw_s, 2),
        "zoom_redraw_ms": round(zoom_ms, 1),
        "hover_ms": round(timings["hover"], 3),
        "lasso_ms": round(timings["lasso"], 1),
        "lasso_rows": timings["lassoRows"],
    }


def label_check(browser, url: str, width: int, height: int, zooms: int = 5) -> dict:
    """The map's share of the page and its label collisions: zoomed out, then zoomed in on the
    ``zooms`` largest fine topics in turn, then zoomed out at the fine level; how far the labels
    sit from their topics' papers."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
    first = page.evaluate(MAP_LABEL_LAYOUT)
    layouts = [first]
    distances = page.evaluate(MAP_LABEL_DISTANCES)
    anchors = page.evaluate(
        f"""(count) => {{ const map = {MAP}; const box = document.querySelector('.ps-map').getBoundingClientRect();
            return map.labels.filter(l => l.level === 'fine').sort((a, b) => b.size - a.size).slice(0, count)
              .map(l => [box.left + map.px(l.x), box.top + map.py(l.y)]); }}""",
        zooms,
    )
    for anchor in anchors:
        page.get_by_role("button", name="Reset view").click()
        page.mouse.move(*anchor)
        for _ in range(5):
            page.mouse.wheel(0, -120)
        page.wait_for_selector(".ps-map[data-label-level='fine']", timeout=10_000)
        layouts.append(page.evaluate(MAP_LABEL_LAYOUT))
        distances += page.evaluate(MAP_LABEL_DISTANCES)
    page.get_by_role("button", name="Reset view").click()
    show_fine_level(page)
    fine = page.evaluate(MAP_LABEL_LAYOUT)
    distances += page.evaluate(MAP_LABEL_DISTANCES)
    page.close()
    farthest = max(distances, key=lambda label: label["distance"] / min(label["width"], label["height"]))
    return {
        "window": f"{width}x{height}",
        "map_share": round(first["share"], 3),
        "labels_zoomed_out": len(first["labels"]),
        "labels_zoomed_in": sum(len(layout["labels"]) for layout in layouts[1:]),
        "fine_labels_zoomed_out": len(fine["labels"]),
        "overlapping_pairs": sum(len(layout["overlaps"]) for layout in [*layouts, fine]),
        "outside_the_map": sum(len(layout["outside"]) for layout in [*layouts, fine]),
        "farthest_label_px": round(farthest["distance"], 1),
        "farthest_label_share": round(farthest["distance"] / min(farthest["width"], farthest["height"]), 4),
        "farthest_label": farthest["text"].replace("\n", " "),
        "longest_leader_px": round(max(label["leader"] for label in distances), 1),
    }


def in_app(browser, index_dir: str) -> dict:
    """First draw of the app's map on a fresh server, then a click and a box selection, timed to the answer."""
    with app_server(index_dir) as url:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{url}/")  # warm: the server loads the index once
        page.wait_for_selector(".ps-map[data-ready='1']", timeout=300_000)
        page.close()
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        start = time.perf_counter()
        page.goto(f"{url}/")
        page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
        first_draw_s = time.perf_counter() - start
        count = page.evaluate(f"() => {MAP}.count")
        point = page.evaluate(
            f"""() => {{ const map = {MAP}; const box = document.querySelector('.ps-map').getBoundingClientRect();
                for (let row = 0; row < map.count; row++) {{
                  const x = map.px(map.x[row]), y = map.py(map.y[row]);
                  if (x > 80 && y > 80 && x < map.width - 80 && y < map.height - 80 && map.nearest(x, y) === row)
                    return [box.left + x, box.top + y];
                }} }}"""
        )
        start = time.perf_counter()
        page.mouse.click(*point)
        page.wait_for_selector(".ps-selected", timeout=60_000)
        page.wait_for_selector(".ps-title", timeout=60_000)
        click_s = time.perf_counter() - start
        page.goto(f"{url}/")
        page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
        box = page.locator(".ps-map").bounding_box()
        page.get_by_role("button", name="Box", exact=True).click()
        page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.4)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.6, steps=3)
        start = time.perf_counter()
        page.mouse.up()
        page.wait_for_selector("text=selected on the map", timeout=60_000)
        box_s = time.perf_counter() - start
        page.close()
        labels = [label_check(browser, f"{url}/", *size) for size in ((1440, 900), (1280, 720))]
        return {
            "labels": labels,
            "index": index_dir,
            "points": count,
            "first_draw_s": round(first_draw_s, 2),
            "click_to_results_s": round(click_s, 2),
            "box_to_list_s": round(box_s, 2),
        }


def main() -> None:
    """Run the measurements and print the tables."""
    parser = common_parser(__doc__, "map_render")
    parser.add_argument("--points", type=int, nargs="*", default=[5000, 50000, 200000])
    parser.add_argument("--index", nargs="*", default=[], help="index folders to time in the app")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as folder:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        alone = [standalone(browser, count, Path(folder)) for count in args.points]
        app = [in_app(browser, index_dir) for index_dir in args.index]
        browser.close()
    report(
        ["points", "data (Python)", "HTML", "first draw", "redraw after zoom", "hover lookup", "lasso (rows)"],
        [
            [
                f"{r['points']:,}",
                f"{r['build_s']:.2f} s",
                f"{r['html_mb']} MB",
                f"{r['first_draw_s']:.2f} s",
                f"{r['zoom_redraw_ms']} ms",
                f"{r['hover_ms']} ms",
                f"{r['lasso_ms']} ms ({r['lasso_rows']:,})",
            ]
            for r in alone
        ],
        {"standalone": alone, "app": app},
        args.json,
    )
    if app:
        print()
        print("| app: papers | first draw (fresh page) | click → results | box → listed |")
        print("|---|---|---|---|")
        for r in app:
            times = (r["first_draw_s"], r["click_to_results_s"], r["box_to_list_s"])
            print(f"| {r['points']:,} | " + " | ".join(f"{t:.2f} s" for t in times) + " |")
        print()
        print("| app: papers | window | map share | labels out / in (5 zooms) / fine out | overlapping pairs "
              "| outside the map | farthest label from its topic's papers | longest leader line |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        for r in app:
            for c in r["labels"]:
                print(f"| {r['points']:,} | {c['window']} | {c['map_share']:.0%} | {c['labels_zoomed_out']} / "
                      f"{c['labels_zoomed_in']} / {c['fine_labels_zoomed_out']} | {c['overlapping_pairs']} "
                      f"| {c['outside_the_map']} "
                      f"| {c['farthest_label_px']:.0f} px ({c['farthest_label_share']:.1%}) "
                      f"| {c['longest_leader_px']:.0f} px |")  # fmt: skip
        checked = [(r["index"], c) for r in app for c in r["labels"]]
        failed = [(index, c["window"]) for index, c in checked if c["overlapping_pairs"] or c["outside_the_map"]
                  or c["farthest_label_share"] > LABEL_REACH]  # fmt: skip
        if failed:
            raise SystemExit(f"labels overlap, leave the map or sit away from their papers: {failed}")


if __name__ == "__main__":
    main()
