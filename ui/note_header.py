"""What the service adds to JSON records: the note that says why a list of results is empty."""

from __future__ import annotations

NOTE_HEADER = "X-Paperscope-Note"  # why a list of results is empty (a query matching nothing, an empty collection)


def with_note(response, note: str | None):
    """``response`` with ``note`` in its ``NOTE_HEADER`` (Latin-1: other characters as escapes)."""
    if note:
        response.headers[NOTE_HEADER] = note.encode("ascii", "backslashreplace").decode()
    return response
