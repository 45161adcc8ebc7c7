"""Where the ``paperscope`` logger's lines go when paperscope runs as a command or a server:
stderr, as bare messages. (The command line and ``paperscope serve``'s workers both set it up:
here, so that neither imports the other.)"""

from __future__ import annotations

import logging
import sys

logger = logging.getLogger("paperscope")


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to ``sys.stderr`` as it is when a line is logged, not as it was when the
    handler was made (a caller that replaces and closes it, as pytest's capture does, would
    otherwise leave a handler writing to a closed file)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        """The current ``sys.stderr``."""
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        """Kept out: the stream is always the current ``sys.stderr``."""


def log_to_stderr() -> None:
    """Print the ``paperscope`` logger's lines (INFO and up) on stderr, as bare messages."""
    if not logger.handlers:
        handler = _CurrentStderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
