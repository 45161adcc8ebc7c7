"""The map as a two-way Jupyter widget (``ix.map.widget()``, ui/widget.py).

First its state from Python (what the browser would send is set as the browser sets it), then
for real: JupyterLab 4 and Notebook 7 started here, offline, the notebook run in Chromium, a box
drawn in the widget and ``w.selected`` read back through the kernel; a selection, a query and a
colouring set in the kernel and read from the page. The screenshot lands in tests/artifacts/.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from paperscope import PaperIndex, UserError
from paperscope.ui.mapplot import COLOUR_CATEGORIES, map_colours
from tests.conftest import ARTIFACTS, copy_index
from tests.support.servers import CHROMIUM, Kernel, jupyter_server, open_notebook, run_cells

MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"


@pytest.fixture
def copied_index(sample_index_dir, tmp_path, monkeypatch) -> PaperIndex:
    """A copy of the sample index (its curations and collections its own), with a data folder of its own."""
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    copy_index(sample_index_dir, tmp_path / "index")
    return PaperIndex.load(tmp_path / "index")


def test_loading_an_index_imports_no_widget_code(sample_index_dir):
    code = (
        f"import sys; from paperscope import PaperIndex; PaperIndex.load({str(sample_index_dir)!r}); "
        "print(sorted(m for m in ('anywidget', 'ipywidgets', 'paperscope.ui.widget') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_widget_module_is_self_contained(sample_index):
    widget = sample_index.map.widget()
    assert "class PaperscopeMap" in widget._esm and "export default" in widget._esm
    assert not re.search(r"^\s*import\b|\bimport\(|https?://", widget._esm, re.MULTILINE)  # nothing fetched
    assert ".ps-map" in widget._css and ".ps-legend" in widget._css
    points = widget._points
    assert points["count"] == len(sample_index) and points["titles"] == sample_index.papers["title"].tolist()
    names = {label["text"] for label in points["labels"] if label["level"] == "coarse"}
    assert names == set(sample_index.topics.table("coarse")["name"])


def test_a_selection_in_the_map_comes_back_as_ids_and_papers(sample_index):
    widget = sample_index.map.widget()
    seen = []
    widget.on_select(seen.append)
    widget._rows = [3, 1, 4]  # what the browser sends after a box or lasso
    ids = sample_index.papers["id"].iloc[[3, 1, 4]].tolist()
    assert widget.selected == ids and seen == [ids]
    assert widget.selection["id"].tolist() == ids and "abstract" in widget.selection
    assert widget.selected_rows.tolist() == [3, 1, 4] and widget._focus["chosen"] == [3, 1, 4]
    widget._rows = [7]  # a click
    assert widget.selected == [sample_index.papers["id"][7]] and len(seen) == 2
    widget.on_select(seen.append, remove=True)
    widget._rows = []
    assert widget.selected == [] and widget.selection.empty and len(seen) == 2


def test_a_selection_set_from_python_is_sent_to_the_map(sample_index):
    widget = sample_index.map.widget()
    ids = sample_index.papers["id"]
    widget.selected = ids.iloc[[9, 2]]  # a Series, an array or a list
    assert widget._rows == [9, 2] and widget._focus["chosen"] == [9, 2] and widget.selected == ids[[9, 2]].tolist()
    widget.selected = np.array([ids[5], ids[5]])
    assert widget._rows == [5]
    with pytest.raises(UserError, match="not-a-paper"):
        widget.selected = [ids[1], "not-a-paper"]
    assert widget._rows == [5]
    widget.selected = ids[0]
    assert widget._rows == [0]


def test_a_query_is_starred_and_joined_to_its_results(sample_index):
    widget = sample_index.map.widget(k=5)
    widget.query = "graph neural networks"
    expected = sample_index.search("graph neural networks", k=5).to_pandas()
    assert widget.query_results["id"].tolist() == expected["id"].tolist()
    assert widget._focus["neighbours"] == sample_index.rows(expected["id"].tolist()).tolist()
    star = sample_index.map.position(sample_index.embed_query("graph neural networks"))
    assert widget._focus["star"] == pytest.approx(star.tolist())
    widget.query = ""
    assert widget._focus["star"] is None and widget._focus["neighbours"] == [] and widget.query_results.empty


def test_colour_by_a_column_names_its_values_or_its_range(sample_index):
    widget = sample_index.map.widget(colour_by="venue")
    [item] = widget._colour["legend"]["items"]
    assert item["text"] == f"{sample_index.papers['venue'][0]} ({len(sample_index)})"
    widget.colour_by = "tokens"
    legend = widget._colour["legend"]
    assert legend["kind"] == "scale"
    assert (legend["low"], legend["high"]) == (
        str(sample_index.papers["tokens"].min()),
        str(sample_index.papers["tokens"].max()),
    )
    with pytest.raises(UserError, match="no column 'nope'"):
        widget.colour_by = "nope"
    assert widget.colour_by == "tokens"
    widget.colour_by = None
    assert widget._colour == {}


def test_map_colours_of_many_words_missing_values_and_numbers():
    words = [f"value {i % 20}" for i in range(200)] + [None, ["a", "b"]]
    colour = map_colours(words, "venue")
    codes = np.frombuffer(base64.b64decode(colour["values"]), dtype=np.int16)
    items = [item["text"] for item in colour["legend"]["items"]]
    assert len(items) == COLOUR_CATEGORIES + 2 and items[-2:] == ["other (81)", "no value (1)"]
    assert (
        codes[200] == -1 and codes[:20].max() == COLOUR_CATEGORIES and len(colour["palette"]) == COLOUR_CATEGORIES + 1
    )
    numbers = map_colours(pd.Series([2020, 2022, None, 2024], dtype="Int64"), "year")
    codes = np.frombuffer(base64.b64decode(numbers["values"]), dtype=np.int16)
    assert codes.tolist() == [0, 16, -1, 31] and (numbers["legend"]["low"], numbers["legend"]["high"]) == (
        "2020",
        "2024",
    )


def test_collections_and_curated_names_show_in_the_widget(copied_index):
    index = copied_index
    ids = index.papers["id"]
    widget = index.map.widget(colour_by="collection")
    assert widget._colour["legend"]["items"] == [{"text": f"no value ({len(index)})", "colour": "#c8c8c8"}]
    widget.selected = ids[:3]
    widget.add_to_collection("reading list")
    assert [item["text"] for item in widget._colour["legend"]["items"]] == [
        "reading list (3)",
        f"no value ({len(index) - 3})",
    ]
    widget.selected = []
    widget.select_collection("reading list")
    assert widget.selected == ids[:3].tolist()
    index.topics.rename(0, "renamed by hand")
    widget.refresh()
    assert "renamed by hand" in {label["text"] for label in widget._points["labels"]}
    again = PaperIndex.load(index.folder).map.widget()  # curations apply at load
    assert "renamed by hand" in {label["text"] for label in again._points["labels"]}


@pytest.mark.filterwarnings("ignore:Consider using IPython.display.IFrame")  # what notebook_map has always drawn
def test_the_static_notebook_map_still_holds_the_map(sample_index):
    from paperscope.ui.mapplot import notebook_map

    frame = notebook_map(sample_index.papers, sample_index.topics.table("fine"), sample_index.topics.table("coarse"))
    assert frame.data.startswith("<iframe srcdoc=") and "class PaperscopeMap" in frame.data


# --- for real, in JupyterLab and Notebook 7 ------------------------------------------------------

WIDGET_CELL = """from paperscope import PaperIndex

