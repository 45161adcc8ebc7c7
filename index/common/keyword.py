"""The keyword side of search: sparse TF-IDF over words and two-word phrases.

Terms come from :mod:`paperscope.embed.terms`. scikit-learn's TfidfVectorizer learns the
vocabulary and IDF at build time (:mod:`paperscope.index.build.keyword_fit`); queries are
turned into TF-IDF rows here, with the same term extractor and the stop words stored in the
index, without importing scikit-learn (~0.6 s) on the query path.

It finds what dense MiniLM vectors blur: exact acronyms and rare terms ("GRPO", "ATSP", "DiT").
Stored in the index (by :mod:`paperscope.index.store.keyword_files`) as the sparse paper x term
matrix (rows L2-normalised) twice, by paper (CSR) and by term (CSC), each memory-mapped, and the
terms with their IDF; no pickle. Queries touch only the postings of
their terms and the rows of the candidates they score, so a search costs milliseconds at a
million papers without reading the matrix whole.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property

import numpy as np
import scipy.sparse

from paperscope.embed.terms import phrases, words

SETTINGS = {"terms": "paperscope.embed.terms", "phrase_sizes": [1, 2], "sublinear_tf": True}
CANDIDATE_TERMS = (
    12  # a query's heaviest terms whose papers become keyword candidates (benchmarks/hybrid_candidates.py)
)


def analyzer(stop_words: frozenset[str]):
    """The terms of a text the keyword index counts: words and two-word phrases without stop words."""
    return lambda text: phrases(words(text), SETTINGS["phrase_sizes"], stop_words.__contains__)


def _by_term(matrix: scipy.sparse.csr_matrix) -> scipy.sparse.csc_matrix:
    """``matrix`` by term (column), each term's rows in order of decreasing weight, ties by row."""
    by_term = matrix.tocsc()
    columns = np.repeat(np.arange(by_term.shape[1]), np.diff(by_term.indptr))
    order = np.lexsort((-by_term.data, columns))
    by_term.data, by_term.indices = by_term.data[order], by_term.indices[order]
    by_term.has_sorted_indices = False
    return by_term


def _posting_keys(by_term: scipy.sparse.csc_matrix) -> np.ndarray:
    """One integer per posting that orders postings as ``_by_term`` does: by term, then
    by weight, heaviest first (positive float32 weights order as their bits do)."""
    keys = np.repeat(np.arange(by_term.shape[1], dtype=np.uint64), np.diff(by_term.indptr))
    keys <<= np.uint64(32)
    keys |= np.uint64(0xFFFFFFFF) - np.asarray(by_term.data, dtype=np.float32).view(np.uint32)
    return keys


