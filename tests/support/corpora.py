"""Corpus files read whole into one DataFrame, for tests and benchmarks (a build reads them a file
at a time, through ``paperscope.embed.readers.admission.admitted_papers``)."""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from paperscope.embed.columns import OPTIONAL_FIELDS
from paperscope.embed.readers.admission import Admission, ReadReport, admitted_papers, filled_fields


def read_corpus(
    paths: list[str | Path], overrides: dict[str, str | None] | None = None
) -> tuple[pd.DataFrame, ReadReport]:
    """Read several corpus files into one DataFrame of papers, one row each, deduplicated, as a
    build admits them.

    Columns: ``id``, ``title``, ``title_derived`` (True when made from the abstract),
    ``abstract``, ``source`` (file:line), plus whichever of year, authors, venue, url,
    categories the files carry. Raises :class:`UserError` for unreadable input.
    """
    admission = Admission()
    frame = pd.DataFrame(list(admitted_papers(paths, overrides, admission)))
    admission.check_found(paths)
    filled = filled_fields(frame)
    frame = frame.drop(columns=[name for name in OPTIONAL_FIELDS if name not in filled])
    if "year" in frame:
        frame["year"] = frame["year"].astype("Int64")
    return frame, admission.report


@functools.cache
def sample_abstracts() -> list[str]:
    """The bundled NeurIPS 2025 sample's abstracts (38), the texts the local services' papers carry."""
    from paperscope import locations

    texts = [block.strip() for path in locations.bundled_corpus() for block in path.read_text().split("\n\n")]
    return [text for text in texts if len(text) > 200]
