"""Acronyms: the word of a query ("GRPO", "DiT", "T2I"), the definition in a text ("Large Language
Models (LLMs)") and the long form that an acronym abbreviates (after Schwartz & Hearst, PSB 2003).

Used by derived titles (:mod:`paperscope.embed.titles`), topic names
(:mod:`paperscope.index.topics.naming`) and the acronym boost of keyword and hybrid search.
"""

from __future__ import annotations

import re
from collections.abc import Collection

# An acronym as a word of a query: a capital, later another capital or a digit ("DiT", "T2I"); hyphens inside.
ACRONYM_WORD = re.compile(
    r"(?<![\w-])(?=[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*[A-Z0-9])[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9](?![\w-])"
)
# "(ACRONYM)": a bracketed word with a capital; the words before it may be its long form.
BRACKETED = re.compile(r"\((?P<acronym>[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*)\)")
# "Long Form Words (LFW)": up to eight words, then an acronym with two capitals or more in brackets.
DEFINITION = re.compile(r"((?:[A-Za-z][\w'-]*\s+){1,8})\(\s*([A-Za-z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*)\s*\)")


def long_form(acronym: str, before: str, stop_words: Collection[str] = (), extra_words: int = 2) -> str | None:
    """The words at the end of ``before`` that ``acronym`` abbreviates, as written there, or None.

    After Schwartz & Hearst: the shortest run of the last words of ``before`` that holds the
    acronym's letters in order (a plural "s", as in "LLMs", need not be there), whose first word
    starts with its first letter ("Large Language Models (LLMs)") or, when no run does, holds it
    ("eXplainable AI (XAI)"). A run has two words or more (a hyphen parts words:
    "distillation-conditional"), at most ``extra_words`` more than the acronym has letters, and
    does not start with one of ``stop_words`` (lower case). An acronym of one letter has none.

    Topic names keep the default: a short expansion names a topic better ("multi-lead
    electrocardiogram (ECG)"); a derived title allows one word more to show a method's whole name.
    """
    letters = "".join(c.lower() for c in acronym.rstrip("s") if c.isalnum())
    if len(letters) < 2:
        return None
    parts = before.split()
    longest = len(letters) + extra_words
    spans = [parts[start:] for start in range(len(parts) - 1, max(-1, len(parts) - longest - 1), -1)]
    spans = [s for s in spans if s[0].lower() not in stop_words and len(re.split(r"[\s-]+", " ".join(s))) > 1]
    for first_letter_starts in (True, False):
        for span in spans:
            joined = " ".join(span).lower()
            if (first_letter_starts and not joined.startswith(letters[0])) or letters[0] not in span[0].lower():
                continue
            position = joined.find(letters[0]) + 1
            for letter in letters[1:]:
                position = joined.find(letter, position) + 1 if position else 0
            if position:
                return " ".join(span)
    return None
