"""What a remap need not find again, kept beside the index per generation
(:func:`paperscope.index.store.maps.write_cache`): the candidate terms of the laid-out papers'
texts ("corpus-terms") and the vectors of the candidate names embedded ("term-vectors").

A build keeps both for the generation it writes, so that the first remap of a fresh index finds
them too; a remap reads them and keeps what it added. A cache is used only for what it was made
from: a generation's texts and model never change (a rebuild writes a new generation, ``add`` one
whose first rows are the old ones, text for text, and carries the caches over); the candidate
terms are kept with the rows they were found on, the longest phrase (``max_words``) and a digest
of the code that finds them (:func:`recipe`): other rows, settings or code find them again.
"""

from __future__ import annotations

import functools
import hashlib
import logging

import numpy as np
import scipy.sparse

from paperscope.embed import acronyms
from paperscope.embed import terms as phrases
from paperscope.index.topics import naming
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.naming import CorpusTerms, corpus_terms

log = logging.getLogger(__name__)
TERMS, VECTORS = "corpus-terms", "term-vectors"
REMAP_SAMPLE = 10_000  # a remap names on at most this many laid-out papers: terms of more are never read again


@functools.cache
def recipe() -> str:
    """A digest of the source of the code that finds the candidate terms (:func:`corpus_terms`) and
    keeps them: terms kept by other code are found again."""
    digest = hashlib.sha256()
    for path in (naming.__file__, phrases.__file__, acronyms.__file__, __file__):  # this one: how they are kept
        with open(path, "rb") as source:
            digest.update(source.read())
    return digest.hexdigest()[:16]


def _packed(texts) -> np.ndarray:
    """Texts (no line breaks) as one array of UTF-8 bytes: a fraction of a fixed-width array's
    size, whose every term takes the longest one's room."""
    return np.frombuffer("\n".join(texts).encode(), dtype=np.uint8)


def _unpacked(packed: np.ndarray) -> list[str]:
    """The texts :func:`_packed` packed."""
    text = packed.tobytes().decode()
    return text.split("\n") if text else []


def terms_arrays(terms: CorpusTerms, rows: np.ndarray, max_words: int) -> dict[str, np.ndarray]:
    """``terms`` (found on the texts of ``rows`` with ``max_words``) as arrays to keep (no objects)."""
    presence = terms.presence if terms.presence is not None else scipy.sparse.csr_matrix((len(rows), 0))
    return {
        "rows": rows, "max_words": np.array(max_words), "recipe": np.array(recipe()),
        "shape": np.array(presence.shape), "indices": presence.indices.astype(np.int32), "indptr": presence.indptr,
        "vocabulary": _packed(terms.vocabulary), "shown_keys": _packed(terms.shown),
        "shown_values": _packed(terms.shown.values()), "cased_keys": _packed(terms.cased),
        "cased_values": _packed(terms.cased.values()), "stop_words": _packed(sorted(terms.stop_words)),
    }  # fmt: skip


def _kept_terms(kept: dict, texts: list[str], rows: np.ndarray, max_words: int) -> CorpusTerms | None:
    """The :class:`CorpusTerms` in ``kept`` (:func:`terms_arrays`), or None when they were found on
    other rows, with another ``max_words`` or by other code."""
    if not kept or str(kept.get("recipe", "")) != recipe() or not np.array_equal(kept.get("rows", ()), rows):
        return None
    if int(kept["max_words"]) != max_words:
        return None
    shape = tuple(kept["shape"].tolist())
    ones = np.ones(len(kept["indices"]), dtype=np.int64)  # presence is binary: only where is kept
    presence = scipy.sparse.csr_matrix((ones, kept["indices"], kept["indptr"]), shape=shape)
    shown = dict(zip(_unpacked(kept["shown_keys"]), _unpacked(kept["shown_values"]), strict=True))
    cased = dict(zip(_unpacked(kept["cased_keys"]), _unpacked(kept["cased_values"]), strict=True))
    vocabulary = np.array(_unpacked(kept["vocabulary"]), dtype=object)
    if len(vocabulary) != shape[1]:  # not as it was kept
        return None
    stop_words = frozenset(_unpacked(kept["stop_words"]))  # kept: scikit-learn's need not be imported
    return CorpusTerms(texts, TermFinder(texts), vocabulary, presence if shape[1] else None, shown, stop_words, cased)


def cached_terms(texts: list[str], rows: np.ndarray, max_words: int, cache=None) -> CorpusTerms:
    """:func:`corpus_terms` of ``texts`` (those of ``rows``), or those kept before. ``cache``:
    (read(kind) or None, write(kind, arrays)); what is found is written when a remap could read it
    (at most ``REMAP_SAMPLE`` rows)."""
    read, write = cache or (None, None)
    terms = _kept_terms(read(TERMS), texts, rows, max_words) if read else None
    if terms is not None:
        log.info("candidate terms of %d papers: kept from before", len(rows))
        return terms
    terms = corpus_terms(texts, max_words)
    if write is not None and len(rows) <= REMAP_SAMPLE:
        write(TERMS, terms_arrays(terms, rows, max_words))
    return terms


class NameVectors:
    """``encode(terms)`` that remembers the vectors of the terms it embedded (``known``: those of
    before, {term: vector}); :meth:`arrays` gives them to keep."""

    def __init__(self, encode, known: dict[str, np.ndarray] | None = None):
        self.encode, self.known = encode, dict(known or {})
        self.before, self.embedded = len(self.known), 0

    @classmethod
    def from_arrays(cls, encode, kept: dict[str, np.ndarray]) -> NameVectors:
        """Remembering the vectors ``kept`` (as :meth:`arrays` gave them; {} for none)."""
        return cls(encode, dict(zip(kept.get("terms", np.array([])).tolist(), kept.get("vectors", []), strict=False)))

    def __call__(self, terms: list[str]) -> np.ndarray:
        """The vectors of ``terms``, one row each; only those not known are embedded."""
        missing = [term for term in dict.fromkeys(terms) if term not in self.known]
        if missing:
            self.known.update(zip(missing, np.asarray(self.encode(missing), dtype=np.float32), strict=True))
        self.embedded += len(missing)
        return np.stack([self.known[term] for term in terms]) if terms else np.empty((0, 0), np.float32)

    def arrays(self) -> dict[str, np.ndarray] | None:
        """All the vectors known, to keep; None when none were added."""
        if len(self.known) == self.before:
            return None
        terms = sorted(self.known)
        return {"terms": np.array(terms, dtype=str), "vectors": np.stack([self.known[term] for term in terms])}
