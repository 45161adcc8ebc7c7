"""The topic map stored in the index: layout, clusters, names, map trust, query placement, export."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from paperscope import PaperIndex, build_index, locations
from paperscope.embed.terms import words
from tests.conftest import paperscope


def test_layout_is_stored_per_paper_and_read_back(sample_index):
    papers = sample_index.papers
    assert {"x", "y", "cluster", "cluster_name", "map_trust"} <= set(papers.columns)
    assert np.isfinite(papers[["x", "y"]].to_numpy()).all()
    assert papers[["x", "y"]].drop_duplicates().shape[0] > 30
    layout = sample_index.manifest.map.layout
    assert layout["method"] == "umap" and layout["precomputed_knn"] and layout["n_neighbors"] == 15


@pytest.mark.slow
def test_a_rebuild_gives_the_same_coordinates(sample_index, tmp_path):
    build_index(locations.bundled_corpus(), tmp_path / "again")
    again = PaperIndex.load(tmp_path / "again")
    np.testing.assert_allclose(
        again.papers[["x", "y"]].to_numpy(), sample_index.papers[["x", "y"]].to_numpy(), atol=1e-5
    )
    assert again.papers["cluster"].tolist() == sample_index.papers["cluster"].tolist()


@pytest.mark.slow
def test_umap_compilations_are_loaded_from_disk_by_the_next_build(sample_index):
    # umap compiles its numba functions without numba's cache (5.2 s of a 300-paper map); a build
    # turns the cache on, so a later process loads them (the sample's build here saved them)
    script = (
        "import numpy as np, umap.umap_ as u, umap.layouts as l; from paperscope.index.topics import layout;"
        "from paperscope.settings import LayoutSettings;"
        "v = np.random.default_rng(0).standard_normal((40, 384)).astype(np.float32);"
        "v /= np.linalg.norm(v, axis=1, keepdims=True); layout.layout(v, layout.knn_graph(v, 16), LayoutSettings());"
        "used = (u.smooth_knn_dist, u.compute_membership_strengths, l._nb_optimize_layout_euclidean_single_epoch);"
        "print([(sum(f.stats.cache_hits.values()), sum(f.stats.cache_misses.values())) for f in used])"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    counts = json.loads(result.stdout.replace("(", "[").replace(")", "]"))
    assert all(hits >= 1 and misses == 0 for hits, misses in counts), counts


def test_sample_clusters_and_their_central_papers(sample_index):
    clusters = sample_index.topics.table("fine")
    assert 3 <= len(clusters) <= 8
    unclustered = (sample_index.papers["cluster"] < 0).sum()
    assert unclustered < len(sample_index) / 2
    assert sample_index.manifest.map.unclustered == unclustered
    for row in clusters.itertuples():
        assert len(row.central_ids) == min(3, row.size)
        members = sample_index.papers[sample_index.papers["cluster"] == row.cluster]
        assert set(row.central_ids) <= set(members["id"]) and row.size == len(members)
        member_words = [set(words(abstract, compounds=True)) for abstract in members["abstract"]]
        plain = [re.sub(r" \(\w[\w-]*\)$", "", term) for term in row.terms]  # without the acronym
        assert all(sum(set(words(term, compounds=True)) <= w for w in member_words) >= 1 for term in plain)
    assert (sample_index.papers.loc[sample_index.papers["cluster"] < 0, "cluster_name"] == "unclustered").all()


def test_map_trust_is_a_share_with_the_corpus_average_in_the_manifest(sample_index):
    trust = sample_index.papers["map_trust"].to_numpy()
    assert ((trust >= 0) & (trust <= 1)).all() and len(set(np.round(trust * 10))) > 1
    assert sample_index.manifest.map.trust == pytest.approx(trust.mean(), abs=1e-6)


def test_a_query_is_placed_among_its_neighbours(sample_index):
    coords = sample_index.papers[["x", "y"]].to_numpy()
    spread = np.median(np.linalg.norm(coords[:, None] - coords[None], axis=-1))
    for row in (0, 11, 30):
        vector = sample_index.embed_query(sample_index.papers["abstract"][row])
        position = sample_index.map.position(vector)
        nearest = np.argsort(-(np.asarray(sample_index.vectors) @ vector))[:5]
        neighbour_xy = coords[nearest]
        assert np.linalg.norm(neighbour_xy - position, axis=1).min() < spread / 4
        assert (position >= neighbour_xy.min(axis=0) - 1e-9).all() and (
            position <= neighbour_xy.max(axis=0) + 1e-9
        ).all()


@pytest.mark.slow
def test_large_corpora_are_laid_out_on_a_sample_and_the_rest_placed(encoder):
    from paperscope.index.topics import topic_map
    from paperscope.settings import LayoutSettings, TopicSettings

    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(4), 60)  # four well-separated topics of 60 papers
    vectors = rng.normal(size=(4, 384))[groups] * 3 + rng.normal(size=(240, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    words = ["graph", "diffusion", "robots", "proteins"]
    texts_asked = []

    def texts_of(rows):
        texts_asked.append(rows)
        return [f"{words[groups[row]]} {words[groups[row]]} paper {row}" for row in rows]

    ids = [str(i) for i in range(240)]
    settings = TopicSettings(layout=LayoutSettings(sample=120))
    per_paper, clusters, manifest = topic_map.topic_map(vectors, texts_of, ids, encoder.encode, settings)
    layout = manifest["layout"]
    assert layout["fitted_on"] == 120 and layout["placed"] == 120 and len(texts_asked[0]) == 120
    assert set(manifest["map_trust"]) >= {"laid_out", "placed", "mean"}
    laid_out = texts_asked[0]
    placed = np.setdiff1d(np.arange(240), laid_out)
    coords = per_paper[["x", "y"]].to_numpy()
    centres = np.array([coords[laid_out][groups[laid_out] == g].mean(axis=0) for g in range(4)])
    nearest_centre = np.linalg.norm(coords[placed, None] - centres[None], axis=-1).argmin(axis=1)
    assert (nearest_centre == groups[placed]).all()  # each placed paper lands among its topic's papers
    labels = per_paper["cluster"].to_numpy()
    for group in range(4):  # and joins a cluster of its topic's laid-out papers
        assert set(labels[placed][groups[placed] == group]) <= set(labels[laid_out][groups[laid_out] == group])
    fine = clusters[clusters["level"] == "fine"]
    assert set(fine["name"].str.split().str[0]) == set(words)
    assert fine["size"].sum() + (per_paper["cluster"] == topic_map.UNCLUSTERED).sum() == 240


@pytest.mark.parametrize("count, method", [(2, "pca"), (3, "pca"), (5, "umap"), (15, "umap")])
def test_tiny_corpora_build_a_map(tmp_path, count, method):
    from tests.support.corpora import read_corpus

    papers, _ = read_corpus(locations.bundled_corpus())
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("\n\n".join(papers["abstract"][:count]))
    build_index([corpus], tmp_path / "index")
    index = PaperIndex.load(tmp_path / "index")
    assert index.manifest.map.method == method
    if method == "pca":
        assert "UMAP needs at least 4 papers" in index.manifest.map.layout["reason"]
    assert np.isfinite(index.papers[["x", "y"]].to_numpy()).all() and len(index.papers) == count
    assert len(index.similar(index.papers["id"][0], k=3).to_pandas()) == min(3, count - 1)
    assert index.topics.table("fine") is not None and set(index.papers["cluster"]) >= set(
        index.topics.table("fine")["cluster"]
    )
    if count == 2:  # too few papers for a topic: `topics` lists none, and says why
        assert index.topics.overview("coarse").empty
        done = paperscope("topics", "--index", tmp_path / "index", here=True)
        assert done.returncode == 0 and done.stdout == "0 coarse topics of 2 papers\n"
        assert done.stderr == "no coarse topics: the build found none among the 2 papers (too few, or too far apart)\n"


@pytest.mark.slow
def test_loading_and_lookups_never_import_umap_torch_or_ray(sample_index_dir):
    script = (
        "import sys, paperscope.ui.cli; from paperscope import PaperIndex; "
        f"ix = PaperIndex.load({str(sample_index_dir)!r}); "
        "ix.similar(ix.papers['id'][0]).to_pandas(); ix.map.position(ix.embed_query('graph networks')); "
        "print(sorted(m for m in ('umap', 'numba', 'torch', 'sentence_transformers', 'ray') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.replace("'", '"')) == []
