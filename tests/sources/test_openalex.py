"""``paperscope fetch openalex --filter …``: plain requests against a local OpenAlex API that answers
as the real one does, with its faults (tests/support/openalex_service.py); and one build of what
both JSON sources fetched, to show the readers take every column."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from paperscope import PaperIndex, sources
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources import openalex
from tests.conftest import paperscope
from tests.support.corpora import read_corpus, sample_abstracts
from tests.support.held_fetch import kill_at
from tests.support.openalex_service import OpenAlexService, work, works
from tests.support.openreview_service import VENUE, WITHDRAWN, OpenReviewService, note

FILTER = "primary_location.source.id:S4306420609,publication_year:2025"
WITH_ABSTRACT = [item["id"].rsplit("/", 1)[1] for item in works() if item["abstract_inverted_index"]]


def fetch(service, out, *more, env=None):
    """``paperscope fetch openalex --filter FILTER`` against ``service`` into ``out``."""
    arguments = ["fetch", "openalex", "--filter", FILTER, "--base-url", service.url, "-o", out, "--delay", "0.1"]
    return paperscope(*arguments, *more, env=env)


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_work_becomes_a_papers_line_its_abstract_rebuilt():
    assert openalex.abstract_text({"the": [0, 3], "cat": [1], "saw": [2], "dog": [4]}) == "the cat saw the dog"
    record = openalex.to_record(work(2, arxiv=True))
    assert record["id"] == "W4400000002" and record["abstract"] == " ".join(sample_abstracts()[2].split())
    assert (record["doi"], record["arxiv_id"]) == ("10.48550/arxiv.2509.00002", "2509.00002")
    assert record["venue"] == "Neural Information Processing Systems"
    assert record["authors"] == ["Writer 2 A", "Writer 2 B"]
    assert (record["published"], record["updated"], record["year"]) == ("2025-03-15", "2025-11-03", 2025)
    assert record["categories"] == ["Artificial Intelligence"] and record["topics"] == ["Topic 2"]
    assert (record["source"], record["status"], record["type"]) == ("openalex", "active", "article")
    assert openalex.to_record(work(5, retracted=True))["status"] == "retracted"
    assert openalex.to_record(work(3, abstract=False)) is None
    older = work(7) | {
        "doi": None,
        "primary_location": {
            "landing_page_url": "http://arxiv.org/abs/1706.03762v5",
            "pdf_url": "http://arxiv.org/pdf/1706.03762",
            "source": None,
        },
    }
    assert openalex.to_record(older)["arxiv_id"] == "1706.03762"  # an older arXiv work: no DOI, its page
    assert "arxiv_id" not in openalex.to_record(work(7))


def test_since_adds_the_watermarks_day_to_the_users_filter():
    query = SourceQuery("openalex", (("filter", FILTER + ",from_updated_date:2025-01-01"),))
    later = sources.since(query, "2025-11-09T04:05:06.789012")
    assert later.get("filter") == FILTER + ",from_updated_date:2025-11-09"


@pytest.mark.parametrize("given", [["--filter", "publication_year"], ["--filter", ":2025"], []])
def test_a_filter_that_is_not_key_value_is_refused_before_any_request(tmp_path, given):
    done = paperscope(
        "fetch", "openalex", *given, "-o", tmp_path / "out.jsonl", "--base-url", "http://127.0.0.1:9", here=True
    )
    assert done.returncode == 2 and done.stderr.startswith("paperscope: error: ") and "filter" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow
def test_works_are_fetched_whole_through_the_faults(httpserver, tmp_path):
    """Four pages by cursor, a 429 with Retry-After: 1 first, a page cut short, a work repeated
    across pages, one without an abstract (skipped, said), one retracted."""
    service = OpenAlexService(httpserver, works())
    out = tmp_path / "works.jsonl"
    done = fetch(service, out, "--contact", "me@example.org", env={"OPENALEX_API_KEY": "k3y"})
    assert done.returncode == 0, done.stderr
    papers = lines(out)
    assert [paper["id"] for paper in papers] == WITH_ABSTRACT
    assert "1 works without an abstract skipped" in done.stderr
    assert [paper["id"] for paper in papers if paper["status"] == "retracted"] == ["W4400000005"]
    asked = [request.args for request in service.requests]
    assert service.times[1] - service.times[0] >= 1.0  # the 429's Retry-After: 1 waited
    assert [args["cursor"] for args in asked] == ["*", "*", "page-3", "page-3", "page-5", "page-7"]
    assert all(args["filter"] == FILTER and args["per_page"] == "100" for args in asked)
    assert all(args["api_key"] == "k3y" and args["mailto"] == "me@example.org" for args in asked)
    state = sources.read_state(out)
    assert state is not None and state.complete and state.total == 8 and state.records == 7
    assert state.watermark == max(item["updated_date"] for item in works())
    frame, _ = read_corpus([out])
    assert len(frame) == 7 and frame["url"].str.startswith("https://example.org/paper/").all()


@pytest.mark.slow
def test_spent_credits_stop_the_fetch_at_once_its_state_kept(httpserver, tmp_path):
    service = OpenAlexService(httpserver, works(), faults=False, credits_gone=True)
    out = tmp_path / "works.jsonl"
    done = fetch(service, out)
    why = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert why.startswith("paperscope: openalex: the day's credits are spent") and "00:00 UTC, in 60 min" in why
    assert len(service.requests) == 2  # not tried again
    state = sources.read_state(out)
    assert state is not None and not state.complete and state.cursor["next_cursor"] == "page-3"
    assert [paper["id"] for paper in lines(out)] == WITH_ABSTRACT[:2]  # the first page's, work 3 without abstract


@pytest.mark.slow
def test_an_update_without_a_paid_plan_asks_for_the_works_published_since(httpserver, tmp_path, caplog):
    service = OpenAlexService(httpserver, works(12), faults=False, plan_gated=True)
    later = sources.since(SourceQuery("openalex", (("filter", FILTER),), service.url), "2025-06-01T00:00:00")
    out = tmp_path / "new.jsonl"
    with caplog.at_level(logging.WARNING, "paperscope.sources"):
        sources.fetch(later, out, FetchOptions(delay=0))
    asked = [request.args["filter"] for request in service.requests]
    assert asked[0] == f"{FILTER},from_updated_date:2025-06-01"  # refused at once: not retried as a rate limit
    assert set(asked[1:]) == {f"{FILTER},from_publication_date:2025-06-01"}
    published = sorted(w["id"].rsplit("/", 1)[1] for w in works(12) if w["publication_date"] >= "2025-06-01")
    assert sorted(paper["id"] for paper in lines(out)) == published and sources.read_state(out).complete
    (said,) = [record.getMessage() for record in caplog.records if "paid plan" in record.getMessage()]
    assert "Plan upgrade required" in said and "works published since" in said
    given = paperscope("fetch", "openalex", "--filter", f"{FILTER},from_updated_date:2025-06-01", "--base-url",
                       service.url, "-o", tmp_path / "given.jsonl", "--delay", "0.01", here=True)  # fmt: skip
    assert given.returncode == 0 and len(lines(tmp_path / "given.jsonl")) == len(published)
    assert given.stderr.count("needs a paid plan") == 1  # the user's own from_updated_date: the same, said once


def test_a_filter_openalex_refuses_is_the_users_mistake_in_one_line(httpserver, tmp_path):
    message = "Unknown filter field: author_name. Did you mean: authorships.author.id?"
    httpserver.expect_request("/works").respond_with_json({"error": "Invalid filter", "message": message}, 400)
    base = httpserver.url_for("").rstrip("/")
    done = paperscope("fetch", "openalex", "--filter", "author_name:x", "--base-url", base, "-o", tmp_path / "w.jsonl")
    assert done.returncode == 2 and done.stderr == f"paperscope: error: openalex: the filter was refused: {message}\n"


@pytest.mark.slow
def test_a_killed_fetch_goes_on_from_the_cursor_it_kept(httpserver, tmp_path):
    service = OpenAlexService(httpserver, works(), faults=False)
    out = tmp_path / "works.jsonl"
    arguments = ["fetch", "openalex", "--filter", FILTER, "--base-url", service.url, "-o", str(out), "--delay", "0.1"]
    kill_at(service, arguments, lambda request: request.args.get("cursor") == "page-6")
    state = sources.read_state(out)
    assert state is not None and not state.complete and state.pages == 2 and state.cursor["next_cursor"] == "page-6"
    service.requests.clear()
    done = fetch(service, out)
    assert done.returncode == 0, done.stderr
    assert [request.args["cursor"] for request in service.requests] == ["page-6"]
    assert [paper["id"] for paper in lines(out)] == WITH_ABSTRACT
    assert "1 works without an abstract skipped" in done.stderr  # counted before the kill, kept in the state


@pytest.mark.slow
def test_both_sources_files_build_one_index_with_their_columns(httpserver, tmp_path):
    """One build (builds are slow) of an OpenReview and an OpenAlex fetch: every paper in, with the
    columns the readers map (venue, year, authors, url, categories)."""
    openreview_file, openalex_file = tmp_path / "neurips.jsonl", tmp_path / "works.jsonl"
    reviews = OpenReviewService(httpserver, {VENUE: [note(number) for number in range(40, 52)]}, faults=False)
    options = FetchOptions(delay=0)
    sources.fetch(SourceQuery("openreview", (("venue", VENUE),), reviews.url), openreview_file, options)
    alex = OpenAlexService(httpserver, [work(number) for number in range(60, 72)], faults=False)
    sources.fetch(SourceQuery("openalex", (("filter", FILTER),), alex.url), openalex_file, options)
    folder = tmp_path / "index"
    paperscope("build", openreview_file, openalex_file, "-o", folder, check=True)
    papers = PaperIndex.load(folder).papers
    fetched = [f"note{number:04d}X" for number in range(40, 52)] + [f"W{4_400_000_000 + n}" for n in range(60, 72)]
    assert sorted(papers["id"]) == sorted(fetched)
    assert papers["venue"].str.startswith(("NeurIPS 2025", "Neural Information Processing Systems")).all()
    assert (papers["year"] == 2025).all() and papers["authors"].str.len().gt(0).all()
    assert papers["categories"].str.len().gt(0).all()
    assert papers["url"].str.startswith(("http://localhost", "https://example.org/paper/")).all()
    _both_sources_update(folder, reviews, alex)


def _both_sources_update(folder, reviews: OpenReviewService, alex: OpenAlexService) -> None:
    """The index built from both files follows both: an update adds each source's new papers, marks
    a note moved to the venue's withdrawn submissions and a work retracted since, and its digest
    lists a saved search's new match."""
    reviews.notes[VENUE] = [note(n) for n in range(40, 52) if n != 45] + [note(52, modified=9), note(53, modified=9)]
    reviews.notes[WITHDRAWN] = [note(45, venueid=WITHDRAWN, modified=9)]
    retracted = {**work(60, retracted=True), "updated_date": "2025-11-30T00:00:00"}
    alex.works = [retracted, *(work(n) for n in range(61, 74))]
    watched = " ".join(sample_abstracts()[52 % 38].split()[:40])  # note 52's own words
    paperscope("watch", "add", watched, "--name", "watched", "--index", folder, here=True, check=True)
    done = paperscope("update", "--index", folder, "--delay", "0.01", here=True, check=True)
    first, *digest = done.stdout.splitlines()
    assert first.startswith(f"{folder}: 4 new, 0 new versions, 2 withdrawn, deleted or retracted from ")
    index = PaperIndex.load(folder)
    statuses = index.papers.set_index("id")["status"]
    assert {"note0052X", "note0053X", "W4400000072", "W4400000073"} <= set(statuses.index) and len(index) == 28
    assert (statuses["note0045X"], statuses["W4400000060"]) == ("withdrawn", "retracted")
    assert (statuses.drop(["note0045X", "W4400000060"]) == "active").all()
    assert {origin.query.source for origin in index.manifest.origins} == {"openreview", "openalex"}
    alex_asked = [request.args["filter"] for request in alex.requests if request.path == "/works"][-1]
    assert alex_asked.endswith(",from_updated_date:2025-11-16")  # from the newest change the build's fetch saw
    watch = digest[digest.index("## Saved search: watched") :]
    assert "note0052X" in "\n".join(watch)


