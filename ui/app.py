"""The paperscope dashboard: search, nearest papers with "why similar", the topic map, uploads.

Run with ``paperscope app [--index DIR]`` (or ``streamlit run ui/app_script.py -- --index DIR``).
Everything shown from the corpus is HTML-escaped; the view lives in the URL
(``?paper=ID``, ``?paper=ID1,ID2&not=ID3``, ``?q=text&k=10`` or ``?collection=NAME``;
``&mode=dense|keyword|hybrid``).
"""

from __future__ import annotations

import argparse
import hashlib
import html
import logging
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Unpack

import numpy as np
import streamlit as st

from paperscope import locations
from paperscope.embed.library import paper_link
from paperscope.embed.readers.sniff import detect_format
from paperscope.embed.terms import singular
from paperscope.embed.text import counted
from paperscope.errors import UserError
from paperscope.index.paper_index import PaperIndex, is_index, sample_is_current
from paperscope.limits import MAX_UPLOAD_MB
from paperscope.settings import LEVELS, MODES, UNCLUSTERED_NAME
from paperscope.ui.access import upload_build
from paperscope.ui.app_access import READ_ONLY_NOTE, audited, read_only, settings
from paperscope.ui.app_cache import (
    filter_choices,
    generation_of,
    imports_settled,
    load_index,
    map_points,
    warm_after_page,
)
from paperscope.ui.collections_view import (
    ShownCollection,
    add_popover,
    collection_focus,
    collection_header,
    collections_panel,
    dismiss_button,
    plain,
    recommended_reason,
)
from paperscope.ui.columns_view import (
    colour_select,
    column_colours,
    column_filter,
    column_values_html,
    filters_mask,
    paper_colours,
)
from paperscope.ui.loading import marked_title
from paperscope.ui.map_component import topic_map
from paperscope.ui.mapplot import MAX_STARRED, cluster_colours, map_focus
from paperscope.ui.session import Key, View
from paperscope.ui.sidebar_watch import watch_sidebar
from paperscope.ui.sources_view import get_papers_form
from paperscope.ui.topics_view import topics_panel
from paperscope.ui.watches_view import save_popover, watches_panel

if TYPE_CHECKING:  # the results; the first page (no results yet) imports no pandas (0.35 s of its server's work)
    import pandas as pd

PICKER_TITLES = 50  # titles offered in the picker for the words typed there
TITLE_EDGES = ".,;:!?\"'\u201c\u201d\u2018\u2019«»()[]"  # quotes and stops a typed title's words may carry
LASSO_LISTED = 25  # titles listed of a map selection; the CSV has them all
SHOWN_ID_CHARS = 16  # longer ids are shortened on result cards
GZIP_MAGIC = b"\x1f\x8b"
UPLOAD_TYPES = ("csv", "tsv", "json", "jsonl", "txt", "parquet", "bib", "ris", "gz")
PAGE_CSS = """<style>
.block-container {padding: 1rem 1rem 0.5rem 1rem;}
.st-key-results {max-height: calc(100vh - 330px); overflow-y: auto;}
.st-key-side {padding-top: 2.4rem;}
header[data-testid="stHeader"] {background: transparent; pointer-events: none;}
header[data-testid="stHeader"] button, header[data-testid="stHeader"] a {pointer-events: auto;}
.ps-result {margin: 0.1rem 0 0.2rem 0; line-height: 1.35;}
.ps-title {font-weight: 600;}
.ps-meta {color: #666; font-size: 0.85rem;}
.ps-dot {display: inline-block; width: 0.7rem; height: 0.7rem; border-radius: 50%; margin-right: 0.3rem;}
.ps-bar {display: inline-block; height: 0.5rem; background: #4c78a8; border-radius: 2px; vertical-align: middle;}
.ps-why {font-size: 0.88rem; margin: 0.3rem 0;}
.ps-why mark {background: #ffe58f; padding: 0 0.1rem;}
.ps-lasso {max-height: 11rem; overflow-y: auto; margin: 0.2rem 0 0.4rem 0; padding-left: 1.4rem; font-size: 0.85rem;}
.ps-pair {border-left: 3px solid #4c78a8; padding-left: 0.5rem; margin: 0.25rem 0;}
</style>"""


def _cli_index() -> str | None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--index")
    return parser.parse_known_args(sys.argv[1:])[0].index


@st.cache_data(show_spinner=False, max_entries=2000)
def explain_cached(folder: str, generation: str, paper_id: str, other_id: str | None, query: str | None) -> dict:
    """Why-similar evidence for one result, cached across reruns."""
    return load_index(folder, generation).explain(paper_id, other_id=other_id, query=query).to_dict()


