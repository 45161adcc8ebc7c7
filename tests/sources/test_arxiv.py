"""``paperscope fetch arxiv``: oaipmh-scythe (OAI-PMH, by category) and the arxiv client (the search API,
by query or ids) against a local arXiv that answers as the real one does, with its faults
(tests/support/arxiv_service.py)."""

from __future__ import annotations

import json

import pytest

from paperscope import sources
from paperscope.errors import UserError
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources import arxiv_api, arxiv_oai
from paperscope.sources.state import state_path
from tests.conftest import paperscope
from tests.support.arxiv_service import (
    RESPONSE_DATE,
    WITHDRAWAL,
    ArxivService,
    atom_entry,
    deleted_record,
    oai_page,
    raw_record,
)
from tests.support.corpora import read_corpus
from tests.support.held_fetch import kill_at

# Three pages: paper 3 again at the top of the second (a record repeated across pages), paper 4 in its
# second version, paper 5 withdrawn in its second, paper 6 deleted.
PAGES = [
    [raw_record(1), raw_record(2), raw_record(3)],
    [
        raw_record(3),
        raw_record(4, versions=2),
        raw_record(5, day=8, versions=2, comments=WITHDRAWAL),
        deleted_record(6),
    ],
    [raw_record(7, day=10), raw_record(8, day=10)],
]
IDS = [f"2501.{number:05d}" for number in range(1, 9)]


def fetch(service, out, *more, here=False):
    """``paperscope fetch arxiv --category cs.LG`` from ``service`` into ``out``."""
    arguments = ["fetch", "arxiv", "--category", "cs.LG", "--since", "2025-01-01", "--base-url", service.url + "/oai"]
    return paperscope(*arguments, "-o", out, "--delay", "0.01", *more, here=here)


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def record_of(xml: str) -> dict:
    """The line of one ``<record>``, read from a page holding it (its namespace)."""
    from lxml import etree

    (element,) = etree.fromstring(oai_page([xml], "").encode()).iter(f"{arxiv_oai.OAI}record")
    return arxiv_oai.to_record(element)


def test_an_arxivraw_record_becomes_a_papers_line_with_every_field():
    record = record_of(raw_record(4, versions=2))
    assert record["id"] == "2501.00004" and record["title"].startswith("Paper 4: ")
    assert "\n" not in record["title"] and record["title"].endswith("on two lines")
    assert record["authors"] == ["Ada Author", "Bo Builder", "Cy Coder"]  # affiliations dropped
    assert record["abstract"] == record["abstract"].strip() and len(record["abstract"]) > 200
    assert (record["version"], [v["version"] for v in record["versions"]]) == ("v2", ["v1", "v2"])
    assert record["versions"][0]["created"] == "Mon, 06 Jan 2025 10:45:05 GMT"  # as the Kaggle snapshot has it
    assert (record["published"], record["updated"], record["year"]) == ("2025-01-06", "2025-01-07", 2025)
    assert (record["categories"], record["primary_category"]) == (["cs.LG", "stat.ML"], "cs.LG")
    assert record["url"] == "https://arxiv.org/abs/2501.00004" and record["pdf_url"].endswith("/2501.00004v2")
    assert (record["doi"], record["journal_ref"], record["venue"]) == ("10.0000/paper.4", "NeurIPS 2025", "arXiv")
    assert (record["source"], record["status"]) == ("arxiv", "active")
    assert all(value not in (None, "", []) for value in record.values())
    assert record_of(raw_record(5, comments=WITHDRAWAL))["status"] == "withdrawn"
    assert record["versions"][1] == {"version": "v2", "created": "Tue, 07 Jan 2025 10:45:05 GMT", "size": "201kb",
                                      "source_type": "D"}  # fmt: skip


