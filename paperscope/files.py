"""Atomic writes: the one way paperscope replaces a file or a folder on disk."""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

TEMPORARY_PREFIX = ".tmp-"  # what a killed writer can leave behind; safe to delete when no writer holds the folder


def file_digest(*paths: Path) -> str:
    """SHA-256 of a file's bytes (of several files: of their bytes one after the other)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


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


def reserved_array(path: Path, shape: tuple[int, ...], dtype="float32"):
    """A new ``.npy`` file of ``shape``, memory-mapped for writing, its disk space reserved first:
    a full disk is then an OSError (ENOSPC) here, not a SIGBUS at some later write into the map."""
    import numpy as np

    array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    with open(path, "r+b") as handle:
        os.posix_fallocate(handle.fileno(), 0, os.path.getsize(path))
    return array


def mapped_array(path: Path):
    """The ``.npy`` array at ``path``, memory-mapped read-only, as a plain ndarray view (the pages
    stay mapped: its base is the memmap), without numpy.memmap's Python-level ``__getitem__`` on
    every lookup."""
    import numpy as np

    return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)
