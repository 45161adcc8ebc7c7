"""The corpus's own columns, kept typed (text, number, date, list of text): read from JSON lines and
CSV, filtered by conditions (at read time and on the index), grouped and compared by topics, shown
by info, returned by --json and the service, written by every export, grown by add; a value
contradicting its column's kind is one line naming file, line and column."""

from __future__ import annotations

import datetime
import json
import operator
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex, UserError, build_index, locations
from paperscope.embed.columns import convert, infer_kind
from paperscope.embed.conditions import parse
from paperscope.embed.readers import Reading, iter_records
from paperscope.limits import STREAM_HEAD_RECORDS
from tests.conftest import paperscope
from tests.support.corpora import read_corpus

DECISIONS = ["Accept (oral)", "Accept (poster)", "Reject"]
TAGS = ["graphs", "diffusion", "privacy", "language"]
HOSTILE = "<img src=x onerror=alert(1)> \x07bell"
KINDS = {  # year: read from "published"
    "year": "number",
    "decision": "text", "review_score": "number", "citations": "number", "published": "date", "tags": "list",
    "note": "text", "corpus_cluster": "text",
}  # fmt: skip


def own_record(i: int) -> dict:
    """The corpus's own columns of paper ``i``: a review score missing for every ninth."""
    return {
        "decision": DECISIONS[i % 3],
        "review_score": None if i % 9 == 4 else round(1 + (i * 37 % 90) / 10, 1),
        "citations": i * 7 % 50,
        "published": (datetime.date(2022, 1, 3) + datetime.timedelta(days=23 * i)).isoformat(),
        "tags": [tag for k, tag in enumerate(TAGS) if (i >> k) & 1],
        "note": HOSTILE if i == 5 else f"note {i}",
        "cluster": f"theirs-{i % 2}",  # a name the index uses itself: kept as corpus_cluster
    }


def conference_records() -> list[dict]:
    """The sample's 38 abstracts with ids, titles and the columns of :func:`own_record`."""
    papers, _ = read_corpus(locations.bundled_corpus())
    return [
        {"id": f"p{i}", "title": row.title, "abstract": row.abstract, **own_record(i)}
        for i, row in enumerate(papers.itertuples())
    ]


# Session-wide, not module-wide: this module has tests in both tiers, which run apart (tests/conftest.py).
@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> tuple[Path, list[dict]]:
    """:func:`conference_records` as JSON lines."""
    folder = tmp_path_factory.mktemp("columns")
    records = conference_records()
    path = folder / "conference.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records))
    return path, records


@pytest.fixture(scope="session")
def index(corpus) -> PaperIndex:
    path, _ = corpus
    build_index([path], path.parent / "index")
    return PaperIndex.load(path.parent / "index")


COMPARE = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge}  # fmt: skip


def expected(records: list[dict], condition: str) -> set[str]:
    """The ids of the records meeting ``condition``, worked out here from the records as written."""
    parsed = parse(condition)
    column, op, value = parsed.column, parsed.operator, parsed.value
    kept = set()
    for record in records:
        found = record.get(column)
        if found in (None, "", []):
            hit = op == "!="
        elif isinstance(found, list):
            hit = (value.lower() in [tag.lower() for tag in found]) != (op == "!=")
        elif column == "published":  # ISO dates compare as their text
            hit = COMPARE[op](found, value)
        elif isinstance(found, (int, float)):
            hit = COMPARE[op](found, float(value))
        elif op == "contains":
            hit = value.lower() in found.lower()
        else:
            hit = COMPARE[op](found.lower(), value.lower())
        if hit:
            kept.add(record["id"])
    return kept


def test_kinds_are_told_from_values():
    assert infer_kind([1, 2.5, None, "3"]) == "number"
    assert infer_kind(["2024-01-02", "2023-12-31T10:00:00Z", ""]) == "date"
    assert infer_kind([["a"], [], None]) == "list"
    assert infer_kind(["12", "twelve"]) == "text"
    assert infer_kind([True, False]) == "text"
    assert infer_kind([None, ""]) == "text"
    assert infer_kind(["n/a", 3, "NULL", "-"]) == "number" and convert("N/A", "number") is None
    assert convert("  7 ", "number") == 7 and convert("7.5", "number") == 7.5
    assert convert("2024-02-30", "text") == "2024-02-30"
    with pytest.raises(ValueError, match="not a date"):
        convert("2024-02-30", "date")
    with pytest.raises(ValueError, match="not a number"):
        convert("high", "number")
    assert convert([{"name": "A"}, "", "b"], "list") == ["A", "b"]


