"""A big library imported into a collection: read, matched, stored; then its entries outside the corpus embedded.

    .venv/bin/python -m benchmarks.library_import --work DIR [--entries 25000] [--papers 50000] [--embed 256]

Makes in DIR (once) an index of --papers synthetic arXiv-style papers from the bundled sample's
(:func:`benchmarks.million.make_index`: ids 2501.0000000 …, vectors the sample's plus noise) and a
BibTeX library of --entries entries shaped like a Zotero export: half name papers of the corpus by
their DOI (as it is, as a doi.org URL in capitals, or with a url beside it, in turn),
half are outside it (a DOI, a title and a 120-word abstract of their own). Then, each in this
process: reading the file (BibTeX parsed, LaTeX to text), matching the entries to the papers, the
whole import with the embedding deferred (``collection create --defer-embedding``: read, match and
store in one transaction), the same through the command line in a fresh process, the collection
exported as BibTeX, RIS and CSL-JSON (each entry given back as it came), and embedding
--embed outside entries (the rate, and the time all of them would take). Prints a Markdown table
and writes JSON.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report

WORDS = ["graph", "neural", "network", "diffusion", "model", "attention", "sparse", "federated", "learning",
         "robust", "optimal", "transport", "kernel", "bayesian", "inference", "causal", "reinforcement", "policy",
         "gradient", "language", "retrieval", "contrastive", "representation"]  # fmt: skip


def make_library(path: Path, entries: int, papers: int) -> None:
    """The library file (see the module docstring)."""
    rng = random.Random(0)
    lines = []
    for number in range(entries):
        author = f"Author{number % 997}, Ann and Writer{number % 991}, Bo"
        if number % 2 == 0:  # a paper of the corpus, by its DOI
            doi = f"10.5555/synthetic.{number // 2 % papers}"
            way = (f"doi = {{{doi}}}", f"doi = {{https://doi.org/{doi.upper()}}}",
                   f"doi = {{{doi}}},\n  url = {{https://doi.org/{doi}}}")[number // 2 % 3]  # fmt: skip
            lines.append(f"@article{{corpus_{number},\n  title = {{A Paper of the Corpus {number}}},\n  author = "
                         f"{{{author}}},\n  {way},\n  year = {{2025}},\n}}\n")  # fmt: skip
        else:
            title = " ".join(rng.choice(WORDS) for _ in range(8)).title()
            abstract = " ".join(rng.choice(WORDS) for _ in range(120))
            lines.append(
                f"@inproceedings{{outside_{number},\n  title = {{{title} {number}}},\n  author = {{{author}}},\n"
                f"  booktitle = {{Proceedings of Somewhere}},\n  year = {{2023}},\n"
                f"  doi = {{10.5555/big.{number}}},\n  abstract = {{{abstract}}},\n}}\n"
            )
    path.write_text("\n".join(lines), encoding="utf-8")


def prepare(work: Path, papers: int, entries: int) -> tuple[Path, Path]:
    """The synthetic index and the library, made unless they are there already."""
    from benchmarks.million import make_index
    from paperscope import build_index, locations

    index, library = work / f"index-{papers}", work / f"library-{entries}.bib"
    if not index.exists():
        build_index(locations.bundled_corpus(), work / "sample")
        make_index(work / "sample", papers, index)
    if not library.exists():
        make_library(library, entries, papers)
    return index, library


def main() -> None:
    arguments = common_parser(__doc__, "library_import")
    arguments.add_argument("--work", required=True, help="a folder for the index, the library and the data folder")
    arguments.add_argument("--entries", type=int, default=25_000)
    arguments.add_argument("--papers", type=int, default=50_000)
    arguments.add_argument("--embed", type=int, default=256, help="outside entries embedded to measure the rate")
    options = arguments.parse_args()
    work = Path(options.work)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PAPERSCOPE_HOME"] = str(work / "home")
    folder, library = prepare(work, options.papers, options.entries)
    (work / "home" / "collections.sqlite").unlink(missing_ok=True)

    from paperscope import PaperIndex
    from paperscope.embed.readers import read_records
    from paperscope.index.collections.matching import match_entries

    index = PaperIndex.load(folder)
    timings = {}
    start = time.perf_counter()
    entries = read_records(library, keep_without_abstract=True, announce=False)
    timings["read (parse, LaTeX to text)"] = time.perf_counter() - start
    start = time.perf_counter()
    columns = [column for column in ("id", "title", "doi", "arxiv_id") if column in index.fields()]
    matched = match_entries(index.table(columns=columns).to_pandas(), entries)
    timings["match to the corpus"] = time.perf_counter() - start
    start = time.perf_counter()
    imported = index.collections.create("big", files=[library], embed=False)
    timings["import: read, match, store (deferred embedding)"] = time.perf_counter() - start
    timings["of which storing"] = (
        timings["import: read, match, store (deferred embedding)"]
        - timings["read (parse, LaTeX to text)"] - timings["match to the corpus"]
    )  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "collection", "create", "big-cli", "--from", str(library),
         "--defer-embedding", "--index", str(folder)],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    timings["paperscope collection create --defer-embedding (fresh process)"] = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    for fmt, suffix in (("BibTeX", "bib"), ("RIS", "ris"), ("CSL-JSON", "json")):
        start = time.perf_counter()
        index.collections.export("big", work / f"export.{suffix}")
        timings[f"export as {fmt}"] = time.perf_counter() - start
    counts = imported.counts()
    outside = counts["outside"]
    sample = work / f"library-embed-{options.embed}.bib"  # its outside entries: --embed of them
    make_library(sample, 2 * options.embed, options.papers)
    index.collections.create("embedded", files=[sample], embed=False)
    index.embed_texts(["warm up the model"])
    start = time.perf_counter()
    embedded = index.collections.embed_outside("embedded")
    embedding = time.perf_counter() - start
    rate = embedded / embedding
    rows = [[stage, f"{seconds:.1f} s"] for stage, seconds in timings.items()]
    preset = index.manifest.preset.name
    rows.append(
        [f"embedding {embedded} outside entries ({rate:.1f}/s, the index's {preset} preset)", f"{embedding:.1f} s"]
    )
    rows.append([f"embedding all {outside:,} outside entries (at that rate)", f"{outside / rate / 60:.1f} min"])
    print(f"{len(entries):,} entries, {options.papers:,} papers: {imported.summary()}\n")
    results = {
        "entries": len(entries), "papers": options.papers, "matched": sum(counts.values()) - outside,
        "outside": outside, "seconds": timings, "embedded": embedded, "embedding_seconds": embedding,
        "embedding_rate_per_second": rate, "all_outside_minutes": outside / rate / 60,
        "matched_in_benchmark": len(matched.members),
    }  # fmt: skip
    report(["stage", "time"], rows, results, options.json)


if __name__ == "__main__":
    main()
