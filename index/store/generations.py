"""The index folder on disk: the only code that writes or reads its files.

Layout of an index folder ``DIR``::

    DIR/CURRENT                   name of the generation readers use (replaced atomically)
    DIR/gen-<time>-<hex>/         one complete build
        manifest.json             format version, model, counts, recipe, versions, file checksums
        faiss.index               FAISS inner-product index over the papers' vectors (float32 (n, d),
                                  L2-normalised, row i = paper i): its flat storage, memory-mapped, is
                                  the vectors (a kind without one, IVF or PQ, has vectors.npy beside it)
        papers.arrow              metadata, one row per paper, same order as the vectors
                                  (Arrow IPC file, uncompressed: memory-mapped, nothing decoded at load)
        clusters.parquet          topic clusters and their names
        keyword.{csr,csc}.*.npy   sparse TF-IDF paper x term matrix, by paper and by term (memory-mapped)
        keyword_terms.json        its terms and their IDF
        smoothing_neighbours.npy  int32 (n, k): each paper's nearest other rows, from which its
                                  neighbour-smoothed vector is made (only when the build smoothed; an
                                  index written before kept the vectors themselves, smoothed.npy)
    DIR/.build.lock               held by the build writing into DIR
    DIR/curations.json            corrections to the topics (:mod:`.curations`): never touched by a build
    DIR/IDENTITY                  the index's identity (a random id, written by its first build): what
                                  collections are tied to, so that they move, or are copied, with the folder

Loading checks the format, every file's size and the arrays' shapes, and reads almost nothing:
``PaperIndex.load`` of a million papers takes well under a second. The SHA-256 of every file is
written at build and checked by :func:`verify` (``paperscope verify``).

A build writes a new generation into a temporary folder, renames it into place and only
then points CURRENT at it, so a failed or killed build leaves the previous index answering.
Old generations and leftover temporary folders are removed by the next build.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import json
import os
import shlex
import shutil
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paperscope import locations
from paperscope.errors import UserError
from paperscope.files import TEMPORARY_PREFIX, atomic_path, file_digest, mapped_array
from paperscope.index.common.keyword import KeywordIndex
from paperscope.index.common.smoothed import RowVectors, SmoothedVectors
from paperscope.index.store.keyword_files import read_keyword, write_keyword
from paperscope.index.store.manifest import Manifest

VECTORS_FILE, FAISS_FILE, PAPERS_FILE, CLUSTERS_FILE, MANIFEST_FILE = (
    "vectors.npy",
    "faiss.index",
    "papers.arrow",
    "clusters.parquet",
    "manifest.json",
)
SMOOTHED_FILE, NEIGHBOURS_FILE = "smoothed.npy", "smoothing_neighbours.npy"  # the first: written before
POINTER_FILE, LOCK_FILE, IDENTITY_FILE = "CURRENT", ".build.lock", "IDENTITY"


@contextmanager
def build_lock(folder: Path):
    """Hold the folder's build lock; a second build into the same folder fails clearly."""
    from filelock import FileLock, Timeout  # a build's: a lookup loads none of it

    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        lock = FileLock(folder / LOCK_FILE, blocking=False).acquire()
    except Timeout:
        raise UserError(f"{folder}: another build is writing this index; wait for it or use another -o") from None
    with lock:
        for path in leftovers(folder):  # a killed build's: no build holds the lock but this one
            _remove(path)
        try:
            yield
        except BaseException:
            if created and not is_index(folder):  # a first build that failed leaves nothing behind
                shutil.rmtree(folder, ignore_errors=True)
            raise


@dataclass
class Generation:
    """Everything one index generation holds, as read back."""

    manifest: Manifest
    vectors: np.ndarray
    faiss_index: Any  # a faiss.Index (faiss ships no types)
    papers: Any  # read: a memory-mapped pyarrow Table; written: a DataFrame, a Table or an iterable of Tables
    clusters: Any  # both levels' topics; read: a pyarrow Table (a lookup loads no pandas); written: a DataFrame
    keyword: KeywordIndex
    # neighbour-smoothed vectors (paperscope.index.build.smoothing), if built: made from each paper's
    # neighbours (an array: those of an index written before they were)
    smoothed: RowVectors | None = None
    name: str | None = None  # read: the generation folder's name


