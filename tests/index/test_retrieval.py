"""Hybrid keyword + vector search, acronyms, more-like-these, and the quality benchmark's arithmetic."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from paperscope import Feedback, PaperIndex, QuerySettings, UserError, build_index
from paperscope.index.analysis.evaluation import evaluate, label_agreement, labels_by_id
from paperscope.index.store.generations import read_generation
from tests.conftest import paperscope


def test_label_agreement_matches_a_hand_computed_case():
    labels = ["a", "a", "a", "b"]
    neighbours = [["a", "a"], ["a", "a"], ["a", "b"], ["b", "b"]]
    # P@1: all four first neighbours agree. P@2: (1 + 1 + 0.5 + 1) / 4. Macro: a = 2.5 / 3, b = 1.
    assert label_agreement(labels, neighbours, k=2) == pytest.approx(
        {"P@1": 1.0, "P@2": 0.875, "macro P@2": (2.5 / 3 + 1) / 2}
    )


@pytest.mark.slow
def test_benchmark_runs_through_the_index_on_a_labelled_fixture(tmp_path):
    records = [
        {"id": f"g{i}", "title": t, "abstract": a, "label": "graphs"}
        for i, (t, a) in enumerate(
            [
                ("Graph neural networks", "Message passing graph neural networks classify nodes in citation graphs."),
                ("Graph attention", "Attention over graph neighbourhoods improves node classification on graphs."),
                ("Graph pooling", "Hierarchical pooling of graph neural networks for molecule property prediction."),
            ]
        )
    ]
    records += [
        {"id": f"v{i}", "title": t, "abstract": a, "label": "vision"}
        for i, (t, a) in enumerate(
            [
                ("Video diffusion", "Diffusion models generate high-resolution video frames from text prompts."),
                ("Image diffusion", "Latent diffusion generates photorealistic images from captions."),
                ("Diffusion speed-up", "Fewer sampling steps make diffusion image generation faster."),
            ]
        )
    ]
    corpus = tmp_path / "labelled.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in records))
    build_index([corpus], tmp_path / "index")
    index = PaperIndex.load(tmp_path / "index")
    index.papers["label"] = index.papers["id"].map(labels_by_id(str(corpus)))
    for mode in ("dense", "keyword", "hybrid"):
        assert evaluate(index, mode, k=2) == {"P@1": 1.0, "P@2": 1.0, "macro P@2": 1.0}


def test_acronym_queries_return_the_papers_using_them_first(sample_index):
    # hyphenated ones too, which the keyword index splits into words: found by each of their words
    for acronym in ("ATSP", "DiT", "RLVR", "VBench", "DiT-XL", "TF-Bench", "E2E-VGuard", "CelebA-HQ"):
        uses = re.compile(rf"(?<![\w-]){re.escape(acronym)}s?(?![\w-])")  # as a whole word, in any field
        papers = sample_index.papers
        users = {row for row, text in enumerate(papers["title"] + " " + papers["abstract"]) if uses.search(text)}
        assert users, acronym
        results = sample_index.search(acronym, k=len(users) + 3).to_pandas()
        top = [int(sample_index.rows(i)[0]) for i in results["id"][: len(users)]]
        assert set(top) == users, acronym
    dit = sample_index.search("DiT", k=2).to_pandas()["abstract"]
    assert all("DiT" in abstract for abstract in dit)


def test_a_hyphenated_acronym_is_found_by_its_indexed_words(tmp_path):
    import pyarrow as pa

    from paperscope.index.build.keyword_fit import fit_keyword_index
    from paperscope.index.common.papers import PaperTable
    from paperscope.index.search.acronym_boost import acronym_rows

    papers = [
        ("Check-ins", "Users visit Points-of-Interest (POIs) every day."),  # "interest" is a stop word
        ("Drifting interests", "Their interests drift over time."),  # "interests" is not
        ("Scaling", "We train DiT-XLs on images."),  # the acronym's plural
        ("Other points", "Points of view on the interests of users, and XL models."),  # its words, not it
    ]
    texts = [f"{title}. {abstract}" for title, abstract in papers]
    keyword = fit_keyword_index(texts)
    assert "interest" in keyword.stop_words and keyword.rows_with_term("interests") is not None
    titles, abstracts = zip(*papers, strict=True)
    columns = {"id": [str(i) for i in range(len(papers))], "title": list(titles), "abstract": list(abstracts)}
    table = PaperTable(pa.table(columns), tmp_path)
    assert acronym_rows("Points-of-Interest", table, keyword).tolist() == [0]
    assert acronym_rows("DiT-XL", table, keyword).tolist() == [2]


def test_keyword_search_needs_no_model(sample_index_dir):
    index = PaperIndex.load(sample_index_dir)
    results = index.search("traveling salesman", k=3, mode="keyword").to_pandas()
    assert "Traveling Salesman" in results["abstract"][0] and "encoder" not in index.__dict__
    assert (results["keyword_score"] == results["score"]).all()


def test_more_like_these_less_like_those(sample_index):
    ids = sample_index.papers["id"].tolist()
    positive, negative = [ids[0], ids[19]], [ids[20]]
    both = sample_index.similar(positive, k=36, mode="dense").to_pandas()
    assert not set(positive) & set(both["id"]) and len(both) == 36
    centroid = sample_index.vectors[[0, 19]].mean(axis=0)
    expected = np.argsort(-(sample_index.vectors @ centroid))
    expected = [ids[row] for row in expected if row not in (0, 19)][:5]
    assert both["id"].tolist()[:5] == expected
    without = sample_index.similar(positive, k=36, mode="dense", negative=negative).to_pandas()
    assert ids[20] not in without["id"].tolist()
    close_to_negative = sample_index.similar(ids[20], k=3, mode="dense").to_pandas()["id"].tolist()
    rank_before = {i: r for r, i in zip(both["rank"], both["id"], strict=True)}
    rank_after = {i: r for r, i in zip(without["rank"], without["id"], strict=True)}
    assert sum(rank_after[i] for i in close_to_negative if i in rank_after) > sum(
        rank_before[i] for i in close_to_negative if i in rank_after
    )
    with pytest.raises(UserError, match="unknown mode"):
        sample_index.similar(ids[0], mode="fuzzy").to_pandas()


def test_hybrid_blends_the_two_scores_with_the_manifest_weight(sample_index):
    weight = sample_index.manifest.search.hybrid_weight
    results = sample_index.similar(sample_index.papers["id"][3], k=5, mode="hybrid").to_pandas()
    rows = sample_index.rows(results["id"].tolist())
    smoothed = np.asarray(
        read_generation(sample_index.folder).smoothed
    )  # the dense side of hybrid: neighbour-smoothed vectors
    np.testing.assert_allclose(
        results["score"], weight * (smoothed[rows] @ smoothed[3]) + (1 - weight) * results["keyword_score"], atol=1e-5
    )
    np.testing.assert_allclose(
        results["cosine"], np.asarray(sample_index.vectors)[rows] @ sample_index.vectors[3], atol=1e-5
    )
    assert sample_index.manifest.search.similar_mode in ("dense", "keyword", "hybrid")


@pytest.mark.slow
def test_cli_more_like_these_and_modes(sample_index_dir, sample_index):
    ids = sample_index.papers["id"].tolist()
    command = [
        "similar",
        ids[0],
        ids[19],
        "--not",
        ids[20],
        "--index",
        str(sample_index_dir),
        "-k",
        "4",
        "--mode",
        "dense",
        "--json",
    ]
    results = json.loads(paperscope(*command, check=True).stdout)
    expected = sample_index.similar([ids[0], ids[19]], k=4, mode="dense", negative=[ids[20]]).to_pandas()
    assert [r["id"] for r in results] == expected["id"].tolist()
    keyword = paperscope(
        "search", "ATSP", "--index", sample_index_dir, "--mode", "keyword", "-k", "1", check=True
    ).stdout
    assert "Asymmetric Traveling Salesman" in keyword


@pytest.mark.slow
def test_query_rows_match_scikit_learns_tfidf_and_queries_never_import_it(sample_index_dir, sample_index):
    from sklearn.feature_extraction.text import TfidfVectorizer

    from paperscope.index.common.keyword import analyzer

    texts = sample_index.papers["abstract"].tolist()
    fitted = TfidfVectorizer(
        analyzer=analyzer(read_generation(sample_index.folder).keyword.stop_words), sublinear_tf=True, dtype=np.float32
    ).fit(texts)
    queries = [*texts[:5], "Making diffusion transformers faster with DiT caching", "graph graph graph networks"]
    expected = fitted.transform(queries).toarray()
    assert read_generation(sample_index.folder).keyword.terms == fitted.get_feature_names_out().tolist()
    keyword = read_generation(sample_index.folder).keyword
    np.testing.assert_allclose(keyword.transform(queries).toarray(), expected, atol=1e-5)
    np.testing.assert_allclose(np.vstack([keyword.query(text).toarray() for text in queries]), expected, atol=1e-5)
    ids = sample_index.papers["id"]
    script = (
        f"import sys; from paperscope import PaperIndex; ix = PaperIndex.load({str(sample_index_dir)!r}); "
        f"ix.search('graph networks', mode='keyword').to_pandas(); ix.search('graph networks').to_pandas(); "
        f"ix.explain({ids[0]!r}, other_id={ids[1]!r}); ix.explain({ids[0]!r}, query='graph networks'); "
        "print('sklearn' in sys.modules)"
    )

    assert (
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_text_queries_use_their_own_weight_and_feedback_only_when_short(sample_index):
    search = sample_index.manifest.search
    assert search.search_weight != search.hybrid_weight  # tuned apart, on text queries
    short = "diffusion transformers"
    plain = sample_index.search(short, k=5, settings=QuerySettings(feedback=Feedback(on=False))).to_pandas()
    rows = sample_index.rows(plain["id"].tolist())
    vector = sample_index.embed_query(short)
    expected = search.search_weight * (np.asarray(read_generation(sample_index.folder).smoothed)[rows] @ vector)
    np.testing.assert_allclose(
        plain["score"], expected + (1 - search.search_weight) * plain["keyword_score"], atol=1e-5
    )
    expanded = sample_index.search(short, k=5).to_pandas()  # feedback is on by default for short queries
    assert not np.allclose(expanded["score"], plain["score"])
    assert plain["id"][0] in expanded["id"].tolist()
    long = " ".join(sample_index.papers["abstract"][0].split()[:40])  # over FEEDBACK["max_words"]: no feedback
    assert (
        sample_index.search(long, k=5)
        .to_pandas()
        .equals(sample_index.search(long, k=5, settings=QuerySettings(feedback=Feedback(on=False))).to_pandas())
    )


def test_exact_keyword_scores_equal_the_sparse_product_even_for_papers_without_terms():
    from paperscope.index.build.keyword_fit import fit_keyword_index

    texts = ["graph neural networks on molecules", "the of and", "graph transformers for proteins", "a an the"]
    keyword = fit_keyword_index(texts * 3)
    query = keyword.transform(["graph neural proteins"])
    rows = np.array([1, 0, 3, 2, 5, 11])
    expected = np.asarray((keyword.matrix[rows] @ query.T).todense()).ravel()
    assert np.allclose(keyword.row_scores(rows, query), expected) and expected[0] == 0 and expected[1] > 0
    mean = keyword.weighted_rows([0, 2, 1], [0.5, 0.5, -0.25])
    expected_mean = 0.5 * keyword.matrix[[0, 2]].sum(axis=0) - 0.25 * keyword.matrix[1].toarray()
    assert np.abs(mean.toarray() - expected_mean).max() < 1e-6 and np.abs(expected_mean).max() > 0


def test_added_rows_are_merged_into_the_postings_as_a_fresh_index_orders_them():
    from paperscope import locations
    from paperscope.index.build.keyword_fit import fit_keyword_index
    from paperscope.index.common.keyword import KeywordIndex
    from tests.support.corpora import read_corpus

    texts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    whole = fit_keyword_index(texts + texts[:4])  # the last four repeat earlier papers: weights tie
    first = KeywordIndex(whole.matrix[:30], whole.terms, whole.idf, sorted(whole.stop_words))
    grown = first.appended(whole.matrix[30:]).appended(whole.matrix[:0])  # and an empty step
    expected = KeywordIndex(whole.matrix, whole.terms, whole.idf, []).by_term
    for array in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(grown.by_term, array), getattr(expected, array)), array
    assert (grown.matrix != whole.matrix).nnz == 0


def test_keyword_rows_replaced_and_appended_match_a_sort_from_scratch():
    """A paper's new text (``add`` of a new version) replaces its keyword row and postings in place."""
    import scipy.sparse

    from paperscope import locations
    from paperscope.index.build.keyword_fit import fit_keyword_index
    from paperscope.index.common.keyword import KeywordIndex
    from tests.support.corpora import read_corpus

    texts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    whole = fit_keyword_index(texts)
    at = np.array([0, 7, 20, 37, 38, 39])  # four papers' texts replaced by others', two appended
    replacement = whole.matrix[[5, 30, 1, 2, 3, 4]]
    spliced = whole.with_rows(at, replacement)
    rows = whole.matrix.toarray().copy()
    rows = np.vstack([rows, np.zeros((2, rows.shape[1]), dtype=rows.dtype)])
    rows[at] = replacement.toarray()
    expected = KeywordIndex(scipy.sparse.csr_matrix(rows), whole.terms, whole.idf, []).by_term
    got = spliced.by_term
    assert np.array_equal(got.indptr, expected.indptr) and np.array_equal(got.data, expected.data)  # weight order

    def postings(by_term) -> set:  # equal weights may come in another row order
        columns = np.repeat(np.arange(by_term.shape[1]), np.diff(by_term.indptr))
        return set(zip(columns.tolist(), by_term.indices.tolist(), by_term.data.tolist(), strict=True))

    assert postings(got) == postings(expected)
    assert np.array_equal(spliced.matrix.toarray(), rows)


