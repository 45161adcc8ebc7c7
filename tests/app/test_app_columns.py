"""The corpus's own columns (text, number, date, list) in the app and the map widget: filtered by,
coloured by, their values shown escaped. One corpus of the sample's 38 abstracts with a decision
(text), a review score (number), a publication date, tags (a list) and a note that holds HTML and
a control character in every fourth paper.

The browser tests drive a real ``paperscope app`` in Chromium; their screenshots land in
tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import base64
import datetime
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex
from paperscope.errors import UserError, shown
from paperscope.ui.collections_view import plain
from tests.conftest import APP, ARTIFACTS
from tests.support.servers import CHROMIUM, paperscope_server

HOSTILE = "<img src=x onerror=alert(1)>\x07bell"
SHOWN_HOSTILE = "<img src=x onerror=alert(1)>\\x07bell"  # as the app writes it: on one line, the bell escaped
TAGS = ["graphs", "vision", "language", "theory", "robotics"]
DECISIONS = ["Accept (oral)", "Accept (poster)", "Reject"]
QUERY = "neural networks"

needs_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)"
)


@pytest.fixture(scope="module")
def columns_index_dir(tmp_path_factory, data_home) -> Path:
    """The index of the sample's abstracts with four columns of their own and a hostile one."""
    from paperscope import build_index, locations
    from tests.support.corpora import read_corpus

    folder = tmp_path_factory.mktemp("columns")
    papers, _ = read_corpus(locations.bundled_corpus())
    records = [
        {
            "id": f"c{i}",
            "title": paper.title,
            "abstract": paper.abstract,
            "decision": DECISIONS[i % 3],
            "review_score": 1 + (i * 7) % 10,
            "published": (datetime.date(2024, 1, 1) + datetime.timedelta(days=9 * i)).isoformat(),
            "tags": [TAGS[i % 5]] + ([TAGS[(i // 5) % 5]] if i % 2 else []),
            "note": HOSTILE if i % 4 == 0 else f"plain note {i % 3}",
        }
        for i, paper in enumerate(papers.itertuples())
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(record) for record in records) + "\n")
    build_index([folder / "corpus.jsonl"], folder / "index")
    return folder / "index"


@pytest.fixture(scope="module")
def columns_index(columns_index_dir) -> PaperIndex:
    return PaperIndex.load(columns_index_dir)


def _codes(colour: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(colour["values"]), dtype=np.int16)


# --- the widget: colour by a number, a date, a list; an unknown column ------------------------------


@pytest.mark.slow
def test_the_widget_colours_by_a_number_a_date_and_a_list_column(columns_index):
    index = columns_index
    assert index.columns() == {
        "year": "number",
        "decision": "text",
        "review_score": "number",
        "published": "date",
        "tags": "list",
        "note": "text",
    }
    papers = index.papers
    widget = index.map.widget(colour_by="review_score")
    legend = widget._colour["legend"]
    assert legend["kind"] == "scale" and (legend["low"], legend["high"]) == ("1", "10")
    codes = _codes(widget._colour)
    assert codes[papers["review_score"].argmin()] == 0 and codes[papers["review_score"].argmax()] == 31

    widget.colour_by = "published"  # dates: a scale from the first day to the last
    legend = widget._colour["legend"]
    assert legend["kind"] == "scale"
    assert (legend["low"], legend["high"]) == (str(papers["published"].min()), str(papers["published"].max()))
    codes = _codes(widget._colour)
    assert codes[papers["published"].argmin()] == 0 and codes[papers["published"].argmax()] == 31
    assert (np.diff(codes[np.argsort(papers["published"].to_numpy())]) >= 0).all()

    widget.colour_by = "tags"  # a list: each paper by its most common member
    counts = papers["tags"].map(list).explode().value_counts()
    ranked = sorted(counts.index, key=lambda member: (-counts[member], member))
    colour = widget._colour
    assert colour["names"][: len(ranked)] == ranked and colour["title"] == "tags (most common member)"
    expected = [min(tags, key=ranked.index) for tags in papers["tags"]]
    assert [colour["names"][code] for code in _codes(colour)] == expected
    legend_counts = {
        item["text"].rsplit(" (", 1)[0]: int(item["text"].rsplit("(", 1)[1][:-1]) for item in colour["legend"]["items"]
    }
    assert legend_counts == {member: expected.count(member) for member in set(expected)}

    widget.colour_by = "note"  # the hostile value on one line, as text
    assert f"{SHOWN_HOSTILE} ({(papers['note'] == HOSTILE).sum()})" in [
        item["text"] for item in widget._colour["legend"]["items"]
    ]
    with pytest.raises(UserError) as error:
        widget.colour_by = "scores"
    message = str(error.value)
    assert "\n" not in message and "no column 'scores'" in message
    assert "(year, decision, review_score, published, tags, note)" in message
    assert widget.colour_by == "note"


# --- the app's logic (AppTest): a date range, two members of a list ---------------------------------


def _app(index_dir: Path, monkeypatch, **query_params):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr(sys, "argv", ["app.py", "--index", str(index_dir)])
    app = AppTest.from_file(APP, default_timeout=120)
    app.session_state["sidebar_opened"] = True  # in a browser, once a user opens it: its settings drawn
    for key, value in query_params.items():
        app.query_params[key] = value
    return app


def _card_ids(app) -> set[str]:
    bodies = [element.proto.body for element in app.get("html") if "<span class='ps-title'>" in element.proto.body]
    return {body.split("<span title='")[1].split("'")[0] for body in bodies}


def _expected(index: PaperIndex, *groups: list[str]) -> set[str]:
    """The ids of the papers meeting every condition of any of ``groups``."""
    mask = np.logical_or.reduce([index.where(conditions=group) for group in groups])
    return {str(i) for i in np.asarray(index.ids())[mask]}


@pytest.mark.slow
def test_a_date_range_and_two_members_of_a_list_filter_the_results(columns_index_dir, columns_index, monkeypatch):
    index = columns_index
    app = _app(columns_index_dir, monkeypatch, q=QUERY, k="37").run()
    assert not app.exception
    assert len(_card_ids(app)) == len(index) - 1  # k: at most the corpus less one
    app.sidebar.selectbox(key="filter_column").set_value("published").run()
    start, end = datetime.date(2024, 3, 1), datetime.date(2024, 6, 30)
    app.sidebar.date_input(key="column_dates_published").set_value((start, end)).run()
    assert not app.exception and not app.error
    expected = _expected(index, ["published >= 2024-03-01", "published <= 2024-06-30"])
    assert 5 <= len(expected) < len(index) and _card_ids(app) == expected
    app.sidebar.selectbox(key="filter_column").set_value("tags").run()
    app.sidebar.multiselect(key="column_values_tags").set_value(["theory", "robotics"]).run()
    expected = _expected(index, ["tags contains theory"], ["tags contains robotics"])
    assert _card_ids(app) == expected and len(expected) > len(_expected(index, ["tags contains theory"]))
    bodies = "".join(element.proto.body for element in app.get("html"))
    assert "tags: " in bodies  # the filtered column's values on each card


@pytest.mark.slow
def test_a_text_column_of_many_values_is_filtered_by_the_text_it_contains(
    columns_index_dir, columns_index, monkeypatch
):
    from paperscope.ui import columns_view

    monkeypatch.setattr(columns_view, "COLUMN_CHOICES", 3)  # decision's 3 values are listed, note's 4 are too many
    columns_view.column_summary.clear()
    app = _app(columns_index_dir, monkeypatch, q=QUERY, k="37").run()
    app.sidebar.selectbox(key="filter_column").set_value("decision").run()
    assert app.sidebar.multiselect(key="column_values_decision").options == [
        "Accept (oral)",
        "Accept (poster)",
        "Reject",
    ]
    app.sidebar.selectbox(key="filter_column").set_value("note").run()
    app.sidebar.text_input(key="column_text_note").input("<IMG src").run()  # any case
    expected = _expected(columns_index, ['note contains "<img src"'])
    assert not app.exception and len(expected) == (columns_index.papers["note"] == HOSTILE).sum()
    assert _card_ids(app) == expected
    app.sidebar.text_input(key="column_text_note").input("knitting").run()  # no paper's: the box says why
    assert not _card_ids(app) and not app.exception and not app.warning
    notes = Counter(columns_index.papers["note"])
    held = ", ".join(shown(note) for note in sorted(notes, key=lambda note: (-notes[note], note)))  # most common first
    why = f"No paper matches note contains knitting; its values include {held}"
    assert [box.value for box in app.info] == [plain(why) + "."]
    columns_view.column_summary.clear()


@pytest.mark.slow
def test_the_topics_panel_splits_and_compares_by_the_corpus_columns_and_shows_values_as_text(
    columns_index_dir, columns_index, monkeypatch
):
    app = _app(columns_index_dir, monkeypatch, q=QUERY).run()
    app.session_state["topics"] = True  # the panel opened
    app.run()
    assert not app.exception
    assert app.selectbox(key="topics_by").options == list(columns_index.columns())
    app.selectbox(key="topics_by").set_value("note").run()
    headers = app.dataframe[1].value.columns.tolist()
    assert f"{SHOWN_HOSTILE} ({(columns_index.papers['note'] == HOSTILE).sum()})" in headers  # on one line
    app.selectbox(key="compare_column").set_value("note").run()
    assert not app.exception
    groups = app.selectbox(key="compare_a_note")
    assert groups.value == HOSTILE and groups.options[0] == SHOWN_HOSTILE  # the value itself, shown escaped
    caption = next(caption.value for caption in app.caption if caption.value.startswith("A: note="))
    assert caption.startswith("A: note=\\<img src=x onerror=alert\\(1\\)\\>\\\\x07bell (10 papers)")
    for column in ("review_score", "published", "tags"):  # numbers, dates and lists compare without error
        app.selectbox(key="compare_column").set_value(column).run()
        assert not app.exception and not app.error, column


# --- the real app in Chromium -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(columns_index_dir):
    with paperscope_server("app", columns_index_dir, timeout=60) as (url, _):
        yield url


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    yield page
    page.close()


def _idle(page) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=60_000)


def _wait_for_ids(page, expected: set[str]) -> None:
    """Until the result cards show exactly the papers ``expected`` (their ids are on hover)."""
    page.wait_for_function(
        """(expected) => { const shown = [...document.querySelectorAll('.ps-result span[title]')].map((s) => s.title);
              return shown.length === expected.length && expected.every((id) => shown.includes(id)); }""",
        arg=sorted(str(i) for i in expected),
        timeout=60_000,
    )


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the selectbox ``label`` once the app is idle (again if a rerun closes it)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(5):
        _idle(page)
        page.get_by_role("combobox", name=label).click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=5_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"{option!r} never offered in {label!r}")


def _shown_ids(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('.ps-result span[title]')].map((s) => s.title)")


def _open(page, server: str) -> None:
    """The app on a text query with k = 37 (every paper but one), its sidebar open."""
    page.goto(f"{server}/?q={QUERY.replace(' ', '+')}&k=37")
    page.wait_for_selector(".ps-map[data-ready='1']", timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('.ps-result span[title]').length === 37", timeout=60_000)
    _idle(page)
    page.get_by_test_id("stExpandSidebarButton").click()


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_number_range_and_a_list_member_filter_the_results_in_the_browser(server, page, columns_index):
    from playwright.sync_api import expect

    index = columns_index
    _open(page, server)
    page.get_by_text("Filter by a column").click()
    _choose(page, "Column", "review_score")
    low = page.get_by_role("slider", name="review_score — start")
    high = page.get_by_role("slider", name="review_score — end")
    low.focus()
    for _ in range(4):
        low.press("ArrowRight")
    expect(low).to_have_value("5")
    _idle(page)
    high.focus()
    for _ in range(2):
        high.press("ArrowLeft")
    expect(high).to_have_value("8")
    expected = _expected(index, ["review_score >= 5", "review_score <= 8"])
    assert 0 < len(expected) < len(index)
    _wait_for_ids(page, expected)
    scores = page.locator(".ps-result").all_inner_texts()
    assert all(any(f"review_score: {score}" in card for score in (5, 6, 7, 8)) for card in scores)

    _choose(page, "Column", "tags")
    box = page.get_by_role("combobox", name="tags: papers with any of these members")
    box.click()
    page.get_by_role("option", name="theory", exact=True).click()
    expected = _expected(index, ["tags contains theory"])
    assert 0 < len(expected) < 20
    _wait_for_ids(page, expected)
    assert page.dialogs == []


DOTS_MATCH_POINTS = """(rows) => {
  const map = document.querySelector('.ps-map').parentElement.__paperscopeMap;
  const dots = [...document.querySelectorAll('.ps-result .ps-dot')].map((dot) => getComputedStyle(dot).backgroundColor);
  const rgb = (hex) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
  return dots.length === rows.length && rows.every((row, i) => dots[i] === rgb(map.colourOf(row)));
}"""


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_colour_by_a_number_shows_its_range_and_by_text_its_values(server, page, columns_index):
    papers = columns_index.papers
    _open(page, server)
    _choose(page, "Colour the map by", "review_score")
    page.wait_for_function("() => document.querySelector('.ps-map .ps-legend b')?.textContent === 'review_score'")
    low, high = page.locator(".ps-map .ps-scale-ends span").all_inner_texts()
    assert (low, high) == (str(papers["review_score"].min()), str(papers["review_score"].max()))
    _choose(page, "Colour the map by", "decision")
    page.wait_for_function("() => document.querySelector('.ps-map .ps-legend b')?.textContent === 'decision'")
    items = page.locator(".ps-map .ps-legend-item").all_inner_texts()
    counts = papers["decision"].value_counts()
    assert sorted(items) == sorted(f"{value} ({count})" for value, count in counts.items())
    # The points are drawn in the legend's colours: one bucket per decision.
    buckets = page.evaluate("() => document.querySelector('.ps-map').parentElement.__paperscopeMap.buckets.length")
    assert buckets == len(counts)
    # Each card's dot is its point's colour on the map.
    page.wait_for_function(DOTS_MATCH_POINTS, arg=columns_index.rows(_shown_ids(page)).tolist(), timeout=30_000)
    _choose(page, "Colour the map by", "topics (of the level shown)")
    page.wait_for_selector(".ps-map .ps-legend", state="detached", timeout=30_000)


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_hostile_value_is_shown_as_text_in_the_legend_the_tooltip_and_the_cards(server, page, columns_index):
    papers = columns_index.papers
    _open(page, server)
    _choose(page, "Colour the map by", "note")
    page.wait_for_function("() => document.querySelector('.ps-map .ps-legend b')?.textContent === 'note'")
    hostile_count = int((papers["note"] == HOSTILE).sum())
    assert f"{SHOWN_HOSTILE} ({hostile_count})" in page.locator(".ps-map .ps-legend-item").all_inner_texts()
    # Each card shows the coloured column's value, literally.
    page.wait_for_selector(".ps-result >> text=note:", timeout=30_000)
    notes = papers.set_index("id")["note"]
    cards = page.locator(".ps-result").all_inner_texts()
    assert [f"note: {SHOWN_HOSTILE}" in card for card in cards] == [notes[i] == HOSTILE for i in _shown_ids(page)]
    assert sum(f"note: {SHOWN_HOSTILE}" in card for card in cards) >= hostile_count - 1
    # The map's tooltip names it too.
    row = int(np.flatnonzero(papers["note"] == HOSTILE)[0])
    point = page.evaluate(
        """(row) => { const frame = document.querySelector('.ps-map'); const map = frame.parentElement.__paperscopeMap;
              const box = frame.getBoundingClientRect();
              return [box.left + map.px(map.x[row]), box.top + map.py(map.y[row])]; }""",
        row,
    )
    page.mouse.move(*point)
    page.wait_for_selector(".ps-map .ps-tip", state="visible", timeout=10_000)
    hovered = page.evaluate("() => document.querySelector('.ps-map').parentElement.__paperscopeMap.hover")
    assert (papers["note"].iloc[hovered] == HOSTILE) == (
        f"note: {SHOWN_HOSTILE}" in page.locator(".ps-tip").inner_text()
    )
    # Nothing of it became HTML: no image made, no alert.
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], img[onerror]').length") == 0
    assert page.dialogs == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "app-columns-hostile.png"))


