"""Records per second of each source's record parser, and of the writer that commits their pages: what a
fetch costs this machine beside the services' own pace (arXiv: a page of 2,000 records every 3 s at best).

    .venv/bin/python -m benchmarks.sources [--records 20000]

Pages are made in memory as the local services of the tests make them (tests/support/*_service.py):
arXiv OAI-PMH pages of 2,000 arXivRaw records (lxml parse + ``arxiv_oai.to_record``), arXiv API feeds
of 2,000 Atom entries (the arxiv client's parser + ``arxiv_api.to_record``), OpenReview pages of 1,000
notes (JSON, openreview-py's ``Note`` + ``openreview.to_record``), OpenAlex pages of 100 works (JSON +
``openalex.to_record``, the abstract rebuilt from its inverted index); then the resumable writer
(``FetchWriter.commit``: JSON lines, fsync, the state replaced) on pages of 2,000 of those lines. Best
of 3 runs, wall time; prints a Markdown table with the load average, writes JSON.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import parser, report
from paperscope.settings import SourceQuery
from paperscope.sources import arxiv_api, arxiv_oai, openalex, openreview
from paperscope.sources.state import FetchWriter
from tests.support.arxiv_service import atom_entry, atom_feed, oai_page, raw_record
from tests.support.openalex_service import work
from tests.support.openreview_service import note

PAGE = 2000
RUNS = 3


def arxiv_oai_pages(records: int) -> Callable[[], list[dict]]:
    """Parsing arXivRaw ListRecords pages into papers' lines."""
    from lxml import etree

    pages = [
        oai_page([raw_record(start + n, versions=1 + n % 3) for n in range(PAGE)], "token").encode()
        for start in range(0, records, PAGE)
    ]
    return lambda: [
        arxiv_oai.to_record(element)
        for page in pages
        for element in etree.fromstring(page).iter(f"{arxiv_oai.OAI}record")
    ]


def arxiv_api_feeds(records: int) -> Callable[[], list[dict]]:
    """Parsing arXiv API Atom feeds (the arxiv client's parser) into papers' lines."""
    from arxiv import _feed

    feeds = [
        atom_feed([atom_entry(start + n, version=1 + n % 3) for n in range(PAGE)], records, start).encode()
        for start in range(0, records, PAGE)
    ]
    return lambda: [arxiv_api.to_record(result) for feed in feeds for result in _feed.parse(feed).results]


def openreview_pages(records: int) -> Callable[[], list[dict]]:
    """Parsing OpenReview /notes pages of 1,000 notes as the client does (JSON, ``Note.from_json``) into lines."""
    from openreview.api import Note

    pages = [
        json.dumps({"notes": [note(start + n) for n in range(openreview.PAGE_SIZE)]}).encode()
        for start in range(0, records, openreview.PAGE_SIZE)
    ]
    return lambda: [
        openreview.to_record(vars(Note.from_json(item))) for page in pages for item in json.loads(page)["notes"]
    ]


def openalex_pages(records: int) -> Callable[[], list[dict]]:
    """Parsing OpenAlex /works pages of 100 works (JSON, abstracts rebuilt from the inverted index) into lines."""
    pages = [
        json.dumps({"results": [work(start + n) for n in range(openalex.PAGE_SIZE)]}).encode()
        for start in range(0, records, openalex.PAGE_SIZE)
    ]
    return lambda: [openalex.to_record(item) for page in pages for item in json.loads(page)["results"]]


# Each source's parser: (row name, maker of the timed work given the record count).
PARSERS: list[tuple[str, Callable[[int], Callable[[], list[dict]]]]] = [
    ("arXiv OAI-PMH, arXivRaw (lxml + to_record)", arxiv_oai_pages),
    ("arXiv API, Atom (arxiv client + to_record)", arxiv_api_feeds),
    ("OpenReview, notes JSON (openreview-py Note + to_record)", openreview_pages),
    ("OpenAlex, works JSON (abstract rebuilt + to_record)", openalex_pages),
]


def best(work: Callable[[], object]) -> float:
    """The fastest of ``RUNS`` wall times of ``work()``."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def writer_commits(lines: list[dict]) -> float:
    """Seconds to commit ``lines`` in pages of ``PAGE`` into a new fetched file (best of ``RUNS``)."""

    def commit_all() -> None:
        with tempfile.TemporaryDirectory() as folder:
            writer = FetchWriter(SourceQuery("arxiv", (("category", "cs.LG"),)), Path(folder) / "out.jsonl")
            for start in range(0, len(lines), PAGE):
                writer.commit(lines[start : start + PAGE], {"token": str(start)}, watermark="2025-01-20")

    return best(commit_all)


def main() -> None:
    arguments = parser(__doc__, "sources")
    arguments.add_argument("--records", type=int, default=20_000, help="records per source (default 20,000)")
    args = arguments.parse_args()
    logging.getLogger("paperscope").setLevel(logging.WARNING)  # not a progress line per page committed
    load = os.getloadavg()[0]
    rows, results = [], {"records": args.records, "page": PAGE, "load": round(load, 2), "rows": {}}
    lines: list[dict] = []
    for name, make in PARSERS:
        work = make(args.records)
        lines = work()
        seconds = best(work)
        rows.append([name, f"{len(lines):,}", f"{seconds:.2f}", f"{len(lines) / seconds:,.0f}"])
        results["rows"][name] = {"records": len(lines), "seconds": round(seconds, 3)}
    seconds = writer_commits(lines)
    name = f"FetchWriter.commit, pages of {PAGE:,} (JSON lines + fsync + state)"
    rows.append([name, f"{len(lines):,}", f"{seconds:.2f}", f"{len(lines) / seconds:,.0f}"])
    results["rows"][name] = {"records": len(lines), "seconds": round(seconds, 3)}
    print(f"load average {load:.2f}, best of {RUNS}")
    report(["what", "records", "seconds", "records/s"], rows, results, args.json)


if __name__ == "__main__":
    main()
