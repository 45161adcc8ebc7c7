"""Papers that use every acronym of a text query ("GRPO", "DiT", "T2I"; plural "s" allowed): they
go first in keyword and hybrid rankings.

The keyword index narrows the candidates to papers with the word (a hyphenated one, which the
keyword index splits, "Hotelling-Downs" or "DiT-XL": with each of its words; a stop word, which it
does not keep, narrows nothing); the exact, case-sensitive check runs on those alone (on all papers
only for an acronym none of whose words the vocabulary holds). The keyword index does not read
links: an acronym written only inside one (a repository's name in its URL) is missed when its
words are indexed from other papers' text, as a one-word acronym's always was (IJCAI: 44 of 5,718
acronym-like words, each one paper's link). Checking every paper with a link or $math$ as well
(16 % of them) made a search at 50,000 papers 26 -> 63 ms, 0.5 s the first: not done.
"""

from __future__ import annotations

import re

import numpy as np

from paperscope.embed.acronyms import ACRONYM_WORD
from paperscope.embed.terms import words
from paperscope.index.common.papers import PaperTable


def acronym_rows(text: str, papers: PaperTable, keyword) -> np.ndarray:
    """Rows of the papers whose title or abstract uses every acronym of ``text`` as a whole word
    (``keyword``: the index's keyword index, which narrows the candidates)."""
    import pyarrow.compute as pc  # here: a lookup by id never needs it (0.05 s)

    if not ACRONYM_WORD.search(text):
        return np.zeros(0, dtype=np.int64)
    found = np.arange(len(papers))
    for acronym in ACRONYM_WORD.findall(text):
        if acronym.endswith("s") and acronym[-2].isupper():
            acronym = acronym[:-1]  # "LLMs" also finds "LLM"
        rows = found
        for forms in _word_forms(acronym):  # a paper using it uses each of its words (or their plural, for the last)
            if any(form in keyword.stop_words for form in forms):
                continue  # not indexed: which papers use it is not known
            candidates = [r for r in map(keyword.rows_with_term, forms) if r is not None]
            if candidates:  # a word outside the vocabulary narrows nothing
                rows = np.intersect1d(rows, np.concatenate(candidates))
        # the acronym as a whole word, matched by Arrow (RE2, no look-arounds) over the texts
        pattern = rf"(?:^|[^\w-]){re.escape(acronym)}s?(?:$|[^\w-])"
        texts = papers.take(rows, ["title", "abstract"])
        uses = pc.or_(*(pc.match_substring_regex(texts.column(name), pattern) for name in ("title", "abstract")))
        found = np.asarray(rows, dtype=np.int64)[uses.fill_null(False).to_numpy(zero_copy_only=False)]
    return found


def _word_forms(acronym: str) -> list[tuple[str, ...]]:
    """The keyword index's forms of each word of ``acronym`` ("DiT" -> dit or dits; "Hotelling-Downs" ->
    hotelling, then downs or downss): the acronym may take a plural "s", so its last word too."""
    *leading, last = words(acronym) or [acronym.lower()]
    return [(word,) for word in leading] + [(last, last + "s")]
