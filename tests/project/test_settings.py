"""Settings as typed values: checked when made, written into the manifest, read back by add and info."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from paperscope import (
    BuildSettings,
    ClusterSettings,
    LayoutSettings,
    NamingSettings,
    PaperIndex,
    QuerySettings,
    Smoothing,
    TopicSettings,
    UserError,
    build_index,
    locations,
)
from paperscope.index.build.add import add_papers
from paperscope.index.store.generations import read_generation
from tests.conftest import copy_index, paperscope


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BuildSettings(preset="quick"), "unknown preset 'quick'; choose one of exact, balanced, fast"),
        (lambda: BuildSettings(engine="spark"), "unknown engine 'spark'; choose one of local, ray"),
        (lambda: BuildSettings(long_text="middle"), "unknown long-text strategy 'middle'"),
        (lambda: BuildSettings(preset="fast", quantize="int8"), "--preset sets --long-text and --quantize"),
        (lambda: BuildSettings(workers=2), "--address and --workers go with --engine ray"),
        (lambda: Smoothing(0, 0.5), "smoothing needs K of at least 1"),
        (lambda: QuerySettings(mode="fuzzy"), "unknown mode 'fuzzy'; choose one of dense, keyword, hybrid"),
        (lambda: QuerySettings(hybrid_weight=1.5), "the hybrid weight must be in"),
        (lambda: LayoutSettings(knn=8), r"topic setting layout.knn must be a whole number of at least 15, got 8"),
        (lambda: LayoutSettings(seed=1.5), "topic setting layout.seed must be a whole number"),
        (lambda: ClusterSettings(selection="best"), "unknown topic setting clusters.selection 'best'; choose one of"),
        (
            lambda: ClusterSettings(max_coarse=1),
            "topic setting clusters.max_coarse must be a whole number of at least 2",
        ),
        (lambda: NamingSettings(name_coverage=1.5), r"topic setting names.name_coverage must be a number in \[0, 1\]"),
        (lambda: NamingSettings(min_lift=0), "topic setting names.min_lift must be a number above 0, got 0"),
    ],
)
def test_a_wrong_choice_fails_where_the_settings_are_made(make, message):
    with pytest.raises(UserError, match=message):
        make()


@pytest.mark.slow
def test_the_settings_of_a_build_are_kept_and_read_back_by_info_and_add(tmp_path):
    topics = TopicSettings(layout=LayoutSettings(n_neighbors=10), clusters=ClusterSettings(min_size_floor=5))
    settings = BuildSettings(smoothing=Smoothing(2, 0.3), faiss_factory="Flat", use_cache=False, topics=topics)
    folder = tmp_path / "index"
    build_index(locations.bundled_corpus()[:1], folder, settings)
    index = PaperIndex.load(folder)
    assert index.manifest.settings == settings and index.info()["settings"]["smoothing"] == {"k": 2, "weight": 0.3}
    shown = paperscope("info", "--index", folder)
    assert shown.returncode == 0 and "smoothing 2:0.3" in shown.stdout and "FAISS Flat" in shown.stdout
    assert "n_neighbors=10, min_dist=0.1" in shown.stdout and "min_size_floor=5" in shown.stdout
    clusters = index.manifest.map.clusters  # the stages were handed the settings
    assert index.manifest.map.layout["n_neighbors"] == 10 and clusters["min_cluster_size"] == 5

    new = tmp_path / "new.jsonl"
    new.write_text(
        '{"id": "n1", "title": "Sparse attention", "abstract": "We prune attention heads of vision transformers."}\n'
    )
    add_papers([new], folder)
    grown = PaperIndex.load(folder)
    assert grown.manifest.settings == settings  # the settings travel with every generation
    # the new paper's smoothed vector: its own plus 0.3 x the mean of its 2 nearest old papers
    vector = grown.vectors[-1]
    nearest = np.argsort(-(np.asarray(index.vectors) @ vector))[:2]
    expected = vector + 0.3 * np.asarray(index.vectors)[nearest].mean(axis=0)
    expected /= np.linalg.norm(expected)
    assert np.allclose(read_generation(grown.folder).smoothed[-1], expected, atol=1e-5)


def test_an_index_written_before_settings_were_kept_reads_them_from_its_manifest(sample_index_dir, tmp_path):
    folder = tmp_path / "old"
    copy_index(sample_index_dir, folder)
    index = PaperIndex.load(folder)
    older = {name: value for name, value in index.info().items() if name != "settings"}  # as its manifest.json
    assert BuildSettings.from_manifest(older).smoothing == Smoothing(**older["search"]["smoothing"])
    assert BuildSettings.from_manifest({**older, "search": {**older["search"], "smoothing": None}}).smoothing is None
    assert dataclasses.asdict(BuildSettings.from_manifest(index.info())) == index.info()["settings"]


def test_bad_smoothing_on_the_command_line_is_one_line(tmp_path):
    done = paperscope("build", "--smoothing", "0:1", "-o", tmp_path / "x")
    assert done.returncode == 2 and "'0:1': K must be at least 1" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_info_shows_the_topic_settings_an_index_was_built_with(sample_index_dir, tmp_path):
    def info(folder) -> str:
        shown = paperscope("info", "--index", folder)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    lines = info(sample_index_dir).splitlines()
    layout = next(line for line in lines if line.strip().startswith("topic layout"))
    assert layout.split(maxsplit=2)[2] == "n_neighbors=15, min_dist=0.1, seed=42, knn=16, sample=50000 (defaults)"
    assert sum("(defaults)" in line for line in lines) == 3  # layout, clusters, names
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    path = folder / (folder / "CURRENT").read_text().strip() / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["settings"]["topics"]["clusters"]["max_coarse"] = 3
    path.write_text(json.dumps(manifest))
    shown = info(folder)
    assert "max_coarse=3" in shown and shown.count("(defaults)") == 2
    assert PaperIndex.load(folder).manifest.settings.topics.clusters == ClusterSettings(max_coarse=3)
