"""arXiv by its search API (the ``arxiv`` package): small queries, ``--query`` in arXiv's syntax or ``--ids``.

Pages of 100 entries, oldest submission first (new papers come at the end, so a saved offset still
points where it did), each committed with the offset after it. The client's own session, which
ignores ``Retry-After`` and sends its own user agent, is replaced by the polite one; its retries
and delay are turned off, the session doing both.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from paperscope.errors import ServiceFailed, UserError, shown
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources.arxiv_oai import clean, paper
from paperscope.sources.http import PoliteSession, ends_with
from paperscope.sources.state import FetchWriter

API_URL = "https://export.arxiv.org"
PAGE = 100
# An empty page before the total is reached: asked again this many times in all (arXiv's API serves
# one now and then, lukasschwab/arxiv.py#43, #83), then the fetch stops, to go on from it later.
EMPTY_TRIES = 3
MAX_IDS = 2000  # arXiv's most per request
ID = re.compile(r"(\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7})(v\d+)?")
VERSIONED = re.compile(r"(.+?)(v\d+)")


def ids_of(query: SourceQuery) -> list[str]:
    """The ``ids`` filter as a list (comma-separated, blanks ignored)."""
    return [part.strip() for part in (query.get("ids") or "").split(",") if part.strip()]


def check(query: SourceQuery) -> None:
    """A UserError for an empty ``--query``, or an ``--ids`` entry that is not an arXiv id."""
    ids = ids_of(query)
    if query.get("ids") is not None:
        bad = [arxiv_id for arxiv_id in ids if not ID.fullmatch(arxiv_id)]
        if bad or not ids or len(ids) > MAX_IDS:
            what = f"'{shown(bad[0])}' is not an arXiv id" if bad else f"give 1 to {MAX_IDS:,} ids"
            raise UserError(f"--ids: {what} (such as 2501.00001 or hep-th/9901001, comma-separated)")
    elif not (query.get("query") or "").strip():
        raise UserError("--query: give a search in arXiv's syntax, such as 'cat:cs.LG AND ti:transformer'")


def since(query: SourceQuery, watermark: str) -> SourceQuery:
    """The same ids again (a few, cheap), or the same search limited to papers updated since the
    day before ``watermark``."""
    if query.get("ids"):
        return query
    day = (date.fromisoformat(watermark[:10]) - timedelta(days=1)).strftime("%Y%m%d")
    tomorrow = (datetime.now(UTC).date() + timedelta(days=1)).strftime("%Y%m%d")
    return query.with_filters(query=f"({query.get('query')}) AND lastUpdatedDate:[{day}0000 TO {tomorrow}2359]")


def to_record(result) -> dict:
    """One ``arxiv.Result`` as a paper's line."""
    short = result.get_short_id()
    arxiv_id, version = match.groups() if (match := VERSIONED.fullmatch(short)) else (short, "v1")
    return paper(
        arxiv_id,
        version,
        result.published.date().isoformat(),
        result.updated.date().isoformat(),
        title=clean(result.title),
        abstract=clean(result.summary),
        authors=[author.name for author in result.authors],
        categories=[result.primary_category] + [c for c in result.categories if c != result.primary_category],
        doi=result.doi,
        comments=clean(result.comment),
        journal_ref=clean(result.journal_ref),
    )


def _client(session: PoliteSession, base_url: str):
    """An ``arxiv.Client`` that asks ``base_url`` through ``session`` (which paces and retries, so
    its own delay and retries are off) and gives one page at a time (its ``results`` hides them)."""
    import arxiv

    class PoliteClient(arxiv.Client):
        query_url_format = base_url.rstrip("/") + "/api/query?{}"

        def __init__(self):
            super().__init__(page_size=PAGE, delay_seconds=0, num_retries=0)
            self._session = session  # its own session sends its user agent and ignores Retry-After

        def page(self, search: arxiv.Search, offset: int):
            """The page of ``search`` from ``offset`` (an empty one is no error: the end)."""
            return self._parse_feed(self._format_url(search, offset, PAGE), first_page=True)

    return PoliteClient()


def _page(client, search, offset: int, query: SourceQuery):
    """The client's page of ``search`` from ``offset``; the API's refusal of the query a UserError."""
    import arxiv

    try:
        return client.page(search, offset)
    except arxiv.HTTPError as exc:
        if exc.status == 400:
            raise UserError(f"arxiv: the API refused the query (HTTP 400): {shown(query.describe())}") from exc
        raise ServiceFailed(f"arxiv: the API answered HTTP {exc.status}") from exc


def fetch_pages(query: SourceQuery, options: FetchOptions, writer: FetchWriter) -> None:
    """Every page of ``query`` from the writer's offset on, each committed with the offset after it."""
    import arxiv

    client = _client(PoliteSession("arxiv", options, check=ends_with("</feed>")), query.base_url or API_URL)
    ids = ids_of(query)
    search = arxiv.Search(
        query=query.get("query") or "", id_list=ids, sort_by=arxiv.SortCriterion.SubmittedDate,
        sort_order=arxiv.SortOrder.Ascending,
    )  # fmt: skip
    offset = int(writer.state.cursor.get("offset", 0))
    while True:
        for _ in range(EMPTY_TRIES):
            feed = _page(client, search, offset, query)
            if feed.results or ids or offset >= feed.header.total_results:
                break
        else:
            raise ServiceFailed(
                f"arxiv: an empty page at {offset:,} of {feed.header.total_results:,} results, "
                f"{EMPTY_TRIES} times; the same command goes on from there later"
            )
        records = [to_record(result) for result in feed.results]
        offset += len(records)
        # an ids query's totalResults can promise more than arXiv serves: an empty page ends it
        done = not records or offset >= feed.header.total_results
        writer.commit(
            records,
            {"offset": offset},
            watermark=max((record["updated"] for record in records), default=None),
            total=feed.header.total_results,
            complete=done,
        )
        if done:
            return
