"""``paperscope update``: an index built from a fetched arXiv category follows it. Fetch → build →
update → digest against the local arXiv (tests/support/arxiv_service.py): day 1 is two pages of
papers, day 2 new papers, a new version of one with a new text, a withdrawn one and a deleted one.
An update killed in its fetch or at its add's commit ends, run again, with exactly the papers of
one never stopped; a second update while one runs stops at once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from paperscope import PaperIndex, sources
from paperscope.index.store import generations
from paperscope.sources import FetchState
from paperscope.sources.state import state_path
from tests.conftest import SUPPORT, copy_index, paperscope
from tests.support.arxiv_service import RESPONSE_DATE, WITHDRAWAL, ArxivService, deleted_record, raw_record
from tests.support.corpora import sample_abstracts
from tests.support.held_fetch import kill_at

pytestmark = pytest.mark.slow  # builds an index and starts a local arXiv

DAY_1 = [[raw_record(n, day=6) for n in range(8)], [raw_record(n, day=7) for n in range(8, 16)]]
NEW_TEXT = (
    "We revise the method: a sparse mixture of tide-gauge experts forecasts coastal flooding from "
    "barometric pressure, and a conformal band bounds each forecast's error."
)


def revised(number: int) -> str:
    """Paper ``number`` in its second version, its abstract rewritten."""
    from xml.sax.saxutils import escape

    return raw_record(number, day=18, versions=2).replace(escape(sample_abstracts()[number]), escape(NEW_TEXT))


DAY_2 = [
    [raw_record(16, day=19), raw_record(17, day=19), revised(3)],
    [raw_record(5, day=19, versions=2, comments=WITHDRAWAL), deleted_record(7, day=20), raw_record(18, day=20)],
]
IDS = [f"2501.{n:05d}" for n in range(19)]
DAY_2_DATE = "2025-01-21T04:05:06Z"  # day 1's answers came at RESPONSE_DATE, the 20th


@pytest.fixture(scope="module")
def day_one(make_httpserver, tmp_path_factory, data_home):
    """An index of day 1's papers, built from ``paperscope fetch arxiv``'s file (the one build here)."""
    folder = tmp_path_factory.mktemp("followed")
    service = ArxivService(make_httpserver, DAY_1)
    fetched = folder / "cs-lg.jsonl"
    arguments = ["fetch", "arxiv", "--category", "cs.LG", "--base-url", service.url + "/oai", "--delay", "0.01"]
    paperscope(*arguments, "-o", fetched, here=True, check=True)
    paperscope("build", fetched, "-o", folder / "index", here=True, check=True)
    make_httpserver.clear()
    return folder / "index"


@pytest.fixture
def day_two(httpserver) -> ArxivService:
    """The local arXiv on day 2: what changed since day 1."""
    return ArxivService(httpserver, DAY_2, response_date=DAY_2_DATE)


def update(folder, service, *more, **options):
    """``paperscope update --index FOLDER`` (the sources' address is the index's own: the local arXiv)."""
    return paperscope("update", "--index", folder, "--delay", "0.01", *more, **options)


def assert_updated(folder) -> None:
    """The index holds exactly day 1's papers and day 2's, paper 3 in its new text, 5 and 7 marked."""
    index = PaperIndex.load(folder)
    papers = index.papers.set_index("id")
    assert sorted(index.ids()) == IDS and len(index) == 19  # no loss, no duplicate
    assert papers.loc["2501.00003", "abstract"] == NEW_TEXT and papers.loc["2501.00003", "version"] == "v2"
    assert index.search("tide-gauge experts forecast coastal flooding", k=1).to_pandas()["id"][0] == "2501.00003"
    statuses = papers["status"].to_dict()
    assert (statuses.pop("2501.00005"), statuses.pop("2501.00007")) == ("withdrawn", "deleted")
    assert set(statuses.values()) == {"active"}
    (origin,) = index.manifest.origins
    assert origin.watermark == DAY_2_DATE and origin.query.get("category") == "cs.LG"  # with the papers
    assert not any((folder / "updates").iterdir())  # the fetched files removed once added
    generations.verify(folder)


def test_an_update_adds_the_new_papers_replaces_a_new_version_marks_the_withdrawn_and_digests(
    day_one, day_two, tmp_path
):
    folder = copy_index(day_one, tmp_path / "index")
    info = paperscope("info", "--index", folder, here=True, check=True).stdout
    assert "follows  arxiv category=cs.LG, up to 2025-01-20" in info
    ids = ["2501.00001", "2501.00002", "2501.00004"]
    paperscope("collection", "create", "reading", *ids, "--index", folder, here=True, check=True)
    done = update(folder, day_two, here=True, check=True)
    first, *digest = done.stdout.splitlines()
    marked = "2 withdrawn, deleted or retracted"
    assert first.startswith(f"{folder}: 3 new, 1 new versions, {marked} from arxiv category=cs.LG ")
    assert " since 2025-01-20, in " in first and done.stderr == ""  # no terminal: no progress (a cron mail)
    requested = [request.args for request in day_two.requests]
    assert requested[0]["from"] == "2025-01-19" and "until" not in requested[0]  # a day's overlap, no end
    assert_updated(folder)
    assert "## reading" in digest
    recommended = [line for line in digest if line.startswith(("1. ", "2. ", "3. "))]
    assert recommended and all(f"2501.000{n}" in " ".join(recommended) for n in (16, 17, 18))  # what arrived
    assert "2501.00003" not in " ".join(digest)  # a new version is not a new paper
    found = paperscope("similar", "2501.00004", "-k", "18", "--index", folder, here=True, check=True).stdout
    assert "2501.00005      [withdrawn] Paper 5: " in found and "2501.00007      [deleted] Paper 7: " in found
    versioned = paperscope("similar", "2501.00004v2", "-k", "18", "--index", folder, here=True, check=True)
    assert versioned.stdout == found  # an id as arxiv.org shows it, with its version: the paper of the id
    again = update(folder, day_two, "--quiet", here=True, check=True)  # the same day again: nothing new
    assert again.stdout.startswith(f"{folder}: 0 new, 0 new versions, 0 withdrawn, deleted or retracted")
    assert " since 2025-01-21, in " in again.stdout and day_two.requests[-1].args["from"] == "2025-01-20"
    assert len(PaperIndex.load(folder)) == 19
    day_two.faults.add("empty")  # a day with nothing new: noRecordsMatch, an empty fetch
    quiet = update(folder, day_two, "--quiet", here=True, check=True)
    assert quiet.stdout.startswith(f"{folder}: 0 new, 0 new versions, 0 withdrawn, deleted or retracted")
    after = PaperIndex.load(folder)
    assert sorted(after.ids()) == IDS and after.manifest.origins[0].watermark >= DAY_2_DATE  # never back
    generations.verify(folder)
    # killed after its add was made current, before its file was removed: the file is not added again
    stale = folder / "updates" / "0-arxiv.jsonl"
    stale.write_text(json.dumps({"id": "2501.00099", "title": "Stale", "abstract": NEW_TEXT + " Again."}) + "\n")
    query = sources.since(after.manifest.origins[0].query, RESPONSE_DATE)  # the first update's
    state = FetchState(query, committed_bytes=stale.stat().st_size, pages=1, records=1, complete=True)
    state_path(stale).write_text(json.dumps(state.to_json()))
    update(folder, day_two, "--quiet", here=True, check=True)
    assert sorted(PaperIndex.load(folder).ids()) == IDS and not stale.exists()


def test_an_update_killed_in_its_fetch_or_at_its_commit_ends_as_one_never_stopped(day_one, day_two, tmp_path):
    folder = copy_index(day_one, tmp_path / "fetch-killed")
    said = []

    def second_update() -> None:  # while the first holds the lock
        said.append(update(folder, day_two, here=True))

    arguments = ["update", "--index", str(folder), "--delay", "0.01"]
    kill_at(
        day_two, arguments, lambda request: request.args.get("resumptionToken") == "page-1", meanwhile=second_update
    )
    (busy,) = said
    assert (busy.returncode, busy.stdout, busy.stderr) == (
        1,
        "",
        f"paperscope: another update of {folder} is running\n",
    )
    assert len(PaperIndex.load(folder)) == 16  # nothing added yet
    kept = (folder / "updates" / "0-arxiv.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in kept] == ["2501.00016", "2501.00017", "2501.00003"]  # page 1
    quiet = update(folder, day_two, "--quiet", here=True, check=True)
    assert len(quiet.stdout.splitlines()) == 1 and quiet.stdout.startswith(f"{folder}: 3 new, 1 new versions")
    assert day_two.requests[-1].args.get("resumptionToken") == "page-1"  # went on from the page it kept
    assert_updated(folder)

    folder = copy_index(day_one, tmp_path / "commit-killed")
    command = [sys.executable, str(SUPPORT / "halt_build.py"), "commit", *arguments[:2], str(folder), "--delay", "0.01"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:  # until the add's new generation is on disk, not yet current
        if line.strip() == "paperscope: halted at commit":
            break
    else:
        pytest.fail("the update never reached the commit")
    process.kill()
    process.wait()
    assert len(PaperIndex.load(folder)) == 16 and PaperIndex.load(folder).manifest.origins[0].watermark == RESPONSE_DATE
    update(folder, day_two, "--quiet", here=True, check=True)
    assert_updated(folder)


def test_an_index_built_from_plain_files_says_how_to_make_one_that_follows(sample_index_dir):
    done = paperscope("update", "--index", sample_index_dir, here=True)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "follows no source" in done.stderr and "paperscope fetch arxiv --category" in done.stderr
    assert f"-o {sample_index_dir}" not in done.stderr  # never a build over the index the user has
