"""A build tells how far it is when its output is not a terminal: a log line every 5 % of the
embedding with the time left, and once, when the exact preset would embed for over a minute, what
the fast preset saves and costs (the measured numbers of benchmarks/presets.json)."""

from __future__ import annotations

import json
import logging
import re

import pytest

from paperscope import limits
from paperscope.index.build.local_engine import EmbeddingProgress
from tests.conftest import ROOT, paperscope

LINE = re.compile(r"embedding: (\d+) % done, about (\d+) (s|min) left$")
PRESETS = ROOT / "benchmarks" / "presets.json"


class Clock:
    """A clock the test moves."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run(progress: EmbeddingProgress, clock: Clock, steps: int, seconds: float, caplog) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="paperscope"):
        for _ in range(steps):
            clock.now += seconds
            progress.advance(10.0)  # 1 % of the bytes each time
        progress.close()
    return [record.getMessage() for record in caplog.records]


def test_without_a_terminal_a_line_every_5_percent_with_the_time_left_and_the_fast_preset_once(caplog):
    clock, fractions = Clock(), []
    progress = EmbeddingProgress(1000, lambda fraction, stage: fractions.append(fraction), show_bar=False,
                                 suggest_fast=True, clock=clock)  # fmt: skip
    lines = _run(progress, clock, 100, 3.0, caplog)  # 3 s a percent: 5 minutes of embedding in all
    assert fractions == pytest.approx([i / 100 for i in range(1, 101)])
    shown = [LINE.match(line) for line in lines if line.startswith("embedding:")]
    assert [int(match[1]) for match in shown] == list(range(5, 100, 5))
    assert shown[0].groups()[1:] == ("5", "min")  # at 5 %, 95 % left at 3 s a percent: 285 s
    assert shown[-1].groups()[1:] == ("15", "s")
    hints = [line for line in lines if "--preset fast" in line]
    assert len(hints) == 1 and lines.index(hints[0]) < lines.index(shown[0][0])  # said at once, said once
    measured = json.loads(PRESETS.read_text())
    speed = measured["texts_per_second"]["fast"] / measured["texts_per_second"]["exact"]
    exact, fast = (measured["sizes"]["2690"][name]["P@10"] for name in ("exact", "fast"))  # the whole IJCAI corpus
    assert f"{speed:.1f}×" in hints[0] and f"{fast:.3f} against {exact:.3f}" in hints[0]
    quoted = (round(speed, 1), (round(exact, 3), round(fast, 3)))
    assert quoted == (limits.FAST_SPEEDUP, limits.FAST_P_AT_10)
    speeds = measured["texts_per_second"]
    assert round(speeds["balanced"] / speeds["exact"], 1) == limits.BALANCED_SPEEDUP  # as the help quotes it


def test_a_short_embedding_or_the_fast_preset_says_nothing_of_it(caplog):
    clock = Clock()
    quick = _run(EmbeddingProgress(1000, lambda *_: None, show_bar=False, suggest_fast=True, clock=clock),
                 clock, 100, 0.5, caplog)  # fmt: skip
    assert len([line for line in quick if LINE.match(line)]) == 19 and not any("preset" in line for line in quick)
    fast = _run(EmbeddingProgress(1000, lambda *_: None, show_bar=False, suggest_fast=False, clock=clock),
                clock, 100, 3.0, caplog)  # fmt: skip
    assert not any("preset" in line for line in fast)
    barred = _run(EmbeddingProgress(1000, lambda *_: None, show_bar=True, suggest_fast=False, clock=clock),
                  clock, 100, 3.0, caplog)  # fmt: skip
    assert barred == []  # a terminal has the bar


@pytest.mark.slow
def test_a_build_with_its_output_redirected_logs_its_progress(tmp_path):
    words = ["graph", "diffusion", "speech", "robot", "theorem", "cloud", "vision", "policy", "kernel", "agent"]
    records = [
        {
            "title": f"Paper {i}",
            "abstract": f"We study {words[i % 10]} {words[i // 10 % 10]} models at scale {i}. "
            f"Results on {words[i // 100 % 10]} benchmarks improve by {i % 97} points.",
        }
        for i in range(1_000)
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(record) for record in records))
    # stderr is a pipe, not a terminal; a data folder of its own: nothing cached
    built = paperscope(
        "build", corpus, "-o", tmp_path / "index", "--preset", "fast", home=tmp_path / "home", check=True
    )
    lines = [LINE.match(line) for line in built.stderr.splitlines()]
    percents = [int(match[1]) for match in lines if match]
    assert len(percents) >= 3 and percents == sorted(set(percents)), built.stderr