ix = PaperIndex.load({folder!r})
w = ix.map.widget(height=560)
w"""


def _notebook(folder: Path, index_dir: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(WIDGET_CELL.format(folder=str(index_dir)))]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, folder / "widget.ipynb")


def _screen_points(page, rows) -> list[list[float]]:
    """Where the papers at ``rows`` are drawn on the page, from the map's own projection."""
    return page.evaluate(
        f"""(rows) => {{ const map = {MAP}; const box = map.frame.getBoundingClientRect();
              return rows.map(row => [box.left + map.px(map.x[row]), box.top + map.py(map.y[row])]); }}""",
        [int(row) for row in rows],
    )


def _opacity(page, rows) -> list[int]:
    """How opaque the map is drawn at the papers of ``rows``: the larger alpha of its two canvases
    (points, with the rings of chosen papers under the labels; marks: star, hover)."""
    return page.evaluate(
        f"""(rows) => {{ const map = {MAP}; const ratio = window.devicePixelRatio || 1;
              const alpha = (canvas, x, y) => canvas.getContext('2d').getImageData(x, y, 1, 1).data[3];
              return rows.map(row => {{ const x = Math.round(map.px(map.x[row]) * ratio);
                                        const y = Math.round(map.py(map.y[row]) * ratio);
                                        return Math.max(alpha(map.points, x, y), alpha(map.marks, x, y)); }}); }}""",
        [int(row) for row in rows],
    )


