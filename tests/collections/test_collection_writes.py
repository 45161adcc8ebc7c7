"""Collections that move with their index and writes that never lose members: tied to the index's
identity, upgraded in place from the first release's file, backed up and restored, replaced and
removed over HTTP in one transaction, and left whole by a process killed in the middle."""

from __future__ import annotations

import http.client
import json
import shutil
import sqlite3
import subprocess
import urllib.parse
from pathlib import Path

import pytest

from paperscope import PaperIndex
from paperscope.index.collections.database import SCHEMA_VERSION
from paperscope.index.collections_group import CollectionsGroup
from tests.conftest import FILES, SUPPORT, paperscope
from tests.support.servers import paperscope_server

pytestmark = pytest.mark.slow  # copies of the library corpus's index, real processes
KILL = SUPPORT / "kill_in_transaction.py"


def call(url: str, method: str, path: str, body=None) -> tuple[int, dict | list | None, dict]:
    """One request: status, JSON answer (None when the server died), headers."""
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=60)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    try:
        connection.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read()), {k.lower(): v for k, v in answer.getheaders()}
    except (ConnectionError, http.client.RemoteDisconnected):
        return 0, None, {}
    finally:
        connection.close()


@pytest.fixture
def index_copy(library_corpus, tmp_path, monkeypatch) -> Path:
    """A copy of the library corpus's index, and a data folder of this test's own."""
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "first" / "index"
    shutil.copytree(library_corpus / "index", folder)
    return folder


def member_keys(folder: Path, name: str) -> list[str]:
    return sorted(CollectionsGroup(PaperIndex.load(folder)).members(name)["key"])


def test_a_moved_index_keeps_its_collections_and_a_copy_says_it_shares_them(index_copy, tmp_path, caplog):
    CollectionsGroup(PaperIndex.load(index_copy)).create("mine", ids=["p1", "p2"])
    moved = tmp_path / "elsewhere" / "renamed"
    moved.parent.mkdir()
    index_copy.rename(moved)
    listed = paperscope("collection", "list", "--index", moved, home=tmp_path / "home")
    assert listed.stdout.startswith("mine  (2 members") and "moved from" in listed.stderr
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    copied = paperscope("collection", "list", "--index", copy, home=tmp_path / "home")
    assert copied.stdout.startswith("mine  (2 members")
    assert f"{copy} is a copy of the index at {moved}: the two share their collections" in copied.stderr
    CollectionsGroup(PaperIndex.load(copy)).add("mine", ids=["p3"])  # shared: one set of collections
    assert member_keys(moved, "mine") == ["p1", "p2", "p3"]


