"""The embedding cache: large memory-mapped shards, merged by size, and damage that is never returned."""

import json
import logging
import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex, build_index, locations
from paperscope.embed import cache as cache_module
from paperscope.embed.cache import EmbeddingCache, text_key
from paperscope.embed.text import embedding_texts
from paperscope.index.store import generations
from tests.conftest import PAPERSCOPE, copy_index
from tests.support.corpora import read_corpus


def _vectors(count: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(count, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_shards_merge_by_size_and_give_back_exactly_what_was_stored(tmp_path):
    texts = [f"abstract number {i}" for i in range(4 * cache_module.SHARD_ROWS)]
    vectors = _vectors(len(texts), 0)
    cache = EmbeddingCache(tmp_path, "model", "mean")
    for start in range(0, len(texts), cache_module.SHARD_ROWS):  # four builds' worth of shards
        cache.add([text_key(t) for t in texts[start : start + cache_module.SHARD_ROWS]], vectors[start:])
        cache.flush()
    assert len(list(cache.folder.glob("shard-*"))) == 1  # four shards of one size became one
    reopened = EmbeddingCache(tmp_path, "model", "mean")
    assert len(reopened) == len(texts) and len(reopened.shards) == 1
    rows = np.random.default_rng(1).choice(len(texts), 500, replace=False)
    found = reopened.get([text_key(texts[i]) for i in rows] + [text_key("never embedded")])
    assert found[-1] is None
    assert np.array_equal(np.stack(found[:-1]), vectors[rows])


def test_vectors_that_waited_flush_seconds_are_written_before_the_build_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "FLUSH_SECONDS", 0.0)  # every wait is long enough
    texts = [f"abstract number {i}" for i in range(10)]
    EmbeddingCache(tmp_path, "model", "mean").add([text_key(t) for t in texts], _vectors(10, 2))  # never flushed
    found = EmbeddingCache(tmp_path, "model", "mean").get([text_key(t) for t in texts])
    assert all(vector is not None for vector in found)  # a build killed now would find them


@pytest.fixture
def fresh_home(tmp_path, data_home, monkeypatch):
    """A data folder of its own (an empty cache) that shares the session's exported ONNX model."""
    home = tmp_path / "home"
    home.mkdir()
    (data_home / "onnx").mkdir(exist_ok=True)
    (home / "onnx").symlink_to(data_home / "onnx", target_is_directory=True)
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    return home


@pytest.mark.slow
@pytest.mark.parametrize("damage, embedded_again", [("truncate", 38), ("zero", 38), ("flip", 1)])
def test_a_damaged_cache_is_detected_and_its_texts_embedded_again(
    fresh_home, sample_index, tmp_path, caplog, damage, embedded_again
):
    build_index(locations.bundled_corpus(), tmp_path / "first")
    (shard,) = locations.cache_dir().glob("*/shard-*")
    vectors_file = shard / "vectors.npy"
    data = bytearray(vectors_file.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "zero":
        data[128:] = bytes(len(data) - 128)  # the header stays readable, every vector is zeros
    else:
        data[len(data) // 2] ^= 0x10  # one bit of one vector
    vectors_file.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="paperscope"):
        report = build_index(locations.bundled_corpus(), tmp_path / "second")
    assert report.embedded == embedded_again
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "cache" in r.getMessage()]
    assert len(warnings) == 1 and str(shard) in warnings[0] and "embedded again" in warnings[0]
    rebuilt = PaperIndex.load(tmp_path / "second")
    assert np.allclose(np.asarray(rebuilt.vectors), np.asarray(sample_index.vectors), atol=1e-5)
    assert rebuilt.ids() == sample_index.ids()


@pytest.mark.slow
def test_two_builds_sharing_one_cache_at_once_both_succeed(fresh_home, tmp_path):
    command = [PAPERSCOPE, "build"]
    builds = [
        subprocess.Popen(
            [*command, "-o", str(tmp_path / name)], env=dict(os.environ), stderr=subprocess.PIPE, text=True
        )
        for name in ("a", "b")
    ]
    for build in builds:
        assert build.wait(timeout=300) == 0, build.stderr.read()
    for name in ("a", "b"):
        generations.verify(tmp_path / name)
        assert len(PaperIndex.load(tmp_path / name)) == 38
    (folder,) = locations.cache_dir().iterdir()
    shards = EmbeddingCache(folder.parent, *folder.name.rsplit("-", 1)).shards
    assert shards and all(len(shard) == 38 for shard in shards)  # each build wrote every text, intact


def _interruptible() -> None:
    """Ctrl-C as a build started from a terminal takes it: a shell's background job (a detached test run)
    hands its commands SIGINT ignored, and Python then leaves it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_build(corpus: Path, output: Path) -> subprocess.Popen:
    """``paperscope build CORPUS -o OUTPUT --preset fast`` in a process of its own, its log piped."""
    command = [PAPERSCOPE, "build", str(corpus), "-o", str(output), "--preset", "fast"]
    return subprocess.Popen(command, env=dict(os.environ), stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)


@pytest.mark.slow
@pytest.mark.parametrize("signal_number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_a_build_stopped_while_embedding_keeps_its_vectors_and_the_same_build_resumes_from_them(
    fresh_home, sample_index_dir, tmp_path, signal_number, status
):
    words = ["graph", "diffusion", "speech", "robot", "theorem", "cloud", "vision", "policy", "kernel", "agent"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"title": f"Paper {i}", "abstract": f"We study {words[i % 10]} {words[i // 10 % 10]} models at "
                        f"scale {i}. Results on {words[i // 100 % 10]} benchmarks improve by {i % 97} points."})
            for i in range(1_000)
        )
    )  # fmt: skip
    index = copy_index(sample_index_dir, tmp_path / "index")  # the user's index, which the stopped build must keep
    before = {path.relative_to(index): path.read_bytes() for path in index.rglob("*") if path.is_file()}
    build = _start_build(corpus, index)
    log = []
    for line in build.stderr:  # stopped at its first progress line: a few chunks of the 1,000 are embedded
        log.append(line)
        if line.startswith("embedding:"):
            build.send_signal(signal_number)
            break
    log.append(build.stderr.read())
    assert build.wait(timeout=60) == status, "".join(log)
    assert "Traceback" not in "".join(log)
    after = {path.relative_to(index): path.read_bytes() for path in index.rglob("*") if path.is_file()}
    assert after == before  # untouched, and no work folder left in it

    again = _start_build(corpus, index)
    _, log = again.communicate(timeout=600)
    assert again.returncode == 0, log
    embedded = re.search(r"embedded ([\d,]+) texts \((\d+) from the cache\)", log)  # the new ones, then the kept
    assert embedded and int(embedded[2]) > 0 and int(embedded[1].replace(",", "")) + int(embedded[2]) == 1_000, log
    resumed = PaperIndex.load(index)
    papers, _ = read_corpus([corpus])
    assert resumed.ids() == papers["id"].tolist()
    uninterrupted = resumed.embed_texts(embedding_texts(papers))  # as a build without the cache embeds them
    assert np.allclose(np.asarray(resumed.vectors), uninterrupted, atol=1e-3)
