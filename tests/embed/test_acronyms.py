"""Acronyms in one place: the query word, the definition in a text, the long form (titles and topic names)."""

from __future__ import annotations

import pytest

from paperscope.embed.acronyms import ACRONYM_WORD, BRACKETED, DEFINITION, long_form
from paperscope.embed.terms import english_stop_words


def test_acronym_words_of_a_query():
    query = "GRPO vs DiT and T2I with LLMs, not Transformer, U-Net, x2 or A"
    assert ACRONYM_WORD.findall(query) == ["GRPO", "DiT", "T2I", "LLMs", "U-Net"]


def test_definitions_and_bracketed_acronyms():
    assert DEFINITION.findall("We study Large Language Models (LLMs) and ( XAI ).") == [
        ("We study Large Language Models ", "LLMs"),
        ("and ", "XAI"),
    ]
    assert BRACKETED.search("for the (ATSP) problem").group("acronym") == "ATSP"


@pytest.mark.parametrize(
    "acronym, before, expected",
    [
        ("LLMs", "we use Large Language Models", "Large Language Models"),  # the plural "s" is not a letter
        ("XAI", "methods of eXplainable AI", "eXplainable AI"),  # the first letter inside the first word
        ("AT", "the adversarial training", "adversarial training"),  # the shortest run
        ("GNN", "graphs", None),  # one word is a name, not a long form
        ("T", "a Transformer model", None),  # one letter is no acronym
        ("DMTCI", "dependent multi-task learning framework with the causal intervention", None),  # too long
    ],
)
def test_long_form(acronym, before, expected):
    assert long_form(acronym, before, english_stop_words()) == expected


def test_long_form_for_a_title_allows_one_more_word_and_any_first_word():
    before = "dependent multi-task learning framework with the causal intervention"
    assert long_form("DMTCI", before, extra_words=3) == before
    assert long_form("OM", "of mixtures") == "of mixtures"
    assert long_form("OM", "of mixtures", {"of"}) is None  # topic names skip a run that starts with a stop word
