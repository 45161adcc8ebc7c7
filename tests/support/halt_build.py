"""Run the ``paperscope`` command line, halted at a named build stage: a fault test kills it there
instead of after a guessed delay.

    python tests/support/halt_build.py STAGE build|add|remap ARGUMENTS...

A build calls ``on_stage(name)`` as each of its stages starts (``build_index``'s documented
callback; ``add_papers`` calls it at "commit"; a remap at "map and clusters", "write" and "commit").
This runs the command line with that callback set:
when STAGE comes, it prints ``paperscope: halted at STAGE`` on stderr and waits there until killed.
The command's own log lines still show on stderr. A stage the build stops calling is never reached,
and the test that waits for it fails.
"""

from __future__ import annotations

import functools
import sys
import threading

# In build order; "commit" is inside the write of the index, after the new generation's files are
# complete and before it is made current.
STAGES = ("read", "embed", "map and clusters", "keyword index", "index", "write", "commit")


def halt_at(stage: str, name: str) -> None:
    """An ``on_stage`` callback: blocks forever when the stage ``name`` is ``stage``."""
    if name == stage:
        print(f"paperscope: halted at {stage}", file=sys.stderr, flush=True)
        threading.Event().wait()  # until killed


def main(argv: list[str]) -> int:
    """Run ``paperscope ARGUMENTS`` with the halt at STAGE; returns its exit status."""
    from paperscope.index.build import add, pipeline, remap
    from paperscope.ui import cli

    if not argv or argv[0] not in STAGES:
        print(f"usage: halt_build.py STAGE ARGUMENTS... (STAGE one of {', '.join(STAGES)})", file=sys.stderr)
        return 2
    stage, arguments = argv[0], argv[1:]
    halt = functools.partial(halt_at, stage)
    # the command line imports these when it runs a build or an add: it gets them with the callback set
    pipeline.build_index = functools.partial(pipeline.build_index, on_stage=halt)
    add.add_papers = functools.partial(add.add_papers, on_stage=halt)
    remap.remap = functools.partial(remap.remap, on_stage=halt)  # ix.map.remap imports it when called
    return cli.main(arguments)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
