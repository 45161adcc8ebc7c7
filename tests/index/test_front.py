"""The front: one name per verb, one result type, and nothing else answering."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import paperscope
from paperscope import PaperIndex

MAX_PUBLIC_NAMES = 30


def public_names(thing) -> list[str]:
    return sorted(name for name in dir(thing) if not name.startswith("_"))


def test_the_front_has_at_most_thirty_public_names(sample_index):
    names = public_names(sample_index)
    assert len(names) <= MAX_PUBLIC_NAMES, names
    for verb in ("similar", "search", "recommend", "explain", "map", "topics", "collections", "table"):
        assert verb in names
    for gone in ("similar_rows", "search_rows", "recommend_rows", "results", "frame", "take", "metadata", "ranker"):
        assert gone not in PaperIndex.__dict__ and gone not in names


def test_similar_search_and_recommend_return_one_type_in_three_shapes(sample_index):
    first = sample_index.ids()[0]
    for found in (
        sample_index.similar(first, k=5),
        sample_index.search("graph neural networks", k=5),
        sample_index.recommend(sample_index.ids()[:3], k=5),
    ):
        assert type(found).__name__ == "Results" and len(found) == 5
        frame, table, records = found.to_pandas(), found.to_arrow(), found.to_records()
        assert isinstance(frame, pd.DataFrame) and isinstance(table, pa.Table)
        assert frame["id"].tolist() == table.column("id").to_pylist() == [r["id"] for r in records] == found.ids
        assert frame["rank"].tolist() == [1, 2, 3, 4, 5]
        assert list(frame.columns) == table.column_names and set(records[0]) == set(table.column_names)
        np.testing.assert_allclose(frame["score"], found.scores["score"], atol=1e-6)
        assert frame["title"].tolist() == [sample_index.paper(i)["title"] for i in found.ids]
        json.dumps(records)  # JSON-ready as they are
        assert found.rows.tolist() == sample_index.rows(found.ids).tolist()


def test_an_empty_result_carries_its_note_into_every_shape(sample_index):
    found = sample_index.search("zzqxv", k=5, mode="keyword")
    assert len(found) == 0 and "no paper contains a word" in found.note
    assert found.to_pandas().empty and found.to_pandas().attrs["note"] == found.note
    assert found.to_records() == [] and found.to_arrow().num_rows == 0


def test_an_empty_answer_among_a_mask_says_why(sample_index):
    first, second = sample_index.ids()[:2]
    none, given = np.zeros(len(sample_index), dtype=bool), np.zeros(len(sample_index), dtype=bool)
    given[sample_index.rows([first, second])] = True
    for found in (
        sample_index.similar(first, within=none),
        sample_index.search("graph neural networks", within=none, mode="dense"),
        sample_index.recommend([first], within=none),
    ):
        assert len(found) == 0 and found.note == "no paper passes the filters"
    for found in (
        sample_index.similar([first, second], within=given),
        sample_index.recommend([first, second], within=given),
    ):
        assert len(found) == 0 and found.note == "every paper passing the filters (2 papers) is one of the papers given"


def test_a_typo_is_a_plain_attribute_error_naming_the_class(sample_index):
    """No name of an earlier version answers any more, and a result is not a DataFrame: a typo says so."""
    found = sample_index.similar(sample_index.ids()[0], k=3)
    with pytest.raises(AttributeError, match=r"^'Results' object has no attribute 'empty'$"):
        found.empty  # noqa: B018
    with pytest.raises(TypeError, match="'Results' object is not subscriptable"):
        found["id"]
    with pytest.raises(AttributeError, match=r"^'PaperIndex' object has no attribute 'similar_rows'$"):
        sample_index.similar_rows  # noqa: B018
    with pytest.raises(TypeError, match="'TopicsGroup' object is not callable"):
        sample_index.topics("coarse")
    with pytest.raises(AttributeError, match=r"^module 'paperscope' has no attribute 'near_duplicates'$"):
        paperscope.near_duplicates  # noqa: B018


def test_the_overview_reads_only_the_central_papers_titles(sample_index):
    """``topics.overview`` names each topic's central papers without decoding every abstract."""
    fresh = PaperIndex.load(sample_index.folder)
    overview = fresh.topics.overview("coarse")
    assert "papers" not in fresh.__dict__  # the DataFrame of every paper was never made
    titles = dict(zip(sample_index.papers["id"], sample_index.papers["title"], strict=True))
    for ids, named in zip(overview["central_ids"], overview["central_titles"], strict=True):
        assert named == [titles[i] for i in ids]
