"""Corpus files as streams: bytes, then text a line at a time, with memory independent of the file's size.

A ``.gz`` file (recognised by its first bytes) is decompressed as it is read, its output counted
against the compression-bomb guard (``limits.GZIP_MAX_RATIO`` once past
``limits.GZIP_RATIO_FROM_BYTES``): a file that expands more is refused in one line naming it.
The formats read whole (BibTeX, RIS, CSL-JSON, a JSON object, UTF-16 text) take at most
``limits.WHOLE_FILE_MAX_BYTES`` decompressed bytes. Lines are checked as they come: UTF-8
(a byte-order mark dropped), no NUL bytes, none over ``limits.MAX_LINE_BYTES``; the errors name
the file and line as a whole-file read would.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from paperscope.errors import UserError
from paperscope.limits import GZIP_MAX_RATIO, GZIP_RATIO_FROM_BYTES, MAX_LINE_BYTES, WHOLE_FILE_MAX_BYTES

GZIP_MAGIC = b"\x1f\x8b"
BUFFER_BYTES = 1024 * 1024  # the decompressed bytes buffered ahead of the readers
UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


class _Counting(io.RawIOBase):
    """A file read through, counting the bytes read (``count``); seekable when the file is (Parquet seeks)."""

    def __init__(self, raw):
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def readinto(self, buffer) -> int:
        read = self.raw.readinto(buffer)
        self.count += read or 0
        return read

    def close(self) -> None:
        self.raw.close()
        super().close()


class _Inflating(io.RawIOBase):
    """A gzip file's decompressed bytes, counted: more than ``GZIP_MAX_RATIO`` times the compressed
    bytes read so far, once past ``GZIP_RATIO_FROM_BYTES``, is a UserError (a compression bomb)."""

    def __init__(self, path: Path, compressed: _Counting):
        self.path = path
        self.compressed = compressed
        self.gzip = gzip.GzipFile(fileobj=compressed, mode="rb")
        self.out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            read = self.gzip.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:
            raise UserError(f"{self.path}: broken gzip data ({exc})") from None
        self.out += read
        read_in = self.compressed.count  # compressed bytes decompressed so far
        if self.out > GZIP_RATIO_FROM_BYTES and self.out > GZIP_MAX_RATIO * max(read_in, 1):
            raise UserError(
                f"{self.path}: expands more than {GZIP_MAX_RATIO} times ({read_in:,} compressed bytes "
                f"gave {self.out:,}; a compression bomb?); decompress it yourself and pass the file if it is real"
            )
        return read

    def close(self) -> None:
        self.gzip.close()
        super().close()


class Source:
    """One corpus file open for reading: ``stream`` gives its decompressed bytes (buffered),
    ``consumed()`` the bytes of the file on disk read so far (for progress). A context manager."""

    def __init__(self, path: Path):
        self.path = path
        if path.is_dir():
            raise UserError(f"{path}: is a directory; pass the corpus files inside it")
        if not path.exists():
            raise UserError(f"{path}: no such file")
        self.disk = _Counting(open(path, "rb", buffering=0))  # noqa: SIM115 (closed by close())
        self.inflating: _Inflating | None = None  # the gzip stream, for a compressed file
        # a named pipe too: peeked, never rewound
        self.stream: io.BufferedReader = io.BufferedReader(self.disk, BUFFER_BYTES)
        self.compressed = self.stream.peek(2)[:2] == GZIP_MAGIC
        if self.compressed:  # the compressed bytes counted as gzip takes them (8 KiB at a time), not as buffered
            self.inflating = _Inflating(path, _Counting(self.stream))
            self.stream = io.BufferedReader(self.inflating, BUFFER_BYTES)

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (GzipFile leaves the file it was given open)."""
        self.stream.close()
        self.disk.close()

    def consumed(self) -> int:
        """Bytes of the file on disk read so far."""
        return self.disk.count

    def decompressed(self) -> int:
        """Decompressed bytes read from the file so far (some of them buffered, not yet read)."""
        return self.inflating.out if self.inflating is not None else self.disk.count

    def seekable(self) -> bool:
        """Whether the file on disk can be read out of order (Parquet): not when compressed, nor a pipe."""
        return not self.compressed and self.disk.seekable()

    def head(self, size: int = 64) -> bytes:
        """The first ``size`` decompressed bytes (or fewer), not consumed."""
        return self.stream.peek(size)[:size]

    def read_all(self) -> bytes:
        """Every decompressed byte, for a format read whole: at most ``WHOLE_FILE_MAX_BYTES``."""
        pieces, size = [], 0
        while size <= WHOLE_FILE_MAX_BYTES and (piece := self.stream.read(BUFFER_BYTES)):
            pieces.append(piece)
            size += len(piece)
        data = b"".join(pieces)
        if size > WHOLE_FILE_MAX_BYTES:
            raise UserError(
                f"{self.path}: larger than {WHOLE_FILE_MAX_BYTES // 1024**3} GiB (decompressed), too big for a "
                "format read whole (BibTeX, RIS, CSL-JSON, a JSON object, UTF-16 text); split it into several files"
            )
        if not data.strip():
            raise UserError(f"{self.path}: the file is empty")
        return data

    def chunks(self) -> Iterator[tuple[int, str]]:
        """The text as ``(line number, line with its ending)``, lines split at ``\\n`` only; UTF-8
        checked line by line (UTF-16 with a byte-order mark is read whole); "the file is empty" when
        nothing but white space came."""
        if self.head(2).startswith(UTF16_MARKS):
            text = decode(self.path, self.read_all())
            yield from enumerate((piece for piece in re.split(r"(?<=\n)", text) if piece), start=1)
            return
        window = self.head(BUFFER_BYTES)  # binary data is named so before any text error in it
        if b"\x00" in window:
            _decode_line(self.path, window[: window.index(b"\x00")].count(b"\n") + 1, b"\x00")
        seen, number = False, 0
        while line := self.stream.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise UserError(
                    f"{self.path}:{number}: a line longer than {MAX_LINE_BYTES // 1024**2} MiB; "
                    "this is not a corpus of abstracts (one record a line, or CSV rows)"
                )
            if number == 1:
                line = line.removeprefix(b"\xef\xbb\xbf")
            text = _decode_line(self.path, number, line)
            seen = seen or bool(text.strip())
            yield number, text
        if not seen:
            raise UserError(f"{self.path}: the file is empty")

    def lines(self) -> Iterator[tuple[int, str]]:
        """The text as ``(line number, line)`` without endings, numbered as ``str.splitlines`` numbers them."""
        number = 0
        for _, chunk in self.chunks():
            for line in chunk.splitlines() or [""]:
                number += 1
                yield number, line


