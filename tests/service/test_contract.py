"""The service's contract holds against an outside fuzzer: schemathesis, every check, every endpoint.

Its schema says what the server enforces (lengths, patterns, ranges, every status with the error
model), 405 answers carry Allow, and examples and OpenAPI links give the fuzzer real paper ids.
It runs with a write token: the schema declares the bearer scheme and its 401/403/429 answers, and
schemathesis's ignored_auth check sends requests without it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, SUPPORT, copy_index
from tests.support.servers import paperscope_server

SCHEMATHESIS = Path(os.sys.executable).parent / "st"
TOKEN = "contract-fuzzing-token-0123456789"


@pytest.mark.slow
def test_schemathesis_finds_no_failure_in_any_endpoint(sample_index_dir, tmp_path):
    folder = tmp_path / "index"
    copy_index(sample_index_dir, folder)
    log = tmp_path / "server.log"
    (tmp_path / "tokens").write_text(f"fuzzer {TOKEN} write\n")  # with a token: the schema declares the bearer scheme
    arguments = ("--workers", "1", "--token-file", str(tmp_path / "tokens"), "--rate-limit", "1000000")
    with open(log, "w") as output, paperscope_server("serve", folder, arguments, stderr=output) as (url, _):
        done = subprocess.run(
            [str(SCHEMATHESIS), "--config-file", str(SUPPORT / "schemathesis.toml"),  # 413 refuses negative data too
             "run", f"{url}/openapi.json", "--checks", "all", "--seed", "20261201",
             "--max-examples", "30", "--generation-database", "none", "--no-color",
             "--header", f"Authorization: Bearer {TOKEN}"],
            capture_output=True, text=True, timeout=600, cwd=ROOT,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks"},  # errors: one sentence each
        )  # fmt: skip
    summary = done.stdout[-3000:]
    assert done.returncode == 0, summary
    assert "Selected: 23/23" in done.stdout  # every operation, the maps' two and the saved searches' five among them
    assert " passed" in summary and "failure" not in summary.split("SUMMARY")[-1]
    assert "Traceback" not in log.read_text()
