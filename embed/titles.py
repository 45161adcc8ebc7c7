"""Display titles for abstracts that come without one.

Tried in order:
1. a method the abstract names: "We introduce FlowMixer, a single-layer …" gives
   "FlowMixer: a single-layer …"; "we propose Approximate Speculative Diffusion with
   Speculative Verification (ASDSV), …" gives "ASDSV: Approximate Speculative Diffusion …"
   (the acronym's long form is found as in Schwartz & Hearst, PSB 2003);
2. the object of the first contribution sentence: "We propose a novel continuous relaxation
   framework for the ATSP" gives "Continuous relaxation framework for the ATSP";
3. the opening clause of the abstract.
The phrase is cut where a new clause starts (", which", " and demonstrate", ", i.e.", ": (1)",
a copula after a long subject), then, if still too long for ``max_chars``, at the last phrase
boundary that fits (before "that", "by", "to", "using", "and", ...), never ending on a function
word; only when no boundary fits is it cut at a word with an ellipsis.
"""

from __future__ import annotations

import re

from paperscope.embed.acronyms import BRACKETED, long_form
from paperscope.embed.text import split_sentences

MAX_TITLE_CHARS = 90

_SUBJECT = r"(?i:\bwe|\bthis (?:paper|work|study))\s+(?:(?i:\w+ly|first|also|further|then|here|now|thus)\s+)?"
_NAMING = r"(?i:introduce|present|propose|develop|design|build|release|call|term|dub)s?\s+"
_CONTRIBUTING = (
    r"(?i:introduce|present|propose|develop|design|build|study|studie|investigate|analy[sz]e|"
    r"revisit|explore|formalize|uncover|predict|show|argue|establish|derive|provide)s?\s+"
)
_NAME = r"[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?:\s+[A-Z][A-Za-z0-9.-]*)*"
_NAMED = re.compile(_SUBJECT + _NAMING + r"(?:the\s+)?(?P<name>" + _NAME + r"),\s*(?P<descr>.+)$")
_OBJECT = re.compile(_SUBJECT + _CONTRIBUTING + r"(?:that\s+)?(?P<object>(?!(?i:this|these|that|it)\b).+)$")
# "we address this bottleneck with X", "we try to address these aspects through the lens of X"
_MEANS = re.compile(
    _SUBJECT
    + r"(?i:try to\s+)?(?i:address|tackle|solve|approach)(?:es|s)?\s+[^,.;]{0,80}?\s(?i:with|through|via|by)\s+"
    + r"(?i:the lens of\s+)?(?P<object>(?!(?i:this|these|that|it)\b).+)$"
)
# Where a new clause starts: the title ends there whatever its length.
_CLAUSE = re.compile(
    r",\s*(?:which|where|while|whereas|but|i\.e\.|e\.g\.|a|an|the)\s|\s+which\s|:\s|"
    r",\s*(?:starting|leading|resulting|allowing|enabling|making|yielding|achieving|showing)\b|"
    r"\s+and\s+(?:we\s+)?(?:demonstrate|show|prove|evaluate|achieve|provide|propose|present|introduce|analy[sz]e|"
    r"establish|apply|use|validate|derive|study|find|identify|develop)\b"
)
_COPULA = re.compile(r"(?<!\bthat)(?<!\bwhich)(?<!\bwho)\s+(?:is|are|was|were|has|have|can|could|will|may)\s")
# Phrase boundaries where a title that is still too long may end.
_BOUNDARY = re.compile(
    r"\s+(?=(?:that|which|by|to|using|via|through|and|with|for|in|into|on|from|based|where|under|across|without|as)\s)"
)
_FILLER = re.compile(
    r"^(?:(?:the|a|an)\s+)?(?:(?:novel|new|simple|general|critical|and)\s+|,\s*)*"
    r"(?:(?:problem|question|task) of\s+)?(?:(?:empirical|theoretical)\s+)?(?:(?:evidence|proof) that\s+)?",
    re.IGNORECASE,
)
_STOPWORDS = {
    "a",
    "an",
    "the",
    "of",
    "for",
    "to",
    "in",
    "on",
    "with",
    "and",
    "or",
    "by",
    "that",
    "which",
    "from",
    "as",
    "at",
    "via",
    "its",
    "their",
    "is",
    "are",
    "while",
    "using",
    "into",
    "we",
    "our",
    "this",
    "these",
    "such",
    "can",
    "be",
    "has",
    "have",
    "been",
    "based",
    "also",
    "than",
    "both",
    "each",
    "one",
    "not",
}


