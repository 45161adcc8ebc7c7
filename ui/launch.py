"""``paperscope app``: start Streamlit on the dashboard, wait until it answers its health check,
then open the browser (unless headless), and stop the server when the command stops."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
import webbrowser
from pathlib import Path

from paperscope.errors import UserError

APP = Path(__file__).with_name("app.py")
STREAMLIT_HEALTH = "/_stcore/health"
START_SECONDS = 20  # a server not answering by then: no browser is opened
STOP_SECONDS = 10  # Streamlit's graceful shutdown can hang on open sessions: killed after this


def wait_until_healthy(
    url: str, server: subprocess.Popen, timeout: float = 60.0, health: str = STREAMLIT_HEALTH
) -> bool:
    """Poll the health check at ``url`` + ``health`` (Streamlit's, or ``/healthz`` of ``paperscope
    serve``) until it answers 200 (True), or the server exits or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}{health}", timeout=1) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.05)  # not listening yet, or not ready (503)
    return False


def streamlit_command(port: int, index: str | None = None) -> list[str]:
    """The command line that serves the dashboard on ``port`` (over the index folder ``index``, if
    given). Always headless: otherwise Streamlit's first run stops at an e-mail prompt in the
    terminal; the browser is opened by :func:`run_app` instead, once the server answers."""
    settings = {
        "browser.gatherUsageStats": "false",
        "server.port": str(port),
        "server.maxUploadSize": "50",
        "client.toolbarMode": "minimal",
        "server.headless": "true",
        "theme.base": "light",
    }
    command = [sys.executable, "-m", "streamlit", "run", str(APP)]
    for name, value in settings.items():
        command += [f"--{name}", value]
    if index:
        if not Path(index).is_dir():
            raise UserError(f"{index}: no such index folder; build one with: paperscope build -o {index}")
        command += ["--", "--index", str(Path(index).resolve())]
    return command


def run_app(port: int, index: str | None = None, headless: bool = False) -> int:
    """Serve the dashboard on ``port`` until the server stops or this process is stopped; opens
    the browser once the server answers, unless ``headless``. Returns the server's exit status."""
    server = subprocess.Popen(streamlit_command(port, index))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the server too
    url = f"http://localhost:{port}"
    try:
        if wait_until_healthy(url, server, timeout=START_SECONDS) and not headless:
            webbrowser.open(url)
        return server.wait()
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                server.kill()
