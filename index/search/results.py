"""One result type for :meth:`~paperscope.PaperIndex.similar`, ``search`` and ``recommend``.

A :class:`Results` holds the rows found, best first, and their scores; the papers' metadata is
read from the memory-mapped table only when the results are turned into a table:
:meth:`~Results.to_pandas`, :meth:`~Results.to_arrow` or :meth:`~Results.to_records` (what
``--json`` prints and the service answers).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np
import pyarrow as pa

from paperscope.errors import UserError
from paperscope.index.common.papers import PaperTable, arrow_numbers
from paperscope.index.search.ranking import Ranking
from paperscope.limits import MAX_RESULTS
from paperscope.records import Record, json_rows

if TYPE_CHECKING:  # pandas is loaded by to_pandas() alone: a lookup never needs it
    import pandas as pd

SCORE_LIMIT = 1.3  # a cosine's 1 plus a recommendation's classifier share (0.3) or an acronym's bonus (0.25)


def check_k(k) -> int:
    """Validate a result count: a whole number from 1 to ``MAX_RESULTS`` (the service's limit too)."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= MAX_RESULTS:
        raise UserError(f"k must be a whole number from 1 to {MAX_RESULTS:,}, got {k!r}")
    return int(k)


class Because(TypedDict):
    """A recommendation's reason as :meth:`Results.to_records` gives it (its "because" column):
    its closest members, named ({"id", "title", "similarity"}; one outside the index has "id"
    None, its "key" and "citation_key"), the terms it shares with them, and "added" for a feed."""

    members: list[dict[str, Any]]
    terms: list[str]
    added: NotRequired[int]


class Results:
    """Papers found, best first: ``ids``, ``rows``, ``scores`` (columns of floats: ``score``, the
    ranking score, and in hybrid mode ``cosine`` and ``keyword_score``) and ``note`` (why there are
    none, when a query matched nothing). ``len()`` counts them; in a notebook they show as a table.

    As a table each row has ``rank``, ``id``, ``title``, the score columns, for recommendations
    ``because`` (the members each is closest to, with their cosines, and the terms it shares with
    them), then the paper's metadata columns."""

    def __init__(self, ranking: Ranking, papers: PaperTable):
        self.ranking = ranking
        self._papers = papers

    @property
    def rows(self) -> np.ndarray:
        """The papers' row numbers in the index, best first."""
        return self.ranking.rows

    @property
    def scores(self) -> dict[str, np.ndarray]:
        """The score columns, each aligned with :attr:`rows`."""
        return self.ranking.scores

    @property
    def note(self) -> str | None:
        """Why there are no results (a query matching no word, an empty collection), else None."""
        return self.ranking.note

    @property
    def ids(self) -> list[str]:
        """The papers' ids, best first."""
        return self._papers.take(self.rows, ["id"]).column("id").to_pylist()

    def __len__(self) -> int:
        return len(self.rows)

    def copy(self) -> Results:
        """An independent copy: its rows, scores and reasons copied (the index's papers shared)."""
        ranking = self.ranking
        return Results(
            dataclasses.replace(
                ranking,
                rows=ranking.rows.copy(),
                scores={name: values.copy() for name, values in ranking.scores.items()},
                reasons=copy.deepcopy(ranking.reasons),
            ),
            self._papers,
        )

    def __repr__(self) -> str:
        return f"Results({len(self)} papers{f', note={self.note!r}' if self.note else ''})"

    def to_arrow(self) -> pa.Table:
        """The papers as an Arrow table: rank, id, title, the score columns, the metadata."""
        papers = self._papers.take(self.rows)
        columns = {
            "rank": arrow_numbers(np.arange(1, len(self.rows) + 1)),
            "id": papers.column("id"),
            "title": papers.column("title"),
            **{
                name: arrow_numbers(np.asarray(values, np.float32).clip(-SCORE_LIMIT, SCORE_LIMIT))
                for name, values in self.scores.items()
            },
        }
        if self.ranking.reasons is not None:
            columns["because"] = pa.array(self._because())
        metadata = papers.drop_columns(["id", "title"])
        return pa.table(columns | dict(zip(metadata.column_names, metadata.columns, strict=True)))

    def _because(self) -> list[Because]:
        """Each recommendation's reason with its closest members named by title: {"members": [{"id",
        "title", "similarity"}…], "terms": […]} (and "added", for new papers of a feed); members
        outside the index (a collection's "outside" reasons) have "id" None, their "key" and
        their entry's "citation_key", the closest of either kind first."""
        reasons = self.ranking.reasons or []
        rows = sorted({row for reason in reasons for row, _ in reason["members"]})
        named = self._papers.take(rows, ["id", "title"])
        pairs = zip(named.column("id").to_pylist(), named.column("title").to_pylist(), strict=True)
        of = dict(zip(rows, pairs, strict=True))
        because: list[Because] = []
        for reason in reasons:
            inside: list[dict[str, Any]] = [{"id": of[row][0], "title": of[row][1], "similarity": round(similarity, 3)}
                      for row, similarity in reason["members"]]  # fmt: skip
            outside = [{"id": None, **member} for member in reason.get("outside", [])]
            members = sorted([*inside, *outside], key=lambda member: -member["similarity"])
            item = Because(members=members, terms=reason["terms"])
            if "added" in reason:
                item["added"] = reason["added"]
            because.append(item)
        return because

    def to_pandas(self) -> pd.DataFrame:
        """The papers as a DataFrame (the columns of :meth:`to_arrow`); ``frame.attrs["note"]``
        holds the note when there is one."""
        frame = self.to_arrow().to_pandas(use_threads=False)  # threads cost more than they save on 10 rows
        if self.note:
            frame.attrs["note"] = self.note
        return frame

    def to_records(self) -> list[Record]:
        """The papers as JSON-ready dicts (a missing value, NaN included, as None), best first."""
        return json_rows(self.to_arrow())

    def _repr_html_(self) -> str:
        return self.to_pandas()._repr_html_()  # type: ignore[operator]  # pandas-stubs lack DataFrame._repr_html_
