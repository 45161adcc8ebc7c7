"""Maps of one index kept side by side: the build's own ("build") and those a remap made, one current.

A remap (:mod:`paperscope.index.build.remap`) re-cuts and re-names the topics of the current
generation from its stored vectors and layout; what it finds is kept beside the generations, never
inside one::

    DIR/maps/CURRENT                 the current map's name (no file: "build", the generation's own)
    DIR/maps/NAME/map.json           {"format": "paperscope-map", "version": 1, "name", "generation",
                                      "created", "topics", "clusters", "made": {how}}
    DIR/maps/NAME/papers.parquet     per paper, in the generation's order: cluster, cluster_name,
                                     coarse_cluster, coarse_name, outlying
    DIR/maps/NAME/clusters.parquet   the topics of both levels (as a generation's clusters.parquet)
    DIR/maps/.KIND-GENERATION.npz    what the next remap of the generation need not find again: the
                                     candidate names' vectors, the candidate terms of the texts
                                     (written by the build too; carried over by ``add``:
                                     :mod:`paperscope.index.topics.remap_cache`)
    DIR/.maps.lock                   held while a map is written, switched or deleted

A map is written into a temporary folder and renamed into place, and only then is ``CURRENT``
replaced (atomically): a failed or killed remap leaves the current map as it was. A map belongs to
the generation it was made from; after a rebuild or ``paperscope add`` it is listed as stale and
never used (the generation's own map is), until remapped again. The x, y, map trust and the
placed flag of every paper are the generation's whatever the map. Curations
(:mod:`.curations`) are applied to the current map on load, by membership, as to the build's.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from paperscope.errors import Contradiction, NotFound, UserError, write_error
from paperscope.files import TEMPORARY_PREFIX, atomic_path
from paperscope.locations import index_option

if TYPE_CHECKING:  # a remap's map columns are read into a DataFrame; a lookup on the build's map loads no pandas
    import pandas as pd
    import pyarrow as pa

BUILD = "build"  # the generation's own map: always there, never deleted
MAPS_DIR, POINTER_FILE, INFO_FILE = "maps", "CURRENT", "map.json"
PAPERS_FILE, CLUSTERS_FILE, LOCK_FILE = "papers.parquet", "clusters.parquet", ".maps.lock"
FORMAT_NAME, FORMAT_VERSION = "paperscope-map", 1
MAP_PAPER_COLUMNS = ("cluster", "cluster_name", "coarse_cluster", "coarse_name", "outlying")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Chosen:
    """The current map as loaded: its name, its per-paper columns and topics (None for "build"),
    and a sentence when the pointer names a map that cannot be used (then the build's is)."""

    name: str
    papers: pd.DataFrame | None = None
    clusters: pa.Table | None = None  # both levels' topics, as a generation's clusters
    note: str = ""


def maps_dir(folder: str | Path) -> Path:
    """Where the maps of the index in ``folder`` are kept."""
    return Path(folder) / MAPS_DIR


def check_name(name) -> str:
    """A map's name: letters, digits, '.', '_' or '-', at most 64, starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name == POINTER_FILE:
        raise UserError(f"map name {name!r}: use letters, digits, '.', '_' or '-' (at most 64), like topics-8")
    return name


def current_name(folder: str | Path) -> str:
    """The name of the map ``CURRENT`` points at ("build" without a pointer)."""
    try:
        return (maps_dir(folder) / POINTER_FILE).read_text(encoding="utf-8").strip() or BUILD
    except FileNotFoundError:
        return BUILD


def stamp(folder: str | Path) -> str:
    """A text that changes when the current map does (switched, or remade under its name)."""
    parts = []
    for path in (maps_dir(folder) / POINTER_FILE, maps_dir(folder) / current_name(folder) / INFO_FILE):
        try:
            status = path.stat()
        except OSError:
            parts.append("")
            continue
        parts.append(f"{status.st_mtime_ns}-{status.st_size}-{status.st_ino}")
    return "/".join(parts) if any(parts) else ""


def _info(folder: Path, name: str) -> dict | None:
    try:
        info = json.loads((maps_dir(folder) / name / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("format") == FORMAT_NAME else None


def names(folder: str | Path) -> list[str]:
    """The names of the maps a remap wrote (readable ones), in the order they were made."""
    found = []
    root = maps_dir(folder)
    if root.is_dir():
        for path in root.iterdir():
            if path.is_dir() and _NAME.fullmatch(path.name) and (info := _info(Path(folder), path.name)):
                found.append((info.get("created", ""), path.name))
    return [name for _, name in sorted(found)]


class BuildMap(TypedDict):
    """The build's own map, as :func:`listing` lists it: its topics (coarse), clusters (fine) and
    when it was made."""

    topics: int
    clusters: int
    created: str


class MapRow(TypedDict):
    """A map of :func:`listing`: its name, counts and creation (None where its info does not say),
    whether it is the current one and whether it is stale (made from another generation)."""

    name: str
    topics: int | None
    clusters: int | None
    created: str | None
    current: bool
    stale: bool


def listing(folder: str | Path, generation: str, build: BuildMap) -> list[MapRow]:
    """Every map: name, topics, clusters, created, current, stale (made from another generation).
    ``build``: the build's own map's topics, clusters and created."""
    folder, current = Path(folder), current_name(folder)
    usable = current if current == BUILD or _usable(folder, current, generation) else BUILD
    rows: list[MapRow] = [{"name": BUILD, **build, "current": usable == BUILD, "stale": False}]
    for name in names(folder):
        info = _info(folder, name) or {}  # (listed as readable; one may break since)
        rows.append(
            {"name": name, "topics": info.get("topics"), "clusters": info.get("clusters"),
             "created": info.get("created"), "current": name == usable, "stale": info.get("generation") != generation}
        )  # fmt: skip
    return rows


def _usable(folder: Path, name: str, generation: str) -> bool:
    info = _info(folder, name)
    return info is not None and info.get("generation") == generation


def read_current(folder: str | Path, generation: str, count: int) -> Chosen:
    """The current map of the generation ``generation`` (of ``count`` papers): the build's when
    ``CURRENT`` names none, or one that is missing, unreadable or of another generation (``note``)."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    name = current_name(folder)
    if name == BUILD:
        return Chosen(BUILD)
    info = _info(folder, name)
    if info is None:
        return Chosen(BUILD, note=f"map '{name}' is missing or unreadable; the build's map is shown")
    if info.get("generation") != generation:
        return Chosen(BUILD, note=f"map '{name}' was made before the index was rebuilt or added to; remap it")
    try:
        papers = pq.read_table(maps_dir(folder) / name / PAPERS_FILE).to_pandas()
        clusters = pq.ParquetFile(maps_dir(folder) / name / CLUSTERS_FILE).read()  # as a generation's
    except (OSError, ValueError) as exc:
        return Chosen(BUILD, note=f"map '{name}' is unreadable ({str(exc)[:80]}); the build's map is shown")
    if len(papers) != count or list(papers.columns) != list(MAP_PAPER_COLUMNS):
        return Chosen(BUILD, note=f"map '{name}' does not fit the index's {count} papers; the build's map is shown")
    return Chosen(name, papers, clusters)


@contextmanager
def locked(folder: str | Path):
    """Hold the maps' lock (one writer at a time); a folder we cannot write to is a UserError."""
    from filelock import FileLock, Timeout

    folder = Path(folder)
    try:
        with FileLock(folder / LOCK_FILE, timeout=60):
            yield
    except Timeout:
        raise UserError(f"{folder}: another process is writing a map; try again") from None
    except OSError as exc:
        raise write_error(exc, folder) or exc from None


def write_map(folder: str | Path, name: str, generation: str, made, on_stage=None) -> None:
    """Write the map ``made`` ((per-paper DataFrame, topics DataFrame, how it was made: dict)) as
    ``name`` of ``generation`` and make it current (call under :func:`locked`); ``on_stage("commit")``
    is called once its files are in place and before ``CURRENT`` points at it. A map of the same
    name is replaced."""
    papers, clusters, how = made
    root, target = maps_dir(folder), maps_dir(folder) / name
    root.mkdir(exist_ok=True)
    info = {
        "format": FORMAT_NAME, "version": FORMAT_VERSION, "name": name, "generation": generation,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "topics": int((clusters["level"] == "coarse").sum()), "clusters": int((clusters["level"] == "fine").sum()),
        "made": how,
    }  # fmt: skip
    staged = root / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-{name}"
    with atomic_path(staged) as temporary:
        temporary.mkdir()
        papers[list(MAP_PAPER_COLUMNS)].reset_index(drop=True).to_parquet(temporary / PAPERS_FILE, index=False)
        clusters.reset_index(drop=True).to_parquet(temporary / CLUSTERS_FILE, index=False)
        (temporary / INFO_FILE).write_text(json.dumps(info, indent=1, default=str), encoding="utf-8")
    if target.exists():  # a remap under a name in use: the old one goes once the new one is ready
        old = root / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-old-{name}"
        os.replace(target, old)
        os.replace(staged, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staged, target)
    if on_stage:
        on_stage("commit")
    _point(folder, name)


def _point(folder: str | Path, name: str) -> None:
    with atomic_path(maps_dir(folder) / POINTER_FILE) as temporary:
        temporary.write_text(name + "\n", encoding="utf-8")


def use(folder: str | Path, name: str, generation: str) -> None:
    """Make ``name`` the current map (NotFound for an unknown one, Contradiction for a stale one)."""
    if name != BUILD:
        info = _info(Path(folder), check_name(name))
        if info is None:
            known = ", ".join([BUILD, *names(folder)])
            raise NotFound(f"no map named '{name}'; the maps are: {known}")
        if info.get("generation") != generation:
            raise Contradiction(f"map '{name}' was made before the index was rebuilt or added to; remap it")
    with locked(folder):
        _point(folder, name)


def delete(folder: str | Path, name: str) -> None:
    """Delete the map ``name``: never "build", nor the current one (a UserError)."""
    if name == BUILD:
        raise UserError("the build's map cannot be deleted")
    if _info(Path(folder), check_name(name)) is None:
        raise NotFound(f"no map named '{name}'; the maps are: {', '.join([BUILD, *names(folder)])}")
    with locked(folder):
        if current_name(folder) == name:
            raise UserError(
                f"map '{name}' is the current one; switch first: paperscope maps use {BUILD}{index_option(folder)}"
            )
        old = maps_dir(folder) / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex[:8]}-old-{name}"
        os.replace(maps_dir(folder) / name, old)
        shutil.rmtree(old, ignore_errors=True)


