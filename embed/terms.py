"""Words and phrases of a text: the one term extractor of the keyword index, topic names and
explanations, so that all three see the same terms.

Markup that names no topic is removed first (LaTeX commands, inline maths, URLs, Markdown
emphasis); words are runs of two or more letters or digits, lower-cased; a phrase is a run of
adjacent words none of which is a stop word, so no phrase bridges a stop word ("learning of
graphs" gives "learning" and "graphs", never "learning graphs").

Stop words: scikit-learn's English list is read at build time only
(:func:`english_stop_words`) and stored in the index; queries use the stored list, so nothing
on the query path imports scikit-learn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

# Scientific boilerplate: frequent in abstracts of every field, so it names no topic and explains
# no similarity (topic names and explanations skip it; the keyword index keeps it, weighted by IDF).
BOILERPLATE = {
    "propose",
    "proposed",
    "proposes",
    "method",
    "methods",
    "result",
    "results",
    "paper",
    "novel",
    "approach",
    "approaches",
    "show",
    "shows",
    "demonstrate",
    "demonstrates",
    "experiment",
    "experiments",
    "experimental",
    "performance",
    "state",
    "art",
    "existing",
    "based",
    "work",
    "new",
    "task",
    "tasks",
    "model",
    "models",
    "framework",
    "study",
    "problem",
    "problems",
    "use",
    "using",
    "used",
    "introduce",
    "present",
    "achieve",
    "achieves",
    "significantly",
    "significant",
    "effective",
    "effectiveness",
    "extensive",
    "code",
    "available",
    "github",
    "com",
    "https",
    "http",
    "key",
    "challenge",
    "challenges",
    "however",
    "specifically",
    "outperforms",
    "improve",
    "improves",
    "improved",
    "improvement",
    "various",
    "furthermore",
    "moreover",
    "address",
    "despite",
    "recent",
    "recently",
    "different",
    "provide",
    "provides",
    "datasets",
    "dataset",
    "data",
    "benchmark",
    "benchmarks",
    "analysis",
    "theoretical",
    "empirical",
    "empirically",
    "leverage",
    "leverages",
    "leveraging",
    "enable",
    "enables",
    "remains",
    "including",
    "learning",
    "large",
    "high",
    "time",
    "training",
    "generation",
    "textit",
    "textbf",
    "emph",
    "mathcal",
    "href",
    "url",
    "times",
    "baselines",
    "real",
    "world",
    "real-world",
    "publicly",
    "release",
    "lack",
    "limited",
    "first",
    "well",
    "also",
    "often",
    "well-known",
    "while",
    "via",
    "neural",
    "network",
    "networks",
    "deep",
    "accuracy",
    "efficient",
    "efficiency",
    "robust",
    "robustness",
    "scalable",
    "simple",
    "strong",
    "superior",
    "state-of-the-art",
    "inference",
    "prediction",
    "predictions",
    "information",
    "algorithm",
    "algorithms",
    "settings",
    "setting",
    "applications",
    "application",
    "design",
    "designed",
    "compared",
    "practical",
    "process",
    "critical",
    "crucial",
    "shown",
    "studies",
    # academic filler that is frequent everywhere but names no topic
    "multiple",
    "capabilities",
    "capability",
    "count",
    "counts",
    "diverse",
    "additionally",
    "providing",
    "inspired",
    "automated",
    "challenging",
    "evaluation",
    "evaluate",
    "evaluated",
    "evaluating",
    "optimal",
    "minimize",
    "selection",
    "architecture",
    "architectures",
    "feature",
    "features",
    "effect",
    "effects",
    "impact",
    "level",
    "levels",
    "number",
    "numbers",
    "range",
    "set",
    "sets",
    "way",
    "ways",
    "terms",
    "term",
    "order",
    "case",
    "cases",
    "insights",
    "insight",
    "potential",
    "promising",
    "widely",
    "commonly",
    "typically",
    "particular",
    "particularly",
    "increasingly",
    "substantial",
    "substantially",
    "remarkable",
    "fundamental",
    "fundamentally",
    "unique",
    "general",
    "specific",
    "standard",
    "current",
    "traditional",
    "conventional",
    "prior",
    "previous",
    "pretrained",
    "pre-trained",
    "unknown",
    "independent",
    "false",
    "true",
    "accurate",
    "reliable",
    "reliably",
    "consistent",
    "consistency",
    "quality",
    "cost",
    "costs",
    "costly",
    "complex",
    "complexity",
    "scale",
    "scales",
    "across",
    "within",
    "without",
    "among",
    "component",
    "components",
    "module",
    "modules",
    "strategy",
    "strategies",
    "technique",
    "techniques",
    "mechanism",
    "mechanisms",
    "system",
    "systems",
    "solution",
    "solutions",
    "tool",
    "tools",
    "guarantee",
    "guarantees",
    "theory",
    "practice",
    "understanding",
    "behavior",
    "behaviour",
    "making",
    "make",
    "makes",
    "allows",
    "allow",
    "require",
    "requires",
    "required",
    "requiring",
    "later",
    "nature",
    "reduce",
    "reduces",
    "reducing",
    "score",
    "scores",
    "pre",
    "trained",
    "numerical",
    "superiority",
}
_MARKUP = re.compile(r"\\[a-zA-Z]+|https?://\S+|\$[^$]*\$|[{}_*`]")
_WORD = re.compile(r"(?u)\b\w\w+\b")
_COMPOUND = re.compile(r"(?u)\b\w+(?:-\w+)+\b|\b\w\w+\b")


def words(text: str, compounds: bool = False) -> list[str]:
    """The lower-case words of ``text``, markup removed (see the module docstring). With
    ``compounds``, hyphenated words stay whole ("few-shot"), as topic names want them; the keyword
    index splits them, so that "few shot" finds "few-shot"."""
    return (_COMPOUND if compounds else _WORD).findall(_MARKUP.sub(" ", text).lower())


def phrases(text_words: list[str], sizes: Collection[int], is_stop: Callable[[str], bool]) -> list[str]:
    """Every run of ``n`` adjacent words, for each ``n`` in ``sizes``, that holds no word for which
    ``is_stop(word)`` is true; in order of size, then of position."""
    keep = [not is_stop(word) for word in text_words]
    found = []
    for size in sorted(sizes):
        run = 0  # kept words ending at position i
        for i, kept in enumerate(keep):
            run = run + 1 if kept else 0
            if run >= size:
                found.append(" ".join(text_words[i - size + 1 : i + 1]))
    return found


def singular(word: str) -> str:
    """The simplest English plural undone, for matching ("benchmarks" → benchmark, "studies" →
    study, "approaches" → approach); "loss", "focus", "analysis", "bias", "series" and "species"
    stay as they are."""
    if word.endswith(("series", "species")):
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ias", "las", "vas")):
        return word[:-1]
    return word


def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words (imports scikit-learn: build time only)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)
