"""The ``paperscope`` command line: build an index, look up nearest papers, describe an index.

User errors print one line on stderr and exit with status 2; log lines (the ``paperscope``
logger) go to stderr. Nothing heavy is imported unless the command needs it: ``--help`` imports
neither numpy, pandas nor the model.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from paperscope.embed.text import counted
from paperscope.errors import Busy, ServiceFailed, UserError
from paperscope.limits import (
    AUTO_BALANCED_PAPERS,
    AUTO_FAST_PAPERS,
    BALANCED_SPEEDUP,
    DUPLICATE_THRESHOLD,
    FAST_P_AT_10,
    FAST_SPEEDUP,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_RESULTS,
    RATE_LIMIT_PER_MINUTE,
    UPLOADS_PER_HOUR,
)
from paperscope.settings import (
    ENGINES,
    LEVELS,
    LONG_TEXT_STRATEGIES,
    MODES,
    PRESETS,
    QUANTIZE_CHOICES,
    SEED_SIMILARITY,
    AccessSettings,
    BuildSettings,
    Fields,
    Smoothing,
    TopicSeeds,
)
from paperscope.ui import arguments, curation_commands, library_commands, map_commands, source_commands
from paperscope.ui.arguments import OutputFile, Text, Whole, needs
from paperscope.ui.loading import index_folder, load, print_results, with_index, with_json
from paperscope.ui.logs import log_to_stderr

EXIT_USER_ERROR = 2
MAP_NEIGHBOURS = 5  # papers joined to a clicked one in the HTML map
BRIDGE_NEIGHBOURS = 10  # nearest papers bridges count in each topic (its default)
BY_VALUES = 12  # values of a column topics --by shows apart (paperscope.index.analysis.topic_analysis.MAX_VALUES)
BY_LABEL_CHARS = 16  # longest value shown whole in the header of topics --by
PORT = Whole(1, 65_535)
MAX_SERVE_WORKERS = 64  # processes of paperscope serve (~250 MB each)
logger = logging.getLogger("paperscope")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it stops as on Ctrl-C: every cleanup runs."""


def _terminate(signum, frame) -> None:
    raise Terminated


def _fields(args) -> Fields:
    return Fields(id=args.id_field, title=args.title_field, abstract=args.text_field)


def cmd_build(args) -> None:
    """Build an index folder from corpus files (the bundled sample when none are given)."""
    from paperscope import locations
    from paperscope.index.build.pipeline import build_index, check_output

    settings = BuildSettings(
        preset=args.preset,
        long_text=args.long_text,
        quantize=args.quantize,
        smoothing=args.smoothing,
        faiss_factory=args.faiss,
        engine=args.engine,
        address=args.address,
        workers=args.workers,
        fields=_fields(args),
        model_path=args.model,
        use_cache=not args.no_cache,
        seeds=_seeds(args.topics_from, args.seed_similarity),
        where=tuple(args.where),
    )
    output = Path(args.output) if args.output else locations.default_index_dir()
    check_output(output, bool(args.inputs), args.force)
    build_index(args.inputs or locations.bundled_corpus(), output, settings)


def _seeds(path: str | None, similarity: float | None) -> TopicSeeds | None:
    """--topics-from FILE (or 'none') and --seed-similarity as the build's seed topics (None: the
    earlier build's)."""
    if path is None:
        if similarity is not None:
            raise UserError("--seed-similarity goes with --topics-from FILE")
        return None
    if path == "none":
        return TopicSeeds()
    from paperscope.embed.seed_file import read_seed_topics

    return read_seed_topics(path, SEED_SIMILARITY if similarity is None else similarity)


@arguments.of_kind("smoothing")
def _smoothing(text: str) -> Smoothing | None:
    """--smoothing K:W or off."""
    text = Text()(text)
    if text == "off":
        return None
    try:
        k, weight = text.split(":")
        return Smoothing(int(k), float(weight))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not K:W (e.g. 3:0.5) or off") from None
    except UserError:
        raise argparse.ArgumentTypeError(f"'{text}': K must be at least 1 and W in (0, 10]") from None


@arguments.of_kind("file")
def _seed_file(text: str) -> str:
    """--topics-from FILE, or 'none'."""
    return text if text == "none" else arguments.existing_file(text)


@arguments.of_kind("faiss")
def _faiss(text: str) -> str:
    """--faiss FACTORY, checked before a build embeds anything."""
    from paperscope.index.build.ann import check_factory

    try:
        return check_factory(Text()(text))
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_add(args) -> None:
    """Add the papers of corpus files to an existing index (new generation, written atomically)."""
    from paperscope.index.build.add import add_papers

    add_papers(args.inputs, index_folder(args), fields=_fields(args), use_cache=not args.no_cache)


