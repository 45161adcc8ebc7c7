"""Recommendations for a collection (``PaperIndex.recommend``) on the real sample index: members
excluded, topics kept and pushed away, outside papers steer, the numpy SVM is LinearSVC's."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from paperscope.errors import UserError
from paperscope.index.store.generations import read_generation
from tests.conftest import paperscope


@pytest.fixture(scope="module")
def topics(sample_index) -> tuple[dict[str, int], dict[int, list[str]]]:
    """Each paper's coarse topic, and the papers of each coarse topic (largest first)."""
    table = sample_index.table(columns=["id", "coarse_cluster"]).to_pandas()
    topic_of = dict(zip(table["id"], table["coarse_cluster"], strict=True))
    counts = table[table["coarse_cluster"] >= 0]["coarse_cluster"].value_counts()
    return topic_of, {int(topic): table["id"][table["coarse_cluster"] == topic].tolist() for topic in counts.index}


def test_members_are_excluded_and_k_is_kept(sample_index, topics):
    _, papers = topics
    members = papers[next(iter(papers))][:3]
    avoided = papers[list(papers)[1]][:2]
    found = sample_index.recommend(members, negative=avoided, k=7).to_pandas()
    assert len(found) == 7 and found["rank"].tolist() == list(range(1, 8))
    assert not found["id"].isin(members + avoided).any()
    columns = list(sample_index.similar(members, k=7).to_pandas().columns)
    assert list(found.columns) == [*columns[:6], "because", *columns[6:]]  # similar's, and each one's reason
    assert found["score"].is_monotonic_decreasing
    everything = sample_index.recommend(members, k=1000).to_pandas()  # more than the index holds: every other paper
    assert len(everything) == len(sample_index) - 3


def test_a_collection_of_one_topic_recommends_that_topic(sample_index, topics):
    topic_of, papers = topics
    large = {topic: ids for topic, ids in papers.items() if len(ids) >= 8}  # 4 members, and 4 more to find
    assert large, f"no coarse topic of the sample has 8 papers: {[len(ids) for ids in papers.values()]}"
    for topic, ids in large.items():
        found = sample_index.recommend(ids[:4], k=4).to_pandas()
        same = sum(topic_of[paper] == topic for paper in found["id"])
        assert same >= 3, (topic, [topic_of[paper] for paper in found["id"]])


def test_papers_to_avoid_push_their_topic_away(sample_index, topics):
    topic_of, papers = topics
    first, second = list(papers)[:2]
    collection = papers[first][:3] + papers[second][:3]
    avoided = papers[second][3:6]
    before = sample_index.recommend(collection, k=10).to_pandas()["id"]
    after = sample_index.recommend(collection, negative=avoided, k=10).to_pandas()["id"]
    assert sum(topic_of[p] == second for p in after) < sum(topic_of[p] == second for p in before)


def test_outside_papers_steer_by_their_vectors(sample_index, topics):
    topic_of, papers = topics
    row = 3
    copy = sample_index.vectors[[row]]  # a paper outside the index with this paper's vector
    alone = sample_index.recommend([], positive_vectors=copy, k=3).to_pandas()
    assert alone["id"].iloc[0] == sample_index.ids()[row]
    first = next(iter(papers))
    other = next(paper for paper in sample_index.ids() if topic_of[paper] not in (first, -1))
    outside = sample_index.vectors[sample_index.rows([other])]
    plain = sample_index.recommend(papers[first][:3], k=8).to_pandas()["id"]
    steered = sample_index.recommend(papers[first][:3], k=8, positive_vectors=outside).to_pandas()["id"]
    near_other = {paper for paper in sample_index.ids() if topic_of[paper] == topic_of[other]}
    assert len(near_other & set(steered)) > len(near_other & set(plain))
    pushed = sample_index.recommend(papers[first][:3], k=8, negative_vectors=outside).to_pandas()["id"]
    assert len(near_other & set(pushed)) <= len(near_other & set(plain))


def test_within_keeps_only_the_masked_papers(sample_index, topics):
    _, papers = topics
    within = np.zeros(len(sample_index), dtype=bool)
    within[::2] = True
    found = sample_index.recommend(papers[next(iter(papers))][:3], k=5, within=within)
    assert len(found.rows) == 5 and within[found.rows].all()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"positive": []}, "at least one paper"),
        ({"positive": ["no-such-paper"]}, "no-such-paper"),
        ({"positive": [], "negative": ["no-such-paper"]}, "no-such-paper"),
        ({"positive": None, "k": 0}, "k must be"),
        ({"positive": None, "within": np.ones(3, dtype=bool)}, "boolean mask"),
    ],
)
def test_bad_input_is_a_one_line_user_error(sample_index, arguments, message):
    arguments = dict(arguments)
    if arguments["positive"] is None:
        arguments["positive"] = sample_index.ids()[:2]
    with pytest.raises(UserError, match=message) as raised:
        sample_index.recommend(**arguments).to_pandas()
    assert "\n" not in str(raised.value)


