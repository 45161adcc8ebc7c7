"""The keyword index's files in a generation folder: the sparse paper x term matrix by paper
(``keyword.csr.*.npy``) and by term (``keyword.csc.*.npy``), three plain ``.npy`` arrays each that
load memory-mapped, and the terms with their IDF and stop words (``keyword_terms.json``); no pickle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paperscope.files import mapped_array
from paperscope.index.common.keyword import SETTINGS, Compressed, KeywordIndex

PREFIX, TERMS_FILE = "keyword", "keyword_terms.json"
ARRAYS = ("data", "indices", "indptr")


def write_keyword(index: KeywordIndex, folder: Path) -> list[str]:
    """Write the matrix by paper and by term and the terms into ``folder``; returns the names written."""
    written = []
    for layout, matrix in (("csr", index.rows), ("csc", index.postings)):
        for array in ARRAYS:
            name = f"{PREFIX}.{layout}.{array}.npy"
            np.save(folder / name, np.asarray(getattr(matrix, array)), allow_pickle=False)
            written.append(name)
    stored = {
        "settings": SETTINGS,
        "shape": list(index.rows.shape),
        "terms": index.terms,
        "idf": [float(value) for value in index.idf],
        "stop_words": sorted(index.stop_words),
    }
    (folder / TERMS_FILE).write_text(json.dumps(stored))
    return [*written, TERMS_FILE]


def read_keyword(folder: Path) -> KeywordIndex:
    """Read what :func:`write_keyword` wrote, the arrays memory-mapped (nothing is read whole, and
    scipy is not imported: a query reads the arrays)."""
    stored = json.loads((folder / TERMS_FILE).read_text())
    shape = tuple(stored["shape"])

    def matrix(layout: str) -> Compressed:
        data, indices, indptr = (mapped_array(folder / f"{PREFIX}.{layout}.{array}.npy") for array in ARRAYS)
        return Compressed(data, indices, indptr, shape)

    terms, idf = stored["terms"], np.array(stored["idf"], np.float32)
    return KeywordIndex(matrix("csr"), terms, idf, stored["stop_words"], postings=matrix("csc"))
