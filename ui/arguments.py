"""The kinds of value the command line's options take: argparse ``type=`` functions that check a
value as it is parsed, before any work starts, so that a mistake is one line naming the option.

Each carries its ``kind`` (``"number"``, ``"file"``, ``"index"``, ``"output file"``…), read by
``tests/cli/test_arguments.py`` to try the wrong values of that kind on every option of every command:
an option given one of these is covered without a test of its own. Two options that go together
are declared with :func:`needs` and checked after parsing by :func:`check_pairs`; an output that
exists is refused unless ``--force`` by :func:`check_outputs` (where the command has ``--force``).
Nothing heavy is imported here: ``--help`` imports neither numpy nor the model.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from paperscope.errors import UserError, shown

T = TypeVar("T")
MAX_COUNT = 10**9  # the ceiling of any count a user gives (papers, workers, lines): past it a number is a typo
MAX_TEXT_CHARS = 1_000  # a name, an id, a column or a condition (a query's limit is its own)


def of_kind(kind: str) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Mark an option type function with its ``kind`` (the classes below say theirs as a class attribute)."""

    def mark(check: Callable[[str], T]) -> Callable[[str], T]:
        vars(check)["kind"] = kind
        return check

    return mark


def _refuse(message: str):
    return argparse.ArgumentTypeError(message)


def _readable(text: str) -> str:
    """The text as given, refused when empty or not UTF-8 (a name in another encoding: surrogates)."""
    if not text.strip():
        raise _refuse("empty; give a value")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(f"'{shown(text)}' is not UTF-8 text") from None
    if "\0" in text:
        raise _refuse(f"'{shown(text)}' holds a NUL character")
    return text


@dataclass(frozen=True)
class Whole:
    """A whole number from ``low`` to ``high``."""

    low: int
    high: int = MAX_COUNT
    kind = "number"

    def __call__(self, text: str) -> int:
        try:
            value = int(_readable(text).strip())
        except ValueError:
            raise _refuse(f"'{shown(text)}' is not a whole number") from None
        if not self.low <= value <= self.high:
            raise _refuse(f"must be a whole number from {self.low} to {self.high:,}, got {value}")
        return value


@dataclass(frozen=True)
class Fraction:
    """A number above ``low`` and below ``high`` (or at it, when ``high_included``)."""

    low: float
    high: float
    high_included: bool = True
    kind = "fraction"

    def __call__(self, text: str) -> float:
        try:
            value = float(_readable(text).strip())
        except ValueError:
            raise _refuse(f"'{shown(text)}' is not a number") from None
        below = value <= self.high if self.high_included else value < self.high
        if math.isnan(value) or not (value > self.low and below):
            end = "]" if self.high_included else ")"
            raise _refuse(f"must be in ({self.low:g}, {self.high:g}{end}, got {shown(text)}")
        return value


@dataclass(frozen=True)
class Text:
    """Text of 1 to ``most`` characters, UTF-8, on one line unless ``lines``."""

    most: int = MAX_TEXT_CHARS
    lines: bool = False
    kind = "text"

    def __call__(self, text: str) -> str:
        _readable(text)
        if len(text) > self.most:
            raise _refuse(f"{len(text):,} characters; at most {self.most:,}")
        if not self.lines and ("\n" in text or "\r" in text):
            raise _refuse(f"'{shown(text)}' spans lines; give it on one line")
        return text


def _path(text: str) -> Path:
    return Path(_readable(text))


@of_kind("file")
def existing_file(text: str) -> str:
    """A file that exists (a corpus, a token file, a backup), or a named pipe (``<(zcat …)``)."""
    path = _path(text)
    if path.is_dir():
        raise _refuse(f"{text} is a folder; give a file")
    if not path.exists():
        raise _refuse(f"{text}: no such file")
    if not os.access(path, os.R_OK):
        raise _refuse(f"{text}: not readable (permission denied)")
    return text


@of_kind("folder")
def existing_folder(text: str) -> str:
    """A folder that exists (a model's)."""
    path = _path(text)
    if path.exists() and not path.is_dir():
        raise _refuse(f"{text} is a file; give a folder")
    if not path.is_dir():
        raise _refuse(f"{text}: no such folder")
    return text


@of_kind("index")
def index_folder(text: str) -> str:
    """An index folder: not a file (a missing one is the load's to tell, with how to build one)."""
    if _path(text).exists() and not Path(text).is_dir():
        raise _refuse(f"{text} is a file, not an index folder; build one with: paperscope build YOUR_FILES -o DIR")
    return text


def _writable_place(path: Path, text: str) -> None:
    """Refuse a path whose nearest existing folder is a file or cannot be written to: tried with a
    folder made and removed at once (permissions say yes to root, where /proc or a read-only
    mount still refuse)."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise _refuse(f"{text}: {parent} is a file, not a folder")
    try:
        tempfile.TemporaryDirectory(dir=parent, prefix=".paperscope-probe-").cleanup()
    except OSError as exc:
        raise _refuse(f"{text}: cannot write in {parent} ({(exc.strerror or str(exc)).lower()})") from None


@dataclass(frozen=True)
class OutputFile:
    """A file to write, with one of ``suffixes`` (none: any): not a folder, in a place that can be
    written to. Whether it may replace an existing file is :func:`check_outputs`'s."""

    suffixes: tuple[str, ...] = ()
    kind = "output file"

    def __call__(self, text: str) -> str:
        path = _path(text)
        if self.suffixes and path.suffix.lower() not in self.suffixes:
            endings = (
                f"{', '.join(self.suffixes[:-1])} or {self.suffixes[-1]}"
                if len(self.suffixes) > 1
                else self.suffixes[0]
            )
            raise _refuse(f"{text}: give a file name ending in {endings}")
        if path.is_dir():
            raise _refuse(f"{text} is a folder; give a file name")
        _writable_place(path, text)
        return text


