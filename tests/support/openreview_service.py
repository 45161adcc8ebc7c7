"""A local OpenReview API v2 (``GET /notes``) on pytest-httpserver, answering as the real one does
(docs.openreview.net/reference/api-v2: notes with every content field as ``{"value": …}``, dates in
epoch milliseconds, ``count`` when asked for), with the faults a fetch must survive: a 503 with
``Retry-After: 1`` first, a page cut short once, each page after the first starting again with the
last note of the page before (a record repeated across pages), and pages smaller than asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from werkzeug import Request, Response

from tests.support.corpora import sample_abstracts
from tests.support.recorded import RecordedService

VENUE = "NeurIPS.cc/2025/Conference"
WITHDRAWN = VENUE + "/Withdrawn_Submission"
DAY_MS = 86_400_000
PUBLISHED_MS = 1_758_240_000_000  # 2025-09-19, when NeurIPS 2025's decisions were made public
TIERS = ("poster", "spotlight", "oral")
AREAS = ("Deep learning", "Reinforcement learning", "Generative models", "Optimization")


def note(number: int, venueid: str = VENUE, modified: int = 0) -> dict:
    """A submission note as the API gives it; ``modified``: days after publication of its last change."""
    abstract = sample_abstracts()[number % 38]
    venue = f"NeurIPS 2025 {TIERS[number % 3]}" if venueid == VENUE else "NeurIPS 2025 Conference Withdrawn Submission"
    note_id = f"note{number:04d}X"
    content = {
        "title": f"Paper {number}: {' '.join(abstract.split()[:6])}",
        "authors": [f"Author {number} One", f"Author {number} Two"],
        "authorids": [f"~Author_{number}_One1", f"~Author_{number}_Two1"],
        "keywords": ["keyword a", f"keyword {number}"],
        "TLDR": f"The gist of paper {number}.",
        "abstract": abstract,
        "primary_area": AREAS[number % 4],
        "venue": venue,
        "venueid": venueid,
        "pdf": f"/pdf/{number:040d}.pdf",
        "paperhash": f"one|paper_{number}",
    }
    return {
        "id": note_id,
        "forum": note_id,
        "number": number,
        "invitations": [f"{VENUE}/-/Submission", f"{VENUE}/-/Post_Submission"],
        "domain": VENUE,
        "cdate": PUBLISHED_MS - 120 * DAY_MS,
        "odate": PUBLISHED_MS,
        "pdate": PUBLISHED_MS,
        "mdate": PUBLISHED_MS + modified * DAY_MS,
        "tcdate": PUBLISHED_MS - 120 * DAY_MS,
        "tmdate": PUBLISHED_MS + modified * DAY_MS,
        "content": {key: {"value": value} for key, value in content.items()},
    }


@dataclass
class OpenReviewService(RecordedService):
    """``/notes`` of a venue on ``server``: ``notes`` by venue id, served in id order, ``page_size`` a
    page at most. ``faults``: the 503 first, the cut page and the repeated note. ``requests``: each
    request, in order, for a test to look at."""

    notes: dict[str, list[dict]]
    page_size: int = 3
    faults: bool = True
    _cut: bool = False

    def __post_init__(self):
        self.server.expect_request("/notes", method="GET").respond_with_handler(self.answer)

    def answer(self, request: Request) -> Response:
        """One request's answer, as the API (and its faults) give it."""
        self.record(request)
        if self.faults and len(self.requests) == 1:
            return Response('{"name": "Error", "message": "busy"}', 503, {"Retry-After": "1"}, "application/json")
        notes = sorted(self.notes.get(request.args.get("content.venueid", ""), []), key=lambda note: note["id"])
        after = request.args.get("after")
        if after:  # with faults the page starts with the last note already sent: a note repeated across pages
            notes = [note for note in notes if note["id"] > after or (self.faults and note["id"] == after)]
        limit = min(int(request.args.get("limit", 1000)), self.page_size)
        body: dict = {"notes": notes[:limit]}
        if request.args.get("count") == "true":
            body["count"] = len(self.notes.get(request.args.get("content.venueid", ""), []))
        text = json.dumps(body)
        if self.faults and after and not self._cut:
            self._cut = True
            text = text[: len(text) // 2]  # a page cut mid-note, its length as sent: only the JSON shows it
        return Response(text, 200, content_type="application/json")
