"""Corpus readers: every format, field names, normalisation, stable ids, duplicates, titles."""

import gzip
import json
import logging
import re
import unicodedata

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from paperscope import UserError, locations
from paperscope.embed.readers import read_records
from paperscope.embed.readers.admission import text_id
from paperscope.embed.text import normalise_text, split_sentences
from paperscope.embed.titles import derive_title
from tests.support.corpora import read_corpus

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
    [
        *("papers.csv", "papers.tsv", "papers.json", "list.json", "papers.jsonl", "papers.parquet"),
        *("papers.csv.gz", "papers.tsv.gz", "papers.json.gz", "list.json.gz", "papers.jsonl.gz", "papers.parquet.gz"),
    ],
)
def test_every_format_reads_the_same_papers(tmp_path, name):
    frame = pd.DataFrame(_records())
    path = tmp_path / name
    plain = name.removesuffix(".gz")
    if plain.endswith(".parquet"):
        data = frame.to_parquet()
    else:
        if plain.endswith(".csv") or plain.endswith(".tsv"):
            flat = frame.assign(authors=frame["authors"].str.join("; "))
            text = flat.to_csv(index=False, sep="\t" if plain.endswith(".tsv") else ",")
        elif plain.endswith(".jsonl"):
            text = "\n".join(json.dumps(r) for r in _records())
        elif plain == "list.json":  # a JSON list: streamed a record at a time
            text = json.dumps(_records(), indent=2)
        else:  # a JSON object holding the list: read whole
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
        "categories ← 'Primary Area'; its own columns kept: Primary Area (text)" in said
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
    _, both = read_corpus([first, second])  # the sources kept as numbers are named again
    assert both.duplicate_abstracts == ["two.txt:1 repeats one.txt:4", "two.txt:3 repeats one.txt:1",
                                        "two.txt:6 repeats one.txt:1"]  # fmt: skip


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


def test_a_json_file_of_json_lines_reads_as_json_lines(tmp_path):
    """The arXiv snapshot is JSON lines named .json: read line by line, not refused as broken JSON."""
    path = tmp_path / "arxiv-metadata-oai-snapshot.json"
    path.write_text(
        json.dumps({"id": "1", "abstract": ABSTRACT_A}) + "\n" + json.dumps({"id": "2", "abstract": ABSTRACT_B})
    )
    papers, _ = read_corpus([path])
    assert papers["id"].tolist() == ["1", "2"]
    assert papers["source"].tolist() == ["arxiv-metadata-oai-snapshot.json:1", "arxiv-metadata-oai-snapshot.json:2"]


def test_a_broken_record_late_in_a_json_list_names_its_line(tmp_path):
    records = [{"abstract": f"Paper {i} studies graphs."} for i in range(3000)]
    text = json.dumps(records, indent=1)
    cut = text.rindex('"abstract"')  # the last record loses its closing quote
    path = tmp_path / "late.json.gz"
    path.write_bytes(gzip.compress((text[:cut] + '"abstract": "cut off}]').encode()))
    with pytest.raises(UserError, match=rf"late.json.gz:{text[:cut].count(chr(10)) + 1}: broken JSON") as error:
        read_corpus([path])
    assert "\n" not in str(error.value)