def index_choices(cli_index: str | None) -> dict[str, str]:
    """Label → folder of every index the app can open: --index, the sample, uploaded ones."""
    choices = {}
    if cli_index:
        choices[Path(cli_index).name] = str(cli_index)
    choices["NeurIPS 2025 sample (bundled)"] = str(locations.default_index_dir())
    if locations.indexes_dir().is_dir():
        for folder in sorted(locations.indexes_dir().iterdir()):
            if is_index(folder) and str(folder) not in choices.values():
                choices[folder.name] = str(folder)
    return choices


class _PageLog(logging.Handler):
    """Shows the ``paperscope`` logger's lines in the page while a build runs (not its progress
    lines: the page has a bar)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not hasattr(record, "progress"):
            st.write(record.getMessage())


def build_with_progress(build, label: str) -> None:
    """Run ``build(on_progress)`` inside the page, with a progress bar and the build's log lines."""
    logger = logging.getLogger("paperscope")
    handler = _PageLog()
    with st.status(f"Building {label}…", expanded=True) as status:
        bar = st.progress(0.0, text="reading")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            build(lambda fraction, stage: bar.progress(min(fraction, 1.0), text=stage))
        except UserError:
            status.update(label=f"Could not build {label}", state="error", expanded=False)
            raise
        finally:
            logger.removeHandler(handler)
        status.update(label=f"Built {label}", state="complete", expanded=False)


def highlight(text: str, terms: list[str]) -> str:
    """Escape ``text`` for HTML and mark the shared terms in it."""
    escaped = html.escape(text)
    if not terms:
        return escaped
    pattern = re.compile(
        r"\b(" + "|".join(_any_number(html.escape(t)) for t in sorted(terms, key=len, reverse=True)) + r")\b",
        re.IGNORECASE,
    )
    return pattern.sub(r"<mark>\1</mark>", escaped)


def _any_number(term: str) -> str:
    """A regex for ``term`` in the singular or plural, as shared terms are matched
    (``paperscope.embed.terms.singular``): "benchmark" also marks "benchmarks"."""
    stem = singular(term)
    if stem.endswith("y"):
        return re.escape(stem[:-1]) + "(?:y|ies)"
    return re.escape(stem) + "(?:s|es)?"


def _why_html(why: dict, query_label: str) -> str:
    terms = why["shared_terms"]
    parts = [
        f"<div class='ps-why'><b>Shared terms:</b> "
        f"{', '.join(f'<mark>{html.escape(t)}</mark>' for t in terms) or '<i>none distinctive</i>'}</div>"
    ]
    for pair in why["sentence_pairs"]:
        parts.append(
            f"<div class='ps-why ps-pair'>{highlight(pair['a'], terms)}<br><span class='ps-meta'>"
            f"↔ {html.escape(query_label)} (sentence similarity {pair['similarity']:.2f}):</span> "
            f"{highlight(pair['b'], terms)}</div>"
        )
    return "".join(parts)


def _result_header(row, colour: str, values: str = "", reason: str = "") -> str:
    """A result card's first lines: rank, title, its score as a bar (the one scale of every lookup), topic, id, and the
    paper's link (an http(s) one only) to open in a new tab; ``values``: a line of the columns
    filtered or coloured by (HTML, escaped by ``column_values_html``); ``reason``: why it is
    recommended (HTML, escaped by ``collections_view.reason_html``)."""
    value = float(row.score)
    width = max(0.0, min(value, 1.0)) * 90
    link = paper_link([getattr(row, "url", None)])
    opened = f' · <a href="{html.escape(link)}" target="_blank" rel="noopener noreferrer">open ↗</a>' if link else ""
    title = marked_title(row.title, getattr(row, "status", None))
    return (
        f"<div class='ps-result'><span class='ps-title'>{row.rank}. {html.escape(title)}</span><br>"
        f"<span class='ps-bar' style='width:{width:.0f}px'></span> <b>{value:.3f}</b> "
        f"<span class='ps-meta'><span class='ps-dot' style='background:{colour}'></span>"
        f"{html.escape(_topic_path(row))} · <span title='{html.escape(str(row.id), quote=True)}'>"
        f"{html.escape(short_id(str(row.id)))}</span>{opened}</span>"
        f"{f'<br><span class=ps-meta>{values}</span>' if values else ''}{reason}</div>"
    )


def short_id(paper_id: str) -> str:
    """An id short enough for a result card ("3f2a…9c1d" for a 40-character hash); the full id is
    on hover and in the exports."""
    return paper_id if len(paper_id) <= SHOWN_ID_CHARS else f"{paper_id[:8]}…{paper_id[-4:]}"


