"""Atomic writes: the one way paperscope replaces a file or a folder on disk."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

DIGESTS_KEPT = 64  # files whose digests known_digest remembers: models' weights and their ONNX exports
SETTLED_SECONDS = 2.0  # a file changed more recently than this is hashed at each known_digest
TEMPORARY_PREFIX = ".tmp-"  # what a killed writer can leave behind; safe to delete when no writer holds the folder


def file_digest(*paths: Path) -> str:
    """SHA-256 of a file's bytes (of several files: of their bytes one after the other)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


def known_digest(*paths: Path, memory: Path) -> str:
    """:func:`file_digest` of files that seldom change (a model's weights, its ONNX export), kept in
    the JSON file ``memory`` by each file's path, size, modification and change times: hashed once
    rather than at every load (a model's 90 MB: 0.1 s each). A file changed in the last
    ``SETTLED_SECONDS`` is hashed every time (a rewrite in the same clock tick keeps its times); a
    change that keeps a file's size and times, as a disk's bit rot would, is not seen."""
    stats = [os.stat(path) for path in paths]
    key = json.dumps(
        [
            [str(Path(path).resolve()), s.st_size, s.st_mtime_ns, s.st_ctime_ns]
            for path, s in zip(paths, stats, strict=True)
        ]
    )
    try:
        known = json.loads(memory.read_text())
    except (OSError, ValueError):  # none yet, or not JSON: hashed, and written anew
        known = {}
    known = known if isinstance(known, dict) else {}
    if isinstance(known.get(key), str):
        return known[key]
    digest = file_digest(*paths)
    if time.time() - max(max(s.st_mtime, s.st_ctime) for s in stats) > SETTLED_SECONDS:
        kept = dict(list(known.items())[-(DIGESTS_KEPT - 1) :]) | {key: digest}
        try:
            with atomic_path(memory) as temporary:
                temporary.write_text(json.dumps(kept, indent=0))
        except OSError:  # a read-only data folder: hashed again next time
            pass
    return digest


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
