"""The choices a user makes and their defaults, in one light module.

The build, the readers, the command line and the app share these; importing this module costs
nothing (no numpy, pandas or scipy), so ``paperscope --help`` stays instant.
"""

from __future__ import annotations

from paperscope.errors import UserError

LONG_TEXT_STRATEGIES = ("mean", "truncate")  # texts over the model's window: windows averaged, or the first
QUANTIZE_CHOICES = ("int8",)
# Build presets: how texts are embedded (benchmarks/presets.py measures speed and IJCAI P@10 of both).
# "fast": int8 model on the first 126 word pieces (title and first sentences); "exact": fp32, windows
# over the whole text averaged. A build of AUTO_FAST_PAPERS papers or more takes "fast" unless told.
PRESETS = {
    "exact": {"quantize": None, "long_text": "mean", "window": None},
    "fast": {"quantize": "int8", "long_text": "truncate", "window": 126},
}
AUTO_FAST_PAPERS = 20_000
# Neighbour-smoothed document vectors for hybrid ranking (paperscope.index.smoothing), chosen on
# IJCAI by benchmarks/smoothing.py (docs/quality.md); None builds without them.
SMOOTHING = {"k": 3, "weight": 0.5}
# Pseudo-relevance feedback for short text queries (PaperIndex.search), measured by benchmarks/text_queries.py.
FEEDBACK = {"on": True, "results": 3, "weight": 0.5, "max_words": 12}
ENGINES = ("local", "ray")
MODES = ("dense", "keyword", "hybrid")
LEVELS = ("coarse", "fine")  # topic levels: coarse topics merge fine clusters
UNCLUSTERED_NAME = "unclustered"  # the topic name of papers in no cluster
# Rankings written into each manifest; chosen by benchmarks/quality.py (see docs/quality.md).
# search_weight: the hybrid weight of text queries, tuned apart on benchmarks/text_queries.py.
DEFAULT_MODES = {"similar_mode": "hybrid", "search_mode": "hybrid", "hybrid_weight": 0.7, "search_weight": 0.8}
# Measured with benchmarks/duplicates_threshold.py: see paperscope.index.analysis.
DUPLICATE_THRESHOLD = 0.92


def check_choice(value, choices: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``choices``, else a UserError naming the choices."""
    if value not in choices:
        raise UserError(f"unknown {what} '{value}'; choose one of {', '.join(choices)}")
    return value
