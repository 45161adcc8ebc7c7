"""Maps of one index side by side (#41): a remap re-cuts and re-names the topics from the stored
vectors and layout, kept as a named map beside the index, one of them current; the CLI, the
service and the app choose it."""

import logging
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from paperscope import PaperIndex, locations
from paperscope.files import file_digest
from paperscope.index.build.add import add_papers
from paperscope.index.store import generations, maps
from paperscope.index.topics.remap_cache import TERMS, VECTORS
from tests.conftest import APP, SUPPORT, copy_index, paperscope
from tests.service.test_service import call
from tests.support.servers import paperscope_server

HALT_BUILD = SUPPORT / "halt_build.py"


def _other_count(index: PaperIndex) -> int:
    """A number of coarse topics the index's fine clusters allow, other than the build's."""
    fine, coarse = len(index.topics.table("fine")), len(index.topics.table("coarse"))
    assert fine >= 3, "the sample needs three fine clusters for a remap to differ"
    return 2 if coarse != 2 else 3


def _generation_digests(folder: Path) -> dict[str, str]:
    source = folder / generations.current_generation_name(folder)
    return {path.name: file_digest(path) for path in sorted(source.iterdir())}


@pytest.fixture
def index_dir(sample_index_dir, tmp_path) -> Path:
    return copy_index(sample_index_dir, tmp_path / "index")


def test_remap_cuts_n_topics_without_touching_vectors_faiss_or_layout(index_dir):
    index = PaperIndex.load(index_dir)
    before, digests = index.map.table(), _generation_digests(index_dir)
    wanted = _other_count(index)
    assert index.map.remap(wanted) == f"topics-{wanted}" and index.map.current == f"topics-{wanted}"
    coarse = index.topics.table("coarse")
    assert len(coarse) == wanted and coarse["name"].str.len().min() > 0 and coarse["name"].is_unique
    assert set(index.papers["coarse_name"]) - {"unclustered"} == set(coarse["name"])
    after = index.map.table()
    assert np.array_equal(before[["x", "y", "map_trust"]], after[["x", "y", "map_trust"]])  # the same layout
    assert after["cluster"].tolist() == before["cluster"].tolist()  # the build's fine clusters kept
    assert _generation_digests(index_dir) == digests  # faiss.index, papers.arrow, neighbours: the same bytes
    generations.verify(index_dir)
    listed = index.map.maps()
    assert listed["name"].tolist() == ["build", f"topics-{wanted}"]
    assert listed["current"].tolist() == [False, True] and listed["topics"].iloc[1] == wanted
    assert listed["topics"].iloc[0] == len(before.groupby("coarse_cluster").size().drop(-1, errors="ignore"))


@pytest.mark.slow
def test_more_topics_than_the_build_s_fine_clusters_finds_them_again_with_a_size_that_fits(index_dir):
    index = PaperIndex.load(index_dir)
    fine = len(index.topics.table("fine"))
    wanted = fine + 1  # refused before #53 until --min-topic-size was given
    done = paperscope("remap", "--topics", wanted, "--index", index_dir)
    assert done.returncode == 0, done.stderr
    remapped = PaperIndex.load(index_dir)
    assert remapped.map.current == f"topics-{wanted}" and len(remapped.topics.table("coarse")) == wanted
    assert len(remapped.topics.table("fine")) >= wanted
    assert remapped.topics.table("coarse")["name"].is_unique
    too_large = paperscope("remap", "--topics", wanted, "--min-topic-size", len(index.papers), "--index", index_dir)
    [error] = [line for line in too_large.stderr.splitlines() if "error" in line]  # after the log's progress lines
    assert too_large.returncode == 2 and "Traceback" not in too_large.stderr, too_large.stderr
    assert error.startswith("paperscope: error: --topics") and f"of at least {len(index.papers)} papers" in error


def _caches(folder: Path) -> dict[str, Path]:
    """What a remap of the current generation need not find again, by kind."""
    generation = generations.current_generation_name(folder)
    return {kind: maps.maps_dir(folder) / f".{kind}-{generation}.npz" for kind in (TERMS, VECTORS)}


