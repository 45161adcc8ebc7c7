"""Corrections to the topics (issue #30, item 4): rename, merge, split and move, kept beside the
index in curations.json, applied on every load, matched by their papers after `paperscope add`
and a rebuild, reported (never applied) when they match no topic any more; through PaperIndex,
the command line, the app and the service."""

from __future__ import annotations

import json
import logging
import shutil
import uuid

import numpy as np
import pytest

from paperscope import PaperIndex, UserError, build_index, locations
from paperscope.embed.text import embedding_texts
from paperscope.index.build.add import add_papers
from paperscope.index.store import curations, generations
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.naming import corpus_terms, part_names
from tests.conftest import FILES, copy_index, paperscope
from tests.index.test_add import NEW_PAPERS


def _copy(sample_index_dir, folder):
    copy_index(sample_index_dir, folder)
    return folder


@pytest.fixture
def folder(sample_index_dir, tmp_path):
    """A fresh copy of the sample index, for one test's curations."""
    return _copy(sample_index_dir, tmp_path / "index")


def assert_consistent(index: PaperIndex) -> None:
    """The two levels stay nested and every table agrees with the papers' columns."""
    papers = index.papers
    fine, coarse = index.topics.table("fine"), index.topics.table("coarse")
    for level, table, number, name in (("fine", fine, "cluster", "cluster_name"),
                                       ("coarse", coarse, "coarse_cluster", "coarse_name")):  # fmt: skip
        counts = papers.loc[papers[number] >= 0, number].value_counts().sort_index()
        assert table["cluster"].tolist() == counts.index.tolist(), level  # no topic without papers
        assert table["size"].tolist() == counts.tolist(), level
        named = dict(zip(table["cluster"], table["name"], strict=True))
        inside = papers[papers[number] >= 0]
        assert (inside[name] == inside[number].map(named)).all(), level
        assert (papers.loc[papers[number] < 0, name] == "unclustered").all()
        assert table["name"].is_unique, level
    parent = dict(zip(fine["cluster"], fine["parent"], strict=True))
    clustered = papers[papers["cluster"] >= 0]
    assert (clustered["coarse_cluster"] == clustered["cluster"].map(parent)).all()  # nested
    assert ((papers["cluster"] < 0) == (papers["coarse_cluster"] < 0)).all()
    children = fine.groupby("parent")["size"].sum()
    assert coarse.set_index("cluster")["size"].equals(children.rename_axis("cluster").rename("size"))


def assert_parts_named_on_their_own(index: PaperIndex, level: str, made: list[int]) -> None:
    """Each part of a split is named by its own papers' terms, as a build names a topic: no
    "(part i)", names distinct from each other and from every other topic's, each term used by two
    of the part's papers or more (by a part of one paper, twice or more in its text) and at least
    twice as common among them as in the corpus."""
    table = index.topics.table(level).set_index("cluster")
    column = "cluster" if level == "fine" else "coarse_cluster"
    texts = embedding_texts(index.papers)
    finder = TermFinder(texts)
    assert table["name"].is_unique
    for topic in made:
        name, terms = table.loc[topic, "name"], list(table.loc[topic, "terms"])
        named = name.split(", ")
        assert "(part" not in name and named == terms[: len(named)], (name, terms)
        rows = np.flatnonzero(index.papers[column].to_numpy() == topic)
        for term in named:
            used = finder.found(term)[rows].sum() if len(rows) > 1 else texts[rows[0]].lower().count(term.lower())
            assert used >= 2 and finder.lift(rows, term) >= 2, (name, term)


def members(index: PaperIndex, level: str, topic: int) -> set[str]:
    column = "cluster" if level == "fine" else "coarse_cluster"
    return set(index.papers.loc[index.papers[column] == topic, "id"])