# --- the widget in JupyterLab, in Chromium --------------------------------------------------------

WIDGET_MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_widget_in_jupyterlab_colours_by_a_date_and_a_list_and_shows_a_hostile_value_as_text(
    browser, columns_index, columns_index_dir, tmp_path
):
    import nbformat

    from tests.support.servers import Kernel, jupyter_server, open_notebook, run_cells

    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    code = (
        f"from paperscope import PaperIndex\nix = PaperIndex.load({str(columns_index_dir)!r})\nw = ix.map.widget()\nw"
    )
    notebook.cells = [nbformat.v4.new_code_cell(code)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, folder / "columns.ipynb")
    papers = columns_index.papers
    with jupyter_server(folder, tmp_path / "jupyter", "lab") as (url, runtime):
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        kernel = Kernel(runtime / f"kernel-{open_notebook(page, url, 'lab', 'columns.ipynb')}.json")
        try:
            run_cells(page)
            page.wait_for_selector(".ps-map[data-ready='1']", timeout=120_000)
            kernel.run("w.colour_by = 'published'")
            page.wait_for_function(f"() => {WIDGET_MAP}.legend?.textContent.startsWith('published')", timeout=30_000)
            ends = page.locator(".ps-map .ps-scale-ends span").all_inner_texts()
            assert ends == [str(papers["published"].min()), str(papers["published"].max())]
            kernel.run("w.colour_by = 'tags'")
            page.wait_for_function(f"() => {WIDGET_MAP}.legend?.textContent.startsWith('tags')", timeout=30_000)
            items = page.locator(".ps-map .ps-legend-item").all_inner_texts()
            assert [item.rsplit(" (", 1)[0] for item in items] == kernel.value("w._colour['names'][:-1]")
            kernel.run("w.colour_by = 'note'")
            page.wait_for_function(f"() => {WIDGET_MAP}.legend?.textContent.startsWith('note')", timeout=30_000)
            hostile = int((papers["note"] == HOSTILE).sum())
            assert f"{SHOWN_HOSTILE} ({hostile})" in page.locator(".ps-map .ps-legend-item").all_inner_texts()
            assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], img[onerror]').length") == 0
            assert dialogs == []
            page.locator(".ps-map").screenshot(path=str(ARTIFACTS / "widget-columns.png"))
        finally:
            kernel.close()
            page.close()


