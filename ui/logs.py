"""Where the ``paperscope`` logger's lines go when paperscope runs as a command or a server:
stderr, as bare messages. (The command line and ``paperscope serve``'s workers both set it up:
here, so that neither imports the other.)"""

from __future__ import annotations

import logging
import sys

logger = logging.getLogger("paperscope")


def log_to_stderr() -> None:
    """Print the ``paperscope`` logger's lines (INFO and up) on stderr, as bare messages."""
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
