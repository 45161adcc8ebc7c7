"""``paperscope serve``'s endpoints for your own library: collections, recommendations and saved searches.

The same records and the same one-sentence errors as the rest of the API; collections live in the
data folder's SQLite file, shared by every worker (WAL: concurrent writers queue, none is lost).
"""

from __future__ import annotations

import datetime
from typing import Annotated

from fastapi import Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from paperscope.limits import MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_RESULTS, WATCH_THRESHOLD
from paperscope.records import records
from paperscope.ui.note_header import with_note

MAX_MEMBERS = 10_000  # ids in one request
PAPERS = "/papers"  # the path of a collection's papers, after its name
SHOWN = "/shown"  # the path that marks its new papers shown
DISMISSED = "/dismissed/"  # the path of a paper dismissed from its recommendations, before the paper's id
WATCH_PATHS = ("/matches", "/shown")  # the paths of a saved search's matches and of marking them shown, after its name
# What collections.check_name accepts: no control character, at least one other than spaces
NAME_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
Name = Annotated[
    str,
    Path(
        min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN, examples=["reading list"],
        description="a collection's name: up to 200 characters, no control characters (slashes and quotes are fine)",
    ),
]  # fmt: skip
DismissedId = Annotated[
    str,
    Path(min_length=1, max_length=MAX_NAME_CHARS * 5, description="the id of a paper of the index (a recommendation)"),
]


class CollectionPapers(BaseModel):
    """Papers of the index, by id (for PUT also the keys of the collection's outside members)."""

    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(
        max_length=MAX_MEMBERS,
        description="ids of papers of the index; to PUT, also keys of the collection's outside members "
        '("outside:…", see its papers\' key), which are kept as they are',
    )


class RecommendRequest(BaseModel):
    """Papers like a collection (its members excluded), unlike another, optionally only new ones."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    collection: str = Field(
        min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN, description="the collection to recommend from"
    )
    avoid: str | None = Field(
        None,
        alias="not",
        min_length=1,
        max_length=MAX_NAME_CHARS,
        pattern=NAME_PATTERN,
        description="a collection to avoid",
    )
    k: int = Field(20, ge=1, le=MAX_RESULTS)
    new: bool = Field(
        False,
        description="only papers added since the collection was last marked shown (reading marks nothing: "
        "POST /collections/{name}/shown does)",
    )
    since: datetime.datetime | datetime.date | None = Field(
        None, description="only papers added since this time or date (ISO 8601, e.g. 2026-12-01)"
    )


class WatchRequest(BaseModel):
    """A search to save: free text, or ids of papers of the index separated by spaces."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, pattern=NAME_PATTERN,
        examples=["federated learning with drifting clients"],
        description="free text, or ids of papers of the index separated by spaces (a search by those papers when "
        "every word is one); one line, no control characters",
    )  # fmt: skip
    name: str | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN,
        description="its name (default: the query's first words)",
    )  # fmt: skip
    threshold: float = Field(
        WATCH_THRESHOLD, gt=-1, le=1, strict=True,
        description="the cosine with the query a match has at least (the default: above it most matches share "
        "the query's area, measured)",
    )  # fmt: skip


def _shown(collections, name: str, notes: list) -> dict:
    shown = collections.show(name)
    if not shown["members"]:
        notes.append(collections.empty_note(shown["name"]))
    return {**shown, "papers": records(shown["papers"])}


def _collection(live, answer, name: str, change=None):
    """The answer of a collection ``name`` after ``change(index)`` (a write, or None; what it
    returns is added to the answer), with the empty-collection note when it has no members."""
    notes: list[str] = []

    def compute(index):
        changed = change(index) if change else None
        return {**_shown(index.collections, name, notes), **(changed or {})}

    return with_note(answer(live.current, compute), "".join(notes))


