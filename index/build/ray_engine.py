"""The Ray engine: read and embed a corpus on Ray Data, locally or on an existing Ray cluster.

1. Read: one Ray task per input file, with the same readers as the local engine
   (:func:`embed.readers.read_records`), so every format and every error message is the same.
2. Admit: the driver decides which records become papers in corpus order (first of each id and
   abstract, :class:`embed.readers.admission.Admission`) from small columns only: ids, text hashes, lengths.
3. Embed: a pool of actors, each loading the model once (``map_batches`` with a callable class),
   drops the records not admitted and embeds the rest (long texts windowed as locally).
4. The driver receives the embedded papers in corpus order and writes them as Parquet shards
   (:mod:`index.shards`), from which the build makes the FAISS index, map and keyword index.

Ray is an optional extra (``pip install 'paperscope[ray]'``); only this module imports it.
On a cluster, every node needs paperscope installed and must see the input files at the same
paths (shared storage); the index is written on the machine that runs ``paperscope build``.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from paperscope.embed.columns import from_json, to_json
from paperscope.embed.readers import Reading, iter_records
from paperscope.embed.readers.admission import Admission, abstract_key, paper_row
from paperscope.embed.text import embedding_texts
from paperscope.errors import UserError
from paperscope.index.build import shards

logger = logging.getLogger(__name__)
EMBED_BATCH = 256  # texts per actor call: large enough to sort by length and keep batches full


def _read_file(batch: pd.DataFrame, fields: dict | None, where: tuple = ()) -> pd.DataFrame:
    """One input file's records (those meeting ``where``) as paper rows, read a record at a time, with
    their position in the corpus and duplicate keys; each row's own columns (``extra``: dates, lists)
    as JSON text (``columns.to_json``), for Ray would make a column of dicts an Arrow struct (read
    back in ``_write_part``).
    A file the readers refuse becomes one row holding the error (exceptions lose their type in Ray)."""
    rows: list[dict] = []
    for file_number, path in zip(batch["file"], batch["path"], strict=True):
        start = len(rows)
        try:
            for record_number, record in enumerate(iter_records(path, fields, reading=Reading(where=where))):
                row = paper_row(record)
                rows.append(
                    {
                        **row,
                        "extra": to_json(row["extra"]),
                        "file": file_number,
                        "record": record_number,
                        "text_key": abstract_key(row["abstract"]),
                        "chars": len(row["abstract"]),
                        "status": row["extra"].get("status") or "",  # a string in every block, for Arrow
                        "error": None,
                    }
                )
        except UserError as exc:
            del rows[start:]
            rows.append(
                {
                    "file": file_number,
                    "record": -1,
                    "source": path,
                    "id": "",
                    "text_key": "",
                    "chars": 0,
                    "status": "",
                    "error": str(exc),
                }
            )
    columns = [*paper_row({"source": ""}), "file", "record", "text_key", "chars", "status", "error"]
    return pd.DataFrame(rows, columns=columns)  # the columns even when --where leaves out every record


def _position(frame: pd.DataFrame) -> np.ndarray:
    """One sortable integer per record: its file, then its place in the file."""
    return frame["file"].to_numpy(np.int64) << 40 | frame["record"].to_numpy(np.int64)


class _Embedder:
    """A Ray actor: loads the model once, then embeds batches of admitted records. Each actor makes
    an encoder of its own, in its own process (an encoder is not sent between processes); the
    driver's, made by ``EmbedJob.settle``, is the build's."""

    def __init__(self, model_path: str, quantize: str | None, window: int | None, long_text: str, rejected: np.ndarray):
        from paperscope import locations
        from paperscope.embed.model import Encoder

        self.encoder = Encoder(model_path, onnx_dir=locations.onnx_dir(), quantize=quantize, window=window)
        self.long_text = long_text
        self.rejected = rejected

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        batch = batch[~np.isin(_position(batch), self.rejected)].reset_index(drop=True)
        texts = embedding_texts(batch)
        vectors = self.encoder.encode(texts, long_text=self.long_text) if texts else np.zeros((0, 1), np.float32)
        return batch.assign(tokens=self.encoder.count_tokens(texts), vector=list(vectors))


def _start_ray(address: str | None, workers: int | None) -> tuple[int, bool]:
    """Connect to the cluster at ``address`` or start a local Ray; returns (actors, whether we started it)."""
    import ray

    started = not ray.is_initialized()
    if started:
        if address is None:
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a private local cluster: no token to hand out
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")  # Ray's C++ notes on actor restarts
        env = {name: os.environ[name] for name in ("PAPERSCOPE_HOME",) if name in os.environ}
        try:
            ray.init(
                address=address,
                num_cpus=None if address else (workers or os.cpu_count()),
                include_dashboard=False,
                log_to_driver=False,
                logging_level="error",  # type: ignore[arg-type]  # a level's name works too (ray upper-cases it)
                runtime_env={"env_vars": env} if env else None,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(
                f"cannot reach the Ray cluster at {address or 'local'}: {str(exc).splitlines()[0][:160]}"
            ) from None
    cpus = int(ray.cluster_resources().get("CPU", 1))
    actors = workers or cpus
    where = f"cluster at {address}" if address else "local"
    logger.info("Ray %s: %s, %d CPUs, %d embedding actors", ray.__version__, where, cpus, actors)
    return actors, started


class RayEngine:
    """Reads and embeds on Ray Data (see the module docstring): a local Ray with ``workers`` CPUs,
    or the cluster at ``address``. It does not use the embedding cache."""

    def __init__(self, address: str | None = None, workers: int | None = None):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise UserError(f"--workers must be a whole number of at least 1, got {workers!r}")
        self.address = address
        self.workers = workers

    def embed(self, job: shards.EmbedJob, work: Path, on_progress) -> shards.Embedded:
        """Embed ``job`` into Parquet shards in ``work``; ``on_progress(fraction, stage)``."""
        return _embed_with_ray(job, work, self.address, self.workers, on_progress)


def _embed_with_ray(job: shards.EmbedJob, work: Path, address: str | None, workers: int | None, on_progress):
    inputs, fields = job.inputs, job.settings.fields.overrides()
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")  # else several INFO lines per dataset on the console
    try:
        import ray
    except ImportError:
        raise UserError("--engine ray needs Ray: pip install 'paperscope[ray]'") from None
    _check_inputs(inputs)
    job.on_stage("read")
    actors, started = _start_ray(address, workers)
    seconds = {}
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # papers come back in corpus order
        context.enable_progress_bars = False
        begin = time.perf_counter()
        records, keys = _read(inputs, fields, job.settings.where)
        admission, admitted = _admit(keys, inputs)
        count = int(admitted.sum())
        seconds["read"] = round(time.perf_counter() - begin, 3)
        job.settle(count)  # the driver's encoder: the manifest's model, and it names the topics
        encoder, long_text = job.settled_encoder, job.long_text
        job.on_stage("embed")
        begin = time.perf_counter()
        embedded = records.map_batches(
            _Embedder,
            fn_constructor_args=(
                str(encoder.path),
                encoder.quantize,
                encoder.window,
                long_text,
                _position(keys)[~admitted],
            ),
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=1,
            batch_size=EMBED_BATCH,
            batch_format="pandas",
        )
        parts = _write_in_order(embedded, work, count, on_progress)
        seconds["embed"] = round(time.perf_counter() - begin, 3)
    finally:
        if started:
            ray.shutdown()
    return shards.Embedded(
        parts,
        admission.report,
        count,
        {"name": "ray", "address": address or "local", "actors": actors, "ray": ray.__version__},
        seconds,
    )


def _check_inputs(inputs) -> None:
    """Fail before starting Ray for the common mistakes: no files, a folder, a missing file."""
    if not inputs:
        raise UserError("no corpus files given")
    for path in map(Path, inputs):
        if not path.is_file():
            raise UserError(
                f"{path}: {'is a directory; pass the corpus files inside it' if path.is_dir() else 'no such file'}"
            )


def _read(inputs, fields: dict | None, where: tuple = ()):
    """Read the files, one Ray task each: the records (a materialized dataset) and their small
    columns (position, source, id, text key, length, error) in corpus order on the driver."""
    import ray

    files = ray.data.from_items([{"file": i, "path": str(Path(p).resolve())} for i, p in enumerate(inputs)])
    records = files.map_batches(
        _read_file,  # type: ignore[arg-type]  # fn_kwargs gives its other arguments
        fn_kwargs={"fields": fields, "where": tuple(where)},
        batch_size=1,
        batch_format="pandas",
    )
    records = records.materialize()
    keys = pd.concat(
        records.select_columns(["file", "record", "source", "id", "text_key", "chars", "status", "error"]).iter_batches(
            batch_format="pandas", batch_size=None
        )
    ).sort_values(["file", "record"])
    errors = keys["error"].dropna()
    if len(errors):
        raise UserError(errors.iloc[0])
    return records, keys


def _admit(keys: pd.DataFrame, inputs) -> tuple[Admission, np.ndarray]:
    """Which records become papers (first of each id and abstract), decided in corpus order."""
    admission = Admission()
    admitted = np.array(
        [
            admission.admit(*row)
            for row in zip(keys["source"], keys["id"], keys["text_key"], keys["chars"], keys["status"], strict=True)
        ],
        dtype=bool,
    )
    admission.check_found(inputs)
    logger.info("read %d papers from %d file(s)", int(admitted.sum()), len(inputs))
    for line in admission.report.lines():
        logger.warning("%s", line)
    return admission, admitted


def _write_in_order(embedded, work: Path, count: int, on_progress) -> list[Path]:
    """Receive the embedded papers (checking they come in corpus order) and write them as
    Parquet shards of about ``shards.SHARD_ROWS`` rows; ``on_progress(fraction, stage)``."""
    parts: list[Path] = []
    pending: list[pd.DataFrame] = []
    done, last = 0, -1
    for batch in embedded.iter_batches(batch_format="pandas", batch_size=None):
        positions = _position(batch)
        if len(positions) and (positions[0] <= last or (np.diff(positions) <= 0).any()):
            raise RuntimeError("Ray returned papers out of corpus order")  # preserve_order is set: a bug
        last = positions[-1] if len(positions) else last
        pending.append(batch)
        done += len(batch)
        on_progress(done / count, "embedding")
        if sum(map(len, pending)) >= shards.SHARD_ROWS or done == count:
            parts.append(_write_part(work, len(parts), pending))
            pending = []
    return parts


def _write_part(work: Path, number: int, batches: list[pd.DataFrame]) -> Path:
    frame = pd.concat(batches, ignore_index=True)
    extra = [from_json(extra) for extra in frame["extra"]]  # as JSON text from _read_file
    frame["extra"] = pd.Series(extra, index=frame.index, dtype=object)
    return shards.write_shard(work / f"part-{number:05d}.parquet", frame, np.stack(list(frame["vector"])))