# Reading in bounded memory. Each reading runs in a fresh process that reports its own peak RSS, the
# VmHWM of /proc/self/status: getrusage's ru_maxrss is no use here, as Linux carries it over exec
# from the memory of the process that started the child (the pytest process, which wrote the
# files), and RUSAGE_CHILDREN is the peak of every child pytest ever waited for. Importing the
# readers (pandas, pyarrow) takes about 110 MB; a text format reads in a few MB more (1 MiB buffers,
# a line, the first records until the fields are chosen: at most 16 MiB), where the whole-file
# reader took 1.77 GB for the 318 MB of JSON lines of 300,000 records (CHANGELOG.md, #39); a
# compression bomb is stopped after 32 MiB out (a line of up to 64 MiB held); Parquet holds one
# row group decoded (30,000 rows of 1 KB here: 115 MB more). Bounds: 160 MB for text, 300 MB for a
# bomb and for Parquet.
PEAK_MB = {"text": 160, "bomb": 300, "parquet": 300}
READER = """
import hashlib, json, re, sys
from paperscope import UserError
from paperscope.embed.readers import iter_records
out = {}
for path in sys.argv[1:]:
    digest, first, count = hashlib.sha256(), hashlib.sha256(), 0
    try:
        for record in iter_records(path, announce=False):
            record.pop("source")
            data = json.dumps(record, sort_keys=True).encode()
            digest.update(data)
            if count < 100:
                first.update(data)
            count += 1
    except UserError as error:
        out[path] = {"error": str(error), "count": count}
        continue
    out[path] = {"count": count, "digest": digest.hexdigest(), "first": first.hexdigest()}
out["peak_mb"] = int(re.search(r"VmHWM:\\s*(\\d+) kB", open("/proc/self/status").read()).group(1)) / 1024
print(json.dumps(out))
"""


def _read_in_subprocess(*paths) -> dict:
    """What :data:`READER` says of each file (records, digests, or the error) and its peak RSS in MB."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", READER, *map(str, paths)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _gzip_bomb(path, one_line: bool) -> None:
    """A .gz of over 1 GiB of JSON lines (one line, or lines of 16 KiB) in about 1 MB: the same
    16 MiB compressed once, its gzip member written 70 times (a deflate stream expands 1,032:1 at most)."""
    block = ("a" * (16 * 1024**2)) if one_line else (json.dumps({"abstract": "a" * 16_000}) + "\n") * 1040
    member = gzip.compress(block.encode(), 9)
    with open(path, "wb") as out:
        if one_line:
            out.write(gzip.compress(b'{"abstract": "'))
        for _ in range(70):
            out.write(member)


@pytest.mark.slow
@pytest.mark.parametrize("one_line", [True, False], ids=["one line", "many lines"])
def test_a_gzip_bomb_is_stopped_in_bounded_memory(tmp_path, one_line):
    path = tmp_path / "papers.jsonl.gz"
    _gzip_bomb(path, one_line)
    assert path.stat().st_size < 2 * 1024**2
    said = _read_in_subprocess(path)
    error = said[str(path)]["error"]
    assert "\n" not in error and error.startswith(f"{path}: expands more than 100 times"), error
    assert "a compression bomb?" in error
    assert said["peak_mb"] < PEAK_MB["bomb"], said


@pytest.mark.slow
def test_a_format_read_whole_is_guarded_too(tmp_path):
    path = tmp_path / "library.bib.gz"
    path.write_bytes(gzip.compress(b"@article{x, abstract = {" + b"a" * (600 * 1024**2), 9))
    with pytest.raises(UserError, match=r"library.bib.gz: expands more than 100 times") as error:
        read_corpus([path])
    assert "\n" not in str(error.value)


def _write_big_corpus(folder, count: int) -> list:
    """The same ``count`` records as JSON lines, a JSON list, CSV and Parquet (10 row groups)."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    filler = " ".join(f"w{i % 997}" for i in range(210))
    paths = [folder / "big.jsonl", folder / "big.json", folder / "big.csv", folder / "big.parquet"]
    with open(paths[0], "w") as lines, open(paths[1], "w") as array, open(paths[2], "w", newline="") as table:
        rows = csv.writer(table)
        rows.writerow(["id", "title", "abstract", "year"])
        array.write("[\n")
        writer = pq.ParquetWriter(
            paths[3], pa.schema({"id": pa.string(), "title": pa.string(), "abstract": pa.string(), "year": pa.int64()})
        )
        group = count // 10
        for start in range(0, count, group):
            batch = [_big_record(i, filler) for i in range(start, min(start + group, count))]
            lines.writelines(json.dumps(record) + "\n" for record in batch)
            array.write(
                ",\n".join(json.dumps(record) for record in batch) + (",\n" if start + group < count else "\n]\n")
            )
            rows.writerows([record.values() for record in batch])
            writer.write_table(pa.Table.from_pylist(batch))
        writer.close()
    (folder / "first.json").write_text(json.dumps({"papers": [_big_record(i, filler) for i in range(100)]}))
    return paths


