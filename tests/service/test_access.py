"""A server shared with a group (#42), against real `paperscope serve` processes over loopback:
tokens (none, a wrong one, a read token writing, one in the URL), read-only mode, bursts past the
rate limit, the refusal to listen beyond this machine unprotected, and the audit log's lines."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from paperscope.limits import RATE_LIMIT_PER_MINUTE, UPLOADS_PER_HOUR
from paperscope.settings import AccessSettings
from paperscope.ui.access import READ_ONLY
from paperscope.ui.service import MAX_BODY_BYTES
from tests.conftest import ROOT, copy_index, paperscope
from tests.service.test_service import call
from tests.support.servers import free_port, paperscope_server

READER, WRITER = "r3ad-0nly-t0ken-aaaaaaaaaaaa", "wr1te-t0ken-bbbbbbbbbbbbbbbb"
TOKENS = f"# name token scope\nrita {READER} read\nwill {WRITER}   write  # the curator\n\n"


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def audit_lines(index: Path) -> list[dict]:
    """The audit log's lines about ``index``, through `paperscope audit --json`."""
    done = paperscope("audit", "--json", "--limit", "0", check=True)
    return [line for line in json.loads(done.stdout) if line["index"] == str(index.resolve())]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"rita {READER}\n", "tokens:1: expected NAME TOKEN SCOPE separated by spaces, got 2 fields"),
        (f"# team\nrita {READER} admin\n", "tokens:2: unknown scope 'admin'; choose one of read, write"),
        (f"rita {READER} read\nrita {WRITER} write\n", "tokens:2: the name 'rita' is given twice"),
        (f"rita {READER} read\nwill {READER} write\n", "tokens:2: the token of 'will' is also another's"),
        ("rita short read\n", "tokens:1: the token of 'rita' has 5 characters, fewer than 16"),
        ("# nobody yet\n", "tokens: no token in the file"),
    ],
)
def test_a_bad_token_file_is_one_line_naming_its_line_and_never_the_token(tmp_path, text, message):
    tokens = tmp_path / "tokens"
    tokens.write_text(text)
    done = paperscope("serve", "--index", tmp_path / "none", "--token-file", tokens)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"paperscope: error: {tokens}") and message.split(":", 1)[1] in done.stderr
    assert READER not in done.stderr and WRITER not in done.stderr


@pytest.mark.parametrize(
    ("command", "host", "needs"),
    [
        ("serve", "0.0.0.0", "give --token-file FILE (or PAPERSCOPE_TOKEN_FILE) or --read-only"),
        ("serve", "::", "give --token-file FILE (or PAPERSCOPE_TOKEN_FILE) or --read-only"),
        ("app", "0.0.0.0", "give --read-only"),
    ],
)
def test_a_server_reachable_from_other_machines_without_tokens_or_read_only_does_not_start(
    sample_index_dir, command, host, needs
):
    headless = ("--headless",) if command == "app" else ()
    done = paperscope(command, "--index", sample_index_dir, "--host", host, "--port", 1, *headless)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"paperscope: error: --host {host} is reachable from other machines: {needs}")
    assert done.stderr.count("\n") == 1 and "serving" not in done.stdout + done.stderr


def test_loopback_addresses_need_no_protection():
    from paperscope.ui.access import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "localhost", "[::1]", "::ffff:127.0.0.1"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5", "example.org", "192.168.1.2"]))


@pytest.fixture(scope="module")
def guarded(sample_index_dir, tmp_path_factory):
    """A server asking for tokens, in 2 workers (each reads the token file), logging every request."""
    home = tmp_path_factory.mktemp("guarded")
    folder = copy_index(sample_index_dir, home / "index")
    (home / "tokens").write_text(TOKENS)
    log = home / "server.log"
    arguments = ("--token-file", home / "tokens", "--workers", "2", "--access-log", "--rate-limit", "1000")
    with (
        open(log, "w") as stream,
        paperscope_server("serve", folder, arguments, stdout=stream, stderr=stream) as (url, _),
    ):
        yield url, folder, log


