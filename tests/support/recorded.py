"""What the local services of tests/support share: a pytest-httpserver that keeps each request and
when it came, for a test to look at, and a hook a test holds a request in."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_httpserver import HTTPServer
from werkzeug import Request


@dataclass
class RecordedService:
    """A service on ``server``. ``requests`` and ``times``: each request, in order, and when it came
    (time.monotonic); ``before``: called first with each request (a test holds one there)."""

    server: HTTPServer
    requests: list[Request] = field(default_factory=list, kw_only=True)
    times: list[float] = field(default_factory=list, kw_only=True)
    before: Callable[[Request], None] | None = field(default=None, kw_only=True)

    @property
    def url(self) -> str:
        """The service's root, as ``--base-url`` takes it."""
        return self.server.url_for("").rstrip("/")

    def record(self, request: Request) -> None:
        """Keep ``request`` and its time, then hand it to ``before``."""
        self.requests.append(request)
        self.times.append(time.monotonic())
        if self.before is not None:
            self.before(request)
