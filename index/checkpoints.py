"""Named points of a build, and the test hook that halts a build at one of them.

With ``PAPERSCOPE_HALT_AT=<stage>`` in its environment, a build that reaches that stage prints
``paperscope: halted at <stage>`` on stderr and waits there until it is killed. Fault tests use
it to kill a build at a known point instead of after a guessed delay.
"""

from __future__ import annotations

import os
import sys
import threading

HALT_VARIABLE = "PAPERSCOPE_HALT_AT"
# In build order; "commit" is inside the write, after the new generation's files are complete
# and before it is renamed into place and made current.
STAGES = ("read", "embed", "map and clusters", "keyword index", "index", "write", "commit")


def checkpoint(stage: str) -> None:
    """Mark that a build reached ``stage``; halts here if the test hook names it."""
    if os.environ.get(HALT_VARIABLE) == stage:
        print(f"paperscope: halted at {stage}", file=sys.stderr, flush=True)
        threading.Event().wait()  # until killed
