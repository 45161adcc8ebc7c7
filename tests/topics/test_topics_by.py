"""Topics by any column (year, venue, categories, authors) and two groups of papers compared:
on the bundled sample, and on the sample's abstracts given years, venues, categories and authors."""

import json

import numpy as np
import pandas as pd
import pytest

from paperscope import PaperIndex, UserError, build_index, locations
from paperscope.index.analysis.topic_analysis import MAX_VALUES, column_values, group_columns, topics_by, topics_compare
from paperscope.records import records
from tests.conftest import paperscope
from tests.support.corpora import read_corpus

pytestmark = pytest.mark.slow  # every test here uses an index of its own (the sample with years, venues…)
VENUES = ["ICML", "NeurIPS", "ICLR"]
CATEGORIES = [["cs.LG", "cs.CV"], "cs.LG stat.ML", "cs.CL", ["cs.AI"]]  # lists as JSON has them, arXiv's spaced codes


@pytest.fixture(scope="module")
def grouped_index(tmp_path_factory) -> PaperIndex:
    """The sample's abstracts with a year (2023-2025), a venue, categories and one author each."""
    papers, _ = read_corpus(locations.bundled_corpus())
    folder = tmp_path_factory.mktemp("grouped")
    records = [
        {
            "id": f"p{i}",
            "title": row.title,
            "abstract": row.abstract,
            "year": 2023 + i % 3,
            "venue": VENUES[(i * 7) % 5 % 3],
            "categories": CATEGORIES[i % 4],
            "authors": f"Author {i}",
        }
        for i, row in enumerate(papers.itertuples())
    ]
    (folder / "grouped.jsonl").write_text("\n".join(json.dumps(record) for record in records))
    build_index([folder / "grouped.jsonl"], folder / "index")
    return PaperIndex.load(folder / "index")


def _papers_of(index, column: str, value) -> pd.Series:
    """Whether each paper has ``value`` in ``column``, computed here from index.papers."""
    if column == "categories":
        return index.papers[column].map(lambda text: value in text.replace(";", " ").split())
    return index.papers[column] == value


def test_each_values_shares_sum_to_one_and_count_its_papers(sample_index, grouped_index):
    for index, column, level in [
        (sample_index, "venue", "coarse"),
        (sample_index, "venue", "fine"),
        (grouped_index, "venue", "coarse"),
        (grouped_index, "categories", "fine"),
    ]:
        shares = topics_by(index, column, level)
        values, papers = shares.attrs["values"], shares.attrs["papers"]
        assert shares[values].sum().round(9).eq(1.0).all(), (column, level)
        assert [papers[v] for v in values] == sorted((papers[v] for v in values), reverse=True)  # most common first
        topic_column = "coarse_cluster" if level == "coarse" else "cluster"
        for value in values:
            members = index.papers[_papers_of(index, column, value)]
            assert papers[value] == len(members)
            expected = members[topic_column].value_counts(normalize=True)
            got = shares.set_index("cluster")[value]
            assert np.allclose(got.reindex(expected.index), expected) and got.drop(expected.index).eq(0).all()
    assert sample_index.topics.by("venue").equals(topics_by(sample_index, "venue"))


def test_list_values_count_a_paper_once_per_value(grouped_index):
    categories = column_values(grouped_index, "categories")
    assert sorted(categories.unique()) == ["cs.AI", "cs.CL", "cs.CV", "cs.LG", "stat.ML"]
    first = categories.loc[0]  # ["cs.LG", "cs.CV"] stored as "cs.LG; cs.CV"
    assert sorted(first.tolist()) == ["cs.CV", "cs.LG"]
    assert topics_by(grouped_index, "categories").attrs["papers"]["cs.LG"] == sum(i % 4 in (0, 1) for i in range(38))
    assert group_columns(grouped_index) == ["year", "authors", "venue", "categories"]


def test_years_are_every_year_in_order_with_the_change(grouped_index):
    shares = topics_by(grouped_index, "year")
    assert shares.attrs["values"] == [2023, 2024, 2025]
    assert np.allclose(shares["change"], shares[2025] - shares[2023])
    topics = shares[shares["cluster"] >= 0]
    assert (
        topics["change"].is_monotonic_decreasing
        and (shares["cluster"].iloc[-1] == -1) == (grouped_index.papers["coarse_cluster"] < 0).any()
    )


def test_many_values_keep_the_most_common_and_sum_the_rest_as_other(grouped_index):
    shares = topics_by(grouped_index, "authors")
    values = shares.attrs["values"]
    assert len(values) == MAX_VALUES + 1 and values[-1] == "other"
    assert shares.attrs["papers"]["other"] == len(grouped_index) - MAX_VALUES
    assert shares[values].sum().round(9).eq(1.0).all()