def test_index_keeps_every_column_typed(index, corpus):
    _, records = corpus
    assert index.columns() == KINDS
    table = index.table(index.rows([r["id"] for r in records])).to_pylist()
    for record, paper in zip(records, table, strict=True):
        assert paper["decision"] == record["decision"] and paper["citations"] == record["citations"]
        assert paper["review_score"] == record["review_score"]
        assert paper["published"] == datetime.date.fromisoformat(record["published"])
        assert (paper["tags"] or []) == record["tags"]
        assert paper["corpus_cluster"] == record["cluster"] and paper["cluster"] != record["cluster"]
    assert table[5]["note"] == HOSTILE.replace("\x07", "\x07")  # kept as it was: escaped only when shown


@pytest.mark.parametrize(
    "condition",
    [
        "decision = accept (oral)", "decision != Reject", "decision contains accept", "review_score >= 5.5",
        "review_score < 3", "citations = 14", "published >= 2023-06-01", "published < 2022-06-01",
        "tags contains graphs", "tags = PRIVACY", "tags != language", "note contains onerror",
    ],
)  # fmt: skip
def test_conditions_keep_the_papers_their_values_say(index, corpus, condition):
    _, records = corpus
    mask = index.where(conditions=[condition])
    assert set(index.table(np.flatnonzero(mask), ["id"]).column("id").to_pylist()) == expected(records, condition)
    assert 0 < mask.sum() < len(records)  # each condition here splits the corpus


