"""A fetched file and its state: pages appended and committed with the cursor that follows them.

``FILE`` holds one paper a JSON line; ``FILE.fetch.json`` beside it says what was asked, where the
source's paging stands (its cursor), how many bytes of ``FILE`` are whole pages, and the newest date
the source reported (the watermark an update asks from). Each page: its lines appended, flushed to
disk, then the state replaced in one step. A fetch killed anywhere goes on, run again, from the last
page it kept: ``FILE`` is cut back to the committed bytes and the source asked from the cursor.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from paperscope.errors import UserError, shown
from paperscope.files import atomic_path
from paperscope.progress import duration
from paperscope.settings import NO_OPTIONS, FetchOptions, SourceQuery

logger = logging.getLogger(__name__)

STATE_FORMAT = 1
STATE_SUFFIX = ".fetch.json"
# A record repeated across pages (a cursor's overlap, a page asked again after a restart from the last
# day reached) comes within a few pages of the first: the ids of this many last pages are kept (in the
# state, for a fetch that goes on) and a repeat among them is written once. Memory stays that of a few
# pages however long the harvest (arXiv's cs.*: 700,000 records); a repeat from further back is kept
# once by the readers (duplicate ids: the first).
RECENT_PAGES = 3


def state_path(out: Path) -> Path:
    """Where the state of a fetch into ``out`` is kept: ``out`` + ``.fetch.json``."""
    return out.with_name(out.name + STATE_SUFFIX)


def now_iso() -> str:
    """The time now, UTC, as ISO 8601 to the second."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class FetchState:
    """What ``FILE.fetch.json`` says (the fields as the file names them)."""

    query: SourceQuery
    cursor: dict = field(default_factory=dict)  # the source's own: token, offset, after-id, next cursor
    committed_bytes: int = 0
    pages: int = 0
    records: int = 0
    total: int | None = None
    watermark: str | None = None
    complete: bool = False
    deleted: int = 0
    withdrawn: int = 0
    recent_ids: list[list[str]] = field(default_factory=list)  # the ids of the last RECENT_PAGES pages
    started_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)

    def to_json(self) -> dict:
        """As kept on disk."""
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        return {"format": STATE_FORMAT, **data, "query": self.query.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> FetchState:
        """Read back what :meth:`to_json` wrote."""
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data and key != "query"}
        return cls(query=SourceQuery.from_json(data["query"]), **known)


def read_state(out: Path) -> FetchState | None:
    """The state of the fetch into ``out``; None when there is none. A state that cannot be read
    is a UserError naming it."""
    path = state_path(Path(out))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != STATE_FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {STATE_FORMAT}")
        return FetchState.from_json(data)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{path}: not a fetch state paperscope can read ({shown(exc)}); give --restart") from exc


def previous_state(out: Path, restart: bool = False) -> FetchState | None:
    """The state a fetch into ``out`` goes on from (None: it begins; always with ``restart``); a
    UserError for a file there that no fetch wrote (nothing a user has is replaced unasked)."""
    if restart:
        return None
    state = read_state(out)
    if state is None and out.exists() and out.stat().st_size:
        raise UserError(f"-o {out}: the file exists and is not a fetch's: give another file, or --restart")
    return state


@dataclass(frozen=True)
class FetchProgress:
    """Where a fetch stands after a page: pages and records so far, seconds since this run began,
    and the records the source says there are (None when it does not say)."""

    source: str
    pages: int
    records: int
    seconds: float
    total: int | None = None

    def line(self) -> str:
        """ "arxiv: page 3, 6,000 records, 42 s, about 2 min left"."""
        records = f"{self.records:,} record{'' if self.records == 1 else 's'}"
        text = f"{self.source}: page {self.pages}, {records}, {duration(self.seconds)}"
        if self.total and 0 < self.records < self.total:
            text += f", about {duration(self.seconds / self.records * (self.total - self.records))} left"
        return text


class FetchWriter:
    """The resumable writer of one fetch of ``query`` into ``out`` (see the module). Opening it
    checks what ``out`` holds: a state of another query (or a file without a state) is refused
    unless ``options.restart``; an unfinished state of the same query is gone on from."""

    def __init__(
        self,
        query: SourceQuery,
        out: Path,
        options: FetchOptions = NO_OPTIONS,
        progress: Callable[[FetchProgress], None] | None = None,
    ):
        self.query, self.out, self.progress = query, Path(out), progress
        self.began = time.monotonic()
        previous = previous_state(self.out, options.restart)
        if previous is not None and previous.query != query:
            raise UserError(
                f"-o {self.out} holds a fetch of {previous.query.describe()}, not {query.describe()}: "
                "give another file, or --restart to begin it again"
            )
        self.state = previous or FetchState(query)
        self.resumed = previous is not None and previous.pages > 0 and not previous.complete
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with open(self.out, "ab") as file:
            file.truncate(self.state.committed_bytes)  # a page written after the last commit is dropped
        if self.resumed:
            kept = self.state
            logger.info("%s: going on after page %d (%s records kept)", query.source, kept.pages, f"{kept.records:,}")

    def commit(
        self,
        records: Iterable[dict],
        cursor: dict,
        watermark: str | None = None,
        total: int | None = None,
        complete: bool = False,
    ) -> None:
        """Keep one page: its ``records`` not among the last pages' (``RECENT_PAGES``) appended
        (one JSON line each) and made durable, then the state saying the next page is at
        ``cursor``; the newest date the source reported (``watermark``) and the count it announced
        (``total``)."""
        state = self.state
        recent = {paper_id for page in state.recent_ids for paper_id in page}
        fresh = []
        for record in records:
            if record["id"] not in recent:
                recent.add(record["id"])
                fresh.append(record)
        state.recent_ids = [*state.recent_ids, [record["id"] for record in fresh]][-RECENT_PAGES:]
        with open(self.out, "ab") as file:
            file.write("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in fresh).encode())
            file.flush()
            os.fsync(file.fileno())
            state.committed_bytes = file.tell()
        state.pages += 1
        state.records += len(fresh)
        state.deleted += sum(record.get("status") == "deleted" for record in fresh)
        state.withdrawn += sum(record.get("status") == "withdrawn" for record in fresh)
        state.cursor, state.complete = cursor, complete
        state.total = total if total is not None else state.total
        if watermark is not None and (state.watermark is None or watermark > state.watermark):
            state.watermark = watermark
        self._save()
        seen = FetchProgress(self.query.source, state.pages, state.records, time.monotonic() - self.began, state.total)
        logger.info(seen.line())
        if self.progress is not None:
            self.progress(seen)

    def _save(self) -> None:
        """Replace the state file in one step."""
        self.state.updated_at = now_iso()
        with atomic_path(state_path(self.out)) as temporary:
            temporary.write_text(json.dumps(self.state.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
