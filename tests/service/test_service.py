"""`paperscope serve` against a real server process: each endpoint, each bad request, and the
switch to a new generation while requests keep coming."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import threading
import time
import urllib.parse

import psutil
import pytest

from paperscope.index.store import generations
from paperscope.ui.service import MAX_BODY_BYTES, MAX_K, default_workers
from tests.conftest import PAPERSCOPE, copy_index, paperscope
from tests.index.test_add import NEW_PAPERS
from tests.support.servers import paperscope_server

pytestmark = pytest.mark.slow  # every test here starts a server, or builds an index of its own


def call(url: str, method: str, path: str, body=None, headers=None) -> tuple[int, dict | list, dict]:
    """One request: status, JSON answer, headers. ``body``: a dict or list is sent as JSON, bytes as they are."""
    if isinstance(body, (dict, list)):
        body, headers = json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read()), {k.lower(): v for k, v in answer.getheaders()}
    finally:
        connection.close()


@pytest.fixture(scope="module")
def served(sample_index_dir, tmp_path_factory):
    """A server on a copy of the sample index: its URL and its log file."""
    folder = tmp_path_factory.mktemp("served") / "index"
    copy_index(sample_index_dir, folder)
    log = folder.parent / "server.log"
    with open(log, "w") as stream, paperscope_server("serve", folder, stderr=stream) as (url, process):
        yield url, log, process


def test_lookups_answer_as_the_command_line_does(served, sample_index, sample_index_dir):
    url, _, _ = served
    ids = sample_index.papers["id"].tolist()
    status, health, headers = call(url, "GET", "/healthz")
    generation = generations.current_generation_name(sample_index_dir)
    assert status == 200 and health["papers"] == 38 and health["generation"] == generation
    assert headers["x-paperscope-generation"] == generation

    status, paper, _ = call(url, "GET", f"/papers/{ids[3]}")
    assert status == 200 and paper == sample_index.paper(ids[3])

    status, results, _ = call(url, "GET", f"/papers/{ids[0]}/similar?k=5&mode=dense")
    expected = json.loads(
        paperscope(
            "similar", ids[0], "-k", "5", "--mode", "dense", "--json", "--index", sample_index_dir, check=True
        ).stdout
    )
    assert status == 200 and results == expected  # the same fields and values as --json

    status, results, _ = call(url, "POST", "/similar", {"ids": ids[:2], "not": [ids[2]], "k": 7})
    assert status == 200
    assert [r["id"] for r in results] == sample_index.similar(ids[:2], k=7, negative=[ids[2]]).to_pandas()[
        "id"
    ].tolist()
    assert not {ids[0], ids[1], ids[2]} & {r["id"] for r in results}

    text = "speeding up diffusion transformers for video generation"
    status, results, _ = call(url, "POST", "/search", {"text": text, "k": 5, "mode": "hybrid"})
    assert status == 200 and [r["rank"] for r in results] == [1, 2, 3, 4, 5]
    assert [r["id"] for r in results] == sample_index.search(text, k=5, mode="hybrid").to_pandas()["id"].tolist()
    assert results == json.loads(
        paperscope("search", text, "-k", "5", "--json", "--index", sample_index_dir, check=True).stdout
    )

    for level in ("coarse", "fine"):
        status, topics, _ = call(url, "GET", f"/topics?level={level}")
        assert status == 200 and [t["name"] for t in topics] == sample_index.topics.overview(level)["name"].tolist()
    assert call(url, "GET", "/openapi.json")[1]["paths"].keys() >= {"/search", "/similar", "/topics", "/healthz"}


def test_filters_keep_only_the_papers_they_name(served, sample_index):
    url, _, _ = served
    topic = sample_index.topics.overview("coarse").iloc[0]
    body = {"text": "neural networks", "k": 50, "filters": {"topics": [topic["name"]]}}
    status, results, _ = call(url, "POST", "/search", body)
    assert status == 200 and len(results) == topic["size"]  # every paper of the topic, and only those
    assert {r["coarse_name"] for r in results} == {topic["name"]}
    first = sample_index.papers["id"][0]
    body = {"ids": [first], "k": 3, "mode": "dense", "filters": {"topics": [topic["name"]]}}
    status, results, _ = call(url, "POST", "/similar", body)
    assert status == 200 and len(results) == 3 and {r["coarse_name"] for r in results} == {topic["name"]}


def test_a_paper_id_with_a_slash_is_found(tmp_path):
    corpus = tmp_path / "arxiv.jsonl"
    records = [
        {"id": f"hep-th/99010{i:02d}", "title": title, "abstract": text} for i, (title, text) in enumerate(NEW_PAPERS)
    ]
    corpus.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    paperscope("build", corpus, "-o", tmp_path / "index", check=True)
    with paperscope_server("serve", tmp_path / "index", stderr=subprocess.DEVNULL) as (url, _):
        status, paper, _ = call(url, "GET", "/papers/hep-th/9901003")
        assert status == 200 and paper["title"] == NEW_PAPERS[3][0]
        status, results, _ = call(url, "GET", "/papers/hep-th/9901003/similar?k=2")
        assert status == 200 and len(results) == 2 and "hep-th/9901003" not in {r["id"] for r in results}


BAD_REQUESTS = [
    ("GET", "/papers/nope", None, 404, "no paper with id 'nope'"),
    ("GET", "/papers/nope/similar", None, 404, "no paper with id 'nope'"),
    ("GET", "/papers/{id}/similar?k=0", None, 422, "k: input should be greater than or equal to 1"),
    ("GET", f"/papers/{{id}}/similar?k={MAX_K + 1}", None, 422, f"less than or equal to {MAX_K}"),
    ("GET", "/papers/{id}/similar?k=ten", None, 422, "k: input should be a valid integer"),
    ("GET", "/papers/{id}/similar?mode=fuzzy", None, 422, "mode: input should be 'dense', 'keyword' or 'hybrid'"),
    ("POST", "/search", {"text": "word " * 5_000}, 422, "text: string should have at most 20000 characters"),
    ("POST", "/search", {"text": "   "}, 422, "text is empty or only spaces"),
    ("POST", "/search", {"k": 3}, 422, "text is required"),
    ("POST", "/search", {"text": "graphs", "limit": 3}, 422, "unknown field 'limit'"),
    ("POST", "/search", ("application/json", b'{"text": '), 400, "not valid JSON"),
    ("POST", "/search", ("application/x-www-form-urlencoded", b"text=graphs"), 415, "Content-Type: application/json"),
    ("POST", "/search", {"text": "graphs", "filters": {"topics": ["knitting"]}}, 404, "no topic named 'knitting'"),
    ("POST", "/search", {"text": "graphs", "filters": {"years": [2020, 2024]}}, 404, "no 'year' field"),
    ("POST", "/similar", {"ids": []}, 422, "ids: list should have at least 1 item"),
    ("POST", "/similar", {"ids": ["{id}"], "not": ["nope"]}, 404, "no paper with id 'nope'"),
    ("POST", "/similar", {"ids": ["{id}"], "not": ["{id}"]}, 409, "both a paper to be like and one to be unlike"),
    ("POST", "/search", {"text": "graphs", "filters": {"years": [2025, 2020]}}, 409, "the first is after the last"),
    ("GET", "/topics?level=middle", None, 422, "level: input should be 'coarse' or 'fine'"),
    ("GET", "/nowhere", None, 404, "no endpoint GET /nowhere"),
    ("DELETE", "/healthz", None, 405, "method not allowed"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "says"), BAD_REQUESTS)
def test_a_bad_request_gets_one_sentence_and_a_4xx(served, sample_index, method, path, body, status, says):
    url, log, _ = served
    first = sample_index.papers["id"][0]
    path = path.replace("{id}", first)
    headers = None
    if isinstance(body, dict):
        body = json.loads(json.dumps(body).replace("{id}", first))
    elif body is not None:  # raw bytes with a content type
        headers, body = {"Content-Type": body[0]}, body[1]
    answer_status, answer, _ = call(url, method, path, body, headers)
    assert (answer_status, answer["status"]) == (status, status)
    assert set(answer) == {"error", "status"} and says in answer["error"] and "\n" not in answer["error"]
    assert "Traceback" not in log.read_text()


def test_a_close_id_is_suggested(served, sample_index):
    url, _, _ = served
    first = sample_index.papers["id"][0]
    status, answer, _ = call(url, "GET", f"/papers/{first[:-1]}x/similar")
    assert status == 404 and f"did you mean {first}" in answer["error"]


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_refused(served, chunked):
    url, log, _ = served
    body = json.dumps({"text": "w" * (MAX_BODY_BYTES + 10)}).encode()
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=60)
    headers = {"Content-Type": "application/json"}
    if chunked:  # no length declared: the server counts what arrives
        connection.request("POST", "/search", body=iter([body[:100_000], body[100_000:]]), headers=headers)
    else:
        connection.request("POST", "/search", body=body, headers=headers)
    answer = connection.getresponse()
    assert answer.status == 413 and "over the limit" in json.loads(answer.read())["error"]
    connection.close()
    assert "Traceback" not in log.read_text()


def test_it_listens_on_this_machine_only_unless_told(served):
    _, _, process = served
    listening = [c for c in psutil.Process(process.pid).net_connections("tcp") if c.status == psutil.CONN_LISTEN]
    assert listening and {c.laddr.ip for c in listening} == {"127.0.0.1"}


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--index", "/nonexistent/index"], "no such index folder"),
        (["--workers", "0"], "argument --workers: must be a whole number from 1 to 64, got 0"),
    ],
)
def test_a_server_that_cannot_start_says_why_in_one_line(sample_index_dir, arguments, says):
    command = [PAPERSCOPE, "serve", "--index", str(sample_index_dir), *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_rebuild_switches_the_answers_without_a_failed_request(sample_index_dir, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    new = tmp_path / "new.jsonl"
    new.write_text(
        "\n".join(json.dumps({"id": f"new{i}", "title": t, "abstract": a}) for i, (t, a) in enumerate(NEW_PAPERS))
    )
    before = generations.current_generation_name(folder)
    log = tmp_path / "server.log"
    limitless = ("--rate-limit", "1000000")  # requests as fast as they come back: not a test of the limit
    with open(log, "w") as stream, paperscope_server("serve", folder, limitless, stderr=stream) as (url, _):
        papers_seen, failures, stop = {}, [], threading.Event()

        def keep_asking():  # as fast as answers come: the papers each generation has, and new0's neighbours
            while not stop.is_set():
                status, health, _ = call(url, "GET", "/healthz")
                papers_seen[health.get("generation")] = health.get("papers")
                similar_status, _, headers = call(url, "GET", "/papers/new0/similar?k=3")
                expected = 404 if headers.get("x-paperscope-generation") == before else 200
                if status != 200 or similar_status != expected:
                    failures.append((status, similar_status, headers.get("x-paperscope-generation")))

        asker = threading.Thread(target=keep_asking)
        asker.start()
        added = paperscope("add", new, "--index", folder)
        after = generations.current_generation_name(folder)
        deadline = time.monotonic() + 120
        while log.read_text().count("now serving") < default_workers() and time.monotonic() < deadline:
            stop.wait(0.05)  # until every worker says it serves the new generation
        stop.set()
        asker.join()
        assert added.returncode == 0, added.stderr
        assert log.read_text().count(f"now serving {after}") == default_workers()
        assert failures == [] and papers_seen == {before: 38, after: 43}
        status, results, headers = call(url, "POST", "/search", {"text": NEW_PAPERS[2][1], "k": 1})
        assert status == 200 and results[0]["id"] == "new2" and headers["x-paperscope-generation"] == after
    assert "Traceback" not in log.read_text()


@pytest.mark.parametrize("workers", [1, 2])
def test_requests_at_once_each_get_their_answer(sample_index_dir, sample_index, workers):
    ids = sample_index.papers["id"].tolist()
    with paperscope_server("serve", sample_index_dir, ("--workers", str(workers)), stderr=subprocess.DEVNULL) as (
        url,
        process,
    ):
        children = psutil.Process(process.pid).children()
        assert (
            len([child for child in children if "spawn_main" in " ".join(child.cmdline())]) == (workers > 1) * workers
        )
        answers = [None] * 20

        def ask(i):
            answers[i] = call(url, "GET", f"/papers/{ids[i]}/similar?k=4&mode=dense")

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for i, (status, results, _) in enumerate(answers):
        assert status == 200
        assert [r["id"] for r in results] == sample_index.similar(ids[i], k=4, mode="dense").to_pandas()["id"].tolist()


def test_a_generation_that_does_not_load_is_logged_and_the_old_one_served(sample_index_dir, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    before = generations.current_generation_name(folder)
    log = tmp_path / "server.log"
    with open(log, "w") as stream, paperscope_server("serve", folder, ("--workers", "1"), stderr=stream) as (url, _):
        broken = folder / "gen-broken"
        shutil.copytree(folder / before, broken)
        (broken / generations.FAISS_FILE).write_bytes(b"IHNf")  # truncated: its size disagrees with the manifest
        (folder / generations.POINTER_FILE).write_text("gen-broken\n")
        while "still serving" not in log.read_text():  # the watcher has tried it
            status, health, _ = call(url, "GET", "/healthz")
            assert status == 200 and health["generation"] == before
        status, results, headers = call(
            url, "GET", f"/papers/{call(url, 'GET', '/topics')[1][0]['central_ids'][0]}/similar"
        )
        assert status == 200 and len(results) == 10 and headers["x-paperscope-generation"] == before
    said = [line for line in log.read_text().splitlines() if "still serving" in line]
    assert len(said) == 1 and "gen-broken" in said[0] and "Traceback" not in log.read_text()


@pytest.mark.browser
def test_the_api_docs_page_works_offline(served, browser):
    url, _, _ = served
    page = browser.new_page()
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{url}/docs")
    page.get_by_text("/papers/{paper_id}/similar").first.wait_for(timeout=30_000)  # Swagger UI drew the API
    assert page.get_by_text("/search").count() >= 1
    assert requested and all(address.startswith(url) for address in requested)  # nothing from a CDN
    page.close()


def test_collections_and_recommendations_over_http(served, sample_index):
    url, log, _ = served
    ids = sample_index.papers["id"].tolist()
    name = "reading/list 'one'"  # slashes and quotes travel in the path
    path = "/collections/" + urllib.parse.quote(name, safe="")
    status, shown, _ = call(url, "PUT", path, {"ids": ids[:3]})
    assert status == 200 and shown["name"] == name and shown["in_index"] == 3
    status, shown, _ = call(url, "POST", path + "/papers", {"ids": [ids[5]]})
    assert status == 200 and {paper["id"] for paper in shown["papers"]} == {*ids[:3], ids[5]}
    status, listing, _ = call(url, "GET", "/collections")
    assert status == 200 and [(c["name"], c["members"]) for c in listing] == [(name, 4)]
    status, found, _ = call(url, "POST", "/recommend", {"collection": name, "k": 6})
    expected = json.loads(
        paperscope("recommend", name, "-k", "6", "--json", "--index", log.parent / "index", check=True).stdout
    )  # the served copy
    assert status == 200 and found == expected and not {*ids[:3], ids[5]} & {paper["id"] for paper in found}
    status, shown, _ = call(url, "PUT", path, {"ids": [ids[9]]})  # PUT sets the papers
    assert status == 200 and [paper["id"] for paper in shown["papers"]] == [ids[9]]

    status, error, _ = call(url, "GET", "/collections/reading%2Flist%20%27onne%27")
    assert status == 404 and "did you mean" in error["error"] and name in error["error"]
    status, error, _ = call(url, "POST", path + "/papers", {"ids": ["nope"]})
    assert status == 404 and error["error"].startswith("no paper with id 'nope'")
    status, error, _ = call(url, "POST", "/recommend", {"collection": "x" * 300})
    assert status == 422 and "collection" in error["error"]
    status, error, _ = call(url, "PUT", "/collections/" + "x" * 300, {"ids": []})
    assert status == 422 and "at most 200 characters" in error["error"]
    status, deleted, _ = call(url, "DELETE", path)
    assert status == 200 and deleted == {"deleted": name}
    status, listing, _ = call(url, "GET", "/collections")
    assert listing == [] and "Traceback" not in log.read_text()


def test_saved_searches_over_http(served, sample_index):
    url, log, _ = served
    ids = sample_index.papers["id"].tolist()
    name = "fl/drift 'text'"  # slashes and quotes travel in the path
    path = "/watches/" + urllib.parse.quote(name, safe="")
    query = {"query": "federated learning with drifting clients", "name": name, "threshold": 0.3}
    status, saved, _ = call(url, "POST", "/watches", query)
    assert status == 200 and (saved["name"], saved["kind"], saved["threshold"]) == (name, "text", 0.3)
    status, error, _ = call(url, "POST", "/watches", query)
    assert status == 409 and "exists already" in error["error"]
    status, error, _ = call(url, "POST", "/watches", {"query": f"{ids[0]} nope"})
    assert status == 404 and error["error"].startswith("no paper with id 'nope'")
    status, saved, _ = call(url, "POST", "/watches", {"query": f"{ids[0]} {ids[1]}", "threshold": 0.4})
    assert status == 200 and saved["kind"] == "ids" and saved["name"] == f"{ids[0]} +1"
    status, listing, _ = call(url, "GET", "/watches")
    assert status == 200 and [w["name"] for w in listing] == [saved["name"], name]

    status, found, _ = call(url, "GET", path + "/matches?all=true&k=5")
    expected = json.loads(
        paperscope(
            "watch", "show", name, "--all", "-k", "5", "--json", "--index", log.parent / "index", check=True
        ).stdout
    )  # the served copy
    assert status == 200 and found == expected and found and all(paper["score"] >= 0.3 for paper in found)
    assert all(paper["because"]["members"][0]["title"] == query["query"] for paper in found)
    status, found, headers = call(url, "GET", path + "/matches")  # new ones: none came since it was saved
    assert status == 200 and found == [] and headers["x-paperscope-note"].startswith("no paper added since")
    status, marked, _ = call(url, "POST", path + "/shown")
    assert status == 200 and marked["name"] == name and marked["shown"] > saved["created"]
    status, error, _ = call(url, "GET", "/watches/nothing%20like%20it/matches")
    assert status == 404 and error["error"].startswith("no saved search named 'nothing like it'")
    for watch in (name, saved["name"]):
        status, deleted, _ = call(url, "DELETE", "/watches/" + urllib.parse.quote(watch, safe=""))
        assert status == 200 and deleted == {"deleted": watch}
    assert call(url, "GET", "/watches")[1] == [] and "Traceback" not in log.read_text()


def test_405_names_the_allowed_methods_and_filters_explain_themselves(served):
    url, _, _ = served
    for method, path, allowed in (
        ("TRACE", "/topics", "GET"),
        ("PATCH", "/collections/x", "DELETE, GET, PUT"),
        ("PUT", "/collections/x/papers", "DELETE, POST"),  # the papers of "x", not a collection named "x/papers"
        ("GET", "/collections/x/shown", "POST"),  # marking the feed of "x" shown
    ):
        status, error, headers = call(url, method, path, {"ids": []})
        assert status == 405 and headers["allow"] == allowed and error["status"] == 405
    status, error, _ = call(url, "POST", "/search", {"text": "graphs", "filters": {"years": [2022, None]}})
    assert status == 404 and "have no 'year' field" in error["error"]  # the sample has no years
    status, found, headers = call(url, "POST", "/search", {"text": "\u200b\u200b"})
    assert status == 200 and found == [] and "nothing to search by" in headers["x-paperscope-note"]
    status, found, headers = call(url, "POST", "/search", {"text": "xxxxqq", "mode": "keyword"})
    assert status == 200 and found == [] and headers["x-paperscope-note"].startswith("no paper contains")
