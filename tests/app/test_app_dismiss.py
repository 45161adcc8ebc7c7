"""A collection's page in the app, in Chromium at 1280×800: the recommended cards in view with
their reasons, "Not interested" dismissing one (kept with the collection, the next
recommendations without it, undoable, listed with a way back), and on the map the members and
the recommendations drawn as different marks with a legend."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest

from paperscope import PaperIndex
from tests.conftest import ARTIFACTS, copy_index
from tests.support.servers import CHROMIUM, paperscope_server

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)"),
]
NAME = "Reading <i>list</i>"  # a tag in the name: shown as typed
MEMBER_COLOUR = [194, 24, 91]  # map.js's PS_MEMBER, #c2185b
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def _titles(index_folder: Path, k: int = 10) -> tuple[list[str], list[str]]:
    """The collection's recommendations as the app should show them: ids and numbered titles."""
    found = PaperIndex.load(index_folder).collections.recommend(NAME, k=k).to_pandas()
    return found["id"].tolist(), [f"{rank}. {title}" for rank, title in enumerate(found["title"], start=1)]


def _map_marks(page) -> dict:
    """What the map drew for the collection: its members' and recommendations' counts, the
    legend's texts and swatches, and the marks canvas's colour at members clear of other marks."""
    return page.evaluate(
        """() => {
        const root = document.querySelector('.ps-map').parentElement, map = root.__paperscopeMap;
        const context = map.marks.getContext('2d'), ratio = window.devicePixelRatio || 1;
        const clear = (row) => [...map.neighbours.map((r) => [map.x[r], map.y[r]]), map.star].every(
            ([x, y]) => Math.hypot(map.px(x) - map.px(map.x[row]), map.py(y) - map.py(map.y[row])) > 24);
        const colours = map.members.filter(clear).map((row) => Array.from(context.getImageData(
            Math.round(map.px(map.x[row]) * ratio), Math.round(map.py(map.y[row]) * ratio), 1, 1).data.slice(0, 3)));
        const legend = root.querySelector('.ps-marks-legend');
        return {members: map.members.length, drawn: map.drawn, colours,
                legend: legend ? legend.innerText : '',
                swatches: legend ? [...legend.querySelectorAll('.ps-mark')].map((e) => e.className) : []};
    }"""
    )


def test_not_interested_dismisses_a_recommendation_undo_brings_it_back_and_the_map_tells_members_apart(
    sample_index_dir, browser, tmp_path
):
    from playwright.sync_api import expect

    folder = copy_index(sample_index_dir, tmp_path / "index")  # collections of its own
    index = PaperIndex.load(folder)
    members = index.search("protein structure", k=3).to_pandas()
    index.collections.create(NAME, ids=members["id"].tolist())
    ids, numbered = _titles(folder)
    first = ids[0]
    because = index.collections.recommend(NAME, k=10).to_pandas()["because"][0]
    closest = members.set_index("id")["title"][because["members"][0]["id"]]

    with paperscope_server("app", folder, timeout=90) as (url, _):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{url}/?collection={urllib.parse.quote(NAME)}&k=10")
        expect(page.locator(".ps-title")).to_have_text(numbered, timeout=90_000)
        card = page.locator(".ps-title").first.bounding_box()
        assert card["y"] + card["height"] <= 800, card  # the first card in view, no scrolling
        reason = page.locator(".ps-because").first.inner_text()
        assert reason.startswith(f"like {closest[:40]}") and f"({because['members'][0]['similarity']:.2f})" in reason
        assert all(term in reason for term in because["terms"]), (reason, because)

        page.wait_for_function(
            "() => { const map = document.querySelector('.ps-map')?.parentElement.__paperscopeMap;"
            " return map && map.drawn && map.drawn.numbered === 10 && map.drawn.diamonds === 3; }",
            timeout=30_000,
        )
        marks = _map_marks(page)
        assert marks["members"] == 3 and marks["drawn"] == {"diamonds": 3, "numbered": 10}
        assert "in the collection (3)" in marks["legend"] and "recommended, by rank" in marks["legend"]
        assert marks["swatches"] == ["ps-mark ps-diamond", "ps-mark ps-numbered"]
        assert marks["colours"] and all(colour == MEMBER_COLOUR for colour in marks["colours"]), marks
        page.wait_for_selector(IDLE, timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "app-collection.png"))

        page.get_by_text("Collections (").click()  # the collections' table, under the recommended cards
        table = page.locator(".ps-collections")
        expect(table).to_contain_text(NAME)
        assert page.locator(".ps-title").first.bounding_box()["y"] < table.bounding_box()["y"]

        page.locator(f".st-key-dismiss-{first} button:visible").click()
        expect(page.locator(".st-key-collection_undo_line")).to_contain_text(  # "Not interested in …", Undo
            numbered[0].split(". ", 1)[1][:30], timeout=60_000
        )
        assert PaperIndex.load(folder).collections.dismissed(NAME) == [first]
        after_ids, after = _titles(folder)
        assert first not in after_ids
        expect(page.locator(".ps-title")).to_have_text(after, timeout=60_000)  # re-run without it
        page.get_by_role("button", name="Dismissed (1)").click()
        expect(page.get_by_test_id("stPopoverBody")).to_contain_text(numbered[0].split(". ", 1)[1][:30])
        page.keyboard.press("Escape")
        expect(page.get_by_test_id("stPopoverBody")).to_have_count(0)

        page.wait_for_selector(IDLE, timeout=30_000)
        page.locator(".st-key-collection_undo button:visible").click()
        expect(page.locator(".ps-title")).to_have_text(numbered, timeout=60_000)  # back, first again
        assert PaperIndex.load(folder).collections.dismissed(NAME) == []
        expect(page.get_by_role("button", name="Dismissed (1)")).to_have_count(0)

        page.wait_for_selector(IDLE, timeout=30_000)
        page.locator(f".st-key-dismiss-{ids[1]} button:visible").click()  # dismissed, then brought back from the list
        expect(page.locator(".st-key-collection_undo_line")).to_be_visible(timeout=60_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_role("button", name="Dismissed (1)").click()
        page.get_by_test_id("stPopoverBody").get_by_role("button", name="Bring back").click()
        expect(page.locator(".ps-title")).to_have_text(numbered, timeout=60_000)
        assert PaperIndex.load(folder).collections.dismissed(NAME) == []
        page.close()
