"""The map widget in JupyterLab at scale: first draw, and a selection's round trip to Python.

    .venv/bin/python -m benchmarks.widget [--papers 50000] [--base INDEX] [--runs 3]
                                          [--json benchmarks/widget.json]

A synthetic index of --papers papers is made from --base (default: the bundled sample's index) as
benchmarks/million.py makes one: each paper a copy of a base paper with its own id, its vector and
map position jittered. JupyterLab (tests/support/servers.py: offline, no token) opens a notebook whose
first cell loads the index; then, --runs times, in headless Chromium:

- first draw: the cell ``w = ix.map.widget(); w`` run from the page, from the moment the kernel
  starts it (a time stamp taken in the kernel) to the map drawn in the page (its ``data-ready``,
  stamped in the page): the widget's state built in Python, sent, decoded and drawn;
- selection round trip: a box dragged over the middle fifth of the map (then one over the middle
  four fifths: most papers), from the mouse released (stamped in the page) to ``w.on_select``'s
  callback in the kernel (stamped there), and on to Python's answer (the selection as the map's
  focus) drawn in the page.

Both clocks are this machine's wall clock. Targets at 50,000 papers: first draw ≤ 2 s, round
trip ≤ 0.5 s. Run on an idle machine. Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS, Kernel, jupyter_server, open_notebook, run_cells

MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"
LOAD_CELL = "from paperscope import PaperIndex\n\nix = PaperIndex.load({folder!r})\nlen(ix)"
WIDGET_CELL = """import time

started = time.time()
w = ix.map.widget()
built = time.time()
stamps = []
w.on_select(lambda ids: stamps.append([time.time(), len(ids)]))
w"""
# In the page: the wall-clock time at which a map is first drawn.
STAMP_READY = """() => { window.psReady = null;
  const watch = new MutationObserver(() => {
    if (document.querySelector(".ps-map[data-ready='1']")) { window.psReady = Date.now(); watch.disconnect(); } });
  const watched = { subtree: true, childList: true, attributes: true, attributeFilter: ["data-ready"] };
  watch.observe(document.body, watched); }"""
# In the page: when the mouse is released, and when Python's focus with that selection is drawn.
STAMP_SELECTION = f"""() => {{ window.psUp = null; window.psEcho = null;
  window.addEventListener("pointerup", () => {{
    window.psUp = Date.now();
    const map = {MAP};
    const check = () => {{
      const chosen = map.payload.chosen.length;
      if (chosen && chosen === map.chosen.size && !map.pending) window.psEcho = Date.now();
      else requestAnimationFrame(check);
    }};
    requestAnimationFrame(check);
  }}, {{ capture: true, once: true }}); }}"""


def make_notebook(folder: Path, index_dir: Path) -> None:
    """The benchmark's notebook: load the index, then make and show the widget."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(LOAD_CELL.format(folder=str(index_dir))),
        nbformat.v4.new_code_cell(WIDGET_CELL),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, folder / "widget.ipynb")


def run_cell(page, number: int) -> None:
    """Run the open notebook's cell ``number`` (from 0)."""
    page.evaluate(f"() => {{ jupyterapp.shell.currentWidget.content.activeCellIndex = {number}; }}")
    run_cells(page, "notebook:run-cell")


def first_draw(page, kernel: Kernel) -> dict:
    """Run the widget cell on a page without a map: seconds from the cell's start to the map drawn."""
    run_cells(page, "notebook:clear-all-cell-outputs")
    page.wait_for_function("() => !document.querySelector('.ps-map')")
    page.evaluate(STAMP_READY)
    run_cell(page, 1)
    page.wait_for_function("() => window.psReady", timeout=120_000, polling=50)
    ready = page.evaluate("() => window.psReady") / 1000
    started, built = kernel.value("[started, built]")
    return {
        "first_draw_s": round(ready - started, 3),
        "python_s": round(built - started, 3),
        "draw_ms": float(page.locator(".ps-map").get_attribute("data-draw-ms")),
    }


