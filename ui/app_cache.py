"""The app's work done once per index generation and shared by every session (Streamlit's cached
resources): the loaded index, its map's points, its filters' choices. A module of its own, not the
script's: the server process fills these caches ahead (:func:`serve`), while Streamlit starts, so
that the first page finds the index loaded, and loads its query model too, so that the first search
does not wait for it; a page of another index loads that one's once it is drawn (:func:`warm_query_model`).

``paperscope app`` runs ``python -m paperscope.ui.launch APP STREAMLIT_OPTIONS -- APP_ARGUMENTS``, that is
:func:`serve`: ``streamlit run`` with the index of ``--index`` (or the bundled sample, when built) loaded ahead.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from paperscope import locations
from paperscope.errors import UserError

if TYPE_CHECKING:  # imported when first used: the server's start does not wait for them
    from paperscope.index.paper_index import FilterChoices, PaperIndex
    from paperscope.ui.map_component import MapPoints

MAP_TITLES_LIMIT = 200_000  # above this many papers the map's hover names the topic, not the title (1M titles: 95 MB)
_model_warmed: set[str] = set()  # the generations whose query model is loaded or loading
_model_lock = threading.Lock()


def generation_of(folder: str) -> str:
    """The cache key of the index at ``folder``: its generation, identity, topic curations and map
    (a change of any loads it anew)."""
    from paperscope.index.paper_index import current_generation_name, reload_stamp

    return f"{current_generation_name(Path(folder))}+{reload_stamp(folder)}"


@st.cache_resource(show_spinner=False, max_entries=8)
def load_index(folder: str, generation: str) -> PaperIndex:
    """Load an index once per process and generation (``generation_of``)."""
    from paperscope.index.paper_index import PaperIndex

    return PaperIndex.load(folder)


@st.cache_resource(show_spinner=False, max_entries=8)
def map_points(folder: str, generation: str) -> MapPoints:
    """The map's unchanging part (coordinates, titles, topic labels) once per index generation, as
    the map component sends it (serialised once)."""
    from paperscope.ui.map_component import map_points_of
    from paperscope.ui.mapplot import map_payload

    index = load_index(folder, generation)
    payload = map_payload(
        index.map.table(),  # only the columns drawn: all metadata held 530 MB more at 1M papers
        index.topics.table("fine"),
        index.topics.table("coarse"),
        key=f"{folder}@{generation}",
        with_titles=len(index) <= MAP_TITLES_LIMIT,
    )
    return map_points_of(payload)


@st.cache_resource(show_spinner=False, max_entries=8)
def filter_choices(folder: str, generation: str) -> FilterChoices:
    """What the sidebar's filters offer (``PaperIndex.filter_choices``), once per generation."""
    return load_index(folder, generation).filter_choices()


def warm_query_model(folder: str, generation: str) -> None:
    """Load the query model of the index ``folder`` in a background thread, once per generation
    (a page calls this once it is drawn: the model's load would slow the page)."""
    if _first_to_load(generation):
        threading.Thread(target=_embed_a_word, args=(folder, generation), daemon=True).start()


def _first_to_load(generation: str) -> bool:
    """Whether the caller is the first to load the query model of ``generation`` (then it must)."""
    with _model_lock:
        if generation in _model_warmed:
            return False
        _model_warmed.add(generation)
        return True


def _embed_a_word(folder: str, generation: str) -> None:
    try:
        load_index(folder, generation).embed_query("paper")
    except UserError as exc:  # no model here: a search says so, with this message, when asked
        logging.getLogger("paperscope").info("query model not loaded ahead: %s", exc)


def _warm(folder: str) -> None:
    """The index of ``folder``, its map's points, its filters' choices and its query model, into the
    caches, once the server listens (done during its start, this work would delay it: both want the one interpreter)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.runtime import RuntimeState

    while not Runtime.exists() or Runtime.instance().state == RuntimeState.INITIAL:
        time.sleep(0.02)
    # the page's modules, imported here while the browser loads Streamlit's scripts: its first run finds them
    # (the collections' code imports scipy.sparse, 0.3 s; Streamlit's emoji table checks the page icon, 0.2 s)
    import streamlit.emojis  # noqa: F401

    from paperscope.index import collections_group  # noqa: F401
    from paperscope.index.paper_index import sample_is_current
    from paperscope.ui import collections_view, columns_view, map_component, topics_view  # noqa: F401

    if folder == str(locations.default_index_dir()) and not sample_is_current(folder):
        return  # the page builds it, with a progress bar
    try:
        generation = generation_of(folder)
        map_points(folder, generation)
        filter_choices(folder, generation)
        if _first_to_load(generation):  # while the browser loads Streamlit's scripts, not while it draws the page
            _embed_a_word(folder, generation)
    except UserError as exc:  # the page shows it
        logging.getLogger("paperscope").info("index not loaded ahead: %s", exc)


def serve(argv: list[str]) -> None:
    """``streamlit run`` with ``argv`` (the script, Streamlit's options, ``--`` and the app's
    arguments), loading the app's first index (``--index``, else the sample when it is built) in a
    background thread meanwhile."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--index")
    app_arguments = argv[argv.index("--") + 1 :] if "--" in argv else []
    folder = parser.parse_known_args(app_arguments)[0].index or str(locations.default_index_dir())
    threading.Thread(target=_warm, args=(folder,), daemon=True).start()
    from streamlit.web.cli import main as streamlit

    sys.argv = ["streamlit", "run", *argv]
    streamlit(prog_name="streamlit")
