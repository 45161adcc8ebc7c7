"""JSON documents: a list of records streamed item by item, or an object holding the list read whole."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from paperscope.embed import library, streams
from paperscope.errors import UserError
from paperscope.limits import MAX_LINE_BYTES


def read_json(path: Path, source: streams.Source) -> Iterator[tuple[int, dict]]:
    """A JSON list streamed item by item (:func:`_json_items`); any other JSON (an object holding the
    list) read whole. (A file of JSON objects a line each is read as JSON lines: :func:`_rows`.)
    An error while streaming names the line it is on, the file never read again."""
    head = source.head(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if not head.startswith(b"[") or source.head(2).startswith(streams.UTF16_MARKS):
        yield from _read_json_text(path, streams.decode(path, source.read_all()))  # nothing read yet: all of it
        return
    try:
        yield from enumerate(_json_items(source), start=1)
    except _BrokenJson as broken:
        where, reason = broken.args
        raise UserError(f"{path}:{where}: {reason}") from None


def _read_json_text(path: Path, text: str) -> list[tuple[int, dict]]:
    """A JSON document read whole: a list of records, or an object holding one."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(f"{path}{where}: broken JSON ({getattr(exc, 'msg', 'nested too deeply')})") from None
    if isinstance(data, dict):  # {"papers": [...]}, {"meta": …, "results": [...], "group_by": []} and the like
        lists = [value for value in data.values() if isinstance(value, list)]
        if len(lists) > 1 and sum(bool(value) for value in lists) == 1:  # the others empty: an API's page
            lists = [value for value in lists if value and all(isinstance(item, dict) for item in value)] or lists
        data = lists[0] if len(lists) == 1 else [data]
    if not isinstance(data, list):
        line = text[: len(text) - len(text.lstrip())].count("\n") + 1
        raise UserError(
            f"{path}:{line}: expected a JSON list of paper records (CSL-JSON too is a list of items), "
            f"found {type(data).__name__}"
        )
    bad = next((i for i, record in enumerate(data) if not isinstance(record, dict)), None)
    if bad is not None:
        lines = library.json_item_lines(text)
        where = f":{lines[bad]}" if lines and len(lines) == len(data) else ""
        raise UserError(f"{path}{where}: record {bad + 1} is a {type(data[bad]).__name__}, not a JSON object")
    return [(i + 1, record) for i, record in enumerate(data)]


class _BrokenJson(Exception):
    """A JSON list that does not read: (line, what is wrong)."""


_SPACE = re.compile(r"[ \t\n\r]*")


JSON_READ_CHARS = 1024 * 1024  # characters of a JSON list decoded at a time


@dataclass
class _Cursor:
    """Where :func:`_json_items` is: the text read and not yet decoded, from ``start``; the line
    ``start`` is on; whether the source is at its end."""

    buffer: str = ""
    start: int = 0
    line: int = 1
    done: bool = False


def _json_items(source: streams.Source) -> Iterator[dict]:
    """The objects of a top-level JSON list, each decoded by json's own decoder (``raw_decode``) as
    its text arrives, so a record reads as ``json.loads`` reads it; anything else is _BrokenJson."""
    decoder, chunks = json.JSONDecoder(), source.chunks()
    state = _Cursor()

    def fill(least: int) -> bool:
        buffer = state.buffer[state.start :]
        pieces, size = [buffer], len(buffer)
        for _, chunk in chunks:
            pieces.append(chunk)
            size += len(chunk)
            if size >= least:
                break
        else:
            state.done = True
        state.buffer, state.start = "".join(pieces), 0
        return size > len(buffer)

    def next_char() -> str:
        while True:
            buffer, start = state.buffer, state.start
            space = _SPACE.match(buffer, start)  # it always matches, if only the empty string
            end = space.end() if space else start
            state.line += buffer.count("\n", start, end)
            state.start = end
            if end < len(buffer):
                return buffer[end]
            if state.done or not fill(JSON_READ_CHARS):
                return ""

    def broken(reason: str, at: int | None = None) -> _BrokenJson:
        """The error at the buffer's position ``at`` (default: where the next record starts)."""
        lines = state.buffer.count("\n", state.start, at) if at is not None else 0
        return _BrokenJson(state.line + lines, f"broken JSON ({reason})")

    if next_char() != "[":
        raise broken("not a JSON list")
    state.start += 1
    closing, count = next_char() == "]", 0
    while not closing:
        while True:
            try:
                item, end = decoder.raw_decode(state.buffer, state.start)
                break
            except RecursionError:
                raise broken("nested too deeply") from None
            except json.JSONDecodeError as exc:
                pending = len(state.buffer) - state.start
                if state.done or pending > MAX_LINE_BYTES or not fill(2 * pending + JSON_READ_CHARS):
                    raise broken(exc.msg, exc.pos) from None
        count += 1
        if not isinstance(item, dict):
            raise _BrokenJson(state.line, f"record {count} is a {type(item).__name__}, not a JSON object")
        yield item
        state.line += state.buffer.count("\n", state.start, end)
        state.start = end
        following = next_char()
        state.start += 1
        if following == ",":
            next_char()
        elif following == "]":
            closing = True
        else:
            raise broken("expected , or ] after a record")
    if next_char():
        raise broken("extra data after the list")
