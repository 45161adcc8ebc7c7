"""Topic names a researcher would give: whole phrases, acronyms with their expansion, no residue.

1. Candidates: phrases of one to four adjacent words (:mod:`paperscope.embed.terms`), with no
   stop word, adverb, number or citation residue ("et al", "e.g"), not made of scientific
   boilerplate alone ("real world", "neural networks"), found once per build
   (:func:`corpus_terms`) and counted per topic by the papers that use them (a term counts once
   per paper, so one abstract repeating a word cannot name its topic; one paper's term is not its
   topic's).
2. Whole phrases: a phrase inside a longer candidate that most of its papers also use gives way
   to the longer one ("series forecasting" becomes "multivariate time series forecasting"), and
   a phrase that the abstracts mostly continue with another word is a fragment ("solve complex"
   in "solve complex reasoning tasks"), dropped.
3. Acronyms are joined to the expansion the abstracts define ("large language models (LLMs)")
   when the corpus uses them (defined in two papers, or written in three) and in their dominant
   form ("(LLMs)" over "(LMs)"); words are cased as the texts write them inside sentences
   ("Markov", "RL"); a single word names a topic only when it is neither too general ("label",
   "gradient") nor an adjective by its use ("visual", "temporal": mostly followed by a noun).
4. A topic's candidates that most of its papers use and that are at least twice as common in it
   as in the corpus (lift, :mod:`.coverage`) are picked one at a time for the papers they name
   that no picked term names yet, weighted by log lift and by their MiniLM similarity to the
   topic's centroid (BERTopic's KeyBERT-inspired representation, with our own model); the name
   holds the first terms (three at most) that together are found in half of the topic's papers.
   Each term of a name belongs with the others (found together in the corpus at least twice as
   often as by chance, and in two of the topic's papers) and says something they do not ("robot,
   robotic" and "RL, model-based reinforcement learning (MBRL)" are one thing said twice); a
   cluster that no such name covers is split, and fine clusters whose shared terms do not belong
   together are not merged.

The numbers (four words, half of the papers, lift 2 …) are :class:`~paperscope.settings.NamingSettings`;
the word lists below are language, not tuning.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import scipy.sparse

from paperscope.embed.acronyms import DEFINITION, long_form
from paperscope.embed.terms import BOILERPLATE, english_stop_words, phrases, singular, words
from paperscope.index.topics.coverage import TermFinder
from paperscope.settings import UNCLUSTERED, NamingSettings

Pool = list[tuple[str, float]]  # a topic's candidate names with their lift (topic_pools)
# Citation and layout residue that survives tokenising ("et al.", "e.g.", "Fig. 3").
RESIDUE = {"et", "al", "eg", "ie", "etc", "cf", "vs", "resp", "fig", "figure", "table", "section", "appendix"}
# Words that describe or act rather than name: a topic's phrase never starts with one.
NOT_LEADING = {
    "propose", "proposed", "proposes", "novel", "new", "existing", "efficient", "effective", "robust", "simple",
    "strong", "superior", "various", "different", "recent", "present", "achieve", "achieves", "improve", "improves",
    "improved", "enable", "enables", "leverage", "leverages", "use", "using", "used", "introduce", "introduces",
    "provide", "provides", "make", "makes", "allow", "allows", "require", "requires", "reduce", "reduces",
    "demonstrate", "show", "shows", "address", "develop", "develops", "train", "trained", "learn", "learned",
    "multiple", "diverse", "challenging", "optimal", "specific", "general", "standard", "current", "traditional",
    "conventional", "prior", "previous", "unknown", "accurate", "reliable", "consistent", "complex", "unique",
    "substantial", "remarkable", "fundamental", "promising", "potential", "critical", "crucial", "practical",
    "compared", "designed", "based", "given", "called", "named", "termed", "particular", "important", "key",
    "state-of-the-art", "real-world", "large-scale", "well-known", "high-quality", "deep-layer", "so-called",
}  # fmt: skip
# Verbs that follow a subject phrase: "traffic prediction plays (an important role)".
NOT_TRAILING = {
    "play", "plays", "remain", "remains", "aim", "aims", "attract", "attracts", "attracted", "receive", "receives",
    "received", "gain", "gains", "gained", "draw", "draws", "become", "becomes", "emerge", "emerges", "emerged",
    "suffer", "suffers", "lack", "lacks", "face", "faces", "achieve", "achieves", "perform", "performs", "rely",
    "relies",
}  # fmt: skip
# Endings of adjectives and verbs: a single word that ends so ("adaptive", "recognize") names no field.
NOT_NOUN = ("ive", "ize", "ise", "ized", "ised", "ous", "able", "ible", "ed", "wn")
# Nouns too general to name a field alone ("label", "gradient", "layer"): a phrase may hold them.
VAGUE = {
    "label", "class", "layer", "node", "edge", "pattern", "knowledge", "entity", "frame", "hyperparameter", "agent",
    "ai", "gradient", "graph", "function", "loss", "parameter", "sample", "instance", "object", "domain",
    "representation", "structure", "signal", "token", "user", "item", "query", "weight", "embedding", "space",
    "distribution", "variable", "policy", "reward", "action", "environment", "attention", "scene", "context",
    "relation", "concept", "view", "modality", "memory", "input", "output", "target", "source", "rule", "constraint",
    "uncertainty", "noise", "error", "value", "human", "expert", "decision", "search", "step", "point", "region",
    "pixel", "patch", "sequence", "matrix", "vector", "tree", "path", "answer", "question", "response", "prompt",
    "instruction", "semantic", "visual", "temporal", "spatial", "dynamic", "dynamical", "private", "global", "local",
    "illustrate", "solving", "modeling", "bound", "shift", "noisy", "operator", "activation", "behavior", "utility",
    "event", "test", "capture", "forward", "word", "sentence", "channel", "classifier", "solver", "preference",
    "solution", "property", "quality", "factor", "term", "unit", "scale", "size", "length", "convex", "linear",
    "nonlinear", "stochastic", "sparse", "discrete", "continuous", "generative", "multimodal", "interpretable",
    "explainable", "online", "offline", "bayesian", "implementation", "finding", "future", "stage", "best",
    "research", "literature", "superiority", "short", "long", "dimension", "solve", "capturing", "entire", "unseen",
    "boolean", "gaussian", "euclidean", "outcome", "prove", "ability", "type", "success",
}  # fmt: skip
# Endings of adjectives that abstracts also use as nouns ("retrieval", "logic"): an adjective when
# the texts mostly follow the word with another content word ("visual features", "causal effect").
MODIFIER_ENDINGS = ("al", "ar", "ic", "ate", "ent", "ant")
PAIR_LIFT = 2.0  # a name's two terms are found together this many times as often as by chance
PAIR_PAPERS = 2  # ... in at least this many of the topic's papers
WIDEST_OF = 15  # terms a name that covers too little is chosen from, every set of them tried
MODIFIER_TEXTS = 5000  # texts read to tell an adjective by its use
MODIFIER_SHARE = 0.8  # of a word's uses followed by a content word, for a modifier (docs/benchmarks.md)
ACRONYM_USERS = 3  # texts that write an acronym defined once, for it to be shown
CASED_SHARE = 0.6  # of a word's occurrences inside sentences written with capitals, to be shown so
# Generic heads: "federated learning framework" names no more than "federated learning".
GENERIC_HEADS = {
    "method", "framework", "task", "approach", "technique", "strategy", "mechanism", "scheme", "module",
    "pipeline", "paradigm", "setting", "problem", "system", "solution", "algorithm", "dataset", "benchmark",
}  # fmt: skip
_CLAUSE_END = re.compile(r"[,;:!?()\[\]]|\.(?=\s|$)")


def _singular(term: str) -> str:
    return " ".join(singular(word) for word in term.split())


def candidates(text: str, stop_words: frozenset[str], max_words: int) -> list[str]:
    """The candidate terms of one text (see the module docstring, step 1) of up to ``max_words``
    words, their last word in the singular, so that "graph" and "graphs" count as one term."""

    def is_stop(word: str) -> bool:
        return word in stop_words or word in RESIDUE or word.endswith("ly") or not word[0].isalpha()

    segments = _CLAUSE_END.split(text)  # a phrase never runs over a comma or a full stop
    found = (
        term.split()
        for segment in segments
        for term in phrases(words(segment, compounds=True), range(1, max_words + 1), is_stop)
    )
    named = (
        term_words
        for term_words in found
        if not BOILERPLATE.issuperset(term_words)
        and (len(term_words) == 1 or (term_words[0] not in NOT_LEADING and not term_words[0].endswith("ing")))
        and (len(term_words) == 1 or singular(term_words[-1]) not in GENERIC_HEADS)
        and term_words[-1] not in NOT_TRAILING
        and len(set(term_words)) == len(term_words)
    )
    return [" ".join([*term_words[:-1], singular(term_words[-1])]) for term_words in named]


def acronyms(texts: list[str], stop_words: frozenset[str], max_words: int) -> dict[str, str]:
    """Acronyms the texts define and use, as a map from a candidate term (the acronym in lower
    case, and the expansion when it holds no stop word) to its display form "expansion (ACRONYM)".

    An acronym is shown only when the corpus uses it: defined in two texts or more, or written in
    ``ACRONYM_USERS`` texts ("data augmentation (DA)" defined in one abstract is not); in its
    dominant form: an expansion that ends another one defined at least twice as often gives way
    ("language models (LMs)" beside "large language models (LLMs)": shown as "language models").
    An acronym that the texts also write in lower case as a word ("AIM" and "aim") keeps only its
    expansion's key."""
    seen: Counter = Counter()
    lower_words: Counter = Counter()
    for text in texts:
        lower_words.update(re.findall(r"\b[a-z][a-z0-9]*\b", text))
        defined = set()
        for before, acronym in DEFINITION.findall(text):
            expansion = long_form(acronym, before, stop_words)
            if expansion and sum(c.isupper() for c in acronym) >= 2:
                defined.add((acronym, expansion.lower().rstrip("'")))
        seen.update(defined)  # papers that define it, not definitions
    written = Counter(word for text in texts for word in set(re.findall(r"\b[A-Z][A-Za-z0-9-]*[A-Z]s?\b", text)))
    used = {
        key: count
        for key, count in seen.items()
        if count >= 2 or written[key[0]] + written[key[0].rstrip("s")] >= ACRONYM_USERS
    }
    shown: dict[str, str] = {}
    for (acronym, expanded), count in sorted(used.items(), key=lambda item: (-item[1], item[0])):
        if any(other.endswith(f" {expanded}") and more >= 2 * count for (_, other), more in used.items()):
            continue  # not the dominant form
        display = f"{expanded} ({acronym})"
        keys = [] if lower_words[acronym.lower()] or lower_words[acronym.lower().rstrip("s")] else [acronym.lower()]
        forms = candidates(expanded, stop_words, max_words)
        if forms and len(forms[-1].split()) == len(words(expanded, compounds=True)):
            keys.append(forms[-1])  # every word of the expansion is in its candidate form
        for key in keys:
            shown.setdefault(singular(key), display)
    return shown


