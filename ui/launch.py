"""``paperscope app``: start Streamlit on the dashboard, wait until it answers its health check,
then open the browser (unless headless), and stop the server when the command stops."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import webbrowser
from pathlib import Path

from paperscope.errors import UserError
from paperscope.limits import MAX_UPLOAD_MB
from paperscope.settings import AccessSettings
from paperscope.ui.access import check_exposure, is_loopback

APP = Path(__file__).with_name("app_script.py")  # the dashboard, as Streamlit runs it
LOCAL = "127.0.0.1"  # where servers listen unless told: this machine only
STREAMLIT_HEALTH = "/_stcore/health"
START_SECONDS = 20  # a server not answering by then: no browser is opened
STOP_SECONDS = 10  # Streamlit's graceful shutdown can hang on open sessions: killed after this
# The app's server computes on one thread unless the user sets OMP_NUM_THREADS: FAISS's OpenMP and ONNX
# Runtime's threads spun against the browser drawing the page (2,690 papers on 2 cores, three rounds
# each: a search 0.40-0.44 -> 0.36-0.38 s, the first page 2.6-2.9 -> 2.2-2.4 s); a lookup is one query,
# which more threads do not speed; an upload's build embeds on that thread (1.8x slower).
APP_THREADS = {"OMP_NUM_THREADS": "1"}


def keep_script_folder_on_path(script: str | Path) -> None:
    """Put the folder of the app's ``script`` on ``sys.path`` for good, at its end: the server does
    it before its first run (and the tests before theirs).

    Otherwise Streamlit puts the folder first on ``sys.path`` for each run and takes it out at the
    run's end (``modified_sys_path``). Taken out while another thread imports, the import's walk
    along ``sys.path`` shifts by one and skips the last folder, site-packages: the import fails. The
    after-page thread's ``import pandas`` failed that way (ModuleNotFoundError) in 5 of 60 first
    runs under AppTest, and in none of 24 with the folder kept."""
    folder = os.path.dirname(os.path.abspath(script))  # the folder as Streamlit names it
    if folder not in sys.path:
        sys.path.append(folder)


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


def check_free(host: str, port: int) -> None:
    """A UserError naming the port when something on this machine already listens on ``host``:``port``
    (before a server claims it: uvicorn and Streamlit would print their address, then fail)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"cannot listen on {host}:{port} ({(exc.strerror or str(exc)).lower()}); choose another with --port"
            ) from None


def streamlit_command(
    port: int, index: str | None = None, host: str = LOCAL, access: AccessSettings | None = None
) -> list[str]:
    """The command line that serves the dashboard on ``host``:``port`` (over the index folder
    ``index``, if given; ``access``: read-only, the uploads an hour (left to None: none on a
    loopback address): the app reads them from its arguments, ``ui/app_access.py``). Always
    headless: otherwise Streamlit's first run stops at an e-mail prompt in the terminal; the
    browser is opened by :func:`run_app` instead, once the server answers. An address of its own:
    Streamlit then neither listens on every interface nor asks an outside service for this
    machine's external IP."""
    settings = {
        "browser.gatherUsageStats": "false",
        "server.address": host,
        "server.port": str(port),
        "server.maxUploadSize": str(MAX_UPLOAD_MB),
        "client.toolbarMode": "minimal",
        "server.headless": "true",
        "theme.base": "light",
        # Streamlit's watcher of the app's modules realpaths every loaded module's file after each
        # run, on the server's event loop: 0.3-0.5 s of a first page (2,690 papers) spent not sending it
        "server.fileWatcherType": "none",
    }
    command = [sys.executable, "-m", "paperscope.ui.launch", str(APP)]  # streamlit run, the index loaded ahead
    for name, value in settings.items():
        command += [f"--{name}", value]
    access = (access or AccessSettings()).on(is_loopback(host))
    arguments = ["--uploads-per-hour", str(access.uploads_per_hour)] + (["--read-only"] if access.read_only else [])
    if index:
        if not Path(index).is_dir():
            raise UserError(f"{index}: no such index folder; build one with: paperscope build YOUR_FILES -o {index}")
        arguments += ["--index", str(Path(index).resolve())]
    return [*command, "--", *arguments]


def run_app(
    port: int, index: str | None = None, headless: bool = False, host: str = LOCAL, access: AccessSettings | None = None
) -> int:
    """Serve the dashboard on ``host``:``port`` until the server stops or this process is stopped;
    opens the browser once the server answers, unless ``headless``; ``access``: read-only mode, the
    uploads an hour (an address other machines reach needs read-only mode). The server computes on
    one thread (:data:`APP_THREADS`) unless OMP_NUM_THREADS is set. Returns the server's exit status."""
    access = access or AccessSettings()
    check_exposure(host, "app", read_only=access.read_only)
    check_free(host, port)
    server = subprocess.Popen(streamlit_command(port, index, host, access), env=APP_THREADS | dict(os.environ))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the server too
    url = f"http://{'localhost' if host in (LOCAL, '0.0.0.0', '::') else host}:{port}"
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


if __name__ == "__main__":  # the server process of streamlit_command (run by its module name: app_cache's caches)
    from paperscope.ui.app_cache import serve

    keep_script_folder_on_path(sys.argv[1])
    serve(sys.argv[1:])