def test_a_rename_shows_everywhere_and_the_generation_stays_as_built(folder):
    built = generations.read_generation(folder)
    before = {path.name: path.read_bytes() for path in (folder / built.name).iterdir()}
    index = PaperIndex.load(folder)
    coarse = index.topics.table("coarse").sort_values("size").iloc[-1]
    fine = index.topics.table("fine").iloc[0]
    assert index.topics.rename(int(coarse["cluster"]), "  robot\ngrasping ") == coarse["cluster"]  # one line
    assert index.topics.rename(fine["name"], "diffusion models", level="fine") == fine["cluster"]
    for shown in (index, PaperIndex.load(folder)):  # this object, and the index loaded anew
        table = shown.topics.table("coarse").set_index("cluster")
        assert table.loc[coarse["cluster"], "name"] == "robot grasping"
        assert table.loc[coarse["cluster"], "size"] == coarse["size"]
        papers = shown.papers
        assert set(papers.loc[papers["coarse_cluster"] == coarse["cluster"], "coarse_name"]) == {"robot grasping"}
        assert set(papers.loc[papers["cluster"] == fine["cluster"], "cluster_name"]) == {"diffusion models"}
        assert "robot grasping" in shown.filter_choices()["coarse"]
        assert shown.where(topics=["robot grasping"], level="coarse").sum() == coarse["size"]
        assert shown.topics.report == []
        assert_consistent(shown)
    listed = json.loads(paperscope("topics", "--json", "--index", folder, here=True, check=True).stdout)
    assert {"robot grasping"} <= {topic["name"] for topic in listed}
    fine_listed = paperscope("topics", "--level", "fine", "--json", "--index", folder, here=True, check=True)
    assert "diffusion models" in {topic["name"] for topic in json.loads(fine_listed.stdout)}
    assert {path.name: path.read_bytes() for path in (folder / built.name).iterdir()} == before  # in memory only
    log = json.loads(curations.log_path(folder).read_text())  # JSON, an entry a line
    assert [entry["op"] for entry in log["curations"]] == ["rename", "rename"]
    verified = paperscope("verify", "--index", folder, here=True, check=True)
    assert "match their checksums" in verified.stdout and "leftover" not in verified.stderr


def test_the_apps_map_draws_what_the_map_export_does_before_and_after_a_rename(folder):
    """The app reads its map's points and topic labels from Arrow (``ix.topics.labels``), not from the
    DataFrames the map export reads: its first page imports no pandas. Both draw the same."""
    from paperscope.ui.app_cache import generation_of, map_points
    from paperscope.ui.mapplot import map_payload

    index = PaperIndex.load(folder)
    coarse = int(index.topics.table("coarse")["cluster"].iloc[0])
    for renamed in (False, True):
        if renamed:
            index.topics.rename(coarse, "robot grasping")
        for level in ("fine", "coarse"):
            labels, table = index.topics.labels(level), index.topics.table(level)
            assert set(labels) == {"cluster", "name", "size", "x", "y"}
            assert all(labels[column].tolist() == table[column].tolist() for column in labels)
        drawn = json.loads(map_points(str(folder), generation_of(str(folder))).data)
        shown = PaperIndex.load(folder)
        tables = (shown.map.table(), shown.topics.table("fine"), shown.topics.table("coarse"))
        assert drawn == json.loads(json.dumps(map_payload(*tables, key=drawn["key"])))
        assert ("robot grasping" in drawn["coarse_names"]) == renamed


def test_merges_add_up_and_the_levels_stay_nested(folder):
    index = PaperIndex.load(folder)
    fine = index.topics.table("fine")
    a = fine.iloc[0]
    others = fine[fine["parent"] != a["parent"]]
    b = others.iloc[0] if len(others) else fine.iloc[1]
    expected = members(index, "fine", a["cluster"]) | members(index, "fine", b["cluster"])
    assert index.topics.merge(int(a["cluster"]), int(b["cluster"]), level="fine") == a["cluster"]
    table = index.topics.table("fine").set_index("cluster")
    assert b["cluster"] not in table.index and table.loc[a["cluster"], "name"] == a["name"]  # A's name
    assert table.loc[a["cluster"], "size"] == a["size"] + b["size"]
    assert members(index, "fine", a["cluster"]) == expected
    assert set(index.papers.loc[index.papers["cluster"] == a["cluster"], "coarse_cluster"]) == {a["parent"]}
    assert_consistent(index)

    coarse = index.topics.table("coarse")
    first, second = coarse.iloc[0], coarse.iloc[1]
    children = set(index.topics.table("fine").query(f"parent == {second['cluster']}")["cluster"])
    merged = index.topics.merge(first["name"], int(second["cluster"]), name="everything else")
    table = index.topics.table("coarse").set_index("cluster")
    assert merged == first["cluster"] and second["cluster"] not in table.index
    assert table.loc[merged, ["name", "size"]].tolist() == ["everything else", first["size"] + second["size"]]
    fine = index.topics.table("fine").set_index("cluster")
    assert set(fine.loc[sorted(children), "parent"]) == {merged}  # B's fine topics are A's
    assert_consistent(index)
    assert_consistent(PaperIndex.load(folder))
    assert PaperIndex.load(folder).topics.table("coarse").equals(index.topics.table("coarse"))


