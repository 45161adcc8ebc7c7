"""The suite's two tiers (tests/conftest.py): every test not marked slow runs first, and a failure among
them stops the run before the slow tier, in a pytest of its own on a few made-up tests."""

import re
import subprocess
import sys

import pytest

from tests.conftest import COMMAND_TIMEOUT, ROOT

MADE_UP = """
import pytest

@pytest.mark.slow
def test_slow_written_first():
    print("RAN slow")

def test_fast_written_second():
    print("RAN fast")
    assert {fails}

def test_fast_written_last():
    print("RAN last")
"""


def _run(tmp_path, fails: bool) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_protocol, pytest_sessionstart\n"
    )
    (tmp_path / "test_made_up.py").write_text(MADE_UP.format(fails="False" if fails else "True"))
    command = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "-o", "markers=slow", str(tmp_path)]
    environment = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=COMMAND_TIMEOUT
    )


@pytest.mark.slow  # two pytest runs in processes of their own
@pytest.mark.parametrize("fails", [False, True], ids=["passing", "failing"])
def test_the_fast_tier_runs_first_and_a_failure_there_stops_the_run(tmp_path, fails):
    done = _run(tmp_path, fails)
    ran = re.findall(r"RAN (\w+)\n", done.stdout)  # what each test printed, in the order they ran
    assert ran == (["fast", "last"] if fails else ["fast", "last", "slow"]), done.stdout
    assert "fast tier done in" in done.stdout and (done.returncode == 1) == fails, done.stdout
    if fails:
        assert "the fast tier failed (1): the slow tier is not run" in done.stdout
