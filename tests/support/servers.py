"""Test and benchmark tools, not part of the product: a free port, ``paperscope app`` or ``serve``
started on one and answering its health check, the headless Chromium that drives the app, and
a probe of the map's labels run in the page."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from paperscope.ui.launch import wait_until_healthy
from tests.conftest import PAPERSCOPE

# Debian's chromium (.ci/setup --test installs it); the flags keep it off this machine's closed network.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


HEALTH_CHECKS = {"app": "/_stcore/health", "serve": "/healthz"}  # Streamlit's, and paperscope serve's


@contextlib.contextmanager
def paperscope_server(
    command: str,
    index_dir,
    arguments: tuple[str, ...] = (),
    timeout: float = 120.0,
    launcher: tuple[str, ...] = (),
    **popen,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``paperscope app`` (headless) or ``paperscope serve`` (``command``) on ``index_dir`` and a
    free port, answering its health check; yields its URL and the process. ``arguments``: more
    options; ``launcher``: what Python runs instead of the installed command (a test wrapper of
    the command line and its arguments); ``popen``:
    arguments of ``subprocess.Popen`` (where its output goes). Stops it after; a server that does
    not answer within ``timeout`` seconds is a RuntimeError."""
    port = free_port()
    headless = ("--headless",) if command == "app" else ()
    start = [sys.executable, *launcher] if launcher else [PAPERSCOPE]
    command_line = [*start, command, "--index", str(index_dir), "--port", str(port)]
    process = subprocess.Popen([*command_line, *headless, *arguments], **popen)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url, process, timeout, health=HEALTH_CHECKS[command]):
            raise RuntimeError(f"paperscope {command} on {index_dir} did not answer within {timeout} s")
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


# JupyterLab (lab) or Notebook 7 (notebook) kept off the network: no news feed, no update check, no
# extension listing from PyPI; its app reachable from the page as window.jupyterapp (to run cells).
JUPYTER_OPTIONS = {
    "lab": [
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--LabApp.expose_app_in_browser=True",
    ],
    "notebook": ["--JupyterNotebookApp.expose_app_in_browser=True"],
}


