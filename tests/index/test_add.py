"""`paperscope add`: new papers join an index without a rebuild, and a killed add changes nothing."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex, build_index, locations
from paperscope.index.build.add import add_papers
from paperscope.index.store import generations
from paperscope.index.store.maps import MAPS_DIR
from tests.conftest import SUPPORT, copy_index

pytestmark = pytest.mark.slow  # every test here builds or adds to an index of its own
HALT_BUILD = SUPPORT / "halt_build.py"  # runs the command line, halted at a build stage

NEW_PAPERS = [
    (
        "Protein backbone design with flow matching",
        "We design protein backbones with a flow matching model over rigid frames. The model generates "
        "designable folds faster than diffusion baselines and recovers native-like secondary structure.",
    ),
    (
        "Federated learning under client drift",
        "Clients in federated learning hold data from different distributions. We correct the drift of "
        "local updates with a control variate and prove convergence under partial participation.",
    ),
    (
        "Sparse autoencoders find interpretable features in language models",
        "We train sparse autoencoders on the residual stream of a transformer language model and show "
        "that the learned features are monosemantic, causally relevant and shared across model sizes.",
    ),
    (
        "Robot grasping from a single demonstration",
        "A robot arm learns to grasp unseen household objects from one human demonstration by matching "
        "dense visual correspondences and refining the grasp with tactile feedback.",
    ),
    (
        "Weather forecasting with graph neural networks",
        "A graph neural network on an icosahedral mesh forecasts global weather ten days ahead, matching "
        "numerical weather prediction on most variables at a fraction of the compute.",
    ),
]


@pytest.fixture
def new_papers(tmp_path) -> Path:
    path = tmp_path / "new.csv"
    lines = ["id,title,abstract"] + [f'new{i},"{title}","{text}"' for i, (title, text) in enumerate(NEW_PAPERS)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_added_papers_are_found_and_match_a_full_rebuild(sample_index_dir, new_papers, tmp_path, caplog):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    report = add_papers([new_papers], folder)
    assert (report.added, report.skipped, report.count) == (5, 0, 43)
    generations.verify(folder)
    added = PaperIndex.load(folder)
    assert len(added) == 43
    for i, (title, text) in enumerate(NEW_PAPERS):
        assert added.search(text, k=1).to_pandas()["id"][0] == f"new{i}"  # found by its own text
        paper = added.paper(f"new{i}")
        assert paper["title"] == title and paper["placed"]
        assert paper["cluster_name"] and paper["coarse_name"]
    xy = added.map.coordinates
    inside = (xy[-5:] >= xy[:-5].min(axis=0) - 1e-6) & (xy[-5:] <= xy[:-5].max(axis=0) + 1e-6)
    assert inside.all()  # placed among their neighbours, within the map

    build_index([*locations.bundled_corpus(), new_papers], tmp_path / "rebuilt")
    rebuilt = PaperIndex.load(tmp_path / "rebuilt")
    for paper_id in rebuilt.papers["id"]:
        assert (
            added.similar(paper_id, k=10, mode="dense").to_pandas()["id"].tolist()
            == rebuilt.similar(paper_id, k=10, mode="dense").to_pandas()["id"].tolist()
        )

    with caplog.at_level("INFO", logger="paperscope"):
        again = add_papers([new_papers], folder)  # the same papers again: reported and skipped
    assert (again.added, again.skipped, again.count) == (0, 5, 43)
    said = [record.getMessage() for record in caplog.records]
    assert "skipped: 5 papers already in the index (the same id or abstract)" in said
    assert not any("repeats" in line for line in said)


def test_a_killed_add_leaves_the_index_answering(sample_index_dir, new_papers, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    before = generations.current_generation_name(folder)
    command = [sys.executable, str(HALT_BUILD), "commit", "add", str(new_papers), "--index", str(folder)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    said = []
    for line in process.stderr:  # until the hook says the new generation is written but not current
        said.append(line)
        if line.strip() == "paperscope: halted at commit":
            break
    else:
        pytest.fail("add never reached the commit:\n" + "".join(said))
    process.kill()
    process.wait()
    assert generations.current_generation_name(folder) == before
    index = PaperIndex.load(folder)
    assert len(index) == 38 and len(index.similar(index.papers["id"][0], k=3).to_pandas()) == 3
    assert add_papers([new_papers], folder).count == 43  # the next add takes the lock and clears the leftovers
    leftovers = sorted(path.name for path in folder.iterdir() if path.name != generations.LOCK_FILE)
    assert leftovers == sorted(  # maps: what a remap need not find again, of the current generation
        [generations.POINTER_FILE, generations.IDENTITY_FILE, generations.current_generation_name(folder), MAPS_DIR]
    )


def test_new_papers_that_fit_no_topic_are_counted_and_drawn_as_such(sample_index_dir, tmp_path, caplog):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    sample = PaperIndex.load(folder)
    kin = sample.papers.loc[sample.papers["cluster"] >= 0].iloc[0]  # a paper of a topic, lightly reworded
    recipes = [
        ("Sourdough bread with a long cold proof", "We bake sourdough loaves after a two-day cold proof in the "
         "fridge; the crumb opens and the crust blisters when the dough is scored deeply before baking."),
        ("Braising beef cheeks in red wine", "Beef cheeks are seared, then braised for four hours in red wine "
         "with shallots and thyme until tender; the sauce is reduced and finished with butter."),
    ]  # fmt: skip
    corpus = tmp_path / "new.jsonl"
    rows = [{"id": f"recipe{i}", "title": t, "abstract": a} for i, (t, a) in enumerate(recipes)]
    rows.append({"id": "kin", "title": kin["title"], "abstract": "In short: " + kin["abstract"]})
    corpus.write_text("\n".join(json.dumps(row) for row in rows))
    with caplog.at_level("WARNING", logger="paperscope"):
        report = add_papers([corpus], folder)
    assert report.no_topic == 2
    said = [record.getMessage() for record in caplog.records]
    # the rebuild it names reads the sample's files and the added one (by their full paths: it runs from any
    # folder), into this folder (never the sample alone)
    files = [*map(str, locations.bundled_corpus()), str(corpus.resolve())]
    rebuild = shlex.join(["paperscope", "build", *files, "-o", str(folder)])
    assert f"2 new papers fit no topic: rebuild the map ({rebuild}) to place them as a topic of their own" in said
    added = PaperIndex.load(folder)
    for paper_id in ("recipe0", "recipe1"):
        assert added.paper(paper_id)["cluster"] == -1 and added.paper(paper_id)["coarse_name"] == "unclustered"
    assert added.paper("kin")["cluster"] == kin["cluster"]


def with_faiss(folder: Path, factory: str) -> None:
    """The index at ``folder`` with a FAISS index of ``factory`` over its vectors (as a build of
    that many papers with ``--faiss FACTORY`` makes), written as its next generation."""
    import dataclasses

    from paperscope.index.build.ann import build_ann

    old = generations.read_generation(folder, mapped=False)
    manifest = dataclasses.replace(old.manifest, search=dataclasses.replace(old.manifest.search, faiss=factory))
    ann = build_ann(np.asarray(old.vectors), factory)
    parts = (old.papers, old.clusters.to_pandas(), old.keyword, old.smoothed)
    generations.write_generation(folder, generations.Generation(manifest, old.vectors, ann, *parts))


@pytest.mark.parametrize("factory", ["Flat", "HNSW32,Flat"])  # HNSW: its storage's rows overwritten
def test_a_new_version_replaces_the_text_in_place_and_a_withdrawal_marks_the_paper(sample_index_dir, tmp_path, factory):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    if factory != "Flat":
        with_faiss(folder, factory)
    sample = PaperIndex.load(folder)
    papers = sample.papers
    first, second, third = (papers.iloc[i] for i in (3, 10, 20))
    title, text = NEW_PAPERS[0]
    corpus = tmp_path / "update.jsonl"
    rows = [
        {"id": first["id"], "title": title, "abstract": text, "version": "v2"},  # a new version: new text
        {"id": second["id"], "title": second["title"], "abstract": second["abstract"], "status": "withdrawn"},
        {"id": third["id"], "title": third["title"], "abstract": third["abstract"]},  # the same again
        {"id": "fresh", "title": NEW_PAPERS[1][0], "abstract": NEW_PAPERS[1][1]},
    ]
    corpus.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    report = add_papers([corpus], folder)
    assert (report.added, report.replaced, report.marked, report.skipped, report.count) == (1, 1, 1, 1, 39)
    generations.verify(folder)
    updated = PaperIndex.load(folder)
    assert updated.ids()[:38] == sample.ids() and updated.ids()[38] == "fresh"  # ids and rows kept
    assert updated.search(text, k=1).to_pandas()["id"][0] == first["id"]  # found by its new words
    assert updated.search(text, k=1, mode="keyword").to_pandas()["id"][0] == first["id"]
    replaced = updated.paper(first["id"])
    assert (replaced["abstract"], replaced["version"]) == (text, "v2") and replaced["added"] == first["added"]
    assert updated.paper(second["id"])["status"] == "withdrawn" and updated.paper(third["id"])["status"] is None
    assert updated.search(second["abstract"], k=1).to_pandas()["id"][0] == second["id"]  # still findable
    unchanged = [i for i in range(38) if i != 3]
    assert np.array_equal(updated.vectors[unchanged], sample.vectors[unchanged])
    assert not np.allclose(updated.vectors[3], sample.vectors[3])
    written = generations.read_generation(folder)
    assert np.array_equal(written.faiss_index.reconstruct_n(0, 39), np.asarray(written.vectors))  # FAISS too
    again = add_papers([corpus], folder)  # the same file again: nothing changes
    assert (again.added, again.replaced, again.marked, again.skipped) == (0, 0, 0, 4)
