"""What the dashboard lets its users change, and the record of what they changed.

``paperscope app --read-only`` (or ``streamlit run ui/app_script.py -- --read-only``) hides the uploads and
disables renames, merges and collection changes, saying why; every change made in the app goes to
the audit log (``ui/audit.py``) with the browser's address; uploads are built one at a time, at
most ``--uploads-per-hour`` an hour (``access.upload_build``).
"""

from __future__ import annotations

import argparse
import functools
import sys

import streamlit as st

from paperscope.errors import UserError
from paperscope.limits import UPLOADS_PER_HOUR
from paperscope.settings import AccessSettings
from paperscope.ui import audit

READ_ONLY_NOTE = "This server is read-only (paperscope app --read-only): it shows the index but changes nothing."


@functools.cache
def settings() -> AccessSettings:
    """The app's access settings, from its command line (after ``--``)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--uploads-per-hour", type=int, default=UPLOADS_PER_HOUR)
    known = parser.parse_known_args(sys.argv[1:])[0]
    return AccessSettings(read_only=known.read_only, uploads_per_hour=known.uploads_per_hour)


def read_only() -> bool:
    """Whether the app was started read-only."""
    return settings().read_only


def client() -> str:
    """Who is changing something: the browser's address, as the server saw it."""
    try:
        address = st.context.ip_address
    except Exception:  # outside a browser session
        return "app"
    return address if isinstance(address, str) and address else "app"  # AppTest's context is a stand-in


def audited(action: str, index, change):
    """Run ``change()``, recording ``action`` on the folder ``index`` and its outcome ("ok" or the
    UserError's sentence) in the audit log; returns what it returned, raises what it raised. A
    read-only app runs nothing: a UserError saying so (its widgets are hidden anyway)."""
    if read_only():
        raise UserError(READ_ONLY_NOTE)
    try:
        done = change()
    except UserError as exc:
        audit.record(client(), "app", action, index, str(exc))
        raise
    audit.record(client(), "app", action, index, "ok")
    return done
