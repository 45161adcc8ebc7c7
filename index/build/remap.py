"""A remap: another map of an index's current generation, written beside it and made current.

``PaperIndex.map.remap`` (and ``paperscope remap``) call :func:`remap`: the topics are re-cut and
re-named from the stored vectors and layout (:func:`paperscope.index.topics.remap.remap_topics`),
nothing embedded again but candidate names (kept for the next remap), and written as a named map
(:func:`paperscope.index.store.maps.write_map`). Imported only when a remap runs: a lookup
loads none of it.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np

from paperscope.embed.corpus import embedding_texts
from paperscope.errors import UserError
from paperscope.index.store import generations, maps
from paperscope.index.topics.remap import Remapping, remap_topics

log = logging.getLogger("paperscope")
BUILT_COLUMNS = ["x", "y", "map_trust", "placed", "outlying", "cluster"]


def _encoder(folder: Path, generation: str, encode):
    """``encode`` remembering the vectors of terms it embedded, in the maps folder, per generation."""
    stored = maps.read_cache(folder, generation, "term-vectors")
    known = dict(zip(stored.get("terms", np.array([])).tolist(), stored.get("vectors", []), strict=False))
    before = len(known)

    def cached(terms: list[str]) -> np.ndarray:
        missing = [term for term in dict.fromkeys(terms) if term not in known]
        if missing:
            known.update(zip(missing, np.asarray(encode(missing), dtype=np.float32), strict=True))
        return np.stack([known[term] for term in terms]) if terms else np.empty((0, 0), np.float32)

    def keep() -> None:
        if len(known) > before:
            terms = sorted(known)
            arrays = {"terms": np.array(terms, dtype=str), "vectors": np.stack([known[term] for term in terms])}
            maps.write_cache(folder, generation, "term-vectors", arrays)

    return cached, keep


def remap(
    folder: str | Path, encode, topics: int, min_topic_size: int | None = None, *, name=None, on_stage=None
) -> str:
    """Make another map of the index in ``folder`` with ``topics`` coarse topics (and fine clusters
    of at least ``min_topic_size`` papers found again: :class:`~paperscope.index.topics.remap.Remapping`)
    and make it current, named ``name``
    (default: "topics-N", with "-min-M" for a minimum topic size). ``encode(terms)`` embeds
    candidate names with the index's model. ``on_stage(name)`` is called as "map and clusters",
    "write" and "commit" start (the last once the map's files are complete, before it is made
    current). Returns the map's name; a UserError for a bad number or name."""
    folder, asked = Path(folder), Remapping(topics, min_topic_size)
    name = maps.check_name(
        name or f"topics-{asked.topics}" + (f"-min-{asked.min_topic_size}" if asked.min_topic_size else "")
    )
    if name == maps.BUILD:
        raise UserError(f"'{maps.BUILD}' is the build's own map; give the remap another --name")
    generation = generations.read_generation(folder)
    papers = generation.papers
    built = papers.select(BUILT_COLUMNS).to_pandas()

    def texts_of(rows: np.ndarray) -> list[str]:
        return embedding_texts(papers.take(rows).select(["title", "abstract", "title_derived"]).to_pydict())

    stage = on_stage or (lambda _: None)
    stage("map and clusters")
    cached, keep = _encoder(folder, generation.name, encode)
    ids = papers.column("id").to_pylist()
    cache = (
        functools.partial(maps.read_cache, folder, generation.name),
        functools.partial(maps.write_cache, folder, generation.name),
    )
    made = remap_topics(
        generation.vectors,
        texts_of,
        ids,
        built,
        cached,
        asked=asked,
        settings=generation.manifest.settings.topics,
        cache=cache,
    )
    keep()
    stage("write")
    with maps.locked(folder):
        maps.write_map(folder, name, generation.name, made, on_stage=stage)
    log.info("map '%s': %d topics, %d clusters, made current", name, made.sections["topics"], made.sections["clusters"])
    return name
