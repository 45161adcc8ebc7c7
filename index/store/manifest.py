"""The manifest of an index generation (``manifest.json``), typed: the one place that knows its keys.

A build makes a :class:`Manifest` (``index/build/pipeline.py``), ``paperscope add`` grows one
(:meth:`Manifest.grown`), :mod:`.generations` writes it as JSON (:meth:`Manifest.to_json`, with
the files' checksums) and reads it back (:meth:`Manifest.from_json`). Every other module reads its
fields as attributes; none indexes the JSON by string.

Format 6 manifests of every release read (``tests/files/indexes``: folders written by the first
release of format 6, 50675d1, by 6dfb043 and by ff7c3d5): what an earlier release did not write
takes the value that release behaved by (no ``preset``: "exact"; no ``search_weight``: the hybrid
weight; no ``settings``: the defaults, smoothing from the search section; no ``settings.topics``:
the topic settings' defaults, which every build used before they were kept; no ``adopt_similarity``:
no adoption after ``add``; no ``origins``: none followed). The map's sections (layout, clusters,
map trust) are kept as the topic stages describe them, for ``paperscope info``; the fields code
reads are typed properties.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from paperscope.errors import UserError
from paperscope.settings import DEFAULT_MODES, BuildSettings, Smoothing, SourceQuery

FORMAT_NAME = "paperscope-index"
FORMAT_VERSION = 6  # 2: keyword index; 3: its stop words; 4: terms from index.terms; 5: coarse topics;
# 6: memory-mapped papers (Arrow IPC) and keyword matrix (.npy by paper and by term)


class Fidelity(TypedDict):
    """An int8 build's fidelity to fp32, measured on a sample of ``sample`` texts: their vectors'
    cosine (mean, min) and the overlap of each one's 10 nearest neighbours within the sample."""

    sample: int
    cosine_mean: float
    cosine_min: float
    top10_overlap: float


@dataclass(frozen=True)
class ModelInfo:
    """The model the papers were embedded with: queries and added papers must use the same."""

    name: str
    path: str
    fingerprint: str
    max_tokens: int
    backend: str = "onnx"
    quantize: str | None = None
    window: int | None = None
    int8_fidelity: Fidelity | None = None  # an int8 build's cosine and top-10 overlap with fp32


@dataclass(frozen=True)
class PresetInfo:
    """The preset the build took, and why ("chosen by size" or "asked")."""

    name: str = "exact"
    how: str = "before presets: exact"
    quantize: str | None = None
    long_text: str = "mean"
    window: int | None = None


@dataclass(frozen=True)
class LongTextInfo:
    """How texts over the model's length were embedded, and how many there were."""

    strategy: str
    long_texts: int
    max_tokens: int


@dataclass(frozen=True)
class CorpusInfo:
    """Where the papers came from: file names, what was skipped, and each ``add``."""

    fingerprint: str
    sources: tuple[str, ...]
    skipped: int = 0
    duplicate_ids: int = 0
    duplicate_abstracts: int = 0
    added: tuple[Mapping[str, Any], ...] = ()  # {at, sources, papers} for each `paperscope add`


@dataclass(frozen=True)
class Origin:
    """A source the index follows (``paperscope update``): the query a fetched file was made by,
    its watermark (the newest date the source reported: what the next update asks from), when it
    was fetched, and the file's name."""

    query: SourceQuery
    watermark: str | None
    fetched_at: str
    file: str

    def describe(self) -> str:
        """One line a person reads: "arxiv category=cs.LG, up to 2026-12-04"."""
        return f"{self.query.describe()}, up to {(self.watermark or 'the start')[:10]}"

    def to_json(self) -> dict:
        """As the manifest keeps it."""
        return {"query": self.query.to_json(), "watermark": self.watermark, "fetched_at": self.fetched_at,
                "file": self.file}  # fmt: skip

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Origin:
        """Read back what :meth:`to_json` wrote."""
        return cls(SourceQuery.from_json(value["query"]), value.get("watermark"), value["fetched_at"], value["file"])


@dataclass(frozen=True)
class SearchInfo:
    """The search side: the FAISS index and its measured quality, keyword index, smoothing, modes."""

    faiss: str
    recall_at_10: float
    metric: str = "cosine (inner product of normalised vectors)"
    keyword: Mapping[str, Any] = field(default_factory=dict)
    smoothing: Smoothing | None = None  # None: no smoothed vectors
    similar_mode: str = DEFAULT_MODES["similar_mode"]
    search_mode: str = DEFAULT_MODES["search_mode"]
    hybrid_weight: float = DEFAULT_MODES["hybrid_weight"]
    search_weight: float | None = None  # None (before it was kept): the hybrid weight
    ef_search: int | None = None  # HNSW only: the efSearch tuned to the recall target

    @property
    def text_weight(self) -> float:
        """The dense side's weight of a hybrid text search."""
        return self.hybrid_weight if self.search_weight is None else self.search_weight