def test_hybrid_returns_k_papers_when_k_exceeds_its_candidates(sample_index):
    few = QuerySettings(mode="hybrid", candidates=5)  # 5 of 38 papers, as 200 of a large corpus
    first = sample_index.papers["id"][0]
    assert len(sample_index.similar(first, k=30, settings=few).to_pandas()) == 30  # not only the 5 + 5 candidates
    within = sample_index.where(topics=[sample_index.topics.overview("coarse")["name"][0]])
    found = sample_index.search("learning", k=50, within=within, settings=few).to_pandas()
    assert len(found) == within.sum() and set(found["id"]) == set(sample_index.papers["id"][within])


@pytest.mark.slow
def test_a_word_of_a_single_paper_is_found_in_a_large_corpus_and_a_query_matching_nothing_says_so(sample_index):
    from paperscope.index.build.keyword_fit import PHRASES_FROM_TWO, fit_keyword_index

    words = ["graph", "learning", "robot", "planning", "vision", "language", "proof", "theorem", "agent", "market"]
    texts = [
        f"{words[i % 10]} {words[(i * 7) % 10]} networks study number {i % 50}" for i in range(PHRASES_FROM_TWO + 200)
    ]
    texts[123] += " oversmoothing in deep message passing"
    keyword = fit_keyword_index(texts)
    scores = keyword.scores(keyword.transform(["oversmoothing"]))
    assert np.flatnonzero(scores > 0).tolist() == [123]  # the one paper that uses the word
    assert "message passing" not in keyword.terms and "oversmoothing" in keyword.terms  # a one-paper phrase is not
    norms = np.sqrt(np.asarray(keyword.matrix.multiply(keyword.matrix).sum(axis=1)).ravel())
    assert np.allclose(norms, 1, atol=1e-5)  # rows still unit length once phrases were dropped

    for nothing in ("xxxxqq", "🙂🙂"):
        found = sample_index.search(nothing, k=5, mode="keyword").to_pandas()
        assert found.empty and found.attrs["note"].startswith("no paper contains a word of")
    assert (
        sample_index.search("diffusion", k=50, mode="keyword").to_pandas()["keyword_score"] > 0
    ).all()  # no 0.000 filler
    done = paperscope("search", "xxxxqq", "--mode", "keyword", "--index", sample_index.folder, "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == [] and "no paper contains" in done.stderr
