"""The paperscope command as a user runs it: real processes, exit codes, one-line errors."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from paperscope.index.store import generations
from paperscope.ui.launch import wait_until_healthy
from tests.conftest import PAPERSCOPE, ROOT, copy_index, paperscope
from tests.support.servers import free_port


@pytest.mark.slow
def test_default_build_then_lookups_on_the_bundled_sample(tmp_path):
    home = tmp_path / "home"
    built = paperscope("build", home=home, check=True)
    assert "read 38 papers" in built.stderr and "17 of 38 texts are longer" in built.stderr
    info = json.loads(paperscope("info", "--json", home=home, check=True).stdout)
    assert info["count"] == 38 and Path(info["folder"]) == home / "indexes" / "neurips2025-sample"
    first = json.loads(
        paperscope("search", "making diffusion transformers faster", "-k", "4", "--json", home=home, check=True).stdout
    )
    assert [r["rank"] for r in first] == [1, 2, 3, 4]
    assert all({"id", "title", "score", "rank", "abstract"} <= set(r) for r in first)
    neighbours = json.loads(paperscope("similar", first[0]["id"], "-k", "3", "--json", home=home, check=True).stdout)
    assert len(neighbours) == 3 and first[0]["id"] not in [r["id"] for r in neighbours]
    table = paperscope("similar", first[0]["id"], "-k", "2", home=home, check=True).stdout.splitlines()
    assert len(table) == 2 and table[0].split()[0] == "1"


@pytest.mark.slow
def test_lookup_without_an_index_builds_the_sample_first(tmp_path):
    result = paperscope("similar", "nope", home=tmp_path / "fresh")
    assert "building the bundled NeurIPS 2025 sample index" in result.stderr
    assert result.returncode == 2 and "no paper with id 'nope'" in result.stderr


def _bad_inputs(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "heading.txt").write_text("My Reading List\n")
    (tmp_path / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "nums.csv").write_text("id,score\n1,2\n")
    (tmp_path / "broken.jsonl").write_text('{"abstract": "fine"}\n{"abstract": \n')
    return {
        "missing": ["build", tmp_path / "missing.csv"],
        "empty": ["build", tmp_path / "empty.txt"],
        "heading only": ["build", tmp_path / "heading.txt"],
        "binary": ["build", tmp_path / "binary.bin"],
        "no text column": ["build", tmp_path / "nums.csv"],
        "broken line": ["build", tmp_path / "broken.jsonl"],
    }


@pytest.mark.slow
def test_bad_input_is_one_line_non_zero_and_leaves_the_index(sample_index_dir, tmp_path):
    generation = generations.current_generation_name(sample_index_dir)
    expected = {
        "missing": "missing.csv: no such file",
        "empty": "empty.txt: the file is empty",
        "heading only": "no abstracts after the heading",
        "binary": "binary.bin",
        "no text column": "no abstract-like field",
        "broken line": "broken.jsonl:2: broken JSON line",
    }
    for name, args in _bad_inputs(tmp_path).items():
        result = paperscope(*args, "-o", sample_index_dir)
        assert result.returncode == 2, name
        assert result.stderr.count("\n") == 1 and expected[name] in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr
    assert generations.current_generation_name(sample_index_dir) == generation


@pytest.mark.parametrize(
    "args, message",
    [
        (["-k", "0"], "argument -k: must be a whole number from 1 to 1,000, got 0"),
        (["-k", "-2"], "argument -k: must be a whole number from 1 to 1,000, got -2"),
        (["-k", "100000"], "argument -k: must be a whole number from 1 to 1,000, got 100000"),  # the service's limit
        (["-k", "many"], "argument -k: 'many' is not a whole number"),
    ],
)
@pytest.mark.slow
def test_bad_k_on_the_command_line(sample_index_dir, args, message):
    result = paperscope("similar", "anything", "--index", sample_index_dir, *args)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1


def test_missing_index_folder_says_how_to_build_one(tmp_path):
    result = paperscope("info", "--index", tmp_path / "nowhere")
    assert result.returncode == 2
    assert (
        result.stderr.strip() == f"paperscope: error: {tmp_path / 'nowhere'}: no such index folder; "
        f"build one with: paperscope build YOUR_FILES -o {tmp_path / 'nowhere'}"
    )


@pytest.mark.slow
def test_app_starts_without_any_prompt_on_a_fresh_home(sample_index_dir, tmp_path):
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "BROWSER": "true"}  # BROWSER: opening a browser is a no-op here
    server = subprocess.Popen(
        [PAPERSCOPE, "app", "--index", str(sample_index_dir), "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        healthy = wait_until_healthy(f"http://127.0.0.1:{port}", server, timeout=60)
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0].decode()
    assert healthy, f"the app did not answer within 60 s (a first-run prompt?):\n{output}"
    assert "Email" not in output


@pytest.mark.slow
def test_the_sample_index_is_built_again_after_an_update_changes_what_an_index_holds(sample_index_dir, tmp_path):
    # the sample's index built by this code is used as it is; one whose manifest says other code
    # built it (an older paperscope: other topic names) is built again on the next lookup
    home = tmp_path / "home"
    folder = copy_index(sample_index_dir, home / "indexes" / "neurips2025-sample")
    first = generations.current_generation_name(folder)
    assert "building" not in paperscope("search", "speculative decoding", "-k", "1", home=home, check=True).stderr
    manifest_path = folder / first / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["versions"][generations.CODE_VERSION] == generations.code_digest()
    manifest["versions"][generations.CODE_VERSION] = "an older paperscope"
    manifest_path.write_text(json.dumps(manifest))
    lookup = paperscope("search", "speculative decoding", "-k", "1", home=home, check=True)
    assert "building the bundled NeurIPS 2025 sample index" in lookup.stderr and lookup.stdout.strip()
    assert generations.current_generation_name(folder) != first and generations.sample_is_current(folder)


@pytest.mark.slow
def test_a_users_own_index_in_the_default_folder_is_never_replaced_by_the_sample(tmp_path):
    # `paperscope build FILES` without -o writes to the default folder: an update that changes the
    # code must not build the sample over the user's papers
    home = tmp_path / "home"
    own = ROOT / "data" / "neurips2025_part1.txt"
    paperscope("build", own, home=home, check=True)
    folder = home / "indexes" / "neurips2025-sample"
    first = generations.current_generation_name(folder)
    manifest_path = folder / first / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["versions"][generations.CODE_VERSION] = "an older paperscope"
    manifest_path.write_text(json.dumps(manifest))
    lookup = paperscope("info", "--json", home=home, check=True)
    assert "building" not in lookup.stderr and generations.current_generation_name(folder) == first
    assert json.loads(lookup.stdout)["corpus"]["sources"] == ["neurips2025_part1.txt"]


@pytest.mark.slow
def test_setup_builds_the_sample_so_the_app_answers_at_once(tmp_path):
    # .ci/setup (without --test) on the environment this test runs in, with a fresh data folder:
    # it ends by building the bundled sample's index, so no lookup or app start builds it again.
    home = tmp_path / "home"
    env = {**os.environ, "PAPERSCOPE_HOME": str(home)}
    setup = ROOT / ".ci" / "setup"
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert generations.is_current_format(home / "indexes" / "neurips2025-sample")
    lookup = paperscope("search", "speculative decoding", "-k", "1", home=home, check=True)
    assert "first run" not in lookup.stderr and lookup.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["serve", "app"])
def test_a_server_on_a_port_in_use_is_one_line_and_claims_nothing(sample_index_dir, command):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        extra = "--headless" if command == "app" else "--access-log"
        result = paperscope(command, "--index", sample_index_dir, "--port", port, extra)
    assert result.returncode == 2 and result.stderr.strip() == (
        f"paperscope: error: cannot listen on 127.0.0.1:{port} (address already in use); choose another with --port"
    )
    assert "serving" not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_app_listens_on_this_machine_only_and_asks_no_outside_service(sample_index_dir, tmp_path):
    import psutil

    from tests.support.servers import paperscope_server

    log = tmp_path / "app.log"
    with open(log, "w") as output, paperscope_server("app", sample_index_dir, stdout=output, stderr=output) as (_, app):
        command = psutil.Process(app.pid)  # paperscope app, and its server (python -m paperscope.ui.launch: streamlit)
        servers = [command, *command.children(recursive=True)]
        connections = [connection for server in servers for connection in server.net_connections("inet")]
        listening = {connection.laddr.ip for connection in connections if connection.status == psutil.CONN_LISTEN}
    assert listening == {"127.0.0.1"}
    printed = log.read_text()
    assert "Network URL" not in printed and "External URL" not in printed and "external IP" not in printed
