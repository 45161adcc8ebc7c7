"""The plain-text sample format: an optional heading line naming the collection, then abstracts
separated by blank lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from paperscope.embed.text import normalise_text
from paperscope.errors import UserError


def read_text(path: Path, lines) -> Iterator[tuple[int, dict]]:
    """Blocks separated by blank lines; a first one-line block without a full stop is a heading."""
    heading, first, start = "", True, 1
    current: list[str] = []

    def block(start: int, lines: list[str]):
        nonlocal first, heading
        if first:
            first = False
            only = lines[0] if len(lines) == 1 else ""
            if only and len(only) <= 120 and not only.rstrip().endswith("."):
                heading = normalise_text(only)
                return None
        return (start, {"abstract": " ".join(lines), "venue": heading})

    found = False
    for number, line in lines:
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            if (row := block(start, current)) is not None:
                found = True
                yield row
            current = []
    if current and (row := block(start, current)) is not None:
        found = True
        yield row
    if not found:
        raise UserError(f"{path}: no abstracts after the heading line (abstracts are separated by blank lines)")
