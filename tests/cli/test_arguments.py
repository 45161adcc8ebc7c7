"""Wrong values for every option of every command, generated from the command line's parser itself.

Each option's kind is read from its argparse ``type`` (``paperscope.ui.arguments``: ``action.type.kind``),
or its ``choices``; wrong values of that kind (a missing path, a file where a folder is asked and the
reverse, an unwritable place, an existing file, negative, zero and huge numbers, empty and non-UTF-8
text) and the pairs of options that go together or exclude each other are tried on the real command
line (conftest's ``paperscope(here=True)``: ``paperscope.ui.cli.main`` in this process, hundreds of
cases in seconds). Each must exit 2 with one line on stderr naming the option, no traceback, nothing
written, and at once: before any index is loaded or built. A new command or option is covered here
without a test of its own; one whose values have no kind fails :func:`test_every_option_has_a_kind`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest

from paperscope.ui.cli import make_parser
from tests.conftest import paperscope

QUICK_SECONDS = 3.0  # a refusal takes milliseconds; a build or a load of the model takes far longer
UNWRITABLE = "/proc/paperscope-test"  # no file can be made in /proc, by root either
NOT_UTF8 = "caf\udce9"  # b"caf\xe9" (Latin-1) as Python passes a file name it cannot decode
PLACES = "{tmp}"  # replaced by the test's own folder


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser) of every command that runs: subcommands, and their own commands."""
    if parser.get_default("run") is not None:
        yield words, parser
    for name, sub in parser.commands.choices.items() if parser.commands else ():
        yield from commands(sub, (*words, name))


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options and positionals a user gives values to (not --help, flags or subcommands)."""
    return [action for action in parser.options if action.nargs != 0]


def label(action: argparse.Action) -> str:
    """How an error names the option: its flags (-o/--output), or its metavar."""
    return "/".join(action.option_strings) if action.option_strings else str(action.metavar or action.dest)


def valid(action: argparse.Action) -> str:
    """A value of the action's kind that parses: a path that, used, fails fast (an index folder that is
    not there), so that a wrong value that slips through is not a build."""
    if action.choices:
        return next(iter(action.choices))
    kind = action.type.kind
    values = {
        "number": lambda: str(action.type.low),
        "fraction": lambda: str((action.type.low + action.type.high) / 2),
        "text": lambda: "x",
        "file": lambda: f"{PLACES}/corpus.jsonl",
        "folder": lambda: PLACES,
        "index": lambda: f"{PLACES}/no-index",
        "output file": lambda: f"{PLACES}/out{(action.type.suffixes or ('.txt',))[0]}",
        "output folder": lambda: f"{PLACES}/new-index",
        "date": lambda: "2026-01-01",
        "url": lambda: "http://127.0.0.1:9",
        "condition": lambda: "year >= 2020",
        "bins": lambda: "3",
        "smoothing": lambda: "off",
        "faiss": lambda: "Flat",
    }
    return values[kind]()


def wrong(action: argparse.Action) -> list[str]:
    """Wrong values of the action's kind."""
    if action.choices:
        return ["no-such-choice", "", NOT_UTF8]
    kind, type_ = action.type.kind, action.type
    common = ["", NOT_UTF8 if kind != "number" else "1\udce9"]
    by_kind = {
        "number": lambda: ["x", "1.5", str(type_.low - 1), str(type_.high + 1), str(10**30)],
        "fraction": lambda: ["x", "nan", "inf", str(type_.low - 1), str(type_.high + 1)],
        "text": lambda: ["x" * (type_.most + 1), *([] if type_.lines else ["two\nlines"])],
        "file": lambda: [f"{PLACES}/missing.jsonl", PLACES],
        "folder": lambda: [f"{PLACES}/missing", f"{PLACES}/corpus.jsonl"],
        "index": lambda: [f"{PLACES}/corpus.jsonl"],
        "output file": lambda: [
            PLACES,
            f"{UNWRITABLE}{(type_.suffixes or ('.txt',))[0]}",
            f"{PLACES}/corpus.jsonl/under-a-file{(type_.suffixes or ('.txt',))[0]}",
            *([f"{PLACES}/out.wrong-suffix"] if type_.suffixes else []),
            f"{PLACES}/existing{(type_.suffixes or ('.txt',))[0]}",  # replaced only with --force
        ],
        "output folder": lambda: [f"{PLACES}/corpus.jsonl", UNWRITABLE, f"{PLACES}/corpus.jsonl/under-a-file"],
        "date": lambda: ["yesterday", "2026-13-45"],
        "url": lambda: ["ftp://example.org/oai", "example.org", "http://"],
        "condition": lambda: ["no operator here", "= 3"],
        "bins": lambda: ["0", "1", "-3", "5,5"],
        "smoothing": lambda: ["3", "0:0.5", "x:y"],
        "faiss": lambda: ["Bogus99"],
    }
    return common + by_kind[kind]()