def test_splits_make_k_new_topics_that_sum_to_the_old(folder):
    index = PaperIndex.load(folder)
    highest = {level: int(index.topics.table(level)["cluster"].max()) for level in ("fine", "coarse")}
    fine = index.topics.table("fine").sort_values("size").iloc[-1]
    made = index.topics.split(int(fine["cluster"]), k=3, level="fine")
    table = index.topics.table("fine").set_index("cluster")
    assert len(made) == 3 and min(made) > highest["fine"] and fine["cluster"] not in table.index
    assert table.loc[made, "size"].sum() == fine["size"] and (table.loc[made, "size"] > 0).all()
    assert_parts_named_on_their_own(index, "fine", made)
    assert set(table.loc[made, "parent"]) == {fine["parent"]}
    assert table.loc[made, "size"].is_monotonic_decreasing  # part 1 the largest
    parts = [members(index, "fine", topic) for topic in made]
    assert_consistent(index)

    coarse = index.topics.table("coarse").sort_values("size").iloc[-1]
    split = index.topics.split(coarse["name"], k=2)
    table = index.topics.table("coarse").set_index("cluster")
    assert min(split) > highest["coarse"] and table.loc[split, "size"].sum() == coarse["size"]
    assert_parts_named_on_their_own(index, "coarse", split)
    assert_consistent(index)
    again = PaperIndex.load(folder)  # the same split again, from the parts it recorded
    assert [members(again, "fine", topic) for topic in made] == parts
    assert again.topics.table("coarse").equals(index.topics.table("coarse"))
    with pytest.raises(UserError, match="at least 2"):
        index.topics.split(split[0], k=1)
    with pytest.raises(UserError, match="fewer than k=500"):
        index.topics.split(split[0], k=500)
    assert len(curations.read_log(folder)) == 2  # what failed was not written


def test_moved_papers_join_the_topic_at_either_level(folder):
    index = PaperIndex.load(folder)
    fine = index.topics.table("fine")
    target = fine.iloc[0]
    moved = index.papers.loc[index.papers["cluster"] != target["cluster"], "id"].tolist()[:3]
    assert index.topics.move(moved, target["name"]) == target["cluster"]
    papers = index.papers.set_index("id").loc[moved]
    assert set(papers["cluster"]) == {target["cluster"]} and set(papers["coarse_cluster"]) == {target["parent"]}
    assert_consistent(index)
    coarse = index.topics.table("coarse")
    goal = coarse[coarse["cluster"] != target["parent"]].iloc[0]
    index.topics.move(moved[:1], int(goal["cluster"]), level="coarse")
    paper = index.papers.set_index("id").loc[moved[0]]
    assert paper["coarse_cluster"] == goal["cluster"]
    assert paper["cluster"] in set(index.topics.table("fine").query(f"parent == {goal['cluster']}")["cluster"])
    assert_consistent(index)
    with pytest.raises(UserError, match="already in coarse topic"):
        index.topics.move(moved[:1], int(goal["cluster"]), level="coarse")
    with pytest.raises(UserError, match="no paper with id 'nope'"):
        index.topics.move(["nope"], 0)


def test_user_mistakes_are_one_line_and_exit_2(folder):
    for arguments, says in [
        (["topics", "rename", "999", "x"], "is not one of the coarse topics"),
        (["topics", "split", "0", "-k", "1"], "argument -k: must be a whole number from 2 to 100, got 1"),
        (["topics", "split", "0", "-k", "x"], "argument -k: 'x' is not a whole number"),
        (["topics", "move", "nope", "--to", "0"], "no paper with id 'nope'"),
        (["topics", "merge", "0", "0"], "merge needs two different topics"),
        (["topics", "rename", "0", " "], "argument NAME: empty; give a value"),
        (["topics", "--by", "venue", "rename", "0", "x"], "takes neither"),
        (["topics", "unmake"], "invalid choice: 'unmake'"),
    ]:
        done = paperscope(*arguments, "--index", folder, here=True)
        assert done.returncode == 2, arguments
        error = done.stderr.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("paperscope: error: ") and says in error[0], arguments
    assert not curations.log_path(folder).exists()


