"""Papers that use every acronym of a text query ("GRPO", "DiT", "T2I"; plural "s" allowed): they
go first in keyword and hybrid rankings.

The keyword index narrows the candidates to papers with the word; the exact, case-sensitive check
runs on those alone (on all papers only for an acronym the vocabulary lacks).
"""

from __future__ import annotations

import re

import numpy as np

from paperscope.embed.acronyms import ACRONYM_WORD
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
        candidates = [keyword.rows_with_term(form.lower()) for form in (acronym, acronym + "s")]
        if all(rows is None for rows in candidates):
            rows = found
        else:
            rows = np.intersect1d(found, np.concatenate([r for r in candidates if r is not None]))
        # the acronym as a whole word, matched by Arrow (RE2, no look-arounds) over the texts
        pattern = rf"(?:^|[^\w-]){re.escape(acronym)}s?(?:$|[^\w-])"
        texts = papers.take(rows, ["title", "abstract"])
        uses = pc.or_(*(pc.match_substring_regex(texts.column(name), pattern) for name in ("title", "abstract")))
        found = np.asarray(rows, dtype=np.int64)[uses.fill_null(False).to_numpy(zero_copy_only=False)]
    return found
