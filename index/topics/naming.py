"""Topic names a researcher would give: whole phrases, acronyms with their expansion, no residue.

1. Candidates: phrases of one to four adjacent words (:mod:`paperscope.embed.terms`), with no
   stop word, adverb, number or citation residue ("et al", "e.g"), not made of scientific
   boilerplate alone ("real world", "neural networks"), scored per topic by class-based TF-IDF
   (BERTopic's c-TF-IDF; a term counts once per paper, so one abstract repeating a word cannot
   name its topic).
2. Whole phrases: a phrase inside a longer candidate that most of its papers also use gives way
   to the longer one ("series forecasting" becomes "multivariate time series forecasting"), and
   a phrase that the abstracts mostly continue with another word is a fragment ("solve complex"
   in "solve complex reasoning tasks"), dropped.
3. Acronyms are joined to the expansion the abstracts define ("large language models (LLMs)");
   single words are kept only when the topic has too few phrases.
4. The best candidates by c-TF-IDF are reranked by the similarity of their MiniLM embedding to
   the topic's centroid (BERTopic's KeyBERT-inspired representation, with our own model) and
   diversified by maximal marginal relevance; no term shares a word with another of its name.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import scipy.sparse

from paperscope.embed.acronyms import DEFINITION, long_form
from paperscope.embed.terms import BOILERPLATE, english_stop_words, phrases, singular, words

UNCLUSTERED = -1
MAX_WORDS = 4  # longest candidate phrase
CANDIDATES = 20  # best c-TF-IDF phrases (and as many single words) of a topic that the embedding reranks
SCANNED = 2000  # c-TF-IDF terms of a topic read to find them
WHOLE_PHRASE_SHARE = 0.7  # a phrase gives way to a longer one used by this share of its papers
CONTINUED_SHARE = 0.5  # a phrase followed by another word more often than this is a fragment
CONTEXT_TEXTS = 200  # member texts read to find fragments
DIVERSITY = 0.3  # maximal marginal relevance: 0 ranks by relevance alone
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
# Generic heads: "federated learning framework" names no more than "federated learning".
GENERIC_HEADS = {
    "method", "framework", "task", "approach", "technique", "strategy", "mechanism", "scheme", "module",
    "pipeline", "paradigm", "setting", "problem", "system", "solution", "algorithm", "dataset", "benchmark",
}  # fmt: skip
_CLAUSE_END = re.compile(r"[,;:!?()\[\]]|\.(?=\s|$)")


def _singular(term: str) -> str:
    return " ".join(singular(word) for word in term.split())


def candidates(text: str, stop_words: frozenset[str]) -> list[str]:
    """The candidate terms of one text (see the module docstring, step 1), their last word in the
    singular, so that "graph" and "graphs" count as one term."""

    def is_stop(word: str) -> bool:
        return word in stop_words or word in RESIDUE or word.endswith("ly") or not word[0].isalpha()

    segments = _CLAUSE_END.split(text)  # a phrase never runs over a comma or a full stop
    found = (
        term.split()
        for segment in segments
        for term in phrases(words(segment, compounds=True), range(1, MAX_WORDS + 1), is_stop)
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


def acronyms(texts: list[str], stop_words: frozenset[str]) -> dict[str, str]:
    """Acronyms the texts define, as a map from a candidate term (the acronym in lower case, and
    the expansion when it holds no stop word) to its display form "expansion (ACRONYM)".
    An acronym that the texts also write in lower case as a word ("AIM" and "aim") keeps only
    its expansion's key."""
    seen: Counter = Counter()
    lower_words: Counter = Counter()
    for text in texts:
        lower_words.update(re.findall(r"\b[a-z][a-z0-9]*\b", text))
        for before, acronym in DEFINITION.findall(text):
            expansion = long_form(acronym, before, stop_words)
            if expansion and sum(c.isupper() for c in acronym) >= 2:
                seen[(acronym, expansion.lower())] += 1
    shown: dict[str, str] = {}
    for (acronym, expanded), _ in seen.most_common():  # the commonest expansion of an acronym wins
        display = f"{expanded} ({acronym})"
        keys = [] if lower_words[acronym.lower()] or lower_words[acronym.lower().rstrip("s")] else [acronym.lower()]
        expansion = candidates(expanded, stop_words)
        if expansion and len(expansion[-1].split()) == len(words(expanded, compounds=True)):
            keys.append(expansion[-1])  # every word of the expansion is in its candidate form
        for key in keys:
            shown.setdefault(singular(key), display)
    return shown


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