def test_the_command_line_corrects_and_lists(folder, caplog):
    caplog.set_level(logging.INFO, logger="paperscope")
    index = PaperIndex.load(folder)
    coarse, fine = index.topics.table("coarse"), index.topics.table("fine")
    paper = index.papers.loc[index.papers["cluster"] != fine["cluster"].iloc[0], "id"].iloc[0]
    for arguments in (
        ["topics", "rename", str(coarse["cluster"].iloc[0]), "first topic"],
        ["topics", "--level", "fine", "rename", str(fine["cluster"].iloc[0]), "first fine"],  # --level before
        ["topics", "split", "first topic", "-k", "2"],
        ["topics", "move", paper, "--to", "first fine"],  # fine by default
        ["topics", "merge", str(coarse["cluster"].iloc[1]), str(coarse["cluster"].iloc[2]), "--name", "merged"],
    ):
        paperscope(*arguments, "--index", folder, here=True, check=True)
    said = [record.getMessage() for record in caplog.records]
    assert any(line.endswith("is now 'first topic'") for line in said)
    assert any(line.startswith("split into coarse topic") and "(part" not in line for line in said)  # named by terms
    assert any(line.startswith("moved 1 paper into fine topic") for line in said)
    listed = json.loads(paperscope("topics", "curations", "--json", "--index", folder, here=True, check=True).stdout)
    assert [(row["operation"], row["level"], row["applied"]) for row in listed] == [
        ("rename", "coarse", True), ("rename", "fine", True), ("split", "coarse", True), ("move", "fine", True),
        ("merge", "coarse", True)]  # fmt: skip
    table = paperscope("topics", "curations", "--index", folder, here=True, check=True)
    assert table.stdout.splitlines()[0].split()[:2] == ["1", "applied"]
    assert_consistent(PaperIndex.load(folder))


