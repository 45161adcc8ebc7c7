"""``paperscope serve``: nearest-paper lookup as a JSON API (FastAPI on uvicorn).

The index is loaded once, read-only. A watcher thread notices when a build or ``paperscope add``
switches the folder to a new generation, loads and warms it, then swaps it in: a request uses the
generation it started with (its files stay mapped even once the next build deletes them), so a
rebuild fails no request; a change to the topic curations (``paperscope topics rename`` …) is
loaded the same way. Results carry the fields of the command line's ``--json`` output;
every error is a JSON object ``{"error": one sentence, "status": code}``, never a traceback.

Lookups run on the event loop: one by id takes about 2 ms, and running them in threads cost more
in hand-offs of the interpreter lock than it saved (docs/benchmarks.md). Only the topic
overview, computed once per generation, runs in a thread. Worker processes (one per core by default) share the cores.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Mapping
from contextlib import asynccontextmanager
from functools import cached_property
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

from fastapi import Body, FastAPI, Query, Request
from fastapi import Path as FastApiPath
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from paperscope.errors import Contradiction, NotFound, UserError
from paperscope.index.paper_index import PaperIndex, current_generation_name, reload_stamp, searchable
from paperscope.limits import MAX_QUERY_CHARS, MAX_RESULTS
from paperscope.records import Record, jsonable, records
from paperscope.settings import LEVELS, AccessSettings, Level, Mode
from paperscope.ui.access import TOKEN_FILE_VARIABLE, Guard, Token, is_loopback, read_tokens
from paperscope.ui.logs import log_to_stderr
from paperscope.ui.note_header import NOTE_HEADER, with_note
from paperscope.ui.service_library import WATCH_PATHS, add_library_routes

MAX_K = MAX_RESULTS  # results per request, as every lookup (PaperIndex, the command line)
MAX_IDS = 1_000  # paper ids in one POST /similar
MAX_BODY_BYTES = 256 * 1024  # a longest query (20,000 characters, each escaped in JSON) fits
WATCH_SECONDS = 0.5  # how often the folder's CURRENT generation is checked
GENERATION_HEADER = "X-Paperscope-Generation"
INDEX_VARIABLE = "PAPERSCOPE_SERVE_INDEX"  # the index folder, for worker processes
ACCESS_VARIABLE = "PAPERSCOPE_SERVE_ACCESS"  # the AccessSettings, as JSON, for worker processes
# One worker a core by default (two workers answer twice the requests of one: docs/benchmarks.md);
# each holds its own query model, ~250 MB.
MAX_DEFAULT_WORKERS = 8
logger = logging.getLogger("paperscope")


class Filters(BaseModel):
    """Only papers that pass every filter given (see ``PaperIndex.where``)."""

    model_config = ConfigDict(extra="forbid")
    years: int | tuple[int | None, int | None] | None = Field(
        None,
        description="one year, or the low and high year, inclusive; null for an open end ([2022, null]: 2022 on)",
        examples=[2024, [2022, 2024], [2022, None]],
    )
    topics: list[str] | None = Field(None, description="names of coarse topics or fine clusters (GET /topics)")
    venues: list[str] | None = None
    category: str | None = Field(None, description="text the paper's categories contain, in any case")
    conditions: list[str] | None = Field(
        None,
        max_length=20,
        description="conditions on any column of the corpus (GET /healthz lists them with their kinds), all met: "
        "COLUMN OPERATOR VALUE with =, !=, <, <=, >, >= or contains; text in any case, a list contains a member",
        examples=[["decision = Accept", "review_score >= 6", "published >= 2024-01-01", "tags contains graphs"]],
    )


class SearchRequest(BaseModel):
    """Papers nearest to free text."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        pattern=r"\S",
        description="a question, a title or an abstract (at least one character other than spaces); a text of "
        "only unprintable characters answers an empty list, the header X-Paperscope-Note saying why",
        examples=["making diffusion transformers faster"],
    )
    k: int = Field(10, ge=1, le=MAX_K)
    mode: Mode | None = Field(None, description="default: the index's (hybrid)")
    filters: Filters | None = None