def test_the_numpy_svm_is_linear_svc(sample_index):
    """fit_svm minimises LinearSVC's own objective: the same margins (scikit-learn only here)."""
    from sklearn.svm import LinearSVC

    from paperscope.index.search.recommend import fit_svm

    dense, sparse = (
        np.asarray(read_generation(sample_index.folder).smoothed),
        read_generation(sample_index.folder).keyword.matrix.tocsr(),
    )
    labels = -np.ones(len(dense))
    labels[:5] = 1
    weights = np.where(labels > 0, len(labels) / 10, len(labels) / (2 * (len(labels) - 5)))
    both = scipy.sparse.hstack([scipy.sparse.csr_matrix(dense), sparse], format="csr")
    expected = LinearSVC(C=0.1, tol=1e-8, max_iter=100_000).fit(both, labels, sample_weight=weights)
    dense_weights, term_weights, bias = fit_svm(dense, sparse, labels, weights)
    margins = dense @ dense_weights + sparse @ term_weights + bias
    assert np.allclose(margins, expected.decision_function(both), atol=2e-3)


def test_one_score_scale_decreasing_with_rank(sample_index, topics):
    """similar, search and recommend score on one scale (similar's hybrid similarity; recommend
    moves it by at most 0.3 by its classifier; search adds 0.25 for the query's acronym), and the
    score decreases with rank (it is what the papers are ranked by)."""
    _, papers = topics
    members = papers[next(iter(papers))][:4]
    similar = sample_index.similar(members, k=30).to_pandas()
    recommended = sample_index.recommend(members, k=30).to_pandas()
    for found in (similar, recommended, sample_index.search("DiT diffusion transformers", k=20).to_pandas()):
        assert found["score"].is_monotonic_decreasing and found["score"].between(-1, 1.25).all()
    both = similar.merge(recommended, on="id", suffixes=("_similar", "_recommend"))
    assert len(both) >= 10
    assert (abs(both["score_recommend"] - both["score_similar"]) <= 0.3 + 1e-5).all()


def test_each_recommendation_says_why(sample_index, topics):
    _, papers = topics
    members = papers[next(iter(papers))][:4]
    found = sample_index.recommend(members, k=10)
    assert len(found.rows) == 10  # else the loop below checks nothing
    vectors, member_rows = sample_index.vectors, sample_index.rows(members)
    terms = read_generation(sample_index.folder).keyword
    for row, because in zip(found.rows, found.to_pandas()["because"], strict=True):
        named = [member["id"] for member in because["members"]]
        cosines = vectors[member_rows] @ vectors[row]
        assert named == [members[i] for i in np.argsort(-cosines, kind="stable")[:2]]  # the closest two
        assert [member["similarity"] for member in because["members"]] == [
            round(float(c), 3) for c in sorted(cosines)[::-1][:2]
        ]
        mine = set(terms.matrix[row].indices)
        theirs = set(terms.matrix[member_rows].indices)
        assert 0 < len(because["terms"]) <= 4
        assert all(terms.terms.index(term) in mine & theirs for term in because["terms"])


def test_a_collection_of_two_parts_is_served_from_both(sample_index, topics):
    topic_of, papers = topics
    first, second = list(papers)[:2]
    collection = papers[first][:3] + papers[second][:3]
    found = sample_index.recommend(collection, k=8).to_pandas()["id"]
    shares = [sum(topic_of[paper] == topic for paper in found) for topic in (first, second)]
    assert min(shares) >= 2, shares