def cmd_similar(args) -> None:
    """Print the papers most similar to one or several paper ids (and least like --not ids),
    among those meeting the --where conditions."""
    index = load(args)
    within = index.where(conditions=args.where) if args.where else None
    found = index.similar(args.paper_ids, k=args.k, mode=args.mode, negative=args.negative, within=within)
    print_results(found, args.json, args.show)


def cmd_search(args) -> None:
    """Print the papers most similar to free text, among those meeting the --where conditions."""
    index = load(args)
    within = index.where(conditions=args.where) if args.where else None
    print_results(index.search(args.text, k=args.k, mode=args.mode, within=within), args.json, args.show)


def _described_settings(settings: BuildSettings) -> str:
    smoothing = f"{settings.smoothing.k}:{settings.smoothing.weight}" if settings.smoothing else "off"
    chosen = [f"preset {settings.preset or 'by size'}", f"smoothing {smoothing}", f"engine {settings.engine}"]
    chosen += [f"{name} {value}" for name, value in settings.custom().items()]
    if settings.faiss_factory:
        chosen.append(f"FAISS {settings.faiss_factory}")
    if settings.seeds and settings.seeds.topics:
        source = f" from {Path(settings.seeds.source).name}" if settings.seeds.source else ""
        chosen.append(f"{len(settings.seeds.topics)} seed topics{source} (similarity {settings.seeds.similarity})")
    return ", ".join(chosen)


def cmd_info(args) -> None:
    """Describe an index: papers, model, build settings, the topic map's settings."""
    import dataclasses
    import textwrap

    index = load(args)
    if args.json:
        print(json.dumps(index.info(), indent=2))
        return
    manifest = index.manifest
    model, preset, search, long_text = manifest.model, manifest.preset, manifest.search, manifest.long_text
    topic_rows = []  # one row per section of the topic settings, each value by its name
    for section in dataclasses.fields(manifest.settings.topics):
        chosen = getattr(manifest.settings.topics, section.name)
        values = ", ".join(f"{name}={value!r}" for name, value in dataclasses.asdict(chosen).items())
        values += " (defaults)" if chosen == type(chosen)() else ""
        wrapped = textwrap.fill(values, 116, initial_indent=" " * 16, subsequent_indent=" " * 16)
        topic_rows.append((f"topic {section.name}", wrapped.lstrip()))
    rows = [
        ("folder", index.folder),
        ("papers", manifest.count),
        ("model", f"{model.name} ({model.fingerprint})"),
        ("dimension", manifest.dimension),
        ("built with", f"{_described_settings(manifest.settings)}; embedded with '{preset.name}' ({preset.how})"),
        (
            "long texts",
            f"{long_text.long_texts} over {long_text.max_tokens} word pieces, strategy '{long_text.strategy}'",
        ),
        ("text embedded", manifest.text_recipe),
        ("search", f"FAISS {search.faiss}, recall@10 {search.recall_at_10:.3f}; default ranking {search.search_mode}"),
        *topic_rows,
        ("columns", ", ".join(f"{name} ({kind})" for name, kind in index.columns().items()) or "none"),
        ("sources", ", ".join(manifest.corpus.sources)),
        *(("follows", origin.describe()) for origin in manifest.origins),
        ("built", manifest.created),
    ]
    for label, value in rows:
        print(f"{label:>14}  {value}")