def test_a_withdrawal_is_the_last_versions_source_type_not_a_word_in_the_comments():
    """As arXiv's OAI server writes them (arXiv/oaipmh: a withdrawn version's source type is "I")."""
    citing = "12 pages; supersedes arXiv:2510.26642, which has been withdrawn"
    assert record_of(raw_record(7, versions=2, comments=citing))["status"] == "active"
    record = record_of(raw_record(8, versions=2, comments=WITHDRAWAL))
    assert (record["status"], record["versions"][-1]["source_type"], record["version"]) == ("withdrawn", "I", "v2")
    untyped = raw_record(9, comments="Paper withdrawn by the authors: the main lemma is false")
    untyped = untyped.replace("<source_type>D</source_type>", "")  # no source type: the comments tell
    assert record_of(untyped)["status"] == "withdrawn"
    for said, status in [("The authors have withdrawn this paper due to an error", "withdrawn"),
                         ("withdrawn", "withdrawn"), ("15 pages. This submission has been withdrawn", "withdrawn"),
                         (citing, "active"), ("Withdrawal of the ansatz in Sec. 3; 9 pages", "active")]:  # fmt: skip
        assert arxiv_oai.paper("2501.00001", "v1", None, None, comments=said)["status"] == status, said


def test_an_arxivraw_records_other_fields_become_columns_and_a_suffix_stays_with_its_name():
    extra = ("<report-no>ANL-HEP-PR-07-12</report-no><msc-class>14J32</msc-class><acm-class>I.2.7</acm-class>"
             "<proxy>ccsd hal-00012345</proxy>")  # fmt: skip
    xml = raw_record(4, extra=extra).replace("<doi>10.0000/paper.4</doi>", "<doi>10.1103/A.1 10.1103/A.2</doi>")
    xml = xml.replace("Ada Author (MIT), Bo Builder and", "Ada Author (MIT), J. Smith, Jr. (CMU), Bo Builder and")
    record = record_of(xml)
    assert (record["report_no"], record["msc_class"], record["acm_class"]) == ("ANL-HEP-PR-07-12", "14J32", "I.2.7")
    assert (record["doi"], record["dois"]) == ("10.1103/A.1", ["10.1103/A.1", "10.1103/A.2"])
    assert record["authors"] == ["Ada Author", "J. Smith, Jr.", "Bo Builder", "Cy Coder"]
    texed = "C. Bal\\'azs, {\\\"O}zg{\\\"u}r Ak, \\c{C}a\\u{g}lar G, Ji\\v{r}\\'{\\i} N, S{\\o}ren K and \\L{}ukasz W"
    assert arxiv_oai.author_names(texed) == ["C. Balázs", "Özgür Ak", "Çağlar G", "Jiří N", "Søren K", "Łukasz W"]
    assert record_of(deleted_record(6)) == {"id": "2501.00006", "status": "deleted", "source": "arxiv",
                                            "updated": "2025-01-07"}  # fmt: skip


def test_an_api_entry_becomes_the_same_line():
    import arxiv
    from arxiv import _feed

    (result,) = _feed.parse(atom_entry(4, version=2).join(['<feed xmlns="http://www.w3.org/2005/Atom" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom">', "</feed>"]).encode()).results  # fmt: skip
    assert isinstance(result, arxiv.Result)
    record = arxiv_api.to_record(result)
    by_oai = record_of(raw_record(4, versions=2))
    shared = {"id", "version", "published", "updated", "year", "url", "pdf_url", "doi", "categories", "abstract"}
    assert {key: record[key] for key in shared} == {key: by_oai[key] for key in shared}
    assert record["authors"] == ["Ada Author", "Bo Builder"] and record["primary_category"] == "cs.LG"


@pytest.mark.parametrize(
    ("category", "oai_set"),
    [("cs.LG", "cs:cs:LG"), ("cs", "cs:cs"), ("math.AG", "math:math:AG"), ("hep-th", "physics:hep-th"),
     ("astro-ph.GA", "physics:astro-ph:GA"), ("cond-mat.stat-mech", "physics:cond-mat:stat-mech")],
)  # fmt: skip
def test_a_category_asks_its_set(category, oai_set):
    assert arxiv_oai.oai_set(category) == oai_set


@pytest.mark.parametrize("category", ["cs.", "CS.LG", "bogus.LG", "cs.LG stat.ML", "cs:cs:LG", ""])
def test_a_category_arxiv_has_not_is_refused(category):
    with pytest.raises(UserError, match="--category"):
        arxiv_oai.oai_set(category)


def test_since_asks_from_the_day_before_the_watermark():
    query = SourceQuery("arxiv", (("category", "cs.LG"), ("since", "2025-01-01"), ("until", "2025-01-31")))
    assert sources.since(query, RESPONSE_DATE).filters == (("category", "cs.LG"), ("since", "2025-01-19"))


