"""Parquet files, a batch of rows at a time."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

from paperscope.embed import streams
from paperscope.errors import UserError
from paperscope.limits import PARQUET_BATCH_ROWS


def read_parquet(path: Path, source: streams.Source) -> Iterator[tuple[int, dict]]:
    """A Parquet file a batch of rows at a time (``PARQUET_BATCH_ROWS``, within its row groups);
    a ``.parquet.gz`` (or a named pipe) is copied to a temporary file first (Parquet needs to seek)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with nullcontext() if source.seekable() else tempfile.TemporaryFile() as copy:
        if copy is not None:
            shutil.copyfileobj(source.stream, copy, streams.BUFFER_BYTES)
            copy.seek(0)
        number = 0
        try:
            parquet = pq.ParquetFile(copy if copy is not None else source.disk, pre_buffer=False)
            # a row group at a time, none read ahead
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                for record in batch.to_pylist():
                    number += 1
                    yield number, record
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise UserError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
