"""The installed package: a wheel that works on its own, and a command line that starts instantly."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, paperscope
from tests.project.test_docs_commands import code_of, command_lines, concrete, write_corpus

# Names of test and benchmark tools (tests/support/servers.py, tests/support/halt_build.py,
# tests/support/corpora.py) that the installed package must not hold
TEST_ONLY = (
    "CHROMIUM",
    "free_port",
    "paperscope_server",
    "MAP_LABEL_LAYOUT",
    "HALT",
    "halted at",
    "read_corpus",
    "killed at",
)


# The folders of the repository that setuptools installs as the package (pyproject's package-dir), and
# where they land in it.
PACKAGE_FOLDERS = {"paperscope": "paperscope", "embed": "paperscope/embed", "index": "paperscope/index",
                   "ui": "paperscope/ui", "data": "paperscope/data"}  # fmt: skip
DATA_FILES = ("data/neurips2025_part1.txt", "data/neurips2025_part2.txt", "ui/map.js", "ui/map.css")


def _not_sources(folder, names) -> set[str]:
    """What a copy of the repository leaves out: hidden files, caches, test artifacts and what
    setuptools writes (``build/`` at the top: ``index/build/`` is a package)."""
    left_out = shutil.ignore_patterns(".*", "*.egg-info", "artifacts", "__pycache__")(folder, names)
    return left_out | ({"build"} & set(names) if Path(folder) == ROOT else set())


def package_sources(source: Path) -> set[str]:
    """The package's files in the repository at ``source`` (its modules, in every folder holding
    one, and its data files), relative to it."""
    modules = {str(path.relative_to(source)) for folder in PACKAGE_FOLDERS for path in (source / folder).rglob("*.py")}
    return {name for name in modules if "__pycache__" not in name} | set(DATA_FILES)


def installed_name(source_name: str) -> str:
    """Where the file ``source_name`` of the repository is in the wheel."""
    top, _, rest = source_name.partition("/")
    return f"{PACKAGE_FOLDERS[top]}/{rest}"


def build_sdist_and_wheel(tmp_path: Path) -> tuple[Path, Path]:
    """The sdist of a copy of the repository, and the wheel built from that sdist (as ``python -m
    build`` does), both checked to hold every file of the package."""
    source = tmp_path / "source"  # setuptools writes build/ and *.egg-info beside the sources: not in ours
    shutil.copytree(ROOT, source, ignore=_not_sources)
    dist = tmp_path / "dist"
    build_sdist = "import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])"
    subprocess.run([sys.executable, "-c", build_sdist, str(dist)], check=True, capture_output=True, cwd=source)
    [sdist] = dist.glob("paperscope-*.tar.gz")
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.removeprefix(f"{top}/") for name in archive.getnames()}
        archive.extractall(tmp_path / "unpacked", filter="data")
    missing = (package_sources(source) | {"pyproject.toml", "README.md", "PKG-INFO"}) - in_sdist
    assert not missing, f"not in the sdist (a folder missing from pyproject's packages?): {sorted(missing)}"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), f"./{top}"],
        check=True,
        capture_output=True,
        cwd=tmp_path / "unpacked",
    )
    [wheel] = dist.glob("paperscope-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = {installed_name(name) for name in package_sources(source)} - names
    assert not missing, f"not in the wheel (a folder missing from pyproject's packages?): {sorted(missing)}"
    assert {name.split("/")[0] for name in names} == {"paperscope", wheel.name.split("-py")[0] + ".dist-info"}
    with zipfile.ZipFile(wheel) as archive:  # the product only: the test and benchmark tools stay in tests/
        installed = {name: archive.read(name).decode() for name in names if name.endswith(".py")}
    found = {word: sorted(name for name, code in installed.items() if word in code) for word in TEST_ONLY}
    assert not {word: where for word, where in found.items() if where}, "test-only code in the wheel"
    return sdist, wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> tuple[Path, Path]:
    """A new virtual environment with ``wheel`` installed (not editable), which sees the dependencies
    installed here through a .pth file but not this checkout: its folder and its site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # pip: ours, below
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([python, "-c", where], capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # after: pip sees no paperscope
    return venv, site


def readme_lookups() -> tuple[list[list[str]], str]:
    """The README's first build from files and its lookups (``similar``, ``search``), made concrete
    as tests/project/test_docs_commands.py makes them (argv without ``paperscope``), and its Python
    example with that test's corpus's ids for its placeholders."""
    lines = [shlex.split(concrete(code_of(line.text)))[1:] for line in command_lines(ROOT / "README.md")]
    build = next(argv for argv in lines if argv[0] == "build" and argv[1:] and not argv[1].startswith("-"))
    python = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    for placeholder, paper_id in (("paper-id", "p0"), ("id1", "p0"), ("id2", "p1"), ("id3", "p2")):
        python = python.replace(f'"{placeholder}"', f'"{paper_id}"')
    return [build, *(argv for argv in lines if argv[0] in ("similar", "search"))], python


def found_ids(answer: str) -> list[str]:
    """The ids of a table of papers found as the command line prints it (rank, score, id, title)."""
    return re.findall(r"^\s*\d+\s+-?\d+\.\d+\s+(\S+)", answer, re.M)


@pytest.mark.slow
def test_the_wheel_installs_alone_and_runs_the_readme_outside_the_repository(sample_index_dir, data_home, tmp_path):
    """The sdist and the wheel built from it hold the whole package; the wheel, installed in a fresh
    environment, runs the README's build, lookups and Python example in a folder outside the repository."""
    _, wheel = build_sdist_and_wheel(tmp_path)
    venv, site = fresh_venv(tmp_path, wheel)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    write_corpus(outside)  # the files and ids (p0, p1 …) the README's lines name, as the docs test writes them
    home = tmp_path / "home"  # a fresh data folder, reusing the model the sample's build exported, and the cache
    home.mkdir()
    for reused in ("onnx", "embedding-cache"):
        (home / reused).symlink_to(data_home / reused)
    env = {**os.environ, "PAPERSCOPE_HOME": str(home)}

    def run(*command):
        result = subprocess.run(command, capture_output=True, text=True, cwd=outside, env=env, timeout=600)
        assert result.returncode == 0 and "Traceback" not in result.stderr, f"{command}: {result.stderr}"
        return result.stdout

    python, command = str(venv / "bin" / "python"), str(venv / "bin" / "paperscope")
    code = "import paperscope; from paperscope import PaperIndex, locations; print(paperscope.__file__); "
    where = run(python, "-c", code + "print(*locations.bundled_corpus())").split()
    assert all(Path(path).is_relative_to(site / "paperscope") and Path(path).stat().st_size for path in where)
    lookups, example = readme_lookups()
    assert [argv[0] for argv in lookups] == ["build", "similar", "similar", "search", "search"], lookups
    with open(outside / "papers.csv", newline="") as file, gzip.open(outside / "more.jsonl.gz", "rt") as more:
        papers = [*csv.DictReader(file), *map(json.loads, more)]
    oral = {paper["id"] for paper in papers if paper["decision"] == "oral"}
    run(command, *lookups[0])
    for argv in lookups[1:]:
        found = found_ids(run(command, *argv))
        given = set(argv[1 : argv.index("--index")])  # the papers asked about (--not's too) are not found
        assert found and set(found) <= {paper["id"] for paper in papers} - given, argv
        assert "--where" not in argv or set(found) <= oral, argv
    run(python, "-c", example)
    assert "--port" in run(command, "app", "--help")
    run(command, "map", "--index", "myindex", "-o", str(outside / "map.html"))  # script and style: package data
    assert "class PaperscopeMap" in (outside / "map.html").read_text()
    assert not any(path.name in ("embed", "index", "ui", "data") for path in site.iterdir())


def test_help_imports_nothing_heavy():
    script = (
        "import sys; from paperscope.ui.cli import make_parser; make_parser(); "
        "print(sorted(m for m in ('numpy', 'pandas', 'pyarrow', 'scipy', 'faiss', 'sklearn') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
    help_text = paperscope("--help")
    assert help_text.returncode == 0 and "similar" in help_text.stdout


def test_the_notebook_extra_brings_jupyterlab_and_notebook_7_as_the_widget_tests_use_them():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {requirement.split("==")[0]: requirement for requirement in extras["notebook"] if "==" in requirement}
    assert {"jupyterlab", "notebook", "anywidget"} <= pins.keys()
    assert set(pins.values()) <= set(extras["test"])  # the versions tests/app/test_widget.py drives the widget in
    usage = (ROOT / "docs" / "usage.md").read_text()
    assert "pip install -e '.[notebook]'" in usage and "jupyter lab notebooks/explore.ipynb" in usage
