"""The embedding model: model-card similarities, vector form, long texts."""

import json

import numpy as np
import pytest

from paperscope import UserError, files
from paperscope.embed.model import Encoder
from paperscope.files import file_digest, known_digest


@pytest.fixture(scope="module")
def onnx_encoder(data_home):
    from paperscope import locations

    return Encoder(onnx_dir=locations.onnx_dir())


@pytest.mark.parametrize("backend", [pytest.param("torch", marks=pytest.mark.slow), "onnx"])  # torch loads in seconds
def test_reproduces_model_card_similarities(request, backend):
    encoder = request.getfixturevalue({"torch": "encoder", "onnx": "onnx_encoder"}[backend])
    assert encoder.backend == backend
    vectors = encoder.encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    similarities = vectors @ vectors.T
    assert similarities[0, 1] == pytest.approx(0.6660, abs=1e-3)
    assert similarities[0, 2] == pytest.approx(0.1046, abs=1e-3)
    assert similarities[1, 2] == pytest.approx(0.1411, abs=1e-3)


@pytest.mark.slow
def test_vectors_are_float32_and_normalised(encoder):
    vectors = encoder.encode(["graph neural networks", "diffusion models for video generation"])
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_long_text_windows_cover_the_whole_text_within_the_model_limit(encoder):
    sentence = "Sparse attention lets transformers read long documents at linear cost in the sequence length. "
    text = (sentence * 30).strip()
    windows = encoder.windows(text)
    assert len(windows) > 1
    assert all(tokens <= encoder.max_tokens for _, tokens in windows)
    assert sum(tokens for _, tokens in windows) == encoder.count_tokens([text])[0]
    assert " ".join(piece for piece, _ in windows) == text
    assert all(piece.endswith(".") for piece, _ in windows)  # cut at sentence ends


@pytest.mark.slow
def test_long_text_strategies_differ_only_for_long_texts(encoder):
    short = "Bilevel optimization with differential privacy."
    head = "Diffusion transformers generate video frames quickly. " * 40
    long = head + "A final section studies protein folding and molecular chemistry. " * 10
    assert encoder.count_tokens([head])[0] > encoder.max_tokens
    mean = encoder.encode([short, long], long_text="mean")
    truncated = encoder.encode([short, long], long_text="truncate")
    np.testing.assert_allclose(mean[0], truncated[0], atol=1e-6)
    protein = encoder.encode(["protein folding and chemistry"])[0]
    assert mean[1] @ protein > truncated[1] @ protein + 0.05  # the tail counts only when averaged


@pytest.mark.slow
def test_unknown_strategy_and_bad_model_folder_are_user_errors(encoder, tmp_path):
    with pytest.raises(UserError, match="long-text strategy"):
        encoder.encode(["x"], long_text="middle")
    with pytest.raises(UserError, match="not a sentence-transformers model folder"):
        Encoder(tmp_path)


@pytest.mark.slow
def test_onnx_backend_gives_the_torch_vectors_on_the_sample(encoder, onnx_encoder):
    from paperscope import locations
    from tests.support.corpora import read_corpus

    abstracts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    cosines = (encoder.encode(abstracts) * onnx_encoder.encode(abstracts)).sum(axis=1)
    assert cosines.min() >= 0.9999
    assert Encoder(onnx_dir=None).backend != "onnx"  # ONNX only where an export folder is given


