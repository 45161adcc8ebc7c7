"""On-disk embedding cache keyed by (model fingerprint, long-text strategy, text hash), for millions.

The cache of one model and strategy is a folder of a few large shards. A shard is a folder
written in one atomic rename, holding three arrays in the same order:

    keys.npy      (n,) 16-byte text hashes, sorted (found by binary search)
    vectors.npy   (n, d) float32 vectors
    sums.npy      (n,) uint64 checksum of each vector

Opening memory-maps every shard and reads nothing else, so a cache of a million vectors opens in
milliseconds. A lookup reads only the rows it finds and checks their checksums; a shard that is
truncated or unreadable, or rows whose checksum or length is wrong, are reported in one warning
line and treated as missing (their texts are embedded again, never returned wrong).

A build adds its new vectors in shards of up to ``SHARD_ROWS``, written at least every
``FLUSH_SECONDS`` and when the build is stopped (Ctrl-C, SIGTERM), so that the same build started
again takes them from here; when ``MERGE_WIDTH`` shards of one
size tier (a factor of ``MERGE_WIDTH`` in rows) exist, they are merged into one of the next tier,
so a cache of n vectors has about ``MERGE_WIDTH`` x log(n) shards and each vector is rewritten
log(n) times. Files are read with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import shutil
import time
import uuid
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from paperscope.files import TEMPORARY_PREFIX, atomic_path

logger = logging.getLogger(__name__)

SHARD_ROWS = 5_000  # vectors a build writes per new shard
FLUSH_SECONDS = 60.0  # or fewer, once the oldest has waited this long: a killed build loses at most a minute
MERGE_WIDTH = 4
KEY_BYTES = 16
_WEIGHTS = np.random.default_rng(20261201).integers(1, 2**63, 1024, dtype=np.uint64) | np.uint64(1)  # odd


def text_key(text: str) -> bytes:
    """The cache key of one embedded text."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:KEY_BYTES]


def checksums(vectors: np.ndarray) -> np.ndarray:
    """One uint64 per row that changes with any bit of the row (odd weights on its 32-bit words,
    plus one, so that a zeroed row and a zeroed checksum never agree)."""
    words = np.ascontiguousarray(vectors, dtype=np.float32).view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        return (words * _WEIGHTS[: words.shape[1]]).sum(axis=1, dtype=np.uint64) + np.uint64(1)