def _read_table(path: Path):
    # Through pyarrow itself: pandas 2.3's read_parquet aborted the process at exit about once in
    # 50 runs here ("terminate called without an active exception"); 0 in 160 this way. As one
    # file: pq.read_table goes through pyarrow.dataset, which imports pandas (0.4 s of a lookup).
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read()


def _write_papers(path: Path, papers) -> None:
    import pandas as pd
    import pyarrow as pa

    if isinstance(papers, pd.DataFrame):
        papers = pa.Table.from_pandas(papers, preserve_index=False)
    if isinstance(papers, pa.Table):
        papers = [papers]
    writer = None
    try:
        for table in papers:
            writer = writer or pa.ipc.new_file(str(path), table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def _map_papers(path: Path):
    import pyarrow as pa

    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


class _Holding:
    """An array's memory that belongs to a FAISS index: the array keeps the index alive."""

    def __init__(self, faiss_index, address: int, shape: tuple[int, int], writeable: bool):
        self.faiss_index = faiss_index
        self.__array_interface__ = {"shape": shape, "typestr": "<f4", "data": (address, not writeable), "version": 3}


def flat_vectors(faiss_index, writeable: bool = False) -> np.ndarray | None:
    """The vectors a FAISS index stores flat (a Flat index, or an HNSW graph's flat storage), as an
    (n, d) float32 array over the index's own memory, which it keeps alive; None for a kind that
    stores them otherwise (IVF, PQ, scalar quantizers). ``writeable``: only for an index read whole."""
    import faiss

    index = faiss.downcast_index(faiss_index)
    storage = faiss.downcast_index(index.storage) if hasattr(index, "storage") else index
    if not isinstance(storage, faiss.IndexFlat) or storage.ntotal == 0:
        return None
    xb = storage.get_xb()  # faiss's generated stubs lack IndexFlat's
    address = faiss.rev_swig_ptr(xb, 1).__array_interface__["data"][0]
    return np.asarray(_Holding(faiss_index, address, (storage.ntotal, storage.d), writeable))


def write_generation(folder: Path, generation: Generation, on_stage=None) -> Path:
    """Write one complete index generation into ``folder`` and make it current (call under build_lock);
    ``on_stage("commit")`` is called between the two, once the generation's files are complete."""
    import faiss

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
    target = folder / f"gen-{stamp}-{uuid.uuid4().hex[:6]}"
    # Each file is hashed (hashlib lets go of the GIL) as soon as it is written, while the next is written.
    with atomic_path(target) as temporary, ThreadPoolExecutor(os.cpu_count()) as pool:
        temporary.mkdir()
        digests: dict[str, Any] = {}

        def hash_written() -> None:
            for path in temporary.iterdir():
                if path.name not in digests:
                    digests[path.name] = pool.submit(file_digest, path)

        if flat_vectors(generation.faiss_index) is None:  # else the FAISS index's storage is the vectors
            np.save(temporary / VECTORS_FILE, np.ascontiguousarray(generation.vectors, np.float32), allow_pickle=False)
            hash_written()
        faiss.write_index(generation.faiss_index, str(temporary / FAISS_FILE))
        hash_written()
        _write_papers(temporary / PAPERS_FILE, generation.papers)
        generation.clusters.to_parquet(temporary / CLUSTERS_FILE, index=False)
        hash_written()
        write_keyword(generation.keyword, temporary)
        hash_written()
        if isinstance(generation.smoothed, SmoothedVectors):
            neighbours = np.ascontiguousarray(generation.smoothed.neighbours, np.int32)
            np.save(temporary / NEIGHBOURS_FILE, neighbours, allow_pickle=False)
        elif generation.smoothed is not None:  # an index written before neighbours were kept, added to
            np.save(
                temporary / SMOOTHED_FILE, np.ascontiguousarray(generation.smoothed, np.float32), allow_pickle=False
            )
        hash_written()
        files = {name: {"bytes": (temporary / name).stat().st_size, "sha256": digests[name].result()}
                 for name in sorted(digests)}  # fmt: skip
        manifest = dataclasses.replace(generation.manifest, files=files).to_json()
        (temporary / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, default=str))
        if on_stage is not None:
            on_stage("commit")
    with atomic_path(folder / POINTER_FILE) as pointer:
        pointer.write_text(target.name + "\n")
    identity(folder)
    remove_stale(folder)
    return target


