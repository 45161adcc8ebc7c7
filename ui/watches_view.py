"""The dashboard's saved searches: "Save this search" beside the search box (the text query, or
the papers picked: a search by those papers) and the Saved searches panel under the collections
(each with its new matches and why, marked shown or removed).

It only draws what ``PaperIndex.collections.watches`` keeps and ``collections.matches`` finds; the
matches are worked out only while the panel is open (they embed each text query once: the query
encoder keeps the last few). Names, queries and titles are HTML-escaped wherever they are drawn.
"""

from __future__ import annotations

import html

import streamlit as st

from paperscope.errors import UserError
from paperscope.limits import WATCH_THRESHOLD
from paperscope.ui.app_access import audited, read_only
from paperscope.ui.collections_view import PANEL_CSS, plain, reason_html
from paperscope.ui.session import Key

NOTE = "watch_note"  # session state: what the last save, mark or removal said, shown on the next run
SAVE = "save-search"  # the popover's key, and its widgets' prefix
MATCHES_SHOWN = 5  # new matches listed per saved search


def _save(index, query: str) -> None:
    """Save ``query`` with the name and threshold typed in the popover (a callback)."""
    name = (st.session_state.get(f"{SAVE}-name") or "").strip() or None
    threshold = st.session_state.get(f"{SAVE}-threshold", WATCH_THRESHOLD)
    try:
        watch = audited(f"save search {name or query[:40]}", index.folder,
                        lambda: index.collections.watches.add(query, name=name, threshold=threshold))  # fmt: skip
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state[NOTE] = ("saved", f"Saved the search “{watch['name']}”: its new matches are listed below")


def save_popover(index) -> None:
    """A "Save this search" popover for the text query, or the papers picked (a search by those
    papers), when there is one: a name (default: the query's first words) and the similarity a
    match has at least. None in a read-only app."""
    picked = st.session_state.get(Key.PAPERS) or []
    query = " ".join(picked) if picked else (st.session_state.get(Key.QUERY) or "").strip()
    if read_only() or not query:
        return
    what = "these papers" if len(picked) > 1 else "this paper" if picked else "this search"
    popover = st.popover(
        f"Save {what}", icon=":material/notifications:", key=SAVE, on_change="rerun",
        help="Keep it: the digest and the Saved searches panel list the new papers that match it",
    )  # fmt: skip
    with popover:
        if not popover.open:
            return
        st.text_input("Name", key=f"{SAVE}-name", placeholder="default: the query's first words")
        st.number_input(
            "Matches from (similarity)", min_value=-0.99, max_value=1.0, value=WATCH_THRESHOLD, step=0.02,
            key=f"{SAVE}-threshold", help="a paper matches when its cosine with the query is at least this",
        )  # fmt: skip
        st.button("Save", key=f"{SAVE}-go", type="primary", on_click=_save, args=(index, query))


def _change(index, action: str, name: str) -> None:
    """Mark the new matches of ``name`` shown, or remove it (a callback)."""
    watches = index.collections.watches
    try:
        if action == "mark":
            audited(f"mark saved search {name} shown", index.folder, lambda: watches.mark_shown([name]))
            st.session_state[NOTE] = ("done", f"Marked the matches of “{name}” shown")
        else:
            audited(f"remove saved search {name}", index.folder, lambda: watches.remove(name))
            st.session_state[NOTE] = ("done", f"Removed the saved search “{name}”")
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))


def _show_note() -> None:
    kind, text = st.session_state.pop(NOTE, (None, ""))
    if kind == "error":
        st.error(plain(text))
    elif kind:
        st.toast(plain(text), icon=":material/notifications:")


def _watch(index, watch: dict) -> None:
    """One saved search: its name, query and threshold, its new matches with why, its buttons."""
    found = index.collections.matches(watch["name"], k=MATCHES_SHOWN).to_records()
    name = html.escape(watch["name"])
    query = html.escape(watch["query"] if watch["kind"] == "text" else f"papers {watch['query']}")
    st.html(f"<div class='ps-collection'><b>{name}</b>: “{query}”, from {watch['threshold']:.2f}: "
            f"{len(found)}{'+' * (len(found) == MATCHES_SHOWN)} new</div>")  # fmt: skip
    for row in found:
        st.html(
            f"<div class='ps-collection'>{row['rank']}. {html.escape(str(row['title']))} "
            f"<span class='ps-meta'>({html.escape(row['id'])}, {row['score']:.2f})</span></div>"
            + reason_html(row["because"], {})
        )
    if not read_only():
        mark, remove, _ = st.columns([3, 3, 4], gap="small")
        mark.button("Mark shown", key=f"watch-mark-{watch['name']}", type="tertiary", on_click=_change,
                    args=(index, "mark", watch["name"]), disabled=not found)  # fmt: skip
        remove.button("Remove", key=f"watch-remove-{watch['name']}", type="tertiary", on_click=_change,
                      args=(index, "remove", watch["name"]))  # fmt: skip


def watches_panel(index) -> None:
    """The Saved searches panel: its count always, each saved search's new matches (since it was
    last marked shown) only while it is open."""
    _show_note()
    try:
        listing = index.collections.watches.listing_records()
    except UserError as exc:  # a damaged or locked collections file: one line, the rest of the app works
        st.error(plain(str(exc)))
        return
    panel = st.expander(f"Saved searches ({len(listing)})", icon=":material/notifications:", key="watches",
                        on_change="rerun")  # fmt: skip
    with panel:
        if not panel.open:
            return
        if not listing:
            st.caption("None yet: type a query or pick papers, then Save this search.")
            return
        st.html(PANEL_CSS)
        for watch in listing:
            try:
                _watch(index, watch)
            except UserError as exc:  # its papers gone from the index, or removed by another session
                st.error(plain(str(exc)))
