"""A venue's papers from OpenReview (API v2) through openreview-py: ``paperscope fetch openreview VENUE``.

The venue's accepted papers are the notes whose ``content.venueid`` is the venue id (e.g.
"NeurIPS.cc/2025/Conference"); they are listed by id (``sort=id``, ``after=`` the last id kept), a
thousand a page, so that the last id committed with each page is where a killed fetch goes on.
An update (:func:`since`) lists the venue again (a few requests) and keeps the notes changed after
the watermark (``tmdate``), then lists ``VENUE/Withdrawn_Submission`` the same way and writes those
as status "withdrawn": a paper withdrawn after it was accepted moves there.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from paperscope.errors import ServiceFailed, UserError, shown
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources.http import PoliteSession, whole_json
from paperscope.sources.state import FetchWriter

logger = logging.getLogger(__name__)

API = "https://api2.openreview.net"
SITE = "https://openreview.net"
PAGE_SIZE = 1000  # the most the API gives at once
WITHDRAWN = "/Withdrawn_Submission"
# What a submission's venueid says past the venue's own id (accepted papers have the venue's id itself)
DECISIONS = {WITHDRAWN: "Withdrawn", "/Desk_Rejected_Submission": "Desk rejected", "/Rejected_Submission": "Reject",
             "/Submission": None}  # fmt: skip
# The tiers content.venue's last word begins with at the venues that rank ("ICML 2025 spotlightposter": spotlight)
TIERS = ("oral", "spotlight", "poster")


def site_for(base_url: str | None) -> str:
    """The site the papers' pages and PDFs are on: openreview.net (for its own API too), or a mirror's
    own host."""
    parts = urlsplit(base_url or SITE)
    if parts.hostname == "openreview.net" or (parts.hostname or "").endswith(".openreview.net"):
        return SITE
    return f"{parts.scheme}://{parts.netloc}"


def epoch_date(ms) -> str | None:
    """An OpenReview date (epoch milliseconds) as YYYY-MM-DD (UTC); None for none."""
    if not isinstance(ms, int | float):
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date().isoformat()


def epoch_time(ms: int) -> str:
    """An OpenReview date (epoch milliseconds) as an ISO time to the millisecond, UTC (a watermark)."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _decision(note: Mapping) -> str | None:
    """The Decision reply's decision, when the note came with its replies (``details=directReplies``)."""
    for reply in (note.get("details") or {}).get("directReplies") or []:
        if any(str(name).endswith("/-/Decision") for name in reply.get("invitations") or []):
            value = (reply.get("content") or {}).get("decision")
            return value.get("value") if isinstance(value, Mapping) else value
    return None


def _decided(venueid: str, tier: str | None) -> str | None:
    """The decision a venueid tells: withdrawn, rejected, under review (none), else accepted (with
    its tier); None for a note without one."""
    if not venueid:
        return None
    suffix = next((suffix for suffix in DECISIONS if venueid.endswith(suffix)), None)
    if suffix is not None:
        return DECISIONS[suffix]
    return f"Accept ({tier})" if tier else "Accept"


def to_record(note: Mapping, site: str = SITE) -> dict:
    """One note (as the API gives it) as a paper's line: every content field unwrapped from its
    ``{"value": …}``, dates as YYYY-MM-DD, links on ``site``; a field the note lacks is left out."""
    content = {
        key: value.get("value") if isinstance(value, Mapping) else value for key, value in note["content"].items()
    }
    venue, venueid = content.get("venue"), content.get("venueid") or ""
    withdrawn = venueid.endswith(WITHDRAWN)
    words = str(venue or "").lower().split()
    tier = next((name for name in TIERS if words and words[-1].startswith(name)), None)
    decision = _decision(note) or _decided(venueid, tier)
    published = epoch_date(note.get("pdate") or note.get("odate") or note.get("cdate"))
    pdf = content.get("pdf")
    record = {
        "id": note["id"],
        "title": content.get("title"),
        "abstract": content.get("abstract"),
        "authors": content.get("authors"),
        "published": published,
        "updated": epoch_date(note.get("tmdate") or note.get("mdate")),
        "year": int(published[:4]) if published else None,
        "venue": venue,
        "url": f"{site}/forum?id={note.get('forum') or note['id']}",
        "pdf_url": f"{site}{pdf}" if isinstance(pdf, str) and pdf.startswith("/") else pdf,
        "categories": [content["primary_area"]] if content.get("primary_area") else None,
        "keywords": content.get("keywords"),
        "source": "openreview",
        "status": "withdrawn" if withdrawn else "active",
        "number": note.get("number"),
        "decision": decision,
        "tier": tier,
        "primary_area": content.get("primary_area"),
        "tldr": content.get("TLDR") or content.get("TL;DR"),
        "venueid": venueid or None,
        "forum_url": f"{site}/forum?id={note.get('forum') or note['id']}",
    }
    return {key: value for key, value in record.items() if value not in (None, "", [])}


