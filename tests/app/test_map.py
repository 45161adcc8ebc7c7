"""The map at a few thousand papers, without building an index: a made-up field of 3,000 papers in
40 fine topics under 9 coarse ones, with long names. Its labels must never collide, in the browser
(zoomed out and in, at two window sizes) and in the PNG; the HTML export works offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.text import Annotation, Text

from paperscope.ui.mapplot import label_anchors, map_payload, save_html, save_png
from tests.conftest import ARTIFACTS, copy_index, paperscope
from tests.support.servers import CHROMIUM, MAP_LABEL_LAYOUT, far_labels

WORDS = """graph neural networks,large language models (LLMs),reinforcement learning,federated learning,
diffusion models,knowledge graphs,multi-agent systems,causal inference,object detection,speech recognition,
time series,combinatorial auctions,theorem proving,point clouds,recommender systems,adversarial robustness""".replace(
    "\n", ""
).split(",")


@pytest.fixture(scope="module")
def field() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Papers, fine topics and coarse topics, shaped like an index's tables."""
    rng = np.random.default_rng(7)
    coarse_centres = rng.uniform(-12, 12, (9, 2))
    parent = np.arange(40) % 9
    fine_centres = coarse_centres[parent] + rng.normal(0, 2.2, (40, 2))
    cluster = rng.integers(-1, 40, 3000)
    xy = fine_centres[np.maximum(cluster, 0)] + rng.normal(0, 0.7, (3000, 2))
    xy[cluster < 0] = rng.uniform(-14, 14, (int((cluster < 0).sum()), 2))
    coarse_cluster = np.where(cluster < 0, -1, parent[np.maximum(cluster, 0)])
    papers = pd.DataFrame(
        {
            "title": [f"Paper {i}: {WORDS[i % len(WORDS)]} at scale" for i in range(3000)],
            "x": xy[:, 0],
            "y": xy[:, 1],
            "cluster": cluster,
            "coarse_cluster": coarse_cluster,
            "map_trust": rng.uniform(0, 1, 3000),
        }
    )

    def topics(labels: np.ndarray, count: int, names) -> pd.DataFrame:
        rows = [np.flatnonzero(labels == topic) for topic in range(count)]
        return pd.DataFrame(
            {
                "cluster": range(count),
                "name": names,
                "size": [len(r) for r in rows],
                "x": [float(np.median(xy[r, 0])) for r in rows],
                "y": [float(np.median(xy[r, 1])) for r in rows],
            }
        )

    fine_names = [f"{WORDS[t % 16]}, {('theory', 'systems', 'benchmarks')[t // 16]}" for t in range(40)]
    coarse_names = [f"{WORDS[(t * 5) % 16]}, {WORDS[(t * 3 + 1) % 16]}" for t in range(9)]
    papers["cluster_name"] = [fine_names[t] if t >= 0 else "unclustered" for t in papers["cluster"]]
    papers["coarse_name"] = [coarse_names[t] if t >= 0 else "unclustered" for t in papers["coarse_cluster"]]
    return papers, topics(cluster, 40, fine_names), topics(coarse_cluster, 9, coarse_names)


def test_a_label_is_anchored_on_its_topics_densest_papers_not_between_its_parts():
    rng = np.random.default_rng(3)
    # One topic in two parts of 100 papers and one paper between them (the member nearest the
    # topic's median, where its label used to go); another topic above; papers of no topic all over.
    left, right, above = rng.normal(0, 0.6, (100, 2)), rng.normal(0, 0.6, (100, 2)), rng.normal(0, 0.6, (40, 2))
    shift = np.array([[12, 0], [6, 9]])
    xy = np.vstack([left, right + shift[0], [[6.5, 0.2]], above + shift[1], rng.uniform(-2, 14, (30, 2))])
    topics = np.r_[np.zeros(201, int), np.ones(40, int), np.full(30, -1)]
    median = np.median(xy[:201], axis=0)
    assert np.argmin(np.hypot(*(xy[:201] - median).T)) == 200  # the stray paper
    anchors = label_anchors(xy[:, 0], xy[:, 1], topics)
    assert sorted(anchors) == [0, 1]
    assert sorted(round(x / 12) for x, _ in anchors[0]) == [0, 1]  # one anchor in each part, none between
    assert all(min(np.hypot(x, y), np.hypot(x - 12, y)) < 1.5 for x, y in anchors[0])
    assert all(tuple(point) in set(map(tuple, xy[:201])) for point in anchors[0])  # papers of the topic
    assert len(anchors[1]) == 1 and np.hypot(anchors[1][0][0] - 6, anchors[1][0][1] - 9) < 1.5


