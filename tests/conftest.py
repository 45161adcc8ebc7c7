"""Shared fixtures: one data folder per test session, the real model, the real sample index."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paperscope.ui.launch import keep_script_folder_on_path

# The paths every test uses, in one place: the repository, the files tests read, the pictures they leave.
ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "tests" / "files"  # indexes of earlier releases, old collection files, library exports
ARTIFACTS = ROOT / "tests" / "artifacts"  # screenshots and measurements for a person to look at (not committed)
SUPPORT = ROOT / "tests" / "support"  # the tools tests run: servers, corpora, halted builds
APP = str(ROOT / "ui" / "app_script.py")
keep_script_folder_on_path(APP)  # as the app's server does: Streamlit's runs then leave sys.path as it is
PAPERSCOPE = str(Path(sys.executable).parent / "paperscope")  # the command a user runs, installed with the package
# One limit for any one command a test runs: the longest, a build on Ray, takes about a minute on CI; a command
# that hangs fails its test with the command named instead of stopping the whole job.
COMMAND_TIMEOUT = 600


def paperscope(*arguments, home=None, env=None, cwd=None, launcher=None, here=False, check=False):
    """Run ``paperscope ARGUMENTS`` as a user does and return its ``subprocess.CompletedProcess`` (text).

    In a process of its own, the installed command; with ``here``, through ``cli.main`` in this process
    (faster; stdout and stderr captured the same way, ``--help`` and usage errors give their exit status).
    ``home``: the data folder (``$PAPERSCOPE_HOME``) for this run; ``env``: more environment variables;
    ``cwd``: the folder it runs in; ``launcher``: a test wrapper of the command line run instead (a script
    of tests/support, e.g. halt_build.py); ``check``: fail the test, showing stderr, unless it exits 0."""
    argv = [argument if isinstance(argument, bytes) else str(argument) for argument in arguments]  # bytes: a shell's
    if here:
        done = _in_this_process(argv)
    else:
        command = [sys.executable, str(launcher)] if launcher else [PAPERSCOPE]
        environment = {**os.environ, **(env or {}), **({"PAPERSCOPE_HOME": str(home)} if home else {})}
        done = subprocess.run(
            [*command, *argv],
            capture_output=True,
            text=True,
            errors="backslashreplace",  # output that is not UTF-8 is shown, not a decoding error
            env=environment,
            cwd=cwd,
            timeout=COMMAND_TIMEOUT,
        )
    if check:
        assert done.returncode == 0, (
            f"paperscope {' '.join(map(str, argv))} exited {done.returncode}: {done.stderr[-3000:]}"
        )
    return done


def _in_this_process(argv: list[str]) -> subprocess.CompletedProcess:
    from paperscope.ui import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exit_:  # --help, which a usage mistake's hint names
            status = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["paperscope", *argv], status, out.getvalue(), err.getvalue())


def _slow(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None


# Tests marked network fetch from the real services (arXiv, OpenReview, OpenAlex): off by default (the
# suite touches no real service), on for whoever has a connection with PAPERSCOPE_NETWORK_TESTS=1.
NETWORK = os.environ.get("PAPERSCOPE_NETWORK_TESTS") == "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast tier first: every test not marked slow, then the slow ones, each tier in file order, so
    that a broken change fails within minutes instead of after the whole suite. Network tests are
    skipped unless asked for."""
    items.sort(key=_slow)
    if not NETWORK:
        skip = pytest.mark.skip(reason="reaches the real services: set PAPERSCOPE_NETWORK_TESTS=1 to run it")
        for item in items:
            if item.get_closest_marker("network") is not None:
                item.add_marker(skip)