@of_kind("output folder")
def output_folder(text: str) -> str:
    """A folder to write an index into: not a file, in a place that can be written to."""
    path = _path(text)
    if path.exists() and not path.is_dir():
        raise _refuse(f"{text} is a file; give a folder for the index")
    _writable_place(path / "index", text)
    return text


@of_kind("date")
def date(text: str) -> str:
    """A date or time, ISO 8601 (2026-12-01, 2026-12-01T08:00)."""
    try:
        datetime.datetime.fromisoformat(_readable(text).strip())
    except ValueError:
        raise _refuse(f"'{shown(text)}' is not a date: give YYYY-MM-DD (or an ISO 8601 time)") from None
    return text


@of_kind("date")
def day(text: str) -> str:
    """A day, YYYY-MM-DD (what OAI-PMH's date granularity takes)."""
    try:
        datetime.date.fromisoformat(_readable(text).strip())
        if len(text.strip()) != 10:
            raise ValueError(text)
    except ValueError:
        raise _refuse(f"'{shown(text)}' is not a day: give YYYY-MM-DD") from None
    return text.strip()


@of_kind("url")
def url(text: str) -> str:
    """An http:// or https:// address with a host (a service's endpoint), kept without a trailing /."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(_readable(text).strip())
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or " " in text.strip():
        raise _refuse(f"'{shown(text)}' is not an http:// or https:// address")
    return text.strip().rstrip("/")


@of_kind("condition")
def condition(text: str) -> str:
    """A condition on a column: ``COLUMN OPERATOR VALUE`` (``embed.conditions``), kept as written."""
    from paperscope.embed.conditions import parse

    try:
        parse(_readable(text))
    except UserError as exc:
        raise _refuse(str(exc)) from None
    return text


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the fix, not a usage dump; and the parser
    says what it holds: ``options`` (every action, in order), ``exclusive`` (the groups of options
    that exclude each other) and ``commands`` (its subcommands' action, or None)."""

    def __init__(self, *args, **kwargs) -> None:
        self.options: list[argparse.Action] = []  # before argparse's own --help is added
        self.exclusive: list[list[argparse.Action]] = []
        self.commands: Any = None  # add_subparsers' action (argparse's _SubParsersAction: private), or None
        super().__init__(*args, **kwargs)

    def error(self, message):
        """Raise the mistake as one line (argparse prints the usage and exits)."""
        raise UserError(f"{message} (see: {self.prog} --help)")

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        """argparse's, recorded in ``options``."""
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def add_mutually_exclusive_group(self, **kwargs):
        """argparse's, its options recorded in ``options`` and together in ``exclusive``."""
        group, members = super().add_mutually_exclusive_group(**kwargs), []
        add = group.add_argument

        def recorded(*args, **kwargs) -> argparse.Action:
            action = add(*args, **kwargs)
            self.options.append(action)
            members.append(action)
            return action

        group.add_argument = recorded  # type: ignore[method-assign]  # record what the group adds, as add_argument does
        self.exclusive.append(members)
        return group

    def add_subparsers(self, **kwargs):
        """argparse's, kept as ``commands`` (its ``choices``: each subcommand's parser)."""
        self.commands = super().add_subparsers(**kwargs)
        return self.commands


def needs(action: argparse.Action, other: str, value=None) -> argparse.Action:
    """Declare that ``action``'s option goes only with option ``other`` (with ``value``, when given):
    :func:`check_pairs` refuses it alone. Returns the action."""
    vars(action)["needs"] = (other, value)
    return action


def check_pairs(args: argparse.Namespace, parser: Parser) -> None:
    """A UserError for an option given without the one it needs (:func:`needs`)."""
    for action in parser.options:
        if not hasattr(action, "needs") or getattr(args, action.dest, None) in (None, action.default, False):
            continue
        other, value = action.needs
        other_action = next(each for each in parser.options if other in each.option_strings)
        given = getattr(args, other_action.dest, None)
        if (value is None and given in (None, other_action.default, False)) or (value is not None and given != value):
            wanted = f"{other} {value}" if value is not None else other
            raise UserError(f"{action.option_strings[0]} goes with {wanted} (see: {parser.prog} --help)")


def check_outputs(args: argparse.Namespace, parser: Parser) -> None:
    """A UserError naming an output file (:class:`OutputFile`) that exists, where the command has
    ``--force`` and it is not given: nothing a user has is replaced without asking."""
    if not hasattr(args, "force") or args.force:
        return
    for action in parser.options:
        path = getattr(args, action.dest, None)
        if isinstance(action.type, OutputFile) and path and Path(path).exists():
            raise UserError(f"{action.option_strings[0]} {path}: the file exists; give --force to replace it")


def with_force(parser: argparse.ArgumentParser, allows: str = "replace the file if it exists") -> None:
    """The ``--force`` option of a command that writes where a user has something: it ``allows``
    what :func:`check_outputs` (and a build's own check of its folder) refuse without it."""
    parser.add_argument("--force", action="store_true", help=allows)


def command_parser(parser: Parser, args: argparse.Namespace) -> Parser:
    """The parser of the (sub-sub)command ``args`` chose (``command``, then ``action``)."""
    while parser.commands is not None and getattr(args, parser.commands.dest, None):
        parser = parser.commands.choices[getattr(args, parser.commands.dest)]
    return parser