def _topic_path(row) -> str:
    """A result's topics, coarse then fine ("graph learning › graph neural networks (GNNs)"),
    "(outlying member)" after a paper the clustering left out and drawn in its nearest topic."""
    path = str(row.cluster_name)
    if row.cluster_name != UNCLUSTERED_NAME and row.coarse_name != row.cluster_name:
        path = f"{row.coarse_name} › {row.cluster_name}"
    return path + (" (outlying member)" if getattr(row, "outlying", False) else "")


def _sidebar(
    index: PaperIndex, source: tuple[str, str], choices: dict[str, str], current_label: str
) -> tuple[str, int, dict, str, bool]:
    """The sidebar: the index shown, and once the sidebar has been opened in this session
    (``ui/sidebar_watch``), the settings and filters. Returns the index label chosen, k, the filters
    (``PaperIndex.where``'s arguments), the ranking mode and whether to explain."""
    sidebar = st.sidebar
    label = sidebar.selectbox("Index", list(choices), index=list(choices).index(current_label))
    manifest = index.manifest
    sidebar.caption(
        f"{manifest.count:,} papers · {manifest.model.name.split('/')[-1]} · "
        f"built {manifest.created[:10]} · map trust {manifest.map.trust:.0%}"
    )
    most = max(2, min(50, len(index) - 1))  # a slider needs two values; search clamps to the corpus anyway
    state = st.session_state
    state[Key.K] = min(state.get(Key.K, 10), most)
    state.setdefault(Key.TOPIC_LEVEL, LEVELS[0])
    state.setdefault(Key.EXPLAIN, True)
    if not state.get(Key.SIDEBAR_OPENED):  # its settings as they are until then (the URL's k and ranking)
        with sidebar:
            watch_sidebar(on_opened=lambda: state.update({Key.SIDEBAR_OPENED: True}))
        unfiltered = {"topics": None, "level": state[Key.TOPIC_LEVEL]}
        return label, state[Key.K], unfiltered, state[Key.MODE], state[Key.EXPLAIN]
    offered = filter_choices(*source)
    k = sidebar.slider("Results (k)", 1, most, key=Key.K)
    level = sidebar.radio("Topic level", LEVELS, horizontal=True, key=Key.TOPIC_LEVEL,
                          help="coarse: merged clusters, a few per field; fine: the clusters themselves")  # fmt: skip
    colour_select(index)
    # The arguments of PaperIndex.where: only those a user narrowed (None: no filter)
    topics = offered["fine"] if level == "fine" else offered["coarse"]
    filters: dict[str, Any] = {"topics": sidebar.multiselect("Topics", topics) or None, "level": level}
    if offered["years"] and offered["years"][0] < offered["years"][1]:
        low, high = offered["years"]
        years = sidebar.slider("Years", low, high, (low, high))
        filters["years"] = years if years != (low, high) else None
    if len(offered["venues"]) > 1:
        filters["venues"] = sidebar.multiselect("Venues", offered["venues"]) or None
    if offered["categories"]:
        filters["category"] = sidebar.text_input("Category contains", "").strip() or None
    filters |= column_filter(index, source)  # the corpus's own columns: conditions of PaperIndex.where
    modes = list(MODES)
    mode = sidebar.radio(
        "Ranking",
        modes,
        horizontal=True,
        key=Key.MODE,
        help="hybrid: 70% meaning (MiniLM) + 30% exact words (TF-IDF), measured best; "
        "papers using every acronym of a query come first",
    )
    explain = sidebar.toggle("Explain why similar", key=Key.EXPLAIN)
    # Their widgets drawn only while open (every rerun sends what is drawn, closed or not)
    if (corpus := sidebar.expander("Add a corpus", key="add-corpus", on_change="rerun")).open:
        with corpus:
            _upload_form()
    if not read_only() and (get := sidebar.expander("Get papers", key="get-papers-panel", on_change="rerun")).open:
        with get:  # "Add a corpus" says why a read-only app has nothing to add
            if built := get_papers_form(build_with_progress):
                _switch(index_label=built, **_view())
    return label, k, filters, mode, explain