def identity(folder: str | Path, create: bool = True) -> str:
    """The identity of the index in ``folder`` (``IDENTITY``), written now when an index of an
    earlier release has none (``create``; else "" for none); a folder that cannot be written keeps
    its resolved path as identity (what collections were tied to before identities)."""
    path = Path(folder) / IDENTITY_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if not create:
            return ""
    except OSError as exc:
        raise UserError(f"{path}: cannot read the index's identity ({exc.strerror or exc})") from None
    temporary = path.with_name(f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-{IDENTITY_FILE}")
    try:
        temporary.write_text(uuid.uuid4().hex + "\n", encoding="utf-8")
        os.link(temporary, path)  # never replaces one written meanwhile by another process
    except FileExistsError:
        pass
    except OSError:
        return str(Path(folder).resolve())
    finally:
        temporary.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def new_identity(folder: str | Path) -> str:
    """Give the index in ``folder`` a new identity (``IDENTITY`` replaced at once): a copy that
    shared the identity, and so the collections, of the folder it was copied from has its own."""
    path = Path(folder) / IDENTITY_FILE
    temporary = path.with_name(f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-{IDENTITY_FILE}")
    try:
        temporary.write_text(uuid.uuid4().hex + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise UserError(f"{path}: cannot write the index's identity ({exc.strerror or exc})") from None
    return path.read_text(encoding="utf-8").strip()


def leftovers(folder: str | Path) -> list[Path]:
    """What killed builds left in ``folder``: its temporary files and folders (removed by the next
    build or add, which holds the folder's lock; ``paperscope verify`` names them)."""
    folder = Path(folder)
    return (
        sorted(path for path in folder.iterdir() if path.name.startswith(TEMPORARY_PREFIX)) if folder.is_dir() else []
    )


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale(folder: Path) -> None:
    """Delete generations other than the current one and leftovers of killed builds (under build_lock)."""
    current = current_generation_name(folder)
    for path in folder.iterdir():
        if path.name.startswith("gen-") and path.name != current:
            _remove(path)
    for path in leftovers(folder):
        _remove(path)


def current_generation_name(folder: Path) -> str | None:
    """Name of the generation CURRENT points at, or None for a folder without a finished build."""
    try:
        return (folder / POINTER_FILE).read_text().strip() or None
    except (FileNotFoundError, NotADirectoryError):  # no build yet, or a file given as the folder
        return None


def is_index(folder: str | Path) -> bool:
    """Whether ``folder`` holds a finished index."""
    return current_generation_name(Path(folder)) is not None


def is_current_format(folder: str | Path) -> bool:
    """Whether ``folder`` holds a finished index this paperscope can read."""
    name = current_generation_name(Path(folder))
    if name is None:
        return False
    try:
        Manifest.from_json(json.loads((Path(folder) / name / MANIFEST_FILE).read_text()), str(folder))
    except (OSError, ValueError, UserError):
        return False
    return True


CODE_VERSION = "paperscope-code"  # the manifest's versions entry that holds :func:`code_digest`


@functools.cache
def code_digest() -> str:
    """A digest of the source of embed/ and index/, the code that decides what an index holds (its
    papers, map and topic names): kept in each manifest's versions, so that an update that changes
    it rebuilds the bundled sample's index (:func:`sample_is_current`)."""
    from paperscope import embed, index

    digest = hashlib.sha256()
    for room in (embed, index):
        for path in sorted(Path(str(room.__file__)).parent.rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def sample_is_current(folder: str | Path) -> bool:
    """Whether the default index ``folder`` needs no build of the bundled sample: it holds the sample's
    index of this format, built by this very code (:func:`code_digest`), or an index of a user's own
    files (``paperscope build FILES`` without ``-o``), never replaced by the sample."""
    if not is_current_format(folder):
        return False
    manifest = read_manifest(folder)
    return tuple(manifest.corpus.sources) != sample_names() or manifest.versions.get(CODE_VERSION) == code_digest()


def sample_names() -> tuple[str, ...]:
    """The bundled sample's file names, as a manifest of its index lists them."""
    return tuple(path.name for path in locations.bundled_corpus())


YOUR_FILES = "YOUR_FILES"  # what a rebuild hint names when the index's own files are not known


def build_command(folder: str | Path, sources: tuple[str, ...] | None = None) -> str:
    """The command that builds the index at ``folder`` again from ``sources``, the corpus files its
    manifest names (:func:`recorded_sources`: the bundled sample's alone, which a build without files
    reads; a bundled file beside others, by its full path), or from YOUR_FILES where they are not
    known. Never a command that builds another corpus into the folder (a build without files there
    refuses one of other files)."""
    bundled = {path.name: str(path) for path in locations.bundled_corpus()}
    if sources is None:
        files = [YOUR_FILES]
    elif tuple(sources) == sample_names():
        files = []
    else:
        files = [bundled.get(source, source) for source in sources]
    return shlex.join(["paperscope", "build", *files, "-o", str(folder)])


def recorded_sources(inputs: Sequence[str | Path]) -> tuple[str, ...]:
    """The corpus files ``inputs`` as a manifest records them: a bundled sample file by its name
    (an index of the sample is one wherever paperscope is installed), any other by its absolute
    path, so that a rebuild hint (:func:`build_command`) runs from any folder."""
    bundled = {path.resolve(): path.name for path in locations.bundled_corpus()}
    return tuple(bundled.get(Path(path).resolve(), str(Path(path).resolve())) for path in inputs)


def holds_index(folder: str | Path) -> bool:
    """Whether ``folder`` is an index folder, finished, damaged or of a stopped first build: it
    holds what a build writes (``CURRENT``, ``IDENTITY``, the build lock or a generation)."""
    folder = Path(folder)
    names = (POINTER_FILE, IDENTITY_FILE, LOCK_FILE)
    return folder.is_dir() and (any((folder / name).exists() for name in names) or any(folder.glob("gen-*")))


def built_from(folder: str | Path) -> tuple[tuple[str, ...] | None, int | None]:
    """The corpus files and the number of papers of the index at ``folder``, as its current
    manifest says, read leniently (a manifest of another format too); None for what it does not say."""
    name = current_generation_name(Path(folder))
    try:
        value = json.loads((Path(folder) / str(name) / MANIFEST_FILE).read_text()) if name else None
    except (OSError, ValueError):
        return None, None
    count = value.get("count") if isinstance(value, dict) else None
    return _sources_of(value), count if isinstance(count, int) else None


def _sources_of(value) -> tuple[str, ...] | None:
    """``corpus.sources`` of a manifest's JSON, if it is a non-empty list of names."""
    corpus = value.get("corpus") if isinstance(value, dict) else None
    sources = corpus.get("sources") if isinstance(corpus, dict) else None
    if isinstance(sources, list) and sources and all(isinstance(source, str) for source in sources):
        return tuple(sources)
    return None


def _source(folder: Path) -> tuple[Path, Manifest, str]:
    """The current generation's folder and manifest, checked for format; and the rebuild hint,
    naming the files the index was built from where its manifest says (:func:`build_command`)."""
    hint = f"build one with: {build_command(folder)}"
    if not folder.is_dir():
        raise UserError(
            f"{folder}: {'a file, not an index folder' if folder.exists() else 'no such index folder'}; {hint}"
        )
    name = current_generation_name(folder)
    if name is None:
        if not holds_index(folder) and any(folder.iterdir()):  # the user's own files: a build goes in a new folder
            hint = f"build one with: {build_command(folder / 'index')}"
        raise UserError(f"{folder}: not a paperscope index (no {POINTER_FILE} file); {hint}")
    source = folder / name
    try:
        value = json.loads((source / MANIFEST_FILE).read_text())
    except FileNotFoundError:
        raise UserError(f"{source}: {MANIFEST_FILE} is missing; rebuild the index ({hint})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{source / MANIFEST_FILE}: corrupt ({exc.msg}); rebuild the index ({hint})") from None
    hint = f"build one with: {build_command(folder, _sources_of(value))}"
    try:
        manifest = Manifest.from_json(value, str(folder))
    except UserError as exc:
        raise UserError(f"{exc} ({hint})") from None
    for file_name, expected in manifest.files.items():
        path = source / file_name
        if not path.is_file():
            raise UserError(f"{path}: missing; rebuild the index ({hint})")
        if path.stat().st_size != expected["bytes"]:
            raise UserError(
                f"{path}: {path.stat().st_size} bytes, the manifest says {expected['bytes']} "
                f"(truncated?); rebuild the index ({hint})"
            )
    return source, manifest, hint


def read_manifest(folder: str | Path) -> Manifest:
    """The current generation's manifest, checked for format and file sizes (a UserError if not)."""
    return _source(Path(folder))[1]


def verify(folder: str | Path) -> Manifest:
    """Check every file of the current generation against the SHA-256 in its manifest (a
    UserError names the first that differs); returns the manifest."""
    source, manifest, hint = _source(Path(folder))
    for file_name, expected in manifest.files.items():
        if file_digest(source / file_name) != expected["sha256"]:
            raise UserError(
                f"{source / file_name}: checksum does not match the manifest (corrupted); rebuild the index ({hint})"
            )
    return manifest


def read_generation(folder: str | Path, mapped: bool = True) -> Generation:
    """Read the current generation, checking format, sizes and shapes (not checksums: see
    :func:`verify`). ``mapped``: vectors, papers, keyword matrix and FAISS vectors memory-mapped,
    the FAISS index read-only; else the FAISS index is read whole, so that papers can be added."""
    import faiss

    source, manifest, hint = _source(Path(folder))
    try:
        faiss_index = faiss.read_index(str(source / FAISS_FILE), faiss.IO_FLAG_MMAP_IFC if mapped else 0)
        if VECTORS_FILE in manifest.files:
            vectors = mapped_array(source / VECTORS_FILE)
        elif (vectors := flat_vectors(faiss_index, writeable=not mapped)) is None:
            raise ValueError(f"{VECTORS_FILE} missing and the FAISS index holds no flat vectors")
        papers = _map_papers(source / PAPERS_FILE)
        clusters = _read_table(source / CLUSTERS_FILE)
        keyword = read_keyword(source)
        smoothed: RowVectors | None = None
        if SMOOTHED_FILE in manifest.files:
            smoothed = mapped_array(source / SMOOTHED_FILE)
        elif NEIGHBOURS_FILE in manifest.files and manifest.settings.smoothing is not None:
            neighbours = mapped_array(source / NEIGHBOURS_FILE)
            smoothed = SmoothedVectors(vectors, neighbours, manifest.settings.smoothing.weight)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:  # faiss raises RuntimeError
        raise UserError(
            f"{source}: unreadable ({str(exc).splitlines()[0][:120]}); rebuild the index ({hint})"
        ) from None
    expected_shape = (manifest.count, manifest.dimension)
    if (
        vectors.shape != expected_shape
        or faiss_index.ntotal != manifest.count
        or papers.num_rows != manifest.count
        or keyword.rows.shape[0] != manifest.count
        or (smoothed is not None and smoothed.shape != expected_shape)
    ):
        raise UserError(
            f"{source}: vectors {vectors.shape}, FAISS {faiss_index.ntotal} rows and "
            f"{papers.num_rows} papers disagree with the manifest {expected_shape}; rebuild the index ({hint})"
        )
    if isinstance(smoothed, SmoothedVectors) and not _within(smoothed.neighbours, manifest.count):
        raise UserError(f"{source / NEIGHBOURS_FILE}: names papers the index lacks; rebuild the index ({hint})")
    return Generation(manifest, vectors, faiss_index, papers, clusters, keyword, smoothed, name=source.name)


def _within(neighbours: np.ndarray, count: int) -> bool:
    """Whether ``neighbours`` has a row for each of ``count`` papers, each naming rows below ``count``."""
    return len(neighbours) == count and (neighbours.size == 0 or int(neighbours.max()) < count)
