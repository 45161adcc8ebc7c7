"""``paperscope serve``'s endpoints for your own library: collections and recommendations.

The same records and the same one-sentence errors as the rest of the API; collections live in the
data folder's SQLite file, shared by every worker (WAL: concurrent writers queue, none is lost).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from paperscope.index.collections.collections import MAX_NAME_CHARS
from paperscope.ui.records import records

MAX_MEMBERS = 10_000  # ids in one request


class CollectionPapers(BaseModel):
    """Papers of the index, by id."""

    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(max_length=MAX_MEMBERS, description="ids of papers of the index")


class RecommendRequest(BaseModel):
    """Papers like a collection (its members excluded), unlike another, optionally only new ones."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    collection: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="the collection to recommend from")
    avoid: str | None = Field(None, alias="not", max_length=MAX_NAME_CHARS, description="a collection to avoid")
    k: int = Field(20, ge=1, le=1_000)
    new: bool = Field(False, description="only papers added since the collection was last shown (then shown)")
    since: str | None = Field(None, description="only papers added since this date (ISO 8601, e.g. 2026-12-01)")


def _shown(collections, name: str) -> dict:
    shown = collections.show(name)
    return {**shown, "papers": records(shown["papers"])}


def add_library_routes(app, live, answer, errors: dict, results: dict) -> None:
    """Add the collections and recommendation endpoints to ``app``; ``answer(served, compute)``
    turns what ``compute(index)`` returns into the response (and a UserError into its error)."""

    @app.get("/collections", summary="The index's collections, with their counts", responses=errors)
    def list_collections():
        return answer(live.current, lambda index: records(index.collections.listing()))

    @app.get("/collections/{name:path}", summary="One collection: members and how they matched", responses=errors)
    def show_collection(name: str):
        return answer(live.current, lambda index: _shown(index.collections, name))

    @app.put("/collections/{name:path}", summary="Create a collection, or set its papers", responses=errors)
    def put_collection(name: str, body: CollectionPapers):
        def put(index):
            collections = index.collections
            if name.strip() in collections.names():
                collections.remove(name, collections.members(name)["key"].tolist())
                collections.add(name, ids=body.ids)
            else:
                collections.create(name, ids=body.ids)
            return _shown(collections, name)

        return answer(live.current, put)

    @app.delete("/collections/{name:path}", summary="Delete a collection", responses=errors)
    def delete_collection(name: str):
        def delete(index):
            index.collections.delete(name)
            return {"deleted": name.strip()}

        return answer(live.current, delete)

    @app.post("/collections/{name:path}/papers", summary="Add papers to a collection", responses=errors)
    def add_to_collection(name: str, body: CollectionPapers):
        def add(index):
            index.collections.add(name, ids=body.ids)
            return _shown(index.collections, name)

        return answer(live.current, add)

    @app.post("/recommend", summary="Papers like a collection; with new, only new ones", responses=results)
    def recommend(request: RecommendRequest):
        def recommended(index):
            found = index.collections.recommend(
                request.collection, avoid=request.avoid, k=request.k, new=request.new, since=request.since
            )
            return records(found)

        return answer(live.current, recommended)
