"""The dashboard's logic through Streamlit's AppTest: search, URL state, filters, escaping."""

import json
import shutil
import subprocess
import sys

import pytest
from streamlit.testing.v1 import AppTest

from paperscope import PaperIndex, build_index, locations
from paperscope.ui.app import titled
from tests.conftest import APP, copy_index

LONG_ID = "3f2a9c1d" + "0" * 28 + "9c1d"  # ICLR-style: 40 hexadecimal characters


def _app(sidebar_opened: bool = True, **query_params) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=120)
    app.session_state["sidebar_opened"] = sidebar_opened  # in a browser, once a user opens it: its settings drawn
    for key, value in query_params.items():
        app.query_params[key] = value
    return app


def _htmls(app) -> list[str]:
    return [element.proto.body for element in app.get("html")]


def _result_titles(app) -> list[str]:
    return [
        body.split("<span class='ps-title'>")[1].split("</span>")[0].split(". ", 1)[1]
        for body in _htmls(app)
        if "<span class='ps-title'>" in body
    ]


def test_start_shows_the_index_and_asks_for_a_query(default_index):
    app = _app().run()
    assert not app.exception
    assert app.sidebar.caption[0].value.startswith("38 papers · all-MiniLM-L6-v2")
    assert "Type a query or pick a paper" in app.info[0].value
    assert not _result_titles(app)


def test_free_text_query_lists_k_results_and_goes_into_the_url(default_index):
    app = _app().run()
    app.text_input(key="query").input("graph neural networks and homophily").run()
    titles = _result_titles(app)
    expected = (
        default_index.search("graph neural networks and homophily", k=10, mode="hybrid").to_pandas()["title"].tolist()
    )
    assert titles == [t.replace("&", "&amp;") for t in expected]
    assert (
        app.query_params["q"] == ["graph neural networks and homophily"]
        or app.query_params["q"] == "graph neural networks and homophily"
    )
    app.sidebar.slider(key="k").set_value(3).run()
    assert len(_result_titles(app)) == 3
    assert not any("<mark>" in body for body in _htmls(app))  # explained only when a card is opened
    first = default_index.search("graph neural networks and homophily", k=1, mode="hybrid").to_pandas()["id"][0]
    app.session_state[f"why-{first}"] = True  # the first card opened
    app.run()
    assert any("<mark>" in body for body in _htmls(app))  # why-similar evidence with highlighted terms


def _sent_points(app) -> list[dict]:
    """The map's points sent in the app's last run (none when the session's page has them)."""
    return [json.loads(element.proto.bytes) for element in app.get("bidi_component")
            if element.proto.component_name.endswith("paperscope_map_points")]  # fmt: skip


def test_the_maps_points_are_sent_in_a_sessions_first_run_only(default_index):
    app = _app().run()
    (points,) = _sent_points(app)
    assert points["count"] == len(default_index) and len(points["titles"]) == len(default_index)
    app.text_input(key="query").input("graph neural networks").run()
    assert len(_result_titles(app)) == 10 and _sent_points(app) == []  # the focus alone: the page keeps the points
    assert not app.exception
    assert _sent_points(_app().run())  # a new session gets them


def test_paper_link_selects_the_paper_and_picking_another_replaces_it(default_index):
    first, second = default_index.papers["id"][3], default_index.papers["id"][9]
    app = _app(paper=first, k="5").run()
    assert app.multiselect(key="papers").value == [first]
    assert _result_titles(app) == default_index.similar(first, k=5).to_pandas()["title"].tolist()
    app.multiselect(key="papers").set_value([second]).run()
    assert _result_titles(app) == default_index.similar(second, k=5).to_pandas()["title"].tolist()
    assert app.text_input(key="query").value == ""


