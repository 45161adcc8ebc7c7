"""On-disk embedding cache keyed by (model fingerprint, long-text strategy, text hash).

Each build that embeds new texts appends one shard (``<uuid>.keys.npy`` + ``<uuid>.vectors.npy``)
to the folder of its model and strategy; shards are written to a temporary name and renamed,
so a killed build never leaves a half-written shard. Files are read with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import numpy as np

from paperscope.files import atomic_path


def text_key(text: str) -> str:
    """The cache key of one embedded text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EmbeddingCache:
    """Vectors already computed for a model and long-text strategy, found by text hash."""

    def __init__(self, folder: str | Path, model_fingerprint: str, long_text: str):
        self.folder = Path(folder) / f"{model_fingerprint}-{long_text}"
        self._vectors: dict[str, np.ndarray] = {}
        for keys_file in sorted(self.folder.glob("*.keys.npy")):
            vectors_file = keys_file.with_name(keys_file.name.replace(".keys.npy", ".vectors.npy"))
            try:
                keys = np.load(keys_file, allow_pickle=False)
                vectors = np.load(vectors_file, allow_pickle=False)
            except (OSError, ValueError):
                continue  # an unreadable shard is only a cache miss
            if len(keys) == len(vectors):
                self._vectors.update(zip(keys.tolist(), vectors, strict=True))

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, keys: list[str]) -> list[np.ndarray | None]:
        """The cached vector of each key, or None where there is none."""
        return [self._vectors.get(key) for key in keys]

    def add(self, keys: list[str], vectors: np.ndarray) -> None:
        """Store new vectors as one shard on disk (a later EmbeddingCache finds them; this one does
        not keep them in memory, so a large build holds each vector once)."""
        if not keys:
            return
        name = uuid.uuid4().hex
        for suffix, array in (
            (".vectors.npy", np.asarray(vectors, dtype=np.float32)),
            (".keys.npy", np.array(keys, dtype="U32")),
        ):  # keys last: they mark a shard complete
            with atomic_path(self.folder / f"{name}{suffix}") as temporary:
                np.save(temporary, array, allow_pickle=False)


def encode_with_cache(
    encoder, texts: list[str], long_text: str, cache: EmbeddingCache | None, on_progress=None, chunk_size: int = 128
) -> tuple[np.ndarray, int]:
    """Embed ``texts``, taking what ``cache`` holds and adding the rest to it chunk by chunk.

    ``on_progress(count)`` is called with the number of texts each chunk embedded. Returns the
    (n, dimension) float32 vectors and how many texts were embedded anew.
    """
    keys = [text_key(text) for text in texts]
    found = cache.get(keys) if cache is not None else [None] * len(texts)
    missing = [i for i, vector in enumerate(found) if vector is None]
    for start in range(0, len(missing), chunk_size):  # the model loads only if something is new
        chunk = missing[start : start + chunk_size]
        fresh = encoder.encode([texts[i] for i in chunk], long_text=long_text)
        if cache is not None:
            cache.add([keys[i] for i in chunk], fresh)
        for row, i in enumerate(chunk):
            found[i] = fresh[row]
        if on_progress:
            on_progress(len(chunk))
    if not texts:
        return np.zeros((0, encoder.dimension), dtype=np.float32), 0
    return np.stack(found).astype(np.float32), len(missing)