def cmd_verify(args) -> None:
    """Check every file of an index against the SHA-256 its build recorded."""
    from paperscope.index.paper_index import leftovers, verify

    folder = index_folder(args)
    manifest = verify(folder)
    size = sum(entry["bytes"] for entry in manifest.files.values())
    print(f"{folder}: {len(manifest.files)} files ({size / 2**20:,.1f} MiB) match their checksums")
    left = leftovers(folder)
    if left:
        names = ", ".join(path.name for path in left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        logger.warning("%d %s of a stopped build: %s; the next build or add removes them", len(left),
                       "leftover" if len(left) == 1 else "leftovers", names)  # fmt: skip


def cmd_explain(args) -> None:
    """Print why two papers are similar: best sentence pairs and shared distinctive terms."""
    explanation = load(args).explain(args.first_id, other_id=args.second_id)
    if args.json:
        print(json.dumps(explanation.to_dict(), indent=2, ensure_ascii=False))
        return
    print(f"similarity {explanation.score:.3f}")
    print(f"shared terms: {', '.join(explanation.shared_terms) or '(none)'}")
    for first, second, similarity in explanation.sentence_pairs:
        print(f"\n[{similarity:.3f}] {args.first_id}: {first}\n        {args.second_id}: {second}")


def cmd_duplicates(args) -> None:
    """Print pairs of papers similar enough to be versions of one another."""
    pairs = load(args).duplicates(threshold=args.threshold)
    if args.json:
        print(json.dumps(pairs.to_dict("records"), indent=2, ensure_ascii=False))
        return
    if pairs.empty:
        logger.info("no pairs at similarity %s or above", args.threshold)
    for row in pairs.itertuples():
        print(f"{row.score:.3f}  {row.id_a}  {row.title_a}\n       {row.id_b}  {row.title_b}")


def cmd_topics(args) -> None:
    """Print every topic with its size, share, map trust and three most central papers; with
    ``--by COLUMN`` each topic's share of the papers of each value of a column (each year's, with
    its change); with ``--compare COLUMN=A COLUMN=B`` the topics over-represented in one group.
    Curations that match no topic any more are reported on stderr."""
    args.level = args.level or "coarse"
    index = load(args)
    curation_commands.report(index)
    if args.by:
        _print_topics_by(index.topics.by(args.by, args.level, args.bins), args.json)
        return
    if args.compare:
        _print_compared(index.topics.compare(*args.compare, level=args.level), args.json)
        return
    topics = index.topics.overview(args.level)
    if topics.empty:
        logger.info("no %s topics: the build found none among the %s (too few, or too far apart)", args.level,
                    counted(len(index), "paper"))  # fmt: skip
    if args.json:
        from paperscope.records import records

        print(json.dumps(records(topics), indent=2, ensure_ascii=False))
        return
    print(f"{len(topics)} {args.level} topics of {len(index)} papers")
    for row in topics.itertuples():
        print(f"\n{row.cluster:>3}  {row.size:>6} papers  {row.share:6.1%}  map trust {row.map_trust:.2f}  {row.name}")
        for paper_id, title in zip(row.central_ids, row.central_titles, strict=True):
            print(f"       {paper_id:<14}  {title}")


def _print_topics_by(shares, as_json: bool) -> None:
    column, values, papers = shares.attrs["column"], shares.attrs["values"], shares.attrs["papers"]
    over_time = shares.attrs["over_time"]
    if as_json:
        records = [
            {
                "cluster": int(row["cluster"]),
                "name": row["name"],
                **({"change": float(row["change"])} if over_time else {}),
                "shares": {str(value): float(row[value]) for value in values},
                "papers": {str(value): round(row[value] * papers[value]) for value in values},
            }
            for _, row in shares.iterrows()
        ]
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return
    labels = {value: str(value) if len(str(value)) <= BY_LABEL_CHARS else str(value)[: BY_LABEL_CHARS - 1] + "…"
              for value in values}  # fmt: skip
    width = {value: max(7, len(labels[value]) + 2) for value in values}
    change = "   change" if over_time else ""
    if not over_time:
        print(f"each topic's share of the papers with each value of {column}")
    print("  #  " + "".join(f"{labels[value]:>{width[value]}}" for value in values) + change + "  topic")
    print("     " + "".join(f"{papers[value]:>{width[value]}}" for value in values) + "  papers")
    for _, row in shares.iterrows():
        cells = "".join(f"{row[value]:{width[value]}.1%}" for value in values)
        moved = f"  {row['change'] * 100:+6.1f} " if over_time else ""
        print(f"{row['cluster']:>3}  {cells}{moved}  {row['name']}")
    if not over_time:
        return
    if len(values) == 1:
        where = "" if column == "year" else f"'s {column}"
        print(f"\nonly one year in this corpus{where} ({values[0]}): no change over time to show")
        return
    topics = shares[shares["cluster"] >= 0]
    if topics.empty:
        return
    grew, shrank = topics.iloc[0], topics.iloc[-1]
    print(f"\ngrew most: {grew['name']} ({grew['change'] * 100:+.1f} points, {values[0]}-{values[-1]})")
    print(f"shrank most: {shrank['name']} ({shrank['change'] * 100:+.1f} points)")


def _print_compared(compared, as_json: bool) -> None:
    if as_json:
        from paperscope.records import records

        print(json.dumps(records(compared), indent=2, ensure_ascii=False))
        return
    (a, b), (in_a, in_b) = compared.attrs["groups"], compared.attrs["papers"]
    print(f"A: {a} ({in_a} papers)  B: {b} ({in_b} papers); most over-represented in A first, in B last")
    print("  #  papers A  papers B  share A  share B   ratio  topic")
    for row in compared.itertuples():
        print(f"{row.cluster:>3}  {row.papers_a:>8}  {row.papers_b:>8}  {row.share_a:7.1%}  {row.share_b:7.1%}"
              f"  {row.ratio:6.2f}  {row.name}")  # fmt: skip


def cmd_bridges(args) -> None:
    """Print the papers between two topics (their nearest papers fall in both): balance, the
    neighbours in each topic, id, title and the paper's own topic."""
    index = load(args)
    found = index.topics.bridges(args.first, args.second, level=args.level, k=args.k)
    if args.json:
        from paperscope.records import records

        print(json.dumps(records(found), indent=2, ensure_ascii=False))
        return
    if found.empty:
        logger.info("no paper has nearest neighbours in both topics")
        return
    neighbours = f"{BRIDGE_NEIGHBOURS} nearest in A/B"
    print(f"balance  {neighbours}  {'id':<14}  title  [its own topic]")
    for row in found.itertuples():
        split = f"{row.in_a}/{row.in_b}"
        print(f"{row.balance:7.2f}  {split:^{len(neighbours)}}  {row.id:<14}  {row.title}  [{row.topic}]")


def cmd_map(args) -> None:
    """Draw the index's topic map to a PNG or an interactive HTML file."""
    from paperscope.settings import MAP_COLUMNS
    from paperscope.ui.mapplot import export_map

    index = load(args)
    fine, coarse = index.topics.table("fine"), index.topics.table("coarse")
    trust = index.manifest.map.trust
    title = f"{len(index):,} papers · {len(coarse)} topics of {len(fine)} clusters · map trust {trust:.0%}"
    if args.output.lower().endswith(".html"):  # a click in the HTML joins a paper to its nearest papers, linked
        links = ["url"] if "url" in index.fields() else []
        papers, knn = index.table(columns=[*MAP_COLUMNS, *links]).to_pandas(), index.map.neighbours(MAP_NEIGHBOURS)
    else:  # the PNG names points by their topics, coloured as the app colours them
        papers = index.table(columns=["x", "y", "cluster", "cluster_name", "coarse_cluster", "coarse_name"]).to_pandas()
        knn = None
    colour = None
    if args.colour_by:
        from paperscope.ui.mapplot import map_colours

        kinds = index.columns()
        if args.colour_by not in kinds:
            raise UserError(f"no column '{args.colour_by}' to colour by; the columns are: {', '.join(kinds) or 'none'}")
        values = index.table(columns=[args.colour_by]).column(args.colour_by).to_pylist()
        colour = map_colours(values, args.colour_by, kinds[args.colour_by])
    written = export_map(papers, fine, coarse, args.output, title, knn, colour)
    logger.info("map written to %s", written)


def cmd_app(args) -> None:
    """Start the Streamlit dashboard (the bundled sample when no index is given)."""
    from paperscope.ui.launch import run_app

    access = AccessSettings(read_only=args.read_only, uploads_per_hour=args.uploads_per_hour)
    raise SystemExit(run_app(args.port, args.index, headless=args.headless, host=args.host, access=access))


def cmd_serve(args) -> None:
    """Answer nearest-paper lookups as a JSON API (see paperscope.ui.service)."""
    from paperscope.ui.access import token_file
    from paperscope.ui.service import serve

    access = AccessSettings(read_only=args.read_only, rate_limit=args.rate_limit)
    serve(index_folder(args), host=args.host, port=args.port, workers=args.workers, access_log=args.access_log,
          token_file=token_file(args.token_file), access=access)  # fmt: skip


def cmd_audit(args) -> None:
    """Print the audit log: every write through the service, the app or the command line, oldest first
    (the last ``--limit``): time, who, through what, the action, its outcome and the index."""
    from paperscope import locations
    from paperscope.ui.audit import entries

    found = entries(args.limit or None, index=args.index and str(Path(args.index).resolve()))
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return
    if not found:
        logger.info("no write%s recorded yet in %s", f" to {args.index}" if args.index else "", locations.audit_file())
        return
    for line in found:
        print(f"{line.get('time', '')}  {line.get('who', '')}  {line.get('via', '')}  {line.get('action', '')}"
              f"  -> {line.get('outcome', '')}  {line.get('index', '')}")  # fmt: skip


def _audit_options(audit) -> None:
    audit.add_argument("--limit", type=Whole(0), metavar="N", default=50, help="the last N writes; 0: all (default 50)")
    audit.add_argument(
        "--index",
        metavar="DIR",
        type=arguments.index_folder,
        help="only the writes to this index folder (default: all)",
    )
    with_json(audit, "a JSON list of the log's lines")


def _with_model(sub) -> None:
    sub.add_argument(
        "--model",
        metavar="PATH",
        type=arguments.existing_folder,
        help="folder of the model the index was built with, if moved",
    )


def _with_lookup(sub) -> None:
    """The options of the lookups (similar, search): index, k, JSON, mode, model."""
    with_index(sub)
    sub.add_argument(
        "-k",
        type=Whole(1, MAX_RESULTS),
        default=10,
        help=f"number of results, 1 to {MAX_RESULTS:,} (the service's limit too); more than the corpus holds returns "
        "them all (default 10)",
    )
    with_json(sub, "a JSON list of result objects")
    sub.add_argument(
        "--mode",
        choices=MODES,
        help="dense (meaning), keyword (exact words, TF-IDF) or hybrid (default: the index's, "
        "hybrid unless rebuilt otherwise; acronym queries put papers using them first)",
    )
    sub.add_argument(
        "--where",
        metavar="CONDITION",
        type=arguments.condition,
        action="append",
        default=[],
        help="only papers meeting CONDITION, on any column of the corpus (paperscope info lists them): "
        "'decision = Accept', 'review_score >= 6', 'published >= 2024-01-01', 'tags contains graphs' "
        "(operators =, !=, <, <=, >, >=, contains; repeat for several, all met)",
    )
    sub.add_argument(
        "--show",
        metavar="COLUMN",
        type=Text(),
        action="append",
        default=[],
        help="print this column's value after each title",
    )
    _with_model(sub)


def _with_fields(sub, no_cache: str) -> None:
    """The columns to read of corpus files, and --no-cache (help ``no_cache``)."""
    sub.add_argument("--id-field", metavar="NAME", type=Text(), help="column holding paper ids")
    sub.add_argument("--title-field", metavar="NAME", type=Text(), help="column holding titles")
    sub.add_argument("--text-field", metavar="NAME", type=Text(), help="column holding abstracts")
    sub.add_argument("--no-cache", action="store_true", help=no_cache)


def _with_where(build) -> None:
    """The build's --where: conditions records must meet to be read."""
    build.add_argument(
        "--where",
        "--filter",
        metavar="CONDITION",
        type=arguments.condition,
        action="append",
        default=[],
        help="read only the records meeting CONDITION, on any column of the files: 'categories contains cs.LG', "
        "'update_date >= 2023-01-01', 'decision = Accept' (operators =, !=, <, <=, >, >=, contains; "
        "repeat for several, all met)",
    )


def _build_options(build) -> None:
    build.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        type=arguments.existing_file,
        help=(
            "corpus files: .txt, .csv, .tsv, .json, .jsonl, .parquet; library files: .bib, .ris, CSL-JSON, "
            "OpenAlex or Semantic Scholar JSON lines; optionally .gz (default: the bundled sample)"
        ),
    )
    build.add_argument(
        "-o", "--output", metavar="DIR", type=arguments.output_folder,
        help="index folder to write: a new or empty folder, or an index to rebuild (default: the sample's index)",
    )  # fmt: skip
    arguments.with_force(
        build, "build into a folder that is not an index, or build the bundled sample over an index of other files"
    )
    build.add_argument(
        "--model",
        metavar="PATH",
        type=arguments.existing_folder,
        help="local sentence-transformers model folder (default: bundled all-MiniLM-L6-v2)",
    )
    _embedding_options(build)
    _with_fields(build, "embed everything again, ignoring the embedding cache")
    _with_where(build)
    _topic_seed_options(build)
    _engine_options(build)


