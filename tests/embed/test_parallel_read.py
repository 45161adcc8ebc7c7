"""A large file of JSON lines mapped by several processes (``Reading.workers``, #39): the same records
in the same order, the same lines named, the same errors and the same count left out by --where
as one process reads them."""

import gzip
import json
import resource
from pathlib import Path

import pytest

from paperscope.embed import readers
from paperscope.embed.readers import Reading, forked, iter_records
from paperscope.errors import UserError

NAMES = ["Zoë Müller", "e\u0301lodie  Dupont", "Li\u00a0Wei", "<b>Ada</b> Lovelace", "  Kim \t Park "]


@pytest.fixture
def small_blocks(monkeypatch):
    """Every file counts as large, and is handed over in blocks of ~20,000 characters."""
    monkeypatch.setattr(readers, "PARALLEL_READ_BYTES", 1)
    monkeypatch.setattr(forked, "READ_BLOCK_CHARS", 20_000)


def _record(number: int) -> dict:
    name = NAMES[number % len(NAMES)]
    return {
        "id": f"p{number % 1_900}",  # ids repeat after 1,900 records: duplicates
        "title": f"A  study\nof {name} {number}" if number % 7 else "",
        "abstract": f"  We study problem {number % 2_000} with {name}.\n  It is hard{'  ' * (number % 3)}.\n",
        "score": number % 11 if number % 13 else None,
        "decided": f"202{number % 5}-0{number % 9 + 1}-1{number % 10}",
        "areas": [["ML", name], ["CV"]] if number % 2 else [],
        "versions": [{"version": "v1", "created": f"day {number}"}, {"name": name}],
    }


def _write(path: Path, records: list[dict], ending: str = "\n") -> Path:
    lines = [json.dumps(record, ensure_ascii=number % 2 == 0) for number, record in enumerate(records)]
    lines[500] += "\r"  # a CRLF line
    lines.insert(900, "")  # a blank line and one of spaces, in later blocks: the numbering goes on
    lines.insert(1_400, "   ")
    text = ending.join(lines) + ending
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _read(path: Path, workers: int, where: tuple = ()) -> tuple[list[dict], int]:
    reading = Reading(where=where, workers=workers)
    return list(iter_records(path, announce=False, reading=reading)), reading.left_out


@pytest.mark.parametrize("name", ["papers.jsonl", "papers.json", "papers.jsonl.gz"])
@pytest.mark.parametrize("where", [(), ("score >= 5", "areas = CV")])
def test_several_processes_read_what_one_reads(tmp_path, small_blocks, name, where):
    path = _write(tmp_path / name, [_record(number) for number in range(2_400)])
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    alone, left_alone = _read(path, 1, where)
    together, left_together = _read(path, 2, where)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime > children  # the mapping ran in other processes
    assert together == alone and left_together == left_alone
    assert len(alone) + left_alone == 2_400 and (left_alone > 0) == bool(where)
    last = f"{name}:2402"  # 2,400 records, a blank line and a line of spaces: the last record's line
    assert (alone[-1]["source"] == last) == (_record(2_399)["score"] >= 5 or not where)
    assert {type(record["extra"]["decided"]).__name__ for record in alone} == {"date"}
    if not where:  # as one process makes them: white space joined, NFC, a dict by its name
        assert alone[1]["extra"]["versions"] == ["v1 day 1", "\u00e9lodie Dupont"]
        assert alone[1]["extra"]["areas"] == ["ML; \u00e9lodie Dupont", "CV"]


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ('{"id": "x", "abstract": "text"', "papers.jsonl:2001: broken JSON line"),
        ('{"id": "x", "abstract": "text", "score": "high"}', "papers.jsonl:2001: column 'score': 'high' is not"),
    ],
)
def test_an_error_in_a_later_block_names_its_line_as_one_process_does(tmp_path, small_blocks, broken, message):
    records = [_record(number) for number in range(2_400)]
    path = _write(tmp_path / "papers.jsonl", records)
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2_000] = broken
    path.write_text("\n".join(lines), encoding="utf-8")
    errors = []
    for workers in (1, 2):
        with pytest.raises(UserError) as caught:
            _read(path, workers)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and errors[0].startswith(str(tmp_path / message))


@pytest.mark.slow
def test_a_build_reading_in_several_processes_keeps_what_one_process_keeps(tmp_path, small_blocks, monkeypatch):
    # the sample's abstracts with the own columns of test_columns, read past a head of 5 records in
    # blocks of a few records: the papers' table, own columns and sources included, is the same
    from paperscope import PaperIndex, build_index
    from paperscope.index.build import local_engine
    from tests.embed.test_columns import conference_records

    monkeypatch.setattr(readers, "STREAM_HEAD_RECORDS", 5)
    monkeypatch.setattr(forked, "READ_BLOCK_CHARS", 3_000)
    records = conference_records()
    path = tmp_path / "conference.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records))
    tables = []
    for workers in (1, 2):
        monkeypatch.setattr(local_engine, "READ_WORKERS", workers)
        build_index([path], tmp_path / f"index-{workers}")
        tables.append(PaperIndex.load(tmp_path / f"index-{workers}").table())
    columns = ["id", "title", "abstract", "source", "decision", "review_score", "published", "tags", "note"]
    assert tables[1].select(columns).equals(tables[0].select(columns))
    assert tables[0].column("source").to_pylist()[-1] == f"conference.jsonl:{len(records)}"
