"""Collections: kept in SQLite beside the index, matched from library files, surviving rebuilds and
adds, exported, recommended from, and a feed of new papers; bad input is one line."""

from __future__ import annotations

import json
import re
import sqlite3
import threading

import numpy as np
import pandas as pd
import pytest

from paperscope import Feedback, PaperIndex, QuerySettings, UserError, build_index
from paperscope.index.build.add import add_papers
from paperscope.index.collections.database import default_path
from paperscope.index.collections_group import CollectionsGroup
from tests.conftest import paperscope
from tests.support.corpora import read_corpus

pytestmark = pytest.mark.slow  # every test here uses an index of its own (the library corpus)


@pytest.fixture
def collections(library_corpus, tmp_path, monkeypatch):
    """The library index's collections, in a data folder of this test's own."""
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    return PaperIndex.load(library_corpus / "index").collections


def test_library_entries_are_matched_by_doi_arxiv_id_and_title_and_the_rest_kept_outside(collections, library_corpus):
    matched = collections.create("mine", ids=["p5"], files=[library_corpus / "refs.bib"])
    assert matched.counts() == {"id": 1, "doi": 3, "arxiv": 1, "title": 1, "outside": 1} and matched.unusable == 1
    shown = collections.show("mine")
    assert shown["members"] == 7 and shown["in_index"] == 6
    assert set(shown["papers"]["id"].dropna()) == {"p5", "p0", "p1", "p2", "p21", "p31"}
    outside = shown["papers"][shown["papers"]["matched_by"] == "outside"].iloc[0]
    assert outside["title"] == "Pruning attention heads in vision transformers" and not outside["in_index"]
    assert collections.listing().to_dict("records")[0] | {"created": None, "shown": None} == {
        "name": "mine", "members": 7, "in_index": 6, "outside": 1, "missing": 0, "created": None, "shown": None,
    }  # fmt: skip
    assert collections.listing_records() == collections.listing().to_dict("records")  # the app's, without pandas


def test_recommendations_exclude_members_and_an_outside_entry_steers_them(collections, library_corpus):
    collections.create("papers", ids=["p3", "p4"])
    found = collections.recommend("papers", k=5).to_pandas()
    assert len(found) == 5 and not {"p3", "p4"} & set(found["id"])
    index = PaperIndex.load(library_corpus / "index")
    assert list(found.columns[:4]) == ["rank", "id", "title", "score"]
    collections.create("outside", files=[library_corpus / "refs.bib"])
    collections.remove("outside", [i for i in collections.members("outside")["id"] if isinstance(i, str)])
    steered = collections.recommend("outside", k=3).to_pandas()  # only the outside entry: its vector alone steers
    text = (
        "Pruning attention heads in vision transformers. "
        "We prune the attention heads of vision transformers with a learned gate and keep accuracy."
    )
    nearest = index.search(text, k=5, mode="dense", settings=QuerySettings(feedback=Feedback(on=False))).to_pandas()
    assert set(steered["id"]) <= set(nearest["id"])  # the entry's neighbourhood, not the collection before


def _because(results) -> list[dict]:
    return results.to_arrow().column("because").to_pylist()


def test_recommendations_asked_again_are_the_same_each_callers_own_and_follow_the_collection(
    collections, library_corpus
):
    """A page's reruns ask again for what a collection recommends: served from memory then, as made."""
    collections.create("papers", ids=["p3", "p4"])
    first = collections.recommend("papers", k=5)
    again = collections.recommend("papers", k=5)
    assert again.ids == first.ids and _because(again) == _because(first)
    again.ranking.reasons[0]["terms"].append("a caller's own change")
    again.ranking.scores["score"][:] = 0
    third = collections.recommend("papers", k=5)
    because = _because(third)
    assert because == _because(first) and "a caller's own change" not in because[0]["terms"]
    assert third.scores["score"].tolist() == first.scores["score"].tolist() and first.scores["score"][0] > 0
    index = PaperIndex.load(library_corpus / "index")
    collections.add("papers", ids=[first.ids[0]])  # a member now: no longer recommended, and it steers
    assert collections.recommend("papers", k=5).ids == index.recommend(["p3", "p4", first.ids[0]], k=5).ids
    collections.remove("papers", [first.ids[0]])
    assert collections.recommend("papers", k=5).ids == first.ids
    within = np.ones(len(index), bool)
    within[index.rows(first.ids[:2])] = False  # the first two recommended, filtered out
    kept = collections.recommend("papers", k=5, within=within).ids
    assert kept == index.recommend(["p3", "p4"], k=5, within=within).ids and not set(first.ids[:2]) & set(kept)