class KeywordIndex:
    """TF-IDF rows of the papers, and the means to turn a query into a row of the same space."""

    def __init__(self, matrix: scipy.sparse.csr_matrix, terms: list[str], idf: np.ndarray, stop_words: list[str]):
        self.matrix = matrix
        self.terms = terms
        self.idf = idf
        self.stop_words = frozenset(stop_words)

    @cached_property
    def _column_of(self) -> dict[str, int]:
        return {term: i for i, term in enumerate(self.terms)}

    @cached_property
    def by_term(self) -> scipy.sparse.csc_matrix:
        """The same matrix by term, each term's papers in order of decreasing weight (impact-ordered
        postings: a term's most telling papers come first); as stored, or made once after a fit."""
        return _by_term(self.matrix)

    def appended(self, rows: scipy.sparse.csr_matrix) -> KeywordIndex:
        """This index with ``rows`` (TF-IDF rows of new papers, from :meth:`transform`) after its
        own. The by-term matrix is merged, not sorted again: each new posting goes after the
        postings of its term with a weight at least its own (a million papers: 34 s -> 3 s)."""
        grown = KeywordIndex(
            scipy.sparse.vstack([self.matrix, rows], format="csr", dtype=np.float32),
            self.terms,
            self.idf,
            sorted(self.stop_words),
        )
        old, new = self.by_term, _by_term(rows)
        at = np.searchsorted(_posting_keys(old), _posting_keys(new), side="right") + np.arange(new.nnz)
        is_new = np.zeros(old.nnz + new.nnz, dtype=bool)
        is_new[at] = True
        data, indices = np.empty(len(is_new), np.float32), np.empty(len(is_new), old.indices.dtype)
        data[at], indices[at] = new.data, new.indices + self.matrix.shape[0]
        data[~is_new], indices[~is_new] = old.data, old.indices
        indptr = np.asarray(old.indptr) + np.asarray(new.indptr)
        grown.__dict__["by_term"] = scipy.sparse.csc_matrix((data, indices, indptr), shape=grown.matrix.shape)
        return grown

    def rows_with_term(self, term: str) -> np.ndarray | None:
        """Rows of the papers that use ``term`` (a lower-case word), or None if it is not in the vocabulary."""
        if term not in self._column_of:
            return None
        column = self._column_of[term]
        return np.asarray(self.by_term.indices[self.by_term.indptr[column] : self.by_term.indptr[column + 1]])

    def idf_of(self, term: str) -> float:
        """The IDF of a term, tokenised as the index is ("high-quality" is "high quality"); a term
        outside the vocabulary is as rare as the rarest."""
        column = self._column_of.get(" ".join(words(term)))
        if column is None:
            return float(self.idf.max()) if len(self.idf) else 1.0
        return float(self.idf[column])

    def transform(self, texts: list[str]) -> scipy.sparse.csr_matrix:
        """TF-IDF rows (L2-normalised) of new texts in the corpus's term space, as TfidfVectorizer
        makes them: the same terms (:func:`analyzer`), 1 + log(count) times IDF."""
        column_of = self._column_of
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

    def _postings(
        self, query: scipy.sparse.csr_matrix, columns: np.ndarray, limit: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the papers using each of ``columns`` (the ``limit`` heaviest of each, or all)
        and their weight times the query's."""
        weight_of = dict(zip(query.indices.tolist(), query.data.tolist(), strict=True))
        starts, ends = self.by_term.indptr[columns], self.by_term.indptr[columns + 1]
        if limit is not None:
            ends = np.minimum(ends, starts + limit)
        rows = [np.asarray(self.by_term.indices[a:b]) for a, b in zip(starts, ends, strict=True)]
        values = [
            np.asarray(self.by_term.data[a:b]) * weight_of[c] for a, b, c in zip(starts, ends, columns, strict=True)
        ]
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return np.concatenate(rows).astype(np.int64), np.concatenate(values)

    def scores(self, query: scipy.sparse.csr_matrix) -> np.ndarray:
        """Similarity of each paper to a 1-row query in term space (cosine when the query is
        L2-normalised), from the postings of the query's terms."""
        query = scipy.sparse.csr_matrix(query)
        rows, values = self._postings(query, query.indices)
        return np.bincount(rows, weights=values, minlength=self.matrix.shape[0]).astype(np.float32)

    def candidates(self, query: scipy.sparse.csr_matrix, count: int) -> np.ndarray:
        """Up to ``count`` rows likely to score highest against ``query``: from the query's
        ``CANDIDATE_TERMS`` heaviest terms, the ``count`` heaviest papers of each (impact-ordered
        postings: a common term's long list is never read whole), ranked by their share of the
        score. The caller scores candidates exactly with :meth:`row_scores`."""
        query = scipy.sparse.csr_matrix(query)
        heaviest = query.indices[np.argsort(-query.data, kind="stable")[:CANDIDATE_TERMS]]
        rows, values = self._postings(query, heaviest, count)
        if not len(rows):
            return rows
        found, where = np.unique(rows, return_inverse=True)
        partial = np.bincount(where, weights=values)
        if len(found) > count:
            found = found[np.argpartition(-partial, count - 1)[:count]]
        return found

    def _entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the term entries of the papers at ``rows`` lie in the memory-mapped matrix (one run
        per row: start, start + 1, … start + length - 1), and each row's number of entries."""
        starts = self.matrix.indptr[rows]
        lengths = self.matrix.indptr[rows + 1] - starts  # not np.diff of all rows: a million papers
        return np.arange(lengths.sum()) + np.repeat(starts - np.cumsum(lengths) + lengths, lengths), lengths

    def row_scores(self, rows: np.ndarray, query: scipy.sparse.csr_matrix) -> np.ndarray:
        """Exact scores of the papers at ``rows`` (as :meth:`scores` gives them), their entries read
        straight from the memory-mapped matrix, summed row by row (each row's entries are one run)."""
        query = scipy.sparse.csr_matrix(query)
        rows = np.asarray(rows, dtype=np.int64)
        scores = np.zeros(len(rows), dtype=np.float32)
        if query.shape[1] == 0 or not len(rows):
            return scores
        weights = np.zeros(query.shape[1], dtype=np.float32)
        weights[query.indices] = query.data
        positions, lengths = self._entries(rows)
        products = np.asarray(self.matrix.data[positions]) * weights[self.matrix.indices[positions]]
        used = lengths > 0  # reduceat would give an empty run the next run's first value
        if used.any():
            scores[used] = np.add.reduceat(products, (np.cumsum(lengths) - lengths)[used])
        return scores

    def weighted_rows(self, rows: list[int], weights: list[float]) -> scipy.sparse.csr_matrix:
        """The 1-row sum of the papers' term rows at ``rows``, each times its weight."""
        positions, lengths = self._entries(np.asarray(rows, dtype=np.int64))
        columns, where = np.unique(self.matrix.indices[positions], return_inverse=True)
        values = np.bincount(where, np.asarray(self.matrix.data[positions]) * np.repeat(weights, lengths))
        shape = (1, self.matrix.shape[1])
        return scipy.sparse.csr_matrix((values.astype(np.float32), columns, [0, len(columns)]), shape=shape)
