"""The map at a few thousand papers, without building an index: a made-up field of 3,000 papers in
40 fine topics under 9 coarse ones, with long names. Its labels must never collide, in the browser
(zoomed out and in, at two window sizes) and in the PNG; the HTML export works offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Annotation, Text

from paperscope.ui.mapplot import map_payload, save_html, save_png
from tests.conftest import ARTIFACTS
from tests.servers import CHROMIUM, MAP_LABEL_LAYOUT

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
        assert zoomed["overlaps"] == [] and zoomed["outside"] == []
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
def test_the_png_places_labels_that_never_overlap(field, sample_index, corpus):
    papers, fine, coarse = field if corpus == "synthetic" else (
        sample_index.papers, sample_index.topic_table("fine"), sample_index.topic_table("coarse"))  # fmt: skip
    path = ARTIFACTS / f"map-{corpus}.png"
    figure = save_png(papers, fine, path, f"{len(papers)} papers")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    renderer = FigureCanvasAgg(figure).get_renderer()
    canvas = figure.bbox
    names = set((fine if len(fine) <= 40 else coarse)["name"])
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


def test_map_export_from_the_command_line(sample_index_dir, tmp_path):
    paperscope = [sys.executable, "-m", "paperscope.ui.cli", "map", "--index", str(sample_index_dir), "-o"]
    result = subprocess.run([*paperscope, str(tmp_path / "map.html")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "map.html").read_text()
    assert "paperscopeMap" in page and "ASDSV: Approximate Speculative Diffusion" in page
    assert "src=" not in page and "https://" not in page  # self-contained
    bad = subprocess.run([*paperscope, str(tmp_path / "map.svg")], capture_output=True, text=True)
    assert bad.returncode == 2 and "written as .png or .html" in bad.stderr
