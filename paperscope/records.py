"""Tables as JSON-ready records: what ``--json`` prints, what ``paperscope serve`` answers and
:meth:`Results.to_records <paperscope.index.search.results.Results.to_records>` gives."""

from __future__ import annotations

import math
from typing import Any

# A row as JSON: column -> value, the corpus's own columns included (so a dict, not a TypedDict)
Record = dict[str, Any]


def jsonable(value):
    """``value`` as a JSON value: numpy scalars as Python ones, NaN as null, anything else
    unknown (timestamps, dates, paths) as its text; lists and dicts are converted item by item."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):  # a recommendation's reason
        return {str(key): jsonable(item) for key, item in value.items()}
    return str(value)


def json_rows(table) -> list[Record]:
    """The rows of an Arrow table as a list of JSON-ready dicts (NaN as null), in order."""
    rows = table.to_pylist()
    for row in rows:
        for key, value in row.items():
            if type(value) is float:
                if value != value:
                    row[key] = None
            elif not (value is None or type(value) in (str, int, bool)):
                row[key] = jsonable(value)
    return rows


def records(frame) -> list[Record]:
    """The rows of a DataFrame as :func:`json_rows` gives them (missing values, NaN included, as null)."""
    import pyarrow as pa

    return json_rows(pa.Table.from_pandas(frame, preserve_index=False))