def _plain(text: str) -> str:
    """Remove markdown emphasis, LaTeX dollars, braces and commands that read badly in a title."""
    text = re.sub(r"(\*\*|__|\*|`)(.+?)\1", r"\2", text)
    text = re.sub(r"\\(?:times|cdot)\b", "×", text)
    text = re.sub(r"\\[a-zA-Z]+\s*", "", text)
    return re.sub(r"[${}]", "", text)


def shorten(text: str, max_chars: int) -> str:
    """Cut ``text`` at a word boundary to at most ``max_chars`` characters, ending with "…" when cut."""
    text = text.strip().rstrip(".;:,")
    if len(text) <= max_chars:
        return text
    words = text[:max_chars].split(" ")[:-1]
    while len(words) > 1 and words[-1].lower().strip(",;:") in _STOPWORDS:
        words.pop()
    return " ".join(words).rstrip(",;:—-( ") + "…"


def title_phrase(text: str, max_chars: int) -> str:
    """``text`` cut where a new clause starts, then at the last phrase boundary that fits in
    ``max_chars``; never ending on a function word; ``shorten`` when no boundary fits."""
    text = text.strip()
    clause = _CLAUSE.search(text, 12)
    if clause:
        text = text[: clause.start()]
    copula = _COPULA.search(text)
    if copula and len(text[: copula.start()].split()) >= 3:
        text = text[: copula.start()]
    if len(text) > max_chars:
        cuts = [m.start() for m in _BOUNDARY.finditer(text) if 20 <= m.start() <= max_chars]
        text = text[: cuts[-1]] if cuts else shorten(text, max_chars)
    words = text.rstrip(".;:,").split(" ")
    while len(words) > 1 and words[-1].lower().strip(",;:") in _STOPWORDS:
        words.pop()
    return " ".join(words).rstrip(",;:—-( ")


def _named_method(sentence: str, max_chars: int) -> str | None:
    match = _NAMED.search(sentence)
    if match:
        name = match.group("name")
        return f"{name}: {title_phrase(match.group('descr'), max_chars - len(name) - 2)}"
    match = _OBJECT.search(sentence)
    acronym = BRACKETED.search(match.group("object")) if match else None
    if match and acronym:
        before = _FILLER.sub("", match.group("object")[: acronym.start()]).strip()
        expansion = long_form(acronym.group("acronym"), before, extra_words=3)
        extra = before[: len(before) - len(expansion)].split() if expansion else ["-"] * 9
        if len(extra) <= 3 and not _STOPWORDS.intersection(w.lower() for w in extra):
            return f"{acronym.group('acronym')}: {expansion}"
    return None


def derive_title(abstract: str, max_chars: int = MAX_TITLE_CHARS) -> str:
    """A readable display title for an untitled abstract (see the module docstring)."""
    sentences = [_plain(s) for s in split_sentences(abstract)] or [_plain(abstract)]
    for sentence in sentences:
        named = _named_method(sentence, max_chars)
        if named:
            return shorten(named, max_chars)
    for pattern in (_OBJECT, _MEANS):
        for sentence in sentences:
            match = pattern.search(sentence)
            topic = title_phrase(_FILLER.sub("", match.group("object")), max_chars) if match else ""
            if len(topic) >= 12:
                return topic[:1].upper() + topic[1:]
    opening = re.split(r"[;:]|, (?:but|while|yet|and|which)\b| — ", sentences[0])[0]
    return title_phrase(opening[:1].upper() + opening[1:], max_chars)
