"""Progress a person can follow without a terminal: log lines with the share done and the time left."""

from __future__ import annotations

import logging
import time

PROGRESS_STEP = 0.05  # a log line every 5 %


def duration(seconds: float) -> str:
    """``seconds`` as a person says it: "40 s", "5 min", "1.5 h"."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


class ProgressLines:
    """``what``: a log line on ``logger`` every ``PROGRESS_STEP`` of ``total`` items done until the
    last, with the time left from the pace since the first step (on stderr, redirected or not)."""

    def __init__(self, total: int, what: str, logger: logging.Logger, clock=time.monotonic, counts: bool = True):
        self.total, self.what, self.logger, self.clock = total, what, logger, clock
        self.counts = counts  # False: the share alone ("reading: 5 % done"), for bytes
        self.done: float = 0
        self.first: tuple[float, float] | None = None
        self.next_line = PROGRESS_STEP

    def advance(self, count: float) -> None:
        """``count`` more items done (bytes may come in shares)."""
        self.done += count
        now, fraction = self.clock(), min(self.done / max(self.total, 1), 1.0)
        if self.first is None:
            self.first = (now, self.done)
            return
        started, begun = self.first
        if self.done <= begun or fraction + 1e-9 < self.next_line or self.done >= self.total:
            return  # (done: the caller says so)
        self.next_line = (int(fraction / PROGRESS_STEP + 1e-9) + 1) * PROGRESS_STEP
        left = (now - started) / (self.done - begun) * (self.total - self.done)
        if not self.counts:
            self.logger.info("%s: %d %% done, about %s left", self.what, int(fraction * 100), duration(left))
            return
        self.logger.info(
            "%s: %d of %d (%d %%), about %s left", self.what, self.done, self.total, int(fraction * 100), duration(left)
        )
