"""Parquet shards of embedded papers: what an engine (local or Ray) hands to the rest of a build.

A shard holds consecutive papers of the corpus, in corpus order: their metadata columns, the
number of word pieces of each embedded text (``tokens``) and the embedding (``vector``, a
fixed-size list of float32). The stages after embedding read them back shard by shard, each stage
once, so no stage needs every abstract in memory at once: one read for the vectors and the corpus's
summary (:meth:`ShardSet.read_back`), then the map's sample of texts, the keyword fit's texts and
the written papers' columns.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from paperscope.embed.columns import OPTIONAL_FIELDS, values_array
from paperscope.embed.readers.admission import ReadReport, abstract_key, filled_fields
from paperscope.embed.text import embedding_texts
from paperscope.files import reserved_array
from paperscope.limits import AUTO_FAST_PAPERS, BALANCED_SPEEDUP, FAST_SPEEDUP
from paperscope.settings import BuildSettings, LongText

if TYPE_CHECKING:
    from paperscope.embed.model import Encoder

logger = logging.getLogger(__name__)

STRING_COLUMNS = ["id", "title", "abstract", *[f for f in OPTIONAL_FIELDS if f != "year"], "source"]
PAPER_COLUMNS = ["id", "title", "title_derived", "abstract", *OPTIONAL_FIELDS, "source", "tokens"]
READ_BACK_COLUMNS = ["id", "title", "title_derived", "abstract", "tokens", *OPTIONAL_FIELDS]  # and "vector"
SPEEDUP = {"balanced": BALANCED_SPEEDUP, "fast": FAST_SPEEDUP}  # an int8 preset's embedding over exact's
SHARD_ROWS = max(20_000, AUTO_FAST_PAPERS)  # papers per shard; the local engine reads one before it settles the preset


def _schema(dimension: int) -> pa.Schema:
    types = {
        "title_derived": pa.bool_(),
        "year": pa.int64(),
        "tokens": pa.int64(),
        **{name: pa.string() for name in STRING_COLUMNS},
    }
    return pa.schema([(name, types[name]) for name in PAPER_COLUMNS] + [("vector", pa.list_(pa.float32(), dimension))])


def write_shard(path: Path, papers: pd.DataFrame, vectors: np.ndarray) -> Path:
    """Write papers (``PAPER_COLUMNS``; missing optional fields become nulls), the corpus's own
    columns (from each paper's ``extra`` dict, when there is one) and their vectors."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    frame = papers.reindex(columns=PAPER_COLUMNS)
    # (the ignores: pandas-stubs reject where(..., None) and pd.array of a Series, which pandas documents)
    for name in STRING_COLUMNS:
        frame[name] = frame[name].astype(object).where(frame[name].notna(), None)  # type: ignore[call-overload]
    frame["year"] = pd.array(frame["year"], dtype="Int64")  # type: ignore[call-overload]
    frame = frame.astype({"title_derived": bool, "tokens": np.int64})  # Ray hands over Arrow-backed dtypes
    schema = _schema(vectors.shape[1])
    table = pa.Table.from_pandas(frame, schema=schema.remove(schema.get_field_index("vector")), preserve_index=False)
    extras = papers["extra"].tolist() if "extra" in papers else []
    for name in dict.fromkeys(name for extra in extras for name in extra):
        table = table.append_column(name, values_array([extra.get(name) for extra in extras]))
    table = table.append_column(
        "vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
    )
    pq.write_table(table, path)
    del table
    pa.default_memory_pool().release_unused()  # else Arrow's allocator keeps ~100 MB a shard
    return path


def shard_lengths(shards: list[Path]) -> list[int]:
    """Papers in each shard (from the Parquet footers)."""
    return [pq.ParquetFile(path).metadata.num_rows for path in shards]


def read_columns(path: Path, columns: list[str]) -> pd.DataFrame:
    """Some columns of one shard."""
    return pq.read_table(path, columns=columns).to_pandas()


def vector_array(column: pa.ChunkedArray) -> np.ndarray:
    """A shard's ``vector`` column as an (n, dimension) float32 array."""
    column = column.combine_chunks()
    return column.values.to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)


