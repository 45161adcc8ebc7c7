"""ONNX Runtime backend: the model's transformer exported once, then run without torch.

Export (once per model fingerprint) writes ``model.onnx`` into a cache folder, never into
site-packages, with its SHA-256 beside it (``model.onnx.sha256``): a truncated or corrupted
export (or int8 model) is found when it is next loaded and made again (a file is hashed again
once its size or times change: ``files.known_digest``). One process exports at a
time (a file lock); a second first run waits and then uses that export. A BERT model (the
bundled all-MiniLM-L6-v2) is written as an ONNX graph straight from its safetensors weights,
int8 too, without torch (faster to write and to run than a traced graph, with the same vectors:
docs/benchmarks.md). Other architectures are traced. Running needs only ``onnxruntime`` and
``tokenizers``, with the same vectors as sentence-transformers (mean pooling, L2 norm).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
from filelock import FileLock

from paperscope import locations
from paperscope.errors import UserError
from paperscope.files import atomic_path, file_digest, known_digest

logger = logging.getLogger(__name__)
# Names the export recipe in export folders and int8 vector keys. 2: BERT written from its
# weights (its int8 vectors differ from the traced graph's by cosine ~0.996; fp32 by 1e-7);
# 3: int8 inputs scaled per token (a text's vector no longer depends on its batch).
EXPORT_VERSION = 3


def _intact(path: Path) -> bool:
    """Whether an exported model file matches the SHA-256 written beside it."""
    seal = path.with_name(path.name + ".sha256")
    try:
        return seal.read_text().strip() == known_digest(path, memory=locations.digests_file())
    except OSError:
        return False


def _seal(path: Path) -> None:
    with atomic_path(path.with_name(path.name + ".sha256")) as temporary:
        temporary.write_text(file_digest(path) + "\n")


def exported(model_path: Path, folder: Path, quantize: str | None) -> Path:
    """The intact ONNX file of ``model_path`` in ``folder`` (int8 when ``quantize``), exporting
    or quantizing it first when it is missing or damaged (one process at a time). A BERT model's
    int8 file is written from its weights: the float32 one, which only an int8 build's fidelity check
    then reads, is left to that check (in the background of a fast first build: ~1 s less of it)."""
    steps = [] if quantize and bert_weights(model_path) else [(folder / "model.onnx", export_onnx)]
    steps += [(folder / "model-int8.onnx", export_int8)] if quantize else []
    if all(_intact(target) for target, _ in steps):
        return steps[-1][0]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder / ".export.lock")
        lock.acquire()
    except OSError as exc:
        raise UserError(f"{folder}: cannot write the ONNX export there ({exc.strerror}); set PAPERSCOPE_HOME") from None
    with lock:
        for target, make in steps:
            if _intact(target):
                continue  # another process made it while this one waited
            if target.with_name(target.name + ".sha256").exists():
                logger.warning("warning: %s does not match its checksum (damaged); making it again", target)
            logger.info("exporting the model to %s (once per model)", target)
            make(model_path, target)
            _seal(target)
    return steps[-1][0]


def onnx_compatible(model_path: Path) -> bool:
    """Whether the sentence-transformers folder is Transformer + mean Pooling (+ Normalize) only."""
    try:
        modules = json.loads((model_path / "modules.json").read_text())
        pooling = json.loads((model_path / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError):
        return False
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    return (
        kinds[:2] == ["Transformer", "Pooling"]
        and set(kinds[2:]) <= {"Normalize"}
        and pooling.get("pooling_mode_mean_tokens") is True
        and (model_path / "tokenizer.json").is_file()
    )


def export_onnx(model_path: Path, target: Path) -> Path:
    """Export the transformer of ``model_path`` to ``target`` (atomically): BERT models written
    directly from their weights, others traced with torch."""
    if bert_weights(model_path):
        return write_bert_graph(model_path, target)
    return trace_with_torch(model_path, target)


def export_int8(model_path: Path, target: Path) -> Path:
    """Export the transformer of ``model_path`` with int8 weights to ``target`` (atomically):
    BERT models written directly (0.5 s), others quantized by ONNX Runtime from the fp32 export
    beside ``target`` (1.9 s for MiniLM: a Python loop over every weight channel). Both give the
    same int8 weights; the BERT graph scales its inputs per token, so its vectors do not depend on
    the batch, where ONNX Runtime's quantizer scales them per batch (cosine moves by up to ~0.009)."""
    if bert_weights(model_path):
        return write_bert_graph(model_path, target, int8=True)
    return quantize_int8(target.with_name("model.onnx"), target)


