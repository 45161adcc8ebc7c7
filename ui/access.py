"""Sharing a server with a group: tokens, read-only mode, limits per client, and the refusal to
listen beyond this machine without either.

- A token file (``paperscope serve --token-file FILE`` or ``$PAPERSCOPE_TOKEN_FILE``): one token a
  line, ``NAME TOKEN SCOPE`` (scope ``read`` or ``write``), ``#`` starting a comment. With tokens,
  every request but the health check needs ``Authorization: Bearer TOKEN``; tokens are compared as
  SHA-256 digests in constant time and never logged; a token in the URL is refused.
- :class:`Guard`, the service's outermost middleware: the token, the rate limit (a token bucket per
  token, or per client address without tokens, in each worker process), read-only mode and read
  tokens (writes answered 403), and an audit line for each write (``ui/audit.py``).
- :func:`check_exposure`: a server on an address other machines reach, with neither tokens nor
  read-only mode, does not start.
- The app's uploads: :func:`upload_build` lets one build run at a time per data folder and at most
  ``uploads_per_hour`` of them an hour.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from filelock import FileLock
from filelock import Timeout as LockTimeout

from paperscope import locations
from paperscope.embed.text import counted
from paperscope.errors import UserError, shown
from paperscope.settings import TOKEN_SCOPES, AccessSettings
from paperscope.ui import audit

TOKEN_FILE_VARIABLE = "PAPERSCOPE_TOKEN_FILE"
MIN_TOKEN_CHARS = 16
QUERY_TOKENS = ("token", "access_token")  # names of a token in a URL: refused, and never logged
MAX_CLIENTS = 10_000  # rate-limit buckets kept; beyond, those full again are dropped
READ_ONLY = "this server is read-only (started with --read-only): it answers lookups but changes nothing"
UPLOADS_FILE = "upload-builds.json"  # when the app's uploads were built, in the data folder
UPLOAD_LOCK = "upload-build.lock"  # held while one builds
HOUR = 3600.0


@dataclass(frozen=True)
class Token:
    """One line of a token file: its name (what the audit log records), scope and secret's digest."""

    name: str
    scope: str
    digest: bytes


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


def read_tokens(path) -> tuple[Token, ...]:
    """The tokens of a token file; a line that is not ``NAME TOKEN SCOPE``, an unknown scope, a
    short token or a name or token given twice is a UserError naming the file and line (and never
    the token)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise UserError(f"{path}: cannot read the token file ({why})") from None
    tokens: list[Token] = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        where = f"{path}:{number}"
        if len(fields) != 3:
            raise UserError(f"{where}: expected NAME TOKEN SCOPE separated by spaces, got {len(fields)} fields")
        name, secret, scope = fields
        if scope not in TOKEN_SCOPES:
            raise UserError(f"{where}: unknown scope '{shown(scope, 20)}'; choose one of {', '.join(TOKEN_SCOPES)}")
        if len(secret) < MIN_TOKEN_CHARS:
            raise UserError(
                f"{where}: the token of '{shown(name)}' has {len(secret)} characters, fewer than {MIN_TOKEN_CHARS}; "
                "make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        token = Token(name, scope, _digest(secret))
        if any(other.name == name for other in tokens):
            raise UserError(f"{where}: the name '{shown(name)}' is given twice; each token needs a name of its own")
        if any(other.digest == token.digest for other in tokens):
            raise UserError(f"{where}: the token of '{shown(name)}' is also another's; give each its own")
        tokens.append(token)
    if not tokens:
        raise UserError(f"{path}: no token in the file; write one a line: NAME TOKEN SCOPE (read or write)")
    return tuple(tokens)


def token_file(given: str | None) -> str | None:
    """The token file: ``--token-file``, else ``$PAPERSCOPE_TOKEN_FILE``, else None."""
    return given or os.environ.get(TOKEN_FILE_VARIABLE) or None


def identify(tokens: tuple[Token, ...], secret: str) -> Token | None:
    """The token whose secret is ``secret``: every token compared, each in constant time."""
    digest, found = _digest(secret), None
    for token in tokens:
        if hmac.compare_digest(digest, token.digest):
            found = token
    return found


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine reaches: 127.0.0.0/8, ::1, localhost."""
    if host.strip().lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def check_exposure(host: str, command: str, tokens: bool = False, read_only: bool = False) -> None:
    """A UserError when ``paperscope serve`` or ``app`` (``command``) would listen on ``host``, an
    address other machines reach, with neither tokens nor read-only mode."""
    if is_loopback(host) or tokens or read_only:
        return
    if command == "serve":
        need = f"give --token-file FILE (or {TOKEN_FILE_VARIABLE}) or --read-only"
    else:
        need = "give --read-only (the app has no tokens: to let a group write, put it behind a proxy that asks who)"
    raise UserError(f"--host {host} is reachable from other machines: {need}")


class RateLimiter:
    """A token bucket per client: ``per_minute`` requests at once, refilled at ``per_minute`` a
    minute (0: no limit)."""

    def __init__(self, per_minute: int):
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> float:
        """Spend one request of ``key``'s: 0 when it may go on, else the seconds until it may."""
        if not self.capacity:
            return 0.0
        now = time.monotonic()
        level, then = self.buckets.get(key, (float(self.capacity), now))
        level = min(float(self.capacity), level + (now - then) * self.rate)
        if len(self.buckets) > MAX_CLIENTS:
            self._forget(now)
        if level >= 1:
            self.buckets[key] = (level - 1, now)
            return 0.0
        self.buckets[key] = (level, now)
        return (1 - level) / self.rate

    def _forget(self, now: float) -> None:
        full = [key for key, (level, then) in self.buckets.items() if level + (now - then) * self.rate >= self.capacity]
        for key in full:
            del self.buckets[key]


