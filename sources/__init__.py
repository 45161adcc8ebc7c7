"""Corpus files from the services researchers take papers from: ``paperscope fetch``.

Each source is a module (``arxiv_oai``, ``arxiv_api``, ``openreview``, ``openalex``) that drives the
client made for its service and turns each record into a paper's JSON line, with every useful field
the service has as columns. What they share: the polite HTTP session (``http``: one request at a
time, the delay each service asks for, ``Retry-After`` honoured, a contact in the user agent) and
the resumable file (``state``: pages appended and committed with the cursor that follows them, so
that a killed fetch goes on from the last page it kept).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from paperscope.errors import UserError
from paperscope.settings import NO_OPTIONS, FetchOptions, SourceQuery
from paperscope.sources.state import FetchProgress, FetchState, FetchWriter, previous_state, read_state

__all__ = [
    "FetchProgress",
    "FetchReport",
    "FetchState",
    "check",
    "fetch",
    "previous_state",
    "read_state",
    "since",
    "source_module",
]

# The module of each source. Each has ``check(query)`` (a UserError for filters it cannot ask,
# before any request), ``fetch_pages(query, options, writer)`` (every page from ``writer.state.cursor``
# on, each committed, the last with complete=True) and ``since(query, watermark)``.
SOURCE_MODULES = {"arxiv": "arxiv_oai", "openreview": "openreview", "openalex": "openalex"}


def source_module(query: SourceQuery) -> ModuleType:
    """The module that fetches ``query`` (see ``SOURCE_MODULES``); arXiv by a search or by ids
    goes through the arXiv API, by category through OAI-PMH (as arXiv asks of bulk harvests)."""
    name = SOURCE_MODULES[query.source]
    if query.source == "arxiv" and (query.get("query") or query.get("ids")):
        name = "arxiv_api"
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise UserError(f"fetching from {query.source} is not ready yet") from exc


def check(query: SourceQuery) -> None:
    """A UserError, before any request, for a query its source cannot ask."""
    source_module(query).check(query)


def since(query: SourceQuery, watermark: str) -> SourceQuery:
    """The query for what ``query``'s source has new or changed after ``watermark`` (a state's):
    each source says how (arXiv OAI-PMH: ``since`` a day before it; ids repeated are kept once)."""
    return source_module(query).since(query, watermark)


@dataclass(frozen=True)
class FetchReport:
    """What a fetch did: the file, the query, the records in it (``deleted`` and ``withdrawn``
    among them), pages, the seconds this run took, whether the source has no more, and the
    watermark an update asks from."""

    out: Path
    query: SourceQuery
    records: int
    pages: int
    seconds: float
    complete: bool
    watermark: str | None
    deleted: int = 0
    withdrawn: int = 0
    complete_before: bool = False  # the file was complete already: nothing was asked

    @classmethod
    def of(cls, out: Path, state: FetchState, seconds: float, complete_before: bool = False) -> FetchReport:
        """The report of the fetch into ``out`` whose state is ``state``."""
        return cls(
            out, state.query, state.records, state.pages, seconds, state.complete, state.watermark,
            state.deleted, state.withdrawn, complete_before,
        )  # fmt: skip


def fetch(
    query: SourceQuery,
    out: Path,
    options: FetchOptions = NO_OPTIONS,
    progress: Callable[[FetchProgress], None] | None = None,
) -> FetchReport:
    """Fetch every record ``query`` asks into ``out`` (JSON lines; state in ``out.fetch.json``),
    going on from where a killed fetch of the same query stopped; a fetch already complete is
    left as it is (an update asks for what is new). ``progress`` is told after each page."""
    began = time.monotonic()
    module = source_module(query)
    module.check(query)
    out = Path(out)
    state = previous_state(out, options.restart)
    if state is not None and state.complete and state.query == query:
        return FetchReport.of(out, state, 0.0, complete_before=True)
    writer = FetchWriter(query, out, options, progress)
    module.fetch_pages(query, options, writer)
    return FetchReport.of(out, writer.state, time.monotonic() - began)
