"""Papers dismissed from a collection's recommendations ("not interested"): kept with the
collection (undoable), steering its next recommendations away and never among them; through the
front, the command line and the service; a file of the previous schema upgrades in place."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from paperscope import PaperIndex, UserError
from paperscope.index.collections.database import SCHEMA_VERSION
from paperscope.index.collections_group import CollectionsGroup
from tests.collections.test_collection_writes import call, paperscope
from tests.conftest import FILES
from tests.support.servers import paperscope_server

pytestmark = pytest.mark.slow  # copies of the library corpus's index, real processes


@pytest.fixture
def index_copy(library_corpus, tmp_path, monkeypatch) -> Path:
    """A copy of the library corpus's index, and a data folder of this test's own."""
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "index"
    shutil.copytree(library_corpus / "index", folder)
    return folder


def ids(results) -> list[str]:
    return results.to_pandas()["id"].tolist()


def test_a_dismissed_paper_is_never_recommended_again_steers_away_and_comes_back(index_copy):
    index = PaperIndex.load(index_copy)
    collections = index.collections
    collections.create("papers", ids=["p3", "p4"])
    collections.create("other", ids=["p20"])
    before = ids(collections.recommend("papers", k=5))
    first = before[0]
    assert collections.dismiss("papers", first) == 1 and collections.dismiss("papers", [first]) == 0
    assert collections.dismissed("papers") == [first] and collections.show("papers")["dismissed"] == [first]
    after = ids(collections.recommend("papers", k=5))
    assert first not in after and len(after) == 5
    assert after == ids(index.recommend(["p3", "p4"], negative=[first], k=5))  # a negative, not only left out
    avoiding = ids(collections.recommend("papers", avoid="other", k=5))
    assert avoiding == ids(index.recommend(["p3", "p4"], negative=["p20", first], k=5))  # with the other's
    assert collections.dismissed("other") == []  # kept with its collection only
    assert collections.undismiss("papers", first) == 1 and collections.undismiss("papers", first) == 0
    assert collections.dismissed("papers") == [] and ids(collections.recommend("papers", k=5)) == before


def test_dismissing_a_member_or_an_unknown_paper_is_one_line_and_changes_nothing(index_copy):
    collections = PaperIndex.load(index_copy).collections
    collections.create("papers", ids=["p3", "p4"])
    collections.dismiss("papers", "p9")
    with pytest.raises(UserError, match="'p3' is a member of 'papers', not one of its recommendations") as member:
        collections.dismiss("papers", ["p10", "p3"])  # p10 first: the whole write refused
    with pytest.raises(UserError, match="no paper with id 'nope'") as unknown:
        collections.dismiss("papers", ["p10", "nope"])
    for error in (member, unknown):
        assert "\n" not in str(error.value)
    assert collections.dismissed("papers") == ["p9"]
    collections.add("papers", ids=["p9"])  # added after all: a member, no longer dismissed
    assert collections.dismissed("papers") == []
    backup = collections.backup()
    collections.dismiss("papers", "p10")
    assert collections.backup()["collections"][0]["dismissed"][0]["paper_id"] == "p10"
    assert backup["collections"][0]["dismissed"] == []


def test_a_file_of_the_previous_schema_upgrades_in_place_and_keeps_its_collections(index_copy, tmp_path):
    """tests/files/collections-v2.sqlite was written by schema 2 (before dismissals): 'reading list'
    (p1, p2, p3) and 'feed' (p5), tied here to this test's index."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(FILES / "collections-v2.sqlite", home / "collections.sqlite")
    identity = (index_copy / "IDENTITY").read_text().strip()
    with sqlite3.connect(home / "collections.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2 < SCHEMA_VERSION
        db.execute("UPDATE collections SET index_key = ?", (identity,))
        db.execute("UPDATE indexes SET identity = ?, path = ?", (identity, str(index_copy.resolve())))
        before = db.execute("SELECT collection_id, key, paper_id, added FROM members ORDER BY key").fetchall()
    collections = CollectionsGroup(PaperIndex.load(index_copy))
    assert collections.names() == ["feed", "reading list"]
    assert collections.dismissed("reading list") == []
    collections.dismiss("reading list", "p7")
    with sqlite3.connect(home / "collections.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT collection_id, key, paper_id, added FROM members ORDER BY key").fetchall() == before
    assert "p7" not in ids(collections.recommend("reading list", k=10))


def test_the_command_line_dismisses_lists_and_brings_back(index_copy, tmp_path):
    home = tmp_path / "home"
    CollectionsGroup(PaperIndex.load(index_copy)).create("reading list", ids=["p1", "p2"])
    first = json.loads(paperscope("recommend", "reading list", "-k", "3", "--json", "--index", index_copy,
                                  home=home).stdout)[0]["id"]  # fmt: skip
    dismissed = paperscope("collection", "dismiss", "reading list", first, "p30", "--index", index_copy, home=home)
    assert dismissed.returncode == 0 and "dismissed 2 papers from the recommendations of 'reading list'" in (
        dismissed.stderr
    ), dismissed.stderr
    recommended = json.loads(paperscope("recommend", "reading list", "-k", "3", "--json", "--index", index_copy,
                                        home=home).stdout)  # fmt: skip
    assert first not in [row["id"] for row in recommended]
    shown = paperscope("collection", "show", "reading list", "--index", index_copy, home=home)
    assert "dismissed from its recommendations (2):" in shown.stdout and f"  {first}" in shown.stdout
    as_json = json.loads(paperscope("collection", "show", "reading list", "--json", "--index", index_copy,
                                    home=home).stdout)  # fmt: skip
    assert as_json["dismissed"] == [first, "p30"]
    member = paperscope("collection", "dismiss", "reading list", "p1", "--index", index_copy, home=home)
    assert member.returncode == 2 and len(member.stderr.strip().splitlines()) == 1 and "is a member" in member.stderr
    back = paperscope("collection", "undismiss", "reading list", first, "p30", "--index", index_copy, home=home)
    assert back.returncode == 0 and "brought back 2 of 2" in back.stderr, back.stderr
    assert "dismissed" not in paperscope("collection", "show", "reading list", "--index", index_copy, home=home).stdout


def test_the_service_dismisses_and_brings_back_with_the_usual_errors(index_copy, tmp_path):
    CollectionsGroup(PaperIndex.load(index_copy)).create("a/b", ids=["p1", "p2"])  # a slash in the name
    with paperscope_server("serve", index_copy, ("--workers", "1")) as (url, _):
        status, found, _ = call(url, "POST", "/recommend", {"collection": "a/b", "k": 3})
        first = found[0]["id"]
        assert status == 200 and len(found) == 3
        status, shown, _ = call(url, "PUT", f"/collections/a/b/dismissed/{first}")
        assert status == 200 and shown["dismissed"] == [first] and shown["name"] == "a/b", shown
        status, found, _ = call(url, "POST", "/recommend", {"collection": "a/b", "k": 3})
        assert status == 200 and first not in [row["id"] for row in found]
        status, error, _ = call(url, "PUT", "/collections/a/b/dismissed/p1")
        assert status == 409 and error["status"] == 409 and "is a member of 'a/b'" in error["error"], error
        status, error, _ = call(url, "PUT", "/collections/a/b/dismissed/nope")
        assert status == 404 and "no paper with id 'nope'" in error["error"], error
        status, error, _ = call(url, "PUT", "/collections/nothing/dismissed/p3")
        assert status == 404 and "no collection named 'nothing'" in error["error"], error
        status, error, _ = call(url, "GET", f"/collections/a/b/dismissed/{first}")
        assert status == 405, (status, error)
        status, shown, _ = call(url, "DELETE", f"/collections/a/b/dismissed/{first}")
        assert status == 200 and shown["dismissed"] == [] and shown["undismissed"] == 1, shown
        status, shown, _ = call(url, "GET", "/collections/a/b")
        assert status == 200 and shown["members"] == 2