def command_line(parser: argparse.ArgumentParser, *chosen: tuple[argparse.Action, str | None]) -> list[str]:
    """The arguments of ``parser``'s command: each ``chosen`` (action, value; None: a valid one) in its
    place, valid values of the other positionals it needs and of required options, and a missing
    --index where the command takes one, so that a case that slips through parsing fails at once."""
    chosen = dict(chosen)
    positionals = [action for action in options(parser) if not action.option_strings]
    last = max((positionals.index(action) for action in chosen if action in positionals), default=-1)
    argv = []
    for place, action in enumerate(positionals):  # in order; an optional one only to reach a later one
        if action in chosen:
            argv += given(action, chosen[action])
        elif action.nargs not in ("?", "*") or place < last:
            argv += given(action)
    for action in parser.options:  # flags too, when chosen
        if action in chosen and action.option_strings:
            argv += given(action, chosen[action])
        elif action.option_strings and (action.required or action.option_strings == ["--index"]):
            argv += given(action)
    return argv


def given(action: argparse.Action, value: str | None = None) -> list[str]:
    """``value`` as the action takes it (all of an option's values for nargs=2; a flag alone)."""
    if action.nargs == 0:
        return [action.option_strings[0]]
    value = valid(action) if value is None else value
    count = action.nargs if isinstance(action.nargs, int) else 1
    values = [value] + [valid(action)] * (count - 1)
    return values if not action.option_strings else [action.option_strings[0], *values]


def cases():
    """(argv, what must be named, id) for every wrong value of every option of every command, and every
    pair of options given against their rule."""
    parser = make_parser()
    for words, command in commands(parser):
        for action in options(command):
            if not action.choices and not hasattr(action.type, "kind"):
                continue  # test_every_option_has_a_kind names it
            for value in wrong(action):
                argv = [*words, *command_line(command, (action, value))]
                yield pytest.param(argv, label(action), id=f"{' '.join(words)} {label(action)}={value[:24]!a}")
            if hasattr(action, "needs"):  # given alone, without the option it goes with
                argv = [*words, *command_line(command, (action, None))]
                yield pytest.param(argv, label(action), id=f"{' '.join(words)} {label(action)} alone")
        for group in command.exclusive:
            both = group[:2]
            argv = [*words, *command_line(command, *((action, None) for action in both))]
            yield pytest.param(argv, label(both[-1]), id=f"{' '.join(words)} {' with '.join(map(label, both))}")


@pytest.fixture
def places(tmp_path, monkeypatch) -> Path:
    """A folder holding one small corpus, and an empty data folder: what a case may not change."""
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"id": "a", "title": "A", "abstract": "An abstract."}) + "\n")
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def snapshot(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_size for path in folder.rglob("*")}


@pytest.mark.parametrize(("argv", "named"), list(cases()))
def test_a_wrong_value_is_one_line_naming_the_option(places, argv, named):
    argv = [word.replace(PLACES, str(places)) for word in argv]
    for word in argv:
        if "/existing." in word:
            Path(word).write_text("what a user has")
    before = snapshot(places)
    started = time.monotonic()
    done = paperscope(*argv, here=True)
    took = time.monotonic() - started
    out, err = done.stdout, done.stderr
    lines = err.splitlines()
    assert done.returncode == 2, (argv, out, err)
    assert len(lines) == 1 and lines[0].startswith("paperscope: error: "), err
    assert any(name in lines[0] for name in named.split("/")), (named, err)
    assert "Traceback" not in err and not out
    assert snapshot(places) == before, "something was written"
    assert took < QUICK_SECONDS, f"refused only after {took:.1f} s"


def test_every_option_has_a_kind():
    """Every option that takes a value says its kind (a type of paperscope.ui.arguments, or
    choices), so that the test above tries its wrong values."""
    untyped = [
        f"{' '.join(words)} {label(action)}"
        for words, command in commands(make_parser())
        for action in options(command)
        if not action.choices and not hasattr(action.type, "kind")
    ]
    assert not untyped


