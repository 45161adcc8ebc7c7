"""The arXiv metadata snapshot whole: read and admit a synthetic snapshot of its real size, and subsets of it.

    .venv/bin/python -m benchmarks.arxiv_snapshot [--records 2700000] [--gz-bytes 1e9] [--out DIR] [--keep]

Writes a synthetic file of the snapshot's schema (one JSON object a line: id, submitter, authors,
title, comments, journal-ref, doi, report-no, categories, license, abstract, versions,
update_date, authors_parsed), with its real sizes (abstracts of ~1,000 characters of varied
words, wrapped and indented as arXiv's are; 1-10 authors; a mix of categories in which cs.LG is
~7 %; update_date over 2007-2025; 1-3 versions), written a record at a time; then a ``.gz`` of its
first lines of about ``--gz-bytes`` compressed. Each measure runs in a fresh process, which reads
and admits the file as a build does (``embed.readers.admission.admitted_papers``: parse, map the fields, keep
the own columns typed, paper rows with derived titles, the duplicate check; no embedding), with the
build's reading processes (``limits.READ_WORKERS``), and reports its seconds, records/s, the
papers admitted, the CPU time of all its processes and the peak RSS (VmHWM) of the reading process
and of the largest process it started. Measured: the whole
file, ``--where 'categories contains cs.LG'``, ``--where 'update_date >= 2023-01-01'``, and the
same on the ``.gz``. The files are deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ra",
    "to",
    "su",
    "vi",
    "de",
    "an",
    "el",
    "or",
    "is",
    "um",
    "qu",
    "ex",
    "pro",
    "con",
    "trans",
    "inter",
    "tion",
    "ment",
    "al",
    "ic",
    "ous",
    "ive",
    "er",
]
FIRST = [
    "Anna",
    "Wei",
    "Pavel",
    "Maria",
    "José",
    "Li",
    "Ahmed",
    "Sofia",
    "Kenji",
    "Olga",
    "Jean",
    "Priya",
    "Tomás",
    "Elena",
    "David",
    "Chen",
    "Fatima",
    "Lukas",
]
LAST = [
    "Nadolsky",
    "Balázs",
    "Berger",
    "Yuan",
    "Müller",
    "Wang",
    "Smith",
    "Kumar",
    "García",
    "Ivanov",
    "Tanaka",
    "Rossi",
    "Novak",
    "Silva",
    "Kim",
    "Öztürk",
]
# (primary category, weight, categories it is cross-listed in with their chance): cs.LG ends at ~7 %
CATEGORIES = [
    ("hep-ph", 4, [("hep-ex", 0.2)]),
    ("hep-th", 4, [("gr-qc", 0.2)]),
    ("gr-qc", 2, [("astro-ph.CO", 0.2)]),
    ("astro-ph.GA", 3, [("astro-ph.CO", 0.2)]),
    ("astro-ph.SR", 3, [("astro-ph.EP", 0.1)]),
    ("astro-ph.HE", 2, []),
    ("cond-mat.mes-hall", 3, [("cond-mat.mtrl-sci", 0.3)]),
    ("cond-mat.str-el", 3, [("cond-mat.supr-con", 0.2)]),
    ("cond-mat.mtrl-sci", 3, []),
    ("cond-mat.stat-mech", 2, [("physics.comp-ph", 0.1), ("cs.LG", 0.03)]),
    ("quant-ph", 5, [("cs.LG", 0.02), ("cs.IT", 0.05)]),
    ("physics.optics", 2, []),
    ("physics.flu-dyn", 1.5, [("cs.LG", 0.05)]),
    ("math.AP", 2.5, []),
    ("math.CO", 2.5, []),
    ("math.PR", 2, [("stat.TH", 0.1)]),
    ("math.AG", 2, []),
    ("math.NT", 1.5, []),
    ("math.OC", 2, [("cs.LG", 0.1), ("cs.SY", 0.2)]),
    ("cs.CV", 5, [("cs.LG", 0.15), ("cs.AI", 0.15)]),
    ("cs.LG", 3, [("stat.ML", 0.4), ("cs.AI", 0.3)]),
    ("cs.CL", 3, [("cs.LG", 0.15), ("cs.AI", 0.3)]),
    ("cs.AI", 1.5, [("cs.LG", 0.3)]),
    ("cs.RO", 1.5, [("cs.LG", 0.15), ("cs.SY", 0.2)]),
    ("cs.IT", 2, [("math.IT", 1.0)]),
    ("cs.CR", 1.5, [("cs.LG", 0.1)]),
    ("cs.DS", 1, [("cs.DM", 0.2)]),
    ("stat.ML", 1, [("cs.LG", 0.6)]),
    ("stat.ME", 1.5, [("stat.ML", 0.1)]),
    ("eess.SP", 1.5, [("cs.LG", 0.15), ("cs.IT", 0.2)]),
    ("eess.IV", 1, [("cs.CV", 0.5), ("cs.LG", 0.1)]),
    ("q-bio.NC", 1, [("cs.NE", 0.2)]),
    ("econ.EM", 0.5, [("stat.ME", 0.3)]),
]
LICENSES = [
    None,
    None,
    "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
    "http://creativecommons.org/licenses/by/4.0/",
]
CONDITIONS = ["categories contains cs.LG", "update_date >= 2023-01-01"]


class Snapshot:
    """Makes records of the arXiv snapshot's schema, each one different (``record(n)``)."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        rng = self.rng
        self.words = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(60_000)})
        rng.shuffle(self.words)
        self.cum_words = list(_cumulative([1 / (rank + 10) for rank in range(len(self.words))]))  # Zipf-like
        self.cum_categories = list(_cumulative([weight for _, weight, _ in CATEGORIES]))
        years = list(range(2007, 2026))
        self.years, self.cum_years = years, list(_cumulative([1 + (year - 2007) * 0.35 for year in years]))
        self.serials: dict[str, int] = {}

    def text(self, words: int, wrap: int) -> str:
        """``words`` words wrapped every ``wrap`` words, with arXiv's line breaks and indents."""
        chosen = self.rng.choices(self.words, cum_weights=self.cum_words, k=words)
        lines = [" ".join(chosen[start : start + wrap]) for start in range(0, words, wrap)]
        return "\n".join(lines)

    def record(self) -> dict:
        """One record of the snapshot's schema."""
        rng = self.rng
        year = rng.choices(self.years, cum_weights=self.cum_years)[0]
        created = datetime.datetime(
            year, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
        )
        month = created.strftime("%y%m")
        self.serials[month] = serial = self.serials.get(month, 0) + 1
        primary, _, cross = CATEGORIES[rng.choices(range(len(CATEGORIES)), cum_weights=self.cum_categories)[0]]
        categories = [primary, *(name for name, chance in cross if rng.random() < chance)]
        names = [(rng.choice(FIRST), rng.choice(LAST)) for _ in range(min(10, 1 + int(rng.expovariate(0.45))))]
        versions, when = [], created
        for number in range(rng.choice((1, 1, 2, 2, 3))):
            versions.append({"version": f"v{number + 1}", "created": when.strftime("%a, %-d %b %Y %H:%M:%S GMT")})
            when += datetime.timedelta(days=rng.randint(5, 300))
        updated = min(when.date(), datetime.date(2025, 12, 31))
        title = self.text(rng.randint(6, 16), 9).title().replace("\n", "\n  ")
        abstract = "  " + self.text(rng.randint(85, 130), 11) + "\n"
        return {
            "id": f"{month}.{serial:05d}",
            "submitter": " ".join(names[0]),
            "authors": ", ".join(f"{first[0]}. {last}" for first, last in names),
            "title": title,
            "comments": f"{rng.randint(4, 40)} pages, {rng.randint(0, 15)} figures" if rng.random() < 0.7 else None,
            "journal-ref": f"Phys. Rev. D {rng.randint(50, 110)}, {rng.randint(1000, 9999)} ({year})"
            if rng.random() < 0.3
            else None,
            "doi": f"10.1103/PhysRevD.{rng.randint(50, 110)}.{rng.randint(1000, 99999)}"
            if rng.random() < 0.4
            else None,
            "report-no": f"ANL-HEP-PR-{year % 100:02d}-{rng.randint(1, 99)}" if rng.random() < 0.1 else None,
            "categories": " ".join(categories),
            "license": rng.choice(LICENSES),
            "abstract": abstract,
            "versions": versions,
            "update_date": updated.isoformat(),
            "authors_parsed": [[last, f"{first[0]}.", ""] for first, last in names],
        }