def read_cache(folder: str | Path, generation: str, kind: str) -> dict[str, np.ndarray]:
    """The arrays a remap of ``generation`` kept under ``kind`` ({} when none or unreadable)."""
    path = maps_dir(folder) / f".{kind}-{generation}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {key: stored[key] for key in stored.files}
    except (OSError, ValueError, KeyError):
        return {}


def write_cache(folder: str | Path, generation: str, kind: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep ``arrays`` (no objects: read back without pickle) under ``kind`` for the next remap of
    ``generation``; what was kept for another generation goes. A cache, never needed: an error
    writing it is ignored."""
    root = maps_dir(folder)
    try:
        root.mkdir(exist_ok=True)
        for path in root.glob(f".{kind}-*.npz"):
            if path.name != f".{kind}-{generation}.npz":
                path.unlink(missing_ok=True)
        with atomic_path(root / f".{kind}-{generation}.npz") as temporary, open(temporary, "wb") as handle:
            np.savez(handle, **arrays)  # type: ignore[arg-type]  # numpy's stubs take the names for its keywords
    except OSError:
        pass


def carry_caches(folder: str | Path, generation: str, to: str) -> None:
    """What remaps of ``generation`` kept, kept for ``to`` instead: a generation whose papers are
    those of ``generation``, text for text and in its order, and more, none laid out (``add``'s).
    A cache, never needed: an error is ignored."""
    suffix = f"-{generation}.npz"
    try:
        for path in maps_dir(folder).glob(f".*{suffix}"):
            os.replace(path, path.with_name(f"{path.name.removesuffix(suffix)}-{to}.npz"))
    except OSError:
        pass


def with_map(papers, chosen: pd.DataFrame):
    """The papers' Arrow table with the map columns of ``chosen`` (a map's per-paper columns)."""
    import pyarrow as pa

    for column in MAP_PAPER_COLUMNS:
        values = pa.array(chosen[column].to_numpy(), type=papers.schema.field(column).type)
        papers = papers.set_column(papers.schema.get_field_index(column), column, values)
    return papers
