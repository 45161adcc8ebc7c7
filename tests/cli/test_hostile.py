"""Hostile input and faults: fuzzed corpora, killed builds, concurrent readers — nothing lost, no traceback."""

import gzip
import json
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperscope import PaperIndex, UserError, build_index, locations
from paperscope.index.store import generations
from paperscope.index.store.maps import MAPS_DIR
from tests.conftest import SUPPORT, copy_index, paperscope
from tests.support.corpora import read_corpus
from tests.support.halt_build import STAGES

HALT_BUILD = SUPPORT / "halt_build.py"  # runs the command line, halted at a build stage
SUFFIXES = [".txt", ".csv", ".tsv", ".json", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz", ""]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read_or_user_error(path):
    """The only two outcomes a corpus file may have."""
    try:
        papers, _ = read_corpus([path])
    except UserError as error:
        assert "\n" not in str(error) and str(error)
        return None
    assert len(papers) > 0 and papers["id"].is_unique and (papers["abstract"].str.len() > 0).all()
    return papers


@FUZZ
@given(data=st.binary(max_size=3000), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes(tmp_path, data, suffix):
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    _read_or_user_error(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
records = st.lists(
    st.dictionaries(
        st.sampled_from(["id", "title", "abstract", "year", "authors", "summary", "x"]), json_values, max_size=6
    ),
    max_size=6,
)


@pytest.mark.slow
@FUZZ
@given(rows=records)
def test_json_records_of_any_shape(tmp_path, rows):
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "r.json").write_text(json.dumps(rows))
    for name in ("r.jsonl", "r.json"):
        _read_or_user_error(tmp_path / name)


@FUZZ
@given(
    text=st.text(max_size=2000),
    encoding=st.sampled_from(["utf-8", "utf-16", "utf-16-le", "latin-1", "utf-8-sig"]),
    suffix=st.sampled_from([".txt", ".csv", ".tsv", ".jsonl"]),
)
def test_any_text_in_any_encoding(tmp_path, text, encoding, suffix):
    path = tmp_path / f"t{suffix}"
    try:
        path.write_bytes(text.encode(encoding))
    except UnicodeEncodeError:
        return
    _read_or_user_error(path)


@pytest.mark.parametrize(
    "content, message",
    [
        ('title,abstract\n"unterminated,quote\n', "malformed CSV|fields where the header has|no abstracts"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply|broken JSON"),
        ('{"abstract": ' + "[" * 50_000 + "]" * 50_000 + "}\n", "nested too deeply|broken JSON"),
        ('{"abstract": NaN, "title": null}\n', "no abstracts found"),
    ],
)
def test_malformed_structures(tmp_path, content, message):
    path = tmp_path / (
        "bad.csv" if content.startswith("title") else "bad.jsonl" if content.startswith("{") else "bad.json"
    )
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        read_corpus([path])


@pytest.mark.slow
def test_ten_megabyte_single_lines(tmp_path):
    line = "word " * 2_000_000
    (tmp_path / "big.csv").write_text(f"abstract\n{line}\n")
    (tmp_path / "big.jsonl").write_text(json.dumps({"abstract": line}) + "\n")
    (tmp_path / "big.txt").write_text(line)
    for name in ("big.csv", "big.jsonl", "big.txt"):
        start = time.perf_counter()
        with pytest.raises(UserError, match=r"limit|larger than"):
            read_corpus([tmp_path / name])
        assert time.perf_counter() - start < 20


def test_parquet_with_nested_and_null_columns(tmp_path):
    frame = pd.DataFrame(
        {
            "abstract": ["Graph networks for molecules.", None, "Diffusion for video."],
            "authors": [["A", "B"], None, []],
            "year": [2024.0, np.nan, 2025.0],
            "meta": [{"name": "x"}, None, {"name": "y"}],
        }
    )
    frame.to_parquet(tmp_path / "nested.parquet")
    papers = _read_or_user_error(tmp_path / "nested.parquet")
    assert papers["authors"].tolist() == ["A; B", ""] and papers["year"].tolist() == [2024, 2025]


def _build_arguments(corpora, folder):
    return ["build", *map(str, corpora), "-o", str(folder)]


def _build_halted_at(stage, corpora, folder):
    """A build started with the test hook that halts it at ``stage``; returns once it is there."""
    process = subprocess.Popen(
        [sys.executable, str(HALT_BUILD), stage, *_build_arguments(corpora, folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    for line in process.stderr:  # every line the build logs, until the hook's
        said.append(line)
        if line.strip() == f"paperscope: halted at {stage}":
            return process
    process.wait()
    pytest.fail(f"the build never reached {stage!r}:\n{''.join(said)}")


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_a_build_killed_at_any_stage_leaves_the_previous_index_answering(stage, sample_index_dir, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    before = generations.current_generation_name(folder)
    process = _build_halted_at(stage, locations.bundled_corpus()[:1], folder)
    process.kill()
    process.wait()
    assert generations.current_generation_name(folder) == before
    generations.verify(folder)  # the previous generation, whole
    index = PaperIndex.load(folder)
    assert len(index) == 38 and len(index.similar(index.papers["id"][0], k=3).to_pandas()) == 3
    build_index(locations.bundled_corpus()[:1], folder)  # the next build clears what the killed one left
    leftovers = sorted(path.name for path in folder.iterdir() if path.name != generations.LOCK_FILE)
    assert leftovers == sorted(  # maps: what a remap need not find again, of the current generation
        [generations.POINTER_FILE, generations.IDENTITY_FILE, generations.current_generation_name(folder), MAPS_DIR]
    )
    assert len(PaperIndex.load(folder)) == 19


@pytest.mark.slow
def test_readers_keep_answering_during_a_rebuild_and_see_the_new_index_after(tmp_path):
    folder = tmp_path / "index"
    build_index(locations.bundled_corpus()[:1], folder)
    reader = PaperIndex.load(folder)
    before = len(reader)
    errors, answers = [], []
    done = threading.Event()

    def ask():
        while not done.is_set():
            try:
                answers.append(len(reader.similar(reader.papers["id"][0], k=3).to_pandas()))
                fresh = PaperIndex.load(folder)
                answers.append(len(fresh.similar(fresh.papers["id"][0], k=3).to_pandas()))
            except Exception as error:
                errors.append(error)

    thread = threading.Thread(target=ask)
    thread.start()
    result = paperscope(*_build_arguments(locations.bundled_corpus(), folder))
    done.set()
    thread.join()
    assert result.returncode == 0, result.stderr
    assert not errors and len(answers) > 10 and set(answers) == {3}
    assert len(PaperIndex.load(folder)) == 38 > before


@pytest.mark.slow
def test_a_second_build_into_a_folder_being_built_fails_at_once_in_one_line(tmp_path):
    folder = tmp_path / "index"
    corpus = locations.bundled_corpus()
    first = _build_halted_at("embed", corpus, folder)  # holds the folder's lock
    try:
        second = paperscope(*_build_arguments(corpus[:1], folder))
    finally:
        first.kill()
        first.wait()
    assert second.returncode == 2
    assert (
        second.stderr
        == f"paperscope: error: {folder}: another build is writing this index; wait for it or use another -o\n"
    )
    build_index(corpus[:1], folder)  # the killed build's lock went with it
    assert len(PaperIndex.load(folder)) == 19


@pytest.mark.slow
def test_a_build_stopped_by_sigterm_cleans_up_as_on_ctrl_c_and_verify_names_leftovers(sample_index_dir, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    before = generations.current_generation_name(folder)
    process = _build_halted_at("map and clusters", locations.bundled_corpus()[:1], folder)
    assert generations.leftovers(folder)  # its work folder of shards, while it runs
    process.terminate()  # SIGTERM, as a service manager or `kill` sends
    rest = process.stderr.read()
    assert process.wait() == 143 and "paperscope: stopped (SIGTERM)" in rest and "Traceback" not in rest
    assert generations.leftovers(folder) == [] and generations.current_generation_name(folder) == before

    process = _build_halted_at("map and clusters", locations.bundled_corpus()[:1], folder)
    process.kill()  # SIGKILL: nothing can clean up
    process.wait()
    left = generations.leftovers(folder)
    assert left
    verified = paperscope("verify", "--index", folder)
    assert verified.returncode == 0 and f"1 leftover of a stopped build: {left[0].name}" in verified.stderr
    with generations.build_lock(folder):  # the next build or add takes the lock: the leftovers go at once
        assert generations.leftovers(folder) == []


def test_an_error_late_in_a_stream_leaves_the_index_as_it_was(sample_index_dir, tmp_path):
    """A broken record found at the end of the last file (the files read as streams) stops the
    build in one line naming it, and the folder keeps its index, with nothing left of the build."""
    folder = copy_index(sample_index_dir, tmp_path / "index")
    before = generations.current_generation_name(folder)
    first = tmp_path / "first.jsonl.gz"
    first.write_bytes(
        gzip.compress("".join(json.dumps({"abstract": f"Paper {i} on graphs."}) + "\n" for i in range(500)).encode())
    )
    late = tmp_path / "late.csv"
    late.write_text("abstract\n" + "".join(f"Paper {i} on video.\n" for i in range(500)) + '"unterminated,quote\n')
    with pytest.raises(UserError, match=r"late.csv:502: malformed CSV") as error:
        build_index([first, late], folder)
    assert "\n" not in str(error.value)
    assert generations.current_generation_name(folder) == before and generations.leftovers(folder) == []
    assert len(PaperIndex.load(folder)) == 38
