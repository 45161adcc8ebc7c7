"""Why two texts are similar: their best-matching sentence pairs and their shared distinctive terms.

The same function serves the app, ``paperscope explain ID1 ID2`` and notebooks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from paperscope.embed.terms import BOILERPLATE, phrases, singular, words
from paperscope.embed.text import split_sentences

COMMON_IDF = 1 + np.log(2)  # scikit-learn's smooth IDF of a term in half the papers


class SentencePair(TypedDict):
    """A sentence of each text and their cosine."""

    a: str
    b: str
    similarity: float


class ExplanationRecord(TypedDict):
    """:meth:`Explanation.to_dict`: what ``paperscope explain --json`` prints and the app shows."""

    score: float
    shared_terms: list[str]
    sentence_pairs: list[SentencePair]


@dataclass
class Explanation:
    """The evidence for one pair: (sentence of A, sentence of B, cosine) best first, and shared terms."""

    score: float
    sentence_pairs: list[tuple[str, str, float]] = field(default_factory=list)
    shared_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> ExplanationRecord:
        """Plain JSON-ready form."""
        return {
            "score": self.score,
            "shared_terms": self.shared_terms,
            "sentence_pairs": [{"a": a, "b": b, "similarity": s} for a, b, s in self.sentence_pairs],
        }


def _phrase_counts(text: str, stop_words: frozenset[str]) -> tuple[Counter, dict[str, str]]:
    """Words and two-word phrases with counts, keyed by their singular form ("benchmarks" and
    "benchmark" count as one), and the form each is most often written in; stop words,
    boilerplate, short words and numbers excluded."""

    def is_stop(word: str) -> bool:
        return word in stop_words or word in BOILERPLATE or len(word) < 3 or not word[0].isalpha()

    written = Counter(phrases(words(text), (1, 2), is_stop))
    counts: Counter = Counter()
    shown: dict[str, str] = {}
    for term, count in written.most_common():
        key = " ".join(singular(word) for word in term.split())
        counts[key] += count
        shown.setdefault(key, term)
    return counts, shown


def shared_terms(text_a: str, text_b: str, idf_of, stop_words: frozenset[str], limit: int = 6) -> list[str]:
    """Words and two-word phrases both texts use, most distinctive first: rare in the corpus (the
    keyword index's IDF, ``idf_of(term)``), frequent in both texts, phrases before single words.
    Plurals match their singular; a term is shown as text A writes it. ``stop_words``: the
    index's (see :mod:`paperscope.embed.terms`)."""
    (counts_a, shown), (counts_b, _) = _phrase_counts(text_a, stop_words), _phrase_counts(text_b, stop_words)

    def weight(key: str) -> float:
        return idf_of(shown[key]) * min(counts_a[key], counts_b[key]) * (1.5 if " " in key else 1.0)

    chosen: list[str] = []
    for key in sorted(counts_a.keys() & counts_b.keys(), key=lambda k: (-weight(k), k)):
        if any(set(key.split()) & set(kept.split()) for kept in chosen):
            continue  # "diffusion" adds nothing after "diffusion models"
        if idf_of(shown[key]) < COMMON_IDF:
            continue  # half the corpus uses it: not distinctive
        chosen.append(key)
        if len(chosen) == limit:
            break
    return [shown[key] for key in chosen]


def explain_pair(texts: tuple[str, str], score: float, encode_sentences, keyword, pairs: int = 2) -> Explanation:
    """Explain the similarity ``score`` of two texts with the model that embedded them:
    ``encode_sentences(list of sentences)`` gives their vectors, one row each; the index's
    ``keyword`` index says how distinctive a shared term is in the corpus (``idf_of``: rarer
    terms first) and holds its stop words.
    """
    text_a, text_b = texts
    sentences_a, sentences_b = split_sentences(text_a) or [text_a], split_sentences(text_b) or [text_b]
    vectors = encode_sentences(sentences_a + sentences_b)
    similarity = vectors[: len(sentences_a)] @ vectors[len(sentences_a) :].T
    found, used_a, used_b = [], set(), set()
    for flat in np.argsort(-similarity, axis=None):
        i, j = divmod(int(flat), len(sentences_b))
        if i in used_a or j in used_b:
            continue
        found.append((sentences_a[i], sentences_b[j], float(similarity[i, j])))
        used_a.add(i)
        used_b.add(j)
        if len(found) == pairs:
            break
    return Explanation(
        score=float(score),
        sentence_pairs=found,
        shared_terms=shared_terms(text_a, text_b, keyword.idf_of, keyword.stop_words),
    )
