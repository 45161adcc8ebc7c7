"""The keyword index's vocabulary and IDF, learnt at build time by scikit-learn's TfidfVectorizer
(imported here only: ~0.6 s, never on the query path)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse

from paperscope.embed.terms import english_stop_words
from paperscope.index.search.keyword import SETTINGS, KeywordIndex, analyzer


def fit_keyword_index(texts: Iterable[str], count: int | None = None) -> KeywordIndex:
    """Learn terms and IDF from the corpus (terms in two papers or more once it has 1,000+).
    ``texts`` may be a generator (read once) when ``count`` gives its length."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    count = len(texts) if count is None else count
    stop_words = english_stop_words()
    vectorizer = TfidfVectorizer(
        analyzer=analyzer(stop_words),
        sublinear_tf=SETTINGS["sublinear_tf"],
        min_df=2 if count >= 1000 else 1,
        dtype=np.float32,
    )
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # nothing but stop words: an empty vocabulary
        empty = scipy.sparse.csr_matrix((count, 0), dtype=np.float32)
        return KeywordIndex(empty, [], np.zeros(0, np.float32), stop_words)
    terms = vectorizer.get_feature_names_out().tolist()
    return KeywordIndex(matrix.tocsr(), terms, vectorizer.idf_.astype(np.float32), stop_words)