def _big_record(number: int, filler: str) -> dict:
    return {
        "id": f"p{number}",
        "title": f"Paper {number}",
        "abstract": f"Paper {number} studies {filler}.",
        "year": 2000 + number % 25,
    }


@pytest.mark.slow
def test_big_files_of_every_format_are_read_as_streams(tmp_path):
    """150,000 records (the JSON lines 155 MB on disk) in each format: every record read, the same
    records whatever the format, the first 100 those of a JSON object read whole, in bounded memory
    (a reader that loads the whole file peaks at 350-580 MB here)."""
    import pyarrow.parquet as pq

    paths = _write_big_corpus(tmp_path, 150_000)
    assert paths[0].stat().st_size > 150e6 and pq.ParquetFile(paths[3]).num_row_groups == 10
    whole = _read_in_subprocess(tmp_path / "first.json")[str(tmp_path / "first.json")]
    assert whole["count"] == 100
    digests = set()
    for path in paths:
        said = _read_in_subprocess(path)
        path.unlink()
        assert said[str(path)]["count"] == 150_000, path
        assert said[str(path)]["first"] == whole["digest"], path
        assert said["peak_mb"] < PEAK_MB["parquet" if path.suffix == ".parquet" else "text"], said
        digests.add(said[str(path)]["digest"])
    assert len(digests) == 1


@pytest.mark.slow
def test_a_file_over_two_gigabytes_is_read_whole_in_bounded_memory(tmp_path):
    """The 2 GiB refusal is gone for the formats read as streams: 2.2 GB of JSON lines, every record
    read (lines of 150 KB, a short abstract and a long field no reader looks at, so that reading
    takes seconds; the arXiv snapshot's 4.5 GB of 1 KB lines read as fast as the 150,000 above)."""
    path = tmp_path / "huge.jsonl"
    pad = "x" * 150_000
    with open(path, "w") as out:
        for i in range(15_000):
            out.write(json.dumps({"abstract": f"Paper {i} studies graphs.", "pad": pad}) + "\n")
    assert path.stat().st_size > 2.05 * 1024**3
    said = _read_in_subprocess(path)
    path.unlink()
    assert said[str(path)]["count"] == 15_000, said
    assert said["peak_mb"] < PEAK_MB["text"], said


@given(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1fab.\xa0\u2028é", max_size=300))
def test_long_ascii_text_is_normalised_as_split_and_join_does(text):
    """normalise_text's fast path for long ASCII text (abstracts) gives what split and join give."""
    for value in (text, text * 4, "x" * 101 + text):
        assert normalise_text(value) == " ".join(unicodedata.normalize("NFC", value).split())


def test_json_lines_read_by_orjson_as_json_reads_them(tmp_path):
    """Lines orjson reads otherwise than json (a whole number past 64 bits, NaN, a lone surrogate) are
    read by json; a line break inside a line (U+2028) numbers the lines as before, and its error names them."""
    rows = [
        {"abstract": ABSTRACT_A, "big": 123456789012345678901234567890, "nested": [[-(2**64)]]},
        {"abstract": ABSTRACT_B, "rating": float("nan")},
    ]
    lines = [json.dumps(row) for row in rows] + ['{"abstract": "Lone \\ud800 surrogates are read as json reads them."}']
    path = tmp_path / "exact.jsonl"
    path.write_text("\n".join(lines) + "\n")
    records = read_records(path)
    assert records[0]["extra"]["big"] == 123456789012345678901234567890
    assert records[0]["extra"]["nested"] == [str(-(2**64))]
    assert records[1]["extra"]["rating"] is None
    assert [record["source"] for record in records] == ["exact.jsonl:1", "exact.jsonl:2", "exact.jsonl:3"]
    path.write_text(lines[0] + "\n" + '{"abstract": "split\u2028here"}\n' + lines[1] + "\n")
    with pytest.raises(UserError, match=r"exact.jsonl:2: broken JSON line"):
        read_records(path)