def _upload_form() -> None:
    """A corpus uploaded and built into an index of the data folder, then opened: at most
    MAX_UPLOAD_MB, one build at a time and ``--uploads-per-hour`` an hour per server, audited;
    none in a read-only app."""
    if read_only():
        st.caption(READ_ONLY_NOTE)
        return
    upload = st.file_uploader(
        f"CSV, TSV, JSONL, JSON, TXT, Parquet, BibTeX or RIS (optionally .gz), up to {MAX_UPLOAD_MB} MB",
        type=list(UPLOAD_TYPES),
    )
    if upload is None or st.session_state.get(Key.BUILT_UPLOAD) == upload.file_id:
        return
    data = upload.getvalue()
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        st.error(f"{upload.name}: {len(data) / 1024 / 1024:.0f} MB is over the {MAX_UPLOAD_MB} MB limit")
        return
    suffixes = "".join(Path(upload.name.lower()).suffixes[-2:])
    suffix = next(
        (s for s in (".csv", ".tsv", ".jsonl", ".json", ".txt", ".parquet", ".bib", ".ris") if suffixes.startswith(s)),
        "",
    )
    try:
        fmt = detect_format(Path(f"upload{suffix}"), data[:64])
    except UserError as exc:  # a .docx, a PDF…: said with the uploaded file's name
        st.error(str(exc).replace(f"upload{suffix}:", f"{upload.name}:", 1))
        return
    # The uploaded name never becomes a path: only a cleaned stem for the index name, plus a hash.
    stem = re.sub(r"[^a-z0-9]+", "-", Path(upload.name).name.lower().split(".")[0]).strip("-")[:40] or "upload"
    name = f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}"
    with tempfile.TemporaryDirectory() as folder:
        compressed = ".gz" if data[:2] == GZIP_MAGIC else ""
        saved = Path(folder) / f"corpus.{'txt' if fmt == 'text' else fmt}{compressed}"
        saved.write_bytes(data)
        try:
            from paperscope.index.build.pipeline import build_index  # build code: only when a user builds

            def build() -> None:
                with upload_build(settings().uploads_per_hour):  # a UserError when another builds, or past the hour's
                    build_with_progress(
                        lambda progress: build_index([saved], locations.indexes_dir() / name, on_progress=progress),
                        name,
                    )

            audited(f"upload {upload.name}", locations.indexes_dir() / name, build)
        except UserError as exc:
            st.error(str(exc).replace(str(saved), upload.name))
            return
    st.session_state[Key.BUILT_UPLOAD] = upload.file_id
    _switch(index_label=name, **_view())


def _read_url_state(index: PaperIndex) -> None:
    """First run of a session: take paper, not, q, k and mode from the URL."""
    if st.session_state.get(Key.URL_READ):
        return
    st.session_state[Key.URL_READ] = True
    params = st.query_params
    st.session_state[Key.K] = max(1, min(50, int(params["k"]))) if params.get("k", "").isdigit() else 10
    for key, param in ((Key.PAPERS, "paper"), (Key.NOT_PAPERS, "not")):
        given = [paper_id for paper_id in params.get(param, "").split(",") if paper_id.strip()]
        st.session_state[key] = index.known(given)
        if len(st.session_state[key]) < len(given):
            try:
                index.rows(given)  # raises the message naming the unknown id and close ones
            except UserError as exc:
                st.error(f"The link's {param}= names a paper this index does not have: {exc}")
    asked_mode = params.get("mode")
    st.session_state[Key.MODE] = asked_mode if asked_mode in MODES else index.manifest.search.search_mode
    if not st.session_state[Key.PAPERS] and params.get("q"):
        st.session_state[Key.QUERY] = params["q"][:20_000]
    if not st.session_state[Key.PAPERS] and not params.get("q") and params.get("collection"):
        st.session_state[Key.COLLECTION] = params["collection"]  # checked against the index's by the panel


def _on_query_change() -> None:
    if st.session_state.get(Key.QUERY):
        st.session_state[Key.PAPERS], st.session_state[Key.NOT_PAPERS], st.session_state[Key.LIKE_SET] = [], [], []
        st.session_state[Key.COLLECTION] = None


class TitleMatches(NamedTuple):
    """The papers whose titles hold each word of a text (:func:`titled`)."""

    ids: list[str]  # up to the limit asked, one whose title is the text first, then in row order
    total: int  # how many titles hold the words
    equal: bool  # whether the first one's title is the text itself (case and spacing aside)