class SimilarRequest(BaseModel):
    """Papers most like several papers and least like others."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ids: list[str] = Field(min_length=1, max_length=MAX_IDS, description="more like these papers")
    not_ids: list[str] = Field([], alias="not", max_length=MAX_IDS, description="less like these papers")
    k: int = Field(10, ge=1, le=MAX_K)
    mode: Mode | None = None
    filters: Filters | None = None


class Result(BaseModel):
    """One result: as `paperscope similar --json` prints it, then the paper's other metadata fields."""

    model_config = ConfigDict(extra="allow")
    rank: int
    id: str
    title: str
    score: float = Field(
        description="what the papers are ranked by, highest first, on one scale for every lookup: the cosine "
        "(dense), the keyword cosine (keyword) or their blend (hybrid), plus 0.25 for a paper using the query's "
        "acronym; a recommendation's is the blend with the collection, moved by at most 0.3 by the collection's "
        "classifier (docs/usage.md#scores)"
    )
    cosine: float | None = Field(None, description="hybrid mode: the cosine similarity of the vectors")
    keyword_score: float | None = Field(None, description="hybrid and keyword modes: the TF-IDF cosine")
    because: dict | None = Field(
        None,
        description="recommendations: why this paper, {members: [{id, title, similarity, key, citation_key}] (the "
        "collection's papers it is closest to, by cosine; id null for an entry outside the index, named by its "
        "title, its key and its own citation key), terms: [the terms it shares with them]}",
    )
    abstract: str


class MapChoice(BaseModel):
    """The map to make current (GET /maps lists them; "build" is the build's own)."""

    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description='a map\'s name: letters, digits, ".", "_" or "-", e.g. "build" or "topics-8"',
    )


class Health(TypedDict):
    """GET /healthz: that it answers, the papers and generation it serves, their model, when the
    index was built and the corpus's columns with their kinds."""

    status: str
    papers: int
    generation: str | None
    model: str
    built: str
    columns: dict[str, str]


class ApiError(BaseModel):
    """Every error: one sentence and the HTTP status."""

    error: str
    status: int


Responses = dict[int | str, dict[str, Any]]  # what FastAPI's responses= takes: OpenAPI per status
ERRORS: Responses = {code: {"model": ApiError} for code in (400, 404, 405, 409, 413, 415, 422)}
RESULTS: Responses = {200: {"model": list[Result], "headers": {NOTE_HEADER: {
    "description": "why the list is empty, when it is", "schema": {"type": "string"}}}}, **ERRORS}  # fmt: skip
# The papers of a result, and theirs: OpenAPI links (a client or a fuzzer follows them to real ids)
PAPER_LINKS = {
    "paper": {"operationId": "getPaper", "parameters": {"paper_id": "$response.body#/0/id"}},
    "similar": {"operationId": "similarToPaper", "parameters": {"paper_id": "$response.body#/0/id"}},
    "moreLikeThese": {"operationId": "similarToPapers", "requestBody": {"ids": ["$response.body#/0/id"]}},
}
LINKED_RESULTS: Responses = {**RESULTS, 200: {**RESULTS[200], "links": PAPER_LINKS}}
NOTHING_TO_SEARCH = "the query has nothing to search by (no printable character)"


class Served:
    """One generation of the index as served, with what is computed once per generation."""

    def __init__(self, generation: str | None, index: PaperIndex, stamp: str = ""):
        self.generation = generation
        self.index = index
        self.stamp = stamp  # reload_stamp when loaded: a new identity, curation or map loads anew

    @cached_property
    def topics(self) -> dict[str, list[Record]]:
        """Both levels' topic overviews as records (computed on the first GET /topics)."""
        return {level: records(self.index.topics.overview(level)) for level in LEVELS}