def check(query: SourceQuery) -> None:
    """A UserError, before any request, for a query OpenReview cannot answer."""
    venue = query.get("venue") or ""
    if "/" not in venue or venue != venue.strip():
        raise UserError(f"openreview: {shown(venue)!r} is not a venue id (e.g. NeurIPS.cc/2025/Conference)")
    if "api.openreview.net" in (query.base_url or ""):
        raise UserError(f"--base-url {query.base_url} is OpenReview's old API (v1): give {API}")


def since(query: SourceQuery, watermark: str) -> SourceQuery:
    """The venue listed again (a few requests), keeping the notes changed after ``watermark`` (the
    newest ``tmdate`` seen), then its withdrawn submissions changed after it, as status "withdrawn"."""
    return query.with_filters(changed_after=watermark)


def _client(query: SourceQuery, options: FetchOptions):
    """openreview-py's client on the polite session, logged in as nobody."""
    import openreview

    # A token given, the client logs in as nobody even when $OPENREVIEW_USERNAME/PASSWORD are set (public
    # notes need no login, and a login would ask for more); this one is not a JWT, so it asks nothing either.
    client = openreview.api.OpenReviewClient(baseurl=query.base_url or API, token="none")
    client.token = None
    client.headers.pop("Authorization", None)
    # paperscope's session in place of the client's, whose own urllib3 retries would retry every retry
    client.session = PoliteSession("openreview", options, check=whole_json)
    return client


def _page(client, venueid: str, after: str | None) -> tuple[list[dict], int | None]:
    """One page of the notes under ``venueid`` after id ``after``, and the count (asked on the first)."""
    import openreview

    try:
        answer = client.get_notes(
            content={"venueid": venueid}, sort="id", limit=PAGE_SIZE, after=after, with_count=after is None
        )
    except openreview.OpenReviewException as exc:
        raise ServiceFailed(f"openreview: {shown(exc, 200)}") from exc
    notes, count = answer if after is None else (answer, None)
    return [vars(note) for note in notes], count


def fetch_pages(query: SourceQuery, options: FetchOptions, writer: FetchWriter) -> None:
    """Every page of the venue's notes from ``writer``'s cursor on, each committed with the last id
    it holds; for an update (``changed_after``), only the notes changed since, then the withdrawn."""
    venue, changed_after = str(query.get("venue")), query.get("changed_after")
    listings = [venue, venue + WITHDRAWN] if changed_after else [venue]
    cursor = writer.state.cursor or {"venueid": venue}
    site, client = site_for(query.base_url), _client(query, options)
    for venueid in listings[listings.index(cursor["venueid"]) :]:
        after = cursor.get("after") if cursor["venueid"] == venueid else None
        while True:
            notes, count = _page(client, venueid, after)
            if count == 0 and venueid == venue:
                logger.warning("openreview: no papers under %s: is that the venue id as OpenReview spells it?", venue)
            notes = [note for note in notes if after is None or note["id"] > after]  # a page repeating the last kept
            if not notes:
                break
            after = notes[-1]["id"]
            changed = [note for note in notes if changed_after is None or epoch_time(note["tmdate"]) > changed_after]
            newest = epoch_time(max(note["tmdate"] for note in notes))
            total = count if changed_after is None and venueid == venue else None
            records = [to_record(note, site) for note in changed]
            writer.commit(records, {"venueid": venueid, "after": after}, newest, total)
    writer.commit([], {"venueid": listings[-1], "after": None}, complete=True)