# --- the static and standalone maps coloured by a column ------------------------------------------


@pytest.mark.slow
def test_the_png_map_coloured_by_a_column_has_its_legend_beside_the_map(columns_index, tmp_path):
    import matplotlib.colors

    from paperscope.ui.mapplot import map_colours, point_colours, save_png

    papers = columns_index.papers
    tags = map_colours(papers["tags"], "tags", "list")
    figure = save_png(papers, tmp_path / "tags.png", "tags", tags)
    legend = figure.axes[0].get_legend()
    assert [text.get_text() for text in legend.get_texts()] == [item["text"] for item in tags["legend"]["items"]]
    assert legend.get_title().get_text() == "tags (most common member)"
    # The points in the legend's colours, each paper in its own.
    scatter = next(found for found in figure.axes[0].collections if len(found.get_offsets()) == len(papers))
    drawn = Counter(matplotlib.colors.to_hex(colour) for colour in scatter.get_facecolors())
    assert drawn == Counter(point_colours(tags))
    scores = map_colours(papers["review_score"], "review_score", "number")
    figure = save_png(papers, tmp_path / "scores.png", "scores", scores)
    [scale] = figure.axes[0].child_axes
    assert [label.get_text() for label in scale.get_xticklabels()] == ["1", "10"]
    assert (tmp_path / "scores.png").stat().st_size > 10_000
    dollars = map_colours(["$x^2$ costs", "$x^2$ costs", None], "price", "text")  # no mathtext: drawn as written
    assert r"\$x^2\$ costs (2)" in [item.get_text() for item in _legend_texts(papers.head(3), dollars, tmp_path)]


def _legend_texts(papers, colour, tmp_path):
    from paperscope.ui.mapplot import save_png

    return save_png(papers, tmp_path / "legend.png", "", colour).axes[0].get_legend().get_texts()


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_html_map_coloured_by_a_column_shows_its_legend_as_text(columns_index, browser, tmp_path):
    from paperscope.ui.mapplot import export_map, map_colours

    papers = columns_index.papers
    note = map_colours(papers["note"], "note", "text")
    path = export_map(papers, columns_index.topics.table("fine"), columns_index.topics.table("coarse"),
                      tmp_path / "map.html", "notes", colour=note)  # fmt: skip
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']", timeout=30_000)
    items = page.locator(".ps-map .ps-legend-item").all_inner_texts()
    assert items == [item["text"] for item in note["legend"]["items"]] and any(SHOWN_HOSTILE in item for item in items)
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], img[onerror]').length") == 0
    assert dialogs == []
    page.close()