@pytest.mark.slow
def test_reasons_reach_the_command_line_and_the_service(sample_index_dir, tmp_path, topics):
    import json

    from fastapi.testclient import TestClient

    from paperscope.ui.service import create_app
    from tests.conftest import copy_index

    _, papers = topics
    members = papers[next(iter(papers))][:3]
    folder = copy_index(sample_index_dir, tmp_path / "index")
    client = TestClient(create_app(folder))
    assert client.put("/collections/mine", json={"ids": members}).status_code in (200, 201)
    answer = client.post("/recommend", json={"collection": "mine", "k": 5}).json()
    assert [paper["score"] for paper in answer] == sorted((paper["score"] for paper in answer), reverse=True)
    for paper in answer:
        assert {member["id"] for member in paper["because"]["members"]} <= set(members) and paper["because"]["terms"]
    printed = paperscope("recommend", "mine", "--index", folder, "-k", "5", check=True).stdout.splitlines()
    reasons = printed[1::2]  # a paper's line, then why
    assert len(reasons) == 5 and all(line.strip().startswith("like ") and "; shares " in line for line in reasons)
    assert [line.split()[2] for line in printed[::2]] == [paper["id"] for paper in answer]  # the same picks
    as_json = paperscope("recommend", "mine", "--index", folder, "-k", "5", "--json", check=True).stdout
    assert [paper["because"] for paper in json.loads(as_json)] == [paper["because"] for paper in answer]


@pytest.mark.slow
def test_a_new_papers_reason_says_when_it_came(sample_index_dir, tmp_path, topics):
    import json

    from paperscope import PaperIndex
    from paperscope.index.build.add import add_papers
    from paperscope.index.search.filters import moment
    from tests.conftest import copy_index
    from tests.index.test_add import NEW_PAPERS

    _, papers = topics
    folder = copy_index(sample_index_dir, tmp_path / "index")
    index = PaperIndex.load(folder)
    index.collections.create("feed", ids=papers[next(iter(papers))][:3])
    index.collections.mark_shown(["feed"])
    corpus = tmp_path / "new.jsonl"
    records = [{"id": f"n{i}", "title": title, "abstract": text} for i, (title, text) in enumerate(NEW_PAPERS)]
    corpus.write_text("\n".join(json.dumps(record) for record in records))
    add_papers([corpus], folder)
    grown = PaperIndex.load(folder)
    found = grown.collections.recommend("feed", k=3, new=True).to_records()
    shown_at = grown.collections.shown("feed")
    assert found and all(paper["id"].startswith("n") for paper in found)
    assert all(paper["because"]["added"] == paper["added"] >= moment(shown_at) for paper in found)
    printed = paperscope("recommend", "feed", "--new", "-k", "3", "--index", folder, check=True).stdout
    assert printed.count("; new, came ") == len(found)


@pytest.mark.slow  # a copy of the sample index, its entries embedded, the command line in subprocesses
def test_reasons_name_library_entries_outside_the_corpus_by_title(sample_index_dir, sample_index, tmp_path, topics,
                                                                  monkeypatch):  # fmt: skip
    import json

    from fastapi.testclient import TestClient

    from paperscope.ui.service import create_app
    from tests.conftest import copy_index

    _, papers = topics
    rows = sample_index.rows(papers[next(iter(papers))][:2])
    abstracts = sample_index.table(rows, ["abstract"]).column("abstract").to_pylist()
    titles = {"notes2024": "My notes on the first paper", "draft2025": "A draft of ours on the same question"}
    library = tmp_path / "mine.bib"  # entries no corpus paper matches (new titles, no DOI): all outside
    entries = zip(titles.items(), abstracts, strict=True)
    library.write_text(
        "".join(f"@misc{{{key}, title = {{{title}}}, abstract = {{{text}}}}}\n" for (key, title), text in entries)
    )
    folder = copy_index(sample_index_dir, tmp_path / "index")
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))

    created = paperscope("collection", "create", "mine", "--from", library, "--index", folder)
    assert created.returncode == 0 and "2 new outside the corpus" in created.stderr, created.stderr
    shown = paperscope("collection", "show", "mine", "--index", folder).stdout
    assert "[notes2024]" in shown and "[draft2025]" in shown and "outside:" not in shown  # their own keys
    found = json.loads(paperscope("recommend", "mine", "-k", "3", "--json", "--index", folder).stdout)
    for paper in found:
        closest = paper["because"]["members"]
        assert closest and all(m["id"] is None and titles[m["citation_key"]] == m["title"] for m in closest)
        assert paper["because"]["terms"]  # shared with the entries' own text
    printed = paperscope("recommend", "mine", "-k", "3", "--index", folder).stdout
    assert "“My notes on the first paper” (" in printed and "outside:" not in printed and "; shares " in printed
    answer = TestClient(create_app(folder)).post("/recommend", json={"collection": "mine", "k": 3}).json()
    assert [paper["because"] for paper in answer] == [paper["because"] for paper in found]
