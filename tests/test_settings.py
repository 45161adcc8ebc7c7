"""Settings as typed values: checked when made, written into the manifest, read back by add and info."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from paperscope import BuildSettings, PaperIndex, QuerySettings, Smoothing, UserError, build_index, locations
from paperscope.index.build.add import add_papers
from tests.conftest import copy_index


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BuildSettings(preset="quick"), "unknown preset 'quick'; choose one of exact, fast"),
        (lambda: BuildSettings(engine="spark"), "unknown engine 'spark'; choose one of local, ray"),
        (lambda: BuildSettings(long_text="middle"), "unknown long-text strategy 'middle'"),
        (lambda: BuildSettings(preset="fast", quantize="int8"), "--preset sets --long-text and --quantize"),
        (lambda: BuildSettings(workers=2), "--address and --workers go with --engine ray"),
        (lambda: Smoothing(0, 0.5), "smoothing needs K of at least 1"),
        (lambda: QuerySettings(mode="fuzzy"), "unknown mode 'fuzzy'; choose one of dense, keyword, hybrid"),
        (lambda: QuerySettings(hybrid_weight=1.5), "the hybrid weight must be in"),
    ],
)
def test_a_wrong_choice_fails_where_the_settings_are_made(make, message):
    with pytest.raises(UserError, match=message):
        make()


@pytest.mark.slow
def test_the_settings_of_a_build_are_kept_and_read_back_by_info_and_add(tmp_path):
    settings = BuildSettings(smoothing=Smoothing(2, 0.3), faiss_factory="Flat", use_cache=False)
    folder = tmp_path / "index"
    build_index(locations.bundled_corpus()[:1], folder, settings)
    index = PaperIndex.load(folder)
    assert index.settings == settings and index.info()["settings"]["smoothing"] == {"k": 2, "weight": 0.3}
    shown = subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "info", "--index", str(folder)], capture_output=True, text=True
    )
    assert shown.returncode == 0 and "smoothing 2:0.3" in shown.stdout and "FAISS Flat" in shown.stdout

    new = tmp_path / "new.jsonl"
    new.write_text(
        '{"id": "n1", "title": "Sparse attention", "abstract": "We prune attention heads of vision transformers."}\n'
    )
    add_papers([new], folder)
    grown = PaperIndex.load(folder)
    assert grown.settings == settings  # the settings travel with every generation
    # the new paper's smoothed vector: its own plus 0.3 x the mean of its 2 nearest old papers
    vector = grown.vectors[-1]
    nearest = np.argsort(-(np.asarray(index.vectors) @ vector))[:2]
    expected = vector + 0.3 * np.asarray(index.vectors)[nearest].mean(axis=0)
    expected /= np.linalg.norm(expected)
    assert np.allclose(grown.ranker.smoothed[-1], expected, atol=1e-5)


def test_an_index_written_before_settings_were_kept_reads_them_from_its_manifest(sample_index_dir, tmp_path):
    folder = tmp_path / "old"
    copy_index(sample_index_dir, folder)
    index = PaperIndex.load(folder)
    older = {name: value for name, value in index.info().items() if name != "settings"}  # as its manifest.json
    assert BuildSettings.from_manifest(older).smoothing == Smoothing(**older["search"]["smoothing"])
    assert BuildSettings.from_manifest({**older, "search": {**older["search"], "smoothing": None}}).smoothing is None
    assert dataclasses.asdict(BuildSettings.from_manifest(index.info())) == index.info()["settings"]


def test_bad_smoothing_on_the_command_line_is_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "build", "--smoothing", "0:1", "-o", str(tmp_path / "x")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "'0:1': K must be at least 1" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