def test_a_curation_that_matches_no_topic_is_reported_not_applied(folder, caplog):
    index = PaperIndex.load(folder)
    coarse = index.topics.table("coarse")
    spread = [sorted(members(index, "coarse", topic))[: len(members(index, "coarse", topic)) // 2 + 1]
              for topic in coarse["cluster"][:2]]  # fmt: skip
    entries = [
        {"op": "rename", "level": "coarse", "topic": "gone", "members": ["nope-1", "nope-2"], "name": "ghosts"},
        {"op": "rename", "level": "coarse", "topic": "spread", "members": [*spread[0], *spread[1]],
         "name": "robot grasping"},
        {"op": "rename", "level": "coarse", "name": "no members"},
        {"op": "rename", "level": "fine", "topic": "kept", "members": sorted(members(index, "fine", 0)),
         "name": "kept"},
    ]  # fmt: skip
    curations.write_log(folder, entries)
    curated = PaperIndex.load(folder)
    assert curated.topics.report == [
        "curation 1 (rename coarse topic 'gone' to 'ghosts') matches no coarse topic any more: none of its papers "
        "is in the index any more; it is not applied",
        "curation 2 (rename coarse topic 'spread' to 'robot grasping') matches no coarse topic any more: its papers "
        "are now spread over other topics; it is not applied",
        "curation 3 (rename coarse topic 'None' to 'no members') is not applied: the entry is malformed (it has no "
        "'members')",
    ]
    assert curated.topics.table("coarse").equals(index.topics.table("coarse"))  # nothing applied there
    assert curated.topics.table("fine").set_index("cluster").loc[0, "name"] == "kept"  # the one that matches is
    assert curated.topics.curations()["applied"].tolist() == [False, False, False, True]
    shown = paperscope("topics", "--index", folder, here=True, check=True)
    warned = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warned == curated.topics.report and "coarse topics" in shown.stdout
    curations.log_path(folder).write_text("{not json")
    assert PaperIndex.load(folder).topics.report[0].startswith("no curation applied: ")
    with pytest.raises(UserError, match="unreadable"):
        curated.topics.rename(0, "x")  # never written over


@pytest.fixture(scope="session")  # its tests are in both tiers, which run apart (tests/conftest.py)
def corrected(sample_index_dir, tmp_path_factory):
    """A copy of the sample with one correction of each kind, and what they made."""
    folder = _copy(sample_index_dir, tmp_path_factory.mktemp("corrected") / "index")
    index = PaperIndex.load(folder)
    fine, coarse = index.topics.table("fine"), index.topics.table("coarse").sort_values("size", ascending=False)
    mover = index.papers.loc[index.papers["cluster"] != fine["cluster"].iloc[0], "id"].iloc[0]
    index.topics.rename(int(coarse["cluster"].iloc[0]), "renamed")
    index.topics.merge(int(coarse["cluster"].iloc[1]), int(coarse["cluster"].iloc[2]), name="merged")
    parts = index.topics.split("renamed", k=2)
    index.topics.move([mover], int(fine["cluster"].iloc[0]))
    return folder, index, index.topics.table("coarse").set_index("cluster").loc[parts, "name"].tolist()


def _names(index: PaperIndex) -> set[str]:
    return set(index.topics.table("coarse")["name"])


def test_corrections_survive_an_add(corrected, tmp_path):
    folder, index = _copy(corrected[0], tmp_path / "index"), corrected[1]
    new = tmp_path / "new.jsonl"
    new.write_text("\n".join(json.dumps({"id": f"new{i}", "title": t, "abstract": a})
                             for i, (t, a) in enumerate(NEW_PAPERS)))  # fmt: skip
    add_papers([new], folder)
    grown = PaperIndex.load(folder)
    assert len(grown) == len(index) + len(NEW_PAPERS) and grown.topics.report == []
    assert _names(grown) == _names(index) == {"merged", *corrected[2]}
    assert grown.topics.curations()["applied"].all()
    assert_consistent(grown)
    mover = curations.read_log(folder)[-1]["papers"][0]
    assert grown.papers.set_index("id").loc[mover, "cluster"] == index.papers.set_index("id").loc[mover, "cluster"]
    assert curations.log_path(folder).exists()
    assert curations.log_path(folder).read_text() == curations.log_path(corrected[0]).read_text()  # add keeps it


@pytest.mark.slow
def test_corrections_survive_a_rebuild_into_the_same_folder(corrected, tmp_path):
    folder, index = _copy(corrected[0], tmp_path / "index"), corrected[1]
    build_index(locations.bundled_corpus(), folder)
    rebuilt = PaperIndex.load(folder)
    assert rebuilt.generation != index.generation and rebuilt.topics.report == []
    assert _names(rebuilt) == _names(index)
    for level in ("fine", "coarse"):
        assert rebuilt.topics.table(level)["size"].tolist() == index.topics.table(level)["size"].tolist()
    assert_consistent(rebuilt)
    generations.verify(folder)
    assert [path.name for path in generations.leftovers(folder)] == []


@pytest.mark.slow
def test_the_service_answers_with_the_curated_names(corrected, tmp_path):
    import http.client
    import time
    import urllib.parse

    from tests.support.servers import paperscope_server

    folder = _copy(corrected[0], tmp_path / "index")

    def topics(url: str, level: str) -> list[str]:
        connection = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=60)
        connection.request("GET", f"/topics?level={level}")
        answer = connection.getresponse()
        assert answer.status == 200
        return [topic["name"] for topic in json.loads(answer.read())]

    with paperscope_server("serve", folder, ("--workers", "1")) as (url, _):
        assert set(topics(url, "coarse")) == _names(corrected[1])
        PaperIndex.load(folder).topics.rename("merged", "renamed while serving")
        deadline = time.monotonic() + 60
        while "renamed while serving" not in topics(url, "coarse") and time.monotonic() < deadline:
            time.sleep(0.2)  # the watcher loads the curations anew
        assert "renamed while serving" in topics(url, "coarse")