def test_titled_finds_the_papers_whose_titles_hold_each_word(sample_index):
    titles = sample_index.papers.set_index("id")["title"]
    title = titles.iloc[7]  # typed in another case and spacing: the paper itself, said to be equal
    found = titled(sample_index, f"  {title.upper().replace(' ', '   ')} ", 10)
    assert found.ids[0] == titles.index[7] and found.equal and found.total == 1
    copied = titled(sample_index, f"“{title}.”", 10)  # as a reference list quotes it, with its stop
    assert copied == found
    words = ["FRAME", "a"]  # parts of words, any case, anywhere, each in the title
    holding = [i for i, t in titles.items() if all(w.lower() in t.lower() for w in words)]
    found = titled(sample_index, " ".join(words), 2)
    assert len(holding) > 2 and found.total == len(holding) and found.ids == holding[:2] and not found.equal
    assert titled(sample_index, "zzqx quux", 10) == ([], 0, False) == titled(sample_index, "  ", 10)


def test_a_title_typed_in_the_picker_picks_its_paper_and_several_are_offered(default_index):
    titles = default_index.papers.set_index("id")["title"]
    app = _app(q="diffusion", k="3").run()
    picker = app.multiselect(key="papers")  # offers the results in view, not all 38 titles
    assert picker.options == _result_titles(app)
    picker.set_value([titles.iloc[8].lower()]).run()  # a whole title, typed in lower case
    assert app.multiselect(key="papers").value == [titles.index[8]] and app.text_input(key="query").value == ""
    assert _result_titles(app) == default_index.similar(titles.index[8], k=3).to_pandas()["title"].tolist()
    holding = [title for title in titles if "frame" in title.lower()]  # several titles: offered, none picked
    app.multiselect(key="papers").set_value(["FRAME"]).run()
    assert app.multiselect(key="papers").value == [] and set(holding) <= set(app.multiselect(key="papers").options)
    assert f"{len(holding)} titles hold “FRAME”: pick one in the list" in [caption.value for caption in app.caption]
    app.multiselect(key="papers").set_value(["zzqx"]).run()
    assert "No title holds “zzqx”; Search by text finds papers about it" in [caption.value for caption in app.caption]


def test_several_papers_and_a_negative_rank_more_like_these(default_index):
    ids = default_index.papers["id"].tolist()
    app = _app(paper=f"{ids[0]},{ids[19]}", k="4").run()
    assert app.multiselect(key="papers").value == [ids[0], ids[19]]
    shown = default_index.similar([ids[0], ids[19]], k=4).to_pandas()["id"].tolist()
    assert app.multiselect(key="not_papers").options == [default_index.paper(i)["title"] for i in shown]
    app.multiselect(key="not_papers").set_value([shown[1]]).run()  # "less like" the second result
    expected = default_index.similar([ids[0], ids[19]], k=4, negative=[shown[1]]).to_pandas()["title"].tolist()
    assert _result_titles(app) == expected and default_index.paper(shown[1])["title"] not in expected
    assert app.query_params["not"] in ([shown[1]], shown[1])


def test_the_sidebars_settings_are_drawn_once_it_is_opened_and_the_links_apply_before(default_index):
    app = _app(sidebar_opened=False, q="ATSP", k="4", mode="dense").run()  # a first page: the sidebar folded
    expected = default_index.search("ATSP", k=4, mode="dense").to_pandas()["title"].tolist()
    assert _result_titles(app) == expected
    assert (
        [box.label for box in app.sidebar.selectbox] == ["Index"] and not app.sidebar.slider and not app.sidebar.radio
    )
    app.session_state["sidebar_opened"] = True  # what its watcher sets once a user opens it
    app.run()
    assert app.sidebar.slider(key="k").value == 4 and app.sidebar.radio(key="mode").value == "dense"
    assert app.sidebar.radio(key="topic_level").value == "coarse" and app.sidebar.toggle(key="explain").value
    assert _result_titles(app) == expected


def test_ranking_switch_changes_the_mode(default_index):
    app = _app(q="ATSP").run()
    assert app.sidebar.radio(key="mode").value == "hybrid"
    assert _result_titles(app)[0].startswith("Continuous relaxation framework for the Asymmetric Traveling")
    app.sidebar.radio(key="mode").set_value("dense").run()
    assert _result_titles(app) == default_index.search("ATSP", k=10, mode="dense").to_pandas()["title"].tolist()