def titled(index: PaperIndex, text: str, limit: int) -> TitleMatches:
    """The papers of ``index`` whose titles hold each word of ``text``, in any case and anywhere
    ("graph neur" finds "Graph Neural Networks"; a word's quotes and stops at its ends aside, as a
    title copied from a reference list has them), with Arrow over the title column (50,000 papers:
    5–70 ms): up to ``limit`` ids, one whose title is ``text`` itself first."""
    import pyarrow.compute as pc

    words = [word.strip(TITLE_EDGES) for word in text.split() if word.strip(TITLE_EDGES)]
    if not words:
        return TitleMatches([], 0, False)
    titles = index.table(columns=["title"]).column("title")
    holds = pc.match_substring(titles, words[0], ignore_case=True)
    for word in words[1:]:
        holds = pc.and_(holds, pc.match_substring(titles, word, ignore_case=True))
    holds = pc.fill_null(holds, False)
    rows = np.flatnonzero(holds.to_numpy())
    spaced = pc.replace_substring_regex(pc.filter(titles, holds), r"\s+", " ")
    bare = pc.utf8_lower(pc.utf8_trim(spaced, characters=TITLE_EDGES + " "))
    equal = np.flatnonzero(pc.equal(bare, " ".join(text.split()).strip(TITLE_EDGES + " ").lower()).to_numpy())
    chosen = list(dict.fromkeys([*rows[equal[:1]].tolist(), *rows[:limit].tolist()]))[:limit]
    ids = index.table(np.array(chosen, dtype=np.int64), ["id"]).column("id").to_pylist() if chosen else []
    return TitleMatches(ids, len(rows), len(equal) > 0)


def _on_paper_change(index: PaperIndex) -> None:
    """Papers picked: they replace a text query, a set liked and a collection. Words typed in the
    picker and entered pick the paper whose title they are, or the only one whose title holds them
    all (:func:`titled`); several such titles are offered in the picker (the first
    :data:`PICKER_TITLES`), none is said."""
    state = st.session_state
    picked, state[Key.TITLE_MATCHES] = [], []
    for value in state.get(Key.PAPERS) or []:
        found = titled(index, value, PICKER_TITLES) if not index.known([value]) else None
        if found is None or found.equal or found.total == 1:
            picked.append(found.ids[0] if found else value)
        elif found.total:
            state[Key.TITLE_MATCHES] = found.ids
            first = f"; the first {len(found.ids)} are listed" if found.total > len(found.ids) else ""
            state[Key.PICKER_NOTE] = (
                f"{counted(found.total, 'title')} hold “{plain(value)}”: pick one in the list{first}"
            )
        else:
            state[Key.PICKER_NOTE] = f"No title holds “{plain(value)}”; Search by text finds papers about it"
    state[Key.PAPERS] = list(dict.fromkeys(picked))
    if picked:
        state[Key.QUERY], state[Key.LIKE_SET], state[Key.COLLECTION] = "", [], None


def _view(**shown: Unpack[View]) -> View:
    """The session state of what the results answer: nothing but ``shown`` (papers picked and
    avoided, a text query, a set liked, a lasso, a collection)."""
    return View(papers=[], not_papers=[], query="", like_set=[], lasso=[], collection=None) | shown


def _switch(**state) -> None:
    """Change widget values (allowed only before the widgets exist): on the next run."""
    st.session_state[Key.PENDING] = state
    st.rerun()


def titles_of(index: PaperIndex, ids: list[str]) -> dict[str, str]:
    """Paper id → title of the papers ``ids`` (all in the index), read from its table."""
    rows = index.rows(ids) if ids else np.empty(0, np.int64)
    return dict(zip(ids, index.table(rows, ["title"]).column("title").to_pylist(), strict=True))


def _take_map_events(index: PaperIndex) -> None:
    """Before any widget exists: a click on a point selects that paper; a lasso or box keeps its
    papers as the map selection. The map's events of this run are in its session state."""
    events = st.session_state.get(Key.MAP) or {}
    if events.get("lasso") is not None:
        st.session_state[Key.LASSO] = index.table(events["lasso"], ["id"]).column("id").to_pylist()
    if events.get("click") is not None:
        clicked = index.table([events["click"]], ["id"]).column("id")[0].as_py()
        st.session_state.update(_view(papers=[clicked]))


def _lasso_panel(index: PaperIndex, column: str) -> None:
    """The papers selected on the map: listed, exportable, usable at once as "more like these"."""
    ids = st.session_state.get(Key.LASSO) or []
    if not ids:
        return
    chosen = index.table(index.rows(ids), ["id", "title", column]).to_pandas().rename(columns={column: "topic"})
    st.html(f"<div class='ps-meta'><b>{len(ids):,} papers selected on the map</b></div>")
    like, clear, download, add = st.columns([6, 4, 6, 2])
    if like.button("More like these", key="more_like_lasso", type="primary"):
        _switch(**_view(like_set=ids))
    if clear.button("Clear", key="clear_lasso"):
        _switch(lasso=[])
    download.download_button(
        "Selection as CSV",
        lambda: chosen.to_csv(index=False),
        "paperscope-selection.csv",
        "text/csv",
        on_click="ignore",
    )
    with add:
        add_popover(index, ids, "add-lasso", help="Add the papers selected on the map to a collection")
    items = "".join(
        f"<li>{html.escape(str(row.title))} <span class='ps-meta'>· {html.escape(str(row.topic))}</span></li>"
        for row in chosen.head(LASSO_LISTED).itertuples()
    )
    more = (
        f"<div class='ps-meta'>… and {len(chosen) - LASSO_LISTED:,} more in the CSV</div>"
        if len(chosen) > LASSO_LISTED
        else ""
    )
    st.html(f"<ol class='ps-lasso'>{items}</ol>{more}")