@pytest.mark.slow
def test_a_category_is_fetched_whole_through_its_faults(httpserver, tmp_path):
    """Three pages joined in order, a 503 with Retry-After: 1 first, the second page cut short once,
    paper 3 on two pages kept once, a new version, a withdrawn and a deleted paper."""
    service = ArxivService(httpserver, PAGES, faults={"busy", "cut"})
    out = tmp_path / "cs-lg.jsonl"
    done = fetch(service, out, "--contact", "me@example.org")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote 8 papers (1 withdrawn, 1 deleted) to {out} in ")
    papers = lines(out)
    assert [paper["id"] for paper in papers] == IDS
    by_id = {paper["id"]: paper for paper in papers}
    assert by_id["2501.00004"]["version"] == "v2" and len(by_id["2501.00004"]["versions"]) == 2
    assert by_id["2501.00005"]["status"] == "withdrawn" and by_id["2501.00006"]["status"] == "deleted"
    assert service.times[1] - service.times[0] >= 1.0  # the 503's Retry-After: 1 waited
    tokens = [request.args.get("resumptionToken") for request in service.requests]
    assert tokens == [None, None, "page-1", "page-1", "page-2"]  # the 503 and the cut page asked again
    first = service.requests[0].args
    assert (first["verb"], first["metadataPrefix"], first["set"], first["from"]) == (
        "ListRecords", "arXivRaw", "cs:cs:LG", "2025-01-01"
    )  # fmt: skip
    (agent,) = {request.headers["User-Agent"] for request in service.requests}
    assert agent.startswith("paperscope/") and agent.endswith("(mailto:me@example.org)")
    state = sources.read_state(out)
    assert state is not None and state.complete and (state.pages, state.records) == (3, 8)
    assert state.watermark == RESPONSE_DATE and state.committed_bytes == out.stat().st_size
    frame, report = read_corpus([out])  # the file builds as it is: the deleted line has no text to embed
    assert set(frame["id"]) == set(IDS) - {"2501.00006"} and (frame["year"] == 2025).all()
    deleted_line = IDS.index("2501.00006") + 1
    assert report.lines() == [f"1 record skipped: {out.name}:{deleted_line}: deleted, no abstract"]  # not "empty"
    again = fetch(service, out)
    assert again.returncode == 0 and "is complete" in again.stdout and len(service.requests) == 5


@pytest.mark.slow
def test_old_style_pages_give_a_total_and_an_expired_token_starts_again_from_the_last_day(httpserver, tmp_path):
    service = ArxivService(httpserver, PAGES, old_style=True, faults={"expired"})
    seen: list[sources.FetchProgress] = []
    query = SourceQuery("arxiv", (("category", "cs.LG"),), service.url + "/oai")
    report = sources.fetch(query, tmp_path / "out.jsonl", FetchOptions(delay=0), seen.append)
    assert [(step.pages, step.records, step.total) for step in seen] == [(1, 3, 9), (2, 6, 9), (3, 6, 9), (4, 8, 9)]
    assert "about" in seen[0].line() and seen[0].line().startswith("arxiv: page 1, 3 records, ")
    assert service.requests[2].args["resumptionToken"] == "page-2"  # refused: expired
    expired = service.requests[3].args  # ListRecords again from the last day reached, the repeats kept once
    assert (expired.get("from"), expired.get("set")) == ("2025-01-09", "cs:cs:LG")
    assert [paper["id"] for paper in lines(tmp_path / "out.jsonl")] == IDS and report.records == 8


@pytest.mark.slow
def test_tokens_refused_again_and_again_end_in_one_line_not_a_loop(httpserver, tmp_path):
    service = ArxivService(httpserver, PAGES, faults={"dead"})
    done = fetch(service, tmp_path / "out.jsonl", here=True)
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(
        "paperscope: arxiv: the OAI-PMH service refused its own token: "
    )
    froms = [request.args.get("from") for request in service.requests]
    assert froms == ["2025-01-01", None, "2025-01-06", None]  # once again from the last day reached, then stop
    assert [paper["id"] for paper in lines(tmp_path / "out.jsonl")] == IDS[:3]  # what was fetched is kept


