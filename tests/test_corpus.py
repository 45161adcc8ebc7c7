"""Corpus readers: every format, field names, normalisation, stable ids, duplicates, titles."""

import gzip
import json
import logging
import re

import pandas as pd
import pytest

from paperscope import UserError, locations
from paperscope.embed.corpus import text_id
from paperscope.embed.text import split_sentences
from paperscope.embed.titles import derive_title
from tests.corpora import read_corpus

ABSTRACT_A = "We study  graph neural networks\non heterophilic graphs. Results improve accuracy."
ABSTRACT_B = "Diffusion models generate video. We make them faster with sparse attention."

SAMPLE_TITLES = [
    "ASDSV: Approximate Speculative Diffusion with Speculative Verification",
    "FlowMixer: a single-layer neural architecture that leverages constrained matrix operations",
    "SPFL: a novel updating method that can be integrated",
    "LayerCraft: a modular framework that uses large language models (LLMs)",
    "DCBAs: distillation-conditional backdoor attacks",
    "Nonparametric quantile regression using recurrent neural networks (RNNs)",
    "UniTraj: a Universal Trajectory foundation model that aims to address these limitations",
    "MoRIC: Modular Region-Based Implicit Codec",
    "Fundamentals of PCA",
    "SiriuS: a self-improving, reasoning-driven optimization framework for multi-agent systems",
    "Approach for adapting frame-based models for stable and robust inference on video",
    "MERGE: a unified model for image generation and depth estimation",
    "Scalable framework that adaptively identifies image-related concept axes",
    "Reinforcement learning with verifiable reward using one training example (1-shot RLVR)",
    "Adaptive variance inflation for Gaussian Thompson Sampling",
    "Behavior of black-box language models by asking follow-up questions",
    "IGNN: Inceptive Graph Neural Network",
    "TF-Bench: a benchmark designed to evaluate LLM reasoning based on type inference",
    "Differentially private bilevel optimization",
    "Jenga: a novel inference pipeline that combines dynamic attention carving",
    "Grafting, a simple approach for editing pretrained diffusion transformers (DiTs)",
    "Computing the exact median by leveraging side information",
    "GenComm: Generative Communication mechanism",
    "ML.ENERGY Benchmark: a benchmark suite and tool for measuring inference energy consumption",
    "Spatiotemporal over-squashing problem",
    "Aggregated statistic that explicitly incorporates kernel diversity",
    "Algorithm SUBSAMPLE-MFQ (Subsample-Mean-Field-Q-learning)",
    "Scaling up the number of fingerprints",
    "RedOUT: an unsupervised framework that integrates structural entropy",
    "Self\u2011supervised direct preference optimization",  # the abstract's non-breaking hyphen
    "Continuous relaxation framework for the Asymmetric Traveling Salesman Problem (ATSP)",
    "DAWA: distribution-adaptive watermarking algorithm",
    "ORIGEN: the first zero-shot method for 3D orientation grounding",
    "MetaSlot: a plug-and-play Slot Attention variant that adapts to variable object counts",
    "Benchmark designed to rigorously evaluate the capabilities of large language models (LLMs)",
    "ProfiX: a machine learning-guided approach based on hybrid GNN architecture",
    "DDPMs are robust to constant-variance noise in the score evaluations",
    "E2E-VGuard: a proactive defense framework for two emerging threats",
]


def test_sample_titles_are_derived_distinct_and_readable():
    papers, report = read_corpus(locations.bundled_corpus())
    assert len(papers) == 38 and not report.lines()
    assert papers["title"].tolist() == SAMPLE_TITLES
    assert papers["title"].is_unique and papers["title_derived"].all()
    assert all(len(title) <= 90 for title in SAMPLE_TITLES)
    assert set(papers["venue"]) == {"NeurIPS 2025 Papers"}  # the heading line names the collection
    # Titles, not fragments: none ends on a function word or starts a new clause.
    function_words = {"the", "a", "an", "of", "for", "to", "in", "on", "with", "and", "or", "by", "that", "which"}
    assert not [title for title in SAMPLE_TITLES if title.rstrip("…").split()[-1].lower() in function_words]
    assert not [title for title in SAMPLE_TITLES if re.search(r", which|\band demonstrate\b|, i\.e\.|: \(1\)", title)]


@pytest.mark.parametrize(
    "abstract, title",
    [
        (
            "Bandits are studied. We study a strategic variant of the multi-armed bandit problem, which we coin the "
            "strategic click-bandit.",
            "Strategic variant of the multi-armed bandit problem",
        ),
        (
            "GNNs are popular. In this work, we formalize the spatiotemporal over-squashing problem and demonstrate "
            "its distinct characteristics compared to the static case.",
            "Spatiotemporal over-squashing problem",
        ),
        (
            "Generative modeling aims to produce new random examples from an unknown target distribution. In this "
            "work, we first provide empirical evidence that DDPMs are robust to constant-variance noise.",
            "DDPMs are robust to constant-variance noise",
        ),
        (
            "DPO is costly. We address this bottleneck with self-supervised direct preference optimization, a new "
            "paradigm that removes the need for pre-generated images.",
            "Self-supervised direct preference optimization",
        ),
    ],
)
def test_derived_titles_end_where_the_phrase_does(abstract, title):
    assert derive_title(abstract) == title


