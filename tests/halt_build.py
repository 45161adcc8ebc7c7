"""Run the ``paperscope`` command line, halted at a named build stage: a fault test kills it there
instead of after a guessed delay.

    python tests/halt_build.py STAGE build|add ARGUMENTS...

A build logs the start of each stage as a DEBUG record on the ``paperscope`` logger with the
attribute ``stage``. When the record of STAGE comes, this prints ``paperscope: halted at STAGE``
on stderr and waits there until killed. The command's own log lines (INFO and up) still show on
stderr; the DEBUG records do not.
"""

from __future__ import annotations

import logging
import sys
import threading

# In build order; "commit" is inside the write of the index, after the new generation's files are
# complete and before it is made current.
STAGES = ("read", "embed", "map and clusters", "keyword index", "index", "write", "commit")


class HaltAt(logging.Handler):
    """Blocks forever at the record that marks build stage ``stage``."""

    def __init__(self, stage: str):
        super().__init__(logging.DEBUG)
        self.stage = stage

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "stage", None) == self.stage:
            print(f"paperscope: halted at {self.stage}", file=sys.stderr, flush=True)
            threading.Event().wait()  # until killed


def main(argv: list[str]) -> int:
    """Run ``paperscope ARGUMENTS`` with the halt at STAGE; returns its exit status."""
    from paperscope.ui import cli

    if not argv or argv[0] not in STAGES:
        print(f"usage: halt_build.py STAGE ARGUMENTS... (STAGE one of {', '.join(STAGES)})", file=sys.stderr)
        return 2
    stage, arguments = argv[0], argv[1:]
    cli.log_to_stderr()
    for handler in cli.logger.handlers:
        handler.setLevel(logging.INFO)  # the command's usual lines, not the stages' DEBUG records
    cli.logger.setLevel(logging.DEBUG)
    cli.logger.addHandler(HaltAt(stage))
    return cli.main(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
