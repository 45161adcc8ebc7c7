"""The choices a user makes, as typed values with their defaults, checked in one place.

The build, the readers, the command line, the app and the service share these; importing this
module costs nothing (no numpy, pandas or scipy), so ``paperscope --help`` stays instant.

- :class:`BuildSettings`: how an index is built (preset, long texts, quantization, smoothing,
  FAISS factory, engine …); written into the manifest (``settings``) and read back by ``add`` and
  ``info``.
- :class:`TopicSettings`: how the topic map is made (layout, clusters, names), part of
  ``BuildSettings`` (``topics``); its defaults are measured (docs/topic-map.md).
- :class:`QuerySettings`: how a lookup ranks (mode, hybrid weight, feedback, candidate count).

A choice among names is a ``Literal``; a wrong one is a :class:`~paperscope.errors.UserError`
naming the choices, raised when the value is made. The fixed limits and measured thresholds
that are no user's choice (the most results a lookup gives, the corpus files' bounds, the
servers' defaults) are in :mod:`paperscope.limits`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict, get_args

from paperscope.errors import UserError, shown
from paperscope.limits import AUTO_BALANCED_PAPERS, AUTO_FAST_PAPERS, RATE_LIMIT_PER_MINUTE, UPLOADS_PER_HOUR

Mode = Literal["dense", "keyword", "hybrid"]
Level = Literal["coarse", "fine"]  # topic levels: coarse topics merge fine clusters
LongText = Literal["mean", "truncate"]  # texts over the model's window: windows averaged, or the first
Quantize = Literal["int8"]
Engine = Literal["local", "ray"]
PresetName = Literal["exact", "balanced", "fast"]
Selection = Literal["leaf", "eom"]  # HDBSCAN's cluster selection: the leaves of its tree, or excess of mass

MODES: tuple[str, ...] = get_args(Mode)
LEVELS: tuple[str, ...] = get_args(Level)
LONG_TEXT_STRATEGIES: tuple[str, ...] = get_args(LongText)
QUANTIZE_CHOICES: tuple[str, ...] = get_args(Quantize)
ENGINES: tuple[str, ...] = get_args(Engine)
SELECTIONS: tuple[str, ...] = get_args(Selection)

UNCLUSTERED_NAME = "unclustered"  # the topic name of papers in no cluster
UNCLUSTERED = -1  # the cluster number of papers in no cluster
MAP_COLUMNS = ("title", "x", "y", "cluster", "coarse_cluster", "map_trust")  # what the map draws of each paper


# Rankings written into each manifest (measured: docs/quality.md); search_weight: the hybrid
# weight of text queries, apart from that of papers.
class Modes(TypedDict):
    """The ranking modes an index is built with (the manifest's ``search`` section keeps them)."""

    similar_mode: str
    search_mode: str
    hybrid_weight: float
    search_weight: float


DEFAULT_MODES: Modes = {"similar_mode": "hybrid", "search_mode": "hybrid", "hybrid_weight": 0.7, "search_weight": 0.8}


def check_choice(value, choices: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``choices``, else a UserError naming the choices."""
    if value not in choices:
        raise UserError(f"unknown {what} '{shown(value)}'; choose one of {', '.join(choices)}")
    return value


@dataclass(frozen=True)
class Preset:
    """How texts are embedded: the model's precision, long texts, and the word pieces read."""

    quantize: Quantize | None
    long_text: LongText
    window: int | None  # word pieces read of each text (None: the model's whole window)


# "exact": fp32, windows over the whole text averaged; "balanced": int8 model on the model's whole
# window (254 word pieces: most of an abstract); "fast": int8 on the first 126 (title and first
# sentences). Their speed and quality: docs/benchmarks.md, "Build presets".
PRESETS = {
    "exact": Preset(None, "mean", None),
    "balanced": Preset("int8", "truncate", None),
    "fast": Preset("int8", "truncate", 126),
}


@dataclass(frozen=True)
class Smoothing:
    """Neighbour-smoothed document vectors for hybrid ranking (paperscope.index.build.smoothing):
    each paper plus ``weight`` x the mean of its ``k`` nearest (measured: docs/quality.md)."""

    k: int = 3
    weight: float = 0.5

    def __post_init__(self):
        if not isinstance(self.k, int) or self.k < 1 or not 0 < self.weight <= 10:
            raise UserError(f"smoothing needs K of at least 1 and W in (0, 10], got {self.k}:{self.weight}")


@dataclass(frozen=True)
class Fields:
    """Column names overriding the readers' guesses (None: guessed)."""

    id: str | None = None
    title: str | None = None
    abstract: str | None = None

    def overrides(self) -> dict[str, str | None]:
        """As the readers take them: {"id": …, "title": …, "abstract": …}."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SeedTopic:
    """A topic the researcher names before the build: papers close enough to it form it."""

    name: str
    description: str = ""

    def text(self) -> str:
        """What is embedded to compare papers with: the name, and the description after it."""
        return f"{self.name}. {self.description}" if self.description else self.name


# A paper joins a seed when it uses its words and its similarity is SEED_SPREAD standard deviations
# above that seed's mean over the corpus, SEED_SIMILARITY being only a floor (measured: docs/benchmarks.md).
SEED_SIMILARITY = 0.3
SEED_SPREAD = 2.25


@dataclass(frozen=True)
class TopicSeeds:
    """Seed topics of a build (``paperscope build --topics-from FILE``): a paper joins its seed
    (the one it is most unusually close to) when it uses the seed's words, its cosine similarity
    is at least ``similarity`` and at least ``spread`` standard deviations above the seed's mean
    similarity over the corpus; the rest are clustered."""

    topics: tuple[SeedTopic, ...] = ()
    similarity: float = SEED_SIMILARITY
    source: str = ""  # the file they were read from, for the manifest and messages
    spread: float = SEED_SPREAD

    def __post_init__(self):
        if not 0 < self.similarity < 1:
            raise UserError(f"--seed-similarity must be in (0, 1), got {self.similarity}")
        if not 0 <= self.spread <= 10:
            raise UserError(f"the seed spread must be in [0, 10] standard deviations, got {self.spread}")


def _whole(section: str, name: str, value, least: int) -> None:
    """A UserError naming the topic setting ``section.name`` unless ``value`` is a whole number >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        what = f"a whole number of at least {least}"
        raise UserError(f"topic setting {section}.{name} must be {what}, got {shown(value)}")


def _number(section: str, name: str, value, low: float, high: float | None = None) -> None:
    """A UserError naming the topic setting ``section.name`` unless ``value`` is a number in
    [``low``, ``high``] (``high`` None: above ``low``, ``low`` excluded)."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if high is None and not (number and value > low):
        raise UserError(f"topic setting {section}.{name} must be a number above {low}, got {shown(value)}")
    if high is not None and not (number and low <= value <= high):
        raise UserError(f"topic setting {section}.{name} must be a number in [{low}, {high}], got {shown(value)}")


@dataclass(frozen=True)
class LayoutSettings:
    """The map's 2-D layout (paperscope.index.topics.layout): UMAP fed the exact cosine neighbour
    graph from FAISS (the metric is the graph's: cosine). ``n_neighbors`` (at most N - 1),
    ``min_dist`` and ``seed`` are UMAP's; ``knn``: the neighbours found of each paper, itself
    included (at least ``n_neighbors``; raised to 11 for map trust), shared with the clusters'
    UMAP; ``sample``: above this many papers, layout, clusters and names are fitted on a random
    sample this big and the other papers placed by their nearest sampled papers."""

    n_neighbors: int = 15
    min_dist: float = 0.1
    seed: int = 42
    knn: int = 16
    sample: int = 50_000

    def __post_init__(self):
        _whole("layout", "n_neighbors", self.n_neighbors, 2)
        _number("layout", "min_dist", self.min_dist, 0, 1)
        _whole("layout", "seed", self.seed, 0)
        _whole("layout", "knn", self.knn, self.n_neighbors)
        _whole("layout", "sample", self.sample, 2)


@dataclass(frozen=True)
class ClusterSettings:
    """Fine clusters and coarse topics (paperscope.index.topics.clusters, .seeds). HDBSCAN
    (``selection``, ``min_samples``; min_cluster_size = max(``min_size_floor``, round(sqrt(N) /
    ``min_size_divisor``))) on a ``space_dims``-D UMAP (``space_min_dist``) of corpora of
    ``space_from`` papers or more (smaller ones: on the embeddings); no clusters below
    ``min_papers``. A paper HDBSCAN leaves out joins the topic whose centroid is nearest when as
    similar to it as all but the ``adopt_quantile`` least typical members are to theirs. A cluster
    of ``split_papers`` or more that no name covers is split in two, ``split_rounds`` times at most,
    and a piece of the split that no name covers is left grey; the coarse cut keeps at most
    ``max_coarse`` topics; a cluster whose papers use a seed topic's name in ``claim_coverage`` of
    them joins the seed."""

    min_papers: int = 6
    min_size_floor: int = 3
    min_size_divisor: float = 1.5
    min_samples: int = 1
    selection: Selection = "leaf"
    space_dims: int = 5
    space_min_dist: float = 0.0
    space_from: int = 20
    adopt_quantile: float = 0.05
    split_papers: int = 30
    split_rounds: int = 3
    max_coarse: int = 12
    claim_coverage: float = 0.5

    def __post_init__(self):
        for name, least in (("min_papers", 2), ("min_size_floor", 2), ("min_samples", 1), ("space_dims", 2)):
            _whole("clusters", name, getattr(self, name), least)
        for name, least in (("space_from", 0), ("split_papers", 2), ("split_rounds", 0), ("max_coarse", 2)):
            _whole("clusters", name, getattr(self, name), least)
        _number("clusters", "min_size_divisor", self.min_size_divisor, 0)
        check_choice(self.selection, SELECTIONS, "topic setting clusters.selection")
        for name in ("space_min_dist", "adopt_quantile", "claim_coverage"):
            _number("clusters", name, getattr(self, name), 0, 1)


@dataclass(frozen=True)
class NamingSettings:
    """Topic names (paperscope.index.topics.naming, .coverage). Candidates are phrases of up to
    ``max_words`` words; of the ``pool`` a topic's papers use most, a phrase gives way to a longer
    one that ``whole_phrase_share`` of its papers use, and is a fragment when the texts (up to
    ``context_texts`` of the topic's) continue it with another word more than ``continued_share``
    of the time. A name's terms have lift >= ``min_lift``; up to ``max_terms`` are picked, phrases
    weighted ``phrase_weight`` over single words, and the name holds the first that cover
    ``name_coverage`` of the topic's papers. A topic is nameable, and fine clusters merge into one
    coarse topic, when two terms cover ``coherent_coverage`` of the papers (and, to merge,
    ``part_coverage`` of each cluster's)."""

    max_words: int = 4
    pool: int = 150
    context_texts: int = 200
    whole_phrase_share: float = 0.7
    continued_share: float = 0.5
    min_lift: float = 2.0
    max_terms: int = 3
    phrase_weight: float = 1.3
    name_coverage: float = 0.5
    coherent_coverage: float = 0.4
    part_coverage: float = 0.2

    def __post_init__(self):
        for name, least in (("max_words", 1), ("pool", 1), ("context_texts", 1), ("max_terms", 1)):
            _whole("names", name, getattr(self, name), least)
        for name in ("whole_phrase_share", "continued_share", "name_coverage", "coherent_coverage", "part_coverage"):
            _number("names", name, getattr(self, name), 0, 1)
        _number("names", "min_lift", self.min_lift, 0)
        _number("names", "phrase_weight", self.phrase_weight, 0)


@dataclass(frozen=True)
class TopicSettings:
    """How the topic map is made: its ``layout``, its ``clusters`` at two levels and their
    ``names``. The defaults are what every build used before the settings were kept (an index
    whose manifest records none was made with them), so that the same corpus gives the same map."""

    layout: LayoutSettings = field(default_factory=LayoutSettings)
    clusters: ClusterSettings = field(default_factory=ClusterSettings)
    names: NamingSettings = field(default_factory=NamingSettings)

    def to_manifest(self) -> dict:
        """The settings as the manifest keeps them ({section: {name: value}})."""
        return dataclasses.asdict(self)

    @classmethod
    def from_manifest(cls, stored: Mapping | None) -> TopicSettings:
        """The settings ``to_manifest`` wrote (None, or a section or name missing: the defaults,
        as an index built before they were kept was made); a bad value is a UserError naming it."""
        stored = stored or {}
        made = {}
        defaults = cls()
        for section in dataclasses.fields(defaults):
            kind = type(getattr(defaults, section.name))
            names = {item.name for item in dataclasses.fields(kind)}
            made[section.name] = kind(**{k: v for k, v in (stored.get(section.name) or {}).items() if k in names})
        return cls(**made)


@dataclass(frozen=True)
class BuildSettings:
    """How an index is built. ``preset`` ("exact", "balanced" or "fast"; None: by size, "balanced" from
    ``AUTO_BALANCED_PAPERS`` papers, "fast" from ``AUTO_FAST_PAPERS``) or, instead, ``long_text`` and
    ``quantize``; ``smoothing`` (None: none);
    ``faiss_factory`` overrides the automatic FAISS choice (paperscope.index.build.ann);
    ``engine`` "ray" reads and embeds on Ray Data, with ``workers`` CPUs or on the cluster at
    ``address``; ``model_path`` a local sentence-transformers folder (None: the bundled MiniLM);
    ``use_cache`` reuses vectors of texts embedded before; ``seeds``: topics named in advance
    (None: those of the index being rebuilt, if any; ``TopicSeeds()``: none); ``topics``: how the
    topic map is laid out, clustered and named (:class:`TopicSettings`); ``where``: conditions on the
    corpus's columns a record must meet to be read ("categories contains cs.LG": ``embed.conditions``)."""

    preset: PresetName | None = None
    long_text: LongText | None = None
    quantize: Quantize | None = None
    smoothing: Smoothing | None = field(default_factory=Smoothing)
    faiss_factory: str | None = None
    engine: Engine = "local"
    address: str | None = None
    workers: int | None = None
    fields: Fields = field(default_factory=Fields)
    model_path: str | None = None
    use_cache: bool = True
    seeds: TopicSeeds | None = None
    topics: TopicSettings = field(default_factory=TopicSettings)
    where: tuple[str, ...] = ()

    def __post_init__(self):
        check_choice(self.engine, ENGINES, "engine")
        if self.preset is not None:
            check_choice(self.preset, tuple(PRESETS), "preset")
            if self.custom():
                raise UserError("--preset sets --long-text and --quantize; give one or the others")
        if self.long_text is not None:
            check_choice(self.long_text, LONG_TEXT_STRATEGIES, "long-text strategy")
        if self.quantize is not None:
            check_choice(self.quantize, QUANTIZE_CHOICES, "quantization")
        if self.engine == "local" and (self.address or self.workers):
            raise UserError("--address and --workers go with --engine ray")
        if self.workers is not None and self.workers < 1:
            raise UserError(f"--workers must be at least 1, got {self.workers}")

    def custom(self) -> dict:
        """The embedding settings given instead of a preset (long_text, quantize)."""
        given = (("long_text", self.long_text), ("quantize", self.quantize))
        return {name: value for name, value in given if value is not None}

    def embedding(self, papers: int) -> tuple[str, str, Preset]:
        """The preset's name, how it was chosen, and its settings, for a corpus of at least ``papers``."""
        if self.custom():
            exact = PRESETS["exact"]
            return "custom", "given as --long-text / --quantize", dataclasses.replace(exact, **self.custom())
        if papers >= AUTO_FAST_PAPERS:
            by_size, size = "fast", f"{AUTO_FAST_PAPERS:,} papers or more"
        elif papers >= AUTO_BALANCED_PAPERS:
            by_size, size = "balanced", f"{AUTO_BALANCED_PAPERS:,} to {AUTO_FAST_PAPERS - 1:,} papers"
        else:
            by_size, size = "exact", f"fewer than {AUTO_BALANCED_PAPERS:,} papers"
        name = self.preset or by_size
        how = "asked for" if self.preset else f"chosen by size: {size}"
        return name, how, PRESETS[name]

    def to_manifest(self) -> dict:
        """The settings as the manifest keeps them (what a later ``add`` and ``info`` read back)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_manifest(cls, manifest: Mapping) -> BuildSettings:
        """The settings an index was built with; for an index written before settings were kept,
        those its manifest's sections record."""
        stored = dict(manifest.get("settings") or {})
        if not stored:
            smoothing = manifest.get("search", {}).get("smoothing")
            return cls(smoothing=Smoothing(**smoothing) if smoothing else None)
        stored["smoothing"] = Smoothing(**stored["smoothing"]) if stored.get("smoothing") else None
        stored["fields"] = Fields(**stored.get("fields") or {})
        if stored.get("seeds"):
            seeds = stored["seeds"]
            topics = tuple(SeedTopic(**topic) for topic in seeds.get("topics", ()))
            stored["seeds"] = TopicSeeds(
                topics, seeds.get("similarity", SEED_SIMILARITY), seeds.get("source", ""), seeds.get("spread", 0.0)
            )
        stored["topics"] = TopicSettings.from_manifest(stored.get("topics"))
        stored["where"] = tuple(stored.get("where") or ())
        return cls(**{name: value for name, value in stored.items() if name in _BUILD_FIELDS})


_BUILD_FIELDS = {item.name for item in dataclasses.fields(BuildSettings)}


@dataclass(frozen=True)
class Feedback:
    """Pseudo-relevance feedback for short text queries: a query of ``max_words`` words or fewer is
    moved ``weight`` x towards the mean of its first ``results`` results and ranked again
    (measured: docs/quality.md)."""

    on: bool = True
    results: int = 3
    weight: float = 0.5
    max_words: int = 12


@dataclass(frozen=True)
class QuerySettings:
    """How a lookup ranks. ``mode``: dense, keyword or hybrid (None: the index's default, chosen by
    docs/quality.md); ``hybrid_weight``: the dense share of a hybrid score (None: the
    index's, tuned apart for papers and for text); ``feedback`` for short text queries;
    ``candidates``: hybrid ranking blends exactly the union of the dense and keyword top this many
    (its agreement with a full blend: docs/benchmarks.md); ``negative``:
    Rocchio's weight of the papers to avoid."""

    mode: Mode | None = None
    hybrid_weight: float | None = None
    feedback: Feedback = field(default_factory=Feedback)
    candidates: int = 200
    negative: float = 0.5

    def __post_init__(self):
        if self.mode is not None:
            check_choice(self.mode, MODES, "mode")
        if self.hybrid_weight is not None and not 0 <= self.hybrid_weight <= 1:
            raise UserError(f"the hybrid weight must be in [0, 1], got {self.hybrid_weight}")


# A token file's scopes: read answers lookups, write also changes collections
TOKEN_SCOPES = ("read", "write")


@dataclass(frozen=True)
class AccessSettings:
    """Who may do what on a server: ``read_only`` (every write refused), ``rate_limit`` (requests a
    minute per client; 0: none), and for the app ``uploads_per_hour`` (0: none). A limit left to
    None is set by the address served on (:meth:`on`): none on loopback, the default beyond."""

    read_only: bool = False
    rate_limit: int | None = None
    uploads_per_hour: int | None = None

    def __post_init__(self):
        limit = self.rate_limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UserError(f"--rate-limit must be requests a minute, a whole number (0: none), got {shown(limit)}")
        if self.uploads_per_hour is not None and self.uploads_per_hour < 0:
            raise UserError(f"--uploads-per-hour must be 0 (none) or more, got {self.uploads_per_hour}")

    def on(self, loopback: bool) -> AccessSettings:
        """These settings on a server at a loopback address (``loopback``: only this machine reaches
        it; a script's thousands of lookups are its own) or beyond: the limits left to None set."""
        rate, uploads = (0, 0) if loopback else (RATE_LIMIT_PER_MINUTE, UPLOADS_PER_HOUR)
        return dataclasses.replace(
            self,
            rate_limit=rate if self.rate_limit is None else self.rate_limit,
            uploads_per_hour=uploads if self.uploads_per_hour is None else self.uploads_per_hour,
        )


SourceName = Literal["arxiv", "openreview", "openalex"]
SOURCE_NAMES: tuple[str, ...] = get_args(SourceName)


@dataclass(frozen=True)
class SourceQuery:
    """What a fetch asks of one source: the source, its filters as the command line gave them, and
    the endpoint (None: the service's own). Kept in a fetched file's state, and in an index built
    from it, so that ``paperscope update`` can ask the same again for what is new.

    ``filters`` per source: arxiv ``category`` (e.g. "cs.LG"), ``since`` and ``until`` (YYYY-MM-DD),
    or ``query`` / ``ids`` (the arXiv API); openreview ``venue`` (e.g. "NeurIPS.cc/2025/Conference")
    and, for an update, ``changed_after`` (a watermark: only notes changed after it, and the venue's
    withdrawn ones); openalex ``filter`` ("KEY:VALUE[,…]", as OpenAlex takes it) and ``search``."""

    source: SourceName
    filters: tuple[tuple[str, str], ...] = ()
    base_url: str | None = None

    def __post_init__(self):
        check_choice(self.source, SOURCE_NAMES, "source")

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of filter ``key``, or ``default``."""
        return dict(self.filters).get(key, default)

    def with_filters(self, **changes: str | None) -> SourceQuery:
        """The same query with these filters set (None: removed)."""
        kept = {key: value for key, value in self.filters if key not in changes}
        kept.update({key: value for key, value in changes.items() if value is not None})
        return dataclasses.replace(self, filters=tuple(sorted(kept.items())))

    def describe(self) -> str:
        """One line a person reads: "arxiv category=cs.LG since=2025-01-01"."""
        return " ".join([self.source, *(f"{key}={value}" for key, value in self.filters)])

    def to_json(self) -> dict:
        """As kept on disk (JSON)."""
        return {"source": self.source, "filters": dict(self.filters), "base_url": self.base_url}

    @classmethod
    def from_json(cls, data: Mapping) -> SourceQuery:
        """Read back what :meth:`to_json` wrote."""
        filters = tuple(sorted((str(key), str(value)) for key, value in dict(data.get("filters") or {}).items()))
        return cls(data["source"], filters, data.get("base_url"))


@dataclass(frozen=True)
class FetchOptions:
    """How politely and from where a fetch goes on: ``contact`` (an e-mail address put in the user
    agent, as arXiv and OpenAlex ask; None: none), ``delay`` (seconds between two requests; None: what
    the source asks for), ``retries`` (tries of one request that failed in a way worth trying again),
    ``restart`` (begin again rather than go on from the state a killed fetch left)."""

    contact: str | None = None
    delay: float | None = None
    retries: int = 5
    restart: bool = False

    def __post_init__(self):
        if self.delay is not None and not 0 <= self.delay <= 600:
            raise UserError(f"--delay must be seconds between 0 and 600, got {shown(self.delay)}")
        if self.retries < 0:
            raise UserError(f"--retries must be 0 or more, got {self.retries}")


NO_OPTIONS = FetchOptions()  # the defaults, as a default argument (one frozen value)
