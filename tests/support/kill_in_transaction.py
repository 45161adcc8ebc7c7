"""Run the ``paperscope`` command line killed by SIGKILL, by itself, when the collections database
is about to run the Nth SQL statement that matches PATTERN: a fault test kills a real process in
the middle of a write instead of after a guessed delay.

    python tests/support/kill_in_transaction.py PATTERN N ARGUMENTS...

Before dying it prints ``paperscope: killed at <statement>`` on stderr. SQLite's trace callback
runs as each statement starts, so whatever the transaction wrote before is left uncommitted.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import sys


def main(argv: list[str]) -> int:
    """Run ``paperscope ARGUMENTS`` with the kill armed; returns its exit status if it lives."""
    if len(argv) < 3 or not argv[1].isdigit():
        print("usage: kill_in_transaction.py PATTERN N ARGUMENTS...", file=sys.stderr)
        return 2
    pattern, count, arguments = re.compile(argv[0], re.IGNORECASE), int(argv[1]), argv[2:]
    seen = 0
    connect = sqlite3.connect

    def trace(statement: str) -> None:
        nonlocal seen
        if pattern.search(statement):
            seen += 1
            if seen == count:
                print(f"paperscope: killed at {' '.join(statement.split())[:80]}", file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = traced
    from paperscope.ui import cli

    return cli.main(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