@dataclass(frozen=True)
class MapInfo:
    """The topic map's sections as the topic stages describe them (shown by ``paperscope info``)."""

    layout: Mapping[str, Any]
    clusters: Mapping[str, Any]
    map_trust: Mapping[str, Any]

    @property
    def method(self) -> str:
        """How the map was laid out ("umap", or "pca" for a handful of papers)."""
        return self.layout.get("method", "")

    @property
    def placed_share(self) -> float:
        """The share of papers placed on the map by their neighbours (``add``) rather than laid out."""
        return float(self.layout.get("placed_share", 0.0))

    @property
    def adopt_similarity(self) -> float | None:
        """The similarity the build asked of the papers it drew into a topic (None: none adopted)."""
        return self.clusters.get("adopt_similarity")

    @property
    def cluster_count(self) -> int:
        """How many fine topics the build found."""
        return int(self.clusters.get("count", 0))

    @property
    def unclustered(self) -> int:
        """How many papers are in no topic."""
        return int(self.clusters.get("unclustered", 0))

    @property
    def trust(self) -> float:
        """The map's mean trust (neighbours kept from the vectors to the map)."""
        return float(self.map_trust.get("mean", 0.0))


@dataclass(frozen=True)
class Manifest:
    """One generation's manifest: counts, model, settings, recipe, corpus, search, map, versions,
    build times and (as read back) the files' sizes and checksums."""

    created: str
    count: int
    dimension: int
    model: ModelInfo
    long_text: LongTextInfo
    corpus: CorpusInfo
    search: SearchInfo
    map: MapInfo
    settings: BuildSettings = field(default_factory=BuildSettings)
    preset: PresetInfo = field(default_factory=PresetInfo)
    engine: Mapping[str, Any] = field(default_factory=lambda: {"name": "local"})
    text_recipe: str = ""
    versions: Mapping[str, str] = field(default_factory=dict)
    build_seconds: Mapping[str, float] = field(default_factory=dict)
    files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name → {bytes, sha256}
    origins: tuple[Origin, ...] = ()  # the sources the index follows (none: built from plain files, or before)
    format_version: int = FORMAT_VERSION

    @property
    def created_at(self) -> datetime.datetime:
        """When the build ran, as a time."""
        return datetime.datetime.fromisoformat(self.created)

    def grown(
        self,
        count: int,
        placed: int,
        sources: list[str],
        added: int,
        *,
        replaced: int = 0,
        marked: int = 0,
        origins: tuple[Origin, ...] | None = None,
    ) -> Manifest:
        """This manifest for a generation grown by ``add`` to ``count`` papers (``added`` from
        ``sources``, ``replaced`` texts of papers it held, ``marked`` papers withdrawn, deleted or retracted),
        ``placed`` of them placed on the map by their neighbours, following ``origins`` (None: the
        same; given by an update, whose fetched files are gone once added: they are not kept among
        the corpus's sources, which a rebuild reads); files not yet known."""
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        entry = {"at": now, "sources": list(sources), "papers": added, "replaced": replaced, "marked": marked}
        kept = self.corpus.sources if origins is not None else (*self.corpus.sources, *sources)
        corpus = dataclasses.replace(self.corpus, sources=kept, added=(*self.corpus.added, entry))
        layout = {**self.map.layout, "placed": placed, "placed_share": placed / count}
        return dataclasses.replace(
            self,
            count=count,
            corpus=corpus,
            map=dataclasses.replace(self.map, layout=layout),
            files={},
            origins=self.origins if origins is None else origins,
        )

    def to_json(self) -> dict:
        """The manifest as ``manifest.json`` holds it."""
        value = {"format": FORMAT_NAME, **dataclasses.asdict(self)}
        value["settings"] = self.settings.to_manifest()
        value["origins"] = [origin.to_json() for origin in self.origins]
        if value["model"]["int8_fidelity"] is None:
            del value["model"]["int8_fidelity"]
        return value

    @classmethod
    def from_json(cls, value: Mapping[str, Any], where: str) -> Manifest:
        """The manifest read from ``manifest.json`` of any release of format 6; another format or a
        missing section is a UserError naming ``where``."""
        if value.get("format") != FORMAT_NAME or value.get("format_version") != FORMAT_VERSION:
            raise UserError(
                f"{where}: index format {value.get('format_version')!r}, this paperscope reads {FORMAT_VERSION}; "
                "rebuild the index"
            )
        try:
            search = {name: item for name, item in value["search"].items() if name in _SEARCH_FIELDS}
            search["smoothing"] = Smoothing(**search["smoothing"]) if search.get("smoothing") else None
            corpus = dict(value["corpus"])
            corpus["sources"], corpus["added"] = tuple(corpus["sources"]), tuple(corpus.get("added", ()))
            section = value["map"]
            return cls(
                created=value["created"],
                count=value["count"],
                dimension=value["dimension"],
                model=ModelInfo(**value["model"]),
                long_text=LongTextInfo(**value["long_text"]),
                corpus=CorpusInfo(**corpus),
                search=SearchInfo(**search),
                map=MapInfo(section["layout"], section["clusters"], section["map_trust"]),
                settings=BuildSettings.from_manifest(value),
                preset=PresetInfo(**value["preset"]) if value.get("preset") else PresetInfo(),
                engine=value.get("engine") or {"name": "local"},
                text_recipe=value.get("text_recipe", ""),
                versions=value.get("versions", {}),
                build_seconds=value.get("build_seconds", {}),
                files=value.get("files", {}),
                origins=tuple(Origin.from_json(origin) for origin in value.get("origins", ())),
                format_version=value["format_version"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"{where}: the manifest lacks or mistypes {exc}; rebuild the index") from None


_SEARCH_FIELDS = {item.name for item in dataclasses.fields(SearchInfo)}
