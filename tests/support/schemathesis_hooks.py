"""A check of ours for schemathesis (``SCHEMATHESIS_HOOKS=tests.support.schemathesis_hooks``): every error
the service answers is one JSON sentence with its status, never a traceback."""

from __future__ import annotations

import json

import schemathesis


@schemathesis.check
def one_sentence_errors(ctx, response, case):
    """An answer of 400 or more is ``{"error": one line, "status": its status}``, without a traceback."""
    if response.status_code < 400:
        return
    body = json.loads(response.content)
    assert set(body) == {"error", "status"} and body["status"] == response.status_code, body
    message = body["error"]
    assert isinstance(message, str) and message and "\n" not in message and "Traceback" not in message, message