def _remapped(index: PaperIndex, topics: int, name: str, caplog) -> tuple[list, list[str]]:
    """Remap ``index`` into ``topics`` topics as ``name``: its topics (cluster, name, terms, size
    at both levels) and the remap's log lines about what it found or embedded anew."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="paperscope"):
        index.map.remap(topics, name=name)
    table = pd.concat([index.topics.table(level) for level in ("fine", "coarse")])
    rows = table[["cluster", "name", "terms", "size"]].astype(str).to_dict("records")
    return rows, [record.getMessage() for record in caplog.records if "candidate" in record.getMessage()]


def test_a_built_index_keeps_what_its_first_remap_would_find_and_names_as_without(index_dir, caplog):
    caches = _caches(index_dir)
    assert all(path.is_file() for path in caches.values()), sorted(maps.maps_dir(index_dir).iterdir())
    stamps = {kind: path.stat().st_mtime_ns for kind, path in caches.items()}
    index = PaperIndex.load(index_dir)
    wanted = _other_count(index)
    kept, said = _remapped(index, wanted, "kept", caplog)
    assert said[0] == "candidate terms of 38 papers: kept from before"  # not found again in the texts
    assert said[1].startswith("candidate names: 0 embedded, ") and not said[1].endswith(" 0 kept from before")
    assert {kind: path.stat().st_mtime_ns for kind, path in caches.items()} == stamps  # nothing to add: not rewritten
    for path in caches.values():
        path.unlink()
    anew, said = _remapped(index, wanted, "anew", caplog)
    assert len(said) == 1 and said[0].startswith("candidate names: ") and not said[0].startswith("candidate names: 0 ")
    assert all(path.is_file() for path in caches.values())  # kept again by this remap
    assert anew == kept


def test_add_carries_the_caches_over_and_a_remap_after_it_names_as_without(index_dir, tmp_path, caplog):
    new = tmp_path / "new.csv"
    new.write_text(
        "id,title,abstract\nn1,Graph pruning,Sparse graph neural networks pruned by their edge gradients.\n"
        "n2,Bandits,A regret bound for contextual bandits with delayed feedback and side information.\n"
    )
    before = _caches(index_dir)
    add_papers([new], index_dir)
    caches = _caches(index_dir)
    assert caches != before and all(path.is_file() for path in caches.values())
    assert not any(path.exists() for path in before.values())  # moved, not copied
    index = PaperIndex.load(index_dir)
    wanted = _other_count(index)
    kept, said = _remapped(index, wanted, "kept", caplog)
    assert said[0] == "candidate terms of 38 papers: kept from before"  # the 38 laid out; the 2 placed
    with np.load(caches[TERMS]) as stored:
        np.savez(caches[TERMS], **{key: stored[key] for key in stored.files} | {"recipe": np.array("other code")})
    caches[VECTORS].unlink()
    anew, said = _remapped(index, wanted, "anew", caplog)
    assert not said[0].startswith("candidate terms")  # kept by other code: found again
    assert kept == anew


def test_maps_use_switches_back_and_forth_and_a_load_sees_the_current_one(index_dir):
    index = PaperIndex.load(index_dir)
    built = index.topics.table("coarse")["name"].tolist()
    wanted = _other_count(index)
    index.map.remap(wanted, name="mine")
    mine = index.topics.table("coarse")["name"].tolist()
    assert PaperIndex.load(index_dir).map.current == "mine"
    assert len(PaperIndex.load(index_dir).topics.table("coarse")) == wanted
    index.map.use("build")
    loaded = PaperIndex.load(index_dir)
    assert loaded.map.current == "build" and loaded.topics.table("coarse")["name"].tolist() == built
    assert loaded.map.maps()["name"].tolist() == ["build", "mine"]  # the other map kept
    loaded.map.use("mine")
    assert PaperIndex.load(index_dir).topics.table("coarse")["name"].tolist() == mine
    with pytest.raises(Exception, match="is the current one"):
        loaded.map.delete("mine")
    loaded.map.use("build")
    loaded.map.delete("mine")
    assert PaperIndex.load(index_dir).map.maps()["name"].tolist() == ["build"]


def test_curations_made_on_the_build_map_carry_over_to_a_remap_by_membership(index_dir):
    index = PaperIndex.load(index_dir)
    fine = index.topics.table("fine")
    largest = int(fine.sort_values("size").iloc[-1]["cluster"])
    index.topics.rename(largest, "my own field", level="fine")
    index.map.remap(_other_count(index))
    remapped = PaperIndex.load(index_dir)
    assert remapped.map.current.startswith("topics-")
    assert "my own field" in remapped.topics.table("fine")["name"].tolist()  # the same papers: renamed again
    members = remapped.papers["cluster_name"] == "my own field"
    assert members.sum() == fine.sort_values("size").iloc[-1]["size"]
    assert remapped.topics.curations()["applied"].tolist() == [True]


@pytest.mark.slow
def test_a_killed_remap_leaves_the_current_map_as_it_was(index_dir):
    index = PaperIndex.load(index_dir)
    shown = index.topics.table("coarse")["name"].tolist()
    wanted = _other_count(index)
    command = [sys.executable, str(HALT_BUILD), "commit", "remap", "--topics", str(wanted), "--index", str(index_dir)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    said = []
    for line in process.stderr:  # until the map's files are written but it is not current
        said.append(line)
        if line.strip() == "paperscope: halted at commit":
            break
    else:
        pytest.fail("the remap never reached the commit:\n" + "".join(said))
    process.kill()
    process.wait()
    loaded = PaperIndex.load(index_dir)
    assert loaded.map.current == "build" and loaded.topics.table("coarse")["name"].tolist() == shown


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["remap", "--topics", "1"], "argument --topics: must be a whole number from 2 to 1,000,000,000, got 1"),
        (["remap", "--topics", "999"], "--topics 999: the map has"),
        (["remap", "--topics", "2", "--name", "../x"], "map name '../x': use letters"),
        (["remap", "--topics", "2", "--name", "build"], "'build' is the build's own map"),
        (["maps", "use", "nowhere"], "no map named 'nowhere'; the maps are: build"),
        (["maps", "delete", "build"], "the build's map cannot be deleted"),
        (["maps", "use"], "paperscope maps use needs a map's name"),
    ],
)
@pytest.mark.slow
def test_the_command_line_says_what_is_wrong_in_one_line(index_dir, arguments, says):
    done = paperscope(*arguments, "--index", index_dir)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


@pytest.mark.slow
def test_the_command_line_remaps_lists_and_switches(index_dir):
    wanted = _other_count(PaperIndex.load(index_dir))
    done = paperscope("remap", "--topics", wanted, "--index", index_dir, check=True)
    assert f"map 'topics-{wanted}': {wanted} topics" in done.stderr
    listed = paperscope("maps", "--index", index_dir, check=True)
    assert listed.stdout.splitlines()[1].startswith(f"* topics-{wanted} ")
    paperscope("maps", "use", "build", "--index", index_dir, check=True)
    assert PaperIndex.load(index_dir).map.current == "build"


@pytest.mark.slow
def test_the_service_lists_the_maps_and_a_put_chooses_what_topics_answers(index_dir):
    index = PaperIndex.load(index_dir)
    built = [row["name"] for row in call_topics(None, index)]
    wanted = _other_count(index)
    index.map.remap(wanted, name="few")
    index.map.use("build")
    with paperscope_server("serve", index_dir) as (url, _):
        status, listed, _ = call(url, "GET", "/maps")
        assert status == 200 and [(m["name"], m["current"]) for m in listed] == [("build", True), ("few", False)]
        assert [topic["name"] for topic in call(url, "GET", "/topics")[1]] == built
        status, listed, _ = call(url, "PUT", "/maps/current", {"name": "few"})
        assert status == 200 and [m["name"] for m in listed if m["current"]] == ["few"]
        # every worker: the one that answered at once, the others once their watcher has loaded the map
        deadline, seen = time.monotonic() + 60, []
        while seen[-6:] != [wanted] * 6 and time.monotonic() < deadline:
            seen.append(len(call(url, "GET", "/topics")[1]))
            time.sleep(0.05)
        assert seen[-6:] == [wanted] * 6, seen
        status, answer, _ = call(url, "PUT", "/maps/current", {"name": "nowhere"})
        assert status == 404 and answer["error"].startswith("no map named 'nowhere'")
    with paperscope_server("serve", index_dir, ("--read-only",)) as (url, _):
        assert call(url, "PUT", "/maps/current", {"name": "build"})[0] == 403  # a write
    assert PaperIndex.load(index_dir).map.current == "few"


def call_topics(url, index) -> list[dict]:
    return index.topics.overview("coarse").to_dict("records")


@pytest.mark.slow
def test_the_app_map_select_switches_the_map_and_the_topics_shown(sample_index_dir):
    folder = locations.default_index_dir()
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    copy_index(sample_index_dir, folder)
    index = PaperIndex.load(folder)
    built = index.topics.overview("coarse")["name"].tolist()
    wanted = _other_count(index)
    index.map.remap(wanted, name="few")
    few = index.topics.overview("coarse")["name"].tolist()
    index.map.use("build")
    app = AppTest.from_file(APP, default_timeout=120)
    app.session_state["topics"] = True
    app.run()
    select = app.selectbox(key="map_choice_build")
    assert select.options == [f"build ({len(built)} topics)", f"few ({wanted} topics)"]
    assert app.dataframe[0].value["topic"].tolist()[: len(built)] == built
    select.set_value("few").run()
    assert not app.exception
    app.run()
    assert app.dataframe[0].value["topic"].tolist()[: len(few)] == few
    assert PaperIndex.load(folder).map.current == "few"
    app.number_input(key="remap_n").set_value(2).run()
    app.button(key="remap_go").click().run()
    assert not app.exception and PaperIndex.load(folder).map.current == "topics-2"
    more = len(index.topics.table("fine")) + 1  # more than the build's fine clusters: the remap finds smaller ones
    app.number_input(key="remap_n").set_value(more).run()
    app.button(key="remap_go").click().run()
    assert not app.exception and PaperIndex.load(folder).map.current == f"topics-{more}"
    assert len(PaperIndex.load(folder).topics.table("coarse")) == more
    shutil.rmtree(folder, ignore_errors=True)