def _embedding_options(build) -> None:
    """The build's choices of how texts are embedded and ranked: preset, long texts, smoothing, int8."""
    build.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        help="'exact': fp32 model, windows over the whole text averaged; 'balanced': int8 model on the first "
        f"254 word pieces, {BALANCED_SPEEDUP}x as fast; 'fast': int8 model on the first 126, {FAST_SPEEDUP}x "
        f"as fast for IJCAI P@10 {FAST_P_AT_10[1]} against {FAST_P_AT_10[0]} (default: exact, balanced from "
        f"{AUTO_BALANCED_PAPERS:,} papers, fast from {AUTO_FAST_PAPERS:,})",
    )
    build.add_argument(
        "--long-text",
        choices=LONG_TEXT_STRATEGIES,
        help="instead of a preset: texts over the model's 256 word pieces: 'mean' averages windows "
        "over the whole text, 'truncate' keeps the first window",
    )
    build.add_argument(
        "--smoothing",
        metavar="K:W",
        type=_smoothing,
        default=Smoothing(),
        help="hybrid ranking sees each paper plus W x the mean of its K nearest papers, or 'off' "
        f"(default: {Smoothing.k}:{Smoothing.weight})",
    )
    build.add_argument(
        "--quantize",
        choices=QUANTIZE_CHOICES,
        help="instead of a preset: embed with a dynamically quantized int8 ONNX model (faster; fidelity to fp32 is "
        "measured and recorded in the manifest)",
    )


