"""A remap: another map of an index's current generation, written beside it and made current.

``PaperIndex.map.remap`` (and ``paperscope remap``) call :func:`remap`: the topics are re-cut and
re-named from the stored vectors and layout (:func:`paperscope.index.topics.recut.remap_topics`),
nothing embedded again but candidate names (those the build or a remap before did not embed:
:mod:`paperscope.index.topics.remap_cache`, kept for the next remap), and written as a named map
(:func:`paperscope.index.store.maps.write_map`). Imported only when a remap runs: a lookup
loads none of it.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import numpy as np

from paperscope.embed.text import embedding_texts
from paperscope.errors import UserError
from paperscope.index.store import generations, maps
from paperscope.index.topics.recut import Remapping, remap_topics
from paperscope.index.topics.remap_cache import VECTORS, NameVectors

log = logging.getLogger("paperscope")
BUILT_COLUMNS = ["x", "y", "map_trust", "placed", "outlying", "cluster"]


def remap(
    folder: str | Path, encode, topics: int, min_topic_size: int | None = None, *, name=None, on_stage=None
) -> str:
    """Make another map of the index in ``folder`` with ``topics`` coarse topics (and fine clusters
    of at least ``min_topic_size`` papers found again: :class:`~paperscope.index.topics.recut.Remapping`)
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
    generation_name = generation.name
    assert generation_name is not None  # read_generation names the generation it read
    papers = generation.papers
    built = papers.select(BUILT_COLUMNS).to_pandas()

    def texts_of(rows: np.ndarray) -> list[str]:
        return embedding_texts(papers.take(rows).select(["title", "abstract", "title_derived"]).to_pydict())

    stage = on_stage or (lambda _: None)
    stage("map and clusters")
    names = NameVectors.from_arrays(encode, maps.read_cache(folder, generation_name, VECTORS))
    ids = papers.column("id").to_pylist()
    cache = (
        functools.partial(maps.read_cache, folder, generation_name),
        functools.partial(maps.write_cache, folder, generation_name),
    )
    made = remap_topics(
        generation.vectors,
        texts_of,
        ids,
        built,
        names,
        asked=asked,
        settings=generation.manifest.settings.topics,
        cache=cache,
    )
    log.info("candidate names: %d embedded, %d kept from before", names.embedded, names.before)
    if (arrays := names.arrays()) is not None:
        maps.write_cache(folder, generation_name, VECTORS, arrays)
    stage("write")
    with maps.locked(folder):
        maps.write_map(folder, name, generation_name, made, on_stage=stage)
    log.info("map '%s': %d topics, %d clusters, made current", name, made.sections["topics"], made.sections["clusters"])
    return name
