"""A large file of JSON lines mapped by several forked processes, a block of lines each, in order."""

from __future__ import annotations

import datetime
import multiprocessing
import signal
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import orjson

from paperscope.embed.readers.json_lines import JsonLines, line_count
from paperscope.embed.readers.mapping import Reading, map_rows
from paperscope.limits import READ_BLOCK_CHARS

# What map_rows maps a file's records by: its mapping of fields, own columns and links
Plan = tuple[dict, dict, list]


def parallel_mapping(path: Path, rows: JsonLines, plan: Plan, reading: Reading) -> Iterator[dict]:
    """The records of the rest of ``rows`` (JSON lines after its head) mapped as :func:`map_rows` maps
    them (``plan``: its mapping, own columns and links), by ``reading.workers`` processes a block of
    lines each, in order: this process reads the lines and hands them over (up to two blocks a
    process ahead); the first error is raised where the file's reading would have raised it."""
    # forked: a spawned process would run the caller's script again (one without a __main__ guard
    # builds anew); they run nothing but this module's mapping, no lock of the caller's threads
    context = multiprocessing.get_context("fork")
    start, pending = rows.number, deque[Future]()
    with ProcessPoolExecutor(reading.workers, mp_context=context, initializer=_reading_process) as pool:
        try:
            for block in _blocks(rows.chunks):
                pending.append(pool.submit(_map_block, path, start, block, plan, reading))
                start += sum(map(line_count, block))
                while len(pending) > 2 * reading.workers or (pending and pending[0].done()):
                    yield from _block_records(pending.popleft(), reading)
            while pending:
                yield from _block_records(pending.popleft(), reading)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _blocks(chunks) -> Iterator[list[str]]:
    """``chunks`` (``Source.chunks()``'s pairs) as lists of lines of about READ_BLOCK_CHARS."""
    block, size = [], 0
    for _, chunk in chunks:
        block.append(chunk)
        size += len(chunk)
        if size >= READ_BLOCK_CHARS:
            yield block
            block, size = [], 0
    if block:
        yield block


def _reading_process() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the build, which stops its readers


def _map_block(path: Path, start: int, block: list[str], plan: Plan, reading: Reading) -> tuple[bytes | list, int]:
    """In a reading process: the records of ``block`` (the lines after line ``start``) that meet the
    conditions of ``reading``, as JSON (a third of pickle's cost each way; as they are when a number
    does not fit 64 bits), and how many they left out."""
    reading.left_out = 0
    lines = JsonLines(path, enumerate(block), start)
    records = [record for record in map_rows(path, lines, *plan, reading) if record is not None]
    try:
        return orjson.dumps(records), reading.left_out
    except orjson.JSONEncodeError:
        return records, reading.left_out


def _block_records(done: Future, reading: Reading) -> list[dict]:
    """The records of a block :func:`_map_block` mapped: own columns of dates as dates again."""
    records, left_out = done.result()
    reading.left_out += left_out
    if isinstance(records, list):
        return records
    records = orjson.loads(records)
    dates = [name for name, kind in reading.columns.kinds.items() if kind == "date"]
    for record in records:
        extra = record["extra"]
        for name in dates:
            if extra.get(name) is not None:
                extra[name] = datetime.date.fromisoformat(extra[name])
    return records