def _topic_seed_options(build) -> None:
    """The build's seed topics: --topics-from FILE and --seed-similarity."""
    build.add_argument(
        "--topics-from",
        metavar="FILE",
        type=_seed_file,
        help="seed topics, one a line: NAME or NAME: description; papers close enough to one form it, the rest "
        "are clustered as usual; kept for later rebuilds of the folder ('none' drops them)",
    )
    similarity = build.add_argument(
        "--seed-similarity",
        type=arguments.Fraction(0, 1, high_included=False),
        metavar="S",
        help="with --topics-from: the least cosine similarity a paper needs to join a seed, a floor: it also needs the "
        f"seed's words and a similarity unusual for that seed (docs/topic-map.md; default {SEED_SIMILARITY})",
    )
    needs(similarity, "--topics-from")


def _engine_options(build) -> None:
    """The build's FAISS factory and where it runs: this process or Ray (--engine, --address, --workers)."""
    build.add_argument(
        "--faiss",
        metavar="FACTORY",
        type=_faiss,
        help="FAISS index_factory string, e.g. Flat or HNSW32,Flat (default: exact up to 250,000 "
        "papers, then HNSW tuned to recall@10 >= 0.95)",
    )
    build.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where reading and embedding run: this process, or Ray Data (pip install "
        "'paperscope[ray]'); same index either way (default: local)",
    )
    address = build.add_argument(
        "--address",
        metavar="ray://HOST:PORT",
        type=Text(),
        help="with --engine ray: an existing Ray cluster (default: start Ray on this machine)",
    )
    workers = build.add_argument(
        "--workers",
        type=Whole(1),
        metavar="N",
        help="with --engine ray: embedding actors, one CPU each (default: the cluster's CPUs)",
    )
    needs(address, "--engine", "ray")
    needs(workers, "--engine", "ray")


