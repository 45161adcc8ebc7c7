"""Saved searches (``paperscope watch``): kept with the collections, tied to the index; their
matches are the papers at or above the threshold's cosine with the query (its text's vector, or
the mean of its papers'), new ones those added since last marked shown, listed by ``digest``
beside the collections' with a recommendation's reasons; a file of an older schema gains them."""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3

import numpy as np
import pytest

from paperscope import PaperIndex
from paperscope.index.collections.database import SCHEMA_VERSION
from paperscope.index.store import generations
from tests.conftest import FILES, copy_index, paperscope
from tests.index.test_add import NEW_PAPERS

pytestmark = pytest.mark.slow  # a copy of the sample index, papers added to it

TEXT = "federated learning with drifting clients"


@pytest.fixture
def folder(sample_index_dir, tmp_path, monkeypatch):
    """A copy of the sample index, and a data folder of this test's own."""
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    return copy_index(sample_index_dir, tmp_path / "index")


def run(*arguments, folder):
    """``paperscope ARGUMENTS --index FOLDER`` in this process."""
    return paperscope(*arguments, "--index", folder, here=True)


def above(index, vector, threshold: float, leave_out=()) -> set[str]:
    """The ids of the papers whose cosine with ``vector`` is at least ``threshold``, by numpy."""
    ids = np.asarray(index.papers["id"])
    return set(ids[np.asarray(index.vectors) @ vector >= threshold]) - set(leave_out)


def shown_ids(done) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [row["id"] for row in json.loads(done.stdout)]


def test_saved_searches_match_above_their_threshold_and_list_new_matches_in_the_digest(folder, tmp_path):
    index = PaperIndex.load(folder)
    spfl = index.papers.loc[index.papers["title"].str.startswith("SPFL"), "id"].item()  # a federated learning paper
    saved = run("watch", "add", TEXT, "--threshold", "0.5", folder=folder)
    assert saved.returncode == 0 and f"saved '{TEXT}' (text, matches from 0.50)" in saved.stderr, saved.stderr
    paper = np.asarray(index.vectors[index.rows([spfl])[0]])
    nearest = np.sort(np.delete(np.asarray(index.vectors) @ paper, index.rows([spfl])))[::-1]
    # thresholds between the sample's own scores: the nearest paper above the narrow one, three above the wide
    narrow_at, wide_at = (round(float(nearest[i] + nearest[i + 1]) / 2, 4) for i in (0, 2))
    for name, threshold in (("fed-paper", narrow_at), ("fed-paper-wide", wide_at)):
        saved = run("watch", "add", spfl, "--name", name, "--threshold", f"{threshold:.4f}", folder=folder)
        assert saved.returncode == 0 and "(papers, " in saved.stderr, saved.stderr
    listed = json.loads(run("watch", "list", "--json", folder=folder).stdout)
    by_name = [("fed-paper", "ids", spfl), ("fed-paper-wide", "ids", spfl), (TEXT, "text", TEXT)]
    assert [(w["name"], w["kind"], w["query"]) for w in listed] == by_name
    watches = PaperIndex.load(folder).collections.watches
    assert watches.listing_records() == watches.listing().to_dict("records")  # the app's, without pandas

    # every match: exactly the papers at or above the threshold (the query's papers left out)
    query = index.embed_query(TEXT)
    assert set(shown_ids(run("watch", "show", TEXT, "--all", "--json", folder=folder))) == above(index, query, 0.5)
    narrow = shown_ids(run("watch", "show", "fed-paper", "--all", "--json", folder=folder))
    wide = shown_ids(run("watch", "show", "fed-paper-wide", "--all", "--json", folder=folder))
    assert set(narrow) == above(index, paper, narrow_at, [spfl]) and set(wide) == above(index, paper, wide_at, [spfl])
    assert len(narrow) == 1 and len(wide) == 3 and spfl not in wide  # a lower threshold matches more

    # new papers come: the new matches are those of them above the threshold, with reasons
    assert run("collection", "create", "fed", spfl, folder=folder).returncode == 0
    index.collections.watches.mark_shown()
    before = index.collections.watches.shown(TEXT)
    assert run("collection", "mark-shown", "--all", folder=folder).returncode == 0
    corpus = tmp_path / "new.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"n{i}", "title": t, "abstract": a}) for i, (t, a) in
                                enumerate(NEW_PAPERS)) + "\n")  # fmt: skip
    assert run("add", corpus, folder=folder).returncode == 0
    grown = PaperIndex.load(folder)
    new_rows = grown.rows([f"n{i}" for i in range(len(NEW_PAPERS))])
    new_ids = set(np.asarray(grown.papers["id"])[new_rows])
    fresh = shown_ids(run("watch", "show", TEXT, "--json", folder=folder))
    assert "n1" in fresh and set(fresh) == above(grown, grown.embed_query(TEXT), 0.5) & new_ids
    printed = run("watch", "show", "fed-paper", folder=folder).stdout
    assert "n1" in printed and f"like “{index.papers.set_index('id').loc[spfl, 'title'][:40]}" in printed
    assert "; shares " in printed and "; new, came " in printed

    digest = json.loads(run("digest", "--json", folder=folder).stdout)
    kinds = {entry["name"]: entry["kind"] for entry in digest}
    assert kinds == {"fed": "collection", TEXT: "watch", "fed-paper": "watch", "fed-paper-wide": "watch"}
    of = {entry["name"]: entry for entry in digest}
    assert [paper["id"] for paper in of[TEXT]["papers"]] == fresh and of[TEXT]["threshold"] == 0.5
    for paper in of[TEXT]["papers"]:
        assert paper["because"]["members"][0]["title"] == TEXT and paper["because"]["terms"] and paper["added"]
    assert {paper["id"] for paper in of["fed-paper-wide"]["papers"]} <= new_ids
    markdown = run("digest", folder=folder).stdout
    assert "## fed\n" in markdown and "## Saved search: fed-paper\n" in markdown and "(n1, " in markdown

    # marked shown: nothing new since; a time asked for brings them back
    assert run("watch", "mark-shown", "--all", folder=folder).returncode == 0
    after = PaperIndex.load(folder).collections
    assert all(not len(entry["papers"]) for entry in after.digest() if entry["kind"] == "watch")
    again = {e["name"]: e["papers"].ids for e in after.digest(since=before) if e["kind"] == "watch"}
    assert again[TEXT] == fresh

    removed = run("watch", "remove", "fed-paper", folder=folder)
    assert removed.returncode == 0 and "removed the saved search 'fed-paper'" in removed.stderr
    assert "fed-paper " not in run("watch", "list", folder=folder).stdout
    gone = run("watch", "show", "fed-paper", folder=folder)
    assert gone.returncode == 2 and gone.stderr.startswith("paperscope: error: no saved search named 'fed-paper'")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["watch", "add", TEXT], f"a saved search named '{TEXT}' exists already"),
        (["watch", "add", "{first}", "nosuchpaper1"], "no paper with id 'nosuchpaper1'"),
        (["watch", "add", "2501.00001v2", "10.1145/3580305"], "no paper with id '2501.00001v2'"),  # ids of no paper
        (["watch", "add", "text", "--threshold", "1.5"], "argument --threshold: must be in (-1, 1], got 1.5"),
        (["watch", "show", "nothing like it"], "no saved search named 'nothing like it'"),
        (["watch", "mark-shown"], "name the saved searches to mark shown, or give --all"),
    ],
)
def test_mistakes_are_one_line_and_change_nothing(folder, arguments, message):
    first = PaperIndex.load(folder).papers["id"][0]
    assert run("watch", "add", TEXT, folder=folder).returncode == 0
    before = run("watch", "list", "--json", folder=folder).stdout
    done = run(*[argument.format(first=first) for argument in arguments], folder=folder)
    assert done.returncode == 2 and done.stderr.startswith("paperscope: error: ") and message in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert run("watch", "list", "--json", folder=folder).stdout == before