@pytest.mark.slow
def test_topic_filter_keeps_only_that_topic_at_either_level(default_index):
    papers = default_index.papers
    for level, table, column in (
        ("coarse", default_index.topics.table("coarse"), "coarse_cluster"),
        ("fine", default_index.topics.table("fine"), "cluster"),
    ):
        topic = table.sort_values("size").iloc[-1]
        app = _app(q="neural networks for images and video").run()
        app.sidebar.radio(key="topic_level").set_value(level).run()
        app.sidebar.multiselect[0].set_value([topic["name"]]).run()
        titles = _result_titles(app)
        members = set(papers.loc[papers[column] == topic["cluster"], "title"])
        assert titles and set(titles) <= members, level


@pytest.mark.slow
def test_topics_panel_lists_topics_their_years_and_the_papers_between_two(default_index, tmp_path):
    app = _app(q="graph neural networks").run()
    assert not app.tabs and not app.dataframe  # drawn when opened: it weighs on every page
    app.session_state["topics"] = True  # the panel opened
    app.run()
    assert [tab.label for tab in app.tabs] == ["Topics", "By year or column", "Between two topics"]
    listed = app.dataframe[0].value
    papers = default_index.papers
    unclustered = int((papers["coarse_cluster"] < 0).sum())
    assert unclustered  # the sample has papers in no topic: they are a row of their own, last
    assert listed["topic"].tolist() == [*default_index.topics.overview("coarse")["name"], "unclustered"]
    assert listed["papers"].sum() == len(papers) and listed["papers"].iloc[-1] == unclustered
    assert listed["share"].iloc[-1] == pytest.approx(unclustered / len(papers))
    assert listed["map trust"].iloc[-1] == pytest.approx(papers.loc[papers["coarse_cluster"] < 0, "map_trust"].mean())
    assert "unclustered" not in app.selectbox(key="curate_topic_coarse").options  # nothing to rename
    assert app.selectbox(key="topics_by").options == ["venue"]  # no years: by its one other column
    by_venue = app.dataframe[1].value
    assert by_venue["topic"].tolist() == default_index.topics.by("venue")["name"].tolist()
    assert any("one venue only" in caption.value for caption in app.caption)  # nothing to compare
    first, second = app.selectbox(key="bridge_a").value, app.selectbox(key="bridge_b").value
    assert len(app.dataframe) == 2  # the papers between two topics are found on demand
    app.button(key="bridge_go").click().run()
    expected = default_index.topics.bridges(first, second)["title"].tolist()
    assert expected and app.dataframe[2].value["title"].tolist() == expected

    papers = default_index.papers  # the sample again, with years: the chart over time appears
    dated = tmp_path / "dated.jsonl"
    dated.write_text("\n".join(json.dumps({"id": r.id, "title": r.title, "abstract": r.abstract, "year": 2023 + i % 3})
                               for i, r in enumerate(papers.itertuples())))  # fmt: skip
    build_index([dated], locations.indexes_dir() / "dated")
    app = _app(q="graph neural networks")
    app.session_state["index_label"] = "dated"
    app.session_state["topics"] = True
    app.run()
    assert not app.exception and app.selectbox(key="topics_by").value == "year"
    assert [element.type for element in app.tabs[1]][1:4] == ["selectbox", "vega_lite_chart", "caption"]
    assert any(caption.value.startswith("Grew most:") for caption in app.caption)
    dated_index = PaperIndex.load(locations.indexes_dir() / "dated")  # two years compared: 2023 and 2024 at first
    compared = app.dataframe[1].value
    assert (app.selectbox(key="compare_a_year").value, app.selectbox(key="compare_b_year").value) == (2023, 2024)
    expected = dated_index.topics.compare(("year", 2023), ("year", 2024))
    assert compared["topic"].tolist() == expected["name"].tolist()
    assert compared["papers in A"].tolist() == expected["papers_a"].tolist()


