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
million papers without reading the matrix whole. A query reads the stored arrays themselves
(:class:`Compressed`): scipy (0.12 s to import) is loaded only for the matrix as a whole
(:attr:`KeywordIndex.matrix`, :attr:`KeywordIndex.by_term`), by the build, ``add`` and
recommendations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from paperscope.embed.terms import phrases, words

if TYPE_CHECKING:
    import scipy.sparse

SETTINGS: dict[str, Any] = {"terms": "paperscope.embed.terms", "phrase_sizes": [1, 2], "sublinear_tf": True}
CANDIDATE_TERMS = 12  # a query's heaviest terms whose papers become keyword candidates


def analyzer(stop_words: frozenset[str]):
    """The terms of a text the keyword index counts: words and two-word phrases without stop words."""
    return lambda text: phrases(words(text), SETTINGS["phrase_sizes"], stop_words.__contains__)


@dataclass(frozen=True)
class Compressed:
    """A sparse matrix as its three arrays and shape, compressed by row (as scipy's CSR) or by
    column (CSC): the keyword matrix as stored, or a query's one row, read without scipy."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix) -> Compressed:
        """The arrays of a scipy CSR or CSC matrix (not copied)."""
        return cls(matrix.data, matrix.indices, matrix.indptr, tuple(matrix.shape))

    def toarray(self) -> np.ndarray:
        """The row-compressed matrix as a dense array."""
        dense = np.zeros(self.shape, dtype=np.float32)
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        np.add.at(dense, (rows, np.asarray(self.indices)), np.asarray(self.data))
        return dense


def _row(weights: dict[int, float], count: int) -> Compressed:
    """A one-row query over ``count`` terms with ``weights`` (term column -> weight)."""
    columns = np.fromiter(weights, dtype=np.int32, count=len(weights))
    values = np.fromiter(weights.values(), dtype=np.float32, count=len(weights))
    return Compressed(values, columns, np.array([0, len(columns)]), (1, count))


def _by_term(matrix: scipy.sparse.csr_matrix) -> scipy.sparse.csc_matrix:
    """``matrix`` by term (column), each term's rows in order of decreasing weight, ties by row."""
    by_term = matrix.tocsc()
    columns = np.repeat(np.arange(by_term.shape[1]), np.diff(by_term.indptr))
    order = np.lexsort((-by_term.data, columns))
    by_term.data, by_term.indices = by_term.data[order], by_term.indices[order]
    by_term.has_sorted_indices = False
    return by_term


def _places(data: np.ndarray, indptr: np.ndarray, new) -> np.ndarray:
    """Where each posting of ``new`` (by term, heaviest first) goes among the postings ``data`` and
    ``indptr`` (by term, heaviest first), counting those before it: after the postings of its
    term with a weight at least its own. A search in each term's postings, only for the terms
    ``new`` has (700,000 papers: 2.5 s for the keys of every posting before -> 0.3 s)."""
    places = np.empty(new.nnz, dtype=np.int64)
    new_data, new_indptr = np.asarray(new.data), np.asarray(new.indptr)
    for term in np.flatnonzero(np.diff(new_indptr)):
        begin, end, first, last = indptr[term], indptr[term + 1], new_indptr[term], new_indptr[term + 1]
        places[first:last] = begin + np.searchsorted(-data[begin:end], -new_data[first:last], side="right")
    return places


def _spliced(old, replaced: np.ndarray, matrix, new, at: np.ndarray, shape: tuple[int, int]) -> Compressed:
    """The postings ``old`` less those of the ``replaced`` rows (whose entries ``matrix``, by row,
    holds), with ``new`` (postings of rows numbered 0… standing for the rows ``at``) merged in, each
    after its term's at least as heavy. Only the replaced rows' own entries are looked for: a few
    among millions of postings; the old postings are copied once, a run between two changes at a
    time (not a delete and then a masked copy of every posting: 700,000 papers, 3.2 s -> 1.5)."""
    old_data, old_indices, old_indptr = np.asarray(old.data), np.asarray(old.indices), np.asarray(old.indptr)
    drop, indptr = np.zeros(0, np.int64), old_indptr
    if len(replaced):
        terms = np.concatenate([matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]] for row in replaced])
        gone = np.zeros(shape[0], dtype=bool)
        gone[replaced] = True
        columns = np.unique(terms)
        bounds = zip(old_indptr[columns], old_indptr[columns + 1], strict=True)
        drop = np.concatenate([np.zeros(0, np.int64)] + [start + np.flatnonzero(gone[old_indices[start:end]])
                                                         for start, end in bounds])  # fmt: skip
        indptr = old_indptr - np.concatenate([[0], np.cumsum(np.bincount(terms, minlength=old.shape[1]))])
    # Where each new posting goes among the old ones, the dropped counted (sorted: by term, heaviest
    # first); a dropped posting before it is one place less: the same place as among the kept.
    before = _places(old_data, old_indptr, new)
    at_new = before - np.searchsorted(drop, before) + np.arange(new.nnz)
    cuts = np.unique(np.concatenate([[0, len(old_data)], drop, drop + 1, before]))
    starts, ends = cuts[:-1], cuts[1:]
    kept = ~np.isin(starts, drop)  # a dropped posting is a run of its own
    to = starts - np.searchsorted(drop, starts) + np.searchsorted(before, starts, side="right")
    length = len(old_data) - len(drop) + new.nnz
    data, indices = np.empty(length, np.float32), np.empty(length, old.indices.dtype)
    for start, end, place in zip(starts[kept].tolist(), ends[kept].tolist(), to[kept].tolist(), strict=True):
        data[place : place + end - start] = old_data[start:end]
        indices[place : place + end - start] = old_indices[start:end]
    data[at_new], indices[at_new] = new.data, at[new.indices]
    return Compressed(data, indices, indptr + np.asarray(new.indptr), shape)