@pytest.mark.slow
def test_without_a_right_token_nothing_but_the_health_check_answers(guarded):
    url, _, _ = guarded
    assert call(url, "GET", "/healthz")[0] == 200
    for headers in ({}, bearer("not-a-token-of-this-server"), {"Authorization": f"Basic {READER}"}):
        status, body, answer_headers = call(url, "GET", "/collections", headers=headers)
        assert (status, body["status"]) == (401, 401) and answer_headers["www-authenticate"] == "Bearer", body
        assert "Authorization: Bearer" in body["error"] and body["error"].count(".") <= 1
        assert call(url, "POST", "/search", {"text": "diffusion"}, headers)[0] == 401
    assert call(url, "GET", "/collections", headers=bearer(READER))[0] == 200
    status, results, _ = call(url, "POST", "/search", {"text": "diffusion", "k": 2}, bearer(READER))
    assert status == 200 and len(results) == 2


@pytest.mark.slow
def test_a_read_token_cannot_write_and_a_write_token_can_each_write_audited(guarded):
    url, folder, _ = guarded
    status, body, _ = call(url, "PUT", "/collections/club", {"ids": []}, bearer(READER))
    assert status == 403 and body["error"] == "the token 'rita' may only read; a change needs a token of scope write"
    assert call(url, "GET", "/collections/club", headers=bearer(WRITER))[0] == 404  # nothing was made
    assert call(url, "PUT", "/collections/club", {"ids": []}, bearer(WRITER))[0] == 200
    assert call(url, "DELETE", "/collections/club", headers=bearer(READER))[0] == 403
    assert call(url, "DELETE", "/collections/club", headers=bearer(WRITER))[0] == 200
    assert call(url, "PUT", "/collections/club", {"ids": []})[0] == 401
    lines = [(line["who"], line["via"], line["action"], line["outcome"]) for line in audit_lines(folder)]
    assert lines[-5:] == [
        ("rita", "serve", "PUT /collections/club", 403),
        ("will", "serve", "PUT /collections/club", 200),
        ("rita", "serve", "DELETE /collections/club", 403),
        ("will", "serve", "DELETE /collections/club", 200),
        ("127.0.0.1", "serve", "PUT /collections/club", 401),
    ]
    assert all(line["time"].endswith("Z") for line in audit_lines(folder))
    printed = paperscope("audit", "--limit", "2").stdout.splitlines()
    assert "will  serve  DELETE /collections/club  -> 200" in printed[-2] and "-> 401" in printed[-1]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["token", "access_token", "Token"])
def test_a_token_in_the_url_is_refused_and_never_logged(guarded, name):
    url, _, log = guarded
    status, body, _ = call(url, "GET", f"/collections?{name}={WRITER}&k=1")
    assert status == 401 and "Authorization: Bearer" in body["error"] and "URL" in body["error"]
    status, _, _ = call(url, "GET", f"/collections?{name}={WRITER}", headers=bearer(WRITER))  # even with the header
    assert status == 401
    assert call(url, "GET", "/collections?other=1", headers=bearer(WRITER))[0] == 200  # the log has the request now
    printed = log.read_text()
    assert '"GET /collections?other=1 HTTP/1.1" 200' in printed and "token=REDACTED" in printed
    assert WRITER not in printed and READER not in printed