def cased_words(texts: list[str]) -> dict[str, str]:
    """Words the texts mostly write with capitals inside a sentence (never a title's or a
    sentence's first word): {"markov": "Markov", "rl": "RL"}, so that names write them so."""
    forms: dict[str, Counter] = {}
    for text in texts:
        body = text.split(". ", 1)[-1]  # the title is in title case
        for sentence in re.split(r"[.!?:;]\s+", body):
            for word in re.findall(r"\b[A-Za-z][A-Za-z0-9-]*\b", sentence)[1:]:
                forms.setdefault(word.lower(), Counter())[word] += 1
    cased = {}
    for lower, counts in forms.items():
        form, count = counts.most_common(1)[0]
        if form != lower and count >= CASED_SHARE * sum(counts.values()):
            cased[lower] = form
    return cased


@dataclass(frozen=True)
class CorpusTerms:
    """The candidate terms of the texts a map is named from, found once per build
    (:func:`corpus_terms`) and read by every stage that names a topic or judges a name: the
    grab-bag splits, the coarse merge and the names at both levels."""

    texts: list[str]
    finder: TermFinder  # where each term is found (coverage and lift)
    vocabulary: np.ndarray  # the candidate terms, sorted
    presence: scipy.sparse.csr_matrix | None  # text x term: 1 where the text uses the term (None: no term at all)
    shown: dict[str, str]  # acronyms the texts define: candidate term -> "expansion (ACRONYM)"
    stop_words: frozenset[str]
    cased: dict[str, str] = field(default_factory=dict)  # words written with capitals: "markov" -> "Markov"
    _joined: dict[int, str] = field(default_factory=dict, repr=False, compare=False)
    _modifies: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)  # asked of a word often

    def modifies(self, word: str) -> bool:
        """Whether the texts (up to ``MODIFIER_TEXTS`` of them) follow ``word`` with another content
        word more than ``MODIFIER_SHARE`` of the time: an adjective ("visual features"), not a
        noun ("retrieval", "logic programs" beside "temporal logic")."""
        if word not in self._modifies:
            after = self._followers(word.replace("-", " ").split(" "))  # joined texts split hyphens
            content = sum(1 for w in after if w not in self.stop_words and w[0].isalpha())
            self._modifies[word] = bool(after) and content > MODIFIER_SHARE * len(after)
        return self._modifies[word]

    @cached_property
    def _modifier_words(self) -> tuple[list[list[str]], dict[str, list[tuple[int, int]]]]:
        """The words of the texts :meth:`modifies` reads (up to ``MODIFIER_TEXTS``), and where each
        word is in them ((text, position), in order): each word's followers found from an index,
        not by searching every text for each."""
        rows = range(0, len(self.texts), max(1, len(self.texts) // MODIFIER_TEXTS))
        texts = [self.joined(row)[1:-1].split(" ") for row in rows]
        where: dict[str, list[tuple[int, int]]] = {}
        for number, text in enumerate(texts):
            for at, word in enumerate(text):
                where.setdefault(word, []).append((number, at))
        return texts, where

    def _followers(self, sequence: list[str]) -> list[str]:
        """The word after each place the texts read hold the words ``sequence``, found as a search
        from each text's start finds them: one after another, never overlapping."""
        texts, where = self._modifier_words
        found, free, size = [], (0, 0), len(sequence)  # free: the first place a next one may start
        for number, at in where.get(sequence[0], ()):
            text = texts[number]
            if (number, at) >= free and at + size < len(text) and text[at : at + size] == sequence:
                found.append(text[at + size])
                free = (number, at + size + 1)
        return found

    def joined(self, row: int) -> str:
        """The words of text ``row`` joined by single spaces and padded with one (" a b c ")."""
        if row not in self._joined:
            self._joined[row] = f" {' '.join(words(self.texts[row]))} "
        return self._joined[row]


def corpus_terms(texts: list[str], max_words: int) -> CorpusTerms:
    """The candidate terms of phrases of up to ``max_words`` words in ``texts`` (one per paper),
    which papers use them, and the acronyms the texts define (see the module docstring)."""
    from sklearn.feature_extraction.text import CountVectorizer

    stop_words = english_stop_words()
    vectorizer = CountVectorizer(analyzer=lambda text: candidates(text, stop_words, max_words), binary=True)
    try:
        presence = vectorizer.fit_transform(texts).tocsr()
        vocabulary = vectorizer.get_feature_names_out()
    except ValueError:  # not one term (say, no Latin letters): the topics get numbered names
        presence, vocabulary = None, np.array([], dtype=object)
    shown = acronyms(texts, stop_words, max_words)
    return CorpusTerms(list(texts), TermFinder(texts), vocabulary, presence, shown, stop_words, cased_words(texts))


def _display(term: str, shown: dict[str, str]) -> str:
    """``term`` with an acronym joined to its expansion ("language models llms" becomes
    "large language models (LLMs)"); other terms as they are."""
    if term in shown:
        return shown[term]
    term_words = _singular(term).split()
    for word in term_words:
        display = shown.get(word)
        if display and set(term_words) - {word} <= set(_singular(" ".join(words(display, compounds=True))).split()):
            return display
    return term


def _surface(term: str, texts: list[str], in_texts: Counter[str]) -> str:
    """The term as the texts (joined word lists) mostly write it: its last word plural or not.
    ``in_texts``: for each word, how many of the texts hold it (a single word is counted there, not
    searched for in every text)."""
    plural = term + "s"
    if " " not in term:
        return plural if in_texts[plural] > in_texts[term] else term
    return plural if sum(f" {plural} " in text for text in texts) > sum(f" {term} " in text for text in texts) else term


def _containers(counts: dict[str, int]) -> dict[str, list[str]]:
    """For each phrase, the longer candidates that contain it."""
    found: dict[str, list[str]] = {}
    for term in counts:
        term_words = term.split()
        for size in range(1, len(term_words)):
            for start in range(len(term_words) - size + 1):
                found.setdefault(" ".join(term_words[start : start + size]), []).append(term)
    return found


def _whole(term: str, counts: dict[str, int], containers: dict[str, list[str]], share: float) -> str:
    """The longest phrase containing ``term`` that ``share`` of ``term``'s papers use (step 2)."""
    while True:
        longer = [other for other in containers.get(term, []) if counts[other] >= share * counts[term]]
        if not longer:
            return term
        term = max(longer, key=lambda other: (counts[other], len(other), other))


def _class_terms(terms: CorpusTerms, labels: np.ndarray) -> dict[int, dict[str, int]]:
    """Per topic of ``labels``, its candidate terms that at least two of its papers use, with how
    many do; in a topic of one paper, those its text uses twice or more, with how often it does
    (every phrase of a lone paper is used by all of its papers: only repetition tells its topic)."""
    topics = sorted(set(labels.tolist()) - {UNCLUSTERED})
    if terms.presence is None:
        return {label: {} for label in topics}
    classes = len(topics) + 1  # the last one: unclustered papers
    class_of_paper = np.where(labels == UNCLUSTERED, len(topics), np.searchsorted(topics, labels))
    membership = scipy.sparse.csr_matrix(
        (np.ones(len(labels)), (class_of_paper, np.arange(len(labels)))), shape=(classes, len(labels))
    )
    # Sparse (class x term): a dense one is classes x vocabulary, gigabytes for 50,000 abstracts.
    counts = (membership @ terms.presence).tocsr()
    sizes = np.bincount(class_of_paper, minlength=classes)
    found = {}
    for row, label in enumerate(topics):
        columns = counts.indices[counts.indptr[row] : counts.indptr[row + 1]]
        in_papers = counts.data[counts.indptr[row] : counts.indptr[row + 1]]
        if sizes[row] == 1:
            text = terms.joined(int(np.flatnonzero(class_of_paper == row)[0]))
            uses = {term: text.count(f" {term} ") for term in terms.vocabulary[columns].tolist()}
            found[label] = {term: used for term, used in uses.items() if used >= 2}
            continue
        shared = in_papers >= 2  # used by a single paper of the topic: not its topic
        found[label] = dict(zip(terms.vocabulary[columns[shared]].tolist(), in_papers[shared].tolist(), strict=True))
    return found


def _continued(term: str, texts: list[str], stop_words: frozenset[str], share: float) -> bool:
    """Whether the texts (joined word lists) follow the phrase ``term`` with another content word
    more than ``share`` of the time."""
    if " " not in term:
        return False  # single words are the fallback; a modifier is fine there
    pattern = re.compile(rf" {re.escape(term)}s? (\S+)?")
    after = [match.group(1) for text in texts for match in pattern.finditer(text)]
    followed = sum(1 for word in after if word and word not in stop_words and word[0].isalpha())
    return bool(after) and followed > share * len(after)


def _pool(counts: dict[str, int], terms: CorpusTerms, texts: list[str], settings: NamingSettings) -> list[str]:
    """Steps 2 and 3: the candidates most of the topic's papers use, as whole phrases in display
    form, fragments dropped. ``texts``: some of the topic's texts as joined word lists, to tell
    fragments and plurals."""
    containers, shown = _containers(counts), terms.shown
    in_texts = Counter(word for text in texts for word in set(text.split()))
    pool, used = set(), set(in_texts)  # used: the words of the texts
    for term in sorted(counts, key=lambda t: (-counts[t], t))[: settings.pool]:
        whole = _whole(term, counts, containers, settings.whole_phrase_share)
        if _continued(whole, texts, terms.stop_words, settings.continued_share):
            continue
        display = _display(whole, shown) if whole in shown or any(w in shown for w in whole.split()) else None
        display = _cased(display or _surface(whole, texts, in_texts), terms.cased)
        if " " in display or _names_a_field(display.lower(), used):
            pool.add(display)
    return sorted(pool)


def _cased(term: str, cased: dict[str, str]) -> str:
    """``term`` with each word as the texts mostly write it inside a sentence ("Markov", "RL")."""
    return " ".join(cased.get(word, word) for word in term.split(" "))


def _names_a_field(word: str, used: set[str]) -> bool:
    """Whether a single word can name a topic: not one that describes or acts, not an adjective's
    or verb's ending ("adaptive", "recognize"), and not a verb or gerund whose noun the abstracts
    use ("optimizing" beside "optimization", "generate" beside "generation"); "learning" and
    "planning" have no such noun and stay. ``used``: the words of some of the topic's texts."""
    if word in NOT_LEADING or word in NOT_TRAILING or word.endswith(NOT_NOUN):
        return False
    stem = word[:-3] if word.endswith("ing") else word[:-1] if word.endswith("e") else word
    return not any(f"{stem}{ending}" in used for ending in ("ation", "ion", "ement"))


def shown_alone(term: str, terms: CorpusTerms) -> bool:
    """Whether a name may hold ``term``: a phrase, or a single word that is neither too general
    to name a field alone (``VAGUE``: "label", "gradient", "visual") nor an adjective by its use
    (ending as one or hyphenated, and mostly followed in the texts by another content word:
    "causal effect", "multi-agent systems")."""
    if " " in term:
        return True
    word = term.lower()
    if singular(word) in VAGUE:
        return False
    return not ((word.endswith(MODIFIER_ENDINGS) or "-" in word) and terms.modifies(word))


def _term_words(term: str) -> set[str]:
    return set(_singular(" ".join(words(term))).split())


class TopicTerms(NamedTuple):
    """A topic's terms, best first, and how many of them its name needs."""

    terms: list[str]
    named_by: int


def _bare(term: str) -> str:
    """A term without the acronym joined to it."""
    return term.rsplit(" (", 1)[0] if term.endswith(")") else term


def _one_phrase(term: str, chosen: list[str], members: np.ndarray, finder: TermFinder) -> bool:
    """Whether ``term`` and a term already chosen are two halves of one phrase that at least two
    of the topic's papers write ("temporal" and "forecasting" in "temporal forecasting")."""
    # A paper writing the phrase writes both halves: where fewer than two papers write both, no
    # phrase of the two need be looked for (most pairs; looking for one is the slow part).
    return any(
        np.count_nonzero((finder.found(_bare(term)) & finder.found(_bare(other)))[members]) >= 2
        and any(
            finder.found(f"{first} {second}")[members].sum() >= 2
            for first, second in ((_bare(term), _bare(other)), (_bare(other), _bare(term)))
        )
        for other in chosen
    )


def _same_stem(one: str, two: str) -> bool:
    """Whether two words share a stem: a common start of four letters or more that is at least
    0.8 of the shorter word ("robot", "robotic"; "spike", "spiking"; "class", "classification")."""
    common = next((i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b), min(len(one), len(two)))
    return common >= 4 and common >= 0.8 * min(len(one), len(two))


def _initials(term: str) -> str:
    """The acronym of a term: the one it gives ("MBRL"), else its words' initials, lower case."""
    given = term.rsplit(" (", 1)[1].rstrip(")") if term.endswith(")") else ""
    return given.lower().rstrip("s") or "".join(word[0] for word in words(term))


@functools.lru_cache(maxsize=1 << 16)  # a pure test of two strings, asked of the same pairs again and again
def redundant(term: str, other: str) -> bool:
    """Whether two terms say one thing twice: they share a stem ("robot, robotic",
    "recommendation, recommender"), or one is an acronym inside the other's ("RL" and
    "model-based reinforcement learning (MBRL)")."""
    if any(_same_stem(one, two) for one in words(_bare(term)) for two in words(_bare(other))):
        return True
    return any(
        " " not in _bare(one) and len(_bare(one)) >= 2 and _bare(one).lower() in _initials(two) and one != two
        for one, two in ((term, other), (other, term))
    )


def together(term: str, other: str, members: np.ndarray, finder: TermFinder) -> bool:
    """Whether two terms belong in one name: at least ``PAIR_PAPERS`` of the topic's papers
    (``members``) use both, and the corpus's papers use both at least ``PAIR_LIFT`` times as
    often as they would by chance (their shares multiplied): "forecasting" and "spiking neural
    networks" in one topic do not."""
    both = finder.found(term) & finder.found(other)
    chance = finder.share(term) * finder.share(other)
    return bool(
        np.count_nonzero(both[members]) >= PAIR_PAPERS
        and chance
        and np.count_nonzero(both) / len(both) >= PAIR_LIFT * chance
    )


def _fits(term: str, chosen: list[str], members: np.ndarray, finder: TermFinder) -> bool:
    """Whether ``term`` may join the terms ``chosen`` for a name: not redundant with any of them
    and belonging with each (:func:`redundant`, :func:`together`)."""
    return all(not redundant(term, other) and together(term, other, members, finder) for other in chosen)


def _covering(
    pool: Pool, similarity: np.ndarray, members: np.ndarray, finder: TermFinder, settings: NamingSettings
) -> TopicTerms:
    """Step 4 (:func:`_greedy_cover`); where the terms most like the topic cannot cover
    ``settings.name_coverage`` of it, the terms that cover most (picked one at a time), if they
    cover more; where those cover less than ``settings.coherent_coverage``, the best of every set
    (:func:`_widest_set`), if it covers more."""
    named = _greedy_cover(pool, similarity, members, finder, settings, strict=True)
    for wider, enough in ((_greedy_cover, settings.name_coverage), (_widest_set, settings.coherent_coverage)):
        if finder.coverage(members, named.terms[: named.named_by]) >= enough:
            break
        widest = wider(pool, np.ones(len(pool)), members, finder, settings, strict=True)
        if finder.coverage(members, widest.terms[: widest.named_by]) > finder.coverage(
            members, named.terms[: named.named_by]
        ):
            named = widest
    return named


def _widest_set(
    pool: Pool, similarity: np.ndarray, members: np.ndarray, finder: TermFinder, settings: NamingSettings, **_
) -> TopicTerms:
    """Of the ``WIDEST_OF`` terms of ``pool`` found in most of the topic's papers, the set of up to
    ``settings.max_terms`` that fit together (:func:`_fits`) and cover most of them (``similarity``
    is not read: every term counts the same), in the order of their coverage."""
    hits = {term: finder.found(term)[members] for term, _ in pool}
    ranked = sorted(hits, key=lambda term: (-hits[term].mean(), term))[:WIDEST_OF]
    best, covered = [], 0.0
    for size in range(1, settings.max_terms + 1):
        for terms in itertools.combinations(ranked, size):
            share = np.any([hits[term] for term in terms], axis=0).mean()
            if share > covered and all(_fits(term, list(terms[:i]), members, finder) for i, term in enumerate(terms)):
                best, covered = list(terms), share
    return TopicTerms(best, len(best))


def _greedy_cover(
    pool: Pool,
    similarity: np.ndarray,
    members: np.ndarray,
    finder: TermFinder,
    settings: NamingSettings,
    *,
    strict: bool = False,
) -> TopicTerms:
    """Step 4: terms of ``pool`` picked one at a time, each the one that names most of the papers
    no term picked so far names, weighted by how much more common it is in the topic than in the
    corpus (log2 of its lift) and by its similarity to the topic's centroid, phrases
    (``settings.phrase_weight``) before single words, no two terms sharing a word; up to
    ``settings.max_terms`` terms. The name needs the first terms that cover
    ``settings.name_coverage`` of the papers (at least two; all where they do not). ``strict``
    (a name's terms, not a test of a topic): each term also fits the others (:func:`_fits`)."""
    hits = np.array([finder.found(term)[members] for term, _ in pool], dtype=bool).reshape(len(pool), len(members))
    lifts = np.array([np.log2(lift) for _, lift in pool], dtype=np.float64)
    similars = np.array([max(float(similar), 0.01) for similar in similarity], dtype=np.float64)
    kinds = np.array([settings.phrase_weight if " " in term else 1.0 for term, _ in pool], dtype=np.float64)
    # A term ruled out by a term chosen stays ruled out as more are chosen: each round checks the open
    # terms against the last one chosen only (the rules: no shared word, not one phrase, each fits).
    open_terms = np.ones(len(pool), dtype=bool)
    covered = np.zeros(len(members), dtype=bool)
    chosen: list[str] = []
    named_by = 0
    while len(chosen) < settings.max_terms:
        if chosen:
            last, taken = chosen[-1], _term_words(chosen[-1])
            for i in np.flatnonzero(open_terms):
                term = pool[i][0]
                open_terms[i] = not (
                    _term_words(term) & taken
                    or _one_phrase(term, [last], members, finder)
                    or (strict and not _fits(term, [last], members, finder))
                )
        gains = np.where(open_terms, (hits & ~covered).mean(axis=1) * lifts * similars * kinds, 0.0)
        if not len(gains) or gains.max() <= 0:
            break
        best = int(np.argmax(gains))
        chosen.append(pool[best][0])
        covered |= hits[best]
        if not named_by and len(chosen) >= 2 and covered.mean() >= settings.name_coverage:
            named_by = len(chosen)
    return TopicTerms(chosen, named_by or len(chosen))


def nameable(
    pool: Pool, members: np.ndarray, finder: TermFinder, settings: NamingSettings, *, strict: bool = True
) -> bool:
    """Whether a topic of ``members`` with candidate names ``pool`` (from :func:`topic_pools`) can
    be named honestly: its name's terms found in ``settings.coherent_coverage`` of its papers."""
    if not pool:
        return False
    named = _greedy_cover(pool, np.ones(len(pool)), members, finder, settings, strict=strict)
    return finder.coverage(members, named.terms[: named.named_by]) >= settings.coherent_coverage


def hangs_together(finder: TermFinder, parts: list[np.ndarray], pool: list[str], settings: NamingSettings) -> bool:
    """Whether the papers of ``parts`` (row numbers of each fine cluster) make one topic: two terms
    of ``pool`` with lift >= ``settings.min_lift`` among them, picked greedily, are found in
    ``coherent_coverage`` of all of them and in ``part_coverage`` of each part, and one of the two
    in ``part_coverage`` of every part: so that neither "spiking neural networks, graph
    representation learning" nor "forecasting, recommendation", one term a part, passes; the
    two terms belong together (:func:`_fits`: "planning, reasoning", rarely in one paper, do not)."""
    members = np.concatenate(parts)
    lifted = [term for term in pool if finder.lift(members, term) >= settings.min_lift]
    covered, chosen = np.zeros(len(finder), dtype=bool), list[str]()
    for _ in range(2):
        fitting = [term for term in lifted if term not in chosen and _fits(term, chosen, members, finder)]
        if not fitting:
            break
        chosen.append(max(fitting, key=lambda term: (finder.found(term)[members] & ~covered[members]).sum()))
        covered |= finder.found(chosen[-1])
    shared = any(all(finder.found(term)[part].mean() >= settings.part_coverage for part in parts) for term in chosen)
    return (
        shared
        and covered[members].mean() >= settings.coherent_coverage
        and all(covered[part].mean() >= settings.part_coverage for part in parts)
    )


def topic_pools(terms: CorpusTerms, labels: np.ndarray, settings: NamingSettings) -> dict[int, Pool]:
    """Each topic's candidate names (steps 1–3) with lift >= ``settings.min_lift``, and their lift;
    ``labels``: a topic per text of ``terms`` (-1: none)."""
    rng = np.random.default_rng(0)
    pools = {}
    for label, counts in _class_terms(terms, labels).items():
        members = np.flatnonzero(labels == label)
        read = rng.choice(members, min(settings.context_texts, len(members)), replace=False)
        joined = [terms.joined(i) for i in read]
        lifted = ((term, terms.finder.lift(members, term)) for term in _pool(counts, terms, joined, settings))
        pools[label] = [(term, lift) for term, lift in lifted if lift >= settings.min_lift]
    return pools


def topic_terms(
    terms: CorpusTerms,
    levels: dict[str, np.ndarray],
    vectors: np.ndarray,
    encode,
    settings: NamingSettings,
    *,
    pools=None,
) -> dict[str, dict[int, TopicTerms]]:
    """The terms naming each topic of the texts of ``terms``, best first, for each labelling in
    ``levels`` ({level: labels}; -1 is no topic): {level: {label: TopicTerms}}. Each term has lift
    >= ``settings.min_lift`` in its topic; the name's terms cover ``settings.name_coverage`` of its
    papers where 2–4 terms can.

    ``vectors`` are the texts' embeddings (the topic centroids come from them), ``encode(terms)``
    embeds candidate terms with the same model, once for all levels; ``pools`` ({level: pools})
    are :func:`topic_pools` already made."""
    given = pools or {}
    pools = {
        level: given[level] if level in given else topic_pools(terms, labels, settings)
        for level, labels in levels.items()
    }
    # Only the terms a name may hold are embedded (embedding is most of a remap's naming time).
    shown = {
        level: {label: [(t, lift) for t, lift in pool if shown_alone(t, terms)] for label, pool in by_label.items()}
        for level, by_label in pools.items()
    }
    everything = sorted({term for level in shown.values() for pool in level.values() for term, _ in pool})
    embedded = dict(zip(everything, encode(everything), strict=True)) if everything else {}
    named: dict[str, dict[int, TopicTerms]] = {level: {} for level in levels}
    for level, labels in levels.items():
        for label, pool in shown[level].items():
            members = np.flatnonzero(labels == label)
            if not pool:
                named[level][label] = TopicTerms([], 0)
                continue
            centroid = np.asarray(vectors[members], dtype=np.float32).mean(axis=0)
            similarity = np.stack([embedded[term] for term, _ in pool]) @ (
                centroid / max(np.linalg.norm(centroid), 1e-12)
            )
            named[level][label] = _covering(pool, similarity, members, terms.finder, settings)
    return named


def topic_names(
    terms: dict[int, TopicTerms], taken: AbstractSet[str] = frozenset(), shared: dict[int, str] | None = None
) -> dict[int, str]:
    """Distinct names: the terms a topic's name needs, joined by commas, one more where two names
    would clash (with each other or with a name in ``taken``); when every one clashes, the name in
    ``shared`` ({label: name}: a fine topic's coarse topic's, which that topic may share) if it is
    one of them and no other topic has it, else the topic's number as a last resort."""
    names: dict[int, str] = {}
    for label, (label_terms, named_by) in terms.items():
        options = [", ".join(label_terms[:size]) for size in range(named_by, len(label_terms) + 1)]
        options = [name for name in options if name] or [f"topic {label + 1}"]
        used = set(names.values()) | set(taken)
        fallback = (shared or {}).get(label)
        if fallback not in options or fallback in names.values():
            fallback = f"{options[-1]} ({label + 1})"
        names[label] = next((name for name in options if name not in used), fallback)
    return names


def part_names(terms: CorpusTerms, parts: list[np.ndarray], vectors: np.ndarray, encode, **options) -> list[TopicTerms]:
    """The terms naming each part of a topic a user splits (``parts``: each part's rows of the texts
    of ``terms``; ``vectors``: the texts' embeddings), by the method that names every topic
    (:func:`topic_terms`, :func:`topic_names`): each part's own terms against the corpus, the
    parts' names distinct from each other and from the names in ``options["taken"]``. A part
    that no term names, or that only a number would tell apart, gets ``TopicTerms([], 0)``: it
    keeps the whole topic's name with a suffix. ``options["settings"]``: the
    :class:`~paperscope.settings.NamingSettings` (default: the defaults)."""
    labels = np.full(len(terms.texts), UNCLUSTERED)
    for number, rows in enumerate(parts):
        labels[rows] = number
    named = topic_terms(terms, {"parts": labels}, vectors, encode, options.get("settings") or NamingSettings())["parts"]
    names = topic_names(named, set(options.get("taken", ())))
    found = []
    for number in range(len(parts)):
        chosen = named.get(number, TopicTerms([], 0))
        honest = {", ".join(chosen.terms[:size]) for size in range(chosen.named_by, len(chosen.terms) + 1)}
        name = names.get(number, "")
        found.append(chosen._replace(named_by=len(name.split(", "))) if name in honest else TopicTerms([], 0))
    return found
