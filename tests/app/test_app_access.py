"""The app shared with a group (#42), in Chromium against a real Streamlit server: read-only mode
hides every change and says why; an upload storm meets one build at a time and the hour's limit,
each refusal said in the page and written in the audit log."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from paperscope import locations
from paperscope.ui.app_access import READ_ONLY_NOTE
from tests.conftest import paperscope
from tests.support.corpora import read_corpus
from tests.support.servers import CHROMIUM, paperscope_server

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/setup --test installs it)"),
]
HOUR_REFUSAL = r"this server has built 1 upload in the past hour, its limit; try again in [1-6]?[0-9] min"
LOCK_REFUSAL = "another upload is being built on this server, one at a time; try again once it is done"


def _open_sidebar_upload(page, url: str) -> None:
    page.goto(url)
    page.get_by_test_id("stExpandSidebarButton").click()
    page.get_by_text("Add a corpus").click()


def test_a_read_only_app_offers_no_change_and_says_why(sample_index_dir, browser):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        with paperscope_server("app", sample_index_dir, ("--read-only",), timeout=60) as (url, _):
            _open_sidebar_upload(page, f"{url}/?q=graph+neural+networks&k=3")
            page.wait_for_selector(".ps-title", timeout=60_000)
            page.get_by_text("Collections (").click()
            page.get_by_text("Topics: overview").click()
            page.wait_for_selector("text=Correct the topics", timeout=60_000)
            assert page.get_by_text(READ_ONLY_NOTE).count() == 3  # uploads, collections, topic corrections
            assert page.locator("input[type=file]").count() == 0  # no upload, no library import
            for label in ("Rename", "Merge", "Import a library file"):
                assert page.get_by_role("button", name=label).count() == 0, label
            page.get_by_text("Abstract and why similar").first.click()  # a card opened: where its bookmark would be
            page.wait_for_selector(".ps-why >> text=Shared terms", timeout=60_000)
            assert page.locator("[class*='st-key-add-card-']").count() == 0  # no bookmark button on the cards
    finally:
        page.close()


def _corpus(path: Path, papers: int, tag: str) -> Path:
    """JSON lines of ``papers`` abstracts (the sample's, varied), so that its build takes a while."""
    sample, _ = read_corpus(locations.bundled_corpus())
    abstracts = sample["abstract"].tolist()
    rows = [{"title": f"{tag} paper {i}", "abstract": f"{abstracts[i % len(abstracts)]} Variant {i} of {tag}."}
            for i in range(papers)]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_an_upload_storm_builds_one_at_a_time_and_at_most_the_hours_limit(sample_index_dir, browser, tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "PAPERSCOPE_HOME": str(home)}  # the server's data folder: its uploads, its audit log
    first, second = browser.new_page(), browser.new_page()
    big = _corpus(tmp_path / "big.jsonl", 200, "big")
    other, third = _corpus(tmp_path / "other.jsonl", 5, "other"), _corpus(tmp_path / "third.jsonl", 5, "third")
    try:
        arguments = ("--uploads-per-hour", "1")
        with paperscope_server("app", sample_index_dir, arguments, timeout=120, env=env) as (url, _):
            _open_sidebar_upload(first, url)
            _open_sidebar_upload(second, url)
            first.locator("input[type=file]").set_input_files(str(big))
            first.wait_for_selector("text=Building big-", timeout=60_000)
            second.locator("input[type=file]").set_input_files(str(other))  # while the first builds
            second.wait_for_selector(f"text={LOCK_REFUSAL}", timeout=60_000)
            assert first.get_by_text("Built big-").count() == 0  # the first was still building
            first.wait_for_selector("text=200 papers ·", timeout=300_000)
            second.locator("input[type=file]").set_input_files(str(third))
            second.wait_for_selector(f"text=/{HOUR_REFUSAL}/", timeout=60_000)
    finally:
        first.close()
        second.close()
    done = paperscope("audit", "--json", env=env, check=True)
    lines = [(line["via"], line["action"], line["outcome"]) for line in json.loads(done.stdout)]
    assert lines[:2] == [("app", "upload other.jsonl", LOCK_REFUSAL), ("app", "upload big.jsonl", "ok")]
    assert lines[2][:2] == ("app", "upload third.jsonl") and re.fullmatch(HOUR_REFUSAL, lines[2][2]), lines
    # Streamlit gives no address to a browser on this machine (st.context.ip_address is None): "app"
    assert {line["who"] for line in json.loads(done.stdout)} == {"app"}
    assert [folder.name.split("-")[0] for folder in (home / "indexes").iterdir()] == ["big"]