def _json_error(status: int, message: str, headers: dict | None = None):
    from starlette.responses import JSONResponse

    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def _bearer(scope) -> str | None:
    """The token of the request's ``Authorization: Bearer`` header ("" for another scheme), or None."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            kind, _, secret = value.decode("latin-1").strip().partition(" ")
            return secret.strip() if kind.lower() == "bearer" else ""
    return None


def _token_in_query(scope) -> bool:
    """Whether the URL carries a token; if so its query is blanked, so that no log prints it."""
    query = scope.get("query_string", b"")
    if not query:
        return False
    names = {name.lower() for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)}
    if names.isdisjoint(QUERY_TOKENS):
        return False
    scope["query_string"] = b"token=REDACTED"  # uvicorn's access log reads the query from the scope
    return True


class Guard:
    """ASGI middleware in front of the service (see the module docstring). ``is_write(method,
    path)`` tells writes; ``index``: the folder served, for the audit log; ``open_paths`` (the
    health check) need no token and are not limited."""

    def __init__(self, app, tokens: tuple[Token, ...], settings: AccessSettings, is_write: Callable, index: str):
        self.app = app
        self.tokens = tokens
        self.settings = settings
        self.is_write = is_write
        self.index = index
        if settings.rate_limit is None:  # a server's settings come through AccessSettings.on
            raise ValueError("Guard needs settings with their limits set (AccessSettings.on)")
        self.limiter = RateLimiter(settings.rate_limit)
        self.open_paths = ("/healthz",)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            return await self.app(scope, receive, send)
        if _token_in_query(scope):
            warning = "do not put a token in the URL (it ends up in logs); send the header Authorization: Bearer TOKEN"
            return await _json_error(401, warning, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
        client = (scope.get("client") or ("unknown",))[0]
        token, refusal = self._identify(scope)
        wait = self.limiter.take(token.name if token else client)
        if wait:
            limit = f"over the limit of {self.settings.rate_limit} requests a minute; try again in {math.ceil(wait)} s"
            return await _json_error(429, limit, {"Retry-After": str(math.ceil(wait))})(scope, receive, send)
        write = self.is_write(scope["method"], scope["path"])
        if refusal is None and write:
            refusal = self._forbidden(token)
        who, action = token.name if token else client, f"{scope['method']} {scope['path']}"
        if refusal:
            status, message = refusal
            if write:
                audit.record(who, "serve", action, self.index, status)
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            return await _json_error(status, message, headers)(scope, receive, send)
        if not write:
            return await self.app(scope, receive, send)
        answered = []

        async def noted(message):
            if message["type"] == "http.response.start":  # recorded before the client hears the outcome
                answered.append(message["status"])
                audit.record(who, "serve", action, self.index, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:
            if not answered:  # the client went away first
                audit.record(who, "serve", action, self.index, "no answer")

    def _identify(self, scope) -> tuple[Token | None, tuple[int, str] | None]:
        """The request's token, or the 401 refusing it (None, None: no tokens configured)."""
        if not self.tokens:
            return None, None
        secret = _bearer(scope)
        if secret is None:
            return None, (401, "this server needs a token: send the header Authorization: Bearer TOKEN")
        token = identify(self.tokens, secret) if secret else None
        if token is None:
            return None, (401, "the token is not one of this server's; check the Authorization: Bearer header")
        return token, None

    def _forbidden(self, token: Token | None) -> tuple[int, str] | None:
        """The 403 refusing a write: read-only mode, or a read token."""
        if self.settings.read_only:
            return 403, READ_ONLY
        if token is not None and token.scope != "write":
            return 403, f"the token '{token.name}' may only read; a change needs a token of scope write"
        return None


@contextlib.contextmanager
def upload_build(uploads_per_hour: int | None):
    """Hold the data folder's one build of an upload while the block runs, once it is sure this
    server has built fewer than ``uploads_per_hour`` uploads in the past hour (0 or None: no limit): a
    UserError saying when to try again otherwise."""
    home = locations.data_home()
    home.mkdir(parents=True, exist_ok=True)
    lock = FileLock(home / UPLOAD_LOCK, timeout=0)
    try:
        lock.acquire()
    except LockTimeout:
        raise UserError(
            "another upload is being built on this server, one at a time; try again once it is done"
        ) from None
    try:
        stamps_file = home / UPLOADS_FILE
        now = time.time()
        try:
            stamps = [stamp for stamp in json.loads(stamps_file.read_text()) if now - stamp < HOUR]
        except (OSError, ValueError, TypeError):
            stamps = []
        if uploads_per_hour and len(stamps) >= uploads_per_hour:
            minutes = math.ceil((HOUR - (now - min(stamps))) / 60)
            raise UserError(
                f"this server has built {counted(len(stamps), 'upload')} in the past hour, its limit; "
                f"try again in {minutes} min"
            )
        stamps_file.write_text(json.dumps([*stamps, now]))
        yield
    finally:
        lock.release()
