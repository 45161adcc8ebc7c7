"""Parquet shards of embedded papers: what an engine (local or Ray) hands to the rest of a build.

A shard holds consecutive papers of the corpus, in corpus order: their metadata columns, the
number of word pieces of each embedded text (``tokens``) and the embedding (``vector``, a
fixed-size list of float32). Building the FAISS index, the map and the keyword index read the
shards back column by column, so no stage needs every abstract in memory at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from embed.corpus import OPTIONAL_FIELDS

STRING_COLUMNS = ["id", "title", "abstract", *[f for f in OPTIONAL_FIELDS if f != "year"], "source"]
PAPER_COLUMNS = ["id", "title", "title_derived", "abstract", *OPTIONAL_FIELDS, "source", "tokens"]
SHARD_ROWS = 20_000


def _schema(dimension: int) -> pa.Schema:
    types = {"title_derived": pa.bool_(), "year": pa.int64(), "tokens": pa.int64(),
             **{name: pa.string() for name in STRING_COLUMNS}}
    return pa.schema([(name, types[name]) for name in PAPER_COLUMNS] +
                     [("vector", pa.list_(pa.float32(), dimension))])


def write_shard(path: Path, papers: pd.DataFrame, vectors: np.ndarray) -> Path:
    """Write papers (``PAPER_COLUMNS``; missing optional fields become nulls) and their vectors."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    frame = papers.reindex(columns=PAPER_COLUMNS)
    for name in STRING_COLUMNS:
        frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    frame["year"] = pd.array(frame["year"], dtype="Int64")
    frame = frame.astype({"title_derived": bool, "tokens": np.int64})  # Ray hands over Arrow-backed dtypes
    schema = _schema(vectors.shape[1])
    table = pa.Table.from_pandas(frame, schema=schema.remove(schema.get_field_index("vector")), preserve_index=False)
    table = table.append_column("vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]))
    pq.write_table(table, path)
    del table
    pa.default_memory_pool().release_unused()  # else Arrow's allocator keeps ~100 MB a shard
    return path


def shard_lengths(shards: list[Path]) -> list[int]:
    """Papers in each shard (from the Parquet footers)."""
    return [pq.ParquetFile(path).metadata.num_rows for path in shards]


def read_columns(path: Path, columns: list[str]) -> pd.DataFrame:
    """Some columns of one shard."""
    return pq.read_table(path, columns=columns).to_pandas()


def read_vectors(path: Path) -> np.ndarray:
    """The (n, dimension) float32 vectors of one shard."""
    column = pq.read_table(path, columns=["vector"]).column("vector").combine_chunks()
    return column.values.to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)


def paper_tables(shards: list[Path], keep: list[str], extra: pd.DataFrame):
    """Each shard's papers as an Arrow table (with pandas metadata, so a nullable year stays an
    integer) of the ``keep`` columns, with the matching rows of ``extra`` (per-paper columns
    computed later, one row per paper of all shards) appended."""
    start = 0
    for path in shards:
        table = pq.read_table(path, columns=keep)
        frame = pd.concat([table.to_pandas(), extra.iloc[start: start + table.num_rows].reset_index(drop=True)], axis=1)
        schema = pa.schema(list(table.schema) + list(pa.Schema.from_pandas(extra, preserve_index=False)))
        start += table.num_rows
        yield pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
