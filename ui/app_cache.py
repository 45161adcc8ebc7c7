"""The app's work done once per index generation and shared by every session (Streamlit's cached
resources): the loaded index, its map's points, its filters' choices. A module of its own, not the
script's: the server process fills these caches ahead (:func:`serve`), while Streamlit starts, so
that the first page finds the index loaded; once a page is drawn, what the first results need is
loaded in the background: pandas, its index's query model and scipy (:func:`warm_after_page`).

``paperscope app`` runs ``python -m paperscope.ui.launch APP STREAMLIT_OPTIONS -- APP_ARGUMENTS``, that is
:func:`serve`: ``streamlit run`` with the index of ``--index`` (or the bundled sample, when built) loaded ahead.
"""

from __future__ import annotations

import argparse
import gc
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
MODULES = "modules"  # what _warmed names pandas and scipy by (a generation's name has a "+")
_warmed: set[str] = set()  # loaded or loading: the modules, and the generations whose query model is
_warmed_lock = threading.Lock()
_importing = threading.Lock()  # held while pandas and scipy are imported after a page


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
    payload = map_payload(  # numpy arrays, not DataFrames: the first page imports no pandas (0.35 s of its work)
        index.map.points(),  # the columns drawn: all metadata held 530 MB more at 1M papers
        index.topics.labels("fine"),
        index.topics.labels("coarse"),
        key=f"{folder}@{generation}",
        with_titles=len(index) <= MAP_TITLES_LIMIT,
    )
    return map_points_of(payload)


@st.cache_resource(show_spinner=False, max_entries=8)
def filter_choices(folder: str, generation: str) -> FilterChoices:
    """What the sidebar's filters offer (``PaperIndex.filter_choices``), once per generation."""
    return load_index(folder, generation).filter_choices()


def warm_after_page(folder: str, generation: str) -> None:
    """Load what the first results need in background threads, once the page is drawn (loaded
    before, it would slow the page): pandas (their table, 0.35 s) and scipy (a collection's
    recommendations, 0.2 s), once per process, and the query model of the index ``folder``, once per
    generation, side by side (one after the other, they held up a search made at once: 50,000 papers,
    the first search 0.42 s, 0.29 s side by side)."""
    if _first_to_load(MODULES):
        _importing.acquire()  # released by the thread once both are imported; a run waits for it (imports_settled)
        threading.Thread(target=_import_modules, name="paperscope-after-page", daemon=True).start()
    if _first_to_load(generation):
        threading.Thread(
            target=_embed_a_word, args=(folder, generation), name="paperscope-after-page", daemon=True
        ).start()


def _first_to_load(what: str) -> bool:
    """Whether the caller is the first to load ``what`` (the modules, or a generation's query model): then it must."""
    with _warmed_lock:
        if what in _warmed:
            return False
        _warmed.add(what)
        return True


def _import_modules() -> None:
    """pandas, then scipy: what results and recommendations need, and the first page does not.
    Then every object there is set aside from the garbage collector's passes (``gc.freeze``): Streamlit
    collects after each run, and a full pass over the modules and the index took 0.12 s of each run at
    50,000 papers, holding the interpreter while the run's last messages waited to be sent. (Not
    collected first: that pass too would hold the first page; what garbage there is stays, once.)"""
    try:
        import pandas  # noqa: F401
        import scipy.sparse  # noqa: F401
    finally:
        _importing.release()
    gc.freeze()


def imports_settled() -> None:
    """Wait while pandas and scipy are imported after a page (:func:`warm_after_page`): each run starts
    with this, as another thread's first use of pandas meanwhile (Arrow's conversions import it
    too) can fail or hang (pandas imported by two threads at once: ARROW-4637, ARROW-10519)."""
    with _importing:
        pass


def _embed_a_word(folder: str, generation: str) -> None:
    """The query model of the index ``folder`` loaded, by embedding a word."""
    try:
        load_index(folder, generation).embed_query("paper")
    except UserError as exc:  # no model here: a search says so, with this message, when asked
        logging.getLogger("paperscope").info("query model not loaded ahead: %s", exc)


def _warm(folder: str) -> None:
    """The index of ``folder``, its map's points and its filters' choices, into the caches, once the
    server listens (done during its start, this work would delay it: both want the one interpreter).
    Not its query model: loaded meanwhile, it slowed the first page (:func:`warm_after_page`)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.runtime import RuntimeState

    while not Runtime.exists() or Runtime.instance().state == RuntimeState.INITIAL:
        time.sleep(0.02)
    # the page's modules, imported here while the browser loads Streamlit's scripts: its first run finds them
    # (Streamlit's emoji table checks the page icon, 0.05 s); none imports pandas or scipy (the first results do)
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
    except UserError as exc:  # the page shows it
        logging.getLogger("paperscope").info("index not loaded ahead: %s", exc)


def _no_installed_components() -> None:
    """Streamlit's start without its scan of every installed distribution for components declared in
    a pyproject.toml: it reads each one's metadata (0.3 s of the server's start with 216 installed,
    before it listens); the app's components are its own, declared in code (``map_component``,
    ``sidebar_watch``)."""
    from streamlit.components.v2.component_manager import BidiComponentManager

    # replaced in this server process alone, which runs nothing but the app (streamlit==1.67.0, pinned)
    BidiComponentManager.discover_and_register_components = lambda manager, **options: None  # type: ignore[method-assign]


def serve(argv: list[str]) -> None:
    """``streamlit run`` with ``argv`` (the script, Streamlit's options, ``--`` and the app's
    arguments), loading the app's first index (``--index``, else the sample when it is built) in a
    background thread meanwhile."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--index")
    app_arguments = argv[argv.index("--") + 1 :] if "--" in argv else []
    folder = parser.parse_known_args(app_arguments)[0].index or str(locations.default_index_dir())
    threading.Thread(target=_warm, args=(folder,), daemon=True).start()
    _no_installed_components()
    from streamlit.web.cli import main as streamlit

    sys.argv = ["streamlit", "run", *argv]
    streamlit(prog_name="streamlit")
