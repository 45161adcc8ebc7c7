"""The ``paperscope`` command line: build an index, look up nearest papers, describe an index.

User errors print one line on stderr and exit with status 2; log lines (the ``paperscope``
logger) go to stderr. Nothing heavy is imported unless the command needs it: ``--help`` imports
neither numpy, pandas nor the model.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from paperscope.errors import UserError
from paperscope.options import (
    AUTO_FAST_PAPERS,
    DUPLICATE_THRESHOLD,
    ENGINES,
    LEVELS,
    LONG_TEXT_STRATEGIES,
    MODES,
    PRESETS,
    QUANTIZE_CHOICES,
    SMOOTHING,
)

EXIT_USER_ERROR = 2
MAP_NEIGHBOURS = 5  # papers joined to a clicked one in the HTML map
logger = logging.getLogger("paperscope")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the fix, not a usage dump."""

    def error(self, message):
        raise UserError(f"{message} (see: {self.prog} --help)")


def _index_folder(args) -> Path:
    """The --index folder, or the default sample index, built on first use."""
    from paperscope.index.build import sample_index

    return Path(args.index) if args.index else sample_index()


def _load(args):
    from paperscope.index.paper_index import PaperIndex

    return PaperIndex.load(_index_folder(args), model_path=getattr(args, "model", None))


def _print_results(results, as_json: bool) -> None:
    if as_json:
        from paperscope.ui.records import records

        print(json.dumps(records(results), indent=2, ensure_ascii=False))
        return
    for row in results.itertuples():
        print(f"{row.rank:>3}  {row.score:6.3f}  {row.id:<14}  {row.title}")


def cmd_build(args) -> None:
    """Build an index folder from corpus files (the bundled sample when none are given)."""
    from paperscope.index import locations
    from paperscope.index.build import build_index

    inputs = args.inputs or locations.bundled_corpus()
    output = Path(args.output) if args.output else locations.default_index_dir()
    fields = {"id": args.id_field, "title": args.title_field, "abstract": args.text_field}
    build_index(
        inputs,
        output,
        model_path=args.model,
        long_text=args.long_text,
        preset=args.preset,
        smoothing=args.smoothing,
        fields=fields,
        use_cache=not args.no_cache,
        faiss_factory=args.faiss,
        quantize=args.quantize,
        engine=args.engine,
        address=args.address,
        workers=args.workers,
    )


def _smoothing(text: str) -> dict | None:
    """--smoothing K:W or off."""
    if text == "off":
        return None
    try:
        k, weight = text.split(":")
        settings = {"k": int(k), "weight": float(weight)}
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not K:W (e.g. 3:0.5) or off") from None
    if settings["k"] < 1 or not 0 < settings["weight"] <= 10:
        raise argparse.ArgumentTypeError(f"'{text}': K must be at least 1 and W in (0, 10]")
    return settings


def cmd_add(args) -> None:
    """Add the papers of corpus files to an existing index (new generation, written atomically)."""
    from paperscope.index.add import add_papers

    fields = {"id": args.id_field, "title": args.title_field, "abstract": args.text_field}
    add_papers(args.inputs, _index_folder(args), fields=fields, use_cache=not args.no_cache)


def cmd_similar(args) -> None:
    """Print the papers most similar to one or several paper ids (and least like --not ids)."""
    _print_results(_load(args).similar(args.paper_ids, k=args.k, mode=args.mode, negative=args.negative), args.json)


def cmd_search(args) -> None:
    """Print the papers most similar to free text."""
    _print_results(_load(args).search(args.text, k=args.k, mode=args.mode), args.json)


def cmd_info(args) -> None:
    """Describe an index: papers, model, build settings."""
    index = _load(args)
    manifest = index.manifest
    if args.json:
        print(json.dumps({**manifest, "folder": str(index.folder)}, indent=2))
        return
    rows = [
        ("folder", index.folder),
        ("papers", manifest["count"]),
        ("model", f"{manifest['model']['name']} ({manifest['model']['fingerprint']})"),
        ("dimension", manifest["dimension"]),
        (
            "long texts",
            f"{manifest['long_text']['long_texts']} over {manifest['long_text']['max_tokens']} "
            f"word pieces, strategy '{manifest['long_text']['strategy']}'",
        ),
        ("text embedded", manifest["text_recipe"]),
        (
            "search",
            f"FAISS {manifest['search']['faiss']}, recall@10 {manifest['search']['recall_at_10']:.3f}; "
            f"default ranking {manifest['search']['search_mode']}",
        ),
        ("sources", ", ".join(manifest["corpus"]["sources"])),
        ("built", manifest["created"]),
    ]
    for label, value in rows:
        print(f"{label:>14}  {value}")


