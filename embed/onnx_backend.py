"""ONNX Runtime backend: the model's transformer exported once, then run without torch.

Export (needs torch, once per model fingerprint) writes ``model.onnx`` into a cache folder,
never into site-packages, with its SHA-256 beside it (``model.onnx.sha256``): a truncated or
corrupted export (or int8 model) is found when it is next loaded and made again. One process
exports at a time (a file lock); a second first run waits and then uses that export.
Running needs only ``onnxruntime`` and ``tokenizers``: ~0.3 s to load against ~6 s for
sentence-transformers, with the same vectors (mean pooling, L2 norm).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
from filelock import FileLock

from paperscope.errors import UserError
from paperscope.files import atomic_path, file_digest

logger = logging.getLogger(__name__)


def _intact(path: Path) -> bool:
    """Whether an exported model file matches the SHA-256 written beside it."""
    seal = path.with_name(path.name + ".sha256")
    try:
        return seal.read_text().strip() == file_digest(path)
    except OSError:
        return False


def _seal(path: Path) -> None:
    with atomic_path(path.with_name(path.name + ".sha256")) as temporary:
        temporary.write_text(file_digest(path) + "\n")


def exported(model_path: Path, folder: Path, quantize: str | None) -> Path:
    """The intact ONNX file of ``model_path`` in ``folder`` (int8 when ``quantize``), exporting
    or quantizing it first when it is missing or damaged (one process at a time)."""
    targets = [folder / "model.onnx", *([folder / "model-int8.onnx"] if quantize else [])]
    if all(map(_intact, targets)):
        return targets[-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder / ".export.lock")
        lock.acquire()
    except OSError as exc:
        raise UserError(f"{folder}: cannot write the ONNX export there ({exc.strerror}); set PAPERSCOPE_HOME") from None
    with lock:
        for target, make in zip(targets, (export_onnx, quantize_int8), strict=False):
            if _intact(target):
                continue  # another process made it while this one waited
            if target.with_name(target.name + ".sha256").exists():
                logger.warning("warning: %s does not match its checksum (damaged); making it again", target)
            logger.info("exporting the model to %s (once per model)", target)
            make(model_path if make is export_onnx else targets[0], target)
            _seal(target)
    return targets[-1]


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
    """Export the transformer of ``model_path`` to ``target`` (atomically; imports torch)."""
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

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs advice to pre-process on the root logger
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
        return np.stack(vectors).astype(np.float32)