def round_trip(page, kernel: Kernel, low: float, high: float) -> dict:
    """A box from ``low`` to ``high`` of the map's width and height: seconds from the mouse released
    to Python's callback, and to Python's answer drawn."""
    kernel.run("w.selected = []; stamps.clear()")
    page.wait_for_function(f"() => {MAP}.payload.chosen.length === 0 && {MAP}.chosen.size === 0")
    box = page.locator(".ps-map").bounding_box()
    page.locator(".ps-map").get_by_role("button", name="Box", exact=True).click()
    page.evaluate(STAMP_SELECTION)
    page.mouse.move(box["x"] + box["width"] * low, box["y"] + box["height"] * low)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * high, box["y"] + box["height"] * high, steps=5)
    page.mouse.up()
    page.wait_for_function("() => window.psEcho", timeout=60_000, polling="raf")
    up, echo = page.evaluate("() => [window.psUp, window.psEcho]")
    kernel.wait_for("len(stamps)", 1)
    called, count = kernel.value("stamps[-1]")
    assert count == page.evaluate(f"() => {MAP}.chosen.size") > 0
    return {"papers": count, "to_python_s": round(called - up / 1000, 3), "drawn_back_s": round((echo - up) / 1000, 3)}


def measure(index_dir: Path, runs: int, folder: Path) -> dict:
    """JupyterLab on a notebook of ``index_dir``: ``runs`` first draws and selections."""
    from playwright.sync_api import sync_playwright

    (folder / "notebooks").mkdir()
    make_notebook(folder / "notebooks", index_dir)
    with (
        jupyter_server(folder / "notebooks", folder / "jupyter", "lab") as (url, runtime),
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        kernel = Kernel(runtime / f"kernel-{open_notebook(page, url, 'lab', 'widget.ipynb')}.json")
        try:
            run_cell(page, 0)
            kernel.wait_for("'ix' in globals()", True, timeout=300)
            papers = kernel.value("len(ix)")
            draws, small, large = [], [], []
            for _ in range(runs):
                draws.append(first_draw(page, kernel))
                small.append(round_trip(page, kernel, 0.4, 0.6))
                large.append(round_trip(page, kernel, 0.1, 0.9))
            state_mb = kernel.value("round(len(__import__('json').dumps(w._points)) / 1e6, 2)")
        finally:
            kernel.close()
            browser.close()

    def median(measured: list[dict]) -> dict:
        return {key: statistics.median(one[key] for one in measured) for key in measured[0]}

    return {
        "papers": papers,
        "state_mb": state_mb,
        "median": {"first_draw": median(draws), "small_box": median(small), "large_box": median(large)},
        "first_draws": draws,
        "small_boxes": small,
        "large_boxes": large,
    }


def main() -> None:
    """Make the index, measure and print the table."""
    parser = common_parser(__doc__, "widget")
    parser.add_argument("--papers", type=int, default=50_000)
    parser.add_argument("--base", help="index to replicate (default: the bundled sample's)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.million import make_index
    from paperscope import sample_index

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        make_index(Path(args.base) if args.base else sample_index(), args.papers, Path(folder) / "index")
        made_s = time.perf_counter() - start
        result = measure(Path(folder) / "index", args.runs, Path(folder)) | {"make_index_s": round(made_s, 1)}
    draw, small, large = (result["median"][key] for key in ("first_draw", "small_box", "large_box"))
    report(
        ["papers", "widget state", "first draw (Python / drawing)", "box → Python (papers in it)", "→ drawn back"],
        [
            [
                f"{result['papers']:,}",
                f"{result['state_mb']} MB",
                f"{draw['first_draw_s']:.2f} s ({draw['python_s']:.2f} s / {draw['draw_ms']:.0f} ms)",
                f"{box['to_python_s']:.3f} s ({box['papers']:,.0f})",
                f"{box['drawn_back_s']:.3f} s",
            ]
            for box in (small, large)
        ],
        result,
        args.json,
    )
    print("targets at 50,000 papers: first draw ≤ 2 s, box → Python ≤ 0.5 s; medians of --runs")


if __name__ == "__main__":
    main()