def _add_options(add) -> None:
    add.add_argument(
        "inputs", nargs="+", metavar="FILE", type=arguments.existing_file, help="corpus files with the new papers"
    )
    with_index(add)
    _with_fields(add, "embed the new papers again, ignoring the embedding cache")


def _similar_options(similar) -> None:
    similar.add_argument(
        "paper_ids", metavar="PAPER_ID", type=Text(), nargs="+", help="one id, or several: more like these"
    )
    similar.add_argument(
        "--not", dest="negative", metavar="PAPER_ID", type=Text(), nargs="+", default=[], help="less like these papers"
    )
    _with_lookup(similar)


def _search_options(search) -> None:
    search.add_argument(
        "text",
        metavar="TEXT",
        type=Text(MAX_QUERY_CHARS, lines=True),
        help=f"free text, e.g. a question or an abstract (up to {MAX_QUERY_CHARS:,} characters)",
    )
    _with_lookup(search)


def _info_options(info) -> None:
    with_index(info)
    with_json(info, "the manifest as JSON")


def _explain_options(explain) -> None:
    explain.add_argument("first_id", metavar="ID1", type=Text())
    explain.add_argument("second_id", metavar="ID2", type=Text())
    with_index(explain)
    with_json(explain, "the explanation as JSON")
    _with_model(explain)


def _duplicates_options(duplicates) -> None:
    with_index(duplicates)
    duplicates.add_argument(
        "--threshold",
        type=arguments.Fraction(0, 1),
        default=DUPLICATE_THRESHOLD,
        help=f"cosine similarity from which a pair counts (default {DUPLICATE_THRESHOLD}, "
        "measured: docs/topic-map.md, Near-duplicates and outliers)",
    )
    with_json(duplicates, "a JSON list of pairs")


