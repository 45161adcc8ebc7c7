"""The polite HTTP session every source fetches through: the one place that knows the rules.

One request at a time per session, at least the service's interval between two requests to one
host (arXiv asks for 3 s, OpenReview's limits suit 1 s, OpenAlex allows 10 a second), a failure
worth trying again (429, 500, 502, 503, 504, a dropped connection, a page cut short) tried again
after what ``Retry-After`` asks (seconds or an HTTP date, capped) or, when the service says nothing,
after the interval doubled at each try (arXiv: 3, 6, 12, 24, 48 s), and a user agent
that names paperscope and, given one, the contact a service can write to.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import urlsplit

import requests

from paperscope.errors import ServiceFailed
from paperscope.progress import duration
from paperscope.settings import NO_OPTIONS, FetchOptions

logger = logging.getLogger(__name__)

INTERVALS = {"arxiv": 3.0, "openreview": 1.0, "openalex": 0.1}  # seconds between two requests, as each asks
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 600.0  # a longer Retry-After is waited this long, then the request tried again
TIMEOUT = (30, 300)  # connect, read: an OAI-PMH page of 2,000 records can take a while to come


def user_agent(contact: str | None) -> str:
    """``paperscope/VERSION``, with ``(mailto:CONTACT)`` given a contact (arXiv and OpenAlex ask
    automated clients to say who to write to)."""
    try:
        own = f"paperscope/{version('paperscope')}"
    except PackageNotFoundError:  # a source tree that was never installed
        own = "paperscope"
    return f"{own} (mailto:{contact})" if contact else own


def retry_after(response: requests.Response, now: Callable[[], datetime] = lambda: datetime.now(UTC)):
    """The seconds ``response``'s ``Retry-After`` asks to wait (a number or an HTTP date); None
    without one or with one that is neither."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - now()).total_seconds())


# A check of a whole answer: the reason to try it again (a page cut short), or None when it is whole.
BodyCheck = Callable[[requests.Response], str | None]


def ends_with(closing: str) -> BodyCheck:
    """A :data:`BodyCheck` for XML answers: a 200 whose body does not end with ``closing`` (e.g.
    ``</OAI-PMH>``) was cut short; the clients' forgiving parsers would read the half record and
    stop there without a word."""
    tail = closing.encode()

    def check(response: requests.Response) -> str | None:
        if response.status_code != 200 or response.content.rstrip().endswith(tail):
            return None
        return f"a page cut short ({len(response.content):,} bytes, no {closing} at the end)"

    return check


def whole_json(response: requests.Response) -> str | None:
    """A :data:`BodyCheck` for JSON answers (OpenReview, OpenAlex): a 200 whose body is not whole
    JSON was cut short (the clients would raise on it, page and cursor lost)."""
    if response.status_code != 200:
        return None
    try:
        response.json()
    except ValueError:
        return f"a page cut short ({len(response.content):,} bytes, not whole JSON)"
    return None


class PoliteSession(requests.Session):
    """A ``requests.Session`` for ``service`` ("arxiv", "openreview", "openalex"): every request
    through it waits its turn and its interval, and is tried again up to ``options.retries`` times
    when it failed in a way worth trying again; then :class:`ServiceFailed`. ``check`` looks at each
    whole answer (see :func:`ends_with`); ``final`` says why an answer is not worth trying again
    (OpenAlex's spent credits: :class:`ServiceFailed` at once); ``clock`` and ``sleep`` are
    injectable for tests."""

    def __init__(
        self,
        service: str,
        options: FetchOptions = NO_OPTIONS,
        check: BodyCheck | None = None,
        final: BodyCheck | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        super().__init__()
        self.service, self.check, self.clock, self.sleep = service, check, clock, sleep
        self.final = final
        self.interval = INTERVALS[service] if options.delay is None else options.delay
        self.retries = options.retries
        self.headers["User-Agent"] = user_agent(options.contact)
        self.ready_at: dict[str, float] = {}  # host → the earliest time of its next request
        self.turn = threading.Lock()  # one request at a time, whatever thread asks

    def request(self, method, url, *args, **kwargs):
        """As ``requests.Session.request``, politely (see the class); a client's own user agent
        gives way to paperscope's."""
        given = kwargs.pop("headers", None) or {}
        kwargs["headers"] = {key: value for key, value in given.items() if key.lower() != "user-agent"}
        kwargs.setdefault("timeout", TIMEOUT)
        host = urlsplit(url).netloc
        problem: str | None = None
        with self.turn:
            for attempt in range(self.retries + 1):
                self._wait_turn(host)
                try:
                    response = super().request(method, url, *args, **kwargs)
                except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
                    problem, wait = f"no answer ({type(exc).__name__})", None
                else:
                    problem, wait = self._problem(response)
                    if problem is None:
                        return response
                if wait is None:  # the service said nothing of when: back off, twice as long each time
                    wait = min(self.interval * 2**attempt, MAX_RETRY_AFTER)
                self.ready_at[host] = self.clock() + wait
                if attempt < self.retries:
                    logger.warning(
                        "%s: %s; waiting %s before try %d of %d",
                        self.service, problem, duration(wait) if wait >= 1 else f"{wait:.2g} s", attempt + 2,
                        self.retries + 1,
                    )  # fmt: skip
        raise ServiceFailed(f"{self.service}: {problem} after {self.retries + 1} tries; the same command goes on later")

    def _wait_turn(self, host: str) -> None:
        """Sleep until ``host``'s next request may go, then book the one after it."""
        now = self.clock()
        if (ready := self.ready_at.get(host, now)) > now:
            self.sleep(ready - now)
        self.ready_at[host] = max(self.ready_at.get(host, 0.0), self.clock() + self.interval)

    def _problem(self, response: requests.Response) -> tuple[str | None, float | None]:
        """Why ``response`` is worth trying again and how long to wait first (None: the service did
        not say, back off); (None, 0) to keep it."""
        if self.final is not None and (reason := self.final(response)) is not None:
            raise ServiceFailed(f"{self.service}: {reason}")
        if response.status_code in RETRY_STATUSES:
            asked = retry_after(response)
            wait = None if asked is None else min(max(asked, self.interval), MAX_RETRY_AFTER)
            said = "" if asked is None else f", Retry-After {response.headers['Retry-After']}"
            return f"HTTP {response.status_code}{said}", wait
        if self.check is not None and (problem := self.check(response)) is not None:
            return problem, None
        return None, 0.0
