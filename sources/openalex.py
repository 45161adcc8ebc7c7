"""Works from OpenAlex by any filter it takes: ``paperscope fetch openalex --filter KEY:VALUE[,…]``.

Plain requests against ``/works`` through the polite session rather than pyalex: pyalex builds its
list URLs on api.openalex.org whatever its ``openalex_url`` says, makes a new session per request
from a module function, and takes the key and contact from a process-wide ``config`` (the app
fetches in a thread) — three private seams to patch, against a few lines here. The filter string
goes to the API as the user wrote it. Pages are taken with ``cursor=`` (``*``, then each page's
``meta.next_cursor``, committed with the page); abstracts are rebuilt from
``abstract_inverted_index`` and a work without one is skipped (the readers need an abstract) and
counted.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

import requests

from paperscope.errors import ServiceFailed, UserError, shown
from paperscope.progress import duration
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources.http import PoliteSession, whole_json
from paperscope.sources.state import FetchWriter

logger = logging.getLogger(__name__)

API = "https://api.openalex.org"
PAGE_SIZE = 100  # the most the API gives a page
ARXIV_DOI = "10.48550/arxiv."
ARXIV_PAGE = re.compile(r"https?://arxiv\.org/(?:abs|pdf)/(.+?)(?:v\d+)?(?:\.pdf)?/?$", re.IGNORECASE)


def short_id(url: str | None) -> str | None:
    """An OpenAlex id without its URL ("https://openalex.org/W123" → "W123")."""
    return url.rsplit("/", 1)[-1] if url else None


def bare_doi(doi: str | None) -> str | None:
    """A DOI without its resolver ("https://doi.org/10.1/x" → "10.1/x")."""
    if not doi:
        return None
    return doi.split("doi.org/", 1)[-1]


def abstract_text(inverted: Mapping[str, list[int]] | None) -> str | None:
    """The abstract rebuilt from OpenAlex's inverted index (each word at each of its positions)."""
    if not inverted:
        return None
    placed = sorted((position, word) for word, positions in inverted.items() for position in positions)
    return " ".join(word for _, word in placed) or None


def _names(items, *path: str) -> list[str]:
    """The display names at ``path`` in each item, in order, without repeats."""
    names: list[str] = []
    for item in items or []:
        for key in path:
            item = (item or {}).get(key)
        if item and item not in names:
            names.append(item)
    return names


def to_record(work: Mapping) -> dict | None:
    """One work (as the API gives it) as a paper's line; None for a work without an abstract."""
    abstract = abstract_text(work.get("abstract_inverted_index"))
    if abstract is None:
        return None
    doi = bare_doi(work.get("doi"))
    location = work.get("primary_location") or {}
    best = work.get("best_oa_location") or {}
    topics = work.get("topics") or []
    record = {
        "id": short_id(work["id"]),
        "title": work.get("title") or work.get("display_name"),
        "abstract": abstract,
        "authors": _names(work.get("authorships"), "author", "display_name"),
        "published": work.get("publication_date"),
        "updated": (work.get("updated_date") or "")[:10],
        "year": work.get("publication_year"),
        "venue": (location.get("source") or {}).get("display_name"),
        "url": location.get("landing_page_url") or (f"https://doi.org/{doi}" if doi else work["id"]),
        "pdf_url": location.get("pdf_url") or best.get("pdf_url"),
        "doi": doi,
        "categories": _names(topics, "subfield", "display_name"),
        "keywords": _names(work.get("keywords"), "display_name"),
        "source": "openalex",
        "status": "retracted" if work.get("is_retracted") else "active",
        "type": work.get("type"),
        "primary_topic": (work.get("primary_topic") or {}).get("display_name"),
        "topics": _names(topics, "display_name"),
        "cited_by_count": work.get("cited_by_count"),
        "arxiv_id": _arxiv_id(doi, location, best),
    }
    return {key: value for key, value in record.items() if value not in (None, "", [])}


def _arxiv_id(doi: str | None, *locations: Mapping) -> str | None:
    """The work's arXiv id: its DOI's when arXiv gave it one, else its arXiv page's (older arXiv
    works have no DOI, only the page as a location)."""
    if doi and doi.lower().startswith(ARXIV_DOI):
        return doi[len(ARXIV_DOI) :]
    for location in locations:
        for url in (location.get("landing_page_url"), location.get("pdf_url")):
            if url and (found := ARXIV_PAGE.match(url)):
                return found.group(1)
    return None


