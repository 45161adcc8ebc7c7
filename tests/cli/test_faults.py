"""Faults in state that outlives a command: the ONNX export, the disk, permissions."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex
from paperscope.embed.model import Encoder
from paperscope.index.store import generations
from tests.conftest import copy_index, mount, paperscope

TEXTS = ["Graph neural networks for molecules.", "Diffusion transformers generate images."]


@pytest.fixture
def onnx_home(tmp_path, data_home):
    """A copy of the session's exported model in a folder of its own (to damage freely)."""
    reference = Encoder(onnx_dir=data_home / "onnx")
    vectors = reference.encode(TEXTS)
    copy = Encoder(onnx_dir=tmp_path / "onnx").export_folder
    copy.mkdir(parents=True)
    for name in ("model.onnx", "model.onnx.sha256"):
        (copy / name).write_bytes((reference.export_folder / name).read_bytes())
    return copy, vectors


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_onnx_export_is_made_again(onnx_home, damage, caplog):
    folder, expected = onnx_home
    model = folder / "model.onnx"
    data = bytearray(model.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 3]
    else:
        data[len(data) // 2] ^= 0x01  # one bit of one weight: the model still loads, its vectors are wrong
    model.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO, logger="paperscope"):
        vectors = Encoder(onnx_dir=folder.parent).encode(TEXTS)
    assert np.allclose(vectors, expected, atol=1e-5)
    messages = [r.getMessage() for r in caplog.records]
    assert any("does not match its checksum (damaged)" in m and str(model) in m for m in messages)


@pytest.mark.slow
def test_two_first_runs_at_once_export_once_and_both_work(tmp_path):
    script = (
        "import logging, sys; from paperscope.ui.cli import log_to_stderr; log_to_stderr();"
        "from paperscope.embed.model import Encoder;"
        f"print(Encoder(onnx_dir=sys.argv[1], quantize='int8').encode({TEXTS!r}).shape);"
        "logging.getLogger('paperscope').info('after the export')"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "onnx")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        for _ in range(2)
    ]  # fmt: skip
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert all(out.strip() == "(2, 384)" for out, _ in outputs)
    exports = [line for _, err in outputs for line in err.splitlines() if line.startswith("exporting the model to")]
    # once, and only the int8 file: a BERT model's is written from its weights, not from the fp32 file
    assert [line.rsplit("/", 1)[1] for line in exports] == ["model-int8.onnx (once per model)"]
    # the quantizer's logging must not give the root logger a handler: every line once
    assert all(err.count("after the export") == 1 for _, err in outputs), outputs


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@pytest.mark.slow
def test_a_full_disk_stops_a_rebuild_with_one_line_and_the_index_answers(sample_index_dir, tmp_path, mounts):
    small = tmp_path / "small"
    small.mkdir()
    room = _size(sample_index_dir) + 200_000  # the index fits; a second generation beside it does not
    mount("-t", "tmpfs", "-o", f"size={room}", "tmpfs", small)
    mounts.append(small)
    copy_index(sample_index_dir, small / "index")
    done = paperscope("build", "-o", small / "index")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"paperscope: error: {small / 'index'}: stopped: no space")
    assert "Traceback" not in done.stderr
    assert not [path.name for path in (small / "index").iterdir() if path.name.startswith(".tmp-")]
    generations.verify(small / "index")
    index = PaperIndex.load(small / "index")
    assert len(index) == 38 and len(index.similar(index.papers["id"][0], k=3).to_pandas()) == 3


@pytest.mark.slow
def test_a_read_only_index_serves_lookups_and_refuses_a_build_in_one_line(read_only_index, tmp_path):
    folder = read_only_index
    paper_id = PaperIndex.load(folder).papers["id"][0]
    for command in (
        ["similar", paper_id],
        ["search", "diffusion transformers"],
        ["topics"],
        ["explain", paper_id, PaperIndex.load(folder).papers["id"][1]],
        ["verify"],
        ["map", "-o", tmp_path / "map.html"],
    ):
        done = paperscope(*command, "--index", folder)
        assert done.returncode == 0, (command, done.stderr)
    refused = paperscope("build", "-o", folder)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [  # refused as the command line is read, before any work
        f"paperscope: error: argument -o/--output: {folder}: cannot write in {folder} (read-only file system) "
        "(see: paperscope build --help)"
    ]


@pytest.mark.slow
def test_a_read_only_data_folder_allows_lookups_and_builds_without_the_cache(
    sample_index_dir, data_home, tmp_path, mounts
):
    home = tmp_path / "home"
    home.mkdir()
    mount("--bind", data_home, home)
    mounts.append(home)
    mount("-o", "remount,bind,ro", home)
    env = {"PAPERSCOPE_HOME": str(home)}
    found = paperscope("search", "diffusion transformers", "--index", sample_index_dir, env=env)
    assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
    corpus = tmp_path / "new.txt"
    topics = ["proteins", "robots", "weather", "graphs", "markets", "languages"]
    corpus.write_text(
        "\n\n".join(f"Study {i} of {topic} with new methods and careful experiments." for i, topic in enumerate(topics))
    )
    built = paperscope("build", corpus, "-o", tmp_path / "index", env=env)
    assert built.returncode == 0, built.stderr
    assert f"note: the embedding cache at {home / 'embedding-cache'}" in built.stderr
    assert len(PaperIndex.load(tmp_path / "index")) == 6