def test_text_format_heading_is_optional(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(f"{ABSTRACT_A}\n\n\n{ABSTRACT_B}\n")
    papers, _ = read_corpus([path])
    assert papers["abstract"].tolist() == [
        "We study graph neural networks on heterophilic graphs. Results improve accuracy.",
        "Diffusion models generate video. We make them faster with sparse attention.",
    ]
    assert papers["source"].tolist() == ["notes.txt:1", "notes.txt:5"]


def _records():
    return [
        {
            "paper_id": "p1",
            "Title": "GNNs on heterophily",
            "Abstract": ABSTRACT_A,
            "year": 2024,
            "authors": ["Ada Lovelace", "Alan Turing"],
            "venue": "ICML",
        },
        {
            "paper_id": "p2",
            "Title": "Fast video diffusion",
            "Abstract": ABSTRACT_B,
            "year": 2025,
            "authors": ["Grace Hopper"],
            "venue": "NeurIPS",
        },
    ]


@pytest.mark.parametrize(
    "name",
    ["papers.csv", "papers.tsv", "papers.json", "papers.jsonl", "papers.parquet", "papers.csv.gz", "papers.jsonl.gz"],
)
def test_every_format_reads_the_same_papers(tmp_path, name):
    frame = pd.DataFrame(_records())
    path = tmp_path / name
    plain = name.removesuffix(".gz")
    if plain.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        if plain.endswith(".csv") or plain.endswith(".tsv"):
            flat = frame.assign(authors=frame["authors"].str.join("; "))
            text = flat.to_csv(index=False, sep="\t" if plain.endswith(".tsv") else ",")
        elif plain.endswith(".jsonl"):
            text = "\n".join(json.dumps(r) for r in _records())
        else:
            text = json.dumps({"papers": _records()})
        data = text.encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    papers, _ = read_corpus([path])
    assert papers["id"].tolist() == ["p1", "p2"]
    assert papers["title"].tolist() == ["GNNs on heterophily", "Fast video diffusion"]
    assert not papers["title_derived"].any()
    assert papers["abstract"][0] == "We study graph neural networks on heterophilic graphs. Results improve accuracy."
    assert papers["year"].tolist() == [2024, 2025]
    assert papers["authors"].tolist() == ["Ada Lovelace; Alan Turing", "Grace Hopper"]
    assert papers["venue"].tolist() == ["ICML", "NeurIPS"]


def test_arxiv_snapshot_lines(tmp_path):
    record = {
        "id": "2401.00001",
        "submitter": "A",
        "authors": "A. Author, B. Author",
        "title": "Sparse\n  attention for  video",
        "comments": "",
        "journal-ref": None,
        "doi": None,
        "categories": "cs.CV cs.LG",
        "license": None,
        "abstract": "  We make video\n diffusion fast.\n",
        "versions": [{"version": "v1"}],
        "update_date": "2024-01-02",
        "authors_parsed": [["Author", "A.", ""]],
    }
    path = tmp_path / "arxiv-metadata-oai-snapshot.json.gz"
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    papers, _ = read_corpus([path])
    row = papers.iloc[0]
    assert (row["id"], row["title"], row["abstract"]) == (
        "2401.00001",
        "Sparse attention for video",
        "We make video diffusion fast.",
    )
    assert (row["year"], row["categories"], row["authors"]) == (2024, "cs.CV cs.LG", "A. Author, B. Author")


def test_field_overrides_and_several_files(tmp_path):
    (tmp_path / "a.csv").write_text("key,headline,body\nk1,First,Alpha beta gamma delta.\n")
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"key": "k2", "headline": "Second", "body": "Epsilon zeta eta."}) + "\n"
    )
    fields = {"id": "key", "title": "headline", "abstract": "body"}
    papers, _ = read_corpus([tmp_path / "a.csv", tmp_path / "b.jsonl"], fields)
    assert papers[["id", "title"]].values.tolist() == [["k1", "First"], ["k2", "Second"]]
    with pytest.raises(UserError, match=r"a.csv: no field 'summary'"):
        read_corpus([tmp_path / "a.csv"], {"abstract": "summary"})