def test_compare_counts_the_papers_of_each_group_and_orders_by_ratio(grouped_index):
    compared = grouped_index.topics.compare(("venue", "icml"), ("year", "2024"))  # any case; a year as text
    papers = grouped_index.papers
    in_a, in_b = papers[papers["venue"] == "ICML"], papers[papers["year"] == 2024]
    assert compared.attrs == {"groups": ["venue=icml", "year=2024"], "papers": [len(in_a), len(in_b)]}
    by_topic = compared.set_index("cluster")
    for group, members in (("a", in_a), ("b", in_b)):
        expected = members["coarse_cluster"].value_counts()
        assert by_topic[f"papers_{group}"].sum() == len(members)
        assert (by_topic[f"papers_{group}"].reindex(expected.index) == expected).all()
        assert np.allclose(by_topic[f"share_{group}"], by_topic[f"papers_{group}"] / len(members))
    topics = compared[compared["cluster"] >= 0]
    assert topics["ratio"].is_monotonic_decreasing and np.isfinite(compared["ratio"]).all()
    over = topics.iloc[0]
    assert over["share_a"] >= over["share_b"] and topics.iloc[-1]["share_a"] <= topics.iloc[-1]["share_b"]
    swapped = topics_compare(grouped_index, ("year", 2024), ("venue", "ICML"))
    swapped = swapped[swapped["cluster"] >= 0]  # the same topics, each ratio inverted, the order reversed
    assert sorted(swapped["cluster"]) == sorted(topics["cluster"])
    assert np.allclose(swapped["ratio"].to_numpy(), 1 / topics["ratio"].to_numpy()[::-1])
    inverted = swapped.set_index("cluster")["ratio"]
    assert np.allclose(inverted.reindex(topics["cluster"]).to_numpy(), 1 / topics["ratio"].to_numpy())


def test_compare_gives_a_topic_absent_from_one_group_a_finite_ratio(grouped_index):
    compared = topics_compare(grouped_index, ("categories", "cs.CL"), ("categories", "cs.AI"), "fine")
    absent = compared[(compared["papers_a"] == 0) | (compared["papers_b"] == 0)]
    assert len(absent) and np.isfinite(absent["ratio"]).all() and (absent["ratio"] > 0).all()
    assert (compared.loc[(compared["papers_b"] == 0) & (compared["papers_a"] > 0), "ratio"] > 1).all()
    assert (compared.loc[(compared["papers_b"] == 0) & (compared["papers_a"] == 0), "ratio"] == 1).all()


def test_unknown_columns_and_groups_are_one_sentence_naming_what_exists(sample_index, grouped_index):
    with pytest.raises(
        UserError, match=r"^this corpus has no column 'x' to split topics by; the columns it has are: venue$"
    ):
        topics_by(sample_index, "x")
    with pytest.raises(UserError, match=r"no years .* the columns it has are: venue$"):
        topics_by(sample_index, "year")
    with pytest.raises(UserError, match="no paper has venue 'AAAI'; its values include ") as raised:
        topics_compare(grouped_index, ("venue", "AAAI"), ("venue", "ICML"))
    assert all(venue in str(raised.value) for venue in VENUES)
    with pytest.raises(UserError, match=r"no paper has year '1999'; its values run from 2023 to 2025$"):
        topics_compare(grouped_index, ("venue", "ICML"), ("year", 1999))
    with pytest.raises(UserError, match="'recent' is not a number"):
        topics_compare(grouped_index, ("year", "recent"), ("venue", "ICML"))
    with pytest.raises(UserError, match="two different groups"):
        topics_compare(grouped_index, ("venue", "ICML"), ("venue", "icml"))
    with pytest.raises(UserError, match="the columns it has are: year, authors, venue, categories"):
        topics_by(grouped_index, "x")  # never the index's own columns (x, cluster, title…)


def test_cli_by_any_column_and_compare(sample_index_dir, grouped_index):
    folder = str(grouped_index.folder)
    unknown = paperscope("topics", "--by", "nosuch", "--index", str(sample_index_dir))
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "'nosuch'" in unknown.stderr and "columns it has are: venue" in unknown.stderr
    for bad in (["venue"], ["venue=ICML", "=2024"]):
        done = paperscope("topics", "--compare", *bad, *(["venue=ICML"] if len(bad) == 1 else []), "--index", folder)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "COLUMN=VALUE" in done.stderr, bad
        assert "Traceback" not in done.stderr
    by_venue = json.loads(paperscope("topics", "--by", "venue", "--level", "fine", "--json", "--index", folder).stdout)
    expected = topics_by(grouped_index, "venue", "fine")
    assert [topic["cluster"] for topic in by_venue] == expected["cluster"].tolist()
    assert sum(topic["papers"]["ICML"] for topic in by_venue) == (grouped_index.papers["venue"] == "ICML").sum()
    by_year = paperscope("topics", "--by", "year", "--index", folder).stdout
    assert "2023" in by_year and "grew most:" in by_year and "shrank most:" in by_year
    compared = json.loads(
        paperscope("topics", "--compare", "year=2023", "year=2025", "--json", "--index", folder).stdout
    )
    assert compared == records(topics_compare(grouped_index, ("year", 2023), ("year", 2025)))
    shown = paperscope("topics", "--compare", "venue=ICML", "venue=ICLR", "--index", folder).stdout
    assert shown.startswith("A: venue=ICML (") and "ratio" in shown
