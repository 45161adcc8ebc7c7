"""CSV and TSV files, a row at a time, the first row naming the columns."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

from paperscope.errors import UserError
from paperscope.limits import MAX_ABSTRACT_CHARS


def _csv_lines(chunks) -> Iterator[str]:
    """Lines split as ``io.StringIO(newline="")`` splits them: at LF, CR LF and a lone CR."""
    for _, chunk in chunks:
        if "\r" in chunk:
            yield from (piece for piece in re.split(r"(?<=\r)(?!\n)", chunk) if piece)
        else:
            yield chunk


def read_delimited(path: Path, chunks, delimiter: str) -> Iterator[tuple[int, dict]]:
    """The rows of a CSV (``delimiter``: a comma) or TSV (a tab) file as (line, {column: value}), the first
    row naming the columns; blank rows skipped, a row of another length or a malformed one a UserError."""
    csv.field_size_limit(MAX_ABSTRACT_CHARS * 10)
    reader = csv.reader(_csv_lines(chunks), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise UserError(f"{path}:{reader.line_num}: {len(row)} fields where the header has {len(header)}")
            yield reader.line_num, dict(zip(header, row, strict=True))
    except csv.Error as exc:
        raise UserError(
            f"{path}:{reader.line_num}: malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})"
        ) from None