def _draw_a_box(page, index) -> np.ndarray:
    """Drag a box around the largest coarse topic in Box mode; the rows drawn inside it."""
    topic = index.topics.table("coarse").sort_values("size").iloc[-1]
    members = np.flatnonzero(index.papers["coarse_cluster"] == topic["cluster"])
    points = np.array(_screen_points(page, members))
    (left, top), (right, bottom) = points.min(axis=0) - 3, points.max(axis=0) + 3
    everything = np.array(_screen_points(page, range(len(index))))
    inside = np.flatnonzero(
        (everything[:, 0] >= left)
        & (everything[:, 0] <= right)
        & (everything[:, 1] >= top)
        & (everything[:, 1] <= bottom)
    )
    assert set(members) <= set(inside)
    page.locator(".ps-map").get_by_role("button", name="Box", exact=True).click()
    page.mouse.move(left, top)
    page.mouse.down()
    page.mouse.move((left + right) / 2, (top + bottom) / 2, steps=4)
    page.mouse.move(right, bottom, steps=4)
    page.mouse.up()
    return inside


def _far_from(page, index, rows, count: int = 3, pixels: float = 14) -> list[int]:
    """``count`` papers drawn at least ``pixels`` away from those of ``rows`` (and from each other)."""
    everything = np.array(_screen_points(page, range(len(index))))
    taken, found = list(rows), []
    for row in range(len(index)):
        if len(found) < count and np.linalg.norm(everything[taken] - everything[row], axis=1).min() >= pixels:
            found.append(row)
            taken.append(row)
    return found


def _wait_until_drawn(page) -> None:
    page.wait_for_function(f"() => !{MAP}.pending")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_the_widget_in_jupyter_sends_a_box_to_the_kernel_and_draws_what_the_kernel_sets(
    app, browser, sample_index, sample_index_dir, tmp_path
):
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks", sample_index_dir)
    with jupyter_server(tmp_path / "notebooks", tmp_path / "jupyter", app) as (url, runtime):
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        requested = []
        page.on("request", lambda request: requested.append(request.url))
        page.on("websocket", lambda socket: requested.append(socket.url))
        kernel = Kernel(runtime / f"kernel-{open_notebook(page, url, app, 'widget.ipynb')}.json")
        run_cells(page)
        page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
        try:
            # A box around the largest coarse topic: the kernel's w.selected is the papers drawn inside it.
            inside = _draw_a_box(page, sample_index)
            expected = sample_index.papers["id"].iloc[inside].tolist()
            assert kernel.wait_for("w.selected", expected) == expected
            assert kernel.value("w.selection['id'].tolist()") == expected

            # A selection set in the kernel is drawn: the map's own state, and opaque rings where dimmed points were.
            page.mouse.move(2, 2)  # no hover ring
            others = _far_from(page, sample_index, inside)
            before = _opacity(page, others)
            kernel.run(f"w.selected = ix.papers['id'].iloc[{others}].tolist()")
            page.wait_for_function(
                f"(rows) => {MAP}.chosen.size === rows.length && rows.every(row => {MAP}.chosen.has(row))",
                arg=others,
                timeout=30_000,
            )
            _wait_until_drawn(page)
            assert max(before) < 255 and _opacity(page, others) == [255] * len(others)

            # A query from the kernel: its star where the index places it, joined to its 10 results.
            kernel.run("w.query = 'graph neural networks'")
            page.wait_for_function(f"() => {MAP}.star && {MAP}.neighbours.length === 10", timeout=60_000)
            expected = sample_index.map.position(sample_index.embed_query("graph neural networks"))
            assert page.evaluate(f"() => {MAP}.star") == pytest.approx(expected.tolist(), abs=1e-4)
            _wait_until_drawn(page)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / ("widget.png" if app == "lab" else "widget-notebook7.png")))

            # Colour by a column: its legend, text only.
            kernel.run("w.colour_by = 'venue'")
            legend = page.locator(".ps-map .ps-legend")
            legend.wait_for(timeout=30_000)
            venue = sample_index.papers["venue"][0]
            assert legend.inner_text().splitlines() == ["venue", f"{venue} ({len(sample_index)})"]
            kernel.run("w.colour_by = 'tokens'; w.query = ''")
            page.wait_for_function(f"() => {MAP}.legend?.textContent.startsWith('tokens') && !{MAP}.star")
            _wait_until_drawn(page)
            page.locator(".ps-map").screenshot(path=str(ARTIFACTS / f"widget-colour-{app}.png"))
        finally:
            kernel.close()
        with urllib.request.urlopen(f"{url}/api/sessions") as answer:
            assert [session["path"] for session in json.load(answer)] == ["widget.ipynb"]
        page.close()
    local = (url, url.replace("http://", "ws://"), "blob:", "data:")
    assert [address for address in requested if not address.startswith(local)] == []  # nothing left the server
