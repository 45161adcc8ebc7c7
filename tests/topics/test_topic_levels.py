"""Topics a researcher would name the same way: the naming rules, two levels, topics over time,
and the papers between two topics, on the sample, on IJCAI and on a corpus whose answers are known."""

import itertools
import json
import random
import re

import numpy as np
import pytest

from paperscope import BuildSettings, PaperIndex, UserError, build_index
from paperscope.embed.terms import words
from paperscope.embed.text import embedding_texts
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.naming import (
    RESIDUE,
    TopicTerms,
    corpus_terms,
    hangs_together,
    redundant,
    shown_alone,
    together,
    topic_names,
    topic_pools,
    topic_terms,
)
from paperscope.settings import NamingSettings
from tests.conftest import ROOT, paperscope

IJCAI = ROOT.parent / "shared" / "evaldata" / "ijcai2021_2024_area.jsonl"


def check_names(index) -> None:
    """The naming rules, at both levels; prints every name for a person to read (pytest -s)."""
    texts = (index.papers["title"] + " " + index.papers["abstract"]).tolist()
    corpus = corpus_terms(embedding_texts(index.papers), NamingSettings().max_words)
    for level, table, column in (
        ("coarse", index.topics.table("coarse"), "coarse_cluster"),
        ("fine", index.topics.table("fine"), "cluster"),
    ):
        assert table["name"].is_unique, level
        for row in table.itertuples():
            print(f"{level:6} {row.size:5}  {row.name}")
            named = re.sub(r" \(\d+\)$", "", row.name).split(", ")  # a clash's last resort: the topic's number
            assert 1 <= len(named) <= 3 and named == list(row.terms)[: len(named)], row.name
            rows = np.flatnonzero(index.papers[column] == row.cluster)
            for a, b in itertools.combinations(named, 2):  # terms that belong together, each saying something new
                assert together(a, b, rows, corpus.finder), f"{a!r} and {b!r} are rarely in one paper"
                assert not redundant(a, b), f"{a!r} and {b!r} say one thing"
            assert all(shown_alone(term, corpus) for term in named), f"a vague word or an adjective in {row.name!r}"
            for term in named:
                term_words = words(term, compounds=True)
                assert not re.search(r"\d|\\|\$", term), f"number or LaTeX in {term!r}"
                assert not RESIDUE.intersection(term_words), f"citation residue in {term!r}"
                assert len(set(term_words)) == len(term_words), f"repeated word in {term!r}"
                acronym = re.fullmatch(r"(.+) \((\w[\w-]*)\)", term)
                if acronym:  # joined to its expansion: the expansion's initials hold the acronym's capitals
                    assert acronym.group(2)[0].lower() in acronym.group(1)[:3].lower(), term
            for a in named:
                for b in named:
                    if a != b:
                        assert not set(words(a)) <= set(words(b)), f"{a!r} inside {b!r}"
            members = [f" {' '.join(words(texts[i]))} " for i in np.flatnonzero(index.papers[column] == row.cluster)]
            for a in named:
                for b in named:  # "series forecasting, multivariate time": two halves of one phrase
                    joined = f" {' '.join(words(b))} {' '.join(words(a))} "
                    assert a == b or sum(joined in text for text in members) < 2, f"{b!r} {a!r} is one phrase"


def test_sample_topic_names_follow_the_rules(sample_index):
    check_names(sample_index)


