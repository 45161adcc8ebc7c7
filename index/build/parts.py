"""Names for the parts of a topic a user splits (``ix.topics.split``), made when the split is
recorded: each part is named by its own papers' terms against the corpus's, as a build names every
topic (:func:`paperscope.index.topics.naming.part_names`). Imported only when a split is made: a
load of a curated index reads the names the log kept and runs none of this."""

from __future__ import annotations

import numpy as np

from paperscope.embed.corpus import embedding_texts
from paperscope.index.topics.naming import corpus_terms, part_names

NAMING_SAMPLE = 10_000  # a split's parts are named on at most this many papers of the index (seed 0)


def name_parts(index, parts: list[list[str]], taken: set[str]) -> dict:
    """The names and terms of a split's ``parts`` (each a list of paper ids of ``index``, a
    :class:`~paperscope.index.paper_index.PaperIndex`), distinct from each other and from the
    names in ``taken``, read on up to ``NAMING_SAMPLE`` of the index's papers:
    {"names": [name, or None for a part only "(part i)" tells apart], "terms": [terms per part]}."""
    count = len(index)
    rows = np.arange(count)
    if count > NAMING_SAMPLE:
        rows = np.sort(np.random.default_rng(0).choice(count, NAMING_SAMPLE, replace=False))
    texts = embedding_texts(index.table(rows, columns=["title", "abstract", "title_derived"]).to_pydict())
    settings = index.manifest.settings.topics.names
    terms = corpus_terms(texts, settings.max_words)
    inside = [np.flatnonzero(np.isin(rows, index.rows(ids))) for ids in parts]
    vectors = np.asarray(index.vectors[rows], dtype=np.float32)
    named = part_names(terms, inside, vectors, index.embed_texts, taken=taken, settings=settings)
    return {"names": [", ".join(part.terms[: part.named_by]) or None for part in named],
            "terms": [part.terms for part in named]}  # fmt: skip
