"""Names for the parts of a topic a user splits (``ix.topics.split``), made when the split is
recorded (:func:`paperscope.index.curation.rules.record`): each part is named by its own papers'
terms against the corpus's, as a build names every topic
(:func:`paperscope.index.topics.naming.part_names`). The candidate terms and the candidate names'
vectors the build (or a remap) kept beside the index are read when there; nothing is written.
Imported only when a split is made: a load of a curated index reads the names the log kept and
runs none of this (nor the topic code it imports)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from paperscope.embed.text import embedding_texts
from paperscope.index.curation.operations import Split
from paperscope.index.store import maps
from paperscope.index.topics.naming import part_names
from paperscope.index.topics.remap_cache import TERMS, VECTORS, NameVectors, cached_terms

NAMING_SAMPLE = 10_000  # without kept terms, a split's parts are named on at most this many papers (seed 0)


def name_parts(index, split: Split, taken: set[str]) -> Split:
    """``split`` with the names and terms of its parts (``split.parts``: paper ids of ``index``, a
    :class:`~paperscope.index.paper_index.PaperIndex`), distinct from each other and from the
    names in ``taken``, read on the papers whose candidate terms the build kept (else on up to
    ``NAMING_SAMPLE`` of the index's papers): a name, or None for a part only "(part i)" tells
    apart, and the terms of each part."""
    read = functools.partial(maps.read_cache, index.folder, index.generation)
    kept = read(TERMS)
    count = len(index)
    rows = np.asarray(kept["rows"]) if "rows" in kept else np.arange(count)
    if "rows" not in kept and count > NAMING_SAMPLE:
        rows = np.sort(np.random.default_rng(0).choice(count, NAMING_SAMPLE, replace=False))
    texts = embedding_texts(index.table(rows, columns=["title", "abstract", "title_derived"]).to_pydict())
    settings = index.manifest.settings.topics.names
    terms = cached_terms(texts, rows, settings.max_words, (lambda kind: kept, None))
    inside = [np.flatnonzero(np.isin(rows, index.rows(list(ids)))) for ids in split.parts or ()]
    vectors = np.asarray(index.vectors[rows], dtype=np.float32)
    encode = NameVectors.from_arrays(index.embed_texts, read(VECTORS))
    named = part_names(terms, inside, vectors, encode, taken=taken, settings=settings)
    names = tuple(", ".join(part.terms[: part.named_by]) or None for part in named)
    return dataclasses.replace(split, names=names, terms=tuple(tuple(part.terms) for part in named))