def cmd_verify(args) -> None:
    """Check every file of an index against the SHA-256 its build recorded."""
    from paperscope.index.store import verify

    folder = _index_folder(args)
    manifest = verify(folder)
    size = sum(entry["bytes"] for entry in manifest["files"].values())
    print(f"{folder}: {len(manifest['files'])} files ({size / 2**20:,.1f} MiB) match their checksums")


def cmd_explain(args) -> None:
    """Print why two papers are similar: best sentence pairs and shared distinctive terms."""
    explanation = _load(args).explain(args.first_id, other_id=args.second_id)
    if args.json:
        print(json.dumps(explanation.to_dict(), indent=2, ensure_ascii=False))
        return
    print(f"similarity {explanation.score:.3f}")
    print(f"shared terms: {', '.join(explanation.shared_terms) or '(none)'}")
    for first, second, similarity in explanation.sentence_pairs:
        print(f"\n[{similarity:.3f}] {args.first_id}: {first}\n        {args.second_id}: {second}")


def cmd_duplicates(args) -> None:
    """Print pairs of papers similar enough to be versions of one another."""
    from paperscope.index.analysis import near_duplicates

    pairs = near_duplicates(_load(args), threshold=args.threshold)
    if args.json:
        print(json.dumps(pairs.to_dict("records"), indent=2, ensure_ascii=False))
        return
    if pairs.empty:
        logger.info("no pairs at similarity %s or above", args.threshold)
    for row in pairs.itertuples():
        print(f"{row.score:.3f}  {row.id_a}  {row.title_a}\n       {row.id_b}  {row.title_b}")


def cmd_topics(args) -> None:
    """Print every topic with its size, share, map trust and three most central papers, or with
    ``--by year`` each topic's share of each year's papers."""
    index = _load(args)
    if args.by == "year":
        from paperscope.index.analysis import topics_by_year

        _print_topics_by_year(topics_by_year(index, args.level), args.json)
        return
    topics = index.topics(args.level)
    if args.json:
        from paperscope.ui.records import records

        print(json.dumps(records(topics), indent=2, ensure_ascii=False))
        return
    print(f"{len(topics)} {args.level} topics of {len(index)} papers")
    for row in topics.itertuples():
        print(f"\n{row.cluster:>3}  {row.size:>6} papers  {row.share:6.1%}  map trust {row.map_trust:.2f}  {row.name}")
        for paper_id, title in zip(row.central_ids, row.central_titles, strict=True):
            print(f"       {paper_id:<14}  {title}")


def _print_topics_by_year(shares, as_json: bool) -> None:
    years = [column for column in shares.columns if isinstance(column, int)]
    if as_json:
        records = [
            {
                "cluster": int(row["cluster"]),
                "name": row["name"],
                "change": float(row["change"]),
                "shares": {str(year): float(row[year]) for year in years},
            }
            for _, row in shares.iterrows()
        ]
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return
    print("  #  " + "".join(f"{year:>7}" for year in years) + "   change  topic")
    for _, row in shares.iterrows():
        cells = "".join(f"{row[year]:7.1%}" for year in years)
        print(f"{row['cluster']:>3}  {cells}  {row['change'] * 100:+6.1f}   {row['name']}")
    grew, shrank = shares.iloc[0], shares.iloc[-1]
    print(f"\ngrew most: {grew['name']} ({grew['change'] * 100:+.1f} points, {years[0]}-{years[-1]})")
    print(f"shrank most: {shrank['name']} ({shrank['change'] * 100:+.1f} points)")


def cmd_bridges(args) -> None:
    """Print the papers between two topics (their nearest papers fall in both): balance, the
    neighbours in each topic, id, title and the paper's own topic."""
    index = _load(args)
    found = index.bridges(args.first, args.second, level=args.level, k=args.k)
    if args.json:
        from paperscope.ui.records import records

        print(json.dumps(records(found), indent=2, ensure_ascii=False))
        return
    if found.empty:
        logger.info("no paper has nearest neighbours in both topics")
    for row in found.itertuples():
        print(f"{row.balance:5.2f}  {row.in_a:>2}/{row.in_b:<2}  {row.id:<14}  {row.title}  [{row.topic}]")


def cmd_map(args) -> None:
    """Draw the index's topic map to a PNG or an interactive HTML file."""
    from paperscope.ui.mapplot import export_map

    index = _load(args)
    title = (
        f"{index.manifest['count']:,} papers · {len(index.coarse_clusters)} topics in {len(index.clusters)} · "
        f"map trust {index.manifest['map']['map_trust']['mean']:.0%}"
    )
    knn = None
    if args.output.lower().endswith(".html"):  # a click in the HTML joins a paper to its nearest papers
        knn = index.faiss_index.search(index.vectors, min(MAP_NEIGHBOURS + 1, len(index)))[1]
    written = export_map(index.papers, index.clusters, index.coarse_clusters, args.output, title, knn)
    logger.info("map written to %s", written)


