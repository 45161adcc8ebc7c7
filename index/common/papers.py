"""The papers' metadata as stored: a memory-mapped Arrow table, read a few rows or columns at a time.

Ids are hashed once (0.3 s at a million papers) and then found in microseconds; rows are taken
record batch by record batch, so nothing reads every abstract.
"""

from __future__ import annotations

import difflib
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from paperscope.embed.columns import OPTIONAL_FIELDS, RESERVED, kind_of
from paperscope.errors import UnknownPaper, UserError, shown
from paperscope.locations import index_option

if TYPE_CHECKING:  # frame() alone makes a DataFrame: a lookup loads no pandas
    import pandas as pd

CLOSE_IDS_UP_TO = 100_000  # papers; above this an unknown id is not compared with every id
# An arXiv id with its version (new and old style): the paper of the id without it, when the index has no such id
VERSIONED = re.compile(r"(\d{4}\.\d{4,5}|[a-z][a-z.-]*/\d{7})v\d+", re.IGNORECASE)


def arrow_numbers(values: np.ndarray) -> pa.Array:
    """A NumPy array of numbers as an Arrow array over the same memory: what ``pa.array`` makes,
    without ``pa.array``'s check for a pandas Series, which imports pandas (0.4 s of a lookup)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def as_numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A column as a NumPy array, numbers as such and anything else as Python objects (text: str,
    null: None), without Arrow's conversion to NumPy, which imports pandas (0.35 s of the app's first
    page); a column of numbers with nulls is converted by Arrow (nulls: NaN)."""
    numbers = pa.types.is_integer(column.type) or pa.types.is_floating(column.type)
    if not numbers:
        return np.asarray(column.to_pylist(), dtype=object)
    if column.null_count:
        return column.to_numpy(zero_copy_only=False)
    dtype = np.dtype(column.type.to_pandas_dtype())
    parts = [
        np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
        for chunk in column.chunks
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


class PaperTable:
    """Rows of the papers' table by id, and columns of it, without decoding it whole."""

    def __init__(self, table: pa.Table, folder: Path):
        self.table = table
        self.folder = folder

    def __len__(self) -> int:
        return self.table.num_rows

    @cached_property
    def _row_of(self) -> dict[str, int]:
        """Each id's row: a dict, not a pandas Index (pandas costs a lookup 0.4 s to import)."""
        ids = self.table.column("id").to_pylist()
        return dict(zip(ids, range(len(ids)), strict=True))

    def rows(self, paper_ids: list[str]) -> np.ndarray:
        """Row numbers of ``paper_ids``; an unknown id raises :class:`UnknownPaper` suggesting close
        ids or titles."""
        paper_ids = [str(paper_id).strip() for paper_id in paper_ids]
        found = np.array([self._row(paper_id) for paper_id in paper_ids], dtype=np.int64)
        if (found < 0).any():
            raise self.unknown(paper_ids[int(np.flatnonzero(found < 0)[0])])
        return found

    def _row(self, paper_id: str) -> int:
        """The row of ``paper_id``, or of the arXiv id it is with a version (``2501.00001v2``) when
        the table holds no such id but the id without it (as a fetch writes them); else -1."""
        row = self._row_of.get(paper_id, -1)
        if row < 0 and (versioned := VERSIONED.fullmatch(paper_id)):
            return self._row_of.get(versioned.group(1), -1)
        return row

    def known(self, paper_ids: list[str]) -> list[str]:
        """Those of ``paper_ids`` that are papers of the table (arXiv ids with a version too), in their order."""
        paper_ids = [str(paper_id).strip() for paper_id in paper_ids]
        return [paper_id for paper_id in paper_ids if self._row(paper_id) >= 0]

    def unknown(self, paper_id: str) -> UnknownPaper:
        """The error for an unknown id, with close ids and titles containing it as suggestions."""
        ids = self.table.column("id")
        close = []
        if len(ids) <= CLOSE_IDS_UP_TO:
            close = difflib.get_close_matches(paper_id, ids.to_pylist(), n=3, cutoff=0.6)
        import pyarrow.compute as pc  # here and in values(): a lookup loads none of it (0.05 s)

        in_title = pc.match_substring(self.table.column("title"), paper_id, ignore_case=True)
        by_title = pc.filter(ids, in_title).slice(0, 3).to_pylist() if paper_id else []
        suggestions = list(dict.fromkeys(close + by_title))
        if not suggestions:
            return UnknownPaper(
                f"no paper with id '{shown(paper_id)}' in {self.folder}; "
                f"`paperscope search TEXT{index_option(self.folder)}` finds papers by text"
            )
        named = self.take(self.rows(suggestions), ["id", "title"]).to_pylist()
        listed = ", ".join(f"{paper['id']} ({paper['title'][:50]})" for paper in named)
        return UnknownPaper(f"no paper with id '{shown(paper_id)}' in {self.folder}; did you mean {listed}?")

    def take(self, rows, columns: list[str] | None = None) -> pa.Table:
        """The papers at ``rows``, in that order, as an Arrow table (all columns, or ``columns``),
        decoded from the memory-mapped table record batch by record batch (Arrow's ``take`` on the
        whole table would first join every batch of every column: a copy of all abstracts)."""
        rows = np.asarray(rows, dtype=np.int64)
        batch_of = np.searchsorted(self._batch_starts, rows, side="right") - 1
        parts, order = [], []
        for batch in np.unique(batch_of):
            chosen = np.flatnonzero(batch_of == batch)
            record_batch = self._batches[batch] if columns is None else self._batches[batch].select(columns)
            parts.append(record_batch.take(arrow_numbers(rows[chosen] - self._batch_starts[batch])))
            order.append(chosen)
        if not parts:  # no rows (a first page asks the titles of none): a slice, as schema.empty_table() imports pandas
            return (self.table if columns is None else self.table.select(columns)).slice(0, 0)
        taken = pa.Table.from_batches(parts)
        if len(parts) == 1:  # one batch: taken in the order asked
            return taken
        return taken.take(arrow_numbers(np.argsort(np.concatenate(order), kind="stable")))

    @cached_property
    def _batches(self) -> list[pa.RecordBatch]:
        return self.table.to_batches()

    @cached_property
    def _batch_starts(self) -> np.ndarray:
        return np.cumsum([0] + [batch.num_rows for batch in self._batches])[:-1]

    def has(self, name: str) -> bool:
        """Whether the papers have the field ``name``."""
        return name in self.table.column_names

    def corpus_columns(self) -> dict[str, str]:
        """The corpus's metadata columns, name → kind ("text", "number", "date" or "list": see
        ``embed.columns``), in the table's order: the optional fields the corpus fills (year,
        authors, venue…) and the corpus's own columns; never the index's (x, cluster…)."""
        kinds = {}
        for item in self.table.schema:
            if item.name in OPTIONAL_FIELDS or item.name not in RESERVED:
                kind = kind_of(item.type)
                if kind:
                    kinds[item.name] = kind
        return kinds

    def column(self, name: str) -> pa.ChunkedArray:
        """One field of every paper (Arrow, memory-mapped); a UserError when the papers lack it."""
        if not self.has(name):
            raise UserError(f"the papers of {self.folder} have no '{name}' field")
        return self.table.column(name)

    def values(self, name: str) -> list:
        """The distinct values of a field, sorted, without nulls ([] when the papers lack it)."""
        if not self.has(name):
            return []
        import pyarrow.compute as pc

        return sorted(value for value in pc.unique(self.table.column(name)).to_pylist() if value is not None)

    def frame(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Every paper's fields (or ``columns``) decoded into a DataFrame."""
        return (self.table if columns is None else self.table.select(columns)).to_pandas()