def bert_weights(model_path: Path) -> bool:
    """Whether ``model_path`` holds a BERT encoder (absolute positions, exact GELU) in safetensors."""
    try:
        config = json.loads((model_path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return (
        config.get("model_type") == "bert"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and config.get("hidden_act") == "gelu"
        and (model_path / "model.safetensors").is_file()
    )


class _BertGraph:
    """The ONNX graph of a BERT encoder as it is written: nodes and weights (initializers), its
    products named as ``torch.onnx`` names them; ``int8``: the linear layers' weights in int8."""

    def __init__(self, config: dict, weights: dict[str, np.ndarray], int8: bool):
        self.config, self.weights, self.int8 = config, weights, int8
        self.nodes: list = []
        self.initializers: dict = {}
        self.quantized_inputs: dict[str, list[str]] = {}

    def const(self, name: str, array) -> str:
        from onnx import numpy_helper

        self.initializers.setdefault(name, numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, node: str | None = None, **attributes) -> str:
        from onnx import helper

        output = node or f"{kind}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(kind, list(inputs), [output], name=output, **attributes))
        return output

    def int8_product(self, x: str, weight: np.ndarray, name: str, node: str) -> str:
        """``x @ weight`` in int8. The weight per output channel (symmetric, max|w| / 127); ``x`` per
        token (symmetric, max|x| / 127 of its row), so that a text's vector does not depend on the
        texts batched with it (a scale over the whole batch moved it by up to 0.009 of cosine)."""
        from onnx import helper, numpy_helper

        op, hidden, outputs = self.op, weight.shape[0], weight.shape[1]
        if x not in self.quantized_inputs:  # one quantization per input (query, key, value share it)
            rows = op("Reshape", x, self.const(f"rows of {hidden}", np.array([-1, hidden], np.int64)))
            largest = op("ReduceMax", op("Abs", rows), axes=[1], keepdims=0)
            tiny = self.const("tiny", np.float32(1e-12))  # a row of zeros: any scale
            scale = op("Max", op("Div", largest, self.const("127", np.float32(127))), tiny)
            middle = op("ConstantOfShape", op("Shape", scale), value=numpy_helper.from_array(np.array([128], np.uint8)))
            first_two = self.const("from 0", np.array([0], np.int64)), self.const("to 2", np.array([2], np.int64))
            leading = op("Slice", op("Shape", x), *first_two)
            self.quantized_inputs[x] = [
                op("QuantizeLinear", rows, scale, middle, axis=0),  # uint8 around 128: the fast u8 x s8 kernels
                op("Unsqueeze", scale, self.const("axis 1", np.array([1], np.int64))),
                leading,
            ]
        quantized, token_scales, leading = self.quantized_inputs[x]
        scale = (np.abs(weight).max(axis=0) / np.float32(127)).astype(np.float32)
        scale[scale == 0] = 1.0  # a channel of zeros: any scale, as ONNX Runtime's quantizer takes
        integers = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
        inputs = [
            quantized,
            self.const(f"{name}.weight_quantized", integers),
            self.const("1.0", np.float32(1.0)),
            self.const(f"{name}.weight_scale", scale),
            self.const("128", np.uint8(128)),
            self.const(f"{name}.weight_zero_point", np.zeros(outputs, np.int8)),
        ]
        product = f"{node}Integer"  # ONNX Runtime's fused int8 product, then float: x @ w times the weight's scales
        fused = helper.make_node("MatMulIntegerToFloat", inputs, [product], name=product, domain="com.microsoft")
        self.nodes.append(fused)
        shape = op("Concat", leading, self.const(f"{outputs} outputs", np.array([outputs], np.int64)), axis=0)
        return op("Reshape", op("Mul", product, token_scales), shape, node=node)

    def linear(self, x: str, name: str) -> str:
        """``x @ W^T + b``, its product named as torch.onnx names it."""
        weight, node = np.ascontiguousarray(self.weights[f"{name}.weight"].T), f"/{name.replace('.', '/')}/MatMul"
        if self.int8:
            product = self.int8_product(x, weight, name, node)
        else:
            product = self.op("MatMul", x, self.const(f"{name}.weight", weight), node=node)
        return self.op("Add", product, self.const(f"{name}.bias", self.weights[f"{name}.bias"]))

    def norm(self, x: str, name: str) -> str:
        scale = self.const(f"{name}.weight", self.weights[f"{name}.weight"])
        bias = self.const(f"{name}.bias", self.weights[f"{name}.bias"])
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=self.config["layer_norm_eps"])

    def table(self, name: str) -> str:
        return self.const(f"embeddings.{name}.weight", self.weights[f"embeddings.{name}.weight"])

    def embeddings(self) -> str:
        """Word, position and token type embeddings of the inputs, added and normalised."""
        op, one = self.op, self.const("one", np.array(1, np.int64))
        positions = op(
            "Range", self.const("zero", np.array(0, np.int64)), op("Gather", op("Shape", "input_ids"), one), one
        )
        words = op("Gather", self.table("word_embeddings"), "input_ids")
        x = op("Add", words, op("Gather", self.table("position_embeddings"), positions))
        x = op("Add", x, op("Gather", self.table("token_type_embeddings"), "token_type_ids"))
        return self.norm(x, "embeddings.LayerNorm")

    def padding(self) -> str:
        """(1 - mask) times the lowest float32, added to the attention scores, as BertModel does."""
        from onnx import TensorProto

        padding = self.op(
            "Sub", self.const("1.0", np.float32(1.0)), self.op("Cast", "attention_mask", to=TensorProto.FLOAT)
        )
        lowest = self.const("lowest", np.finfo(np.float32).min)
        return self.op("Unsqueeze", self.op("Mul", padding, lowest), self.const("axes", [1, 2]))

    def layer(self, x: str, name: str, padding: str, split: str, merge: str) -> str:
        """One encoder layer: self-attention over the heads (``split``: the shape of a projection
        per head, ``merge``: back), then the feed-forward block with exact GELU; each adds and normalises."""
        op, hidden, heads = self.op, self.config["hidden_size"], self.config["num_attention_heads"]

        def project(name: str, order: list[int]) -> str:  # to (batch, heads, tokens, head size), or key^T
            return op("Transpose", op("Reshape", self.linear(x, name), split), perm=order)

        query = project(f"{name}.attention.self.query", [0, 2, 1, 3])
        key = project(f"{name}.attention.self.key", [0, 2, 3, 1])
        value = project(f"{name}.attention.self.value", [0, 2, 1, 3])
        scores = op("Div", op("MatMul", query, key), self.const("sqrt head", np.float32(np.sqrt(hidden // heads))))
        attended = op("MatMul", op("Softmax", op("Add", scores, padding), axis=-1), value)
        context = op("Reshape", op("Transpose", attended, perm=[0, 2, 1, 3]), merge)
        x = self.norm(
            op("Add", self.linear(context, f"{name}.attention.output.dense"), x), f"{name}.attention.output.LayerNorm"
        )
        inner = self.linear(x, f"{name}.intermediate.dense")  # exact GELU: x * (1 + erf(x / sqrt 2)) / 2
        erf = op("Erf", op("Div", inner, self.const("sqrt 2", np.float32(np.sqrt(2.0)))))
        gelu = op("Mul", op("Mul", inner, op("Add", erf, "1.0")), self.const("0.5", np.float32(0.5)))
        return self.norm(op("Add", self.linear(gelu, f"{name}.output.dense"), x), f"{name}.output.LayerNorm")

    def model(self, x: str):
        """The ONNX model (opset 17) whose output ``last_hidden_state`` is ``x``."""
        from onnx import TensorProto, helper

        self.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
        inputs = [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ]
        shape = ["batch", "tokens", self.config["hidden_size"]]
        output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, shape)
        graph = helper.make_graph(self.nodes, "bert", inputs, [output], list(self.initializers.values()))
        microsoft = [helper.make_opsetid("com.microsoft", 1)] if self.int8 else []  # MatMulIntegerToFloat
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), *microsoft])


def write_bert_graph(model_path: Path, target: Path, int8: bool = False) -> Path:
    """Write the BERT encoder of ``model_path`` as an ONNX graph (opset 17) from its safetensors
    weights, computing what ``transformers.BertModel`` computes: the last hidden state of
    ``input_ids``, ``attention_mask`` and ``token_type_ids`` (atomically; no torch).

    ``int8``: the linear layers' weights in int8, per output channel, and their inputs quantized
    as they arrive, as ``quantize_int8`` makes them (symmetric scale max|w| / 127)."""
    import onnx
    from safetensors.numpy import load_file

    config = json.loads((model_path / "config.json").read_text())
    weights = {name.removeprefix("bert."): array for name, array in load_file(model_path / "model.safetensors").items()}
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    graph = _BertGraph(config, weights, int8)
    x = graph.embeddings()
    padding = graph.padding()
    split = graph.const("split", np.array([0, 0, heads, hidden // heads], np.int64))
    merge = graph.const("merge", np.array([0, 0, hidden], np.int64))
    for layer in range(config["num_hidden_layers"]):
        x = graph.layer(x, f"encoder.layer.{layer}", padding, split, merge)
    with atomic_path(target) as temporary:
        onnx.save(graph.model(x), str(temporary))
    return target


def trace_with_torch(model_path: Path, target: Path) -> Path:
    """Export the transformer of ``model_path`` to ``target`` by tracing it with ``torch.onnx``
    (atomically; imports torch)."""
    import warnings

    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model = AutoModel.from_pretrained(str(model_path), local_files_only=True).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = torch.ones(2, 8, dtype=torch.long)
    with atomic_path(target) as temporary, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on BERT's mask indexing
        torch.onnx.export(
            LastHiddenState(model),
            (example, example, torch.zeros_like(example)),
            str(temporary),
            dynamo=False,
            input_names=names,
            output_names=["last_hidden_state"],
            opset_version=17,
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]},
        )
    return target


def quantize_int8(source: Path, target: Path) -> Path:
    """Dynamic int8 quantization of the exported model's MatMul weights, per channel (atomically).

    Measured on the sample against fp32: per-channel MatMul-only keeps cosine 0.994 (min 0.992) at
    37 texts/s; ONNX Runtime's defaults (per tensor, all ops) fall to 0.928 (min 0.897)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs advice to pre-process with logging.info(), which would also give the
    # root logger a handler (every later line of the process printed twice): a quiet one instead.
    root, quiet = logging.getLogger(), logging.NullHandler()
    level = root.level
    root.setLevel(logging.ERROR)
    root.addHandler(quiet)
    try:
        with atomic_path(target) as temporary:
            quantize_dynamic(
                str(source),
                str(temporary),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
            )
    finally:
        root.removeHandler(quiet)
        root.setLevel(level)
    return target


class OnnxEncoder:
    """Runs an exported transformer with mean pooling and L2 normalisation, like sentence-transformers."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path, max_seq_length: int, batch_size: int = 32):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        # A Ray actor gets OMP_NUM_THREADS = its CPUs; more threads than CPUs halved throughput there.
        options.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
        self.session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_seq_length)
        self.tokenizer.enable_padding()
        self.batch_size = batch_size

    def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised mean-pooled vectors, batched by length to avoid padding waste."""
        lengths = (
            [len(e.ids) for e in self.tokenizer.encode_batch(texts)]
            if len(texts) > self.batch_size
            else [0] * len(texts)
        )
        order = np.argsort(lengths, kind="stable")
        vectors = [None] * len(texts)
        for start in range(0, len(texts), self.batch_size):
            batch = order[start : start + self.batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            hidden = self.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            for row, i in enumerate(batch):
                vectors[i] = pooled[row]
        return np.stack(vectors).astype(np.float32)  # type: ignore[arg-type]  # every row filled by now
