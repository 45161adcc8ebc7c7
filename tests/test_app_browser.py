"""End to end: the real Streamlit server driven by Debian's Chromium through Playwright.

Screenshots land in tests/artifacts/ for a person to look at.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paperscope.ui.server import CHROMIUM, CHROMIUM_FLAGS, free_port, wait_until_healthy
from tests.conftest import ARTIFACTS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)"),
]


@pytest.fixture(scope="module")
def server(sample_index_dir):
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "paperscope.ui.cli",
            "app",
            "--index",
            str(sample_index_dir),
            "--port",
            str(port),
            "--headless",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_until_healthy(url, process, timeout=60):
        process.kill()
        pytest.fail(process.stdout.read().decode())
    yield url
    process.terminate()
    process.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    yield page
    page.close()


def _result_titles(page) -> list[str]:
    return [t.strip() for t in page.locator(".ps-title").all_inner_texts()]


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def test_typing_a_query_shows_results_and_the_url_keeps_it(server, page, sample_index):
    page.goto(server)
    box = page.get_by_label("Search by text")
    box.fill("speculative decoding to accelerate diffusion transformers")
    box.press("Enter")
    page.wait_for_selector(".ps-title", timeout=60_000)
    titles = _result_titles(page)
    assert titles[0].startswith("1. ASDSV") and len(titles) == 10
    page.wait_for_function("() => location.search.includes('q=')", timeout=10_000)
    assert "k=10" in page.url
    page.get_by_text("Abstract and why similar").first.click()
    page.wait_for_selector("mark", timeout=60_000)  # shared terms highlighted
    _shot(page, "query.png")


def test_clicking_a_point_on_the_map_selects_that_paper(server, page, sample_index):
    page.goto(server)
    page.wait_for_selector(".js-plotly-plot .xy", timeout=60_000)
    target = sample_index.papers.iloc[5]
    point = page.evaluate(
        """([x, y]) => { const gd = document.querySelector('.js-plotly-plot');
              const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
              const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
              return [box.left + xa.l2p(x), box.top + ya.l2p(y)]; }""",
        [float(target["x"]), float(target["y"])],
    )
    page.mouse.click(*point)
    page.wait_for_function(f"() => location.search.includes('paper={target['id']}')", timeout=30_000)
    page.wait_for_selector("text=Most similar to", timeout=30_000)
    assert target["title"][:30] in page.locator(".ps-selected").inner_text()
    assert target["title"] not in " ".join(_result_titles(page))
    _shot(page, "map-click.png")


def test_a_paper_link_opens_with_that_paper_selected(server, page, sample_index):
    paper_id = sample_index.papers["id"][20]
    page.goto(f"{server}/?paper={paper_id}&k=4")
    page.wait_for_selector(".ps-title", timeout=60_000)
    expected = sample_index.similar(paper_id, k=4)["title"].tolist()
    assert [t.split(". ", 1)[1] for t in _result_titles(page)] == expected
    _shot(page, "paper-link.png")


def test_uploading_a_corpus_builds_it_and_switches_to_it(server, page, tmp_path):
    upload = tmp_path / "My Reading List.csv"
    abstracts = [
        "Protein structure prediction with graph neural networks and attention.",
        "Reinforcement learning for robot locomotion over rough terrain.",
        "Retrieval-augmented language models answer open-domain questions.",
        "Sparse mixture-of-experts layers scale transformer language models.",
        "Diffusion models generate molecules with desired chemical properties.",
    ]
    upload.write_text("title,abstract\n" + "\n".join(f'"Paper {i}","{a}"' for i, a in enumerate(abstracts)))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"abstract": "fine"}\n{"abstract": \n')
    disguised = tmp_path / "image.csv"
    disguised.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    oversized = tmp_path / "huge.csv"
    oversized.write_bytes(b"abstract\n" + b"x" * (51 * 1024 * 1024))
    page.goto(server)
    page.get_by_text("Add a corpus").click()
    page.locator("input[type=file]").set_input_files(str(broken))
    page.wait_for_selector("text=broken.jsonl:2: broken JSON line", timeout=60_000)
    page.locator("input[type=file]").set_input_files(str(disguised))
    page.wait_for_selector(r"text=/image\.csv:\d+: binary data/", timeout=60_000)  # content, not name, decides
    page.locator("input[type=file]").set_input_files(str(oversized))
    # Refused before upload: the file is marked invalid and never reaches the server.
    page.wait_for_selector("[data-testid='stFileChip'][aria-invalid='true'][aria-label^='huge.csv']", timeout=60_000)
    _shot(page, "upload-refused.png")
    page.locator("input[type=file]").set_input_files(str(upload))
    page.wait_for_selector("text=5 papers ·", timeout=180_000)
    assert re.search(r"my-reading-list-[0-9a-f]{8}", page.locator("body").inner_text())  # the header names it
    box = page.get_by_label("Search by text")
    box.fill("language models")
    box.press("Enter")
    page.wait_for_selector(".ps-title", timeout=60_000)
    assert {t.split(". ", 1)[1] for t in _result_titles(page)[:2]} == {"Paper 2", "Paper 3"}
    _shot(page, "upload.png")