def test_column_names_match_whatever_their_case_spacing_or_notes(tmp_path, caplog):
    (tmp_path / "iclr.csv").write_text(
        "Paper ID#,Paper Title (final),Abstract Text,Primary Area\n"
        "p1,Sparse Attention for Video,Diffusion models generate video quickly.,generative models\n"
    )
    (tmp_path / "shout.csv").write_text("ABSTRACT,paper_abstract\nUpper case wins.,Second choice.\n")
    (tmp_path / "untitled.csv").write_text("paper_abstract\nOnly an abstract here.\n")
    with caplog.at_level(logging.INFO, logger="paperscope"):
        papers, _ = read_corpus([tmp_path / "iclr.csv"])
        assert papers[["id", "title", "abstract", "categories"]].values.tolist() == [
            ["p1", "Sparse Attention for Video", "Diffusion models generate video quickly.", "generative models"]
        ]
        assert read_corpus([tmp_path / "shout.csv"])[0]["abstract"].tolist() == ["Upper case wins."]
        untitled = read_corpus([tmp_path / "untitled.csv"])[0]
    assert untitled["abstract"].tolist() == ["Only an abstract here."] and untitled["title_derived"].all()
    said = [record.getMessage() for record in caplog.records]
    assert (  # one line names the columns used
        "iclr.csv: fields id ← 'Paper ID#', title ← 'Paper Title (final)', text ← 'Abstract Text', "
        "categories ← 'Primary Area'" in said
    )
    assert (
        "untitled.csv: fields text ← 'paper_abstract'; no title column: titles are derived from the abstracts" in said
    )


@pytest.mark.parametrize(
    "text, sentences",
    [
        ("It took days.For example, a week.", ["It took days.", "For example, a week."]),
        ("We use GPT-4.It works.", ["We use GPT-4.", "It works."]),
        (
            "Version v1.2 of the U.S. data, e.g. 3.5 GB, is new.",
            ["Version v1.2 of the U.S. data, e.g. 3.5 GB, is new."],
        ),
        ("See Fig. 3 and Eq. 2.The end.", ["See Fig. 3 and Eq. 2.", "The end."]),
    ],
)
def test_sentences_split_without_a_space_but_not_inside_numbers_or_abbreviations(text, sentences):
    assert split_sentences(text) == sentences


def test_ids_are_stable_under_reordering_and_duplicates_are_reported(tmp_path):
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    first.write_text(f"{ABSTRACT_A}\n\n{ABSTRACT_B}\n")
    second.write_text(f"{ABSTRACT_B}\n\n{ABSTRACT_A}\n\n{ABSTRACT_A}\n")
    papers_1, _ = read_corpus([first])
    papers_2, report = read_corpus([second])
    assert sorted(papers_1["id"]) == sorted(papers_2["id"])
    assert papers_1["id"][0] == text_id(papers_1["abstract"][0])
    assert len(papers_2) == 2 and report.duplicate_abstracts == ["two.txt:6 repeats two.txt:3"]
    (tmp_path / "ids.jsonl").write_text(
        "\n".join(json.dumps({"id": "x", "abstract": a}) for a in [ABSTRACT_A, ABSTRACT_B])
    )
    papers_3, report_3 = read_corpus([tmp_path / "ids.jsonl"])
    assert len(papers_3) == 1 and "x at ids.jsonl:2 and ids.jsonl:1" in report_3.duplicate_ids


def test_unicode_latex_and_html_survive_normalisation(tmp_path):
    abstract = "We bound $\\mathcal{O}(n^2)$ error — naïve <b>HTML</b> & “quotes”\u00a0stay. 数学"
    path = tmp_path / "u.jsonl"
    path.write_text(json.dumps({"title": "<script>alert(1)</script>", "abstract": abstract}) + "\n")
    papers, _ = read_corpus([path])
    assert papers["abstract"][0] == abstract.replace("\u00a0", " ")
    assert papers["title"][0] == "<script>alert(1)</script>"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file"),
        (b"", "the file is empty"),
        (b"NeurIPS 2025 Papers\n", "no abstracts after the heading line"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"bad.txt:\d+: binary data \(NUL bytes\)"),
        (b"caf\xe9 au lait is an abstract in Latin-1", r"bad.txt:1: not UTF-8 text \(byte 0xe9\)"),
    ],
)
def test_unreadable_text_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError, match=message) as error:
        read_corpus([path])
    assert "\n" not in str(error.value)


def test_csv_without_text_column_and_broken_jsonl_line(tmp_path):
    (tmp_path / "nums.csv").write_text("id,score\n1,0.5\n2,0.7\n")
    with pytest.raises(UserError, match=r"nums.csv: no abstract-like field .* fields are: id, score"):
        read_corpus([tmp_path / "nums.csv"])
    lines = [json.dumps({"abstract": ABSTRACT_A}), json.dumps({"abstract": ABSTRACT_B}), '{"abstract": "cut off']
    (tmp_path / "broken.jsonl").write_text("\n".join(lines))
    with pytest.raises(UserError, match=r"broken.jsonl:3: broken JSON line"):
        read_corpus([tmp_path / "broken.jsonl"])
    with pytest.raises(UserError, match="is a directory"):
        read_corpus([tmp_path])


def test_overlong_and_empty_abstracts_are_skipped_and_reported(tmp_path):
    path = tmp_path / "mixed.jsonl"
    rows = [{"abstract": ABSTRACT_A}, {"abstract": "   "}, {"abstract": "word " * 50_000}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    papers, report = read_corpus([path])
    assert len(papers) == 1
    assert report.skipped == [
        "mixed.jsonl:2: empty abstract",
        "mixed.jsonl:3: abstract of 249,999 characters (limit 200,000)",
    ]
