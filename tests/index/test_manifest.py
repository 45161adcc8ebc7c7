"""The typed manifest reads what every release of format 6 wrote: tests/files/indexes holds 12-paper
indexes built by the first release of format 6 (50675d1), by 6dfb043 (presets, before settings were
kept) and by ff7c3d5 (the release before the typed manifest), each loaded, queried, verified,
described and grown by `add` here."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

from paperscope import PaperIndex, UserError
from paperscope.index.build.add import add_papers
from paperscope.index.store import generations
from paperscope.index.store.manifest import Manifest, SearchInfo
from paperscope.settings import BuildSettings, ClusterSettings, NamingSettings, Smoothing, TopicSettings
from tests.conftest import FILES, paperscope

RELEASES = FILES / "indexes"


@pytest.mark.slow
@pytest.mark.parametrize("release", ["50675d1", "6dfb043", "ff7c3d5"])
def test_an_index_of_every_earlier_release_loads_answers_and_grows(release, tmp_path, library_corpus):
    folder = tmp_path / "index"
    shutil.copytree(RELEASES / release, folder)
    generations.verify(folder)  # every file as that release wrote it
    index = PaperIndex.load(folder)
    manifest = index.manifest
    assert (manifest.count, manifest.dimension, manifest.model.name) == (
        12,
        384,
        "sentence-transformers/all-MiniLM-L6-v2",
    )
    assert manifest.search.text_weight == (0.7 if release == "50675d1" else 0.8)  # no search_weight: the hybrid one
    assert manifest.preset.name == "exact" and manifest.map.cluster_count >= 1
    assert manifest.settings.smoothing == (None if release == "50675d1" else Smoothing(k=3, weight=0.5))
    assert manifest.settings.topics == TopicSettings()  # none recorded: the defaults every build used then
    assert (
        len(index.similar("p0", k=3).to_pandas()) == 3
        and len(index.search("watermarking language models", k=3).to_pandas()) == 3
    )
    described = paperscope("info", "--index", folder)
    assert described.returncode == 0 and "papers  12" in described.stdout, described.stderr
    later = tmp_path / "later.jsonl"
    later.write_text("".join((library_corpus / "corpus.jsonl").read_text().splitlines(keepends=True)[12:14]))
    assert add_papers([later], folder).count == 14  # the grown manifest written in today's form
    grown = PaperIndex.load(folder).manifest
    assert (
        grown.count == 14 and grown.corpus.sources[-1] == str(later.resolve()) and grown.corpus.added[-1]["papers"] == 2
    )
    assert grown.model == manifest.model and grown.search == manifest.search
    smoothed = generations.read_generation(folder).smoothed  # that release kept the smoothed vectors themselves
    assert (smoothed is None) == (release == "50675d1")
    if smoothed is not None:
        assert smoothed.shape == (14, 384) and np.allclose(np.linalg.norm(smoothed, axis=1), 1, atol=1e-5)


def test_the_manifest_round_trips_through_json(sample_index_dir):
    manifest = PaperIndex.load(sample_index_dir).manifest
    assert Manifest.from_json(json.loads(json.dumps(manifest.to_json())), "here") == manifest
    assert isinstance(manifest.search, SearchInfo) and isinstance(manifest.settings, BuildSettings)
    assert manifest.to_json()["settings"]["topics"]["layout"] == {
        "n_neighbors": 15,
        "min_dist": 0.1,
        "seed": 42,
        "knn": 16,
        "sample": 50_000,
    }
    topics = TopicSettings(clusters=ClusterSettings(max_coarse=4, selection="eom"), names=NamingSettings(pool=90))
    chosen = dataclasses.replace(manifest, settings=dataclasses.replace(manifest.settings, topics=topics))
    assert Manifest.from_json(json.loads(json.dumps(chosen.to_json())), "here").settings.topics == topics
    written = chosen.to_json()
    written["settings"]["topics"]["clusters"].pop("max_coarse")  # a setting its release did not know: the default
    written["settings"]["topics"].pop("names")
    read = Manifest.from_json(written, "here").settings.topics
    assert read == TopicSettings(clusters=ClusterSettings(selection="eom"))
    written["settings"]["topics"]["layout"]["knn"] = 2
    with pytest.raises(UserError, match=r"^topic setting layout.knn must be a whole number of at least 15, got 2$"):
        Manifest.from_json(written, "here")


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda m: m.update(format_version=5), "index format 5, this paperscope reads 6"),
        (lambda m: m.pop("model"), "the manifest lacks or mistypes 'model'"),
        (lambda m: m["search"].pop("faiss"), "the manifest lacks or mistypes"),
    ],
)
def test_a_manifest_of_another_format_or_missing_a_section_is_one_line(sample_index_dir, tmp_path, change, says):
    folder = tmp_path / "index"
    shutil.copytree(sample_index_dir, folder)
    path = folder / generations.current_generation_name(folder) / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=says):
        PaperIndex.load(folder)