def own_schema(shards: list[Path]) -> pa.Schema:
    """The corpus's own columns of all shards (those not paperscope's), each of one type: a
    column some shards lack, or have only nulls in, takes the others' type (text when none has
    one); whole numbers in one shard and fractions in another are all float64."""
    schemas = [pq.read_schema(path) for path in shards]
    own = [pa.schema([item for item in schema if item.name not in [*PAPER_COLUMNS, "vector"]]) for schema in schemas]
    merged = pa.unify_schemas(own, promote_options="permissive")
    return pa.schema([item.with_type(pa.string()) if pa.types.is_null(item.type) else item for item in merged])


def paper_tables(shards: list[Path], keep: list[str], extra: pd.DataFrame):
    """Each shard's papers as an Arrow table (with pandas metadata, so a nullable year stays an
    integer) of the ``keep`` columns, with the matching rows of ``extra`` (per-paper columns
    computed later, one row per paper of all shards) appended, then the corpus's own columns
    (:func:`own_schema`; nulls where a shard lacks one)."""
    start, own = 0, own_schema(shards)
    for path in shards:
        table = pq.read_table(path, columns=keep)
        frame = pd.concat(
            [table.to_pandas(), extra.iloc[start : start + table.num_rows].reset_index(drop=True)], axis=1
        )
        schema = pa.schema(list(table.schema) + list(pa.Schema.from_pandas(extra, preserve_index=False)))
        start += table.num_rows
        papers = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
        present = [name for name in own.names if name in pq.read_schema(path).names]
        yield with_columns(papers, pq.read_table(path, columns=present), own)


def with_columns(papers: pa.Table, columns: pa.Table, schema: pa.Schema) -> pa.Table:
    """``papers`` with the columns of ``schema`` appended, taken from ``columns`` (cast to their
    type) or, where it lacks one, nulls."""
    for item in schema:
        if item.name in columns.column_names:
            papers = papers.append_column(item, columns.column(item.name).cast(item.type))
        else:
            papers = papers.append_column(item, pa.nulls(papers.num_rows, item.type))
    return papers


def _no_stage(name: str) -> None:
    """Stages followed by no one."""


@dataclass
class EmbedJob:
    """What an engine is asked to do: read ``inputs`` and embed their papers as ``settle`` decides,
    calling ``on_stage("read")`` and ``on_stage("embed")`` as those stages start."""

    inputs: list[Path]
    settings: BuildSettings
    encoder: Encoder | None = None  # once settled: the build's one encoder
    long_text: LongText = "mean"
    choice: dict = field(default_factory=dict)  # the manifest's "preset" section
    on_stage: Callable[[str], None] = _no_stage

    def settle(self, papers: int) -> None:
        """Fix the embedding settings once the engine knows the corpus has at least ``papers``
        papers (all of them, or at least AUTO_FAST_PAPERS), and make the build's encoder: the one
        that embeds the papers (locally; Ray's actors make their own in their processes), names
        the topics and is described in the manifest."""
        from paperscope import locations
        from paperscope.embed.model import Encoder

        name, how, preset = self.settings.embedding(papers)
        self.encoder = Encoder(
            self.settings.model_path, onnx_dir=locations.onnx_dir(), quantize=preset.quantize, window=preset.window
        )
        if name in SPEEDUP and not self.settings.preset:
            logger.info(
                "embedding with the %s preset (int8, the first %d word pieces; %s); "
                "--preset exact embeds whole texts in fp32, %.1f times as slow",
                name, self.encoder.max_tokens, how, SPEEDUP[name],
            )  # fmt: skip
        self.long_text = preset.long_text
        self.choice = {"name": name, "how": how, **dataclasses.asdict(preset)}

    @property
    def settled_encoder(self) -> Encoder:
        """The build's encoder, for the stages after ``settle`` (an engine calls it as it reads)."""
        if self.encoder is None:
            raise RuntimeError("EmbedJob.settle was not called before the encoder was needed")
        return self.encoder