def test_unknown_paper_in_the_url_is_ignored_and_bad_query_is_a_message(default_index):
    app = _app(paper="no-such-id").run()
    assert not app.exception and app.multiselect(key="papers").value == []
    app.text_input(key="query").input("x" * 25_000).run()
    assert any("limit is 20,000" in error.value for error in app.error)


@pytest.mark.slow
def test_corpus_text_is_escaped_never_html(default_index, tmp_path):
    corpus = tmp_path / "hostile.jsonl"
    rows = [
        {
            "id": "evil",
            "title": "<script>alert('x')</script> **bold** $x^2$ <b>tag</b>",
            "abstract": "We inject <img src=x onerror=alert(1)> into abstracts about graph neural networks.",
        },
        {"id": LONG_ID, "title": "Graph networks", "abstract": "Graph neural networks for molecules and proteins."},
        {"id": "other", "title": "Video diffusion", "abstract": "Diffusion transformers for video generation."},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows))
    build_index([corpus], locations.indexes_dir() / "hostile")
    app = _app(q="graph neural networks")
    app.session_state["index_label"] = "hostile"
    app.run()
    assert not app.exception
    assert len(_result_titles(app)) == 2 and "Graph networks" in _result_titles(app)  # k clamped to the corpus
    _open_popover(app, "why-evil")  # its card opened: the abstract and why similar drawn
    bodies = "".join(_htmls(app))
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; **bold** $x^2$ &lt;b&gt;tag&lt;/b&gt;" in bodies
    assert "&lt;img src=x onerror=alert(1)&gt;" in bodies
    assert "<script>" not in bodies and "<img" not in bodies
    # A 40-character id is shortened on its card; the whole id is on hover.
    assert f"<span title='{LONG_ID}'>{LONG_ID[:8]}…{LONG_ID[-4:]}</span>" in bodies


def test_why_similar_marks_a_term_in_the_singular_and_the_plural():
    from paperscope.ui.app import highlight

    marked = highlight("A sparse transformer; two sparse transformers; Sparse Transformers.", ["sparse transformers"])
    assert marked.count("<mark>") == 3 and "<mark>sparse transformer</mark>;" in marked
    assert highlight("One study, two studies; <b>", ["studies"]) == (
        "One <mark>study</mark>, two <mark>studies</mark>; &lt;b&gt;"
    )


@pytest.mark.slow
def test_first_run_builds_the_sample_index_with_progress(default_index, tmp_path, monkeypatch):
    import shutil

    fresh = tmp_path / "fresh-home"
    for reused in ("onnx", "embedding-cache"):  # the model export and vectors, to keep the test short
        shutil.copytree(locations.data_home() / reused, fresh / reused)
    monkeypatch.setenv("PAPERSCOPE_HOME", str(fresh))
    assert not locations.default_index_dir().exists()
    app = _app().run()
    assert not app.exception
    assert [status.label for status in app.get("status")] == ["Built the NeurIPS 2025 sample index (first run)"]
    assert len(app.get("progress")) == 1
    assert any("read 38 papers" in line.value for line in app.markdown)
    assert app.sidebar.caption[0].value.startswith("38 papers")
    from paperscope.index.store.generations import is_current_format

    assert is_current_format(locations.default_index_dir())