def _surface(term: str, texts: list[str]) -> str:
    """The term as the texts (joined word lists) mostly write it: its last word plural or not."""
    plural = term + "s"
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


def _whole(term: str, counts: dict[str, int], containers: dict[str, list[str]]) -> str:
    """The longest phrase containing ``term`` that most of ``term``'s papers use (step 2)."""
    while True:
        longer = [other for other in containers.get(term, []) if counts[other] >= WHOLE_PHRASE_SHARE * counts[term]]
        if not longer:
            return term
        term = max(longer, key=lambda other: (counts[other], len(other), other))


def _class_terms(texts: list[str], labels: np.ndarray, stop_words: frozenset[str]):
    """Per topic, its candidate terms with their c-TF-IDF scores and paper counts."""
    from sklearn.feature_extraction.text import CountVectorizer

    topics = sorted(set(labels.tolist()) - {UNCLUSTERED})
    vectorizer = CountVectorizer(analyzer=lambda text: candidates(text, stop_words), binary=True)
    try:
        presence = vectorizer.fit_transform(texts)  # paper x term, 1 where the paper uses the term
    except ValueError:  # not one term (say, no Latin letters): the topics get numbered names
        return {label: ({}, {}) for label in topics}
    vocabulary = vectorizer.get_feature_names_out()
    classes = len(topics) + 1  # the last one: unclustered papers
    class_of_paper = np.where(labels == UNCLUSTERED, len(topics), np.searchsorted(topics, labels))
    membership = scipy.sparse.csr_matrix(
        (np.ones(len(labels)), (class_of_paper, np.arange(len(labels)))), shape=(classes, len(labels))
    )
    # Sparse (class x term): a dense one is classes x vocabulary, gigabytes for 50,000 abstracts.
    counts = (membership @ presence).tocsr()
    idf = np.log(1 + counts.sum() / classes / np.maximum(np.asarray(counts.sum(axis=0)).ravel(), 1))
    term_weight = idf * np.array([1.0 + 0.5 * term.count(" ") for term in vocabulary])  # phrases count more
    sizes = np.bincount(class_of_paper, minlength=classes)
    found = {}
    for row, label in enumerate(topics):
        columns = counts.indices[counts.indptr[row] : counts.indptr[row + 1]]
        in_papers = counts.data[counts.indptr[row] : counts.indptr[row + 1]]
        shared = in_papers >= min(2, sizes[row])  # used by a single paper of the topic: not its topic
        columns, in_papers = columns[shared], in_papers[shared]
        scores = in_papers / max(in_papers.sum(), 1) * term_weight[columns]
        terms = vocabulary[columns].tolist()
        found[label] = (
            dict(zip(terms, scores.tolist(), strict=True)),
            dict(zip(terms, in_papers.tolist(), strict=True)),
        )
    return found


def _continued(term: str, texts: list[str], stop_words: frozenset[str]) -> bool:
    """Whether the texts (joined word lists) mostly follow the phrase ``term`` with another content word."""
    if " " not in term:
        return False  # single words are the fallback; a modifier is fine there
    pattern = re.compile(rf" {re.escape(term)}s? (\S+)?")
    after = [match.group(1) for text in texts for match in pattern.finditer(text)]
    followed = sum(1 for word in after if word and word not in stop_words and word[0].isalpha())
    return bool(after) and followed > CONTINUED_SHARE * len(after)


