"""Where paperscope keeps things on disk, all under one data folder.

The data folder is ``$PAPERSCOPE_HOME`` if set, else the user data folder of the platform
(platformdirs: ``$XDG_DATA_HOME/paperscope`` or ``~/.local/share/paperscope`` on Linux,
``~/Library/Application Support/paperscope`` on macOS, ``%LOCALAPPDATA%\\paperscope`` on Windows).
Inside it: ``indexes/`` (the default index of the bundled
sample and indexes built from uploads), ``embedding-cache/``, ``onnx/`` (exported models),
``digests.json`` (the SHA-256 of model files, by path, size and times: not hashed at every load) and
``audit.jsonl`` (every write through the service or the app: who, what, when, its outcome).
"""

from __future__ import annotations

import os
import shlex
from importlib.resources import files
from pathlib import Path

import platformdirs

SAMPLE_INDEX_NAME = "neurips2025-sample"


def data_home() -> Path:
    """The data folder (see the module docstring)."""
    if os.environ.get("PAPERSCOPE_HOME"):
        return Path(os.environ["PAPERSCOPE_HOME"])
    return Path(platformdirs.user_data_dir("paperscope", appauthor=False))


def indexes_dir() -> Path:
    """Folder holding named indexes: the sample's and those built from uploads."""
    return data_home() / "indexes"


def default_index_dir() -> Path:
    """The index commands use when none is given: the bundled NeurIPS 2025 sample."""
    return indexes_dir() / SAMPLE_INDEX_NAME


def index_option(folder: str | Path | None) -> str:
    """What a command that a message prints adds to act on the index at ``folder``: `` --index
    DIR``, or nothing for the default index (``None``), which a command without it acts on."""
    if folder is None or Path(folder).absolute() == default_index_dir().absolute():
        return ""
    return f" --index {shlex.quote(str(folder))}"


def cache_dir() -> Path:
    """The embedding cache folder."""
    return data_home() / "embedding-cache"


def digests_file() -> Path:
    """Where the digests of model files are remembered (``files.known_digest``)."""
    return data_home() / "digests.json"


def onnx_dir() -> Path:
    """Where models exported to ONNX are kept, one folder per model fingerprint and export recipe."""
    return data_home() / "onnx"


def audit_file() -> Path:
    """The audit log: a JSON line for each write (``paperscope audit`` prints it)."""
    return data_home() / "audit.jsonl"


def bundled_corpus() -> list[Path]:
    """The NeurIPS 2025 sample files, shipped as package data (``paperscope.data``; the repository's ``data/``)."""
    return sorted(Path(str(files("paperscope.data"))).glob("neurips2025_*.txt"))