@pytest.fixture(scope="module")
def html_map(field, tmp_path_factory) -> Path:
    papers, fine, coarse = field
    path = tmp_path_factory.mktemp("map") / "map.html"
    import faiss

    points = papers[["x", "y"]].to_numpy(dtype=np.float32)
    search = faiss.IndexFlatL2(2)
    search.add(points)
    knn = search.search(points, 6)[1]
    save_html(map_payload(papers, fine, coarse, key="test", knn=knn) | {"search": True}, path,
              "3,000 made-up papers")  # fmt: skip
    return path


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
@pytest.mark.parametrize("width, height", [(1440, 900), (1280, 720)])
def test_labels_never_collide_at_any_zoom_on_a_few_thousand_papers(browser, html_map, field, width, height):
    _, fine, coarse = field
    page = browser.new_page(viewport={"width": width, "height": height})
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(html_map.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']")
    layout = page.evaluate(MAP_LABEL_LAYOUT)
    assert layout["level"] == "coarse" and len(layout["labels"]) == len(coarse)  # every coarse topic named
    assert layout["overlaps"] == [] and layout["outside"] == []
    assert far_labels(page) == []  # each by its papers
    fonts = {label["text"].replace("\n", " "): label["font"] for label in layout["labels"]}
    by_size = coarse.sort_values("size")["name"].tolist()
    assert [fonts[name] for name in by_size] == sorted(fonts.values())  # label size follows topic size
    page.screenshot(path=str(ARTIFACTS / f"synthetic-map-{width}.png"))
    fine_seen = set()
    for row in fine.sort_values("size", ascending=False).head(4).itertuples():  # zoom in on four topics
        page.get_by_role("button", name="Reset view").click()
        point = page.evaluate(
            "([x, y]) => { const f = document.querySelector('.ps-map'); const m = f.parentElement.__paperscopeMap;"
            " const b = f.getBoundingClientRect(); return [b.left + m.px(x), b.top + m.py(y)]; }",
            [row.x, row.y],
        )
        page.mouse.move(*point)
        for _ in range(5):
            page.mouse.wheel(0, -120)
        page.wait_for_selector(".ps-map[data-label-level='fine']")
        zoomed = page.evaluate(MAP_LABEL_LAYOUT)
        assert zoomed["overlaps"] == [] and zoomed["outside"] == [] and far_labels(page) == []
        fine_seen |= {label["text"].replace("\n", " ") for label in zoomed["labels"]}
    assert fine_seen <= set(fine["name"]) and len(fine_seen) >= 4
    page.screenshot(path=str(ARTIFACTS / f"synthetic-map-{width}-zoomed.png"))
    assert {url.split(":")[0] for url in requests} == {"file"}  # nothing fetched from a network
    page.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_the_html_map_finds_titles_and_shows_a_clicked_papers_neighbours(browser, html_map, field):
    papers = field[0]
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(html_map.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']")
    page.get_by_placeholder("Search titles").fill("Paper 1234:")
    page.wait_for_selector("text=1 matching titles")
    page.get_by_placeholder("Search titles").fill("theorem proving")
    expected = int(papers["title"].str.contains("theorem proving").sum())
    page.wait_for_selector(f"text={expected:,} matching titles")
    page.get_by_placeholder("Search titles").fill("")
    row = int(papers.index[papers["cluster"] >= 0][0])
    point = page.evaluate(
        "(row) => { const f = document.querySelector('.ps-map'); const m = f.parentElement.__paperscopeMap;"
        " const b = f.getBoundingClientRect(); return [b.left + m.px(m.x[row]), b.top + m.py(m.y[row])]; }",
        row,
    )
    page.mouse.click(*point)
    page.wait_for_selector(".ps-status ol li")
    listed = page.locator(".ps-status ol li").all_inner_texts()
    assert page.locator(".ps-status b").inner_text() == papers["title"][row]
    assert 4 <= len(listed) <= 6 and all(title.startswith("Paper ") for title in listed)
    page.close()


MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"
# What the canvas above the labels holds inside each placed label's box (2 px in: leader lines end on its edge).
OVER_LABELS = f"""() => {{ const map = {MAP}; const context = map.marks.getContext('2d');
  const ratio = map.marks.width / map.width;
  return map.labels.filter((label) => label.placed).map((label) => {{
    const b = label.box;
    const [x, y, w, h] = [b.x + 2, b.y + 2, b.w - 4, b.h - 4].map((v) => v * ratio);
    const pixels = context.getImageData(x, y, w, h).data;
    let painted = 0;
    for (let i = 3; i < pixels.length; i += 4) painted += pixels[i] > 0;
    return painted; }}); }}"""


def _open(browser, html_map):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(html_map.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']")
    return page


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_search_markers_lie_under_the_topic_labels(browser, html_map, field):
    page = _open(browser, html_map)
    for words in ("theorem proving", "Paper"):  # ringed, and drawn in full colour
        count = int(field[0]["title"].str.contains(words).sum())
        page.get_by_placeholder("Search titles").fill(words)
        page.wait_for_selector(f"text={count:,} matching titles")
        page.wait_for_function(f"() => {MAP}.chosen.size === {count} && !{MAP}.pending")
        assert page.evaluate(f"() => {MAP}.labels.filter((label) => label.placed).length") >= 5
        assert set(page.evaluate(OVER_LABELS)) == {0}, words  # nothing drawn over a label
    layers = page.evaluate(
        f"() => {{ const m = {MAP}; const order = [...m.frame.children];"
        " return [m.points, m.marks, m.labelLayer].map((layer) => order.indexOf(layer)); }"
    )
    assert layers == sorted(layers)  # the labels above both canvases: a star's lines pass under them too
    page.close()


def _point(page, row: int) -> list[float]:
    return page.evaluate(
        f"(row) => {{ const m = {MAP}; const b = m.frame.getBoundingClientRect(); "
        "return [b.left + m.px(m.x[row]), b.top + m.py(m.y[row])]; }",
        row,
    )


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_the_tooltip_goes_on_a_zoom_and_names_the_paper_under_the_pointer_after(browser, html_map, field):
    papers = field[0]
    page = _open(browser, html_map)
    row = int(papers.index[papers["cluster"] >= 0][10])
    x, y = _point(page, row)
    page.mouse.move(x, y)
    tip = page.locator(".ps-tip")
    page.wait_for_function(f"() => {MAP}.hover === {row}")
    assert tip.is_visible() and papers["title"][row] in tip.inner_text()
    page.mouse.wheel(0, -120)
    page.wait_for_function("() => getComputedStyle(document.querySelector('.ps-tip')).display === 'none'")
    assert page.evaluate(f"() => {MAP}.hover") == -1  # no ring left on a paper the pointer is not on
    page.mouse.move(x + 1, y)
    page.wait_for_function(f"() => {MAP}.hover >= 0")
    under = page.evaluate(f"([x, y]) => {{ const m = {MAP}; const b = m.frame.getBoundingClientRect(); "
                          "return m.nearest(x - b.left, y - b.top); }", [x + 1, y])  # fmt: skip
    assert page.evaluate(f"() => {MAP}.hover") == under and papers["title"][under] in tip.inner_text()
    page.mouse.down()  # a pan hides it too
    page.mouse.move(x + 40, y + 30)
    page.wait_for_function("() => getComputedStyle(document.querySelector('.ps-tip')).display === 'none'")
    page.mouse.up()
    page.close()


def _zoom_after(page, events: list[tuple[float, int]]) -> float:
    """The zoom after wheel events (deltaY, deltaMode) at the map's centre, from the whole map in view."""
    page.get_by_role("button", name="Reset view").click()
    page.wait_for_function("() => document.querySelector('.ps-map').dataset.zoom === '1.000'")
    page.evaluate(
        f"""(events) => {{ const m = {MAP}; const b = m.frame.getBoundingClientRect();
          for (const [deltaY, deltaMode] of events) m.frame.dispatchEvent(new WheelEvent('wheel', {{deltaY, deltaMode,
            clientX: b.left + b.width / 2, clientY: b.top + b.height / 2, bubbles: true, cancelable: true}})); }}""",
        events,
    )
    page.wait_for_function(f"() => !{MAP}.pending")
    return float(page.locator(".ps-map").get_attribute("data-zoom"))


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_the_wheel_takes_five_notches_to_switch_levels_and_cannot_race_in(browser, html_map):
    page = _open(browser, html_map)
    four, five = _zoom_after(page, [(-100, 0)] * 4), _zoom_after(page, [(-100, 0)] * 5)
    assert four < 1.8 <= five < 2.0 and page.locator(".ps-map").get_attribute("data-label-level") == "fine"
    assert _zoom_after(page, [(-3, 1)] * 5) == five  # in lines (Firefox) as in pixels
    assert _zoom_after(page, [(-2400, 0)]) == _zoom_after(page, [(-100, 0)])  # a fast spin is one notch at a time
    assert 1 < _zoom_after(page, [(-4, 0)] * 5) < 1.05  # a touchpad's small steps, gently
    deepest = _zoom_after(page, [(-100, 0)] * 200)
    in_view = page.evaluate(f"""() => {{ const m = {MAP}; let n = 0;
      for (let i = 0; i < m.count; i++) {{ const x = m.px(m.x[i]), y = m.py(m.y[i]);
        n += x >= 0 && y >= 0 && x <= m.width && y <= m.height; }} return n; }}""")  # fmt: skip
    assert deepest < 40 and in_view >= 5  # never down to a few points of 3,000
    page.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_a_hostile_title_stays_text_in_the_html_map(browser, field, tmp_path):
    papers, fine, coarse = (table.copy() for table in field)
    hostile = "</script><script>alert(1)</script><!-- <b>bold</b>"
    papers.loc[0, "title"] = hostile
    fine.loc[0, "name"] = "<img src=x onerror=alert(2)>"
    path = tmp_path / "hostile.html"
    save_html(map_payload(papers, fine, coarse, key="hostile"), path, "<i>title</i>")
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']")
    first_title = "() => document.querySelector('.ps-map').parentElement.__paperscopeMap.payload.titles[0]"
    assert page.evaluate(first_title) == hostile
    assert page.locator("h1").inner_text() == "<i>title</i>" and page.locator("img, b").count() == 0
    assert dialogs == []
    page.close()


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["synthetic", "sample"])
def test_the_png_places_labels_that_never_overlap(field, sample_index, corpus, capfd):
    papers, coarse = (field[0], field[2]) if corpus == "synthetic" else (
        sample_index.papers, sample_index.topics.table("coarse"))  # fmt: skip
    path = ARTIFACTS / f"map-{corpus}.png"
    figure = save_png(papers, path, f"{len(papers)} papers")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert capfd.readouterr() == ("", "")  # no progress bar or message of the label placement
    _labels_are_readable_and_near_their_topics(figure)
    renderer = FigureCanvasAgg(figure).get_renderer()
    canvas = figure.bbox
    names = set(coarse["name"])  # as the app names the whole map
    drawn = [t for t in figure.axes[0].texts if isinstance(t, Annotation)]  # the rest are invisible measures
    labels = [(t.get_text().replace("\n", " "), Text.get_window_extent(t, renderer)) for t in drawn]
    assert {text for text, _ in labels} == names  # every topic named
    overlapping = [
        (a, b, box_a.bounds, box_b.bounds)
        for i, (a, box_a) in enumerate(labels)
        for b, box_b in labels[i + 1 :]
        if box_a.overlaps(box_b)
    ]
    assert overlapping == []
    assert all(canvas.contains(box.x0, box.y0) and canvas.contains(box.x1, box.y1) for _, box in labels)


def _contrast_on_white(colour) -> float:
    """WCAG's contrast ratio of ``colour`` on white (4.5 and up: readable text)."""
    channels = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 1.05 / (0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2] + 0.05)


def _crossing(a, b, c, d) -> bool:
    """Whether the segments ab and cd cross."""

    def turn(p, q, r):
        return (r[1] - p[1]) * (q[0] - p[0]) > (q[1] - p[1]) * (r[0] - p[0])

    return turn(a, c, d) != turn(b, c, d) and turn(a, b, c) != turn(a, b, d)


def _labels_are_readable_and_near_their_topics(figure) -> None:
    """Dark, not thin, label text; each label at most a short line (100 px) from its topic, no two lines crossing."""
    axes = figure.axes[0]
    renderer = FigureCanvasAgg(figure).get_renderer()
    drawn = [t for t in axes.texts if isinstance(t, Annotation)]
    assert min(_contrast_on_white(t.get_color()) for t in drawn) >= 4.5
    assert min(t.get_fontweight() for t in drawn) >= 500
    lines = []
    for text in drawn:
        box, topic = Text.get_window_extent(text, renderer), axes.transData.transform(text.xy)
        lines.append((topic, np.clip(topic, [box.x0, box.y0], [box.x1, box.y1])))  # to the box's nearest point
    assert max(float(np.linalg.norm(a - b)) for a, b in lines) <= 100
    assert not [i for i, (a, b) in enumerate(lines) for c, d in lines[i + 1 :] if _crossing(a, b, c, d)]


@pytest.mark.slow
def test_map_export_from_the_command_line(sample_index_dir, tmp_path):
    result = paperscope("map", "--index", sample_index_dir, "-o", tmp_path / "map.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "map.html").read_text()
    assert "paperscopeMap" in page and "ASDSV: Approximate Speculative Diffusion" in page
    assert "src=" not in page and "https://" not in page  # self-contained
    bad = paperscope("map", "--index", sample_index_dir, "-o", tmp_path / "map.svg")
    assert bad.returncode == 2 and "give a file name ending in .png or .html" in bad.stderr


@pytest.mark.slow
def test_after_a_remap_the_png_and_html_exports_name_the_remap_s_topics(sample_index_dir, tmp_path):
    from PIL import Image

    from paperscope import PaperIndex

    folder = copy_index(sample_index_dir, tmp_path / "index")
    paperscope("remap", "--topics", "2", "--index", folder, here=True, check=True)
    remapped = set(PaperIndex.load(folder).topics.table("coarse")["name"])
    assert len(remapped) == 2 and remapped != set(PaperIndex.load(sample_index_dir).topics.table("coarse")["name"])
    for suffix in ("png", "html"):
        paperscope("map", "-o", tmp_path / f"map.{suffix}", "--index", folder, here=True, check=True)
    drawn = Image.open(tmp_path / "map.png").text["Description"].splitlines()
    assert drawn[0] == "topics named:" and set(drawn[1:]) == remapped  # was the build's fine clusters
    page = (tmp_path / "map.html").read_text()
    payload = json.loads(re.search(r"^const PAYLOAD = (.*);$", page, re.MULTILINE)[1].replace("<\\/", "</"))
    assert {label["text"] for label in payload["labels"] if label["level"] == "coarse"} == remapped  # zoomed out
    assert set(payload["coarse_names"]) - {"unclustered"} == remapped  # the hover's names
