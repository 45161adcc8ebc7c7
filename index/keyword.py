"""The keyword side of search: sparse TF-IDF over words and two-word phrases.

Terms come from :mod:`paperscope.index.terms`. scikit-learn's TfidfVectorizer learns the
vocabulary and IDF at build time; queries are turned into TF-IDF rows here, with the same term
extractor and the stop words stored in the index, without importing scikit-learn (~0.6 s) on
the query path.

It finds what dense MiniLM vectors blur: exact acronyms and rare terms ("GRPO", "ATSP", "DiT").
Stored in the index as a sparse paper x term matrix (``keyword.npz``, rows L2-normalised) and
the terms with their IDF (``keyword_terms.json``); no pickle.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse

from paperscope.index.terms import english_stop_words, phrases, words

SETTINGS = {"terms": "paperscope.index.terms", "phrase_sizes": [1, 2], "sublinear_tf": True}


def analyzer(stop_words: frozenset[str]):
    """The terms of a text the keyword index counts: words and two-word phrases without stop words."""
    return lambda text: phrases(words(text), SETTINGS["phrase_sizes"], stop_words.__contains__)


class KeywordIndex:
    """TF-IDF rows of the papers, and the means to turn a query into a row of the same space."""

    def __init__(self, matrix: scipy.sparse.csr_matrix, terms: list[str], idf: np.ndarray, stop_words: list[str]):
        self.matrix = matrix
        self.terms = terms
        self.idf = idf
        self.stop_words = frozenset(stop_words)

    @classmethod
    def fit(cls, texts: Iterable[str], count: int | None = None) -> KeywordIndex:
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
            return cls(scipy.sparse.csr_matrix((count, 0), dtype=np.float32), [], np.zeros(0, np.float32), stop_words)
        return cls(
            matrix.tocsr(), vectorizer.get_feature_names_out().tolist(), vectorizer.idf_.astype(np.float32), stop_words
        )

    @cached_property
    def _columns(self) -> tuple[dict[str, int], scipy.sparse.csc_matrix]:
        return {term: i for i, term in enumerate(self.terms)}, self.matrix.tocsc()

    def rows_with_term(self, term: str) -> np.ndarray | None:
        """Rows of the papers that use ``term`` (a lower-case word), or None if it is not in the vocabulary."""
        column_of, columns = self._columns
        if term not in column_of:
            return None
        column = column_of[term]
        return columns.indices[columns.indptr[column] : columns.indptr[column + 1]]

    def idf_of(self, term: str) -> float:
        """The IDF of a term, tokenised as the index is ("high-quality" is "high quality"); a term
        outside the vocabulary is as rare as the rarest."""
        column = self._columns[0].get(" ".join(words(term)))
        if column is None:
            return float(self.idf.max()) if len(self.idf) else 1.0
        return float(self.idf[column])

    def transform(self, texts: list[str]) -> scipy.sparse.csr_matrix:
        """TF-IDF rows (L2-normalised) of new texts in the corpus's term space, as TfidfVectorizer
        makes them: the same terms (:func:`analyzer`), 1 + log(count) times IDF."""
        column_of = self._columns[0]
        terms_of = analyzer(self.stop_words)
        rows, columns, values = [], [], []
        for row, text in enumerate(texts):
            counts = Counter(term for term in terms_of(text) if term in column_of)
            weights = {
                column_of[term]: (1 + np.log(count)) * self.idf[column_of[term]] for term, count in counts.items()
            }
            norm = np.sqrt(sum(weight * weight for weight in weights.values())) or 1.0
            for column, weight in weights.items():
                rows.append(row)
                columns.append(column)
                values.append(weight / norm)
        return scipy.sparse.csr_matrix((values, (rows, columns)), shape=(len(texts), len(self.terms)), dtype=np.float32)

    def scores(self, query: scipy.sparse.csr_matrix) -> np.ndarray:
        """Similarity of each paper to a 1-row query in term space (cosine when the query is L2-normalised)."""
        if query.shape[1] == 0:
            return np.zeros(self.matrix.shape[0], dtype=np.float32)
        return np.asarray((self.matrix @ query.T).todense(), dtype=np.float32).ravel()

    def save(self, folder: Path, matrix_file: str, terms_file: str) -> None:
        """Write the matrix and the terms into ``folder``."""
        scipy.sparse.save_npz(folder / matrix_file, self.matrix, compressed=False)
        (folder / terms_file).write_text(
            json.dumps(
                {
                    "settings": SETTINGS,
                    "terms": self.terms,
                    "idf": [float(value) for value in self.idf],
                    "stop_words": sorted(self.stop_words),
                }
            )
        )

    @classmethod
    def load(cls, folder: Path, matrix_file: str, terms_file: str) -> KeywordIndex:
        """Read what ``save`` wrote (scipy's load_npz refuses pickled objects)."""
        stored = json.loads((folder / terms_file).read_text())
        return cls(
            scipy.sparse.load_npz(folder / matrix_file).tocsr(),
            stored["terms"],
            np.array(stored["idf"], dtype=np.float32),
            stored["stop_words"],
        )
