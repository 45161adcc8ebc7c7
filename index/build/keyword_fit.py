"""The keyword index's vocabulary and IDF, learnt at build time by scikit-learn's TfidfVectorizer
(imported here only: ~0.6 s, never on the query path)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse

from paperscope.embed.terms import english_stop_words
from paperscope.index.common.keyword import SETTINGS, KeywordIndex, analyzer

PHRASES_FROM_TWO = 1_000  # papers from which a two-word phrase must be in two papers to count
RARE_WORDS_UP_TO = 200_000  # papers up to which a word of a single paper counts


def fit_keyword_index(texts: Iterable[str], count: int | None = None) -> KeywordIndex:
    """Learn terms and IDF from the corpus. ``texts`` may be a generator (read once) when
    ``count`` gives its length.

    Which terms are kept: every word, even one a single paper uses (a keyword search is for the
    rare term); two-word phrases from two papers once the corpus has ``PHRASES_FROM_TWO`` papers
    (a quarter of the terms of every phrase); above ``RARE_WORDS_UP_TO`` papers, words too need two papers, or
    the vocabulary of a million abstracts would not fit in memory while it is counted."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if count is None:
        texts = list(texts)
        count = len(texts)
    stop_words = english_stop_words()
    vectorizer = TfidfVectorizer(
        analyzer=analyzer(stop_words),
        sublinear_tf=SETTINGS["sublinear_tf"],
        min_df=2 if count > RARE_WORDS_UP_TO else 1,
        dtype=np.float32,
    )
    try:
        matrix = vectorizer.fit_transform(texts).tocsr()
    except ValueError:  # nothing but stop words: an empty vocabulary
        empty = scipy.sparse.csr_matrix((count, 0), dtype=np.float32)
        return KeywordIndex(empty, [], np.zeros(0, np.float32), stop_words)
    terms = vectorizer.get_feature_names_out()
    idf = vectorizer.idf_.astype(np.float32)
    if PHRASES_FROM_TWO <= count <= RARE_WORDS_UP_TO:
        in_papers = np.bincount(matrix.indices, minlength=len(terms))
        kept = np.flatnonzero((in_papers >= 2) | (np.char.find(terms.astype(str), " ") < 0))
        matrix, terms, idf = matrix[:, kept], terms[kept], idf[kept]
        matrix = _normalised(matrix)
    return KeywordIndex(matrix, terms.tolist(), idf, stop_words)


def _normalised(matrix: scipy.sparse.csr_matrix) -> scipy.sparse.csr_matrix:
    """Rows scaled to unit length again (as TfidfVectorizer leaves them), after columns were dropped."""
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    return scipy.sparse.csr_matrix(scipy.sparse.diags(1 / np.maximum(norms, 1e-12)) @ matrix, dtype=np.float32)