@pytest.mark.slow
@pytest.mark.skipif(not IJCAI.is_file(), reason="needs ../shared/evaldata (the labelled IJCAI corpus)")
def test_ijcai_topic_names_follow_the_rules(tmp_path):
    build_index([IJCAI], tmp_path / "ijcai", BuildSettings(preset="fast"))
    index = PaperIndex.load(tmp_path / "ijcai")
    check_names(index)
    check_nesting(index)
    assert 5 <= len(index.topics.table("coarse")) <= 20 < len(index.topics.table("fine"))
    papers = index.papers
    assert (papers["cluster"] < 0).mean() <= 0.10  # few grey papers: the rest drawn in a topic, marked outlying
    assert papers["outlying"].any() and (papers.loc[papers["outlying"], "cluster"] >= 0).all()
    finder = TermFinder((papers["title"] + ". " + papers["abstract"]).tolist())
    coverages = {}
    for level, column in (("coarse", "coarse_cluster"), ("fine", "cluster")):
        for row in index.topics.table(level).itertuples():
            members = np.flatnonzero(papers[column] == row.cluster)
            if level == "fine" and len(members) < 30:
                continue
            terms = row.name.split(", ")
            coverages[level, row.name] = finder.coverage(members, terms)
            assert coverages[level, row.name] >= 0.33, f"{row.name!r} names too few of its papers"
            assert all(finder.lift(members, term) >= 2 for term in terms), f"{row.name!r}: a term as common elsewhere"
    # a cluster that no two terms name well is named by those that name most (one of 46 here, 0.35)
    assert np.mean([coverage >= 0.4 for coverage in coverages.values()]) >= 0.9, coverages


def check_nesting(index) -> None:
    """Each fine topic lies in one coarse topic, and their sizes and papers agree."""
    fine, coarse, papers = index.topics.table("fine"), index.topics.table("coarse"), index.papers
    assert 2 <= len(coarse) <= len(fine)
    assert set(fine["parent"]) == set(coarse["cluster"])
    for topic in coarse.itertuples():
        children = fine[fine["parent"] == topic.cluster]
        assert topic.size == children["size"].sum() == (papers["coarse_cluster"] == topic.cluster).sum()
    parent_of = dict(zip(fine["cluster"], fine["parent"], strict=True))
    clustered = papers[papers["cluster"] >= 0]
    assert (clustered["cluster"].map(parent_of) == clustered["coarse_cluster"]).all()
    assert (papers.loc[papers["cluster"] < 0, "coarse_name"] == "unclustered").all()


def test_two_levels_nest(sample_index):
    check_nesting(sample_index)  # 38 papers may give as many coarse topics as fine: IJCAI's has fewer


@pytest.mark.slow
def test_topic_names_come_from_terms_many_members_share(encoder):
    texts = (
        [f"Protein folding with diffusion priors, study {i}." for i in range(5)]
        + ["Protein folding banana banana banana banana banana."]
        + [f"Graph transformers for molecules, part {i}." for i in range(6)]
        + [f"Graph coloring heuristics, note {i}." for i in range(4)]
    )
    labels = np.array([0] * 6 + [1] * 6 + [-1] * 4)
    naming = NamingSettings()
    terms = corpus_terms(texts, naming.max_words)
    named = topic_terms(terms, {"fine": labels}, encoder.encode(texts), encoder.encode, naming)["fine"]
    terms = {label: topic.terms for label, topic in named.items()}
    assert set(terms) == {0, 1} and "protein folding" in terms[0] and "graph transformers" in terms[1]
    assert not any("banana" in term for term in terms[0])  # one paper repeating a word names nothing
    assert not any("protein" in term for term in terms[1])
    japanese = ["日本語の要約", "別の要約", "三つ目"]
    none_found = corpus_terms(japanese, naming.max_words)
    no_terms = topic_terms(none_found, {"fine": np.zeros(3, int)}, encoder.encode(japanese), encoder.encode, naming)
    assert no_terms["fine"][0].terms == []


PROTEINS = [
    "We predict protein structures from amino acid sequences.",
    "Our network folds proteins using evolutionary couplings between residues.",
    "Protein backbone geometry is refined with equivariant layers.",
    "Side chains are packed with a learned rotamer library.",
    "Multiple sequence alignments provide coevolution signals for protein folding.",
    "Predicted structures are scored against experimental crystal structures.",
    "Binding pockets of enzymes are located on the folded protein surface.",
    "We design protein sequences that fold into a target backbone.",
]
TRAFFIC = [
    "Traffic signals at city intersections are controlled by cooperating agents.",
    "Each intersection agent observes queue lengths of the incoming lanes.",
    "Agents learn signal timing policies that reduce vehicle waiting time.",
    "We simulate rush-hour traffic on a road network of a large city.",
    "Communication between neighbouring intersections coordinates green waves.",
    "Congestion and travel times drop against fixed-time signal plans.",
    "Vehicle arrivals at each junction follow recorded commuter demand.",
    "Emergency vehicles get priority through adaptive traffic lights.",
]


