"""Atomic writes: the one way paperscope replaces a file or a folder on disk."""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

TEMPORARY_PREFIX = ".tmp-"  # what a killed writer can leave behind; safe to delete when no writer holds the folder


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def atomic_path(target: Path):
    """Yield a temporary path beside ``target`` to write a file or a folder into; when the block
    ends without error, flush it to disk and rename it to ``target`` in one step, so readers see
    the old content or the new, never a part. On error the temporary is removed.

    The temporary's name ends like ``target``'s (libraries that add a missing suffix keep it) and
    starts with ``TEMPORARY_PREFIX``. A folder can only replace a missing or empty ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-{target.name}")
    try:
        yield temporary
        for path in [*temporary.rglob("*"), temporary] if temporary.is_dir() else [temporary]:
            _fsync(path)
        os.replace(temporary, target)
        _fsync(target.parent)
    finally:
        if temporary.is_dir():
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            temporary.unlink(missing_ok=True)
