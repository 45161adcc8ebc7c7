"""Queries embedded as the index's papers were: the model it was built with, checked by
fingerprint, and a memory of the last query and sentence vectors (threads may share it)."""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from paperscope import locations
from paperscope.embed.text import normalise_text
from paperscope.errors import UserError
from paperscope.limits import MAX_QUERY_CHARS

QUERY_MEMORY = 64
SENTENCE_MEMORY = 20_000  # sentence vectors remembered for explanations (15 MB)


def searchable(text: str) -> str:
    """Query text as it is searched: control and other unprintable characters as spaces, spaces
    normalised ("" when nothing is left to search by)."""
    return normalise_text("".join(ch if ch.isprintable() else " " for ch in text))


def clean_query(text) -> str:
    """Normalise free query text; empty, non-text or overlong queries are user errors."""
    if not isinstance(text, str):
        raise UserError(f"the query must be text, got {type(text).__name__}")
    text = searchable(text)
    if not text:
        raise UserError("the query is empty; type a few words or an abstract")
    if len(text) > MAX_QUERY_CHARS:
        raise UserError(
            f"the query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,} (about ten abstracts)"
        )
    return text


class QueryEncoder:
    """Embeds query texts and sentences with the model an index was built with (its manifest's
    model, a :class:`~paperscope.index.store.manifest.ModelInfo`), loaded on first use;
    ``model_path`` overrides where it is loaded from."""

    def __init__(self, built_with, long_text: str, model_path: str | Path | None = None):
        self.built_with = built_with
        self.long_text = long_text
        self.model_path = model_path
        self._queries: dict[str, np.ndarray] = {}
        self._sentences: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # the two memories, for threads sharing the index

    @cached_property
    def encoder(self):
        """The model, checked by fingerprint (a UserError if it is missing or another one)."""
        from paperscope.embed.model import BUNDLED_MODEL_NAME, Encoder, bundled_model_path

        built_with = self.built_with
        path = self.model_path or built_with.path
        if not self.model_path and not Path(path).is_dir() and built_with.name == BUNDLED_MODEL_NAME:
            path = bundled_model_path()  # the index was built on another machine or in another venv
        if not Path(path).is_dir():
            raise UserError(f"the model this index was built with is not at {path}; pass its folder with --model")
        encoder = Encoder(path, onnx_dir=locations.onnx_dir(), quantize=built_with.quantize, window=built_with.window)
        if encoder.fingerprint != built_with.fingerprint:
            raise UserError(
                f"the model at {path} (fingerprint {encoder.fingerprint}) is not the one this index was "
                f"built with ({built_with.name}, {built_with.fingerprint}); rebuild the index or pass --model"
            )
        return encoder

    def texts(self, texts: list[str]) -> np.ndarray:
        """Texts embedded as the index's papers were, in batches (one row each; not remembered)."""
        return self.encoder.encode(texts, long_text=self.long_text)

    def query(self, text: str) -> np.ndarray:
        """The vector of free text (the last ``QUERY_MEMORY`` are kept: an app reruns the same query
        for its results, its map position and its explanations)."""
        text = clean_query(text)
        with self._lock:
            vector = self._queries.get(text)
        if vector is None:
            vector = self.encoder.encode([text], long_text=self.long_text)[0]
            with self._lock:
                if len(self._queries) >= QUERY_MEMORY:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[text] = vector
        return vector

    def sentences(self, sentences: list[str]) -> np.ndarray:
        """Sentence vectors for explanations, one row each, remembered: the selected paper's or the
        query's sentences are explained against every result (encoded once, not once per result)."""
        with self._lock:
            known = {sentence: self._sentences[sentence] for sentence in sentences if sentence in self._sentences}
        missing = [sentence for sentence in dict.fromkeys(sentences) if sentence not in known]
        if missing:
            known.update(zip(missing, self.encoder.encode(missing, long_text="mean"), strict=True))
            with self._lock:
                if len(self._sentences) + len(missing) > SENTENCE_MEMORY:
                    self._sentences.clear()
                self._sentences.update((sentence, known[sentence]) for sentence in missing)
        return np.stack([known[sentence] for sentence in sentences])
