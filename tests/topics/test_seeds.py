"""Seed topics (issue #30, item 4): `paperscope build --topics-from FILE` names topics in advance;
papers close enough to a seed form it, at both levels, the rest are clustered as before; the seeds
are kept for a rebuild of the folder and through `paperscope add`; a bad file is one line, exit 2."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import numpy as np
import pytest

from paperscope import PaperIndex
from paperscope.embed.seed_file import read_seed_topics
from paperscope.index.build.add import add_papers
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.seeds import seed_of, seed_words, uses_seed, with_seeds
from paperscope.limits import SEED_SURE
from paperscope.settings import ClusterSettings, SeedTopic, TopicSeeds
from tests.conftest import paperscope
from tests.index.test_add import NEW_PAPERS
from tests.topics.test_curation import assert_consistent

SIMILARITY = 0.4
SEEDS = """# topics of my own
graph neural networks: message passing over nodes and edges

large language models (LLMs)
protein design: proteins designed with generative models
"""


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """The sample built with three seed topics (one of them close to no paper)."""
    folder = tmp_path_factory.mktemp("seeded")
    (folder / "seeds.txt").write_text(SEEDS)
    arguments = ["build", "-o", str(folder / "index"), "--topics-from", str(folder / "seeds.txt")]
    paperscope(*arguments, "--seed-similarity", SIMILARITY, here=True, check=True)
    return folder / "index"


def _finder(index: PaperIndex) -> TermFinder:
    return TermFinder((index.papers["title"].fillna("") + ". " + index.papers["abstract"]).tolist())


def _closest_seed(index: PaperIndex, seeds: TopicSeeds) -> np.ndarray:
    """Each paper's seed by the index's own model, or -1 when none is close enough."""
    return seed_of(index.vectors, seeds, index.embed_texts, _finder(index)).seed


@pytest.mark.slow
def test_a_seed_takes_a_paper_on_its_own_evidence(sample_index):
    """A paper joins a seed only when it uses the seed's words and is unusually close to it for
    that seed (spread standard deviations above the seed's mean): a paper as close by cosine
    that does not use its words is left out, and a lower spread takes more."""
    seeds = TopicSeeds((SeedTopic("graph neural networks"), SeedTopic("large language models (LLMs)")), 0.3, spread=2)
    finder = _finder(sample_index)
    choice = seed_of(sample_index.vectors, seeds, sample_index.embed_texts, finder)
    similarities = sample_index.vectors @ sample_index.embed_texts([topic.text() for topic in seeds.topics]).T
    spreads = (similarities - similarities.mean(axis=0)) / similarities.std(axis=0)
    for number, topic in enumerate(seeds.topics):
        taken = choice.seed == number
        assert taken.sum() >= 2, topic.name  # the test means something
        assert uses_seed(topic, finder)[taken].all()
        sure = (spreads[taken, number] >= seeds.spread) | (similarities[taken, number] >= SEED_SURE)
        assert sure.all() and (similarities[taken, number] >= 0.3).all()
    silent = 0  # papers above the similarity floor that do not use the seed's words: never taken by it
    for number, topic in enumerate(seeds.topics):
        close_but_silent = (similarities[:, number] >= 0.3) & ~uses_seed(topic, finder)
        silent += close_but_silent.sum()
        assert (choice.seed[close_but_silent] != number).all(), topic.name
    assert silent >= 1  # the test means something
    looser = seed_of(sample_index.vectors, replace(seeds, spread=1.0), sample_index.embed_texts, finder)
    assert (looser.seed >= 0).sum() > (choice.seed >= 0).sum()


def test_a_seed_s_words_are_its_distinctive_words_or_its_acronym():
    texts = ["Spiking networks on chips.", "An SNN for vision.", "Neural networks for vision.", "Spike trains."]
    finder = TermFinder(texts)
    topic = SeedTopic("spiking neural networks")
    assert seed_words(topic) == ["spiking"]
    assert uses_seed(topic, finder).tolist() == [True, True, False, False]
    assert seed_words(SeedTopic("fairness in machine learning")) == ["fairness", "machine"]


@pytest.mark.slow
def test_papers_close_to_a_seed_form_a_topic_of_its_name_at_both_levels(seeded):
    index = PaperIndex.load(seeded)
    seeds = read_seed_topics(seeded.parent / "seeds.txt", SIMILARITY)
    closest = _closest_seed(index, seeds)
    papers = index.papers
    for number, topic in enumerate(seeds.topics):
        members = papers["cluster_name"] == topic.name
        if not (closest == number).any():
            assert not members.any() and topic.name not in set(index.topics.table("coarse")["name"])
            continue
        assert members[closest == number].all(), topic.name  # every close paper is in it
        assert (papers["coarse_name"] == topic.name).equals(members)  # a coarse topic of its own
        assert members.sum() >= (closest == number).sum()
    assert len(set(closest[closest >= 0].tolist())) == 2  # the test means something: two seeds hold papers
    others = papers[~papers["cluster_name"].isin([topic.name for topic in seeds.topics])]
    assert others["cluster"].nunique() >= 2  # the rest are still clustered
    recorded = index.manifest.map.clusters["seeds"]
    assert [topic["name"] for topic in recorded["topics"]] == [topic.name for topic in seeds.topics]
    assert recorded["joined"] == (closest >= 0).sum() and recorded["similarity"] == SIMILARITY
    assert [topic["taken"] for topic in recorded["topics"]] == [(closest == i).sum() for i in range(3)]
    assert all(topic["similarity_least"] >= SIMILARITY for topic in recorded["topics"] if topic["taken"])
    assert_consistent(index)


@pytest.mark.slow
def test_info_names_the_seed_topics(seeded):
    info = paperscope("info", "--index", seeded, here=True, check=True)
    assert f"3 seed topics from seeds.txt (similarity {SIMILARITY})" in info.stdout


@pytest.mark.slow
def test_a_rebuild_keeps_the_seeds_and_none_drops_them(seeded, sample_index_dir, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="paperscope")
    names = set(PaperIndex.load(seeded).topics.table("coarse")["name"])
    assert {"graph neural networks", "large language models (LLMs)"} <= names
    folder = tmp_path / "index"
    seeds = seeded.parent / "seeds.txt"
    paperscope("build", "-o", folder, "--topics-from", seeds, "--seed-similarity", SIMILARITY, here=True, check=True)
    caplog.clear()
    paperscope("build", "-o", folder, here=True, check=True)
    assert set(PaperIndex.load(folder).topics.table("coarse")["name"]) == names
    assert any("seed topics of the earlier build kept: 3" in record.getMessage() for record in caplog.records)
    paperscope("build", "-o", folder, "--topics-from", "none", here=True, check=True)
    plain, unseeded = PaperIndex.load(folder), PaperIndex.load(sample_index_dir)
    assert plain.topics.table("fine")["name"].tolist() == unseeded.topics.table("fine")["name"].tolist()
    assert "seeds" not in plain.manifest.map.clusters


@pytest.mark.slow
def test_an_add_keeps_the_seed_topics(seeded, tmp_path):
    import shutil

    folder = shutil.copytree(seeded, tmp_path / "index")
    before = PaperIndex.load(folder)
    new = tmp_path / "new.jsonl"
    new.write_text("\n".join(json.dumps({"id": f"new{i}", "title": t, "abstract": a})
                             for i, (t, a) in enumerate(NEW_PAPERS)))  # fmt: skip
    add_papers([new], folder)
    grown = PaperIndex.load(folder)
    assert set(grown.topics.table("coarse")["name"]) == set(before.topics.table("coarse")["name"])
    kept = grown.papers.set_index("id").loc[before.ids(), "cluster_name"]
    assert kept.tolist() == before.papers["cluster_name"].tolist()


def test_clusters_that_use_a_seed_s_name_join_it():
    texts = (["federated learning across clients"] * 6 + ["private clients"] * 4  # cluster 0: 60 % say it
             + ["federated learning"] * 2 + ["graph nodes"] * 8  # cluster 1: 20 %
             + ["federated learning on devices"] * 3)  # fmt: skip
    labels = np.array([0] * 10 + [1] * 10 + [-1] * 3)
    joined = np.array([-1] * 20 + [0] * 3)  # the last three were close enough to the seed
    seeds = TopicSeeds((SeedTopic("federated learning"), SeedTopic("spiking neural networks")))
    got, seed_labels, claimed = with_seeds(labels, joined, seeds, TermFinder(texts), ClusterSettings().claim_coverage)
    assert [topic.name for topic in seed_labels.values()] == ["federated learning"]
    seed = next(iter(seed_labels))
    assert (got[:10] == seed).all() and (got[20:] == seed).all() and (got[10:20] != seed).all()
    assert sorted(set(got.tolist())) == [0, 1] and claimed == {"federated learning": 1}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("# only a comment\n\n", "no seed topics in the file"),
        ("graph neural networks\nGraph  Neural Networks: again\n", ":2: repeats the topic 'Graph Neural Networks'"),
        ("ok\n: a description without a name\n", ":2: a seed topic needs a name"),
        (b"caf\xe9\n", "not UTF-8 text"),
    ],
)
def test_a_bad_seed_file_is_one_line_naming_the_file_and_exit_2(tmp_path, text, said):
    path = tmp_path / "seeds.txt"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    done = paperscope("build", "-o", tmp_path / "index", "--topics-from", path, here=True)
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()
    assert len(error) == 1 and str(path) in error[0] and said in error[0], error
    assert not (tmp_path / "index").exists() or not any((tmp_path / "index").iterdir())


def test_seed_options_are_checked_before_anything_is_read(tmp_path):
    (tmp_path / "seeds.txt").write_text(SEEDS)
    for arguments, said in (
        (["--seed-similarity", "0.5"], "--seed-similarity goes with --topics-from"),
        (["--topics-from", str(tmp_path / "missing.txt")], "missing.txt: no such file"),
        (["--topics-from", str(tmp_path / "seeds.txt"), "--seed-similarity", "1.5"], "must be in (0, 1)"),
    ):
        done = paperscope("build", "-o", tmp_path / "index", *arguments, here=True)
        assert done.returncode == 2
        error = done.stderr.strip().splitlines()
        assert len(error) == 1 and said in error[0], error
