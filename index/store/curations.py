"""The corrections to the topics kept beside the index: the log, read and written here.

The log is ``DIR/curations.json``, beside the generations and ``CURRENT`` (a build or ``add``
never touches it), JSON written atomically, an entry a line::

    {"format": "paperscope-curations", "version": 1, "curations": [
        {"op": "rename", "level": "coarse", "topic": "old name", "members": [ids], "name": "new name", "made": …},
        {"op": "merge", "level": …, "topic": "A", "members": [ids of A], "other": "B", "other_members": [ids of B],
         "name": null (A's) or "new name", "made": …},
        {"op": "split", "level": …, "topic": …, "members": [ids], "k": 2, "parts": [[ids], [ids]],
         "names": ["name of part 1" or null, …], "terms": [[terms of part 1], …], "made": …},
        {"op": "move", "level": …, "papers": [ids], "topic": "target", "members": [ids of the target], "made": …}]}

What the entries mean, and how a load applies them, is the curation room's
(:mod:`paperscope.index.curation`): this module hands them over as JSON objects and takes them
back, and knows nothing of topics.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from paperscope.errors import UserError, write_error
from paperscope.files import atomic_path

CURATIONS_FILE, CURATIONS_LOCK = "curations.json", ".curations.lock"
FORMAT_NAME, FORMAT_VERSION = "paperscope-curations", 1


# --- the log ---------------------------------------------------------------------------------


def log_path(folder: str | Path) -> Path:
    """Where the curations of the index in ``folder`` are kept."""
    return Path(folder) / CURATIONS_FILE


def stamp(folder: str | Path) -> str:
    """A text that changes when the log does ("" without one): for caches keyed by index state."""
    try:
        status = log_path(folder).stat()
    except OSError:
        return ""
    return f"{status.st_mtime_ns}-{status.st_size}"


def read_log(folder: str | Path) -> list[dict]:
    """The entries of the log (JSON objects, as written), in order ([] without a log); an unreadable
    log is a UserError."""
    path = log_path(folder)
    try:
        log = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{path}: unreadable ({str(exc)[:100]}); fix it or remove it to drop the curations") from None
    if not isinstance(log, dict) or log.get("format") != FORMAT_NAME or not isinstance(log.get("curations"), list):
        raise UserError(f"{path}: not a paperscope curations file; fix it or remove it to drop the curations")
    if log.get("version") != FORMAT_VERSION:
        raise UserError(f"{path}: curations version {log.get('version')!r}, this paperscope reads {FORMAT_VERSION}")
    return log["curations"]


def write_log(folder: str | Path, entries: list[dict]) -> None:
    """Replace the log with ``entries`` (JSON objects), atomically; a folder we cannot write to is a UserError."""
    head = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION})[:-1]
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)  # an entry a line
    try:
        with atomic_path(log_path(folder)) as temporary:
            temporary.write_text(f'{head}, "curations": [\n{lines}\n]}}\n', encoding="utf-8")
    except OSError as exc:
        raise write_error(exc, Path(folder)) or exc from None


@contextmanager
def locked(folder: str | Path):
    """Hold the log's lock (one writer at a time); a folder we cannot write to is a UserError."""
    from filelock import FileLock, Timeout

    try:
        with FileLock(Path(folder) / CURATIONS_LOCK, timeout=30):
            yield
    except Timeout:
        raise UserError(f"{folder}: another process keeps the curations locked; try again") from None
    except OSError as exc:
        raise write_error(exc, Path(folder)) or exc from None