@pytest.mark.slow
def test_the_schema_declares_the_bearer_scheme_and_its_answers(guarded):
    url, _, _ = guarded
    schema = call(url, "GET", "/openapi.json", headers=bearer(READER))[1]
    assert schema["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert schema["security"] == [{"bearer": []}] and schema["paths"]["/healthz"]["get"]["security"] == []
    put = schema["paths"]["/collections/{name}"]["put"]["responses"]
    assert {"401", "403", "429"} <= set(put) and "Retry-After" in put["429"]["headers"]
    assert "403" not in schema["paths"]["/search"]["post"]["responses"]  # a lookup is never refused to a reader


@pytest.mark.slow
def test_read_only_refuses_every_write_in_one_sentence_and_limits_each_address(sample_index_dir, tmp_path):
    folder = copy_index(sample_index_dir, tmp_path / "index")
    with paperscope_server("serve", folder, ("--read-only", "--workers", "1", "--rate-limit", "4")) as (url, _):
        for method, path, body in [
            ("PUT", "/collections/club", {"ids": []}),
            ("POST", "/collections/club/papers", {"ids": []}),
            ("DELETE", "/collections/club", None),
        ]:
            status, answer, _ = call(url, method, path, body)
            assert (status, answer) == (403, {"error": READ_ONLY, "status": 403})
        assert call(url, "POST", "/search", {"text": "diffusion", "k": 1})[0] == 200  # the 4th request
        status, answer, headers = call(url, "GET", "/collections")
        assert status == 429 and 1 <= int(headers["retry-after"]) <= 15, headers
        assert answer["error"].startswith("over the limit of 4 requests a minute; try again in")
        assert all(call(url, "GET", "/healthz")[0] == 200 for _ in range(10))  # the health check is never limited
    assert [line["outcome"] for line in audit_lines(folder)] == [403, 403, 403]


@pytest.mark.slow
def test_a_burst_past_the_limit_is_answered_429_for_that_token_only(sample_index_dir, tmp_path):
    folder = copy_index(sample_index_dir, tmp_path / "index")
    (tmp_path / "tokens").write_text(TOKENS)
    arguments = ("--token-file", tmp_path / "tokens", "--workers", "1", "--rate-limit", "10")
    with paperscope_server("serve", folder, arguments) as (url, _):
        statuses = [call(url, "GET", f"/papers/x{i}", headers=bearer(READER))[0] for i in range(15)]
        assert statuses == [404] * 10 + [429] * 5
        status, answer, headers = call(url, "GET", "/collections", headers=bearer(READER))
        assert status == 429 and int(headers["retry-after"]) in range(1, 8) and answer["status"] == 429
        assert call(url, "GET", "/collections", headers=bearer(WRITER))[0] == 200  # another token: its own bucket
        statuses = [call(url, "GET", "/collections", headers=bearer("wrong-token-guessed-000"))[0] for _ in range(12)]
        assert statuses == [401] * 10 + [429] * 2  # guessing tokens is limited too, by address


@pytest.mark.slow
def test_on_a_loopback_address_a_script_s_lookups_are_not_limited_by_default(sample_index_dir, tmp_path):
    folder, log = copy_index(sample_index_dir, tmp_path / "index"), tmp_path / "server.log"
    with open(log, "w") as stream, paperscope_server("serve", folder, ("--workers", "1"), stderr=stream) as (url, _):
        ids = [paper["id"] for paper in call(url, "POST", "/search", {"text": "diffusion", "k": 30})[1]]
        statuses = [call(url, "GET", f"/papers/{urllib.parse.quote(ids[i % len(ids)])}")[0] for i in range(300)]
    assert statuses == [200] * 300  # the old default, 120 a minute per client, answered most past the 120th 429
    assert "; no rate limit" in log.read_text()


@pytest.mark.slow
def test_beyond_loopback_the_rate_limit_is_on_by_default_and_an_explicit_one_wins(sample_index_dir, tmp_path):
    folder = copy_index(sample_index_dir, tmp_path / "index")
    beyond = ("--host", "0.0.0.0", "--read-only", "--workers", "1")  # reachable from 127.0.0.1 as well
    with paperscope_server("serve", folder, beyond) as (url, _):
        statuses = [call(url, "GET", "/papers/none")[0] for _ in range(2 * RATE_LIMIT_PER_MINUTE)]
    assert 429 in statuses and statuses.index(429) >= RATE_LIMIT_PER_MINUTE  # a burst of the limit, then refills
    assert set(statuses[: statuses.index(429)]) == {404}
    with paperscope_server("serve", folder, (*beyond, "--rate-limit", "0")) as (url, _):
        assert {call(url, "GET", "/papers/none")[0] for _ in range(2 * RATE_LIMIT_PER_MINUTE)} == {404}


def test_the_app_limits_uploads_by_default_only_beyond_loopback_and_an_explicit_limit_wins():
    from paperscope.ui.launch import streamlit_command

    def uploads_an_hour(host: str, **given) -> int:  # what the app reads from its command line (ui/app_access.py)
        command = streamlit_command(8501, host=host, access=AccessSettings(**given))
        return int(command[command.index("--uploads-per-hour") + 1])

    assert uploads_an_hour("127.0.0.1") == uploads_an_hour("::1") == 0
    assert uploads_an_hour("0.0.0.0", read_only=True) == UPLOADS_PER_HOUR
    assert uploads_an_hour("localhost", uploads_per_hour=3) == 3 and uploads_an_hour("::", uploads_per_hour=0) == 0


EXAMPLE = ROOT / "docs" / "examples" / "nginx-paperscope.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def test_the_example_proxy_names_the_servers_defaults():
    from paperscope.ui.cli import make_parser

    text = EXAMPLE.read_text()
    for command in ("serve", "app"):
        port = make_parser().parse_args([command]).port
        assert f"server 127.0.0.1:{port};" in text and f"paperscope {command} (--port {port})" in text
    assert "proxy_set_header Upgrade $http_upgrade;" in text and "client_max_body_size 50m;" in text
    assert f"client_max_body_size {MAX_BODY_BYTES // 1024}k;" in text and '"$request_method $uri"' in text


@pytest.mark.slow
@pytest.mark.skipif(not Path(NGINX).exists(), reason="needs Debian's nginx-light (.ci/setup --test installs it)")
def test_the_example_proxy_serves_the_service_over_tls_and_logs_no_token(guarded, tmp_path):
    """nginx on docs/examples/nginx-paperscope.conf (its certificate, ports and log moved into
    tmp_path), in front of the guarded server: TLS, tokens passed on, no token in its log."""
    url, _, _ = guarded
    key, certificate = tmp_path / "privkey.pem", tmp_path / "fullchain.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=api.lab.example", "-keyout", key, "-out", certificate],
                   check=True, capture_output=True)  # fmt: skip
    port = free_port()
    config = (
        EXAMPLE.read_text()
        .replace("/etc/ssl/lab/", f"{tmp_path}/")
        .replace("/var/log/nginx/", f"{tmp_path}/")
        .replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
        .replace("127.0.0.1:8000", urllib.parse.urlsplit(url).netloc)
    )
    (tmp_path / "nginx.conf").write_text(config)
    nginx = [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    settings = f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;"
    checked = subprocess.run([*nginx, "-t", "-g", settings], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    proxy = subprocess.Popen([*nginx, "-g", f"daemon off; {settings}"])
    context = ssl.create_default_context(cafile=str(certificate))
    context.check_hostname = False
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answers = [_tls(port, context, path, headers) for path, headers in [
                    ("/healthz", {}), ("/collections", {}), ("/collections", bearer(READER)),
                    (f"/collections?token={READER}", {}),
                ]]  # fmt: skip
                break
            except OSError:
                assert time.monotonic() < deadline and proxy.poll() is None, "nginx did not answer"
                time.sleep(0.1)
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    assert [status for status, _ in answers] == [200, 401, 200, 401]
    assert "Authorization: Bearer" in answers[1][1]["error"]
    logged = (tmp_path / "paperscope-access.log").read_text()
    assert '"GET /collections" 401' in logged and READER not in logged


def _tls(port: int, context, path: str, headers: dict) -> tuple[int, dict]:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request("GET", path, headers={"Host": "api.lab.example", **headers})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


@pytest.mark.slow
def test_the_command_lines_writes_are_audited_with_their_outcome(sample_index_dir, tmp_path):
    import getpass

    from paperscope import PaperIndex

    folder = copy_index(sample_index_dir, tmp_path / "index")
    paper = PaperIndex.load(folder).ids()[0]

    def run(*arguments):
        return paperscope(*arguments, "--index", folder)

    assert run("collection", "create", "audited", paper).returncode == 0
    assert run("collection", "add", "audited", "nosuch").returncode == 2
    assert run("collection", "list").returncode == 0  # no write: not recorded
    log = json.loads(paperscope("audit", "--json", check=True).stdout)
    mine = [line for line in log if line["index"] == str(folder)]
    user = getpass.getuser()
    assert [(line["who"], line["via"], line["action"]) for line in mine] == [
        (user, "cli", "collection create audited"), (user, "cli", "collection add audited")]  # fmt: skip
    assert mine[0]["outcome"] == "ok" and "nosuch" in mine[1]["outcome"]  # the error's sentence