@pytest.fixture(scope="module")
def known_index(tmp_path_factory):
    """Protein papers (mostly 2021), traffic-signal papers (mostly 2024), and four papers of two
    protein sentences and three traffic ones: the bridges (MiniLM weighs the protein words more)."""
    rng = random.Random(7)
    records = []
    for name, pool, years in (("protein", PROTEINS, [2021] * 5 + [2024]), ("traffic", TRAFFIC, [2021] + [2024] * 5)):
        for i, chosen in enumerate(rng.sample(list(itertools.combinations(pool, 4)), 16)):  # no two alike
            sentences = rng.sample(chosen, 4)
            records.append({"id": f"{name}{i}", "title": sentences[0][:-1], "abstract": " ".join(sentences[1:]),
                            "year": years[i % len(years)]})  # fmt: skip
    for i in range(4):
        sentences = rng.sample(PROTEINS, 2) + rng.sample(TRAFFIC, 3)
        records.append({"id": f"bridge{i}", "title": f"Study {i}", "abstract": " ".join(sentences), "year": 2022})
    corpus = tmp_path_factory.mktemp("known") / "known.jsonl"
    corpus.write_text("\n".join(json.dumps(record) for record in records))
    build_index([corpus], corpus.parent / "index")
    return PaperIndex.load(corpus.parent / "index")


def _topic_of(index, paper_id: str, column: str) -> int:
    return int(index.papers.loc[index.papers["id"] == paper_id, column].iloc[0])


def _between_proteins_and_traffic(index, **options):
    """(a, b, bridges) for the proteins' topic a and each topic b holding traffic papers."""
    papers = index.papers
    proteins = papers.loc[papers["id"].str.startswith("protein"), "coarse_cluster"]
    a = proteins.mode()[0]
    assert (proteins == a).mean() > 0.8
    traffic = set(papers.loc[papers["id"].str.startswith("traffic"), "coarse_cluster"]) - {a, -1}
    return [(a, b, index.topics.bridges(a, b, **options)) for b in sorted(traffic)]


@pytest.mark.slow
def test_bridges_are_the_papers_split_between_two_topics(known_index):
    found = _between_proteins_and_traffic(known_index, k=10)
    ids = {paper_id for _, _, table in found for paper_id in table["id"]}
    assert ids <= {"bridge0", "bridge1", "bridge2", "bridge3"} and len(ids) >= 2  # never a one-topic paper
    for _, _, table in found:
        assert (table["in_a"] > 0).all() and (table["in_b"] > 0).all() and table["balance"].is_monotonic_decreasing
    a = known_index.papers.loc[known_index.papers["id"] == "protein0", "coarse_cluster"].iloc[0]
    name = known_index.topics.table("coarse").set_index("cluster")["name"][a]
    other = known_index.topics.table("coarse")["cluster"][known_index.topics.table("coarse")["cluster"] != a].iloc[0]
    assert (
        known_index.topics.bridges(name, str(other))["id"].tolist()
        == known_index.topics.bridges(a, other)["id"].tolist()
    )


@pytest.mark.slow
def test_topics_over_time_follow_the_years(known_index):
    shares = known_index.topics.by("year", "coarse").set_index("cluster")
    assert shares.attrs["values"] == [c for c in shares.columns if isinstance(c, int)] == [2021, 2022, 2024]
    proteins = _topic_of(known_index, "protein0", "coarse_cluster")
    traffic = _topic_of(known_index, "traffic0", "coarse_cluster")
    assert shares.loc[traffic, "change"] > 0.3 and shares.loc[proteins, "change"] < -0.3
    assert shares.index[0] == traffic and shares.index[-1] == proteins  # grew most first, shrank most last