def _picker(index: PaperIndex) -> None:
    """The box "…or pick papers": the papers in view offered (those picked and avoided, the results, the
    titles found for the words typed last), and any title typed and entered (:func:`_on_paper_change`).
    Every title was offered up to 5,000 papers: 2,690 titles sent on every rerun made each action of
    the app 0.05–0.1 s slower (IJCAI, side by side)."""
    state = st.session_state
    in_view = [Key.PAPERS, Key.NOT_PAPERS, Key.TITLE_MATCHES, Key.SHOWN]
    ids = index.known(list(dict.fromkeys(paper_id for key in in_view for paper_id in state.get(key) or [])))
    st.multiselect(
        "…or pick papers (several: more like these)",
        ids,
        key=Key.PAPERS,
        on_change=_on_paper_change,
        args=(index,),
        format_func=titles_of(index, ids).__getitem__,
        accept_new_options=True,
        select_all=False,  # "Select all" of the results in view is not a paper a user means
        placeholder="a result, or type a title and press Enter",
    )
    if note := state.pop(Key.PICKER_NOTE, ""):  # Markdown, its typed words escaped
        st.caption(note)


def _results_list(
    source: tuple[str, str],
    results: pd.DataFrame,
    level: str,
    explain_with: dict | None,
    columns: tuple[str | None, ...] = (),
    colour: dict | None = None,
    *,
    recommended: ShownCollection | None = None,
) -> None:
    """Result cards (dots in the colour of their topic at ``level``, a bar for their ``score``
    column) with exports; ``explain_with`` (other_id or query) fills in why each is similar, from
    the index of ``source`` (folder, generation), when its card is opened (explaining ten results
    costs ~0.6 s a page; ten people at once, 6 s), beside its abstract and a button adding it to a
    collection; ``columns``: the corpus's columns whose values each card shows (those filtered or
    coloured by); ``colour``: the map's colours by a column (``column_colours``), the dots' colours
    then; ``recommended``: the collection whose recommendations these are (each card says why, with
    "Not interested"). A card is three elements a rerun, what a browser spends most of an action's
    time drawing (a card of eight took a search 0.1 s more)."""
    index = load_index(*source)
    exports = st.container(horizontal=True, gap="small")
    # Written when clicked, not on every run; a download changes nothing: no rerun
    exports.download_button(
        "Results as CSV",
        lambda: results.drop(columns=["abstract"]).assign(score=results["score"].round(4)).to_csv(index=False),
        "paperscope-results.csv",
        "text/csv",
        on_click="ignore",
    )
    exports.download_button(
        "Results as JSON",
        lambda: results.to_json(orient="records", force_ascii=False, indent=1),
        "paperscope-results.json",
        "application/json",
        on_click="ignore",
    )
    if results.empty:  # every empty answer carries its note: why (the filter no paper matches, and what there is)
        st.info(plain(results.attrs["note"][:1].upper() + results.attrs["note"][1:]) + ".")
    colours = (
        paper_colours(colour, index.rows(results["id"].tolist()))
        if colour
        else cluster_colours(results["coarse_cluster" if level == "coarse" else "cluster"])
    )
    with st.container(key="results"):
        values = column_values_html(results, list(columns))
        row: Any  # a result's named tuple: its columns as attributes
        for row, dot, shown_values in zip(results.itertuples(), colours, values, strict=True):
            reason = recommended_reason(row, recommended) if recommended else ""
            st.html(_result_header(row, dot, shown_values, reason))
            if recommended:
                dismiss_button(index, recommended, row)
            _card(source, row.id, row.abstract, explain_with)


@st.fragment
def _card(source: tuple[str, str], paper_id: str, abstract: str, explain_with: dict | None) -> None:
    """A result's abstract, once opened, with why it is similar (``explain_with``: see
    ``_results_list``) and a button adding it to a collection: a fragment, so that opening a card
    reruns that card alone, and explains only it."""
    card = st.expander(
        "Abstract and why similar" if explain_with else "Abstract", key=f"why-{paper_id}", on_change="rerun"
    )
    with card:
        if not card.open:
            return
        if explain_with:
            why = explain_cached(*source, paper_id, explain_with["other_id"], explain_with["query"])
            st.html(_why_html(why, "your query" if explain_with["query"] else "selected paper"))
        st.html(f"<div class='ps-why'>{html.escape(abstract)}</div>")
        add_popover(load_index(*source), [paper_id], f"add-card-{paper_id}", "Add to a collection")