class KeywordIndex:
    """TF-IDF rows of the papers, and the means to turn a query into a row of the same space.
    ``rows``: the paper x term matrix, a scipy CSR matrix or its :class:`Compressed` arrays (as
    read); ``postings``, when given, the same by term as :attr:`by_term` orders it (as read). A
    query is one row: :meth:`query`'s, :meth:`weighted_rows`' or a row of :meth:`transform`."""

    def __init__(self, rows, terms: list[str], idf: np.ndarray, stop_words: Iterable[str], postings=None):
        self.rows = Compressed.of(rows)
        self.terms = terms
        self.idf = idf
        self.stop_words = frozenset(stop_words)
        if not isinstance(rows, Compressed):
            self.__dict__["matrix"] = rows
        if postings is not None:
            self.postings = Compressed.of(postings)

    @cached_property
    def _column_of(self) -> dict[str, int]:
        return {term: i for i, term in enumerate(self.terms)}

    @cached_property
    def matrix(self) -> scipy.sparse.csr_matrix:
        """The paper x term matrix as a scipy CSR matrix (over the same arrays: nothing is copied)."""
        import scipy.sparse

        return scipy.sparse.csr_matrix(
            (self.rows.data, self.rows.indices, self.rows.indptr), self.rows.shape, copy=False
        )

    @cached_property
    def postings(self) -> Compressed:
        """The matrix by term, each term's papers in order of decreasing weight (impact-ordered
        postings: a term's most telling papers come first); as stored, or made once after a fit."""
        return Compressed.of(_by_term(self.matrix))

    @cached_property
    def by_term(self) -> scipy.sparse.csc_matrix:
        """:attr:`postings` as a scipy CSC matrix (over the same arrays)."""
        import scipy.sparse

        by_term = self.postings
        return scipy.sparse.csc_matrix((by_term.data, by_term.indices, by_term.indptr), by_term.shape, copy=False)

    def appended(self, rows: scipy.sparse.csr_matrix) -> KeywordIndex:
        """This index with ``rows`` (TF-IDF rows of new papers, from :meth:`transform`) after its own."""
        count = self.rows.shape[0]
        return self.with_rows(np.arange(count, count + rows.shape[0]), rows)

    def with_rows(self, at: np.ndarray, rows: scipy.sparse.csr_matrix) -> KeywordIndex:
        """This index with ``rows`` (TF-IDF rows from :meth:`transform`) as its rows ``at`` (sorted,
        distinct): a row it has is replaced (a paper's new text), one past its end appended. Both
        matrices are spliced, not sorted again: the replaced rows' postings are dropped and each new
        posting goes after the postings of its term with a weight at least its own (a million
        papers: 34 s -> 3 s)."""
        import scipy.sparse

        old, at = self.matrix, np.asarray(at, dtype=np.int64)
        count = max(old.shape[0], int(at[-1]) + 1 if len(at) else 0)
        replaced = at[at < old.shape[0]]
        lengths = np.zeros(count, dtype=np.int64)
        lengths[: old.shape[0]] = np.diff(old.indptr)
        lengths[at] = np.diff(rows.indptr)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        pieces, begin = [], 0  # slices of the old rows between the replaced ones, and the new rows
        for number, row in enumerate(replaced):
            pieces += [(old, old.indptr[begin], old.indptr[row]), (rows, rows.indptr[number], rows.indptr[number + 1])]
            begin = row + 1
        pieces += [(old, old.indptr[begin], old.indptr[-1]), (rows, rows.indptr[len(replaced)], rows.indptr[-1])]
        data = np.concatenate([part.data[start:end] for part, start, end in pieces]).astype(np.float32, copy=False)
        indices = np.concatenate([part.indices[start:end] for part, start, end in pieces]).astype(
            old.indices.dtype, copy=False
        )
        matrix = scipy.sparse.csr_matrix((data, indices, indptr), (count, old.shape[1]))
        grown = KeywordIndex(matrix, self.terms, self.idf, sorted(self.stop_words))
        grown.postings = _spliced(self.by_term, replaced, old, _by_term(rows), at, grown.rows.shape)
        return grown

    def rows_with_term(self, term: str) -> np.ndarray | None:
        """Rows of the papers that use ``term`` (a lower-case word), or None if it is not in the vocabulary."""
        if term not in self._column_of:
            return None
        column, by_term = self._column_of[term], self.postings
        return np.asarray(by_term.indices[by_term.indptr[column] : by_term.indptr[column + 1]])

    def idf_of(self, term: str) -> float:
        """The IDF of a term, tokenised as the index is ("high-quality" is "high quality"); a term
        outside the vocabulary is as rare as the rarest."""
        column = self._column_of.get(" ".join(words(term)))
        if column is None:
            return float(self.idf.max()) if len(self.idf) else 1.0
        return float(self.idf[column])

    def _weights(self, text: str) -> dict[int, float]:
        """The TF-IDF row of a text as TfidfVectorizer makes it (term column -> weight): the same
        terms (:func:`analyzer`), 1 + log(count) times IDF, L2-normalised."""
        column_of = self._column_of
        counts = Counter(term for term in analyzer(self.stop_words)(text) if term in column_of)
        weights = {column_of[term]: (1 + np.log(count)) * self.idf[column_of[term]] for term, count in counts.items()}
        norm = np.sqrt(sum(weight * weight for weight in weights.values())) or 1.0
        return {column: float(weight / norm) for column, weight in weights.items()}

    def query(self, text: str) -> Compressed:
        """The TF-IDF row of a query text (:meth:`_weights`), for :meth:`scores`, :meth:`candidates`
        and :meth:`row_scores`."""
        return _row(self._weights(text), len(self.terms))

    def transform(self, texts: list[str]) -> scipy.sparse.csr_matrix:
        """TF-IDF rows of new texts in the corpus's term space (:meth:`_weights`), as a scipy matrix."""
        import scipy.sparse

        rows, columns, values = [], [], []
        for row, text in enumerate(texts):
            weights = self._weights(text)
            rows += [row] * len(weights)
            columns += list(weights)
            values += list(weights.values())
        return scipy.sparse.csr_matrix((values, (rows, columns)), shape=(len(texts), len(self.terms)), dtype=np.float32)

    def _postings(
        self, query: Compressed, columns: np.ndarray, limit: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the papers using each of ``columns`` (the ``limit`` heaviest of each, or all)
        and their weight times the query's."""
        weight_of, by_term = dict(zip(query.indices.tolist(), query.data.tolist(), strict=True)), self.postings
        starts, ends = by_term.indptr[columns], by_term.indptr[columns + 1]
        if limit is not None:
            ends = np.minimum(ends, starts + limit)
        rows = [np.asarray(by_term.indices[a:b]) for a, b in zip(starts, ends, strict=True)]
        values = [np.asarray(by_term.data[a:b]) * weight_of[c] for a, b, c in zip(starts, ends, columns, strict=True)]
        if not rows:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return np.concatenate(rows).astype(np.int64), np.concatenate(values)

    def scores(self, query: Compressed) -> np.ndarray:
        """Similarity of each paper to a 1-row query in term space (cosine when the query is
        L2-normalised), from the postings of the query's terms."""
        rows, values = self._postings(query, query.indices)
        return np.bincount(rows, weights=values, minlength=self.rows.shape[0]).astype(np.float32)

    def candidates(self, query: Compressed, count: int) -> np.ndarray:
        """Up to ``count`` rows likely to score highest against ``query``: from the query's
        ``CANDIDATE_TERMS`` heaviest terms, the ``count`` heaviest papers of each (impact-ordered
        postings: a common term's long list is never read whole), ranked by their share of the
        score. The caller scores candidates exactly with :meth:`row_scores`."""
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
        starts = self.rows.indptr[rows]
        lengths = self.rows.indptr[rows + 1] - starts  # not np.diff of all rows: a million papers
        return np.arange(lengths.sum()) + np.repeat(starts - np.cumsum(lengths) + lengths, lengths), lengths

    def row_scores(self, rows: np.ndarray, query: Compressed) -> np.ndarray:
        """Exact scores of the papers at ``rows`` (as :meth:`scores` gives them), their entries read
        straight from the memory-mapped matrix, summed row by row (each row's entries are one run)."""
        rows = np.asarray(rows, dtype=np.int64)
        scores = np.zeros(len(rows), dtype=np.float32)
        if query.shape[1] == 0 or not len(rows):
            return scores
        weights = np.zeros(query.shape[1], dtype=np.float32)
        weights[query.indices] = query.data
        positions, lengths = self._entries(rows)
        products = np.asarray(self.rows.data[positions]) * weights[self.rows.indices[positions]]
        used = lengths > 0  # reduceat would give an empty run the next run's first value
        if used.any():
            scores[used] = np.add.reduceat(products, (np.cumsum(lengths) - lengths)[used])
        return scores

    def weighted_rows(self, rows: list[int], weights: list[float]) -> Compressed:
        """The 1-row sum of the papers' term rows at ``rows``, each times its weight."""
        positions, lengths = self._entries(np.asarray(rows, dtype=np.int64))
        columns, where = np.unique(self.rows.indices[positions], return_inverse=True)
        values = np.bincount(where, np.asarray(self.rows.data[positions]) * np.repeat(weights, lengths))
        return Compressed(values.astype(np.float32), columns, np.array([0, len(columns)]), (1, self.rows.shape[1]))