@pytest.mark.slow
def test_no_records_match_is_an_empty_file(httpserver, tmp_path):
    service = ArxivService(httpserver, PAGES, faults={"empty"})
    out = tmp_path / "none.jsonl"
    done = fetch(service, out, here=True)
    assert done.returncode == 0 and done.stdout.startswith("wrote 0 papers to "), done.stderr
    assert out.read_bytes() == b"" and sources.read_state(out).complete


@pytest.mark.slow
def test_a_killed_fetch_goes_on_from_the_last_page_it_kept(httpserver, tmp_path):
    """Killed while it waits for page 3: the same command asks page 3 and nothing before; the file
    is the one an uninterrupted fetch writes."""
    service = ArxivService(httpserver, PAGES)
    whole, out = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    assert fetch(service, whole).returncode == 0
    arguments = ["fetch", "arxiv", "--category", "cs.LG", "--since", "2025-01-01", "--base-url",
                 service.url + "/oai", "-o", str(out), "--delay", "0.01"]  # fmt: skip
    kill_at(service, arguments, lambda request: request.args.get("resumptionToken") == "page-2")
    state = sources.read_state(out)
    assert state is not None and not state.complete and state.pages == 2 and state.cursor["token"] == "page-2"
    service.requests.clear()
    done = fetch(service, out)
    assert done.returncode == 0, done.stderr
    assert [request.args.get("resumptionToken") for request in service.requests] == ["page-2"]
    assert out.read_bytes() == whole.read_bytes()


@pytest.mark.slow
def test_another_query_into_a_fetched_file_is_refused(httpserver, tmp_path):
    service = ArxivService(httpserver, PAGES)
    out = tmp_path / "cs-lg.jsonl"
    assert fetch(service, out, here=True).returncode == 0
    asked, before = len(service.requests), out.read_bytes()
    done = paperscope("fetch", "arxiv", "--category", "cs.AI", "-o", out, "--base-url", service.url, here=True)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "holds a fetch of arxiv category=cs.LG since=2025-01-01" in done.stderr and "--restart" in done.stderr
    assert len(service.requests) == asked and out.read_bytes() == before
    done = fetch(service, out, "--restart", here=True)  # begun again: the same papers, once
    assert done.returncode == 0 and out.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--category", "bogus.LG"], "--category"),
        (["--category", "cs.LG", "--since", "2025-02-01", "--until", "2025-01-31"], "--since"),
        (["--category", "cs.LG", "--since", "2025-02-30"], "--since"),
        (["--ids", "2501.00001,not-an-id"], "--ids"),
        (["--category", "cs.LG", "--base-url", "localhost/oai"], "--base-url"),
        (["--category", "cs.LG", "--delay", "-1"], "--delay"),
    ],
)
def test_a_wrong_option_is_one_line_before_any_request(httpserver, tmp_path, options, named):
    service = ArxivService(httpserver, PAGES)
    argv = ["fetch", "arxiv", "--base-url", service.url, "-o", tmp_path / "out.jsonl", *options]
    done = paperscope(*argv, here=True)
    lines_ = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines_) == 1 and lines_[0].startswith("paperscope: error: ")
    assert named in lines_[0] and not done.stdout
    assert service.requests == [] and not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow
