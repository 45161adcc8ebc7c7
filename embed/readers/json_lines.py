"""Files of JSON lines (``.jsonl``, ``.ndjson``, the arXiv snapshot's ``.json``): an object a line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import orjson

from paperscope.errors import UserError


class JsonLines:
    """The records of JSON lines (``chunks``: ``Source.chunks()``'s (line, text) pairs), numbered as
    ``Source.lines`` numbers them from ``start``: a line is read by orjson (3x as fast as json); any
    line orjson refuses, or may read otherwise than json would (a whole number past 64 bits comes as
    a float), and any chunk holding another line break that ``str.splitlines`` splits at, is read as
    before, a line at a time, by json (its errors). ``number``: the last line read; ``pending``:
    whether lines of the chunk read last are still to come (else the rest of ``chunks`` is unread)."""

    def __init__(self, path: Path, chunks, start: int = 0):
        self.path = path
        self.chunks = chunks
        self.number = start
        self.pending = False

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        for _, chunk in self.chunks:
            if "\r" not in chunk and "\x85" not in chunk and "\u2028" not in chunk and "\u2029" not in chunk:
                try:
                    record = orjson.loads(chunk)
                except orjson.JSONDecodeError:
                    record = None
                if type(record) is dict and _exact(record):
                    self.number += 1
                    yield self.number, record
                    continue
            lines = chunk.splitlines() or [""]
            for index, line in enumerate(lines, start=1):
                self.number += 1
                self.pending = index < len(lines)
                yield from _read_json_line(self.path, self.number, line)
            self.pending = False


def line_count(chunk: str) -> int:
    """The lines :class:`JsonLines` numbers in one chunk (a JSON object is never more than one)."""
    return len(chunk.splitlines()) or 1


def _exact(value) -> bool:
    """Whether orjson read every number of ``value`` as json does: no float of 2**63 or more (orjson
    reads a whole number past 64 bits as one; json as an int)."""
    for item in value.values() if type(value) is dict else value:
        kind = type(item)
        if (kind is float and abs(item) >= 2**63) or ((kind is dict or kind is list) and not _exact(item)):
            return False
    return True


def _read_json_line(path: Path, number: int, line: str) -> Iterator[tuple[int, dict]]:
    """One JSON line read by json: the record, nothing for a blank line, else the error naming the line."""
    if line.strip():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise UserError(f"{path}:{number}: broken JSON line ({getattr(exc, 'msg', 'nested too deeply')})") from None
        if not isinstance(record, dict):
            raise UserError(f"{path}:{number}: expected a JSON object, found {type(record).__name__}")
        yield number, record
