"""The app's "Get papers" panel through Streamlit's AppTest: a venue fetched from a local OpenReview
(``PAPERSCOPE_OPENREVIEW_URL``), built as an upload is, and opened; a filter OpenAlex cannot take
said in one line."""

import pytest
from streamlit.testing.v1 import AppTest

from paperscope import PaperIndex, locations
from paperscope.settings import SourceQuery
from paperscope.ui.sources_view import index_name
from tests.conftest import APP
from tests.support.openreview_service import VENUE, OpenReviewService, note


@pytest.mark.slow
def test_a_filter_openalex_cannot_take_is_one_line_and_nothing_is_fetched(default_index):
    app = AppTest.from_file(APP, default_timeout=120).run()
    app.session_state["get-papers-panel"] = True  # the panel opened: its widgets are drawn only then
    app.session_state["sidebar_opened"] = True  # and the sidebar
    app.run()
    app.sidebar.radio(key="get-source").set_value("OpenAlex filter").run()
    app.sidebar.text_input(key="get-filter").input("publication_year").run()
    app.sidebar.button(key="get-papers").click().run()
    assert not app.exception
    assert [error.value for error in app.error] == ["openalex: --filter part 'publication_year' is not KEY:VALUE"]
    assert not list(locations.data_home().glob("fetches/openalex-*"))  # refused before anything was fetched


@pytest.mark.slow
def test_get_papers_fetches_a_venue_builds_it_and_opens_it(default_index, httpserver, monkeypatch):
    notes = [note(number) for number in range(1, 13)]
    service = OpenReviewService(httpserver, {VENUE: notes}, page_size=5, faults=False)
    monkeypatch.setenv("PAPERSCOPE_OPENREVIEW_URL", service.url)
    app = AppTest.from_file(APP, default_timeout=240).run()
    app.session_state["get-papers-panel"] = True  # the panel opened: its widgets are drawn only then
    app.session_state["sidebar_opened"] = True  # and the sidebar
    app.run()
    app.sidebar.button(key="get-papers").click().run()  # the panel's first choice: OpenReview, NeurIPS 2025
    assert not app.exception and not app.error
    assert len(service.requests) == 4  # three pages of 5 and the empty one after
    name = index_name(SourceQuery("openreview", (("venue", VENUE),), service.url))
    assert name.startswith("openreview-neurips-cc-2025-conference-") and app.sidebar.selectbox[0].value == name
    assert app.sidebar.caption[0].value.startswith("12 papers · ")
    app.text_input(key="query").input(notes[4]["content"]["title"]["value"]).run()
    shown = "".join(element.proto.body for element in app.get("html"))
    assert notes[4]["content"]["title"]["value"].replace("&", "&amp;") in shown
    built = PaperIndex.load(locations.indexes_dir() / name)
    assert sorted(built.papers["id"]) == sorted(item["id"] for item in notes)
