"""A fetch killed half-way: ``paperscope fetch …`` run in a process of its own until a local
service gets the request a test picks, held there while the process is killed (as a power cut or
a ``kill -9`` would stop it, between two pages)."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable

from werkzeug import Request

from tests.conftest import PAPERSCOPE

WAIT = 60.0  # seconds a held fetch may take to reach the request held (its pages before come at --delay)


def kill_at(
    service,
    arguments: list[str],
    picked: Callable[[Request], bool],
    env: dict | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Run ``paperscope ARGUMENTS``; when ``service`` (a local service with a ``before`` hook) gets a
    request ``picked`` says yes to, hold it there, call ``meanwhile`` (what a test does while the
    command is held: run another), and kill the process. The hook is removed after."""
    reached, release = threading.Event(), threading.Event()

    def hold(request: Request) -> None:
        if picked(request) and not release.is_set():
            reached.set()
            release.wait(WAIT)

    service.before = hold
    process = subprocess.Popen(
        [PAPERSCOPE, *arguments], env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert reached.wait(WAIT), f"the fetch never asked the request to hold: {process.communicate()[1][-2000:]!r}"
        if meanwhile is not None:
            meanwhile()
        process.kill()
        process.wait(WAIT)
    finally:
        release.set()
        service.before = None
        if process.poll() is None:
            process.kill()
