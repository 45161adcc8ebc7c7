"""Near-duplicates, outliers and why-similar explanations on the real sample."""

import json

import pytest

from paperscope import PaperIndex, UserError, build_index, locations
from paperscope.embed.terms import singular
from paperscope.index.analysis.evaluation import edited_versions
from paperscope.index.search.explain import shared_terms
from paperscope.limits import DUPLICATE_THRESHOLD
from tests.conftest import paperscope
from tests.support.corpora import read_corpus


@pytest.fixture(scope="module")
def index_with_versions(tmp_path_factory):
    """The sample plus edited versions of three of its abstracts, as a second upload would add."""
    papers, _ = read_corpus(locations.bundled_corpus())
    folder = tmp_path_factory.mktemp("versions")
    edits = [
        edited_versions(papers["abstract"][row])[edit]
        for row, edit in [(2, "sentences swapped"), (11, "reworded"), (25, "every 15th word dropped")]
    ]
    (folder / "versions.txt").write_text("\n\n".join(edits))
    build_index([*locations.bundled_corpus(), folder / "versions.txt"], folder / "index")
    return PaperIndex.load(folder / "index"), [papers["id"][row] for row in (2, 11, 25)]


@pytest.mark.slow
def test_edited_versions_are_found_and_different_papers_are_not(index_with_versions):
    index, originals = index_with_versions
    pairs = index.duplicates()
    assert len(pairs) == 3
    assert sorted(set(pairs["id_a"]) & set(originals) | set(pairs["id_b"]) & set(originals)) == sorted(originals)
    assert (pairs["score"] >= DUPLICATE_THRESHOLD).all() and pairs["score"].is_monotonic_decreasing


def test_sample_alone_has_no_duplicates_and_a_low_threshold_finds_topic_neighbours(sample_index):
    assert sample_index.duplicates().empty
    loose = sample_index.duplicates(threshold=0.6)
    assert len(loose) >= 1 and (loose["score"] >= 0.6).all()
    with pytest.raises(UserError, match="threshold"):
        sample_index.duplicates(threshold=0)


def test_outliers_are_the_papers_farthest_from_all_others(sample_index):
    table = sample_index.outliers(count=3)
    vectors = sample_index.vectors
    similarity = vectors @ vectors.T
    for row in range(len(vectors)):
        similarity[row, row] = -1
    nearest = similarity.max(axis=1)
    assert table["nearest_score"].tolist() == pytest.approx(sorted(nearest)[:3], abs=1e-5)


def test_explain_gives_matching_sentences_and_shared_terms(sample_index):
    titles = dict(zip(sample_index.papers["title"], sample_index.papers["id"], strict=True))
    asdsv = next(i for t, i in titles.items() if t.startswith("ASDSV"))
    jenga = next(i for t, i in titles.items() if t.startswith("Jenga"))
    why = sample_index.explain(asdsv, other_id=jenga)
    assert why.score == pytest.approx(
        float(
            sample_index.vectors[int(sample_index.rows(asdsv)[0])]
            @ sample_index.vectors[int(sample_index.rows(jenga)[0])]
        ),
        abs=1e-4,
    )
    assert "vbench" in why.shared_terms  # a rare term both use
    for text in (sample_index.paper(asdsv)["abstract"], sample_index.paper(jenga)["abstract"]):
        assert all(singular(term.split()[-1]) in text.lower() for term in why.shared_terms)
    first, second, similarity = why.sentence_pairs[0]
    assert first in sample_index.paper(asdsv)["abstract"] and second in sample_index.paper(jenga)["abstract"]
    assert similarity > 0.5 and why.sentence_pairs[0][2] >= why.sentence_pairs[1][2]
    query = sample_index.explain(asdsv, query="speculative decoding for diffusion")
    assert "speculative decoding" in query.shared_terms
    with pytest.raises(UserError, match="either a second paper id or a query"):
        sample_index.explain(asdsv)


def test_shared_terms_match_singular_and_plural_and_show_them_as_written():
    text_a = "Sparse transformers design molecules. Our policies steer the sparse transformers."
    text_b = "A sparse transformer for one molecule, with a learned policy."
    terms = shared_terms(text_a, text_b, idf_of=lambda term: 3.0, stop_words=frozenset({"our", "the", "for", "one"}))
    assert terms[0] == "sparse transformers"  # as text A writes it, matched to "sparse transformer"
    assert {"molecules", "policies"} <= set(terms)


@pytest.mark.slow
def test_cli_explain_and_duplicates(sample_index_dir, sample_index):
    first, second = sample_index.papers["id"][0], sample_index.papers["id"][20]
    explained = json.loads(
        paperscope("explain", first, second, "--index", sample_index_dir, "--json", check=True).stdout
    )
    assert set(explained) == {"score", "shared_terms", "sentence_pairs"} and len(explained["sentence_pairs"]) == 2
    pairs = paperscope("duplicates", "--index", sample_index_dir, "--threshold", "0.6", "--json", check=True)
    assert json.loads(pairs.stdout) == sample_index.duplicates(0.6).to_dict("records")


def test_a_topic_is_found_by_its_words_and_several_candidates_are_listed_alone(sample_index):
    from paperscope.embed.terms import words
    from paperscope.index.analysis.topic_analysis import find_topic

    names = dict(
        zip(sample_index.topics.table("fine")["cluster"], sample_index.topics.table("fine")["name"], strict=True)
    )
    alone = []
    for number, name in names.items():
        if number < 0:
            continue
        backwards = " ".join(reversed(words(name)))  # its words in another order: still that topic, if alone
        asked = {singular(word) for word in words(backwards)}
        holders = [n for n, other in names.items() if asked <= {singular(word) for word in words(other)}]
        if holders == [number]:
            alone.append(number)
            assert find_topic(sample_index, backwards, "fine") == number
    assert alone, f"no fine topic's words are its own: {names}"  # else the loop above checked nothing
    parts = (name[i : i + 3] for name in names.values() for i in range(len(name) - 2))
    shared = next(p for p in parts if p.isalpha() and 2 <= sum(p in n for n in names.values()) < len(names))
    holding = [name for name in names.values() if shared in name]
    with pytest.raises(UserError) as raised:
        find_topic(sample_index, shared, "fine")
    message = str(raised.value)
    assert f"matches {len(holding)} fine topics" in message
    assert all(name in message for name in holding) and all(
        n not in message for n in names.values() if n not in holding
    )


@pytest.mark.slow
def test_topics_over_one_year_say_there_is_only_one(tmp_path):
    papers, _ = read_corpus(locations.bundled_corpus()[:1])
    corpus = tmp_path / "one-year.jsonl"
    corpus.write_text("".join(json.dumps({"abstract": text, "year": 2024}) + "\n" for text in papers["abstract"]))
    build_index([corpus], tmp_path / "index")
    done = paperscope("topics", "--by", "year", "--index", tmp_path / "index")
    assert (
        done.returncode == 0 and "only one year in this corpus (2024)" in done.stdout and "grew most" not in done.stdout
    )