@dataclass
class Embedded:
    """What an engine hands on: the papers, in corpus order, embedded into Parquet shards."""

    shards: list[Path]
    read_report: ReadReport
    embedded: int  # texts embedded anew (the others came from the cache)
    engine: dict  # the manifest's "engine" section
    seconds: dict[str, float] = field(default_factory=dict)


class Engine(Protocol):
    """Reads and embeds a corpus into shards: ``LocalEngine`` (this process) or ``RayEngine``."""

    def embed(self, job: EmbedJob, work: Path, on_progress) -> Embedded:
        """Embed ``job`` into Parquet shards written in ``work``; ``on_progress(fraction, stage)``."""


def _corpus_keys(frame: pd.DataFrame) -> list[str]:
    """Each paper's id and abstract key: what the corpus fingerprint is a hash of."""
    return [f"{paper_id}\0{abstract_key(text)}" for paper_id, text in zip(frame["id"], frame["abstract"], strict=True)]


@dataclass
class ReadBack:
    """What one read of every shard gives the stages after embedding (:meth:`ShardSet.read_back`)."""

    vectors: np.ndarray  # (papers, dimension) float32, memory-mapped
    ids: list[str]
    tokens: np.ndarray  # word pieces of each embedded text
    filled: list[str]  # the optional fields some paper fills
    fingerprint: str  # of the corpus: its ids and abstracts
    rows: np.ndarray  # the rows asked for
    texts: list[str]  # their embedded texts


class ShardSet:
    """The embedded papers as the later stages of a build read them: column by column, shard by shard."""

    def __init__(self, parts: list[Path]):
        self.parts = parts
        self.lengths = shard_lengths(parts)
        self.count = sum(self.lengths)

    def columns(self, names: list[str]):
        """Each shard's ``names`` columns, in order."""
        return (read_columns(path, names) for path in self.parts)

    def texts(self):
        """The embedded text of every paper, in order."""
        for frame in self.columns(["title", "abstract", "title_derived"]):
            yield from embedding_texts(frame)

    def texts_of(self, rows: np.ndarray) -> list[str]:
        """The embedded texts of the given (sorted) rows."""
        found, start = [], 0
        for path, length in zip(self.parts, self.lengths, strict=True):
            local = rows[(rows >= start) & (rows < start + length)] - start
            if len(local):
                found += embedding_texts(read_columns(path, ["title", "abstract", "title_derived"]).iloc[local])
            start += length
        return found

    def read_back(self, path: Path, rows: np.ndarray) -> ReadBack:
        """Read every shard once, one at a time: its vectors copied into a memory-mapped .npy file at
        ``path``, what the manifest says of the corpus, and the embedded texts of the sorted ``rows``."""
        vectors, ids, tokens, filled, keys, texts, start = None, [], [], set(), [], [], 0
        for part in self.parts:
            table = pq.read_table(part, columns=[*READ_BACK_COLUMNS, "vector"])
            block = vector_array(table.column("vector"))
            if vectors is None:
                vectors = reserved_array(path, (self.count, block.shape[1]))
            vectors[start : start + len(block)] = block
            frame = table.drop_columns(["vector"]).to_pandas()
            del table, block
            ids += frame["id"].tolist()
            tokens.append(frame["tokens"].to_numpy())
            filled |= filled_fields(frame)
            keys += _corpus_keys(frame)
            texts += embedding_texts(frame.iloc[rows[(rows >= start) & (rows < start + len(frame))] - start])
            start += len(frame)
        pa.default_memory_pool().release_unused()  # else Arrow's allocator keeps the decoded shards' pages
        fingerprint = hashlib.sha256("\0".join(sorted(keys)).encode()).hexdigest()[:16]
        filled_in_order = [name for name in OPTIONAL_FIELDS if name in filled]
        if vectors is None:  # a build of no papers stops at reading
            raise ValueError("no shards to read back")
        return ReadBack(vectors, ids, np.concatenate(tokens), filled_in_order, fingerprint, rows, texts)
