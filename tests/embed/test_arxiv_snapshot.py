"""A file of the arXiv metadata snapshot's schema builds a subset through the real command line (build --where)."""

from __future__ import annotations

import datetime
import json
import random
import re

import pytest

from paperscope import PaperIndex
from tests.conftest import paperscope

pytestmark = pytest.mark.slow
WORDS = [
    "graph",
    "diffusion",
    "kernel",
    "policy",
    "robot",
    "theorem",
    "vision",
    "speech",
    "agent",
    "sparse",
    "bound",
    "proof",
    "lattice",
    "quantum",
]
CATEGORIES = [
    "cs.LG stat.ML",
    "cs.CV cs.LG",
    "hep-th",
    "math.AP",
    "quant-ph",
    "cs.CL",
    "astro-ph.GA",
    "cond-mat.str-el",
]


def snapshot_records(count: int, seed: int = 0) -> list[dict]:
    """``count`` records of the snapshot's schema: every key it has, abstracts wrapped as arXiv wraps them."""
    rng = random.Random(seed)
    records = []
    for number in range(count):
        names = [(rng.choice(["Anna", "Wei", "José"]), rng.choice(["Müller", "Kim", "Smith"])) for _ in range(3)]
        created = datetime.date(2015, 1, 1) + datetime.timedelta(days=rng.randint(0, 3200))
        words = [rng.choice(WORDS) for _ in range(60)]
        records.append(
            {
                "id": f"{created:%y%m}.{number:05d}",
                "submitter": " ".join(names[0]),
                "authors": ", ".join(f"{first} {last}" for first, last in names),
                "title": f"On {' '.join(words[:6])}\n  number {number}",
                "comments": "12 pages" if number % 2 else None,
                "journal-ref": None,
                "doi": f"10.1103/PhysRevD.{number}" if number % 3 == 0 else None,
                "report-no": None,
                "categories": rng.choice(CATEGORIES),
                "license": None,
                "abstract": "  " + " ".join(words[:30]) + f"\n{' '.join(words[30:])} case {number}.\n",
                "versions": [{"version": "v1", "created": f"{created:%a, %d %b %Y} 10:00:00 GMT"}] * rng.randint(1, 3),
                "update_date": (created + datetime.timedelta(days=rng.randint(0, 400))).isoformat(),
                "authors_parsed": [[last, first, ""] for first, last in names],
            }
        )
    return records


def test_a_snapshot_subset_builds_with_where(tmp_path):
    records = snapshot_records(4000)  # 3.5 MB: past the first records read at once, so the reading has lines
    path = tmp_path / "arxiv-metadata-oai-snapshot.json"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    wanted = [
        record["id"]
        for record in records
        if "cs.lg" in record["categories"].lower() and record["update_date"] >= "2023-01-01"
    ]
    assert 50 < len(wanted) < len(records) / 10  # a real subset
    build = ["build", path, "-o", tmp_path / "index", "--preset", "fast"]
    done = paperscope(*build, "--where", "categories contains cs.LG", "--where", "update_date >= 2023-01-01")
    assert done.returncode == 0, done.stderr
    assert f"{len(records) - len(wanted):,} records left out by 'categories contains cs.LG' and" in done.stderr
    assert re.search(r"^reading: \d+ % done, about \d+ (s|min) left$", done.stderr, re.MULTILINE), done.stderr
    index = PaperIndex.load(tmp_path / "index")
    columns = index.columns()
    assert (columns["update_date"], columns["versions"], columns["authors_parsed"]) == ("date", "list", "list")
    papers = index.papers
    assert papers["id"].tolist() == wanted
    assert all("cs.lg" in categories.lower() for categories in papers["categories"])
    assert all(day >= datetime.date(2023, 1, 1) for day in papers["update_date"])
    first = next(record for record in records if record["id"] == wanted[0])
    assert list(papers["versions"].iloc[0]) == [f"v1 {first['versions'][0]['created']}"] * len(first["versions"])
    assert list(papers["authors_parsed"].iloc[0]) == [f"{last}; {given}" for last, given, _ in first["authors_parsed"]]