def test_a_file_of_an_older_schema_gains_saved_searches_and_keeps_its_collections(folder, tmp_path):
    """tests/files/collections-v2.sqlite (schema 2: 'reading list' and 'feed'), tied here to this index."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(FILES / "collections-v2.sqlite", home / "collections.sqlite")
    identity = generations.identity(folder)  # the copy's own, written now
    with sqlite3.connect(home / "collections.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        db.execute("UPDATE collections SET index_key = ?", (identity,))
        db.execute("UPDATE indexes SET identity = ?, path = ?", (identity, str(folder.resolve())))
    assert run("watch", "add", TEXT, "--name", "fl", folder=folder).returncode == 0
    with sqlite3.connect(home / "collections.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT name, kind, query FROM watches").fetchall() == [("fl", "text", TEXT)]
    listed = run("collection", "list", "--json", folder=folder)
    assert [row["name"] for row in json.loads(listed.stdout)] == ["feed", "reading list"]


def test_an_id_given_twice_is_one_paper(folder):
    first = PaperIndex.load(folder).papers["id"][0]
    assert run("watch", "add", first, first, "--name", "twice", folder=folder).returncode == 0
    listed = json.loads(run("watch", "list", "--json", folder=folder).stdout)
    assert [(w["name"], w["kind"], w["query"]) for w in listed] == [("twice", "ids", first)]


def test_a_taken_names_hint_runs_as_printed(folder):
    assert run("watch", "add", TEXT, folder=folder).returncode == 0
    taken = run("watch", "add", TEXT, folder=folder)
    hint = taken.stderr.split("remove it first: paperscope ", 1)[1].strip()
    followed = paperscope(*shlex.split(hint), here=True)  # as printed: its name quoted, its --index given
    assert followed.returncode == 0 and f"removed the saved search '{TEXT}'" in followed.stderr
    assert run("watch", "add", TEXT, folder=folder).returncode == 0