def _app_options(app) -> None:
    with_index(app)
    app.add_argument("--port", type=PORT, default=8501, help="port to serve on (default 8501)")
    app.add_argument(
        "--host", type=Text(), default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    app.add_argument("--headless", action="store_true", help="do not open a browser (the URL is printed)")
    app.add_argument(
        "--read-only",
        action="store_true",
        help="no renames, merges, collection changes or uploads: what opens the app to other machines",
    )
    app.add_argument(
        "--uploads-per-hour",
        type=Whole(0),
        metavar="N",
        help="corpora built from uploads an hour on this server, one at a time; 0: none (default: none on a "
        f"loopback --host, {UPLOADS_PER_HOUR} beyond)",
    )


def _serve_options(serve) -> None:
    with_index(serve)
    serve.add_argument(
        "--host", type=Text(), default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=PORT, default=8000, help="port to listen on (default 8000)")
    serve.add_argument(
        "--workers",
        type=Whole(1, MAX_SERVE_WORKERS),
        help="processes answering requests (default: one per core, at most 8; ~250 MB each)",
    )
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        type=arguments.existing_file,
        help="tokens clients must send (Authorization: Bearer TOKEN), one a line: NAME TOKEN SCOPE, scope read or "
        "write (default: $PAPERSCOPE_TOKEN_FILE; none: no token asked)",
    )
    serve.add_argument("--read-only", action="store_true", help="answer lookups, refuse every change (403)")
    serve.add_argument(
        "--rate-limit",
        type=Whole(0),
        metavar="N",
        help=f"requests a minute per token, or per client address without tokens, in each worker; 0: none "
        f"(default: none on a loopback --host, {RATE_LIMIT_PER_MINUTE} beyond)",
    )


def _topics_options(topics) -> None:
    with_index(topics)
    topics.add_argument(
        "--level",
        choices=LEVELS,
        help="coarse topics (merged clusters) or fine clusters (default: coarse; move: fine)",
    )
    shown = topics.add_mutually_exclusive_group()
    shown.add_argument(
        "--by",
        metavar="COLUMN",
        type=Text(),
        help="each topic's share of the papers of each value of a column: year (with each topic's change), "
        f"venue, categories, authors or any other metadata column the corpus has (the {BY_VALUES} most common "
        "values, the rest as 'other')",
    )
    shown.add_argument(
        "--compare",
        nargs=2,
        type=_group,
        metavar=("GROUP_A", "GROUP_B"),
        help="the topics over- and under-represented in one group of papers against another, with their "
        "papers in each; a group is COLUMN=VALUE or a condition on any column: --compare venue=ICML "
        "venue=NeurIPS, year=2021 year=2024, 'review_score >= 6' 'review_score < 4'",
    )
    bins = topics.add_argument(
        "--bins",
        type=_bins,
        metavar="N|EDGES",
        help="with --by a number or date column: N groups of about as many papers, or the edges between "
        "groups, such as 0,5,10 or 2020-01-01,2023-01-01 (default: each value, or quartiles past "
        f"{BY_VALUES} values; dates by year)",
    )
    needs(bins, "--by")
    with_json(topics, "a JSON list of topics")
    curation_commands.add_actions(topics, arguments.Parser)


@arguments.of_kind("condition")
def _group(text: str):
    """--compare GROUP: COLUMN=VALUE or a condition ('review_score >= 6')."""
    from paperscope.embed.conditions import parse

    try:
        return parse(Text()(text))
    except UserError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a group: give COLUMN=VALUE or a condition (venue=ICML, year=2024, 'review_score >= 6')"
        ) from None


@arguments.of_kind("bins")
def _bins(text: str):
    """--bins N or EDGES (comma-separated): a number of groups from 2 to BY_VALUES, or at least two edges."""
    text = Text()(text).strip()
    if text.lstrip("+-").isdigit():
        return Whole(2, BY_VALUES)(text)
    edges = [edge for edge in (part.strip() for part in text.split(",")) if edge]
    if len(set(edges)) < 2:
        raise argparse.ArgumentTypeError(f"'{text}': give a number of groups or at least two edges, such as 0,5,10")
    return edges


def _bridges_options(bridges) -> None:
    bridges.add_argument("first", metavar="A", type=Text(MAX_NAME_CHARS), help=curation_commands.TOPIC)
    bridges.add_argument("second", metavar="B", type=Text(MAX_NAME_CHARS), help="the other topic")
    with_index(bridges)
    bridges.add_argument("--level", choices=LEVELS, default="coarse", help="level of both topics (default: coarse)")
    bridges.add_argument(
        "-k", type=Whole(1, MAX_RESULTS), default=10, help=f"number of papers, 1 to {MAX_RESULTS:,} (default 10)"
    )
    with_json(bridges, "a JSON list of papers")


def _map_options(topic_map) -> None:
    with_index(topic_map)
    topic_map.add_argument(
        "-o", "--output", metavar="FILE", type=OutputFile((".png", ".html")), required=True, help="map.png or map.html"
    )
    arguments.with_force(topic_map)
    topic_map.add_argument(
        "--colour-by",
        metavar="COLUMN",
        type=Text(),
        help="colour the points by a column of the corpus (paperscope info lists them)",
    )


