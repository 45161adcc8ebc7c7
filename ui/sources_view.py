"""The app's "Get papers" panel: a venue, a category or a filter fetched (``paperscope.sources``,
as ``paperscope fetch`` does) and built into a new index of the data folder, as an upload is.

The same limits as an upload: one build at a time and the hour's uploads per server
(``upload_build``), the file no larger than an upload may be (the fetch stops there), audited,
none in a read-only app. Where each source is fetched from is the service's own address unless
whoever runs the app sets ``PAPERSCOPE_<SOURCE>_URL`` (a mirror, a proxy, a test server): not a
field of the page, as an address typed there would let any visitor of a shared app make the server
fetch from any host it can reach. The source clients and the build are imported on the click only.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from paperscope import locations
from paperscope.errors import ServiceFailed, UserError
from paperscope.limits import MAX_UPLOAD_MB
from paperscope.settings import FetchOptions, SourceName, SourceQuery
from paperscope.ui.access import upload_build
from paperscope.ui.app_access import audited, settings
from paperscope.ui.source_commands import CONTACT_VARIABLE

SOURCES: dict[str, SourceName] = {
    "OpenReview venue": "openreview",
    "arXiv category": "arxiv",
    "OpenAlex filter": "openalex",
}
BASE_URL_VARIABLE = "PAPERSCOPE_{}_URL"  # e.g. PAPERSCOPE_OPENALEX_URL: the service's address for this server
FETCHES = "fetches"  # the data folder's folder of fetched files: a fetch stopped half-way goes on from there


def base_url(source: str) -> str | None:
    """The address ``source`` is fetched from on this server: ``$PAPERSCOPE_<SOURCE>_URL``, or None
    for the service's own."""
    return os.environ.get(BASE_URL_VARIABLE.format(source.upper())) or None


def _filters(source: str) -> dict[str, str]:
    """The panel's fields for ``source``, as the query's filters."""
    if source == "openreview":
        return {"venue": st.text_input("Venue id", "NeurIPS.cc/2025/Conference", key="get-venue").strip()}
    if source == "openalex":
        return {
            "filter": st.text_input(
                "Filter", key="get-filter", placeholder="primary_topic.id:T10028,publication_year:2025",
                help="KEY:VALUE pairs, comma-separated, as OpenAlex takes them",
            ).strip()
        }  # fmt: skip
    today = dt.date.today()
    since = st.date_input("Since", today - dt.timedelta(days=7), key="get-since")
    until = st.date_input("Until", today, key="get-until")
    return {"category": st.text_input("Category", "cs.LG", key="get-category").strip(), "since": str(since),
            "until": str(until)}  # fmt: skip


def index_name(query: SourceQuery) -> str:
    """The new index's folder name: the source, its main filter cleaned, a hash of the whole query."""
    main = next((value for _, value in query.filters), "")
    stem = re.sub(r"[^a-z0-9]+", "-", main.lower()).strip("-")[:40]
    digest = hashlib.sha256(json.dumps(query.to_json(), sort_keys=True).encode()).hexdigest()[:8]
    return f"{query.source}-{stem}-{digest}" if stem else f"{query.source}-{digest}"


def get_papers_form(build_with_progress: Callable[[Callable, str], None]) -> str | None:
    """The panel; on "Fetch and build", the fetch and the build with their progress, and the new
    index's name (None until one is built; a failure shown as one line)."""
    source = SOURCES[st.radio("Source", list(SOURCES), key="get-source")]
    filters = _filters(source)
    if not st.button("Fetch and build", key="get-papers", type="primary"):
        return None
    try:
        query = SourceQuery(source, tuple(sorted((k, v) for k, v in filters.items() if v)), base_url(source))
        name = index_name(query)
        audited(f"fetch {query.describe()}", locations.indexes_dir() / name,
                lambda: _fetch_and_build(query, name, build_with_progress))  # fmt: skip
    except (UserError, ServiceFailed) as exc:
        st.error(str(exc))
        return None
    return name


def _fetch_and_build(query: SourceQuery, name: str, build_with_progress: Callable[[Callable, str], None]) -> None:
    """Fetch ``query`` into the data folder's fetches (going on from a fetch stopped before), then
    build it into the index ``name``, one at a time and within the hour's uploads."""
    from paperscope import sources  # the source clients: only when a user fetches
    from paperscope.index.build.pipeline import build_index  # build code: only when a user builds

    sources.check(query)
    out = locations.data_home() / FETCHES / f"{name}.jsonl"
    with upload_build(settings().uploads_per_hour):
        with st.status(f"Fetching {query.describe()}…", expanded=True) as status:
            bar = st.progress(0.0, text="asking")

            def progress(seen) -> None:
                bar.progress(min(seen.records / seen.total, 1.0) if seen.total else 0.0, text=seen.line())
                if out.stat().st_size > MAX_UPLOAD_MB * 1024 * 1024:  # stopped after a whole page: kept
                    raise UserError(f"{query.describe()}: over the {MAX_UPLOAD_MB} MB an upload may be; narrow it")

            try:
                report = sources.fetch(query, out, FetchOptions(contact=os.environ.get(CONTACT_VARIABLE)), progress)
            except (UserError, ServiceFailed):
                status.update(label=f"Could not fetch {query.describe()}", state="error", expanded=False)
                raise
            status.update(label=f"Fetched {report.records:,} papers", state="complete", expanded=False)
        if not report.records:
            raise UserError(f"{query.describe()}: no papers")
        folder = locations.indexes_dir() / name
        build_with_progress(lambda on_progress: build_index([Path(out)], folder, on_progress=on_progress), name)