@pytest.mark.slow
def test_lookups_keep_to_the_conditions(index, corpus):
    _, records = corpus
    wanted = expected(records, "review_score >= 5") & expected(records, "tags contains diffusion")
    within = index.where(conditions=["review_score >= 5", "tags contains diffusion"])
    found = index.search("generative models and images", k=20, within=within)
    assert set(found.ids) == wanted  # every paper meeting both, and no other
    done = paperscope(
        "similar", "p1", "--index", str(index.folder), "--where", "decision = Reject", "-k", "50", "--json"
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert {a["id"] for a in answers} == expected(records, "decision = Reject") - {"p1"}
    first = next(a for a in answers if a["id"] == "p2")
    assert first["published"] == records[2]["published"] and first["tags"] == records[2]["tags"]
    assert first["review_score"] == records[2]["review_score"] and first["corpus_cluster"] == "theirs-0"
    shown = paperscope(
        "search", "privacy", "--index", str(index.folder), "--show", "note", "--show", "tags", "-k", "50"
    )
    assert "[note: <img src=x onerror=alert(1)> \\x07bell]" in shown.stdout  # control characters shown escaped
    assert "\x07" not in shown.stdout


def _held(values: list) -> str:
    """What a column of these values holds, as an empty answer says it: most common first."""
    counts = Counter(values)
    return "its values include " + ", ".join(sorted(counts, key=lambda value: (-counts[value], value))[:8])


@pytest.mark.slow
def test_an_empty_answer_says_why_in_one_line_and_is_no_error(index, corpus):
    _, records = corpus
    years = sorted(int(record["published"][:4]) for record in records)
    dates = sorted(record["published"] for record in records)
    citations = sorted(record["citations"] for record in records)
    both = ("decision = Reject", "decision contains oral")  # each meets papers, no paper both
    reject, oral = (len(expected(records, condition)) for condition in both)
    assert reject and oral and not expected(records, both[0]) & expected(records, both[1])
    for arguments, why in [
        (["search", "graphs", "--where", "decision = Accept"],
         f"no paper matches decision = Accept; {_held([r['decision'] for r in records])}"),
        (["similar", "p1", "--where", "year >= 2030", "--json"],
         f"no paper matches year >= 2030; its values run from {years[0]} to {years[-1]}"),
        (["similar", "p1", "--where", "published < 2000-01-01"],
         f"no paper matches published < 2000-01-01; its values run from {dates[0]} to {dates[-1]}"),
        (["similar", "p1", "--where", "tags = knitting"],
         f"no paper matches tags = knitting; {_held([tag for r in records for tag in r['tags']])}"),
        (["similar", "p1", "--where", both[0], "--where", "citations > 98"],
         f"no paper matches citations > 98; its values run from {citations[0]} to {citations[-1]}"),
        (["search", "graphs", "--where", both[0], "--where", both[1]],
         f"no paper matches {both[0]} and {both[1]} together; alone, {both[0]} matches {reject} papers, "
         f"{both[1]} matches {oral} papers"),
    ]:  # fmt: skip
        done = paperscope(*arguments, "--index", index.folder, here=True)
        assert done.returncode == 0, done.stderr  # a valid question with no answer
        out, err = done.stdout, done.stderr
        assert out.strip() == ("[]" if "--json" in arguments else "") and err == why + "\n"
    both_ways = paperscope("similar", "p1", "p2", "--not", "p2", "--index", index.folder, here=True)
    assert both_ways.returncode == 2  # liked and not: no question
    assert both_ways.stderr == (
        "paperscope: error: 'p2': both a paper to be like and one to be unlike (not); give each once\n"
    )


def test_info_lists_the_columns_and_their_kinds(index):
    text = paperscope("info", "--index", str(index.folder))
    line = next(line for line in text.stdout.splitlines() if line.strip().startswith("columns"))
    assert line.split(None, 1)[1] == ", ".join(f"{name} ({kind})" for name, kind in KINDS.items())
    assert json.loads(paperscope("info", "--index", str(index.folder), "--json").stdout)["columns"] == KINDS


def test_bad_conditions_are_one_line(index):
    for condition, message in [
        ("nosuch = 1", "no column 'nosuch' for 'nosuch = 1'; the columns are: year, decision, review_score"),
        ("review_score >= high", "'high' is not a number"),
        ("published > soon", "'soon' is not a date (YYYY-MM-DD)"),
        ("tags >= graphs", "'>=' compares numbers and dates; 'tags' holds lists of text: use = or contains"),
        ("review_score contains 5", "'review_score' holds numbers"),
        ("just words", "is not a condition"),
    ]:
        done = paperscope("search", "graphs", "--index", str(index.folder), "--where", condition)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


@pytest.mark.slow
def test_build_where_reads_only_the_records_meeting_it(corpus, tmp_path):
    path, records = corpus
    done = paperscope("build", str(path), "-o", str(tmp_path / "subset"), "--where", "tags contains graphs",
               "--filter", "published >= 2022-06-01")  # fmt: skip
    assert done.returncode == 0, done.stderr
    subset = PaperIndex.load(tmp_path / "subset")
    wanted = expected(records, "tags contains graphs") & expected(records, "published >= 2022-06-01")
    assert set(subset.table(columns=["id"]).column("id").to_pylist()) == wanted
    assert f"{len(records) - len(wanted)} records left out by 'tags contains graphs' and" in done.stderr
    none = paperscope("build", str(path), "-o", str(tmp_path / "none"), "--where", "decision = Maybe")
    assert none.returncode == 2 and "no paper of" in none.stderr and "meets 'decision = Maybe'" in none.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.slow
def test_a_value_against_its_columns_kind_is_one_line(tmp_path):
    count = STREAM_HEAD_RECORDS + 1  # the kinds are told from the first records; the bad value comes after
    rows = ["id,abstract,score,day"] + [f"q{i},Abstract {i} about graphs.,{i},2024-01-01" for i in range(count)]
    rows.append("q9,Abstract nine about graphs.,high,2024-01-09")
    (tmp_path / "scores.csv").write_text("\n".join(rows) + "\n")
    done = paperscope("build", str(tmp_path / "scores.csv"), "-o", str(tmp_path / "index"))
    assert done.returncode == 2 and done.stderr.count("\n") == 2  # the columns' line, then the error
    assert done.stderr.splitlines()[-1] == (
        f"paperscope: error: {tmp_path / 'scores.csv'}:{count + 2}: column 'score': 'high' is not a number, but the "
        "column holds numbers"
    )
    assert not (tmp_path / "index").exists()
    (tmp_path / "words.jsonl").write_text(json.dumps({"id": "w", "abstract": "Words.", "day": "Tuesday"}) + "\n")
    (tmp_path / "days.csv").write_text("id,abstract,day\nd1,First.,2024-01-01\nd2,Second.,n/a\n")
    reading = Reading()  # one build's files: the first to have a column tells its kind
    days = [record["extra"]["day"] for record in iter_records(tmp_path / "days.csv", reading=reading)]
    assert days == [datetime.date(2024, 1, 1), None]
    with pytest.raises(UserError, match=r"words.jsonl:1: column 'day': 'Tuesday' is not a date .* \(as .*days.csv"):
        list(iter_records(tmp_path / "words.jsonl", reading=reading))


def test_topics_by_numbers_dates_and_lists(index, corpus):
    _, records = corpus
    scored = [r for r in records if r["review_score"] is not None]
    shares = index.topics.by("review_score", bins=[1, 4, 7, 10])
    assert shares.attrs["values"] == ["1–4", "4–7", "7–10"]
    assert sum(shares.attrs["papers"].values()) == len(scored)
    assert shares.attrs["papers"]["7–10"] == sum(7 <= r["review_score"] <= 10 for r in scored)
    quartiles = index.topics.by("review_score")  # more values than shown apart: quartiles
    assert len(quartiles.attrs["values"]) == 4 and sum(quartiles.attrs["papers"].values()) == len(scored)
    by_year = index.topics.by("published")
    assert by_year.attrs["over_time"] and by_year.attrs["values"] == sorted({int(r["published"][:4]) for r in records})
    assert "change" in by_year
    tags = index.topics.by("tags")
    assert tags.attrs["papers"] == {tag: sum(tag in r["tags"] for r in records) for tag in tags.attrs["values"]}
    for value in tags.attrs["values"]:
        assert np.isclose(tags[value].sum(), 1.0)
    with pytest.raises(UserError, match="bins group numbers and dates; 'tags' holds list"):
        index.topics.by("tags", bins=3)


@pytest.mark.slow
def test_topics_compare_groups_by_conditions(index, corpus):
    _, records = corpus
    done = paperscope(
        "topics", "--index", str(index.folder), "--compare", "review_score >= 6", "review_score < 4", "--json"
    )
    assert done.returncode == 0, done.stderr
    compared = json.loads(done.stdout)
    assert sum(row["papers_a"] for row in compared) == len(expected(records, "review_score >= 6"))
    assert sum(row["papers_b"] for row in compared) == len(expected(records, "review_score < 4"))
    members = index.topics.compare(("tags", "privacy"), ("decision", "reject"))
    assert members.attrs["papers"] == [
        len(expected(records, "tags = privacy")),
        len(expected(records, "decision = reject")),
    ]
    text = paperscope("topics", "--index", str(index.folder), "--by", "citations", "--bins", "0,25,50")
    assert text.returncode == 0 and "0–25" in text.stdout and "25–50" in text.stdout


def test_exports_carry_the_columns(index, corpus, tmp_path):
    _, records = corpus
    index.collections.create("picked", ids=["p5", "p6"])
    five, six = records[5], records[6]
    plain = [index.collections.export_text("picked", fmt) for fmt in ("bib", "ris", "csl")]
    assert not any("decision" in text or "review_score" in text for text in plain)  # only when asked
    bib = index.collections.export_text("picked", "bib", corpus_fields=True)  # under names no style reads
    assert f"paperscope-decision = {{{five['decision']}}}" in bib and "paperscope-tags = {graphs, privacy}" in bib
    assert f"paperscope-review_score = {{{six['review_score']:g}}}" in bib
    assert f"paperscope-published = {{{six['published']}}}" in bib and "\tdecision" not in bib  # p5: 0b0101
    ris = index.collections.export_text("picked", "ris", corpus_fields=True)
    assert f"N1  - decision: {six['decision']}" in ris and "N1  - tags: diffusion, privacy" in ris  # p6: 0b0110
    items = json.loads(index.collections.export_text("picked", "csl", corpus_fields=True))
    assert items[1]["custom"]["tags"] == six["tags"] and items[1]["custom"]["citations"] == six["citations"]
    csv_text = index.collections.export_text("picked", "csv")
    header, first = csv_text.splitlines()[:2]
    assert "decision" in header.split(",") and "graphs; privacy" in first


@pytest.mark.slow
def test_add_grows_a_new_column_and_keeps_kinds(index, corpus, tmp_path):
    import shutil

    folder = tmp_path / "grown"
    shutil.copytree(index.folder, folder)
    new = {"id": "n1", "title": "Sparse graph transformers", "abstract": "Transformers on sparse graphs scale "
           "linearly with edges; we show it on molecule benchmarks.", "review_score": 8, "funding": "ERC"}  # fmt: skip
    (tmp_path / "new.jsonl").write_text(json.dumps(new) + "\n")
    done = paperscope("add", str(tmp_path / "new.jsonl"), "--index", str(folder))
    assert done.returncode == 0, done.stderr
    grown = PaperIndex.load(folder)
    assert grown.columns() == {**KINDS, "funding": "text"}
    assert grown.table(grown.rows(["n1", "p0"]), ["funding", "review_score"]).to_pylist() == [
        {"funding": "ERC", "review_score": 8}, {"funding": None, "review_score": 1.0}]  # fmt: skip
    (tmp_path / "bad.jsonl").write_text(json.dumps({**new, "id": "n2", "abstract": "Other.", "published": "soon"}))
    bad = paperscope("add", str(tmp_path / "bad.jsonl"), "--index", str(folder))
    assert bad.returncode == 2 and re.search(r"bad.jsonl:1: column 'published': 'soon' is not a date", bad.stderr)
    assert len(PaperIndex.load(folder)) == len(grown)


def test_the_service_filters_and_answers_the_columns(index, corpus):
    from fastapi.testclient import TestClient

    from paperscope.ui.note_header import NOTE_HEADER
    from paperscope.ui.service import create_app

    _, records = corpus
    client = TestClient(create_app(index.folder))
    assert client.get("/healthz").json()["columns"] == KINDS
    body = {"text": "graph neural networks", "k": 50, "filters": {"conditions": ["tags contains graphs"]}}
    answer = client.post("/search", json=body)
    assert answer.status_code == 200
    assert {paper["id"] for paper in answer.json()} == expected(records, "tags contains graphs")
    assert all(
        "graphs" in paper["tags"] and re.fullmatch(r"\d{4}-\d\d-\d\d", paper["published"]) for paper in answer.json()
    )
    wrong = client.post("/search", json={**body, "filters": {"conditions": ["published >= soon"]}})
    assert (
        wrong.status_code == 422 and wrong.json()["error"] == "'published >= soon': 'soon' is not a date (YYYY-MM-DD)"
    )
    years = sorted(int(record["published"][:4]) for record in records)
    held = f"its values run from {years[0]} to {years[-1]}"
    for filters, note in [  # a valid question with no answer: 200, and the note header says why
        ({"years": [2030, 2031]}, f"no paper matches years 2030 to 2031; {held}"),
        ({"years": 1999}, f"no paper matches year 1999; {held}"),
        ({"conditions": ["decision = Accept"]}, "no paper matches decision = Accept; its values include Accept ("),
    ]:
        empty = client.post("/similar", json={"ids": ["p1"], "filters": filters})
        assert empty.status_code == 200 and empty.json() == [] and empty.headers[NOTE_HEADER].startswith(note)


@pytest.mark.slow
def test_map_colours_by_a_column(index, tmp_path):
    done = paperscope(
        "map", "--index", str(index.folder), "-o", str(tmp_path / "map.html"), "--colour-by", "review_score"
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "map.html").read_text()
    assert '"review_score"' in page and "onerror=alert(1)" not in page.replace("\\u003c", "<").split("colour")[0]
    wrong = paperscope("map", "--index", str(index.folder), "-o", str(tmp_path / "map.png"), "--colour-by", "nosuch")
    assert wrong.returncode == 2 and "no column 'nosuch' to colour by; the columns are: year, decision" in wrong.stderr
