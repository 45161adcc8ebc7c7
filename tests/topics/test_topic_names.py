"""Names a researcher would write (issue #41, part 1), each rule on texts made to trip it: an
acronym only when the corpus uses it and in its dominant form, words cased as the texts write
them, no vague word or adjective alone, no two terms saying one thing, terms that belong together.
The rules on whole maps (the sample, IJCAI) are checked by ``check_names`` in test_topic_levels.py."""

from __future__ import annotations

import numpy as np

from paperscope.embed.terms import english_stop_words
from paperscope.index.topics.coverage import TermFinder
from paperscope.index.topics.naming import acronyms, cased_words, corpus_terms, redundant, shown_alone, together
from paperscope.settings import NamingSettings

FILLER = [f"A study of topic number {i} in general." for i in range(20)]


def _shown(texts: list[str]) -> dict[str, str]:
    return acronyms(texts, english_stop_words(), NamingSettings().max_words)


def test_an_acronym_defined_in_one_abstract_and_used_nowhere_else_is_not_shown():
    once = ["We apply data augmentation (DA) to images.", *FILLER]
    assert "data augmentation" not in _shown(once) and "da" not in _shown(once)
    twice = ["We apply data augmentation (DA) to images.", "Strong data augmentation (DA) helps.", *FILLER]
    assert _shown(twice)["data augmentation"] == "data augmentation (DA)"
    used = ["We forecast time series (TS) data.", *[f"TS models, case {i}." for i in range(3)], *FILLER]
    assert _shown(used)["time series"] == "time series (TS)"  # defined once, written by three more papers


def test_an_acronym_is_shown_in_its_dominant_form():
    texts = [f"We study large language models (LLMs), case {i}." for i in range(4)]
    texts += ["Small language models (LMs) are cheap.", *FILLER]
    shown = _shown(texts)
    assert shown["large language model"] == "large language models (LLMs)"
    assert "language model" not in shown and "lm" not in shown  # "(LMs)": 1 paper against 4


def test_words_are_cased_as_the_texts_write_them_inside_sentences():
    texts = [f"Planning Under Uncertainty. We use a hidden Markov model and RL agents ({i}). Graph methods use RL."
             for i in range(3)]  # fmt: skip
    cased = cased_words(texts)
    assert cased["markov"] == "Markov" and cased["rl"] == "RL"
    assert "graph" not in cased and "planning" not in cased  # a title's or a sentence's first word


def test_no_vague_word_or_adjective_alone():
    texts = [f"We learn visual features and visual cues for retrieval. Label noise hurts, case {i}." for i in range(5)]
    texts += [f"Multi-agent systems coordinate; dense retrieval and retrieval. Temporal logic ({i})." for i in range(5)]
    terms = corpus_terms(texts, 4)
    assert not shown_alone("visual", terms)  # an adjective: always followed by a noun
    assert not shown_alone("multi-agent", terms)  # a hyphenated adjective
    assert not shown_alone("label", terms)  # too general alone
    assert shown_alone("retrieval", terms)  # a noun that ends like an adjective
    assert shown_alone("logic", terms)
    assert shown_alone("visual features", terms)  # a phrase may hold them


def test_no_two_terms_say_one_thing():
    assert redundant("robot", "robotic")
    assert redundant("recommendation", "recommender")
    assert redundant("spike", "spiking neural networks (SNNs)")
    assert redundant("RL", "model-based reinforcement learning (MBRL)")
    assert redundant("rl", "reinforcement learning")
    assert not redundant("planning", "linear temporal logic (LTL)")
    assert not redundant("convolution", "conversation")
    assert not redundant("elections", "voting")


def test_a_name_s_terms_belong_together():
    texts = [f"Forecasting traffic flow, case {i}." for i in range(6)]
    texts += [f"Spiking neural networks on chips, case {i}." for i in range(6)]
    texts += [f"Federated learning with privacy guarantees, case {i}." for i in range(6)]
    texts += ["Federated learning at scale.", "Privacy of medical records.", *FILLER]
    finder = TermFinder(texts)
    glued = np.arange(12)  # one topic of two fields, never in one paper
    assert not together("forecasting", "spiking neural networks", glued, finder)
    field = np.arange(12, 20)
    assert together("federated learning", "privacy", field, finder)