class LiveIndex:
    """The index of a folder's current generation, replaced when a build switches the generation."""

    def __init__(self, folder: Path, model_path: str | None = None):
        self.folder = folder
        self.model_path = model_path
        self.current = self._load(current_generation_name(folder))
        self._skipped: str | None = None  # a generation that failed to load: not tried again
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="paperscope-generation-watcher", daemon=True)

    def _load(self, generation: str | None) -> Served:
        stamp = reload_stamp(self.folder)  # read first: a change while loading is loaded next time
        index = PaperIndex.load(self.folder, model_path=self.model_path)
        index.warm()
        return Served(generation, index, stamp)

    def refresh(self) -> None:
        """Serve the folder's current generation if it is new, or again if its curations changed.
        A generation that does not load is logged once and the old one served on."""
        generation = current_generation_name(self.folder)
        if generation is None or generation == self._skipped:
            return
        if generation == self.current.generation:
            if reload_stamp(self.folder) != self.current.stamp:
                try:
                    self.current = self._load(generation)
                except UserError:  # a build switching the generation meanwhile: the next check loads it
                    return
                logger.info("%s: the index changed (identity, topic curations or map): now serving it", self.folder)
            return
        try:
            served = self._load(generation)
        except UserError as exc:
            self._skipped = generation
            logger.warning("%s: still serving %s: %s", self.folder, self.current.generation, exc)
            return
        self.current = served  # one assignment: a request sees the old generation or the new one
        logger.info("%s: now serving %s (%d papers)", self.folder, generation, len(served.index))

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_SECONDS):
            try:
                self.refresh()
            except Exception:  # a bug must not stop the watching
                logger.exception("%s: checking for a new generation failed", self.folder)

    def start(self) -> None:
        """Start watching the folder for new generations."""
        self._watcher.start()

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        self._watcher.join(timeout=5)