def test_collections_survive_a_rebuild_and_an_add_and_missing_papers_stay(library_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "index"
    build_index([library_corpus / "corpus.jsonl"], folder)
    PaperIndex.load(folder).collections.create("kept", ids=["p1", "p2", "p35"])
    add_papers([library_corpus / "later.jsonl"], folder)
    after_add = PaperIndex.load(folder).collections
    assert after_add.show("kept")["in_index"] == 3
    smaller = tmp_path / "smaller.jsonl"
    smaller.write_text("".join(line + "\n" for line in (library_corpus / "corpus.jsonl").read_text().splitlines()[2:]))
    build_index([smaller], folder)  # p1 is gone from the rebuilt index
    rebuilt = PaperIndex.load(folder).collections
    shown = rebuilt.show("kept")
    assert shown["members"] == 3 and shown["missing"] == 1 and shown["in_index"] == 2
    assert rebuilt.recommend("kept", k=3).to_pandas()["id"].isin(["p2", "p35"]).sum() == 0


def test_the_feed_ranks_only_papers_added_since_it_was_marked_shown_and_reading_marks_nothing(
    library_corpus, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    folder = tmp_path / "index"
    build_index([library_corpus / "corpus.jsonl"], folder)
    collections = PaperIndex.load(folder).collections
    collections.create("feed", ids=["p3", "p4"])
    assert collections.recommend("feed", new=True).to_pandas().empty  # nothing new since it was created
    add_papers([library_corpus / "later.jsonl"], folder)
    collections = PaperIndex.load(folder).collections
    assert set(collections.recommend("feed", new=True, k=10).to_pandas()["id"]) == {"p36", "p37"}
    # a cron mail and a person at the terminal both see the feed: reading it changes nothing
    digest = paperscope("digest", "--index", folder, "--json", home=home)
    assert {paper["id"] for paper in json.loads(digest.stdout)[0]["papers"]} == {"p36", "p37"}
    markdown = paperscope("digest", "--md", "--index", folder, home=home)  # the README's cron mail
    assert markdown.returncode == 0 and not markdown.stderr, markdown.stderr
    assert markdown.stdout.startswith("## feed\n") and "(p36, " in markdown.stdout and "(p37, " in markdown.stdout
    assert "shares " in markdown.stdout  # each paper's reason, the terms it shares with the collection
    again = paperscope("recommend", "feed", "--new", "--json", "--index", folder, home=home)
    assert {paper["id"] for paper in json.loads(again.stdout)} == {"p36", "p37"}
    marked = paperscope("collection", "mark-shown", "--all", "--index", folder, home=home)
    assert marked.returncode == 0 and "marked shown: 'feed'" in marked.stderr
    nothing = collections.recommend("feed", new=True)  # marked: the feed starts again from now, and says so
    assert not len(nothing) and re.fullmatch(
        r"no paper matches added since .+ UTC; the newest came .+ UTC", nothing.note
    )
    assert set(collections.recommend("feed", since="2000-01-01", k=50).to_pandas()["id"]) >= {"p36", "p37"}
    digest = paperscope("digest", "--index", folder, "--json", home=home)
    entries = json.loads(digest.stdout)
    assert [entry["name"] for entry in entries] == ["feed"] and entries[0]["papers"] == []
    assert digest.stderr == f"no new papers for any collection or saved search ('feed': {nothing.note})\n"  # why
    paperscope("collection", "create", "empty", "--index", folder, here=True, check=True)
    exported = paperscope("collection", "export", "empty", "-o", tmp_path / "empty.bib", "--index", folder, here=True)
    assert exported.returncode == 0 and exported.stderr == (
        f"'empty' written to {tmp_path / 'empty.bib'} with no entries: {collections.empty_note('empty')}\n"
    )


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["recommend", "feed", "--new", "--since", "2026-01-01"], "argument --since: not allowed with argument --new"),
        (["recommend", "feed", "--not", "feed"], "the collection to avoid is 'feed' itself"),
        (["collection", "mark-shown"], "name the collections to mark shown, or give --all"),
    ],
)
def test_contradictory_feed_options_are_one_line_errors(library_corpus, tmp_path, arguments, says):
    home, index = tmp_path / "home", library_corpus / "index"
    assert paperscope("collection", "create", "feed", "p3", "--index", index, home=home).returncode == 0
    done = paperscope(*arguments, "--index", index, home=home)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("suffix", [".csv", ".bib", ".ris", ".json"])
def test_a_collection_exports_as_csv_bibtex_ris_and_csl_json_and_reads_back(
    collections, library_corpus, tmp_path, suffix
):
    collections.create("out", ids=["p7"], files=[library_corpus / "refs.bib"])
    path = collections.export("out", tmp_path / f"out{suffix}")
    back = read_corpus([path]) if suffix != ".csv" else None
    if back is not None:  # a reference manager's file: every member with an abstract reads back
        titles = set(back[0]["title"])
        assert "Pruning attention heads in vision transformers" in titles
        assert PaperIndex.load(library_corpus / "index").paper("p7")["title"] in titles
    else:
        text = path.read_text()
        assert text.splitlines()[0].startswith("id,title,year") and "10.5555/sample.0" in text
    text = path.read_text()
    if suffix == ".csv":
        years = pd.read_csv(path, dtype=str)["year"].dropna().tolist()
    elif suffix == ".json":
        years = [str(item["issued"]["date-parts"][0][0]) for item in json.loads(text) if "issued" in item]
    else:
        years = re.findall(r"^PY  - (.*)$", text, flags=re.M) + re.findall(r"year = \{([^}]*)\}", text)
    assert years and all(year.isdigit() for year in years)  # 2024, never 2024.0