# Every subcommand, in the order --help lists them: its name, its one-line help, the function that
# adds its options and the one that runs it.
COMMANDS = (
    ("build", "build an index from corpus files", _build_options, cmd_build),
    ("add", "add the papers of corpus files to an existing index", _add_options, cmd_add),
    ("similar", "papers most similar to one or several papers", _similar_options, cmd_similar),
    ("search", "papers most similar to free text", _search_options, cmd_search),
    ("info", "describe an index", _info_options, cmd_info),
    ("verify", "check every file of an index against its recorded checksums", with_index, cmd_verify),
    ("explain", "why two papers are similar", _explain_options, cmd_explain),
    ("duplicates", "pairs of papers that are versions of one another", _duplicates_options, cmd_duplicates),
    ("app", "start the dashboard in the browser", _app_options, cmd_app),
    ("serve", "answer nearest-paper lookups as a JSON API (docs at /docs)", _serve_options, cmd_serve),
    ("topics", "every topic: size, share, map trust, central papers; corrections", _topics_options, cmd_topics),
    ("bridges", "papers between two topics", _bridges_options, cmd_bridges),
    ("map", "draw the topic map to a .png or an interactive .html file", _map_options, cmd_map),
    (
        "audit",
        "who changed what: every write through the service, the app or the command line",
        _audit_options,
        cmd_audit,
    ),
    *library_commands.COMMANDS,
    *map_commands.COMMANDS,
    *source_commands.COMMANDS,
)


@functools.cache  # argparse takes ~0.1 s to make it (gettext per option); parsing changes nothing in it
def make_parser(command: str | None = None) -> arguments.Parser:
    """The argument parser of every subcommand (``COMMANDS``), made once per process; given a
    ``command``, only that one gets its options (every command is still named, for ``--help``):
    a lookup does not make the other commands' options."""
    parser = arguments.Parser(
        prog="paperscope", description="Semantic similarity explorer for research-paper abstracts."
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=arguments.Parser)
    for name, summary, add_options, run in COMMANDS:
        sub = commands.add_parser(name, help=summary)
        if command in (None, name):
            add_options(sub)
        if run is not None:  # None: a command of commands, each of which sets its own
            sub.set_defaults(run=run)
    return parser


# The commands that change an index or the collections, recorded in the audit log (ui/audit.py)
# as the service's and the app's writes are: a command, or its actions that write.
AUDITED = {
    "add": None, "build": None,
    "collection": {"create", "add", "remove", "dismiss", "undismiss", "delete", "mark-shown", "embed", "restore"},
    "topics": {"rename", "merge", "split", "move"},
    "remap": None, "maps": {"use", "delete"},
}  # fmt: skip


def _audited(args) -> None:
    """Run the command; one that writes (``AUDITED``) is recorded in the audit log with the user's
    name, "ok" or its error's sentence."""
    actions = AUDITED.get(args.command, ())
    if args.command not in AUDITED or (actions is not None and getattr(args, "action", None) not in actions):
        args.run(args)
        return
    import getpass

    from paperscope.ui import audit

    action = " ".join(filter(None, [args.command, getattr(args, "action", None), getattr(args, "name", None)]))
    where = getattr(args, "index", None) or getattr(args, "output", None)
    where = Path(where).resolve() if where else "the default index"  # resolved: audit --index finds it
    try:
        args.run(args)
    except UserError as exc:
        audit.record(getpass.getuser(), "cli", action, where, str(exc))
        raise
    audit.record(getpass.getuser(), "cli", action, where, "ok")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    log_to_stderr()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)  # cleanups run as on Ctrl-C (a build's work folder)
    try:
        argv = sys.argv[1:] if argv is None else argv
        parser = make_parser(argv[0] if argv and argv[0] in {command[0] for command in COMMANDS} else None)
        args, extra = parser.parse_known_args(argv)
        if extra and isinstance(getattr(args, "ids", None), list) and not any(a.startswith("-") for a in extra):
            args.ids += extra  # ids after an option: `collection create NAME --index DIR ID …`
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        chosen = arguments.command_parser(parser, args)
        arguments.check_pairs(args, chosen)
        arguments.check_outputs(args, chosen)
        _audited(args)
    except UserError as exc:
        print(f"paperscope: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (ServiceFailed, Busy) as exc:
        print(f"paperscope: {exc}", file=sys.stderr)
        return 1
    except Terminated:
        print("paperscope: stopped (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("paperscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # e.g. `paperscope search … | head`
    return 0


if __name__ == "__main__":
    sys.exit(main())
