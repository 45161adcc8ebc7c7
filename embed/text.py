"""Plain-text helpers shared by the readers, the embedder and the explanations."""

from __future__ import annotations

import re
import unicodedata

_ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "cf.", "Fig.", "Eq.", "Sec.", "approx.", "resp.")
# A sentence ends at . ! or ? before a space and a capital, digit or opening mark; or, with no
# space, between a word and a capitalised word ("…in days.For example…"), which leaves decimals
# (3.5), versions (v1.2), "U.S." and (protected first) "e.g." alone.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$\\*])|(?<=\w[.!?])(?=[A-Z][a-z])")


_ASCII_SPACES = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"  # str.split()'s white space in ASCII, besides space and \n


def normalise_text(text: str) -> str:
    """Unicode NFC, every whitespace run (line breaks, tabs, no-break spaces) to one space."""
    if not text.isascii():
        return " ".join(unicodedata.normalize("NFC", text).split())
    if len(text) <= 100:  # a name, a title, a date: NFC leaves ASCII alone
        return " ".join(text.split())
    text = text.replace("\n", " ")  # an abstract: 4x as fast as split and join
    for space in _ASCII_SPACES:
        if space in text:
            text = text.replace(space, " ")
    text = text.strip()
    while "  " in text:
        text = text.replace("  ", " ")
    return text


def split_sentences(text: str) -> list[str]:
    """Split normalised text into sentences, keeping abbreviations such as "e.g." intact."""
    protected = text
    for abbreviation in _ABBREVIATIONS:
        protected = protected.replace(abbreviation, abbreviation.replace(".", "\0"))
    return [s.replace("\0", ".").strip() for s in _SENTENCE_END.split(protected) if s.strip()]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun, in the singular or plural: "1 paper", "1,000 papers", "2 entries"."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


TEXT_RECIPE = "title + '. ' + abstract when the paper has a real title, else the abstract alone"


def embedding_text(title: str | None, abstract: str | None, title_derived: bool = False) -> str:
    """The text a paper is embedded from (TEXT_RECIPE): "title. abstract" when it has a real title
    (not one derived from its abstract), else the abstract alone; a library entry without an
    abstract (outside the corpus) is embedded from its title alone. The one place the recipe is written."""
    if title_derived or not title:
        return abstract or ""
    if not abstract:
        return title
    return f"{title.rstrip('.')}. {abstract}"


def embedding_texts(papers) -> list[str]:
    """The text embedded for each paper (:func:`embedding_text`): a table or dict of columns."""
    return [
        embedding_text(title, abstract, derived)
        for title, abstract, derived in zip(papers["title"], papers["abstract"], papers["title_derived"], strict=True)
    ]
