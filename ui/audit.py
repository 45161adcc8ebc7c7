"""Who changed what: every write through ``paperscope serve``, the app and the command line, one JSON line each in the
data folder's ``audit.jsonl`` (``paperscope audit`` prints it).

A line: ``{"time": ISO 8601 UTC, "who": a token's name, a client's address or the user's name,
"via": "serve", "app" or "cli", "action": the route or what was done, "index": the index folder, "outcome": the
status answered (a number) or "ok" or the error's sentence}``. Lines are appended under a file lock,
each in one write, so that the workers of a server and several apps never interleave them.
"""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path

from filelock import FileLock

from paperscope import locations

LOCK_SECONDS = 10  # a writer waiting longer than this for the lock: the line is logged as lost
logger = logging.getLogger("paperscope")


def record(who: str, via: str, action: str, index, outcome) -> None:
    """Append one line to the audit log; a log that cannot be written is a logged error, not a
    failed write (the write has happened)."""
    path = locations.audit_file()
    line = {
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "who": who,
        "via": via,
        "action": action,
        "index": str(index),
        "outcome": outcome,
    }
    text = json.dumps(line, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{path}.lock", timeout=LOCK_SECONDS), open(path, "a", encoding="utf-8") as log:
            log.write(text)
    except (OSError, TimeoutError) as exc:
        logger.error("%s: could not record %s by %s in the audit log: %s", path, action, who, exc)


def entries(limit: int | None = None, path: Path | None = None, index: str | None = None) -> list[dict]:
    """The audit log's lines, oldest first (the last ``limit`` of them; only those of the index
    folder ``index``, resolved, when given); a line that is not JSON (a disk filled mid-write) is skipped."""
    path = path or locations.audit_file()
    if not path.is_file():
        return []
    found = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if index is None or line.get("index") == index:
            found.append(line)
    return found[-limit:] if limit else found