@pytest.mark.network
def test_the_real_openalex_answers_a_filter(tmp_path):
    out = tmp_path / "works.jsonl"
    query = SourceQuery("openalex", (("filter", "primary_location.source.id:S4306420609,publication_year:2024"),))

    def stop_after_the_first_page(progress):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sources.fetch(query, out, FetchOptions(contact="paperscope-tests@example.org"), stop_after_the_first_page)
    papers = lines(out)
    assert 50 <= len(papers) <= 100 and all(paper["abstract"] and paper["year"] == 2024 for paper in papers)


@pytest.mark.network
def test_the_real_openalex_takes_the_updates_filter(tmp_path):
    """from_updated_date was a paid filter once: an update needs the API to take it with a free key."""
    query = SourceQuery("openalex", (("filter", "primary_location.source.id:S4306420609"),))
    later = sources.since(query, (dt.date.today() - dt.timedelta(days=7)).isoformat())

    def stop_after_the_first_page(progress):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sources.fetch(later, tmp_path / "new.jsonl", FetchOptions(contact="paperscope-tests@example.org"),
                      stop_after_the_first_page)  # fmt: skip
    assert all(paper["updated"] >= later.get("filter").rsplit(":", 1)[1] for paper in lines(tmp_path / "new.jsonl"))