def add_library_routes(app, live, answer, errors: dict, results: dict) -> None:
    """Add the collections and recommendation endpoints to ``app``; ``answer(served, compute)``
    turns what ``compute(index)`` returns into the response (and a UserError into its error).

    A name may hold slashes, so ``/collections/NAME/papers`` could be a collection named
    "NAME/papers": it is always the papers of NAME (POST and DELETE only; other methods answer
    405), ``/collections/NAME/shown`` always marks NAME's feed shown (POST only), and
    ``/collections/NAME/dismissed/ID`` is always the paper ID dismissed from NAME's recommendations
    (PUT and DELETE only)."""

    def not_allowed(request: Request):
        raise HTTPException(405, f"{request.method} is not one of the methods of {request.url.path}")

    def own(name: str) -> bool:
        """Whether ``name`` is a collection's, not the path of its papers or of marking it shown."""
        return not name.endswith((PAPERS, SHOWN)) and DISMISSED not in name

    _add_member_routes(app, live, answer, errors)  # first: DELETE …/papers before DELETE of a collection
    _add_dismissed_routes(app, live, answer, errors)

    @app.get("/collections", summary="The index's collections, with their counts", responses=errors)
    def list_collections():
        return answer(live.current, lambda index: records(index.collections.listing()))

    @app.get(
        "/collections/{name:path}", summary="One collection: members and how they matched", responses=errors,
        operation_id="getCollection",
    )  # fmt: skip
    def show_collection(name: Name, request: Request):
        if not own(name):
            return not_allowed(request)
        return _collection(live, answer, name)

    collection_links = {
        "show": {"operationId": "getCollection", "parameters": {"name": "$request.path.name"}},
        "add": {"operationId": "addToCollection", "parameters": {"name": "$request.path.name"}},
        "recommend": {"operationId": "recommend", "requestBody": {"collection": "$request.path.name"}},
    }
    put_responses = {**errors, 200: {"description": "the collection", "links": collection_links}}

    @app.put(
        "/collections/{name:path}", summary="Create a collection, or set its members", responses=put_responses,
        operation_id="putCollection",
    )  # fmt: skip
    def put_collection(name: Name, body: CollectionPapers, request: Request):
        """Every id is checked first and the members replaced in one transaction: an unknown id
        changes nothing; outside members named by their keys stay with their entries."""
        if not own(name):
            return not_allowed(request)
        return _collection(live, answer, name, lambda index: index.collections.replace(name, body.ids))

    @app.delete("/collections/{name:path}", summary="Delete a collection", responses=errors)
    def delete_collection(name: Name, request: Request):
        if not own(name):
            return not_allowed(request)

        def delete(index):
            index.collections.delete(name)
            return {"deleted": name.strip()}

        return answer(live.current, delete)

    _add_recommend_route(app, live, answer, results)
    _add_watch_routes(app, live, answer, errors, results)


def _add_member_routes(app, live, answer, errors: dict) -> None:
    """A collection's members added and removed, and its feed marked shown."""

    @app.delete(
        "/collections/{name:path}/papers", summary="Remove members from a collection", responses=errors,
        operation_id="removeFromCollection",
    )  # fmt: skip
    def remove_from_collection(
        name: Name, ids: Annotated[list[str], Query(alias="id", min_length=1, max_length=MAX_MEMBERS)]
    ):
        """Remove the members named by ``id`` (paper ids or outside keys, repeated for several) in
        one transaction; ids that are not members are counted out, not an error."""
        return _collection(live, answer, name, lambda index: {"removed": index.collections.remove(name, ids)})

    @app.post(
        "/collections/{name:path}/papers", summary="Add papers to a collection", responses=errors,
        operation_id="addToCollection",
    )  # fmt: skip
    def add_to_collection(name: Name, body: CollectionPapers):
        return _collection(live, answer, name, lambda index: index.collections.add(name, ids=body.ids) and None)

    @app.post(
        "/collections/{name:path}/shown", summary="Mark a collection's new papers shown", responses=errors,
        operation_id="markShown",
    )  # fmt: skip
    def mark_shown(name: Name):
        """The next recommendations with ``new`` start from now (reading them marks nothing)."""

        def mark(index):
            (marked,) = index.collections.mark_shown([name])
            return {"name": marked, "shown": index.collections.shown(marked)}

        return answer(live.current, mark)


