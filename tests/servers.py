"""Test and benchmark tools, not part of the product: a free port, ``paperscope app`` or ``serve``
started on one and answering its health check, the headless Chromium that drives the app, and
a probe of the map's labels run in the page."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator

from paperscope.ui.launch import wait_until_healthy

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
    command: str, index_dir, arguments: tuple[str, ...] = (), timeout: float = 120.0, **popen
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``paperscope app`` (headless) or ``paperscope serve`` (``command``) on ``index_dir`` and a
    free port, answering its health check; yields its URL and the process. ``arguments``: more
    options; ``popen``: arguments of ``subprocess.Popen`` (where its output goes). Stops it after;
    a server that does not answer within ``timeout`` seconds is a RuntimeError."""
    port = free_port()
    headless = ("--headless",) if command == "app" else ()
    command_line = [sys.executable, "-m", "paperscope.ui.cli", command, "--index", str(index_dir), "--port", str(port)]
    process = subprocess.Popen([*command_line, *headless, *arguments], **popen)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url, process, timeout, health=HEALTH_CHECKS[command]):
            raise RuntimeError(f"paperscope {command} on {index_dir} did not answer within {timeout} s")
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)


# Run in the page: every visible map label's box on the page, the pairs that overlap and the
# labels not wholly inside the map.
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