def _cumulative(weights):
    total = 0.0
    for weight in weights:
        total += weight
        yield total


def write_snapshot(path: Path, records: int, seed: int = 0) -> dict:
    """Write ``records`` records to ``path`` a line at a time; the share of each condition's subset."""
    snapshot, started, counts = Snapshot(seed), time.perf_counter(), {"cs.LG": 0, "2023+": 0}
    with open(path, "w", encoding="utf-8", buffering=8 * 1024 * 1024) as handle:
        for number in range(records):
            record = snapshot.record()
            counts["cs.LG"] += "cs.LG" in record["categories"].split()
            counts["2023+"] += record["update_date"] >= "2023-01-01"
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            if number and number % 500_000 == 0:
                print(f"  written {number:,} records", file=sys.stderr, flush=True)
    return {
        "records": records,
        "bytes": path.stat().st_size,
        "seconds": round(time.perf_counter() - started, 1),
        **counts,
    }


def write_gzip(source: Path, path: Path, compressed_bytes: float) -> dict:
    """The first lines of ``source``, gzip'd (level 6, gzip's own default), until about ``compressed_bytes``
    are written."""
    started, lines = time.perf_counter(), 0
    with (
        open(source, "rb") as lines_in,
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as out,
    ):
        for line in lines_in:
            out.write(line)
            lines += 1
            if lines % 10_000 == 0 and raw.tell() >= compressed_bytes:
                break
    return {"records": lines, "bytes": path.stat().st_size, "seconds": round(time.perf_counter() - started, 1)}