@pytest.mark.slow
def test_the_app_starts_without_umap_numba_datamapplot_or_torch():
    script = (
        "import sys, paperscope.ui.app; "
        "print(sorted(m for m in ('umap', 'numba', 'datamapplot', 'sklearn', 'torch') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


FIRST_PAGE = """
import gc, json, sys, threading, time, traceback
from streamlit.testing.v1 import AppTest
from paperscope.ui.launch import keep_script_folder_on_path

importers = {}  # module: the functions importing it first


class Watch:
    def find_spec(self, name, path, target=None):
        if name in ("pandas", "scipy") and name not in importers:
            importers[name] = [frame.name for frame in traceback.extract_stack()]


sys.meta_path.insert(0, Watch())
app_path, sys.argv = sys.argv[1], ["app.py", "--index", sys.argv[2]]
keep_script_folder_on_path(app_path)  # as the server does before its first run
paths, running = set(), True  # every sys.path a thread could see while the app ran


def look():  # a look each millisecond: Streamlit's change lasts a whole run
    while running:
        paths.add(tuple(sys.path))
        time.sleep(0.001)


looking = threading.Thread(target=look)
looking.start()
app = AppTest.from_file(app_path, default_timeout=120).run()
assert not app.exception, app.exception
for thread in threading.enumerate():
    if thread.name == "paperscope-after-page":
        thread.join(60)
running = False
looking.join()
imported = {name: "_import_modules" in stack for name, stack in importers.items()}
print(json.dumps(imported | {"objects set aside from the collector's passes": gc.get_freeze_count() > 0,
                             "sys.path the same throughout": len(paths) == 1}))
"""


@pytest.mark.slow
def test_the_first_page_imports_no_pandas_nor_scipy_they_come_once_it_is_drawn(sample_index_dir):
    """pandas (0.35 s) and scipy (0.2 s) are not the first page's to wait for: they are imported in
    the background once the page is drawn, for the first results and recommendations. Then what is
    alive is set aside from the garbage collector, which Streamlit runs after each run (0.12 s a run).
    sys.path stays as it is while the app runs: Streamlit took the app's folder out of it at the
    end of each run, and an import in the background at that moment skipped site-packages (the
    after-page thread's ``import pandas`` failed in 5 of 60 such first runs)."""
    ran = subprocess.run([sys.executable, "-c", FIRST_PAGE, str(APP), str(sample_index_dir)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    expected = {
        "pandas": True,
        "scipy": True,
        "objects set aside from the collector's passes": True,
        "sys.path the same throughout": True,
    }
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == expected, ran.stderr[-3000:]


def _type_new_option(selectbox, text: str) -> None:
    """What typing a new name into a selectbox that accepts new options sends (AppTest sets a
    selectbox only to one of its options)."""
    selectbox.options.append(text)
    selectbox.set_value(text)


def _open_popover(app, key: str) -> None:
    app.session_state[key] = True  # its widgets are drawn only while it is open (a popover or an expander)
    app.run()


HOSTILE_NAME = "Reading <script>alert('x')</script> \"group\" / **bold** $x$"


def test_a_result_goes_into_a_new_collection_and_showing_it_recommends_beyond_it(default_index):
    import html

    app = _app(q="graph neural networks").run()
    assert f"Collections ({len(default_index.collections.names())})" in [e.label for e in app.expander]
    first = app.session_state["shown"][0]
    _open_popover(app, f"why-{first}")  # the card opened: its abstract, why similar, and the bookmark
    _open_popover(app, f"add-card-{first}")
    names = app.selectbox(key=f"add-card-{first}-name")
    assert names.label == "Add 1 paper to" and names.value is None
    _type_new_option(names, HOSTILE_NAME)
    app.button(key=f"add-card-{first}-add").click().run()
    assert not app.exception and not app.error
    assert [toast.value for toast in app.toast] == [
        r"""Added 1 paper to “Reading \<script\>alert\('x'\)\</script\> "group" / \*\*bold\*\* \$x\$”"""
    ]
    assert default_index.collections.members(HOSTILE_NAME)["id"].tolist() == [first]
    bodies = "".join(_htmls(app))
    assert f"<td>{html.escape(HOSTILE_NAME)}</td><td>1</td><td>1</td><td>0</td><td>0</td>" in bodies

    app.selectbox(key="collection").set_value(HOSTILE_NAME).run()  # shown: its recommendations
    assert not app.exception and app.text_input(key="query").value == ""
    assert app.query_params["collection"] in (HOSTILE_NAME, [HOSTILE_NAME])
    expected = default_index.collections.recommend(HOSTILE_NAME, k=10).to_pandas()
    assert _result_titles(app) == [html.escape(t, quote=False) for t in expected["title"]]
    assert first not in expected["id"].tolist() and len(expected) == 10
    bodies = "".join(_htmls(app))
    assert f"Recommended for the collection <b>{html.escape(HOSTILE_NAME)}</b>: 1 paper, 1 ◆ on the map" in bodies
    assert "<script>" not in bodies and "<b>bold" not in bodies
    assert {e.label for e in app.expander} >= {"Abstract"}  # why-similar is off for a collection
    assert not {"BibTeX", "RIS"} & {button.label for button in app.get("download_button")}  # drawn once opened
    _open_popover(app, "collection_export")
    assert {button.label for button in app.get("download_button")} >= {"CSV", "BibTeX", "RIS", "CSL-JSON"}

    app.text_input(key="query").input("diffusion transformers").run()  # a query replaces the collection
    assert app.selectbox(key="collection").value is None and "collection" not in app.query_params
    assert app.query_params["q"] in ("diffusion transformers", ["diffusion transformers"])


def test_the_selected_paper_and_a_map_selection_go_into_an_existing_collection(default_index):
    ids = default_index.papers["id"].tolist()
    default_index.collections.add("picked", ids=[ids[0]], create=True)
    app = _app(paper=ids[5]).run()
    _open_popover(app, "add-selected")
    app.selectbox(key="add-selected-name").set_value("picked")
    app.button(key="add-selected-add").click().run()
    app.session_state["lasso"] = ids[10:14]  # as a box drawn on the map leaves it
    app.run()
    assert "4 papers selected on the map" in "".join(_htmls(app))
    _open_popover(app, "add-lasso")
    assert app.selectbox(key="add-lasso-name").value == "picked"  # the last one added to comes first
    assert app.selectbox(key="add-lasso-name").label == "Add 4 papers to"
    app.button(key="add-lasso-add").click().run()
    assert not app.exception and not app.error
    assert default_index.collections.members("picked")["id"].tolist() == [ids[0], ids[5], *ids[10:14]]
    _open_popover(app, "add-selected")
    app.button(key="add-selected-add").click().run()  # again: already there, nothing doubled
    assert len(default_index.collections.members("picked")) == 6


@pytest.mark.slow
def test_a_collection_link_reopens_it_with_its_members_on_the_map(default_index):
    from paperscope.ui.collections_view import collection_focus

    ids = default_index.papers["id"].tolist()
    default_index.collections.add("linked/one", ids=ids[20:23], create=True)
    app = _app(collection="linked/one", k="5").run()
    assert not app.exception and app.selectbox(key="collection").value == "linked/one"
    expected = default_index.collections.recommend("linked/one", k=5).to_pandas()
    assert _result_titles(app) == expected["title"].str.replace("&", "&amp;").tolist()
    shown = {"name": "linked/one", "ids": ids[20:23]}
    focus = collection_focus(default_index, shown, expected, "coarse")
    assert focus["members"] == [int(default_index.rows(i)[0]) for i in ids[20:23]]  # diamonds: none ringed as chosen
    assert focus["chosen"] == focus["selected"] == []
    assert focus["neighbours"] == [int(default_index.rows(i)[0]) for i in expected["id"]]  # joined to the star
    members = default_index.papers.iloc[20:23]
    assert focus["star"] == pytest.approx([members["x"].mean(), members["y"].mean()], abs=1e-5)

    app = _app(collection="linked/on").run()  # a typo: one line naming the close one, nothing shown
    assert not app.exception and len(app.error) == 1
    assert "no collection named" in app.error[0].value and "linked/one" in app.error[0].value
    assert app.selectbox(key="collection").value is None and not _result_titles(app)


@pytest.mark.slow
def test_removing_members_and_deleting_a_collection_from_the_panel(default_index):
    ids = default_index.papers["id"].tolist()
    default_index.collections.add("pruned", ids=ids[30:33], create=True)
    app = _app(collection="pruned").run()
    _open_popover(app, "collection_manage")
    app.multiselect(key="collection_remove").set_value([ids[31]]).run()
    app.button(key="collection_remove_go").click().run()
    assert not app.exception and default_index.collections.members("pruned")["id"].tolist() == [ids[30], ids[32]]
    assert "2 papers, 2 ◆ on the map" in "".join(_htmls(app))
    assert app.button(key="collection_delete").disabled  # until ticked
    app.checkbox(key="collection_delete_sure").check().run()
    app.button(key="collection_delete").click().run()
    assert not app.exception and "pruned" not in default_index.collections.names()
    assert app.selectbox(key="collection").value is None and not _result_titles(app)
    assert any("Deleted the collection" in toast.value for toast in app.toast)


def test_a_card_marks_an_outlying_member_of_its_topic(default_index):
    outlying = default_index.papers.loc[default_index.papers["outlying"], "id"].tolist()
    assert outlying  # the sample has papers the clustering left out and its nearest topic adopted
    shown = default_index.similar(outlying[0], k=37).to_pandas()
    app = _app(paper=outlying[0], k="37").run()
    cards = [body for body in _htmls(app) if "<span class='ps-title'>" in body]
    assert len(cards) == len(shown)
    for card, is_outlying in zip(cards, shown["outlying"], strict=True):
        assert ("(outlying member)" in card) == bool(is_outlying)


@pytest.mark.slow
def test_another_index_copied_into_the_folder_is_shown_with_its_own_collections(sample_index_dir):
    """The app follows the index in its folder, not only its generation's name: a copy of another index
    put in its place (a generation of the same name, an identity of its own) shows its own collections."""
    folder = locations.default_index_dir()
    shutil.rmtree(folder, ignore_errors=True)
    first = PaperIndex.load(copy_index(sample_index_dir, folder))
    ids = first.ids()
    first.collections.add("first's", ids=ids[:2], create=True)
    app = _app(collection="first's").run()
    assert not app.exception and app.selectbox(key="collection").value == "first's"

    shutil.rmtree(folder)
    second = PaperIndex.load(copy_index(sample_index_dir, folder))
    second.collections.add("second's", ids=ids[2:4], create=True)
    app = _app(collection="second's").run()
    assert not app.exception and app.selectbox(key="collection").value == "second's"
    assert "first's" not in app.selectbox(key="collection").options


def test_a_search_saved_beside_the_search_box_lists_its_new_matches_in_the_panel(default_index):
    import html
    import sqlite3

    from paperscope.index.collections.database import default_path

    query, name = "federated learning with drifting clients", "fl <b>drift</b>"
    app = _app(q=query).run()
    _open_popover(app, "save-search")
    app.text_input(key="save-search-name").input(name)
    app.number_input(key="save-search-threshold").set_value(0.3)
    app.button(key="save-search-go").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    watch = default_index.collections.watches.get(name)
    assert (watch["kind"], watch["query"], watch["threshold"]) == ("text", query, 0.3)
    with sqlite3.connect(default_path()) as db:  # saved long ago: every paper of the index came since
        db.execute("UPDATE watches SET created = '2000-01-01T00:00:00.000+00:00' WHERE name = ?", (name,))
    expected = default_index.collections.matches(name, k=5).to_pandas()
    assert len(expected) >= 2  # the sample's federated and private learning papers

    app.session_state["watches"] = True  # the panel opened
    app.run()
    bodies = "".join(_htmls(app))
    assert f"<b>{html.escape(name)}</b>: “{query}”, from 0.30: {len(expected)}" in bodies and "<b>drift" not in bodies
    for title in expected["title"]:
        assert html.escape(title, quote=False) in bodies
    assert f"like <i>{query}</i>" in bodies and "<mark>federated</mark>" in bodies  # why, as for a recommendation
    app.button(key=f"watch-mark-{name}").click().run()
    assert not app.exception and default_index.collections.watches.get(name)["shown"]
    assert "from 0.30: 0 new" in "".join(_htmls(app))
    app.button(key=f"watch-remove-{name}").click().run()
    assert not app.exception and name not in default_index.collections.watches.names()
    assert "Saved searches (0)" in [e.label for e in app.expander]
