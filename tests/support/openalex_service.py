"""A local OpenAlex API (``GET /works``) on pytest-httpserver, answering as the real one does
(developers.openalex.org: ``meta`` with ``count`` and ``next_cursor``, ``results`` of works whose
abstract is an ``abstract_inverted_index``, ``next_cursor: null`` at the end), with the faults a
fetch must survive: a 429 with ``Retry-After: 1`` first, a page cut short once, a work repeated
across pages, a work without an abstract, a retracted one; or, with ``credits_gone``, the 429 of a
key whose day of credits is spent (from the second page on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from werkzeug import Request, Response

from tests.support.corpora import sample_abstracts
from tests.support.recorded import RecordedService

SOURCE = {"id": "https://openalex.org/S4306420609", "display_name": "Neural Information Processing Systems"}


def inverted(text: str) -> dict[str, list[int]]:
    """``text`` as OpenAlex keeps an abstract: each word with the positions it stands at."""
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def work(number: int, abstract: bool = True, retracted: bool = False, arxiv: bool = False) -> dict:
    """A work as the API gives it; ``arxiv``: its DOI is arXiv's (10.48550)."""
    text = sample_abstracts()[number % 38]
    doi = f"https://doi.org/10.48550/arxiv.2509.{number:05d}" if arxiv else f"https://doi.org/10.5555/paper.{number}"
    subfield = {"id": "https://openalex.org/subfields/1702", "display_name": "Artificial Intelligence"}
    topic = {"id": f"https://openalex.org/T1{number % 4:04d}", "display_name": f"Topic {number % 4}", "score": 0.9}
    return {
        "id": f"https://openalex.org/W{4_400_000_000 + number}",
        "doi": doi,
        "title": f"Work {number}: {' '.join(text.split()[:6])}",
        "display_name": f"Work {number}: {' '.join(text.split()[:6])}",
        "publication_year": 2025,
        "publication_date": f"2025-{1 + number % 12:02d}-15",
        "created_date": "2025-10-01",
        "updated_date": f"2025-11-{1 + number % 28:02d}T04:05:06.789012",
        "type": "article",
        "language": "en",
        "ids": {"openalex": f"https://openalex.org/W{4_400_000_000 + number}", "doi": doi},
        "primary_location": {
            "source": SOURCE,
            "landing_page_url": f"https://example.org/paper/{number}",
            "pdf_url": f"https://example.org/paper/{number}.pdf",
            "version": "publishedVersion",
        },
        "best_oa_location": None,
        "authorships": [
            {"author": {"id": f"https://openalex.org/A{number}1", "display_name": f"Writer {number} A"}},
            {"author": {"id": f"https://openalex.org/A{number}2", "display_name": f"Writer {number} B"}},
        ],
        "primary_topic": {**topic, "subfield": subfield},
        "topics": [{**topic, "subfield": subfield}],
        "keywords": [{"id": "https://openalex.org/keywords/learning", "display_name": "Learning", "score": 0.5}],
        "cited_by_count": number * 3,
        "is_retracted": retracted,
        "abstract_inverted_index": inverted(text) if abstract else None,
    }


def works(count: int = 8) -> list[dict]:
    """``count`` works: the third without an abstract, the fifth retracted, the second's DOI arXiv's."""
    return [work(n, abstract=n != 3, retracted=n == 5, arxiv=n == 2) for n in range(1, count + 1)]


@dataclass
class OpenAlexService(RecordedService):
    """``/works`` on ``server``: ``works`` served ``page_size`` a page by cursor. ``faults``: the 429
    first, the cut page and the repeated work; ``credits_gone``: every page after the first is the
    429 of spent credits; ``plan_gated``: ``from_updated_date`` refused with the 429 a key without a
    paid plan gets. ``requests``: each request, in order, for a test to look at."""

    works: list[dict]
    page_size: int = 3
    faults: bool = True
    credits_gone: bool = False
    plan_gated: bool = False
    _cut: bool = False

    def __post_init__(self):
        self.server.expect_request("/works", method="GET").respond_with_handler(self.answer)

    def chosen(self, filters: str) -> list[dict]:
        """The works a filter keeps: this service reads ``from_updated_date:DAY`` (works changed on or
        after it, as an update asks) and ``from_publication_date:DAY``, and takes every other filter
        as matching every work."""
        kept = self.works
        for key, field in (("from_updated_date:", "updated_date"), ("from_publication_date:", "publication_date")):
            for day in [part.removeprefix(key) for part in filters.split(",") if part.startswith(key)]:
                kept = [work for work in kept if work[field][:10] >= day]
        return kept

    def answer(self, request: Request) -> Response:
        """One request's answer, as the API (and its faults) give it."""
        self.record(request)
        if self.faults and len(self.requests) == 1:
            return Response('{"error": "Too many requests"}', 429, {"Retry-After": "1"}, "application/json")
        if self.plan_gated and "from_updated_date:" in request.args.get("filter", ""):
            return Response('{"error": "Plan upgrade required"}', 429, content_type="application/json")
        cursor = request.args.get("cursor", "*")
        start = 0 if cursor == "*" else int(cursor.removeprefix("page-"))
        if self.credits_gone and start:
            headers = {"X-RateLimit-Remaining-USD": "0", "X-RateLimit-Reset": "3600"}
            body = '{"error": "Rate limit exceeded", "message": "Daily budget of $1 exceeded. Resets at midnight UTC."}'
            return Response(body, 429, headers, "application/json")
        if self.faults and start:
            start -= 1  # the page starts again with the last work of the page before: a repeated work
        chosen = self.chosen(request.args.get("filter", ""))
        results = chosen[start : start + self.page_size]
        end = start + self.page_size
        following = f"page-{end}" if end < len(chosen) else None
        meta = {"count": len(chosen), "db_response_time_ms": 12, "page": None, "per_page": 100}
        text = json.dumps({"meta": {**meta, "next_cursor": following}, "results": results, "group_by": []})
        if self.faults and start and not self._cut:
            self._cut = True
            text = text[: len(text) // 2]  # a page cut mid-work, its length as sent: only the JSON shows it
        return Response(text, 200, content_type="application/json")