def _add_dismissed_routes(app, live, answer, errors: dict) -> None:
    """A paper dismissed from a collection's recommendations ("not interested"), and brought back."""

    @app.put(
        "/collections/{name:path}/dismissed/{paper_id:path}", responses=errors, operation_id="dismissFromCollection",
        summary="Dismiss a paper from a collection's recommendations (not interested)",
    )  # fmt: skip
    def dismiss(name: Name, paper_id: DismissedId):
        """The paper is kept with the collection as one to avoid: never recommended for it again,
        and its recommendations steered away from it (a member of the collection is a 409)."""
        return _collection(live, answer, name, lambda index: index.collections.dismiss(name, paper_id) and None)

    @app.delete(
        "/collections/{name:path}/dismissed/{paper_id:path}", responses=errors,
        operation_id="undismissFromCollection",
        summary="Bring a paper dismissed from a collection's recommendations back",
    )  # fmt: skip
    def undismiss(name: Name, paper_id: DismissedId):
        """``undismissed``: 1, or 0 when the paper was not dismissed (not an error)."""
        return _collection(
            live, answer, name, lambda index: {"undismissed": index.collections.undismiss(name, paper_id)}
        )


def _add_recommend_route(app, live, answer, results: dict) -> None:
    """``POST /recommend``: papers like a collection, as results."""

    @app.post(
        "/recommend", summary="Papers like a collection; with new, only new ones", responses=results,
        operation_id="recommend",
    )  # fmt: skip
    def recommend(request: RecommendRequest):
        notes = []

        def recommended(index):
            found = index.collections.recommend(
                request.collection, avoid=request.avoid, k=request.k, new=request.new, since=request.since
            )
            notes.extend([found.note] if found.note else [])
            return found.to_records()

        return with_note(answer(live.current, recommended), "".join(notes))


def _add_watch_routes(app, live, answer, errors: dict, results: dict) -> None:
    """Saved searches: listed, saved, forgotten, their matches (new ones by default), their new
    matches marked shown. ``/watches/NAME/matches`` is always NAME's matches (GET only) and
    ``/watches/NAME/shown`` always marks NAME's (POST only), as a collection's paths are."""

    def not_allowed(request: Request):
        raise HTTPException(405, f"{request.method} is not one of the methods of {request.url.path}")

    @app.get("/watches", summary="The index's saved searches", responses=errors)
    def list_watches():
        return answer(live.current, lambda index: records(index.collections.watches.listing()))

    matches_link = {"matches": {"operationId": "watchMatches", "parameters": {"name": "$response.body#/name"}}}

    @app.post(
        "/watches", summary="Save a search", operation_id="addWatch",
        responses={**errors, 200: {"description": "the saved search", "links": matches_link}},
    )  # fmt: skip
    def add_watch(body: WatchRequest):
        """A name the index has already is a 409; a query of paper ids naming one it lacks, a 404."""
        return answer(live.current, lambda index: index.collections.watches.add(body.query, body.name, body.threshold))

    @app.delete("/watches/{name:path}", summary="Forget a saved search", responses=errors)
    def delete_watch(name: Name, request: Request):
        if name.endswith(WATCH_PATHS):
            return not_allowed(request)

        def delete(index):
            index.collections.watches.remove(name)
            return {"deleted": name.strip()}

        return answer(live.current, delete)

    @app.get(
        "/watches/{name:path}/matches", summary="A saved search's new matches (all: every match), with reasons",
        responses=results, operation_id="watchMatches",
    )  # fmt: skip
    def watch_matches(
        name: Name,
        k: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 20,
        every: Annotated[bool, Query(alias="all", description="every match above its threshold, new or not")] = False,
        since: Annotated[
            datetime.datetime | datetime.date | None,
            Query(description="only papers added since this time or date (ISO 8601); default: since last marked shown"),
        ] = None,
    ):
        """Papers at or above its threshold's cosine with its query, best first, each with why
        (its closest query papers, or the query text, and the terms shared). Reading marks nothing."""
        notes = []

        def matched(index):
            found = index.collections.matches(name, k=k, new=not every, since=since)
            notes.extend([found.note] if found.note else [])
            return found.to_records()

        return with_note(answer(live.current, matched), "".join(notes))

    @app.post("/watches/{name:path}/shown", summary="Mark a saved search's new matches shown", responses=errors)
    def mark_watch_shown(name: Name):
        """Its next new matches start from now."""

        def mark(index):
            (marked,) = index.collections.watches.mark_shown([name])
            return {"name": marked, "shown": index.collections.watches.shown(marked)}

        return answer(live.current, mark)
