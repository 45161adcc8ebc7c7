"""Which papers a topic's name speaks for: coverage of a name and lift of a term.

- A term is found in a paper when its title or abstract contains the term's words in order,
  any case, each word singular or plural, or (for "expansion (ACRONYM)") the acronym alone.
- Coverage of a name: the share of a topic's papers where at least one of its terms is found.
- Lift of a term: its share among the topic's papers over its share among all papers; a term with
  lift below 2 ("learning", "models") says nothing about the topic that it does not say of all
  (the least lift a name's term needs is ``NamingSettings.min_lift``).
"""

from __future__ import annotations

import re

import numpy as np

from paperscope.embed.terms import singular, words

_ACRONYM = re.compile(r"^(.*\S)\s+\(([^()]+)\)$")


def _normal(text: str, forms: dict[str, str] | None = None) -> str:
    """Lower-case singular words of ``text`` with hyphens split, joined by single spaces and
    padded with one, so that " words " finds whole words only; ``forms``: the singular of words
    seen before, added to (a corpus repeats its words: each is made singular once)."""
    forms = {} if forms is None else forms
    return f" {' '.join(forms[w] if w in forms else forms.setdefault(w, singular(w)) for w in words(text))} "


def term_forms(term: str) -> list[str]:
    """The normalised forms of a name's term that count as finding it: the term, and for
    "large language models (LLMs)" also the acronym "llm"."""
    found = _ACRONYM.match(term)
    parts = [found.group(1), found.group(2)] if found else [term]
    return [form for form in (_normal(part) for part in parts) if form.strip()]


class TermFinder:
    """Finds terms in a fixed list of texts: an inverted index of normalised words narrows each
    search to the texts holding all of a form's words before the phrase itself is looked for."""

    def __init__(self, texts: list[str]) -> None:
        """``texts``: one string per paper (its title and abstract)."""
        forms: dict[str, str] = {}
        self.texts = [_normal(text, forms) for text in texts]
        postings: dict[str, list[int]] = {}
        for row, text in enumerate(self.texts):
            for word in set(text.split()):
                postings.setdefault(word, []).append(row)
        self._postings = {word: np.array(rows, dtype=np.int64) for word, rows in postings.items()}
        self._found: dict[str, np.ndarray] = {}
        self._shares: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def found(self, term: str) -> np.ndarray:
        """A boolean per text: whether ``term`` (in any of its forms) is in it."""
        if term not in self._found:
            hit = np.zeros(len(self.texts), dtype=bool)
            for form in term_forms(term):
                rows = None
                for word in form.split():
                    posting = self._postings.get(word, np.empty(0, np.int64))
                    rows = posting if rows is None else np.intersect1d(rows, posting, assume_unique=True)
                if rows is not None:
                    hit[[row for row in rows.tolist() if form in self.texts[row]]] = True
            self._found[term] = hit
        return self._found[term]

    def share(self, term: str) -> float:
        """The share of the texts that hold ``term`` (kept: asked for the same terms again and again)."""
        if term not in self._shares:
            self._shares[term] = np.count_nonzero(self.found(term)) / len(self.texts) if self.texts else 0.0
        return self._shares[term]

    def coverage(self, members: np.ndarray, terms: list[str]) -> float:
        """Share of the papers ``members`` (row numbers) where at least one of ``terms`` is found."""
        if not len(members) or not terms:
            return 0.0
        return float(np.any([self.found(term)[members] for term in terms], axis=0).mean())

    def lift(self, members: np.ndarray, term: str) -> float:
        """The term's share among ``members`` over its share among all texts (0 when absent)."""
        hit = self.found(term)
        overall = hit.mean()
        return float(hit[members].mean() / overall) if overall else 0.0
