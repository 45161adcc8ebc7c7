"""``paperscope fetch openreview VENUE``: openreview-py against a local OpenReview API v2 that answers
as the real one does, with its faults (tests/support/openreview_service.py)."""

from __future__ import annotations

import json

import pytest

from paperscope import sources
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources import openreview
from tests.conftest import paperscope
from tests.support.corpora import read_corpus
from tests.support.held_fetch import kill_at
from tests.support.openreview_service import DAY_MS, PUBLISHED_MS, VENUE, WITHDRAWN, OpenReviewService, note

ACCEPTED = [note(number) for number in range(1, 9)]


def fetch(service, out, *more, env=None):
    """``paperscope fetch openreview VENUE`` against ``service`` into ``out``."""
    arguments = ["fetch", "openreview", VENUE, "--base-url", service.url, "-o", out, "--delay", "0.1", *more]
    return paperscope(*arguments, env=env)


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_note_becomes_a_papers_line_with_every_field():
    record = openreview.to_record(note(2), "https://mirror.example.org")
    assert record["id"] == "note0002X" and record["title"].startswith("Paper 2: ")
    assert record["authors"] == ["Author 2 One", "Author 2 Two"] and record["keywords"] == ["keyword a", "keyword 2"]
    assert (record["venue"], record["tier"], record["decision"]) == ("NeurIPS 2025 oral", "oral", "Accept (oral)")
    assert record["primary_area"] == "Generative models" == record["categories"][0]
    assert record["tldr"] == "The gist of paper 2." and record["number"] == 2
    assert record["pdf_url"] == "https://mirror.example.org/pdf/" + "2".zfill(40) + ".pdf"
    assert record["url"] == record["forum_url"] == "https://mirror.example.org/forum?id=note0002X"
    assert (record["published"], record["updated"], record["year"]) == ("2025-09-19", "2025-09-19", 2025)
    assert (record["source"], record["status"]) == ("openreview", "active")
    assert all(value not in (None, "", []) for value in record.values())
    assert openreview.to_record(note(2), openreview.site_for(openreview.API))["url"].startswith(openreview.SITE)


def test_the_decision_reply_wins_and_a_withdrawn_note_says_so():
    decided = note(4) | {
        "details": {
            "directReplies": [
                {"invitations": [f"{VENUE}/Submission4/-/Official_Review"], "content": {"rating": {"value": 8}}},
                {"invitations": [f"{VENUE}/Submission4/-/Decision"], "content": {"decision": {"value": "Accept"}}},
            ]
        }
    }
    assert openreview.to_record(decided)["decision"] == "Accept"
    withdrawn = openreview.to_record(note(5, WITHDRAWN))
    assert (withdrawn["status"], withdrawn["decision"]) == ("withdrawn", "Withdrawn")
    assert withdrawn["pdf_url"].startswith("https://openreview.net/pdf/")


@pytest.mark.parametrize(
    ("venue", "venueid", "tier", "decision"),
    [("ICML 2025 spotlightposter", VENUE, "spotlight", "Accept (spotlight)"),  # as ICML writes them
     ("ICML 2023 OralPoster", VENUE, "oral", "Accept (oral)"), ("ICML 2026 regular", VENUE, None, "Accept"),
     ("Submitted to ICLR 2025", f"{VENUE}/Submission", None, None),
     ("ICLR 2025 Conference Desk Rejected Submission", f"{VENUE}/Desk_Rejected_Submission", None, "Desk rejected"),
     ("ICLR 2025 Conference Rejected Submission", f"{VENUE}/Rejected_Submission", None, "Reject")],
)  # fmt: skip
def test_the_venue_and_its_venueid_give_the_tier_and_decision(venue, venueid, tier, decision):
    shown = note(3, venueid)
    shown["content"]["venue"] = {"value": venue}
    record = openreview.to_record(shown)
    assert (record.get("tier"), record.get("decision"), record["status"]) == (tier, decision, "active")


@pytest.mark.parametrize("venue", ["NeurIPS 2025", " NeurIPS.cc/2025/Conference"])
def test_a_venue_that_is_not_an_id_is_refused_before_any_request(tmp_path, venue):
    done = paperscope(
        "fetch", "openreview", venue, "-o", tmp_path / "out.jsonl", "--base-url", "http://127.0.0.1:9", here=True
    )
    assert done.returncode == 2 and done.stderr.startswith("paperscope: error: ") and "venue id" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow
def test_a_venue_is_fetched_whole_through_its_faults(httpserver, tmp_path):
    """Three pages and an empty one, a 503 with Retry-After: 1 first, a page cut short, a note repeated
    across pages: each accepted paper once, every column the readers map, the state complete."""
    service = OpenReviewService(httpserver, {VENUE: ACCEPTED})
    out = tmp_path / "neurips.jsonl"
    secret = {"OPENREVIEW_USERNAME": "someone@example.org", "OPENREVIEW_PASSWORD": "secret"}
    done = fetch(service, out, "--contact", "me@example.org", env=secret)
    assert done.returncode == 0, done.stderr
    papers = lines(out)
    assert [paper["id"] for paper in papers] == [item["id"] for item in ACCEPTED]
    assert {paper["tier"] for paper in papers} == {"poster", "spotlight", "oral"}
    assert all(paper["pdf_url"].startswith(service.url + "/pdf/") for paper in papers)  # the mirror's host
    asked = [request.args for request in service.requests]
    assert service.times[1] - service.times[0] >= 1.0  # the 503's Retry-After: 1 waited
    assert asked[0]["count"] == "true" and [args.get("after") for args in asked[2:]] == [
        "note0003X", "note0003X", "note0005X", "note0007X", "note0008X"
    ]  # fmt: skip
    assert all(args["sort"] == "id" and args["content.venueid"] == VENUE for args in asked)
    (agent,) = {request.headers["User-Agent"] for request in service.requests}  # one, on every request
    assert agent.startswith("paperscope/") and agent.endswith("(mailto:me@example.org)")
    assert not any(request.path == "/login" for request, _ in httpserver.log)  # no login, whatever the env says
    state = sources.read_state(out)
    assert state is not None and state.complete and (state.records, state.total) == (8, 8)
    assert state.watermark == openreview.epoch_time(PUBLISHED_MS)
    frame, _ = read_corpus([out])
    assert len(frame) == 8 and {"year", "authors", "venue", "url", "categories"} <= set(frame.columns)
    assert frame["url"].str.startswith(service.url + "/forum?id=").all() and (frame["year"] == 2025).all()


@pytest.mark.slow
def test_a_venue_without_papers_says_so(httpserver, tmp_path):
    done = fetch(OpenReviewService(httpserver, {}, faults=False), tmp_path / "none.jsonl")
    assert done.returncode == 0 and f"openreview: no papers under {VENUE}: is that the venue id" in done.stderr
    assert (tmp_path / "none.jsonl").read_text() == ""


@pytest.mark.slow
def test_a_killed_fetch_goes_on_from_the_last_page_it_kept(httpserver, tmp_path):
    service = OpenReviewService(httpserver, {VENUE: ACCEPTED}, faults=False)
    out = tmp_path / "neurips.jsonl"
    kill_at(service, ["fetch", "openreview", VENUE, "--base-url", service.url, "-o", str(out), "--delay", "0.1"],
            lambda request: request.args.get("after") == "note0006X")  # fmt: skip
    state = sources.read_state(out)
    assert state is not None and not state.complete and state.pages == 2
    assert [paper["id"] for paper in lines(out)] == ["note0001X", "note0002X", "note0003X", "note0004X",
                                                     "note0005X", "note0006X"]  # fmt: skip
    service.requests.clear()
    done = fetch(service, out)
    assert done.returncode == 0, done.stderr
    assert service.requests[0].args["after"] == "note0006X"  # went on; the first pages not asked again
    assert [paper["id"] for paper in lines(out)] == [item["id"] for item in ACCEPTED]
    asked = len(service.requests)
    again = fetch(service, out)
    assert again.returncode == 0 and len(service.requests) == asked  # complete: nothing asked, nothing added
    assert len(lines(out)) == 8


@pytest.mark.slow
def test_an_update_keeps_what_changed_and_marks_the_withdrawn(httpserver, tmp_path):
    """What F3's update asks: the venue again, only the notes changed after the watermark, then the
    venue's withdrawn submissions changed after it, as status "withdrawn"."""
    changed = [note(number, modified=3 if number in (2, 5) else 0) for number in range(1, 9)]
    withdrawn = [note(20, WITHDRAWN, modified=10), note(21, WITHDRAWN, modified=-30)]
    service = OpenReviewService(httpserver, {VENUE: changed, WITHDRAWN: withdrawn}, faults=False)
    query = sources.since(
        SourceQuery("openreview", (("venue", VENUE),), service.url), openreview.epoch_time(PUBLISHED_MS)
    )
    report = sources.fetch(query, tmp_path / "new.jsonl", FetchOptions(delay=0.1))
    papers = lines(tmp_path / "new.jsonl")
    assert [(paper["id"], paper["status"]) for paper in papers] == [
        ("note0002X", "active"), ("note0005X", "active"), ("note0020X", "withdrawn")
    ]  # fmt: skip
    assert report.complete and report.withdrawn == 1
    assert report.watermark == openreview.epoch_time(PUBLISHED_MS + 10 * DAY_MS)
    assert {request.args["content.venueid"] for request in service.requests} == {VENUE, WITHDRAWN}


@pytest.mark.network
def test_the_real_openreview_lists_neurips_2025(tmp_path):
    out = tmp_path / "neurips.jsonl"
    query = SourceQuery("openreview", (("venue", VENUE),))
    seen = []

    def stop_after_the_first_page(progress):
        seen.append(progress)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sources.fetch(query, out, FetchOptions(contact="paperscope-tests@example.org"), stop_after_the_first_page)
    papers = lines(out)
    assert len(papers) == 1000 and seen[0].total and seen[0].total > 4000
    assert all(paper["abstract"] and paper["venue"].startswith("NeurIPS 2025") for paper in papers)
    assert {paper["tier"] for paper in papers} <= {"poster", "spotlight", "oral"}