@pytest.mark.slow
def test_bert_written_from_its_weights_runs_as_the_torch_trace_and_quantizes_as_onnx_runtime(encoder, tmp_path):
    import json

    import onnx
    from onnx import numpy_helper

    from paperscope import locations
    from paperscope.embed.onnx_backend import (
        OnnxEncoder,
        bert_weights,
        quantize_int8,
        trace_with_torch,
        write_bert_graph,
    )
    from tests.support.corpora import read_corpus

    abstracts = read_corpus(locations.bundled_corpus())[0]["abstract"].tolist()
    tokenizer = encoder.path / "tokenizer.json"
    written = OnnxEncoder(write_bert_graph(encoder.path, tmp_path / "written.onnx"), tokenizer, 258).embed(abstracts)
    traced = OnnxEncoder(trace_with_torch(encoder.path, tmp_path / "traced.onnx"), tokenizer, 258).embed(abstracts)
    np.testing.assert_allclose(written, traced, atol=1e-5)
    # int8 written directly: ONNX Runtime's quantizer gives the same int8 weights and scales
    direct = write_bert_graph(encoder.path, tmp_path / "direct-int8.onnx", int8=True)
    quantized = quantize_int8(tmp_path / "written.onnx", tmp_path / "quantized-int8.onnx")
    weights = [
        {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer} for path in (direct, quantized)
    ]
    int8_names = {name for name in weights[1] if name.endswith(("weight_quantized", "weight_scale"))}
    assert len(int8_names) == 2 * 6 * 6  # six linear layers in each of six encoder layers
    assert all(np.array_equal(weights[0][name], weights[1][name]) for name in int8_names)
    # its inputs are scaled per token: closer to float32 than a scale per batch, and each text's
    # vector is the same batched as alone
    int8_encoder = OnnxEncoder(direct, tokenizer, 258)
    batched = int8_encoder.embed(abstracts)
    cosines = (batched * written).sum(axis=1)
    per_batch = (OnnxEncoder(quantized, tokenizer, 258).embed(abstracts) * written).sum(axis=1)
    assert cosines.mean() > per_batch.mean() and cosines.min() > 0.99
    alone = np.stack([int8_encoder.embed([abstract])[0] for abstract in abstracts[:8]])
    np.testing.assert_allclose(alone, batched[:8], atol=1e-5)
    other = tmp_path / "other"
    other.mkdir()
    (other / "model.safetensors").symlink_to(encoder.path / "model.safetensors")
    config = json.loads((encoder.path / "config.json").read_text())
    for changed, written_directly in [({}, True), ({"model_type": "mpnet"}, False), ({"hidden_act": "relu"}, False)]:
        (other / "config.json").write_text(json.dumps({**config, **changed}))
        assert bert_weights(other) is written_directly  # other architectures are traced with torch


def test_release_frees_the_model_and_the_next_encode_loads_it_again(data_home):
    from paperscope import locations

    fresh = Encoder(onnx_dir=locations.onnx_dir())
    first = fresh.encode(["Graph neural networks for molecules."])
    assert "onnx_encoder" in vars(fresh)
    fresh.release()
    assert "onnx_encoder" not in vars(fresh)
    assert np.allclose(fresh.encode(["Graph neural networks for molecules."]), first, atol=1e-6)


def test_a_models_digest_is_hashed_once_and_again_when_its_file_changes(tmp_path, monkeypatch):
    """``known_digest`` (a model's fingerprint, its ONNX export's check) remembers a file's digest by its
    path, size and times: a load need not hash 90 MB again; a file rewritten is hashed anew."""
    weights, memory = tmp_path / "model.safetensors", tmp_path / "digests.json"
    weights.write_bytes(b"weights " * 1000)
    assert known_digest(weights, memory=memory) == file_digest(weights)
    assert not memory.exists()  # changed this instant: a rewrite in the same clock tick would keep its times
    monkeypatch.setattr(files, "SETTLED_SECONDS", -1.0)  # as a file installed long ago
    first = known_digest(weights, memory=memory)
    (key,) = json.loads(memory.read_text())
    memory.write_text(json.dumps({key: "remembered"}))
    assert known_digest(weights, memory=memory) == "remembered"  # read back, not hashed
    weights.write_bytes(b"other weights")
    assert known_digest(weights, memory=memory) == file_digest(weights) != first
    memory.write_text("not json")
    assert known_digest(weights, memory=memory) == file_digest(weights)