def test_the_generated_cases_cover_every_command():
    """Hundreds of cases, every command among them (a parser walk that found nothing would pass)."""
    walked = [words for words, _ in commands(make_parser())]
    argvs = [param.values[0] for param in cases()]
    assert {("build",), ("serve",), ("collection", "export"), ("topics", "rename"), ("maps",)} <= set(walked)
    assert len(argvs) > 300 and all(any(argv[: len(words)] == list(words) for argv in argvs) for words in walked)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["build", "{tmp}/corpus.jsonl", "-o", "{tmp}/corpus.jsonl"],
            "argument -o/--output: {tmp}/corpus.jsonl is a file",
        ),
        (["build", "{tmp}/corpus.jsonl", "-o", "/proc/x"], "argument -o/--output: /proc/x: cannot write in /proc"),
        (
            ["info", "--index", "{tmp}/corpus.jsonl"],
            "argument --index: {tmp}/corpus.jsonl is a file, not an index folder",
        ),
        (["serve", "--port", "99999"], "argument --port: must be a whole number from 1 to 65,535, got 99999"),
        (["app", "--port", "99999"], "argument --port: must be a whole number from 1 to 65,535, got 99999"),
        (
            ["build", "{tmp}/corpus.jsonl", "-o", "{tmp}/ix", "--faiss", "Bogus99"],
            "argument --faiss: 'Bogus99' is not a FAISS",
        ),
        (["audit", "--limit", "-1"], "argument --limit: must be a whole number from 0"),
    ],
)
def test_the_issue_s_command_lines_are_refused_in_one_line(places, argv, says):
    """Issue 50's: tracebacks (a file as the output folder or the index, /proc, port 99999) and
    refusals that came late (--faiss after the embedding) or never (--limit -1)."""
    done = paperscope(*[word.replace("{tmp}", str(places)) for word in argv], here=True)
    err = done.stderr
    assert done.returncode == 2 and err.startswith(f"paperscope: error: {says.replace('{tmp}', str(places))}"), err
    assert len(err.splitlines()) == 1 and not (places / "ix").exists()


def test_audit_takes_index_and_shows_that_index_s_writes(places):
    from paperscope.ui import audit

    one, other = places / "one", places / "other"
    one.mkdir(), other.mkdir()
    audit.record("ann", "cli", "collection create a", one.resolve(), "ok")
    audit.record("bob", "cli", "collection create b", other.resolve(), "ok")
    of_one = paperscope("audit", "--json", "--index", one, here=True, check=True)
    assert [line["who"] for line in json.loads(of_one.stdout)] == ["ann"]
    of_all = paperscope("audit", "--json", here=True, check=True)
    assert [line["who"] for line in json.loads(of_all.stdout)] == ["ann", "bob"]


@pytest.mark.slow
def test_non_utf8_bytes_from_a_shell_are_one_line(places):
    """The bytes a shell passes (a Latin-1 name), not a str: decoded by Python with surrogates."""
    latin1 = "café".encode("latin-1")
    for argv in ([b"search", latin1], [b"build", places / "corpus.jsonl", b"-o", latin1 + b"-index"]):
        done = paperscope(*argv, cwd=places)
        err = done.stderr
        assert done.returncode == 2 and err.startswith("paperscope: error: argument ") and "not UTF-8" in err, err
        assert len(err.splitlines()) == 1 and not done.stdout
    assert sorted(path.name for path in places.iterdir()) == ["corpus.jsonl"]


def test_argparse_s_own_errors_name_the_option(places):
    """argparse's one-line errors (a value its type refuses, a missing one) name the option, in
    the command line's own line (not argparse's usage block)."""
    for argv, says in (
        (["similar", "p1", "-k"], "argument -k: expected one argument"),
        (["map", "--index", places], "the following arguments are required: -o/--output"),
    ):
        done = paperscope(*argv, here=True)
        assert done.returncode == 2 and done.stderr.startswith(f"paperscope: error: {says}"), done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_a_file_given_as_an_index_is_one_sentence_in_python_too(places):
    """The app, the service and a notebook load an index without the command line's check."""
    from paperscope import PaperIndex
    from paperscope.errors import UserError

    with pytest.raises(UserError, match=r"corpus.jsonl: a file, not an index folder; build one with: paperscope build"):
        PaperIndex.load(places / "corpus.jsonl")


def test_a_named_pipe_is_a_corpus_file(places):
    """`paperscope build <(zcat corpus.jsonl.gz)`: the shell passes a pipe, which is not a regular file."""
    pipe = places / "pipe.jsonl"
    os.mkfifo(pipe)
    args = make_parser().parse_args(["build", str(pipe), "-o", str(places / "index")])
    assert args.inputs == [str(pipe)]