class _Shard:
    """One shard, memory-mapped."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.keys = np.load(folder / "keys.npy", mmap_mode="r", allow_pickle=False)
        self.vectors = np.load(folder / "vectors.npy", mmap_mode="r", allow_pickle=False)
        self.sums = np.load(folder / "sums.npy", mmap_mode="r", allow_pickle=False)
        if self.keys.dtype != f"S{KEY_BYTES}" or not len(self.keys) == len(self.vectors) == len(self.sums):
            raise ValueError("arrays of different lengths or kinds")

    def __len__(self) -> int:
        return len(self.keys)


def _write_shard(folder: Path, keys: np.ndarray, vectors: np.ndarray) -> Path:
    """A new shard of ``keys`` (sorted here) and their ``vectors``, written atomically."""
    order = np.argsort(keys, kind="stable")
    target = folder / f"shard-{uuid.uuid4().hex}"
    with atomic_path(target) as temporary:
        temporary.mkdir()
        vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32)[order])
        np.save(temporary / "vectors.npy", vectors, allow_pickle=False)
        np.save(temporary / "sums.npy", checksums(vectors), allow_pickle=False)
        np.save(temporary / "keys.npy", np.asarray(keys)[order], allow_pickle=False)
    return target


class EmbeddingCache:
    """Vectors already computed for a model and long-text strategy, found by text hash."""

    def __init__(self, folder: str | Path, model_fingerprint: str, long_text: str):
        self.folder = Path(folder) / f"{model_fingerprint}-{long_text}"
        self.shards: list[_Shard] = []
        for shard_folder in sorted(self.folder.glob("shard-*")):
            try:
                self.shards.append(_Shard(shard_folder))
            except (OSError, ValueError) as exc:  # truncated, zeroed header, missing file
                logger.warning(
                    "warning: embedding cache shard %s is unreadable (%s); its texts will be embedded again",
                    shard_folder,
                    str(exc).splitlines()[0][:80],
                )
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._waiting_since = 0.0  # time.monotonic() of the oldest waiting vectors
        self.read_only = False  # set when a write fails: the cache is then only read

    def __len__(self) -> int:
        return sum(len(shard) for shard in self.shards)

    def get(self, keys: list[bytes]) -> list[np.ndarray | None]:
        """The cached vector of each key, or None where there is none (or its row is damaged)."""
        wanted = np.array(keys, dtype=f"S{KEY_BYTES}")
        found: list[np.ndarray | None] = [None] * len(keys)
        for shard in self.shards:
            open_rows = np.array([i for i, vector in enumerate(found) if vector is None], dtype=np.int64)
            if not len(open_rows) or not len(shard):
                continue
            positions = np.searchsorted(shard.keys, wanted[open_rows]).clip(0, len(shard) - 1)
            hit = shard.keys[positions] == wanted[open_rows]
            rows, positions = open_rows[hit], positions[hit]
            if not len(rows):
                continue
            vectors = np.asarray(shard.vectors[positions], dtype=np.float32)
            intact = (checksums(vectors) == shard.sums[positions]) & (
                np.abs(np.linalg.norm(vectors, axis=1) - 1) < 1e-3
            )
            if not intact.all():
                logger.warning(
                    "warning: embedding cache shard %s: %d vectors fail their checksum; their texts will be "
                    "embedded again",
                    shard.folder,
                    int((~intact).sum()),
                )
            for row, vector in zip(rows[intact], vectors[intact], strict=True):
                found[row] = vector
        return found

    def add(self, keys: list[bytes], vectors: np.ndarray) -> None:
        """Keep new vectors; they are written as a shard once ``SHARD_ROWS`` are waiting or the
        oldest waited ``FLUSH_SECONDS``, and by :meth:`flush` (this cache does not return them: a
        later EmbeddingCache does)."""
        if len(keys):
            if not self._pending:
                self._waiting_since = time.monotonic()
            self._pending.append((np.array(keys, dtype=f"S{KEY_BYTES}"), np.asarray(vectors, dtype=np.float32)))
        waited = time.monotonic() - self._waiting_since
        if sum(len(k) for k, _ in self._pending) >= SHARD_ROWS or (self._pending and waited >= FLUSH_SECONDS):
            self.flush()

    def flush(self, merge: bool = True) -> None:
        """Write the waiting vectors as one shard, then (with ``merge``) merge shards of a full size tier."""
        if not self._pending:
            return
        keys = np.concatenate([k for k, _ in self._pending])
        vectors = np.concatenate([v for _, v in self._pending])
        self._pending = []
        keys, first = np.unique(keys, return_index=True)
        if self.read_only:
            return
        try:
            _write_shard(self.folder, keys, vectors[first])
            if merge:
                self._merge()
        except OSError as exc:  # a read-only or full data folder: the build goes on without caching
            self.read_only = True
            logger.warning(
                "note: the embedding cache at %s cannot be written (%s); new vectors are not cached",
                self.folder,
                exc.strerror,
            )

    def _merge(self) -> None:
        """Merge ``MERGE_WIDTH`` shards of one size tier into one (one process at a time; the
        merged shards are removed only once their union is written)."""
        try:
            lock = FileLock(self.folder / ".merge.lock", blocking=False).acquire()
        except Timeout:
            return  # another build is merging
        with lock:
            while True:
                tiers: dict[int, list[_Shard]] = {}
                for shard_folder in sorted(self.folder.glob("shard-*")):
                    try:
                        shard = _Shard(shard_folder)
                    except (OSError, ValueError):
                        continue
                    tier = int(math.log(max(len(shard), 1) / SHARD_ROWS + 1, MERGE_WIDTH))
                    tiers.setdefault(tier, []).append(shard)
                full = [group for group in tiers.values() if len(group) >= MERGE_WIDTH]
                if not full:
                    break
                group = full[0][:MERGE_WIDTH]
                parts: list[np.ndarray] = []
                vectors: list[np.ndarray] = []
                for shard in group:
                    usable = checksums(np.asarray(shard.vectors)) == shard.sums  # damaged rows are not carried over
                    parts.append(np.asarray(shard.keys)[usable])
                    vectors.append(np.asarray(shard.vectors)[usable])
                keys, first = np.unique(np.concatenate(parts), return_index=True)
                _write_shard(self.folder, keys, np.concatenate(vectors)[first])
                for shard in group:
                    shutil.rmtree(shard.folder, ignore_errors=True)
            for leftover in self.folder.glob(f"{TEMPORARY_PREFIX}*"):  # of writers killed a day ago or more
                if time.time() - leftover.stat().st_mtime > 86_400:
                    shutil.rmtree(leftover, ignore_errors=True)


def encode_with_cache(
    encoder, texts: list[str], long_text: str, cache: EmbeddingCache | None, on_progress=None, chunk_size: int = 128
) -> tuple[np.ndarray, int]:
    """Embed ``texts``, taking what ``cache`` holds and adding the rest to it chunk by chunk.

    ``on_progress(count)`` is called with the number of texts each chunk embedded. Returns the
    (n, dimension) float32 vectors and how many texts were embedded anew. The caller flushes the
    cache; when the embedding is stopped (an exception, KeyboardInterrupt included), this does.
    """
    keys = [text_key(text) for text in texts]
    found = cache.get(keys) if cache is not None else [None] * len(texts)
    missing = [i for i, vector in enumerate(found) if vector is None]
    try:
        for start in range(0, len(missing), chunk_size):  # the model loads only if something is new
            chunk = missing[start : start + chunk_size]
            fresh = encoder.encode([texts[i] for i in chunk], long_text=long_text)
            if cache is not None:
                cache.add([keys[i] for i in chunk], fresh)
            for row, vector in zip(chunk, fresh, strict=True):
                found[row] = vector
            if on_progress:
                on_progress(len(chunk))
    except BaseException:  # Ctrl-C, SIGTERM (the command line raises it here) or a failure: keep what is embedded
        if cache is not None:
            cache.flush(merge=False)  # quickly: the next build merges
        raise
    if not texts:
        return np.zeros((0, encoder.dimension), dtype=np.float32), 0
    return np.stack(found).astype(np.float32), len(missing)  # type: ignore[arg-type]  # every row filled by now