@contextlib.contextmanager
def jupyter_server(root: Path, home: Path, app: str = "lab", timeout: float = 120.0) -> Iterator[tuple[str, Path]]:
    """JupyterLab or Notebook 7 (``app``) serving the notebooks of ``root`` on a free port of this
    machine, without a token or a browser; its configuration, settings, workspaces and runtime files
    (the kernels' connection files) in ``home``, its log in ``home/server.log``. Yields its URL and
    its runtime folder; stops it (and its kernels) after. A server that does not answer
    ``/api/status`` within ``timeout`` seconds is a RuntimeError."""
    folders = {name: home / name for name in ("config", "data", "runtime", "settings", "workspaces")}
    notification = folders["settings"] / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no news toast either
    env = os.environ | {
        "JUPYTER_CONFIG_DIR": str(folders["config"]),
        "JUPYTER_DATA_DIR": str(folders["data"]),
        "JUPYTER_RUNTIME_DIR": str(folders["runtime"]),
        "JUPYTERLAB_SETTINGS_DIR": str(folders["settings"]),
        "JUPYTERLAB_WORKSPACES_DIR": str(folders["workspaces"]),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    port = free_port()
    command = [
        sys.executable, "-m", "jupyterlab" if app == "lab" else "notebook", "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--IdentityProvider.token=", f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True", *JUPYTER_OPTIONS[app],
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with open(home / "server.log", "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            if not wait_until_healthy(url, process, timeout, health="/api/status"):
                raise RuntimeError(f"jupyter {app} did not answer within {timeout} s: see {home / 'server.log'}")
            yield url, folders["runtime"]
        finally:
            process.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def open_notebook(page, url: str, app: str, name: str) -> str:
    """Open the notebook ``name`` of the server at ``url`` (``app``: lab or notebook) in ``page``
    and wait until its kernel is ready; the kernel's id (its connection file is kernel-ID.json in
    the server's runtime folder)."""
    page.goto(f"{url}/lab/tree/{name}" if app == "lab" else f"{url}/notebooks/{name}")
    page.wait_for_function("() => window.jupyterapp?.shell?.currentWidget?.sessionContext", timeout=120_000)
    return page.evaluate(
        """async () => { const panel = jupyterapp.shell.currentWidget; await panel.context.ready;
              await panel.sessionContext.ready; return panel.sessionContext.session.kernel.id; }"""
    )


def run_cells(page, command: str = "notebook:run-all-cells") -> None:
    """Run the open notebook's cells (or another notebook command), as its menu would; returns at once."""
    page.evaluate("(command) => { jupyterapp.commands.execute(command); }", command)


class Kernel:
    """A notebook's own kernel, reached from here through its connection file."""

    def __init__(self, connection_file: Path):
        from jupyter_client import BlockingKernelClient

        self.client = BlockingKernelClient(connection_file=str(connection_file))
        self.client.load_connection_file()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str) -> str:
        """Run ``code`` in the kernel; what it printed (an error in it is an AssertionError)."""
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                raise AssertionError("\n".join(message["content"]["traceback"]))

        self.client.execute_interactive(code, timeout=120, output_hook=keep)
        return "".join(printed)

    def value(self, expression: str):
        """The value of ``expression`` in the kernel, through JSON."""
        return json.loads(self.run(f"import json; print(json.dumps({expression}))").strip())

    def wait_for(self, expression: str, wanted, timeout: float = 30.0):
        """``expression`` once it equals ``wanted`` (a selection reaches the kernel a moment after the
        mouse is released); its last value when ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        value = self.value(expression)
        while value != wanted and time.monotonic() < deadline:
            value = self.value(expression)
        return value

    def close(self) -> None:
        self.client.stop_channels()


# Run in the page: every visible map label's box on the page, the pairs that overlap and the
# labels not wholly inside the map.
def far_labels(page) -> list[tuple[str, float]]:
    """The drawn labels whose box sits farther than ``LABEL_REACH`` of the map's smaller side from
    every paper of its topic, with that distance in pixels."""
    return [
        (label["text"], label["distance"])
        for label in page.evaluate(MAP_LABEL_DISTANCES)
        if label["distance"] > LABEL_REACH * min(label["width"], label["height"]) + 0.5
    ]


def show_fine_level(page) -> None:
    """In the app: pick "fine" as the sidebar's topic level, fold the sidebar again and reset the
    view, so that the whole map shows its fine topics' labels at the full width."""
    width = page.evaluate("() => document.querySelector('.ps-map').offsetWidth")
    page.get_by_test_id("stExpandSidebarButton").click()
    page.get_by_test_id("stSidebar").get_by_text("fine", exact=True).click()
    page.wait_for_selector(".ps-map[data-label-level='fine']", timeout=60_000)
    page.get_by_test_id("stSidebar").get_by_test_id("stSidebarCollapseButton").click()
    page.wait_for_function(f"() => document.querySelector('.ps-map').offsetWidth === {width}")
    page.get_by_role("button", name="Reset view").click()
    page.wait_for_function("() => !document.querySelector('.ps-map').parentElement.__paperscopeMap.pending")


LABEL_REACH = 0.04  # map.js's PS_LEADER: a label's box is at most this share of the map's smaller side from its anchor
# Each drawn label's distance (px) from its box to the nearest paper of its topic, its leader line's
# length (from its anchor to its box) and the map's size.
MAP_LABEL_DISTANCES = """() => {
  const map = document.querySelector('.ps-map').parentElement.__paperscopeMap;
  return map.labels.filter(l => l.placed).map(l => {
    const topics = l.level === 'fine' ? map.fine : map.coarse; const b = l.box; let best = Infinity;
    for (let row = 0; row < map.count; row++) {
      if (topics[row] !== l.topic) continue;
      const x = map.px(map.x[row]), y = map.py(map.y[row]);
      const dx = Math.max(b.x - x, 0, x - b.x - b.w), dy = Math.max(b.y - y, 0, y - b.y - b.h);
      best = Math.min(best, Math.hypot(dx, dy));
    }
    const leader = Math.hypot(Math.max(b.x - l.ax, 0, l.ax - b.x - b.w), Math.max(b.y - l.ay, 0, l.ay - b.y - b.h));
    return {text: l.text, level: l.level, distance: best, leader, width: map.width, height: map.height};
  });
}"""
MAP_LABEL_LAYOUT = """() => {
  const frame = document.querySelector('.ps-map'); const map = frame.getBoundingClientRect();
  const labels = [...frame.querySelectorAll('.ps-label')].filter(e => e.style.visibility === 'visible').map(e => {
    const b = e.getBoundingClientRect();
    return {text: e.textContent, level: e.dataset.level, left: b.left, top: b.top, right: b.right, bottom: b.bottom,
            font: parseFloat(getComputedStyle(e).fontSize)};
  });
  const overlaps = [], outside = [];
  labels.forEach((a, i) => {
    if (a.left < map.left || a.top < map.top || a.right > map.right || a.bottom > map.bottom) outside.push(a.text);
    labels.slice(i + 1).forEach(b => {
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push([a.text, b.text]);
    });
  });
  return {share: map.width * map.height / (innerWidth * innerHeight), level: frame.dataset.labelLevel, labels,
          overlaps, outside};
}"""