def test_a_file_of_the_first_release_upgrades_in_place_with_nothing_lost(index_copy, tmp_path):
    """tests/files/collections-first-release.sqlite was written by the release before identities
    (ff7c3d5): 'reading list' (p1, p2 and zotero.bib: 2 matched, 2 outside with vectors), 'empty',
    'feed' (p5), tied to its index's path; here that path is this test's index of an earlier
    release (no IDENTITY file)."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(FILES / "collections-first-release.sqlite", home / "collections.sqlite")
    (index_copy / "IDENTITY").unlink()
    with sqlite3.connect(home / "collections.sqlite") as db:
        before = db.execute("SELECT key, matched_by, title, vector FROM members ORDER BY key").fetchall()
        db.execute("UPDATE collections SET index_key = ?", (str(index_copy.resolve()),))
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    collections = CollectionsGroup(PaperIndex.load(index_copy))
    assert collections.names() == ["empty", "feed", "reading list"]
    assert (index_copy / "IDENTITY").read_text().strip() == collections.index_key  # written now
    with sqlite3.connect(home / "collections.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        after = db.execute("SELECT key, matched_by, title, vector FROM members ORDER BY key").fetchall()
        assert {row[0] for row in db.execute("SELECT index_key FROM collections")} == {collections.index_key}
    assert after == before  # every member, its fields and its vector, as they were
    assert collections.show("reading list")["matched_by"] == {"id": 2, "doi": 1, "arxiv": 1, "title": 0, "outside": 2}
    assert len(collections.recommend("reading list", k=5).to_pandas()) == 5
    moved = tmp_path / "moved"
    index_copy.rename(moved)  # upgraded: tied to the identity now, not the path
    assert CollectionsGroup(PaperIndex.load(moved)).names() == ["empty", "feed", "reading list"]


def test_every_collection_is_backed_up_to_one_file_and_restored_on_another_machine(index_copy, tmp_path):
    home = tmp_path / "home"
    collections = CollectionsGroup(PaperIndex.load(index_copy))
    collections.create("mine", ids=["p1"], files=[FILES / "library_exports" / "zotero.bib"])
    collections.create("other", ids=["p9"])
    collections.watches.add("p3 p4", name="like these", threshold=0.6)
    backup = tmp_path / "backup.json"
    written = paperscope("collection", "backup", "-o", backup, "--index", index_copy, home=home)
    assert written.returncode == 0 and "2 collections written" in written.stderr
    # another machine: a data folder of its own and the same corpus built again (another identity)
    there, rebuilt = tmp_path / "there", tmp_path / "rebuilt"
    shutil.copytree(index_copy, rebuilt)
    (rebuilt / "IDENTITY").write_text("another-machine\n")
    restored = paperscope("collection", "restore", backup, "--into-index", "--index", rebuilt, home=there)
    assert restored.returncode == 0 and "restored 2 collections: mine, other" in restored.stderr, restored.stderr
    assert "restored 1 saved search" in restored.stderr
    watches = json.loads(paperscope("watch", "list", "--json", "--index", rebuilt, home=there).stdout)
    assert [(w["name"], w["kind"], w["query"], w["threshold"]) for w in watches] == [
        ("like these", "ids", "p3 p4", 0.6)
    ]
    shown = json.loads(paperscope("collection", "show", "mine", "--json", "--index", rebuilt, home=there).stdout)
    assert shown["matched_by"] == collections.show("mine")["matched_by"]
    exported = paperscope("collection", "export", "mine", "-o", tmp_path / "mine.bib", "--index", rebuilt, home=there)
    assert exported.returncode == 0 and "@book{knuth_art_1997," in (tmp_path / "mine.bib").read_text()
    again = paperscope("collection", "restore", backup, "--into-index", "--index", rebuilt, home=there)
    assert again.returncode == 2 and "the collection 'mine' exists already here" in again.stderr
    assert (
        json.loads(paperscope("collection", "list", "--json", "--index", rebuilt, home=there).stdout)[0]["members"] == 5
    )


def test_a_backed_up_vector_of_the_wrong_size_is_embedded_again_not_trusted(index_copy, tmp_path):
    collections = CollectionsGroup(PaperIndex.load(index_copy))
    collections.create("mine", files=[FILES / "library_exports" / "zotero.bib"])
    backup = collections.backup()
    outside = [m for m in backup["collections"][0]["members"] if m["vector"]]
    outside[0]["vector"] = outside[0]["vector"][:40]  # cut short (or written by another model's dimension)
    collections.delete("mine")
    assert collections.restore(backup, "backup.json") == ["mine"]
    with sqlite3.connect(tmp_path / "home" / "collections.sqlite") as db:
        assert db.execute("SELECT count(vector) FROM members WHERE paper_id IS NULL").fetchone()[0] == len(outside) - 1
    assert len(collections.recommend("mine", k=3).to_pandas()) == 3  # the dropped one embedded again first
    with sqlite3.connect(tmp_path / "home" / "collections.sqlite") as db:
        assert db.execute("SELECT count(vector) FROM members WHERE paper_id IS NULL").fetchone()[0] == len(outside)


def test_a_put_with_an_unknown_id_changes_nothing_and_outside_members_can_be_passed_back(index_copy, tmp_path):
    library = FILES / "library_exports" / "zotero.bib"
    CollectionsGroup(PaperIndex.load(index_copy)).create("mine", ids=["p1", "p2"], files=[library], embed=False)
    before = member_keys(index_copy, "mine")
    with paperscope_server("serve", index_copy, stderr=subprocess.DEVNULL) as (url, _):
        status, error, _ = call(url, "PUT", "/collections/mine", {"ids": ["p1", "nope"]})
        assert status == 404 and "no paper with id 'nope'" in error["error"]
        assert member_keys(index_copy, "mine") == before  # all or nothing
        outside = [key for key in before if key.startswith("outside:")]
        status, shown, _ = call(url, "PUT", "/collections/mine", {"ids": ["p4", *outside]})
        assert status == 200 and sorted(paper["key"] for paper in shown["papers"]) == sorted(["p4", *outside])
        status, shown, _ = call(url, "DELETE", "/collections/mine/papers?id=" + urllib.parse.quote(outside[0]))
        assert status == 200 and shown["removed"] == 1 and shown["members"] == 2
        status, shown, headers = call(url, "PUT", "/collections/mine", {"ids": []})
        assert status == 200 and shown["papers"] == [] and "has no members" in headers["x-paperscope-note"]
        status, found, headers = call(url, "POST", "/recommend", {"collection": "mine"})
        assert status == 200 and found == [] and "has no members" in headers["x-paperscope-note"]
        assert all(
            paper["year"] is None or isinstance(paper["year"], int)
            for paper in call(url, "PUT", "/collections/mine", {"ids": ["p4"]})[1]["papers"]
        )


@pytest.mark.parametrize(
    "write, pattern, count",
    [
        (("collection", "add", "mine", "p7", "p8", "--from", "zotero.bib", "--defer-embedding"), "INSERT", 1),
        (("collection", "remove", "mine", "p1", "p2"), "DELETE FROM members", 2),
        (("collection", "delete", "mine"), "DELETE FROM collections", 1),
    ],
    ids=["import", "remove", "delete"],
)
def test_a_write_killed_in_the_middle_leaves_the_old_state(index_copy, tmp_path, write, pattern, count):
    CollectionsGroup(PaperIndex.load(index_copy)).create("mine", ids=["p1", "p2", "p3"])
    arguments = [str(FILES / "library_exports" / a) if a.endswith(".bib") else a for a in write]
    killed = paperscope(pattern, count, *arguments, "--index", index_copy, home=tmp_path / "home", launcher=KILL)
    assert killed.returncode == -9 and "paperscope: killed at" in killed.stderr, killed.stderr
    assert member_keys(index_copy, "mine") == ["p1", "p2", "p3"]
    done = paperscope(*arguments, "--index", index_copy, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr


def test_a_put_killed_in_the_middle_leaves_the_old_members(index_copy, tmp_path):
    CollectionsGroup(PaperIndex.load(index_copy)).create("mine", ids=["p1", "p2", "p3"])
    launcher = (str(KILL), "INSERT OR IGNORE INTO members", "1")
    arguments = ("--workers", "1")  # in this process, where the kill is armed
    with paperscope_server("serve", index_copy, arguments, launcher=launcher, stderr=subprocess.PIPE) as (url, process):
        status, _, _ = call(url, "PUT", "/collections/mine", {"ids": ["p4", "p5"]})
        assert status == 0 and process.wait(timeout=30) == -9  # killed before it answered
    assert member_keys(index_copy, "mine") == ["p1", "p2", "p3"]


def test_embedding_outside_entries_shows_progress_and_resumes_after_a_kill_with_what_was_done(index_copy, tmp_path):
    home, library = tmp_path / "home", tmp_path / "big.bib"
    library.write_text("".join(
        f"@article{{e{n}, title = {{Entry {n} on topic {n % 7}}}, abstract = {{A study of item {n} and its kin.}}}}\n"
        for n in range(200)
    ))  # fmt: skip
    killed = paperscope(
        "UPDATE members SET vector",
        129,
        "collection",
        "create",
        "big",
        "--from",
        library,
        "--index",
        index_copy,
        home=home,
        launcher=KILL,
    )  # fmt: skip (the first row of the 3rd batch)
    assert killed.returncode == -9, killed.stderr
    assert "created 'big': 200 entries: 200 new outside the corpus" in killed.stderr
    assert "embedding entries outside the corpus: 128 of 200 (64 %), about" in killed.stderr  # redirected: lines
    with sqlite3.connect(home / "collections.sqlite") as db:
        stored = db.execute("SELECT count(*), count(vector) FROM members").fetchone()
    assert stored == (200, 128)  # every member stored; the two batches embedded before the kill kept
    resumed = paperscope("collection", "embed", "big", "--index", index_copy, home=home)
    assert resumed.returncode == 0 and "embedded 72 entries outside the corpus" in resumed.stderr
    deferred = paperscope("collection", "create", "later", "--from", library, "--defer-embedding", "--index",
                          index_copy, home=home)  # fmt: skip
    assert "200 entries outside the corpus not embedded yet: a recommendation embeds them" in deferred.stderr
    recommended = paperscope("recommend", "later", "-k", "3", "--json", "--index", index_copy, home=home)
    assert len(json.loads(recommended.stdout)) == 3 and "embedding entries outside the corpus" in recommended.stderr
