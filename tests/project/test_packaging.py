"""The installed package: a wheel that works on its own, and a command line that starts instantly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from paperscope import locations
from tests.conftest import ROOT
from tests.support.corpora import read_corpus

# Names of test and benchmark tools (tests/support/servers.py, tests/support/halt_build.py, tests/support/corpora.py) that
# the installed package must not hold
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


def _not_sources(folder, names) -> set[str]:
    """What a copy of the repository leaves out: hidden files, caches, test artifacts and what
    setuptools writes (``build/`` at the top: ``index/build/`` is a package)."""
    left_out = shutil.ignore_patterns(".*", "*.egg-info", "artifacts", "__pycache__")(folder, names)
    return left_out | ({"build"} & set(names) if Path(folder) == ROOT else set())


@pytest.mark.slow
def test_the_wheel_installs_alone_and_runs_outside_the_repository(sample_index_dir, data_home, tmp_path):
    source = tmp_path / "source"  # setuptools writes build/ and *.egg-info beside the sources: not in ours
    shutil.copytree(ROOT, source, ignore=_not_sources)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    [wheel] = dist.glob("paperscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"paperscope", wheel.name.split("-py")[0] + ".dist-info"}
    assert {
        "paperscope/data/neurips2025_part1.txt",
        "paperscope/data/neurips2025_part2.txt",
        "paperscope/ui/app.py",
        "paperscope/index/build/pipeline.py",
        "paperscope/embed/model.py",
    } <= set(names)
    with zipfile.ZipFile(wheel) as archive:  # the product only: the test and benchmark tools stay in tests/
        installed = {name: archive.read(name).decode() for name in names if name.endswith(".py")}
    found = {word: sorted(name for name, code in installed.items() if word in code) for word in TEST_ONLY}
    assert not {word: where for word, where in found.items() if where}, "test-only code in the wheel"
    assert not {"paperscope/ui/server.py", "paperscope/index/checkpoints.py"} & set(names)

    # A fresh environment that sees the dependencies already installed here, and the wheel, not editable.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed", str(wheel)],
        check=True,
        capture_output=True,
    )

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    home = tmp_path / "home"  # a fresh data folder, reusing the session's model export and embedding cache
    home.mkdir()
    for reused in ("onnx", "embedding-cache"):
        (home / reused).symlink_to(data_home / reused)
    env = {**os.environ, "PAPERSCOPE_HOME": str(home)}

    def run(*command):
        result = subprocess.run(command, capture_output=True, text=True, cwd=outside, env=env, timeout=600)
        assert result.returncode == 0, result.stderr
        return result.stdout

    where = run(
        python,
        "-c",
        "import paperscope; from paperscope import PaperIndex; "
        "from paperscope import locations; print(paperscope.__file__); "
        "print(locations.bundled_corpus()[0])",
    ).split()
    assert all(Path(path).is_relative_to(site / "paperscope") for path in where)
    paperscope = str(venv / "bin" / "paperscope")
    run(paperscope, "build")
    paper_id = read_corpus(locations.bundled_corpus())[0]["id"][0]
    similar = json.loads(run(paperscope, "similar", paper_id, "-k", "3", "--json"))
    assert len(similar) == 3 and paper_id not in [row["id"] for row in similar]
    assert "--port" in run(paperscope, "app", "--help")
    run(paperscope, "map", "-o", str(outside / "map.html"))  # the map's script and style are package data
    assert "class PaperscopeMap" in (outside / "map.html").read_text()
    assert not any(path.name in ("embed", "index", "ui", "data") for path in site.iterdir())


def test_help_imports_nothing_heavy():
    script = (
        "import sys; from paperscope.ui.cli import make_parser; make_parser(); "
        "print(sorted(m for m in ('numpy', 'pandas', 'pyarrow', 'scipy', 'faiss', 'sklearn') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
    help_text = subprocess.run([sys.executable, "-m", "paperscope.ui.cli", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "similar" in help_text.stdout


def test_the_notebook_extra_brings_jupyterlab_and_notebook_7_as_the_widget_tests_use_them():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {requirement.split("==")[0]: requirement for requirement in extras["notebook"] if "==" in requirement}
    assert {"jupyterlab", "notebook", "anywidget"} <= pins.keys()
    assert set(pins.values()) <= set(extras["test"])  # the versions tests/app/test_widget.py drives the widget in
    usage = (ROOT / "docs" / "usage.md").read_text()
    assert "pip install -e '.[notebook]'" in usage and "jupyter lab notebooks/explore.ipynb" in usage