def measure(path: str, where: list[str]) -> dict:
    """Read and admit ``path`` in this process (the build's reading, no embedding): its figures."""
    from paperscope.embed.readers import Reading
    from paperscope.embed.readers.admission import Admission, admitted_papers
    from paperscope.limits import READ_WORKERS

    before = _memory_mb("VmRSS")
    admission = Admission(Reading(where=tuple(where), workers=READ_WORKERS))
    total, done, next_line = Path(path).stat().st_size, 0, 0.1

    def progress(count: int) -> None:
        nonlocal done, next_line
        done += count
        if done >= next_line * total:
            print(f"  {path}: {done / total:.0%} read", file=sys.stderr, flush=True)
            next_line += 0.1

    started, cpu = time.perf_counter(), time.process_time()
    papers = sum(1 for _ in admitted_papers([path], None, admission, announce=False, on_bytes=progress))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    records = papers + admission.report.dropped() + admission.reading.left_out
    readers = resource.getrusage(resource.RUSAGE_CHILDREN)  # the reading processes, ended by now
    reading_cpu = readers.ru_utime + readers.ru_stime
    return {
        "records": records,
        "papers": papers,
        "left_out": admission.reading.left_out,
        "seconds": round(seconds, 1),
        "records_per_s": round(records / seconds),
        "reading_processes": READ_WORKERS,
        "cpu_seconds": round(cpu + reading_cpu, 1),  # the machine is shared: CPU time says what the reading costs
        "main_cpu_seconds": round(cpu, 1),
        "records_per_cpu_s": round(records / (cpu + reading_cpu)),
        "load_average": os.getloadavg(),
        "peak_rss_mb": round(_memory_mb("VmHWM")),
        "peak_rss_reading_process_mb": round(readers.ru_maxrss / 1024),
        "rss_before_read_mb": round(before),
    }


