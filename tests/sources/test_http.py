"""The polite session every source fetches through (sources/http.py): its interval, Retry-After in
either form and capped, and a service down after every retry (exit 1, the state kept)."""

from __future__ import annotations

import email.utils
import logging
from datetime import UTC, datetime, timedelta

import pytest
import requests

from paperscope import sources
from paperscope.errors import ServiceFailed
from paperscope.settings import FetchOptions
from paperscope.sources.http import MAX_RETRY_AFTER, PoliteSession, retry_after
from tests.conftest import paperscope
from tests.support.arxiv_service import ArxivService, raw_record


class Clock:
    """Time that passes only when the session sleeps: what it waits, without waiting."""

    def __init__(self):
        self.now, self.slept = 1000.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def answer(headers: dict[str, str], status: int = 503) -> requests.Response:
    response = requests.Response()
    response.status_code, response.headers = status, requests.structures.CaseInsensitiveDict(headers)
    return response


def test_retry_after_is_seconds_or_an_http_date():
    now = datetime(2026, 12, 5, 3, 0, tzinfo=UTC)
    later = email.utils.format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert retry_after(answer({"Retry-After": "7"})) == 7.0
    assert retry_after(answer({"Retry-After": later}), now=lambda: now) == 90.0
    assert retry_after(answer({"Retry-After": "soon"})) is None and retry_after(answer({})) is None


@pytest.mark.slow
def test_requests_keep_the_interval_and_a_long_retry_after_is_capped_and_said(httpserver, caplog):
    httpserver.expect_ordered_request("/a").respond_with_data("ok")
    httpserver.expect_ordered_request("/b").respond_with_data("busy", status=429, headers={"Retry-After": "86400"})
    httpserver.expect_ordered_request("/b").respond_with_data("ok")
    clock = Clock()
    session = PoliteSession("arxiv", FetchOptions(), clock=clock, sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, "paperscope"):
        assert session.get(httpserver.url_for("/a")).text == "ok"
        assert session.get(httpserver.url_for("/b")).text == "ok"
    assert clock.slept == [3.0, MAX_RETRY_AFTER]  # arXiv's 3 s between requests; a day's Retry-After capped
    assert "arxiv: HTTP 429, Retry-After 86400; waiting 10 min before try 2 of 6" in caplog.messages


@pytest.mark.slow
def test_a_service_down_after_every_retry_is_one_line_exit_1_and_the_fetch_goes_on_later(httpserver, tmp_path):
    pages = [[raw_record(1)], [raw_record(2)]]
    service = ArxivService(httpserver, pages)
    down = True

    def hold(request):
        if down and request.args.get("resumptionToken") == "page-1":
            raise ConnectionError("down")  # the handler fails: the connection is dropped unanswered

    service.before = hold
    out = tmp_path / "out.jsonl"
    argv = ["fetch", "arxiv", "--category", "cs.LG", "--base-url", service.url + "/oai", "-o", out, "--delay", "0.01"]
    done = paperscope(*argv, here=True)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == (
        "paperscope: arxiv: no answer (ConnectionError) after 6 tries; the same command goes on later"
    )
    assert sources.read_state(out).pages == 1 and [r.args.get("resumptionToken") for r in service.requests] == [
        None, *["page-1"] * 6
    ]  # fmt: skip
    down = False
    assert paperscope(*argv, here=True).returncode == 0 and sources.read_state(out).complete
    with pytest.raises(ServiceFailed, match=r"^openalex: no answer"):
        PoliteSession("openalex", FetchOptions(delay=0, retries=1)).get("http://127.0.0.1:9/")


def test_a_service_that_says_nothing_of_when_is_asked_again_later_each_time(httpserver):
    """A 503 without Retry-After, a dropped answer: the interval doubled at each try (3, 6, 12 s for
    arXiv), not a retry every 3 s hammering a service that is down."""
    for _ in range(3):
        httpserver.expect_ordered_request("/down").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/down").respond_with_data("ok")
    clock = Clock()
    session = PoliteSession("arxiv", FetchOptions(), clock=clock, sleep=clock.sleep)
    assert session.get(httpserver.url_for("/down")).text == "ok"
    assert clock.slept == [3.0, 6.0, 12.0]
