"""An index that follows its sources: ``paperscope update --index DIR``.

An index built from fetched files keeps, in its manifest, each file's query and watermark
(:class:`~paperscope.index.store.manifest.Origin`). An update asks each source what is new or
changed since its watermark (:func:`paperscope.sources.since`), fetching into ``DIR/updates/``
(resumable: a killed update leaves the file and its state, and the next goes on from them), then
makes one ``add`` of what arrived (new papers added, new versions replacing their texts, withdrawn
and deleted papers marked) whose generation holds the new watermarks: the papers and how far the
index got are committed together, never one without the other. The fetched files are removed
once the generation is current. ``DIR/update.lock`` keeps a second update out at once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

from paperscope.errors import Busy, UserError
from paperscope.index.build import add  # add.add_papers, looked up when called (a test halts it at "commit")
from paperscope.index.store import generations
from paperscope.index.store.manifest import Origin
from paperscope.settings import NO_OPTIONS, FetchOptions
from paperscope.sources import FetchProgress, FetchReport, fetch, read_state, since
from paperscope.sources.state import now_iso, state_path

logger = logging.getLogger(__name__)

UPDATES_DIR, UPDATE_LOCK = "updates", "update.lock"


@dataclasses.dataclass(frozen=True)
class UpdateReport:
    """What an update did: the add's report, each origin as it was before and the fetch of it."""

    folder: Path
    added: add.AddReport
    before: tuple[Origin, ...]
    fetched: tuple[FetchReport, ...]
    seconds: float

    def line(self) -> str:
        """The one line cron mails: "DIR: 1,512 new, 23 new versions, 2 withdrawn, deleted or retracted from
        arxiv category=cs.LG since 2026-12-03, in 54 s"."""
        added = self.added
        sources = "; ".join(f"{o.query.describe()} since {(o.watermark or 'the start')[:10]}" for o in self.before)
        return (
            f"{self.folder}: {added.added:,} new, {added.replaced:,} new versions, "
            f"{added.marked:,} withdrawn, deleted or retracted from {sources}, in {self.seconds:.0f} s"
        )


def update(
    folder: str | Path, options: FetchOptions = NO_OPTIONS, progress: Callable[[FetchProgress], None] | None = None
) -> UpdateReport:
    """Fetch what each source of the index at ``folder`` has new since its watermark and add it
    (see the module docstring); ``progress`` is told after each page fetched. A UserError for an
    index that follows no source; :class:`~paperscope.errors.Busy` while another update runs."""
    from filelock import FileLock, Timeout

    begin = time.monotonic()
    folder = Path(folder)
    origins = generations.read_manifest(folder).origins
    if not origins:
        raise UserError(
            f"{folder}: this index follows no source (it was built from files no fetch wrote); build one that "
            "does in a new folder (this one stays as it is): paperscope fetch arxiv --category cs.LG -o F.jsonl "
            "&& paperscope build F.jsonl -o DIR"
        )
    try:
        lock = FileLock(folder / UPDATE_LOCK, blocking=False).acquire()
    except Timeout:
        raise Busy(f"another update of {folder} is running") from None
    with lock:
        origins = generations.read_manifest(folder).origins  # as the update before this one left them
        updates = folder / UPDATES_DIR
        updates.mkdir(exist_ok=True)
        files = [updates / f"{number}-{origin.query.source}.jsonl" for number, origin in enumerate(origins)]
        fetched = tuple(_fetch(origin, out, options, progress) for origin, out in zip(origins, files, strict=True))
        following = tuple(
            dataclasses.replace(origin, watermark=report.watermark or origin.watermark, fetched_at=now_iso())
            for origin, report in zip(origins, fetched, strict=True)
        )
        arrived: list[str | Path] = [report.out for report in fetched if report.records]
        added = add.add_papers(arrived, folder, origins=following)
        for out in files:  # their papers are in the current generation now
            out.unlink(missing_ok=True)
            state_path(out).unlink(missing_ok=True)
    return UpdateReport(folder, added, origins, fetched, time.monotonic() - begin)


def _fetch(origin: Origin, out: Path, options: FetchOptions, progress) -> FetchReport:
    """Fetch what ``origin``'s source has since its watermark into ``out``, going on from a killed
    update's fetch of the same; a file left by an update whose add was committed (its query asked
    from an older watermark) is removed first: its papers are in the index."""
    query = since(origin.query, origin.watermark) if origin.watermark else origin.query
    state = read_state(out)
    if state is not None and state.query != query:
        logger.info("%s: from an update already added; fetching anew", out)
        out.unlink(missing_ok=True)
        state_path(out).unlink(missing_ok=True)
    return fetch(query, out, options, progress)