def _error(
    status: int, message: str, generation: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The JSON error ``{error, status}``, with the generation that answered and other ``headers``."""
    headers = {**(headers or {}), **({GENERATION_HEADER: generation} if generation else {})}
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers or None)


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    """The status and one sentence for the first problem pydantic found in a request."""
    problem = exc.errors()[0]
    if problem["type"] == "json_invalid":
        return 400, "the request body is not valid JSON"
    if isinstance(problem.get("input"), bytes):  # a body not sent as JSON, e.g. curl -d without a header
        return 415, "send the request body as JSON, with the header Content-Type: application/json"
    where = ".".join(str(part) for part in problem["loc"][1:]) or "the request body"
    if problem["type"] == "missing":
        return 422, f"{where} is required"
    if problem["type"] == "extra_forbidden":
        return 422, f"unknown field '{where}'"
    if problem["type"] == "string_pattern_mismatch":  # the patterns ask for something other than spaces
        return 422, f"{where} is empty or only spaces or control characters; type a few words"
    given = problem.get("input")
    shown = repr(given) if not isinstance(given, str) or len(given) <= 60 else f"{len(given):,} characters"
    return 422, f"{where}: {problem['msg'][0].lower()}{problem['msg'][1:]}, got {shown}"


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 in JSON before it
    reaches the app, whether its length is declared or it comes in chunks (FastAPI's own
    ``max_body_size`` answers a declared length with plain text)."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        too_large = _error(413, f"the request body is over the limit of {self.limit:,} bytes")
        if not declared.isdigit() or int(declared) > self.limit:
            return await too_large(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                return await too_large(scope, receive, send)
            more = message.get("more_body", False)
        delivered = False

        async def replay():
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


def _answer(served: Served, compute) -> Response:
    """What ``compute(index)`` returns, as JSON, or its UserError as a 404 (unknown paper) or
    422; either way naming the generation that answered."""
    try:
        content = compute(served.index)
    except UserError as exc:
        status = 404 if isinstance(exc, NotFound) else 409 if isinstance(exc, Contradiction) else 422
        return _error(status, str(exc), served.generation)
    body = json.dumps(content, ensure_ascii=False).encode()
    return Response(body, media_type="application/json", headers={GENERATION_HEADER: served.generation or ""})


def _ranked(served: Served, find, filters: Filters | None) -> Response:
    """The papers ``find(index, within)`` finds (:class:`Results`, or a note saying why there are
    none), among those passing ``filters``, as results; when there are none because the query
    matched nothing, the ``NOTE_HEADER`` says so."""
    notes = []

    def results(index: PaperIndex) -> list[Record]:
        within = index.where(**filters.model_dump()) if filters else None
        found = find(index, within)
        if isinstance(found, str):
            notes.append(found)
            return []
        notes.extend([found.note] if found.note else [])
        return found.to_records()

    return with_note(_answer(served, results), notes[0] if notes else None)


def _allowed(app: FastAPI, path: str) -> str:
    """The methods some route of ``app`` answers at ``path`` (a 405's Allow header: RFC 9110). The
    papers of a collection are only the papers route's, a paper dismissed from its recommendations
    only the dismissed routes', a saved search's matches and shown paths only theirs (see ``service_library``)."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, APIRoute) and route.path_regex.match(path):
            suffix = "/" + path.rsplit("/", 1)[-1]
            if path.startswith("/collections/") and suffix in ("/papers", "/shown") and not route.path.endswith(suffix):
                continue
            if path.startswith("/watches/") and suffix in WATCH_PATHS and not route.path.endswith(suffix):
                continue  # a saved search's matches or shown path: only its route
            if path.startswith("/collections/") and ("/dismissed/" in path) != ("/dismissed/" in route.path):
                continue  # a paper dismissed from a collection's recommendations: only its routes
            methods |= route.methods or set()
    return ", ".join(sorted(methods))


def _handle_errors(app: FastAPI) -> None:
    """Answer every error as ``{error, status}``: invalid requests in one sentence, unknown
    endpoints naming /docs, and a failure as a 500 whose details go to the log only."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        allowed = _allowed(app, request.url.path)  # a collection's papers or shown path, asked with another method
        if request.method not in allowed.split(", "):
            return _error(405, f"{request.method} {request.url.path}: method not allowed", headers={"Allow": allowed})
        return _error(*_validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        if exc.status_code == 404:
            return _error(404, f"no endpoint {request.method} {request.url.path}; the API is described at /docs")
        message = f"{request.method} {request.url.path}: {str(exc.detail).lower()}"
        headers = {**(exc.headers or {}), "Allow": _allowed(app, request.url.path)} if exc.status_code == 405 else None
        return _error(exc.status_code, message, headers=headers or exc.headers)

    @app.exception_handler(Exception)
    async def failure(request: Request, exc: Exception):
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _error(500, "internal error; the server's log has the details")


def _add_routes(app: FastAPI, live: LiveIndex) -> None:
    """The endpoints, each answered by the generation current when its request came."""

    @app.get("/healthz", summary="Whether the service answers, and what it serves", responses=ERRORS)
    async def healthz():
        served = live.current

        def described(index: PaperIndex) -> Health:
            return Health(
                status="ok", papers=len(served.index), generation=served.generation,
                model=index.manifest.model.name, built=index.manifest.created, columns=index.columns(),
            )  # fmt: skip

        return _answer(served, described)

    examples = live.current.index.table([0, min(1, len(live.current.index) - 1)], ["id"]).column("id").to_pylist()
    example = examples[0]  # a real paper, for /docs and fuzzers
    similar_body = Body(openapi_examples={"more like these": {"value": {"ids": examples, "not": [], "k": 5}}})
    paper_id_path = FastApiPath(description="a paper's id (the id of a result)", examples=[example])

    @app.get(
        "/papers/{paper_id:path}/similar",
        summary="The papers most similar to one paper",
        responses=LINKED_RESULTS,
        operation_id="similarToPaper",
    )
    async def similar_to_one(
        paper_id: str = paper_id_path, k: Annotated[int, Query(ge=1, le=MAX_K)] = 10, mode: Mode | None = None
    ):
        return _ranked(live.current, lambda index, within: index.similar(paper_id, k=k, mode=mode), None)

    @app.get("/papers/{paper_id:path}", summary="One paper's metadata", responses=ERRORS, operation_id="getPaper")
    async def paper(paper_id: str = paper_id_path):
        return _answer(
            live.current, lambda index: {name: jsonable(value) for name, value in index.paper(paper_id).items()}
        )

    @app.post(
        "/similar",
        summary="The papers most like several papers and least like others",
        responses=LINKED_RESULTS,
        operation_id="similarToPapers",
    )
    async def similar(request: SimilarRequest = similar_body):
        return _ranked(
            live.current,
            lambda index, within: index.similar(
                request.ids, k=request.k, mode=request.mode, negative=request.not_ids, within=within
            ),
            request.filters,
        )

    @app.post("/search", summary="The papers most similar to free text", responses=LINKED_RESULTS)
    async def search(request: SearchRequest):
        def find(index: PaperIndex, within):
            if not searchable(request.text):  # valid JSON text, nothing to search by: an empty answer, and why
                return NOTHING_TO_SEARCH
            return index.search(request.text, k=request.k, mode=request.mode, within=within)

        return _ranked(live.current, find, request.filters)

    @app.get("/topics", summary="Every topic: size, share, map trust, central papers, terms", responses=ERRORS)
    def topics(level: Level = "coarse"):
        served = live.current
        return _answer(served, lambda index: served.topics[level])

    _add_map_routes(app, live)


def _add_map_routes(app: FastAPI, live: LiveIndex) -> None:
    """The maps of the index (GET /maps) and the choice of the current one (PUT /maps/current)."""

    @app.get("/maps", summary="The maps of the index: name, topics, clusters, created, current, stale",
             responses=ERRORS, operation_id="listMaps")  # fmt: skip
    def list_maps():
        return _answer(live.current, lambda index: records(index.map.maps()))

    @app.put("/maps/current", summary="Make a map current: GET /topics answers with its topics from then on",
             responses=ERRORS, operation_id="useMap")  # fmt: skip
    def use_map(choice: MapChoice):
        def switch(index: PaperIndex):
            PaperIndex.load(index.folder, model_path=live.model_path).map.use(choice.name)  # the folder's pointer
            return choice.name

        answer = _answer(live.current, switch)
        if answer.status_code == 200:
            live.refresh()  # serve the chosen map from this answer on, not from the watcher's next look
            return _answer(live.current, lambda index: records(index.map.maps()))
        return answer


def is_write(method: str, path: str) -> bool:
    """Whether a request changes something: a PUT, PATCH or DELETE, or a POST to a collection
    (``POST /similar``, ``/search`` and ``/recommend`` only read)."""
    return method in ("PUT", "PATCH", "DELETE") or (method == "POST" and path.startswith("/collections/"))


def _declare_access(app: FastAPI, tokens: tuple[Token, ...], access: AccessSettings) -> None:
    """State in the OpenAPI schema what the Guard answers: the bearer scheme (no token for the
    health check), 401 where a token is needed, 403 on writes it may refuse, 429 past the limit."""
    plain = app.openapi

    def schema() -> dict:
        if app.openapi_schema:
            return app.openapi_schema
        described = plain()
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}}}
        if tokens:
            described["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            described["security"] = [{"bearer": []}]
        for path, operations in described["paths"].items():
            for method, operation in operations.items():
                if path == "/healthz":
                    operation["security"] = []
                    continue
                answers = operation.setdefault("responses", {})
                if tokens:
                    answers["401"] = {"description": "no token, or not one of this server's", "content": error}
                if is_write(method.upper(), path) and (tokens or access.read_only):
                    answers["403"] = {"description": "a read-only server, or a read token", "content": error}
                if access.rate_limit:
                    after = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}
                    answers["429"] = {"description": "over the rate limit", "content": error, "headers": after}
        app.openapi_schema = described
        return described

    app.openapi = schema  # type: ignore[method-assign]  # FastAPI's documented way to extend the schema


def create_app(
    folder: str | Path,
    model_path: str | None = None,
    tokens: tuple[Token, ...] = (),
    access: AccessSettings | None = None,
) -> FastAPI:
    """The API over the index in ``folder``, loaded now (a UserError if it cannot be); with
    ``tokens``, each request but the health check needs one; ``access``: read-only mode and the
    rate limit (``ui/access.py``; left to None, on: the address served on is not known here)."""
    access = (access or AccessSettings()).on(loopback=False)
    live = LiveIndex(Path(folder), model_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        live.start()
        yield
        live.stop()

    app = FastAPIOffline(  # FastAPI, its /docs page's script and style served from the package, not a CDN
        title="paperscope",
        version=version("paperscope"),
        description="Nearest-paper lookup over one paperscope index. Results carry the fields of "
        "`paperscope similar --json`; errors are `{error, status}`.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(Guard, tokens=tokens, settings=access, is_write=is_write, index=str(Path(folder).resolve()))
    app.state.live = live
    _handle_errors(app)
    _add_routes(app, live)
    add_library_routes(app, live, _answer, ERRORS, LINKED_RESULTS)
    _declare_access(app, tokens, access)
    return app


def _one_thread_each() -> None:
    """Compute each request on one thread: FAISS's OpenMP threads and ONNX Runtime's, on every
    core, spin between small requests (twice the CPU a search: docs/benchmarks.md); requests in
    parallel use the cores instead."""
    import faiss

    os.environ["OMP_NUM_THREADS"] = "1"  # ONNX Runtime's threads: OnnxEncoder reads it
    faiss.omp_set_num_threads(1)


def app_from_environment() -> FastAPI:
    """The app over the index named by ``$PAPERSCOPE_SERVE_INDEX``: what each of several uvicorn
    worker processes calls."""
    log_to_stderr()
    _one_thread_each()
    tokens = read_tokens(os.environ[TOKEN_FILE_VARIABLE]) if os.environ.get(TOKEN_FILE_VARIABLE) else ()
    access = AccessSettings(**json.loads(os.environ.get(ACCESS_VARIABLE, "{}")))
    return create_app(os.environ[INDEX_VARIABLE], tokens=tokens, access=access)


def default_workers() -> int:
    """One worker process per core this process may use, at most ``MAX_DEFAULT_WORKERS``."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(usable, MAX_DEFAULT_WORKERS))


def _access_line(tokens: tuple[Token, ...], access: AccessSettings, workers: int) -> str:
    """One line saying who may do what: tokens (how many write), read-only mode, the rate limit."""
    writers = sum(token.scope == "write" for token in tokens)
    who = f"{len(tokens)} tokens ({writers} may write)" if tokens else "no tokens: anyone who reaches the port"
    limit = f"{access.rate_limit} requests a minute per client" if access.rate_limit else "no rate limit"
    per = f", in each of {workers} workers" if access.rate_limit and workers > 1 else ""
    return f"access: {who}{', read-only' if access.read_only else ''}; {limit}{per}"


def serve(
    folder: Path,
    host: str,
    port: int,
    workers: int | None = None,
    access_log: bool = False,
    *,
    token_file: str | None = None,
    access: AccessSettings | None = None,
) -> None:
    """Load the index in ``folder`` and answer requests on ``host``:``port`` until stopped, in
    ``workers`` processes (default: :func:`default_workers`; each loads the index, whose files
    they share, memory-mapped, and its own query model, about 250 MB each). ``token_file``: the
    tokens asked of clients; ``access``: read-only mode and the rate limit (per worker; left to
    None, none on a loopback address). An address other machines reach needs tokens or read-only mode."""
    import uvicorn

    from paperscope.ui.access import check_exposure
    from paperscope.ui.launch import check_free

    access = (access or AccessSettings()).on(is_loopback(host))
    tokens = read_tokens(token_file) if token_file else ()
    check_exposure(host, "serve", tokens=bool(tokens), read_only=access.read_only)
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise UserError(f"--workers must be at least 1, got {workers}")
    check_free(host, port)
    _one_thread_each()
    address = f"http://{host}:{port}"
    if workers == 1:
        app = create_app(folder, tokens=tokens, access=access)  # a user error stops here, in one line
        logger.info("%s", _access_line(tokens, access, workers))
        logger.info(
            "serving %s (%d papers) on %s; API docs at /docs", folder, len(app.state.live.current.index), address
        )
        uvicorn.run(app, host=host, port=port, access_log=access_log)
        return
    index = PaperIndex.load(folder)  # the index and (below) its query model are checked before any worker starts
    index.embed_query("check")  # the query model is found and runs before any worker starts
    model = index.manifest.model.name
    logger.info("%s", _access_line(tokens, access, workers))  # once the index is known to load: a bad one is one line
    logger.info(
        "serving %s (%d papers, %s) on %s in %d workers; API docs at /docs", folder, len(index), model, address, workers
    )
    del index
    os.environ[INDEX_VARIABLE] = str(Path(folder).resolve())
    os.environ[ACCESS_VARIABLE] = json.dumps(dataclasses.asdict(access))
    if token_file:  # each worker reads the tokens again: they never pass through the environment
        os.environ[TOKEN_FILE_VARIABLE] = str(Path(token_file).resolve())
    else:
        os.environ.pop(TOKEN_FILE_VARIABLE, None)
    uvicorn.run(
        f"{__name__}:app_from_environment", factory=True, host=host, port=port, workers=workers, access_log=access_log
    )
