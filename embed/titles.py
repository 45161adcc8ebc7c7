"""Display titles for abstracts that come without one.

Tried in order:
1. a method the abstract names: "We introduce FlowMixer, a single-layer …" gives
   "FlowMixer: a single-layer …"; "we propose Approximate Speculative Diffusion with
   Speculative Verification (ASDSV), …" gives "ASDSV: Approximate Speculative Diffusion …"
   (the acronym's long form is found as in Schwartz & Hearst, PSB 2003);
2. the object of the first contribution sentence: "We propose a novel continuous relaxation
   framework for the ATSP" gives "Continuous relaxation framework for the ATSP";
3. the opening clause of the abstract.
Every title is at most ``max_chars`` characters, cut at a word boundary with an ellipsis.
"""

from __future__ import annotations

import re

from paperscope.embed.text import split_sentences

_SUBJECT = r"(?i:\bwe|\bthis (?:paper|work|study))\s+(?:\w+ly\s+)?"
_NAMING = r"(?i:introduce|present|propose|develop|design|build|release|call|term|dub)s?\s+"
_CONTRIBUTING = (
    r"(?i:introduce|present|propose|develop|design|build|study|studie|investigate|analy[sz]e|"
    r"revisit|explore|formalize|uncover|predict|show|argue|establish|derive|provide)s?\s+"
)
_NAME = r"[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?:\s+[A-Z][A-Za-z0-9.-]*)*"
_NAMED = re.compile(_SUBJECT + _NAMING + r"(?:the\s+)?(?P<name>" + _NAME + r"),\s*(?P<descr>.+)$")
_OBJECT = re.compile(_SUBJECT + _CONTRIBUTING + r"(?:that\s+)?(?P<object>(?!(?i:this|these|that|it)\b).+)$")
_ACRONYM = re.compile(r"\((?P<acronym>[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*)\)")
_FILLER = re.compile(
    r"^(?:(?:the|a|an)\s+)?(?:(?:novel|new|simple|general|critical|and)\s+|,\s*)*"
    r"(?:(?:problem|question|task) of\s+)?",
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


def long_form(acronym: str, before: str) -> str | None:
    """The words just before "(ACRONYM)" that it abbreviates, or None (Schwartz & Hearst's matching)."""
    letters = [c.lower() for c in acronym if c.isalnum()]
    position = len(before) - 1
    for index in range(len(letters) - 1, -1, -1):
        while position >= 0 and (
            before[position].lower() != letters[index]
            or (index == 0 and position > 0 and before[position - 1].isalnum())
        ):
            position -= 1
        if position < 0:
            return None
        position -= 1
    start = before.rfind(" ", 0, position + 1) + 1
    found = before[start:].strip()
    return found if len(found.split()) <= len(letters) + 3 else None


def _named_method(sentence: str) -> str | None:
    match = _NAMED.search(sentence)
    if match:
        return f"{match.group('name')}: {match.group('descr')}"
    match = _OBJECT.search(sentence)
    acronym = _ACRONYM.search(match.group("object")) if match else None
    if acronym:
        before = _FILLER.sub("", match.group("object")[: acronym.start()]).strip()
        expansion = long_form(acronym.group("acronym"), before)
        extra = before[: len(before) - len(expansion)].split() if expansion else ["-"] * 9
        if len(extra) <= 3 and not _STOPWORDS.intersection(w.lower() for w in extra):
            return f"{acronym.group('acronym')}: {expansion}"
    return None


def derive_title(abstract: str, max_chars: int = 90) -> str:
    """A readable display title for an untitled abstract (see the module docstring)."""
    sentences = [_plain(s) for s in split_sentences(abstract)] or [_plain(abstract)]
    for sentence in sentences:
        named = _named_method(sentence)
        if named:
            return shorten(named, max_chars)
    for sentence in sentences:
        match = _OBJECT.search(sentence)
        if match:
            topic = _FILLER.sub("", match.group("object"))
            if len(topic) >= 12:
                return shorten(topic[:1].upper() + topic[1:], max_chars)
    opening = re.split(r"[;:]|, (?:but|while|yet|and|which)\b| — ", sentences[0])[0]
    return shorten(opening[:1].upper() + opening[1:], max_chars)
