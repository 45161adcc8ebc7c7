"""The keyword index's files in a generation folder: the sparse paper x term matrix by paper
(``keyword.csr.*.npy``) and by term (``keyword.csc.*.npy``), three plain ``.npy`` arrays each that
load memory-mapped, and the terms with their IDF and stop words (``keyword_terms.json``); no pickle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse

from paperscope.files import mapped_array
from paperscope.index.common.keyword import SETTINGS, KeywordIndex

PREFIX, TERMS_FILE = "keyword", "keyword_terms.json"
ARRAYS = ("data", "indices", "indptr")


def write_keyword(index: KeywordIndex, folder: Path) -> list[str]:
    """Write the matrix by paper and by term and the terms into ``folder``; returns the names written."""
    written = []
    for layout, matrix in (("csr", index.matrix), ("csc", index.by_term)):
        for array in ARRAYS:
            name = f"{PREFIX}.{layout}.{array}.npy"
            np.save(folder / name, np.asarray(getattr(matrix, array)), allow_pickle=False)
            written.append(name)
    stored = {
        "settings": SETTINGS,
        "shape": list(index.matrix.shape),
        "terms": index.terms,
        "idf": [float(value) for value in index.idf],
        "stop_words": sorted(index.stop_words),
    }
    (folder / TERMS_FILE).write_text(json.dumps(stored))
    return [*written, TERMS_FILE]


def read_keyword(folder: Path) -> KeywordIndex:
    """Read what :func:`write_keyword` wrote, the arrays memory-mapped (nothing is read whole)."""
    stored = json.loads((folder / TERMS_FILE).read_text())
    shape = tuple(stored["shape"])

    def matrix(layout: str, kind):
        data, indices, indptr = (mapped_array(folder / f"{PREFIX}.{layout}.{array}.npy") for array in ARRAYS)
        return kind((data, indices, indptr), shape=shape, copy=False)

    index = KeywordIndex(
        matrix("csr", scipy.sparse.csr_matrix),
        stored["terms"],
        np.array(stored["idf"], np.float32),
        stored["stop_words"],
    )
    index.__dict__["by_term"] = matrix("csc", scipy.sparse.csc_matrix)  # the cached property, read from its files
    return index