@pytest.mark.slow
def test_the_app_renames_and_merges_in_the_topics_panel(corrected):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    name = f"curated-{uuid.uuid4().hex[:6]}"
    folder = _copy(corrected[0], locations.indexes_dir() / name)
    try:
        app = AppTest.from_file(APP, default_timeout=120)
        app.session_state["index_label"] = name
        app.session_state["topics"] = True  # the panel opened
        app.session_state["sidebar_opened"] = True  # and the sidebar: its topics filter drawn
        app.run()
        assert not app.exception
        listed = app.dataframe[0].value["topic"]
        assert set(listed) == _names(corrected[1]) | {"unclustered"} and listed.iloc[-1] == "unclustered"
        app.selectbox(key="curate_topic_coarse").set_value("merged")
        app.text_input(key="curate_name_coarse").input("language and theory").run()  # the button is enabled
        app.button(key="curate_rename").click().run()
        assert not app.exception and any("Renamed 'merged'" in message.value for message in app.success)
        assert "language and theory" in set(app.dataframe[0].value["topic"])
        assert app.selectbox(key="curate_topic_coarse").value == "language and theory"
        assert "language and theory" in _names(PaperIndex.load(folder))
        app.selectbox(key="curate_merged_coarse").set_value(corrected[2][1])
        app.selectbox(key="curate_kept_coarse").set_value(corrected[2][0])
        app.button(key="curate_merge").click().run()
        assert not app.exception
        assert set(app.dataframe[0].value["topic"]) == {"language and theory", corrected[2][0], "unclustered"}
        assert set(app.sidebar.multiselect[0].options) - {"unclustered"} == {"language and theory", corrected[2][0]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_lookup_on_a_curated_index_loads_no_build_code(corrected):
    from tests.project.test_architecture import assert_no_build_code, loaded_in_fresh_process

    code = f"""
        from paperscope.index.paper_index import PaperIndex

        index = PaperIndex.load({str(corrected[0])!r})
        assert {corrected[2][0]!r} in set(index.topics.table("coarse")["name"])
        assert len(index.search("graph neural networks", k=5).to_pandas()) == 5
    """
    modules, chains = loaded_in_fresh_process(code)
    assert "paperscope.index.store.curations" in modules and "paperscope.index.curation.rules" in modules
    assert "paperscope.index.curation.split_names" not in modules  # the names were read from the log
    assert_no_build_code(modules, chains, "a lookup on a curated index")


def test_kmeans_is_deterministic_and_leaves_no_part_empty():
    from paperscope.index.common.kmeans import kmeans

    points = np.random.default_rng(3).normal(size=(40, 8)).astype(np.float32)
    points[:5] = points[0]  # duplicates
    first, second = kmeans(points, 4), kmeans(points, 4)
    assert np.array_equal(first, second) and set(first.tolist()) == {0, 1, 2, 3}
    same = np.repeat(points[:1], 6, axis=0)  # every point the same: still k non-empty parts
    assert set(kmeans(same, 3).tolist()) == {0, 1, 2}


def test_a_read_only_index_refuses_a_correction_in_one_line(read_only_index):
    index = PaperIndex.load(read_only_index)
    with pytest.raises(UserError, match=r"stopped: read-only file system .*; the index there is unchanged"):
        index.topics.rename(0, "anything")
    assert index.topics.report == [] and "anything" not in set(index.topics.table("coarse")["name"])


def test_a_part_of_one_paper_is_named_by_what_its_text_repeats(sample_index):
    """A split may leave one paper alone in a part: each of its phrases is "used by all its papers",
    so only the phrases its text repeats can tell its topic (not any three words of it, such as
    "multi-agent collaboration enhance" from a first sentence)."""
    texts = embedding_texts(sample_index.papers)
    terms = corpus_terms(texts, 3)
    vectors = np.asarray(sample_index.vectors, dtype=np.float32)
    lengths = np.array([len(text) for text in texts])
    alone, rest = int(np.argmax(lengths)), np.argsort(lengths)[:5]  # the longest abstract: most to repeat
    named = part_names(terms, [np.array([alone]), rest], vectors, sample_index.embed_texts)
    name = named[0].terms[: named[0].named_by]
    assert name, named
    for term in name:
        assert texts[alone].lower().count(term.lower()) >= 2, (term, texts[alone])


@pytest.mark.slow
def test_split_parts_nothing_tells_apart_keep_a_suffix(sample_index, folder):
    """Parts whose papers say the same things have no honest names of their own: the naming gives
    none (the split then names them "X (part i)"), and a split logged without names (before parts
    were named) keeps those names."""
    texts = [
        f"Spiking neural networks for event cameras. Spiking neural networks on chips, paper {i}." for i in range(6)
    ]
    texts += embedding_texts(sample_index.papers)
    terms = corpus_terms(texts, 4)
    vectors = sample_index.embed_texts(texts)
    same = part_names(terms, [np.arange(3), np.arange(3, 6)], vectors, sample_index.embed_texts)
    first = ", ".join(same[0].terms[: same[0].named_by])
    assert first.startswith("spiking") and same[1].terms == []  # the second could only be "spiking (2)"
    taken = part_names(terms, [np.arange(3)], vectors, sample_index.embed_texts, taken={first})
    assert taken[0].terms == [] or ", ".join(taken[0].terms[: taken[0].named_by]) != first  # never another's name

    index = PaperIndex.load(folder)
    fine = index.topics.table("fine").sort_values("size").iloc[-1]
    made = index.topics.split(int(fine["cluster"]), k=2, level="fine")
    entries = curations.read_log(folder)
    assert all(entries[-1]["names"]) and len(entries[-1]["terms"]) == 2  # named when made, kept in the log
    curations.write_log(folder, [{key: value for key, value in entries[-1].items() if key not in ("names", "terms")}])
    older = PaperIndex.load(folder).topics.table("fine").set_index("cluster")
    assert older.loc[made, "name"].tolist() == [f"{fine['name']} (part {i})" for i in (1, 2)]


def test_a_piece_alone_in_a_coarse_part_is_named_as_the_part(folder):
    """A coarse split into more parts than it has fine topics cuts fine topics into pieces; a part
    whose one fine topic is such a piece names it as the part, not "X (part i)"."""
    index = PaperIndex.load(folder)
    highest = int(index.topics.table("fine")["cluster"].max())
    coarse = index.topics.table("coarse").sort_values("size").iloc[0]
    children = index.topics.table("fine").query("parent == @coarse.cluster")
    made = index.topics.split(int(coarse["cluster"]), k=len(children) + 1)
    fine, parts = index.topics.table("fine"), index.topics.table("coarse").set_index("cluster")
    alone = [fine[fine["parent"] == part] for part in made]
    pieces = [(part, inside.iloc[0]) for part, inside in zip(made, alone, strict=True) if len(inside) == 1]
    assert any(row["cluster"] > highest for _, row in pieces), alone  # a piece alone in its part
    for part, row in pieces:
        assert row["name"] == parts.loc[part, "name"] and "(part" not in row["name"]
    assert_consistent(index)


def test_a_log_the_last_release_wrote_still_applies_and_is_kept_as_written(tmp_path):
    """tests/files/curations-ff7c3d5.json: a rename, a split (its parts and their names recorded),
    a move and a merge (name null), written by the code before the curation room (#52) on the
    12-paper index of ff7c3d5; loaded here, each applies as it did then, and a new correction is
    appended with the old entries written back byte for byte."""
    folder = copy_index(FILES / "indexes" / "ff7c3d5", tmp_path / "index")
    log = (FILES / "curations-ff7c3d5.json").read_text()
    curations.log_path(folder).write_text(log)
    index = PaperIndex.load(folder)
    listing = index.topics.curations()
    assert listing["operation"].tolist() == ["rename", "split", "move", "merge"]
    assert listing["applied"].all() and index.topics.report == []
    assert listing["description"].iloc[3] == "merge fine topic 'large language models (LLMs)' into 'image'"
    coarse = index.topics.table("coarse").set_index("cluster")
    assert coarse[["name", "size"]].to_dict("index") == {1: {"name": "modeling, renamed", "size": 4},
                                                         2: {"name": "image", "size": 5}}  # fmt: skip
    fine = index.topics.table("fine").set_index("cluster")
    assert fine.loc[2, "name"] == "image" and list(fine.loc[2, "terms"]) == ["image", "large language models (LLMs)"]
    papers = index.papers.set_index("id")
    assert papers.loc["p0", ["cluster", "coarse_name"]].tolist() == [1, "modeling, renamed"]  # moved
    assert papers.loc[["p3", "p9"], "cluster"].tolist() == [2, 2]  # merged
    assert_consistent(index)
    index.topics.rename(2, "images")
    written = [line.rstrip(",") for line in curations.log_path(folder).read_text().splitlines()]
    assert written[:5] == [line.rstrip(",") for line in log.splitlines()[:5]]  # the old entries as they were
    assert json.loads(written[5]) | {"made": None} == {
        "op": "rename", "level": "coarse", "members": ["p3", "p7", "p9", "p10", "p11"], "name": "images",
        "topic": "image", "made": None}  # fmt: skip