def _open_index(choices: dict[str, str]) -> tuple[str, str, str, PaperIndex]:
    """The index this session shows (the first choice unless one was picked): its label, folder,
    generation and the index, loaded once per generation. The sample is built on first use; an
    index that does not load stops the page with its error."""
    label = st.session_state.get(Key.INDEX_LABEL)
    if label not in choices:
        label = next(iter(choices))
    folder = choices[label]
    if folder == str(locations.default_index_dir()) and not sample_is_current(folder):
        from paperscope.index.build.pipeline import sample_index  # build code: only when the sample is built

        build_with_progress(sample_index, "the NeurIPS 2025 sample index (first run)")
    try:
        generation = generation_of(folder)
        return label, folder, generation, load_index(folder, generation)
    except UserError as exc:
        st.error(str(exc))
        st.stop()


def _look_up(
    index: PaperIndex, side, filters: dict, k: int, mode: str, *, chosen: list[str], avoided: list[str], collection
):
    """The results (None when nothing is asked) and the query's map position (None unless a text
    query), among the papers passing ``filters``: most like the ``chosen`` ids and least like the
    ``avoided`` ones, else like the text query, else the recommendations for the ``collection``
    shown (its name); the URL follows what was asked. A user error shows in ``side``."""
    query = st.session_state.get(Key.QUERY, "").strip()
    results, query_xy = None, None
    try:
        within = filters_mask(index, filters)
        if collection and not chosen and not query:
            st.query_params.from_dict({"collection": collection, "k": str(k)})
            results = index.collections.recommend(collection, k=k, within=within).to_pandas()
        elif chosen:
            results = index.similar(chosen, k=k, mode=mode, negative=avoided, within=within).to_pandas()
            if st.session_state.get(Key.PAPERS):
                url = {"paper": ",".join(chosen), "k": str(k), "mode": mode}
                st.query_params.from_dict(url | ({"not": ",".join(avoided)} if avoided else {}))
        elif query:
            results = index.search(query, k=k, mode=mode, within=within).to_pandas()
            query_xy = index.map.position(index.embed_query(query))
            st.query_params.from_dict({"q": query, "k": str(k), "mode": mode})
        else:
            st.query_params.clear()
    except UserError as exc:
        with side:
            st.error(str(exc))
    return results, query_xy


def _asked(index: PaperIndex, results, chosen: list[str], avoided: list[str]) -> None:
    """What the results answer: the papers picked (and avoided), a set chosen, or a prompt."""
    if results is None:
        st.info("Type a query or pick a paper — or click a point on the map.")
    elif st.session_state.get(Key.PAPERS):
        titles = titles_of(index, [*chosen, *avoided])
        names = " + ".join(f"<b>{html.escape(titles[i])}</b>" for i in chosen)
        unlike = f", least like {' + '.join(html.escape(titles[i]) for i in avoided)}" if avoided else ""
        asked, add = st.columns([12, 1], vertical_alignment="center", gap="small")
        asked.html(f"<div class='ps-meta ps-selected'>Most similar to {names}{unlike}</div>")
        with add:
            help = "Add the selected paper to a collection" if len(chosen) == 1 else "Add these papers to a collection"
            add_popover(index, chosen, "add-selected", help=help)
    elif chosen:
        count = f"<b>{len(chosen):,} papers</b>"
        st.html(f"<div class='ps-meta ps-selected'>Most similar to the {count} you selected</div>")


def _map_panel(source: tuple[str, str], focus: dict, level: str, topics: list[str]) -> None:
    """The map of the index of ``source`` (folder, generation), its caption, and the topics panel."""
    topic_map(map_points(*source), focus)
    st.caption(
        "Scroll to zoom, drag to pan, click a point to select that paper; Lasso or Box (or shift-drag) selects "
        "a set. Coarse topics are named when zoomed out, fine ones as you zoom in; grey points belong to no "
        "topic. Map trust: the share of a paper's 10 nearest neighbours that are also near it on the map."
    )
    _topics(source, level, topics)