_STARTED = pytest.StashKey[float]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """When the tests started, for the fast tier's time."""
    session.config.stash[_STARTED] = time.monotonic()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Between the tiers: say how long the fast one took, and stop there if it failed (the slow tier
    would only add its own failures to the ones already found, twenty minutes later)."""
    yield
    if nextitem is None or _slow(item) or not _slow(nextitem):
        return
    session, reporter = item.session, item.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        seconds = time.monotonic() - session.config.stash[_STARTED]
        reporter.write_sep("-", f"fast tier done in {seconds:.0f} s, {session.testsfailed} failed")
    if session.testsfailed:
        session.shouldfail = f"the fast tier failed ({session.testsfailed}): the slow tier is not run"


@pytest.fixture(scope="session", autouse=True)
def data_home(tmp_path_factory) -> Path:
    """Keep indexes and the embedding cache of the tests out of the user's data folder."""
    home = tmp_path_factory.mktemp("paperscope-home")
    os.environ["PAPERSCOPE_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def encoder():
    """The bundled all-MiniLM-L6-v2, loaded once."""
    from paperscope.embed.model import Encoder

    return Encoder()


@pytest.fixture(scope="session")
def sample_index_dir(tmp_path_factory, data_home) -> Path:
    """An index of the bundled NeurIPS 2025 sample, built once with the real model."""
    from paperscope import build_index, locations

    folder = tmp_path_factory.mktemp("sample") / "index"
    build_index(locations.bundled_corpus(), folder)
    return folder


@pytest.fixture(scope="session")
def sample_index(sample_index_dir):
    """The loaded sample index."""
    from paperscope import PaperIndex

    return PaperIndex.load(sample_index_dir)


@pytest.fixture(scope="session")
def library_corpus(tmp_path_factory, data_home):
    """The sample's 38 abstracts as a corpus with ids, titles, DOIs and arXiv ids, its index, and
    a BibTeX library: 3 papers by DOI, 1 by arXiv id, 1 by title, 1 outside the corpus, 1 unusable."""
    import json

    from paperscope import build_index, locations
    from tests.support.corpora import read_corpus

    folder = tmp_path_factory.mktemp("library")
    papers, _ = read_corpus(locations.bundled_corpus())
    lines = []
    for i, paper in enumerate(papers.itertuples()):
        record = {"id": f"p{i}", "title": paper.title, "abstract": paper.abstract, "year": 2024 + i % 2}
        if i < 20:
            record["doi"] = f"10.5555/sample.{i}"
        if 20 <= i < 30:
            record["arxiv_id"] = f"2501.{i:05d}"
        lines.append(json.dumps(record))
    corpus = folder / "corpus.jsonl"
    corpus.write_text("\n".join(lines[:-2]) + "\n")  # the last two come later, with `add`
    (folder / "later.jsonl").write_text("\n".join(lines[-2:]) + "\n")
    build_index([corpus], folder / "index")
    title = papers["title"][31]
    (folder / "refs.bib").write_text(
        "".join(
            f"@article{{doi{i}, title = {{Some other title {i}}}, doi = {{https://doi.org/10.5555/SAMPLE.{i}}}}}\n"
            for i in (0, 1, 2)
        )
        + "@misc{arx, title = {Whatever}, eprint = {2501.00021v2}, archivePrefix = {arXiv}}\n"
        + f"@inproceedings{{bytitle, title = {{{title.upper()}}}}}\n"
        + "@article{mine, title = {Pruning attention heads in vision transformers}, "
        "abstract = {We prune the attention heads of vision transformers with a learned gate and keep accuracy.}}\n"
        + "@article{empty, year = {2020}}\n"
    )
    return folder


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def mount(*arguments) -> None:
    """Run mount (tests run as root, where chmod does not stop writes: read-only means a read-only
    bind mount, a full disk a small tmpfs); skip where mounts are refused."""
    import subprocess

    done = subprocess.run(["mount", *map(str, arguments)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount refused here ({done.stderr.strip()}): run as root in a container that allows mounts")


@pytest.fixture
def mounts():
    """Mount points to unmount after the test."""
    import subprocess

    points = []
    yield points
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def read_only_index(sample_index_dir, tmp_path, mounts) -> Path:
    """A copy of the sample index behind a read-only bind mount."""
    import shutil

    source, folder = tmp_path / "source", tmp_path / "read-only"
    shutil.copytree(sample_index_dir, source)
    folder.mkdir()
    mount("--bind", source, folder)
    mounts.append(folder)
    mount("-o", "remount,bind,ro", folder)
    return folder


def copy_index(source: Path, target: Path) -> Path:
    """A copy of the index ``source`` at ``target`` with an identity of its own (as a new build
    there would have): collections made on it are its own, not shared with the original's."""
    import shutil

    shutil.copytree(source, target)
    (Path(target) / "IDENTITY").unlink(missing_ok=True)  # a new one is written when it is next opened
    return Path(target)
