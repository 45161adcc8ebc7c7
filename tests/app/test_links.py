"""Links to open a paper: read from the corpus's url, link, pdf, pdf_url or html_url field, else made
from its DOI or arXiv id; only http(s) links; shown on the app's cards, in the HTML map, in --json and
by the service. One small index (the sample's papers with links) for the module."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from paperscope import PaperIndex, build_index, locations
from paperscope.embed.readers import read_records
from tests.conftest import APP, paperscope
from tests.support.corpora import read_corpus
from tests.support.servers import CHROMIUM

HOSTILE = "javascript:alert(1)"
QUOTED = 'https://example.org/a"onmouseover="alert(2)'  # an http link that must stay one attribute


def _link_fields(i: int) -> dict:
    """Paper ``i``'s link, in one of the fields a corpus may carry it in."""
    return [
        {"pdf": f"https://openreview.net/pdf?id=P{i}"},
        {"pdf_url": f"https://example.org/p{i}.pdf"},
        {"link": f"http://example.org/p{i}"},
        {"html_url": f"https://example.org/html/p{i}"},
        {"doi": f"https://doi.org/10.5555/P{i}"},
        {"arxiv_id": f"arXiv:2501.{i:05d}v2"},
        {"url": HOSTILE},
    ][i % 7]


def _expected(fields: dict) -> str | None:
    (name, value), = fields.items()  # fmt: skip
    if name == "doi":
        return "https://doi.org/" + value.removeprefix("https://doi.org/").lower()
    if name == "arxiv_id":
        return "https://arxiv.org/abs/" + value.removeprefix("arXiv:").removesuffix("v2")
    return None if value == HOSTILE else value


def test_the_readers_take_any_link_field_then_the_doi_then_the_arxiv_id(tmp_path):
    records = [
        {"abstract": "Graph networks on heterophilic graphs.", "pdf": "https://openreview.net/pdf?id=abc"},
        {"abstract": "Diffusion made fast.", "pdf_url": "https://x.org/b.pdf", "doi": "10.1000/b"},
        {"abstract": "Speech at scale.", "html_url": "https://x.org/c"},
        {"abstract": "Theorem proving.", "doi": "doi:10.1234/ABC.5"},
        {"abstract": "Point clouds.", "arxiv": "https://arxiv.org/abs/2101.00001v3"},
        {"abstract": "A hostile one.", "url": HOSTILE, "doi": "10.9999/z"},  # not a link: the DOI's instead
        {"abstract": "A relative one.", "link": "/pdf/xyz.pdf"},  # no site to open it on: none
        {"abstract": "Nothing to link.", "link": "  "},
    ]
    path = tmp_path / "links.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records))
    urls = [record.get("url") for record in read_records(path)]
    assert urls == [
        "https://openreview.net/pdf?id=abc",
        "https://x.org/b.pdf",
        "https://x.org/c",
        "https://doi.org/10.1234/abc.5",
        "https://arxiv.org/abs/2101.00001",
        "https://doi.org/10.9999/z",
        None,
        None,
    ]


@pytest.fixture(scope="module")
def linked(tmp_path_factory) -> tuple[Path, dict[str, str | None]]:
    """The sample's papers, each with a link in one field (and one quoted), built where the app finds it."""
    papers, _ = read_corpus(locations.bundled_corpus())
    rows, expected = [], {}
    for i, paper in enumerate(papers.itertuples()):
        fields = {"link": QUOTED} if i == 13 else _link_fields(i)
        rows.append({"id": paper.id, "abstract": paper.abstract, **fields})
        expected[paper.id] = QUOTED if i == 13 else _expected(fields)
    corpus = tmp_path_factory.mktemp("links") / "linked.jsonl"
    corpus.write_text("\n".join(json.dumps(row) for row in rows))
    folder = locations.indexes_dir() / "linked"
    build_index([corpus], folder)
    return folder, expected


@pytest.mark.slow
def test_json_results_and_the_service_carry_the_link(linked):
    folder, expected = linked
    done = paperscope(
        "search", "diffusion transformers", "--index", folder, "-k", "37", "--json", here=True, check=True
    )
    found = json.loads(done.stdout)
    assert len(found) == 37 and all(row.get("url") == expected[row["id"]] for row in found)
    client = TestClient(cli_service_app(folder))
    first = next(paper_id for paper_id, url in expected.items() if url)
    assert client.get(f"/papers/{first}").json()["url"] == expected[first]
    similar = client.get(f"/papers/{first}/similar?k=37").json()
    assert all(row.get("url") == expected[row["id"]] for row in similar)


def cli_service_app(folder: Path):
    """The JSON service's app on ``folder``, in this process."""
    from paperscope.ui.service import create_app

    return create_app(folder)


@pytest.mark.slow
def test_the_apps_cards_link_to_the_paper(linked):
    from streamlit.testing.v1 import AppTest

    folder, expected = linked
    app = AppTest.from_file(APP, default_timeout=120)
    app.query_params["q"], app.query_params["k"] = "diffusion transformers", "37"
    app.session_state["index_label"] = "linked"
    app.run()
    assert not app.exception
    titles = PaperIndex.load(folder).search("diffusion transformers", k=37).to_pandas()
    cards = [element.proto.body for element in app.get("html") if "<span class='ps-title'>" in element.proto.body]
    assert len(cards) == 37
    for card, paper_id in zip(cards, titles["id"], strict=True):
        links = re.findall(r"<a [^>]*>", card)
        url = expected[paper_id]
        if url is None:
            assert links == [] and "javascript" not in card
        else:
            href = url.replace("&", "&amp;").replace('"', "&quot;")
            assert links == [f'<a href="{href}" target="_blank" rel="noopener noreferrer">'], card


@pytest.mark.slow
def test_the_html_map_holds_the_links(linked, tmp_path):
    folder, expected = linked
    paperscope("map", "--index", folder, "-o", tmp_path / "map.html", here=True, check=True)
    page = (tmp_path / "map.html").read_text()
    payload = json.loads(page.split("const PAYLOAD = ", 1)[1].split(";\nconst map", 1)[0].replace("<\\/", "</"))
    ids = PaperIndex.load(folder).ids()
    assert payload["links"] == [expected[paper_id] for paper_id in ids]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)")
def test_a_click_in_the_html_map_links_the_paper_and_its_neighbours(linked, browser, tmp_path):
    folder, expected = linked
    paperscope("map", "--index", folder, "-o", tmp_path / "map.html", here=True, check=True)
    index = PaperIndex.load(folder)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((tmp_path / "map.html").as_uri())
    page.wait_for_selector(".ps-map[data-ready='1']")
    for paper_id in (next(i for i, url in expected.items() if url is None), index.ids()[13]):
        page.evaluate("(row) => document.querySelector('.ps-map').parentElement.__paperscopeMap.selectLocally(row)",
                      int(index.rows(paper_id)[0]))  # fmt: skip
        page.wait_for_selector(".ps-status ol li")
        head = page.locator(".ps-status b")
        anchors = head.locator("a")
        if expected[paper_id] is None:
            assert anchors.count() == 0 and head.inner_text() == index.paper(paper_id)["title"]
        else:
            assert anchors.get_attribute("href") == expected[paper_id] and anchors.get_attribute("target") == "_blank"
        listed = page.locator(".ps-status ol li a").evaluate_all("(links) => links.map((a) => a.href)")
        assert all(href.startswith(("http://", "https://")) for href in listed) and listed
    assert page.locator("a[href^='javascript']").count() == 0
    page.close()