LIBRARY_SUFFIXES = {".bib": "BibTeX", ".bibtex": "BibTeX", ".ris": "RIS"}  # named in the errors of their files


def _not_text(path: Path, line: int, byte: int | None) -> UserError:
    """The error for a file that is not UTF-8 text at ``line``: NUL bytes (``byte`` None) or
    ``byte``; the advice fits the file: a library export (by its suffix) or a corpus."""
    why = "binary data (NUL bytes)" if byte is None else f"not UTF-8 text (byte 0x{byte:02x})"
    suffixes = [suffix.lower() for suffix in path.suffixes if suffix.lower() != ".gz"]
    library = LIBRARY_SUFFIXES.get(suffixes[-1] if suffixes else "")
    if library:
        damaged = f", not {library} text (damaged, or another kind named {suffixes[-1]}?)" if byte is None else ""
        return UserError(f"{path}:{line}: {why}{damaged}; export the library again as {library} in UTF-8")
    if byte is None:
        return UserError(f"{path}:{line}: {why}, not a text corpus; pass CSV, TSV, JSON, JSONL, TXT or Parquet")
    return UserError(f"{path}:{line}: {why}; save it as UTF-8 or pass a CSV/JSON/Parquet file")


def _decode_line(path: Path, number: int, line: bytes) -> str:
    if b"\x00" in line:
        raise _not_text(path, number, None)
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_text(path, number, line[exc.start]) from None


def decode(path: Path, data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) text of a file read whole; binary data and other
    encodings are refused, naming the line."""
    utf16 = data.startswith(UTF16_MARKS)
    if not utf16 and b"\x00" in data:
        raise _not_text(path, data[: data.index(b"\x00")].count(b"\n") + 1, None)
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_text(path, data[: exc.start].count(b"\n") + 1, data[exc.start]) from None
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise UserError(f"{path}:{line}: NUL character in text; this looks like a binary file, not a corpus")
    return text