def _shortlist(
    scores: dict[str, float], counts: dict[str, int], shown: dict[str, str], texts: list[str], stop_words
) -> list[str]:
    """Steps 2 and 3: the topic's best candidates as whole phrases in display form, best first.
    ``texts``: some of the topic's texts as joined word lists, to tell fragments and plurals."""
    picked: dict[bool, dict[str, float]] = {True: {}, False: {}}  # phrases, single words
    containers = _containers(counts)
    for term in sorted(scores, key=lambda t: (-scores[t], t))[:SCANNED]:
        whole = _whole(term, counts, containers)
        if _continued(whole, texts, stop_words):
            continue
        display = _display(whole, shown) if whole in shown or any(w in shown for w in whole.split()) else None
        display = display or _surface(whole, texts)
        kind = picked[" " in display]
        if display in kind or len(kind) < CANDIDATES:
            kind[display] = max(kind.get(display, 0.0), scores[term])
        if all(len(kind) == CANDIDATES for kind in picked.values()):
            break
    return [term for kind in (True, False) for term in sorted(picked[kind], key=lambda t: (-picked[kind][t], t))]


def _diverse(shortlist: list[str], similarity: np.ndarray, between: np.ndarray, n_terms: int) -> list[str]:
    """Step 4: maximal marginal relevance over the reranked shortlist, no two terms sharing a word."""
    chosen: list[int] = []
    left = list(range(len(shortlist)))
    while left and len(chosen) < n_terms:
        redundancy = between[np.ix_(left, chosen)].max(axis=1) if chosen else np.zeros(len(left))
        best = left[int(np.argmax((1 - DIVERSITY) * similarity[left] - DIVERSITY * redundancy))]
        left.remove(best)
        best_words = set(_singular(" ".join(words(shortlist[best]))).split())
        if not any(best_words & set(_singular(" ".join(words(shortlist[i]))).split()) for i in chosen):
            chosen.append(best)
    return [shortlist[i] for i in chosen]


def topic_terms(texts: list[str], levels: dict[str, np.ndarray], vectors: np.ndarray, encode, n_terms: int = 4):
    """The 2–4 terms naming each topic of ``texts``, best first, for each labelling in ``levels``
    ({level: labels}; -1 is no topic): {level: {label: terms}}.

    ``vectors`` are the texts' embeddings (the topic centroids come from them) and ``encode(terms)``
    embeds candidate terms with the same model, once for all levels."""
    stop_words = english_stop_words()
    shown = acronyms(texts, stop_words)
    shortlists = {level: {} for level in levels}
    for level, labels in levels.items():
        rng = np.random.default_rng(0)
        for label, (scores, counts) in _class_terms(texts, labels, stop_words).items():
            members = np.flatnonzero(labels == label)
            read = rng.choice(members, min(CONTEXT_TEXTS, len(members)), replace=False)
            joined = [f" {' '.join(words(texts[i]))} " for i in read]
            shortlists[level][label] = _shortlist(scores, counts, shown, joined, stop_words)
    everything = sorted({term for level in shortlists.values() for shortlist in level.values() for term in shortlist})
    embedded = dict(zip(everything, encode(everything), strict=True)) if everything else {}
    terms = {level: {} for level in levels}
    for level, labels in levels.items():
        for label, shortlist in shortlists[level].items():
            if not shortlist:
                terms[level][label] = []
                continue
            centroid = np.asarray(vectors[labels == label], dtype=np.float32).mean(axis=0)
            term_vectors = np.stack([embedded[term] for term in shortlist])
            similarity = term_vectors @ (centroid / max(np.linalg.norm(centroid), 1e-12))
            similarity -= np.array([" " not in term for term in shortlist])  # a single word only after every phrase
            terms[level][label] = _diverse(shortlist, similarity, term_vectors @ term_vectors.T, n_terms)
    return terms


def topic_names(terms: dict[int, list[str]], taken: set[str] = frozenset()) -> dict[int, str]:
    """Distinct names of 2–4 terms each: the first two terms, more where two names would clash
    (with each other or with a name in ``taken``)."""
    names: dict[int, str] = {}
    for label, label_terms in terms.items():
        options = [", ".join(label_terms[:size]) for size in range(min(2, len(label_terms)), len(label_terms) + 1)]
        options = [name for name in options if name] or [f"topic {label + 1}"]
        used = set(names.values()) | set(taken)
        names[label] = next((name for name in options if name not in used), f"{options[-1]} ({label + 1})")
    return names