def cmd_app(args) -> None:
    """Start the Streamlit dashboard (the bundled sample when no index is given)."""
    import signal
    import subprocess
    import webbrowser

    from paperscope.ui.server import wait_until_healthy

    app = Path(__file__).with_name("app.py")
    # Always headless: otherwise Streamlit's first run stops at an e-mail prompt in the terminal.
    # The browser is opened here instead, once the server answers.
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--browser.gatherUsageStats",
        "false",
        "--server.port",
        str(args.port),
        "--server.maxUploadSize",
        "50",
        "--client.toolbarMode",
        "minimal",
        "--server.headless",
        "true",
        "--theme.base",
        "light",
    ]
    if args.index:
        if not Path(args.index).is_dir():
            raise UserError(f"{args.index}: no such index folder; build one with: paperscope build -o {args.index}")
        command += ["--", "--index", str(Path(args.index).resolve())]
    server = subprocess.Popen(command)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the server too
    url = f"http://localhost:{args.port}"
    try:
        if wait_until_healthy(url, server, timeout=20) and not args.headless:
            webbrowser.open(url)
        raise SystemExit(server.wait())
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:  # Streamlit's graceful shutdown can hang on open sessions
                server.kill()


def cmd_serve(args) -> None:
    """Answer nearest-paper lookups as a JSON API (see paperscope.ui.service)."""
    from paperscope.ui.service import serve

    serve(_index_folder(args), host=args.host, port=args.port, workers=args.workers, access_log=args.access_log)


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""

    parser = _Parser(prog="paperscope", description="Semantic similarity explorer for research-paper abstracts.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def with_index(sub):
        sub.add_argument(
            "--index", metavar="DIR", help="index folder (default: the bundled NeurIPS 2025 sample, built on first use)"
        )

    def with_lookup(sub):
        with_index(sub)
        sub.add_argument(
            "-k",
            type=int,
            default=10,
            help="number of results, 1 or more; more than the corpus holds returns them all (default 10)",
        )
        sub.add_argument("--json", action="store_true", help="print a JSON list of result objects")
        sub.add_argument(
            "--mode",
            choices=MODES,
            help="dense (meaning), keyword (exact words, TF-IDF) or hybrid (default: the index's, "
            "hybrid unless rebuilt otherwise; acronym queries put papers using them first)",
        )
        sub.add_argument("--model", metavar="PATH", help="folder of the model the index was built with, if moved")

    build = commands.add_parser("build", help="build an index from corpus files")
    build.add_argument(
        "inputs",
        nargs="*",
        metavar="FILE",
        help="corpus files: .txt, .csv, .tsv, .json, .jsonl, .parquet, optionally .gz (default: the bundled sample)",
    )
    build.add_argument("-o", "--output", metavar="DIR", help="index folder to write (default: the sample's index)")
    build.add_argument(
        "--model", metavar="PATH", help="local sentence-transformers model folder (default: bundled all-MiniLM-L6-v2)"
    )
    build.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        help="'exact': fp32 model, windows over the whole text averaged; 'fast': int8 model on the "
        f"first 126 word pieces, about 5x faster (default: exact, fast from {AUTO_FAST_PAPERS:,} papers)",
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
        default=SMOOTHING,
        help="hybrid ranking sees each paper plus W x the mean of its K nearest papers, or 'off' "
        f"(default: {SMOOTHING['k']}:{SMOOTHING['weight']})",
    )
    build.add_argument("--id-field", metavar="NAME", help="column holding paper ids")
    build.add_argument("--title-field", metavar="NAME", help="column holding titles")
    build.add_argument("--text-field", metavar="NAME", help="column holding abstracts")
    build.add_argument("--no-cache", action="store_true", help="embed everything again, ignoring the embedding cache")
    build.add_argument(
        "--quantize",
        choices=QUANTIZE_CHOICES,
        help="instead of a preset: embed with a dynamically quantized int8 ONNX model (faster; fidelity to fp32 is "
        "measured and recorded in the manifest)",
    )
    build.add_argument(
        "--faiss",
        metavar="FACTORY",
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
    build.add_argument(
        "--address",
        metavar="ray://HOST:PORT",
        help="with --engine ray: an existing Ray cluster (default: start Ray on this machine)",
    )
    build.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="with --engine ray: embedding actors, one CPU each (default: the cluster's CPUs)",
    )
    build.set_defaults(run=cmd_build)

    add = commands.add_parser("add", help="add the papers of corpus files to an existing index")
    add.add_argument("inputs", nargs="+", metavar="FILE", help="corpus files with the new papers")
    with_index(add)
    add.add_argument("--id-field", metavar="NAME", help="column holding paper ids")
    add.add_argument("--title-field", metavar="NAME", help="column holding titles")
    add.add_argument("--text-field", metavar="NAME", help="column holding abstracts")
    add.add_argument("--no-cache", action="store_true", help="embed the new papers again, ignoring the embedding cache")
    add.set_defaults(run=cmd_add)

    similar = commands.add_parser("similar", help="papers most similar to one or several papers")
    similar.add_argument("paper_ids", metavar="PAPER_ID", nargs="+", help="one id, or several: more like these")
    similar.add_argument(
        "--not", dest="negative", metavar="PAPER_ID", nargs="+", default=[], help="less like these papers"
    )
    with_lookup(similar)
    similar.set_defaults(run=cmd_similar)

    search = commands.add_parser("search", help="papers most similar to free text")
    search.add_argument(
        "text", metavar="TEXT", help="free text, e.g. a question or an abstract (up to 20,000 characters)"
    )
    with_lookup(search)
    search.set_defaults(run=cmd_search)

    info = commands.add_parser("info", help="describe an index")
    with_index(info)
    info.add_argument("--json", action="store_true", help="print the manifest as JSON")
    info.set_defaults(run=cmd_info)

    verify = commands.add_parser("verify", help="check every file of an index against its recorded checksums")
    with_index(verify)
    verify.set_defaults(run=cmd_verify)

    explain = commands.add_parser("explain", help="why two papers are similar")
    explain.add_argument("first_id", metavar="ID1")
    explain.add_argument("second_id", metavar="ID2")
    with_index(explain)
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")
    explain.add_argument("--model", metavar="PATH", help="folder of the model the index was built with, if moved")
    explain.set_defaults(run=cmd_explain)

    duplicates = commands.add_parser("duplicates", help="pairs of papers that are versions of one another")
    with_index(duplicates)
    duplicates.add_argument(
        "--threshold",
        type=float,
        default=DUPLICATE_THRESHOLD,
        help=f"cosine similarity from which a pair counts (default {DUPLICATE_THRESHOLD}, "
        "measured: see benchmarks/duplicates_threshold.py)",
    )
    duplicates.add_argument("--json", action="store_true", help="print a JSON list of pairs")
    duplicates.set_defaults(run=cmd_duplicates)

    app = commands.add_parser("app", help="start the dashboard in the browser")
    with_index(app)
    app.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    app.add_argument("--headless", action="store_true", help="do not open a browser (the URL is printed)")
    app.set_defaults(run=cmd_app)

    serve = commands.add_parser("serve", help="answer nearest-paper lookups as a JSON API (docs at /docs)")
    with_index(serve)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument(
        "--workers", type=int, help="processes answering requests (default: one per core, at most 8; ~250 MB each)"
    )
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.set_defaults(run=cmd_serve)

    topics = commands.add_parser("topics", help="every topic: size, share, map trust, central papers")
    with_index(topics)
    topics.add_argument(
        "--level",
        choices=LEVELS,
        default="coarse",
        help="coarse topics (merged clusters) or fine clusters (default: coarse)",
    )
    topics.add_argument("--by", choices=["year"], help="each topic's share of each year's papers, and its change")
    topics.add_argument("--json", action="store_true", help="print a JSON list of topics")
    topics.set_defaults(run=cmd_topics)

    bridges = commands.add_parser("bridges", help="papers between two topics")
    bridges.add_argument("first", metavar="A", help="a topic: its number or (part of) its name, see paperscope topics")
    bridges.add_argument("second", metavar="B", help="the other topic")
    with_index(bridges)
    bridges.add_argument("--level", choices=LEVELS, default="coarse", help="level of both topics (default: coarse)")
    bridges.add_argument("-k", type=int, default=10, help="number of papers (default 10)")
    bridges.add_argument("--json", action="store_true", help="print a JSON list of papers")
    bridges.set_defaults(run=cmd_bridges)

    topic_map = commands.add_parser("map", help="draw the topic map to a .png or an interactive .html file")
    with_index(topic_map)
    topic_map.add_argument("-o", "--output", metavar="FILE", required=True, help="map.png or map.html")
    topic_map.set_defaults(run=cmd_map)
    return parser


def log_to_stderr() -> None:
    """Print the ``paperscope`` logger's lines (INFO and up) on stderr, as bare messages."""
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    log_to_stderr()
    try:
        args = make_parser().parse_args(argv)
        args.run(args)
    except UserError as exc:
        print(f"paperscope: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("paperscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # e.g. `paperscope search … | head`
    return 0


if __name__ == "__main__":
    sys.exit(main())