def _filters(text: str | None) -> list[str]:
    """A filter string's KEY:VALUE parts."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def check(query: SourceQuery) -> None:
    """A UserError, before any request, for a query OpenAlex cannot answer."""
    if not query.get("filter") and not query.get("search"):
        raise UserError("openalex: give --filter KEY:VALUE[,…] (e.g. primary_location.source.id:S4306420609)")
    for part in _filters(query.get("filter")):
        key, colon, value = part.partition(":")
        if not (key and colon and value):
            raise UserError(f"openalex: --filter part {shown(part)!r} is not KEY:VALUE")


def since(query: SourceQuery, watermark: str) -> SourceQuery:
    """The user's filter plus ``from_updated_date:`` the watermark's day (the newest ``updated_date``
    seen): new works and changed ones (a retraction, an abstract added); ids repeated are kept once."""
    kept = [part for part in _filters(query.get("filter")) if not part.startswith((UPDATED, PUBLISHED))]
    return query.with_filters(filter=",".join([*kept, f"{UPDATED}{watermark[:10]}"]))


# Words of OpenAlex's refusal of a filter the key's plan lacks ({"error": "Plan upgrade required"}: from_updated_date
# was a paid filter; KTH-Library/openalex's docs, third parties' reports of the free key's answer)
PLAN_WORDS = ("plan upgrade", "upgrade required", "premium", "subscription")
UPDATED, PUBLISHED = "from_updated_date:", "from_publication_date:"


class PlanRefused(Exception):
    """OpenAlex refused a filter the key's plan lacks (its message)."""


def refusal(response: requests.Response) -> str | None:
    """Why to stop asking at once: a filter the plan lacks (raised as :class:`PlanRefused`), or the
    day's credits spent (:func:`credits_spent`); None for any other answer."""
    if response.status_code in (400, 401, 402, 403, 429) and any(word in response.text.lower() for word in PLAN_WORDS):
        raise PlanRefused(_message(response))
    return credits_spent(response)


def published_instead(filters: str | None) -> str | None:
    """An update's filter with ``from_publication_date:`` for ``from_updated_date:`` (a free
    filter: new works, not the changes of older ones); None when it has no ``from_updated_date:``."""
    parts = _filters(filters)
    if not any(part.startswith(UPDATED) for part in parts):
        return None
    return ",".join(PUBLISHED + part.removeprefix(UPDATED) if part.startswith(UPDATED) else part for part in parts)


def credits_spent(response: requests.Response) -> str | None:
    """What to say when ``response`` is a 429 of a key whose day of credits is spent (not only too
    many requests a second): trying again before they come back at 00:00 UTC would only spend the
    retries. None for any other answer."""
    if response.status_code != 429:
        return None
    remaining = response.headers.get("X-RateLimit-Remaining-USD") or response.headers.get("X-RateLimit-Remaining")
    words = response.text.lower()
    if remaining not in ("0", "0.0", "0.00") and not any(word in words for word in ("credit", "budget", "daily")):
        return None
    reset = response.headers.get("X-RateLimit-Reset", "")
    back = f", in {duration(float(reset))}" if reset.replace(".", "", 1).isdigit() else ""
    return (
        f"the day's credits are spent (HTTP 429: {_message(response)}); they come back at 00:00 UTC{back}: "
        "the same command goes on then"
    )


def _message(response: requests.Response) -> str:
    """The error message of an OpenAlex answer, on one line."""
    try:
        body = response.json()
        return shown(body.get("message") or body.get("error"), 200)
    except (ValueError, AttributeError):
        return shown(response.text or response.reason, 200)


def fetch_pages(query: SourceQuery, options: FetchOptions, writer: FetchWriter) -> None:
    """Every page of the works from ``writer``'s cursor on (``cursor=*`` first), each committed with
    the ``next_cursor`` that follows it; the works without an abstract skipped and counted."""
    session = PoliteSession("openalex", options, check=whole_json, final=refusal)
    query_filter = query.get("filter")
    params = {"filter": query_filter, "search": query.get("search"), "per_page": PAGE_SIZE}
    params.update(api_key=os.environ.get("OPENALEX_API_KEY") or None, mailto=options.contact)
    cursor, skipped = writer.state.cursor.get("next_cursor", "*"), writer.state.cursor.get("skipped", 0)
    before: set[str] = set()  # the page before's ids: a work it repeats is not skipped twice
    while cursor:
        try:
            response = session.get(f"{(query.base_url or API).rstrip('/')}/works", params={**params, "cursor": cursor})
        except PlanRefused as refused:
            if (instead := published_instead(query_filter)) is None:
                raise ServiceFailed(f"openalex: the key's plan does not allow this filter ({refused})") from None
            logger.warning(
                "openalex: from_updated_date needs a paid plan (%s); asking for the works published since "
                "that day instead: changes to older works (a retraction) are not seen", refused,
            )  # fmt: skip
            params["filter"] = query_filter = instead
            continue
        if response.status_code == 400:
            raise UserError(f"openalex: the filter was refused: {_message(response)}")
        if response.status_code != 200:
            raise ServiceFailed(f"openalex: HTTP {response.status_code}: {_message(response)}")
        page = response.json()
        works = page.get("results") or []
        made = [(work["id"], to_record(work)) for work in works]
        records = [record for _, record in made if record is not None]
        skipped += sum(record is None and work_id not in before for work_id, record in made)
        before = {work["id"] for work in works}
        cursor = page["meta"].get("next_cursor") if works else None
        newest = max((work.get("updated_date") or "" for work in works), default="") or None
        state = {"next_cursor": cursor, "skipped": skipped}
        writer.commit(records, state, newest, page["meta"].get("count"), complete=cursor is None)
    if skipped:
        logger.warning("openalex: %d works without an abstract skipped", skipped)
