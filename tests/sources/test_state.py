"""The resumable file of a fetch (sources/state.py): what a kill between the lines and the state
leaves is cut back, the ids kept are not written twice, and what is not a fetch's is not touched."""

from __future__ import annotations

import json

import pytest

from paperscope.errors import UserError
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources.state import FetchWriter, read_state, state_path

QUERY = SourceQuery("arxiv", (("category", "cs.LG"),))


def test_lines_written_after_the_last_commit_are_cut_and_kept_ids_not_written_again(tmp_path):
    out = tmp_path / "out.jsonl"
    writer = FetchWriter(QUERY, out)
    writer.commit([{"id": "a", "title": "A"}, {"id": "b", "title": "B"}], {"token": "t1"}, watermark="2025-01-02")
    committed = out.read_bytes()
    with open(out, "ab") as file:  # killed after appending page 2, before its state was written
        file.write(b'{"id": "c", "title": "C"}\n{"id": "d", "ti')
    again = FetchWriter(QUERY, out)
    assert out.read_bytes() == committed and again.resumed and again.state.cursor == {"token": "t1"}
    again.commit([{"id": "b", "title": "B"}, {"id": "c", "title": "C"}], {"token": ""}, "2025-01-01", complete=True)
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["a", "b", "c"]
    state = json.loads(state_path(out).read_text())
    assert (state["format"], state["pages"], state["records"], state["complete"]) == (1, 2, 3, True)
    assert state["watermark"] == "2025-01-02" and state["committed_bytes"] == out.stat().st_size  # the newest kept
    assert state["query"] == QUERY.to_json() and read_state(out).query == QUERY


def test_a_file_no_fetch_wrote_and_another_querys_file_are_refused_unless_restart(tmp_path):
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"id": "x", "title": "what a user has"}\n')
    with pytest.raises(UserError, match="not a fetch's"):
        FetchWriter(QUERY, mine)
    assert mine.read_text().startswith('{"id": "x"') and not state_path(mine).exists()
    fetched = tmp_path / "fetched.jsonl"
    FetchWriter(QUERY, fetched).commit([{"id": "a"}], {"token": "t"})
    other = QUERY.with_filters(category="cs.AI")
    with pytest.raises(UserError, match=r"holds a fetch of arxiv category=cs\.LG, not arxiv category=cs\.AI"):
        FetchWriter(other, fetched)
    restarted = FetchWriter(other, fetched, FetchOptions(restart=True))
    assert fetched.read_bytes() == b"" and restarted.state.pages == 0 and not restarted.resumed
    state_path(fetched).write_text("{not json")
    with pytest.raises(UserError, match="not a fetch state paperscope can read"):
        read_state(fetched)


def test_a_long_harvest_keeps_the_ids_of_its_last_pages_only(tmp_path):
    """Memory a few pages' worth however long the harvest: a repeat from the last pages is written
    once, also after going on in a new process (the ids travel in the state), and the state stays
    the size of a few pages."""
    out = tmp_path / "long.jsonl"
    writer = FetchWriter(QUERY, out)
    for page in range(20):  # each page repeats the previous page's last record, as a cursor's overlap does
        ids = [f"{page * 100 + n}" for n in range(-1 if page else 0, 100)]
        writer.commit([{"id": paper_id} for paper_id in ids], {"token": f"t{page}"})
    again = FetchWriter(QUERY, out)  # killed here; the same command goes on
    again.commit([{"id": "1999"}, {"id": "2000"}], {"token": ""}, complete=True)
    written = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert written == [str(n) for n in range(2001)]  # every record once, in order
    assert [len(page) for page in again.state.recent_ids] == [100, 100, 1]  # the last RECENT_PAGES pages only
    assert state_path(out).stat().st_size < 10_000