def test_the_command_line_manages_collections(library_corpus, tmp_path):
    home, index = tmp_path / "home", library_corpus / "index"
    created = paperscope("collection", "create", "reading list", "p1", "--from", library_corpus / "refs.bib",
                         "--index", index, home=home)  # fmt: skip
    assert created.returncode == 0, created.stderr
    summary = (
        "created 'reading list': 8 entries: 5 new members matched to corpus papers (1 by id, 2 by DOI, 1 by arXiv "
        "id, 1 by title); 1 new outside the corpus; 1 repeating an entry read before; 1 without a title or an "
        "abstract, left out"  # p1 by id, then again by its DOI
    )
    assert summary in created.stderr
    shown = json.loads(paperscope("collection", "show", "reading list", "--json", "--index", index, home=home).stdout)
    assert shown["matched_by"] == {"id": 1, "doi": 2, "arxiv": 1, "title": 1, "outside": 1}  # as the summary counted
    again = paperscope("collection", "add", "reading list", "--index", index, "p1", home=home)  # an id after options
    assert "'reading list' unchanged: 1 entry: 1 already a member" in again.stderr
    twice = paperscope("collection", "add", "reading list", "--from", library_corpus / "refs.bib",
                       library_corpus / "refs.bib", "--index", index, home=home)  # fmt: skip
    assert "14 entries: 6 already members; 6 repeating an entry read before; 2 without a title" in twice.stderr
    listed = paperscope("collection", "list", "--index", index, "--json", home=home)
    assert json.loads(listed.stdout)[0]["name"] == "reading list"
    recommended = paperscope("recommend", "reading list", "-k", "4", "--json", "--index", index, home=home)
    assert len(json.loads(recommended.stdout)) == 4
    typo = paperscope("collection", "show", "reading lst", "--index", index, home=home)
    assert typo.returncode == 2 and "did you mean reading list?" in typo.stderr
    assert len(typo.stderr.strip().splitlines()) == 1
    removed = paperscope("collection", "remove", "reading list", "p1", "--index", index, home=home)
    assert "removed 1 of 1" in removed.stderr
    assert paperscope("collection", "delete", "reading list", "--index", index, home=home).returncode == 0
    assert json.loads(paperscope("collection", "list", "--index", index, "--json", home=home).stdout) == []


@pytest.mark.parametrize("name", ["a/b/c", 'it\'s "quoted"; DROP TABLE members; --', "é ✓ 名前"])
def test_names_with_slashes_and_quotes_are_stored_safely(collections, name):
    collections.create(name, ids=["p1"])
    assert name in collections.names() and collections.show(name)["in_index"] == 1


def test_bad_names_and_unknown_ids_are_one_line_errors(collections):
    with pytest.raises(UserError, match="at most 200 characters, this one 10,000"):
        collections.create("x" * 10_000)
    with pytest.raises(UserError, match="control characters"):
        collections.create("tab\there")
    with pytest.raises(UserError, match="no paper with id 'nope'"):
        collections.create("ok", ids=["nope"])
    assert collections.names() == []  # nothing half-made


def test_a_corrupted_or_locked_database_is_one_line_naming_it(library_corpus, tmp_path):
    home, index = tmp_path / "home", library_corpus / "index"
    home.mkdir()
    (home / "collections.sqlite").write_bytes(b"this is not a database" * 100)
    broken = paperscope("collection", "list", "--index", index, home=home)
    assert broken.returncode == 2 and "collections.sqlite: not a readable collections database" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
    (home / "collections.sqlite").unlink()
    assert paperscope("collection", "create", "x", "p1", "--index", index, home=home).returncode == 0
    holder = sqlite3.connect(home / "collections.sqlite")
    holder.execute("BEGIN EXCLUSIVE")  # another program holds the file
    locked = paperscope("collection", "add", "x", "p2", "--index", index, home=home)
    holder.rollback()
    holder.close()
    assert locked.returncode == 2 and "locked by another paperscope" in locked.stderr
    assert "collections.sqlite" in locked.stderr and len(locked.stderr.strip().splitlines()) == 1


def test_concurrent_writers_lose_nothing(collections, library_corpus):
    collections.create("shared")
    path = default_path()
    errors = []

    def writer(ids):
        try:
            mine = CollectionsGroup(PaperIndex.load(library_corpus / "index"), path)
            for paper_id in ids:
                mine.add("shared", ids=[paper_id])
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=([f"p{i}" for i in range(start, 36, 3)],)) for start in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and collections.show("shared")["in_index"] == 36


def test_a_years_filter_takes_one_year_a_range_or_an_open_range(library_corpus):
    index = PaperIndex.load(library_corpus / "index")
    years = index.papers["year"].to_numpy()
    assert (index.where(years=2025) == (years == 2025)).all()
    assert (index.where(years=(2025, None)) == (years >= 2025)).all()
    assert (index.where(years=[None, 2024]) == (years <= 2024)).all()
    assert index.where(years=(2020, 2030)).all()
    with pytest.raises(UserError, match="a year or a \\(low, high\\) pair"):
        index.where(years="2024")