def test_a_search_by_the_api_pages_by_offset_and_goes_on(httpserver, tmp_path):
    """The arxiv client, its session replaced: pages of 2 by offset, the 503's Retry-After honoured
    (the client alone would not), our user agent (the client hard-codes its own), --ids too."""
    entries = {f"2501.{n:05d}": atom_entry(n, version=2 if n == 2 else 1) for n in range(1, 6)}
    entries["2501.00005"] = atom_entry(5, comment=WITHDRAWAL)
    service = ArxivService(httpserver, entries=entries, api_page=2, faults={"busy"})
    out = tmp_path / "search.jsonl"
    argv = ["fetch", "arxiv", "--query", "cat:cs.LG AND ti:graph", "--base-url", service.url, "-o", out]
    done = paperscope(*argv, "--delay", "0.01", "--contact", "me@example.org")
    assert done.returncode == 0 and done.stdout.startswith("wrote 5 papers (1 withdrawn) to "), done.stderr
    assert [paper["id"] for paper in lines(out)] == list(entries)
    assert lines(out)[1]["version"] == "v2" and service.times[1] - service.times[0] >= 1.0
    asked = [request.args for request in service.requests]
    assert [args["start"] for args in asked] == ["0", "0", "2", "4"]
    assert asked[0]["search_query"] == "cat:cs.LG AND ti:graph" and asked[0]["sortBy"] == "submittedDate"
    assert {request.headers["User-Agent"] for request in service.requests} == {
        f"{service.requests[0].headers['User-Agent'].split(' ')[0]} (mailto:me@example.org)"
    }
    assert service.requests[0].headers["User-Agent"].startswith("paperscope/")
    state = json.loads(state_path(out).read_text())
    assert state["cursor"] == {"offset": 5} and state["total"] == 5 and state["watermark"] == "2025-01-07"
    by_ids = tmp_path / "ids.jsonl"
    done = paperscope("fetch", "arxiv", "--ids", "2501.00003,2501.00001", "--base-url", service.url, "-o", by_ids,
                      "--delay", "0.01", here=True)  # fmt: skip
    assert done.returncode == 0 and [paper["id"] for paper in lines(by_ids)] == ["2501.00003", "2501.00001"]
    assert service.requests[-1].args["id_list"] == "2501.00003,2501.00001"


@pytest.mark.slow
def test_an_empty_page_before_the_total_is_asked_again_and_never_ends_the_fetch(httpserver, tmp_path):
    entries = {f"2501.{n:05d}": atom_entry(n) for n in range(1, 6)}
    service = ArxivService(httpserver, entries=entries, api_page=2, faults={"hole"})
    out = tmp_path / "search.jsonl"
    argv = ["fetch", "arxiv", "--query", "cat:cs.LG", "--base-url", service.url, "-o", out, "--delay", "0.01"]
    done = paperscope(*argv, here=True)
    assert done.returncode == 0 and [paper["id"] for paper in lines(out)] == list(entries), done.stderr
    assert [request.args["start"] for request in service.requests] == ["0", "2", "2", "4"]  # the hole asked again
    service.faults.add("holes")  # the same page empty every time: stopped, not taken for the end
    held = tmp_path / "held.jsonl"
    stopped = paperscope(*argv[:-4], "-o", held, "--delay", "0.01", here=True)
    assert stopped.returncode == 1 and stopped.stderr.strip().splitlines()[-1] == (
        "paperscope: arxiv: an empty page at 2 of 5 results, 3 times; the same command goes on from there later"
    )
    state = sources.read_state(held)
    assert state is not None and not state.complete and state.cursor == {"offset": 2}
    service.faults.discard("holes")
    resumed = paperscope(*argv[:-4], "-o", held, "--delay", "0.01", here=True)
    assert resumed.returncode == 0 and [paper["id"] for paper in lines(held)] == list(entries), resumed.stderr


@pytest.mark.network
def test_a_day_of_arxiv_and_five_papers_by_the_api(tmp_path):
    """The real services: a day of cs.LG by OAI-PMH, five papers by the API (PAPERSCOPE_NETWORK_TESTS=1)."""
    out = tmp_path / "day.jsonl"
    done = paperscope("fetch", "arxiv", "--category", "cs.LG", "--since", "2025-01-06", "--until", "2025-01-06",
                      "-o", out)  # fmt: skip
    assert done.returncode == 0, done.stderr
    papers = [paper for paper in lines(out) if paper["status"] != "deleted"]
    assert len(papers) > 50 and all("cs.LG" in paper["categories"] and paper["abstract"] for paper in papers)
    assert all(paper["versions"] and paper["published"] <= paper["updated"] for paper in papers)
    ids = tmp_path / "ids.jsonl"
    wanted = ["1706.03762", "1810.04805", "2005.14165", "1512.03385", "1406.2661"]
    done = paperscope("fetch", "arxiv", "--ids", ",".join(wanted), "-o", ids)
    assert done.returncode == 0, done.stderr
    assert sorted(paper["id"] for paper in lines(ids)) == sorted(wanted)
    assert next(p for p in lines(ids) if p["id"] == "1706.03762")["title"] == "Attention Is All You Need"