@st.fragment
def _topics(source: tuple[str, str], level: str, topics: list[str]) -> None:
    """The topics panel, on demand (at a million papers it costs 2 s a run, and its table and chart weigh on every
    page); a fragment: opening it, or asking it something, reruns it alone (a correction of the topics, the page)."""
    panel = st.expander("Topics: overview, by year or column, between two topics", key="topics", on_change="rerun")
    with panel:
        if panel.open:
            topics_panel(load_index(*source), level, topics)


def main() -> None:
    """Render the dashboard: the map on the left, taking most of the page; search and results beside it."""
    st.set_page_config(page_title="paperscope", page_icon="🔭", layout="wide", initial_sidebar_state="collapsed")
    imports_settled()
    st.session_state.update(st.session_state.pop(Key.PENDING, {}))
    st.html(PAGE_CSS)
    choices = index_choices(_cli_index())
    label, folder, generation, index = _open_index(choices)
    _read_url_state(index)
    _take_map_events(index)
    chosen_label, k, filters, mode, explain = _sidebar(index, (folder, generation), choices, label)
    if chosen_label != label:
        _switch(index_label=chosen_label, **_view())

    map_column, side_column = st.columns([17, 8], gap="small")
    side = side_column.container(key="side")
    with side:
        st.html(
            f"<div style='font-size:1.35rem;font-weight:700'>paperscope "
            f"<span class='ps-meta' style='font-weight:400'>{html.escape(label)}</span></div>"
        )
        st.text_input(
            "Search by text",
            key=Key.QUERY,
            on_change=_on_query_change,
            placeholder="e.g. making diffusion transformers faster",
        )
        picker_slot = st.container()  # "…or pick papers", once the results it offers are known
        save_popover(index)
        unlike_slot = st.container()  # "…and less like these", once the results are known: above the collections
        recommended_slot = st.container()  # a collection's recommendations: above the collections' table
        shown = collections_panel(index)
        watches_panel(index)
    chosen = st.session_state.get(Key.PAPERS) or st.session_state.get(Key.LIKE_SET) or []
    avoided = [i for i in st.session_state.get(Key.NOT_PAPERS) or [] if i not in chosen] if chosen else []
    shown = shown if not chosen and not st.session_state.get(Key.QUERY, "").strip() else None
    results, query_xy = _look_up(index, side, filters, k, mode, chosen=chosen, avoided=avoided,
                                 collection=shown and shown["name"])  # fmt: skip

    st.session_state[Key.SHOWN] = results["id"].tolist() if results is not None else []
    with picker_slot:
        _picker(index)
    if st.session_state.get(Key.PAPERS):
        with unlike_slot:  # picked among the results (and those already picked): each rerun sends its titles
            unlike = [*avoided, *(i for i in st.session_state[Key.SHOWN] if i not in avoided)]
            titles = titles_of(index, unlike)
            st.multiselect("…and less like these", unlike, key=Key.NOT_PAPERS, format_func=titles.__getitem__,
                           placeholder="optional: pick among the results")  # fmt: skip
    level = st.session_state[Key.TOPIC_LEVEL]
    lasso_rows = index.rows(st.session_state.get(Key.LASSO) or []).tolist()
    focus = map_focus(
        level,
        selected_rows=index.rows(chosen if len(chosen) <= MAX_STARRED else []).tolist(),
        neighbour_rows=index.rows(results["id"].tolist()).tolist() if results is not None else [],
        chosen_rows=lasso_rows or (index.rows(chosen).tolist() if len(chosen) > MAX_STARRED else []),
        query_xy=query_xy,
    )
    if shown:  # its members as diamonds, its recommendations numbered (a map selection's papers ringed)
        focus = collection_focus(index, shown, results, level, lasso_rows)
    colour_by = st.session_state.get(Key.COLOUR_BY)
    colour_by = colour_by if colour_by in index.columns() else None
    focus["colour"] = column_colours(index, (folder, generation), colour_by) if colour_by else {}
    with recommended_slot if shown else side:  # before the map: at a million papers its points take seconds to send
        _lasso_panel(index, "coarse_name" if level == "coarse" else "cluster_name")
        if shown:
            collection_header(index, shown)
        else:
            _asked(index, results, chosen, avoided)
        if results is not None:
            query = None if chosen else st.session_state.get(Key.QUERY, "").strip()
            explain_with = {"other_id": chosen[0] if chosen else None, "query": query}
            columns = (st.session_state.get(Key.FILTER_COLUMN), colour_by)  # their values shown on each card
            _results_list((folder, generation), results, level, explain_with if explain and not shown else None,
                          columns, focus["colour"], recommended=shown)  # fmt: skip
    with map_column:
        _map_panel((folder, generation), focus, level, filters["topics"] or [])
    warm_after_page(folder, generation)  # once the page is drawn: the first search need not load pandas or the model
