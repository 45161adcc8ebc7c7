"""How the app's map (ui.mapplot.map_figure, WebGL) behaves with many points in a real browser.

    .venv/bin/python -m benchmarks.map_render [--points 50000] [--json benchmarks/map_render.json]

Synthetic clustered coordinates; times in headless Chromium (software WebGL, no GPU): first draw,
a zoom (relayout) and a hover over a point. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from paperscope.ui.server import CHROMIUM, CHROMIUM_FLAGS


def synthetic_map(count: int, clusters: int = 30) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Clustered 2-D points with the columns the map draws."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(-20, 20, (clusters, 2))
    labels = rng.integers(-1, clusters, count)
    coords = centres[np.maximum(labels, 0)] + rng.normal(0, 1.2, (count, 2))
    papers = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(count)],
            "title": [f"Paper {i}" for i in range(count)],
            "x": coords[:, 0],
            "y": coords[:, 1],
            "cluster": labels,
            "cluster_name": [f"topic {c}" if c >= 0 else "unclustered" for c in labels],
            "map_trust": rng.uniform(0, 1, count),
        }
    )
    table = pd.DataFrame(
        {
            "cluster": range(clusters),
            "name": [f"topic {c}" for c in range(clusters)],
            "x": centres[:, 0],
            "y": centres[:, 1],
        }
    )
    return papers, table


def main() -> None:
    """Run the measurement and print the table."""
    parser = common_parser(__doc__, "map_render")
    parser.add_argument("--points", type=int, nargs="+", default=[5000, 50000])
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from paperscope.ui.mapplot import map_figure

    results = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as folder:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for count in args.points:
            papers, clusters = synthetic_map(count)
            page_file = Path(folder) / f"map{count}.html"
            start = time.perf_counter()
            map_figure(papers, clusters, selected_rows=[0], neighbour_rows=list(range(1, 11))).write_html(
                page_file, include_plotlyjs=True
            )
            figure_s = time.perf_counter() - start
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            start = time.perf_counter()
            page.goto(page_file.as_uri())
            page.wait_for_function("() => document.querySelector('.js-plotly-plot')?._fullLayout", timeout=120_000)
            page.wait_for_function("() => document.querySelector('.gl-canvas-context')", timeout=120_000)
            first_draw_s = time.perf_counter() - start
            zoom_ms = page.evaluate("""async () => { const gd = document.querySelector('.js-plotly-plot');
                const t = performance.now();
                await Plotly.relayout(gd, {'xaxis.range': [-5, 5], 'yaxis.range': [-5, 5]});
                return performance.now() - t; }""")
            hover_ms = page.evaluate("""() => { const gd = document.querySelector('.js-plotly-plot');
                const t = performance.now(); Plotly.Fx.hover(gd, [{curveNumber: 0, pointNumber: 7}]);
                return performance.now() - t; }""")
            page.close()
            results.append(
                {
                    "points": count,
                    "figure_build_s": round(figure_s, 2),
                    "first_draw_s": round(first_draw_s, 2),
                    "zoom_ms": round(zoom_ms),
                    "hover_ms": round(hover_ms),
                }
            )
        browser.close()
    report(
        ["points", "build figure (Python)", "first draw in browser", "zoom", "hover"],
        [
            [
                f"{r['points']:,}",
                f"{r['figure_build_s']:.2f} s",
                f"{r['first_draw_s']:.2f} s",
                f"{r['zoom_ms']} ms",
                f"{r['hover_ms']} ms",
            ]
            for r in results
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