def _memory_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measured(path: Path, where: list[str]) -> dict:
    """:func:`measure` in a fresh process, so that its peak RSS is the reading's own."""
    command = [sys.executable, "-m", "benchmarks.arxiv_snapshot", "--measure", str(path)]
    command += [item for condition in where for item in ("--where", condition)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    """Make the files, measure each reading in a fresh process, print the table, write the JSON."""
    parser = common_parser(__doc__, "arxiv_snapshot")
    parser.add_argument("--records", type=int, default=2_700_000, help="records in the synthetic snapshot")
    parser.add_argument("--gz-bytes", type=float, default=1e9, help="compressed size of the .gz copy (0: none)")
    parser.add_argument("--out", type=Path, help="folder for the files (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--reuse", action="store_true", help="measure the files a --keep run left in --out")
    parser.add_argument("--make-only", action="store_true", help="make the files, measure nothing (with --keep)")
    parser.add_argument("--subsets-only", action="store_true", help="with --reuse: measure the subsets again only")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--where", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.where)))
        return
    folder = args.out or Path(tempfile.mkdtemp(prefix="paperscope-arxiv-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = {"load_average_at_start": os.getloadavg(), "cpus": os.cpu_count(), "runs": {}}
    if args.subsets_only:  # the whole-file runs kept from the last results
        kept = json.loads(Path(args.json).read_text())["runs"]
        results["runs"] = {label: run for label, run in kept.items() if not run["where"]}
    snapshot, packed = folder / "arxiv-metadata-snapshot.json", folder / "arxiv-metadata-snapshot.json.gz"
    made = folder / "made.json"  # what was written, for --reuse
    try:
        if args.reuse and made.exists():
            results |= json.loads(made.read_text())
        else:
            results["snapshot"] = write_snapshot(snapshot, args.records)
            if args.gz_bytes:
                results["gz"] = write_gzip(snapshot, packed, args.gz_bytes)
            made.write_text(json.dumps({key: results[key] for key in ("snapshot", "gz") if key in results}))
        print(f"made: {made.read_text()}", file=sys.stderr)
        if args.make_only:
            return
        files = [("snapshot", snapshot), *([("gz", packed)] if "gz" in results else [])]
        for name, path in files:
            for where in [*([[]] if not args.subsets_only else []), *([condition] for condition in CONDITIONS)]:
                label = f"{name}{': ' + where[0] if where else ''}"
                results["runs"][label] = {"file": name, "where": where, **measured(path, where)}
                print(f"{label}: {results['runs'][label]}", file=sys.stderr, flush=True)
                Path(args.json).write_text(json.dumps(results, indent=2))
    finally:
        if not args.keep:
            for path in (snapshot, packed, made):
                path.unlink(missing_ok=True)
            if args.out is None:
                shutil.rmtree(folder)
    if args.make_only:
        return
    rows = [
        [
            label,
            f"{results[run['file']]['bytes'] / 1e9:.2f} GB",
            f"{run['records']:,}",
            f"{run['papers']:,}",
            f"{run['seconds']:.1f}",
            f"{run['records_per_s']:,}",
            f"{run['records_per_cpu_s']:,}",
            f"{run['peak_rss_mb']:,} + {run['peak_rss_reading_process_mb']:,} a reading process",
        ]
        for label, run in results["runs"].items()
    ]
    header = ["reading", "file", "records", "papers", "seconds", "records/s", "records/CPU-s", "peak RSS (MB)"]
    report(header, rows, results, args.json)


if __name__ == "__main__":
    main()