@pytest.mark.slow
def test_cli_topics_bridges_and_a_corpus_without_years(known_index, sample_index_dir):
    listed = json.loads(paperscope("topics", "--index", known_index.folder, "--json", check=True).stdout)
    assert sum(topic["size"] for topic in listed) == (known_index.papers["coarse_cluster"] >= 0).sum()
    assert all(len(topic["central_titles"]) == min(3, topic["size"]) and 0 < topic["share"] <= 1 for topic in listed)
    shown = paperscope("topics", "--level", "fine", "--index", known_index.folder, check=True).stdout
    assert all(name in shown for name in known_index.topics.table("fine")["name"])
    a, b, expected = next(found for found in _between_proteins_and_traffic(known_index) if len(found[2]))
    bridges = paperscope("bridges", a, b, "--index", known_index.folder, check=True).stdout
    header, *lines = bridges.splitlines()
    assert header.split()[:2] == ["balance", "10"] and [line.split()[2] for line in lines] == expected["id"].tolist()
    by_year = paperscope("topics", "--by", "year", "--index", known_index.folder, check=True).stdout
    assert "grew most:" in by_year and "2021" in by_year
    undated = paperscope("topics", "--by", "year", "--index", sample_index_dir)
    assert undated.returncode == 2 and undated.stderr.count("\n") == 1 and "no years" in undated.stderr
    with pytest.raises(UserError, match="is not one of the coarse topics"):
        known_index.topics.bridges("no such topic", a)


def test_a_gerund_whose_noun_the_abstracts_use_names_no_topic():
    texts = [f"Optimizing schedules by planning, report {i}. Optimization of plans helps." for i in range(3)]
    texts += [f"We generate schedules by planning, report {i}. Generation of plans helps." for i in range(3)]
    texts += [f"Protein folding with diffusion priors, study {i}." for i in range(6)]
    labels = np.array([0] * 6 + [1] * 6)
    candidates = [term for term, _ in topic_pools(corpus_terms(texts, 4), labels, NamingSettings())[0]]
    assert "optimizing" not in candidates and "generate" not in candidates  # "optimization", "generation": nouns
    assert "planning" in candidates and "optimization" in candidates  # "planning" has no other noun: it names


def test_two_fields_one_term_each_do_not_hang_together_as_one_topic():
    forecasting = [f"Traffic forecasting with sensors, study {i}." for i in range(10)]
    recommendation = [f"Recommendation of items to users, study {i}." for i in range(10)]
    graphs = [f"Graph forecasting of sensor networks, study {i}." for i in range(10)]
    others = [f"Protein folding with diffusion priors, study {i}." for i in range(30)]
    finder = TermFinder(forecasting + recommendation + graphs + others)
    parts = [np.arange(0, 10), np.arange(10, 20), np.arange(20, 30)]
    pool = ["forecasting", "recommendation", "graph", "sensor"]
    assert not hangs_together(finder, parts[:2], pool, NamingSettings())  # "forecasting, recommendation": glued
    assert hangs_together(finder, [parts[0], parts[2]], pool, NamingSettings())  # "forecasting" is found in both


def test_a_fine_topic_shares_its_coarse_topics_name_rather_than_a_number(sample_index):
    """A fine topic whose only honest name is its coarse topic's (the part the coarse topic is named
    after) takes it, not "lower bounds (1)"; a topic whose names all clash elsewhere is numbered."""
    terms = {0: TopicTerms(["lower bounds"], 1), 1: TopicTerms(["lower bounds"], 1)}
    shared = {0: "lower bounds", 1: "lower bounds"}
    assert topic_names(terms, {"lower bounds"}, shared) == {0: "lower bounds", 1: "lower bounds (2)"}
    assert topic_names(terms, {"lower bounds"}) == {0: "lower bounds (1)", 1: "lower bounds (2)"}
    fine = sample_index.topics.overview("fine")
    assert not fine["name"].str.contains(r"\(\d+\)$").any(), fine["name"].tolist()
