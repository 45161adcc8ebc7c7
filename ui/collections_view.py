"""The dashboard's collections: papers added to a collection from a result card, the selected
paper or a map selection (a small popover: choose a collection or type a new name); the
Collections panel (each collection's counts, the one shown, removing members, deleting); the
collection shown (``?collection=NAME``): its members as diamonds on the map, its recommendations
(numbered rings there) as the result cards, each with why and a "Not interested" button (dismissed
papers are kept with the collection, listed with a way back), its members exported as BibTeX, RIS,
CSL-JSON or CSV (each imported entry as it came); library files imported into a new or existing
collection.

It only draws what ``PaperIndex.collections`` (:mod:`paperscope.index.collections`) keeps: every
write is one SQLite transaction, so two sessions adding at once both land. Names and titles are
HTML-escaped wherever they are drawn, and Markdown-escaped in messages.
"""

from __future__ import annotations

import datetime
import functools
import html
import re
import tempfile
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import streamlit as st

from paperscope.embed.text import counted
from paperscope.errors import UserError
from paperscope.ui.app_access import READ_ONLY_NOTE, audited, read_only
from paperscope.ui.mapplot import map_focus
from paperscope.ui.session import Key, View

NOTE = "collection_note"  # session state: what the last add, remove or delete said, shown on the next run
LAST = "last_collection"  # session state: the collection last added to, offered first
UNDO = "collection_dismissed_last"  # session state: the paper last dismissed (collection, id, title), for its Undo
REASON_TITLE_CHARS = 60  # a member's title in a recommendation's reason is cut here
PANEL_CSS = """<style>
.ps-collections {width: 100%; border-collapse: collapse; font-size: 0.85rem; margin-bottom: 0.4rem;}
.ps-collections th {font-weight: 600; color: #666; text-align: right; padding: 0 0.3rem; white-space: nowrap;}
.ps-collections td {text-align: right; padding: 0.05rem 0.3rem; border-top: 1px solid #eee;}
.ps-collections th:first-child, .ps-collections td:first-child {text-align: left; word-break: break-word;}
.ps-collections tr.ps-shown td {font-weight: 600;}
.ps-collection {margin: 0.2rem 0;}
.ps-because {font-size: 0.8rem; color: #555; margin: -0.2rem 0 0 0;}
.ps-because mark {background: #eef3fb; color: inherit; padding: 0 2px; border-radius: 2px;}
</style>"""
MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:])")
COUNTS = (("members", "members"), ("in_index", "in index"), ("outside", "outside"), ("missing", "missing"))


def plain(text: str) -> str:
    """``text`` shown as it is in a Streamlit message (Markdown): its special characters escaped."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _add(index, ids: list[str], name_key: str) -> None:
    """Add ``ids`` to the collection named in ``st.session_state[name_key]`` (made if new); a
    callback, so that the page drawn after it shows the collection as it is now."""
    name = (st.session_state.get(name_key) or "").strip()
    try:
        if not name:
            raise UserError("choose a collection, or type the name of a new one")
        audited(f"add {counted(len(ids), 'paper')} to collection {name}", index.folder,
                lambda: index.collections.add(name, ids=ids, create=True))  # fmt: skip
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state[LAST] = name
    st.session_state[NOTE] = ("added", f"Added {counted(len(ids), 'paper')} to “{name}”")


def add_popover(index, ids: list[str], key: str, label: str = "", help: str = "Add to a collection") -> None:
    """A small button opening a popover that adds ``ids`` to a collection chosen from the index's
    (the last one added to first) or created by typing a new name. Its widgets are drawn only
    while it is open (a card each: ten closed popovers cost ten buttons). None in a read-only app.
    Added from a fragment (an opened card), it reruns the whole page, which says what was added."""
    if read_only():
        return
    popover = st.popover(label, icon=":material/bookmark_add:", help=help, key=key, on_change="rerun")
    with popover:
        if not popover.open:
            return
        try:
            names = index.collections.names()
        except UserError as exc:  # a damaged or locked collections file
            st.error(plain(str(exc)))
            return
        default = st.session_state.get(Key.COLLECTION) or st.session_state.get(LAST)
        st.selectbox(
            f"Add {counted(len(ids), 'paper')} to",
            names,
            index=names.index(default) if default in names else None,
            key=f"{key}-name",
            accept_new_options=True,
            placeholder="choose, or type a new name",
        )
        st.button("Add", key=f"{key}-add", type="primary", on_click=_add, args=(index, list(ids), f"{key}-name"))
    if st.session_state.get(NOTE):  # added from an opened card (a fragment's rerun): the page shows the note and counts
        st.rerun()


def _show_note() -> None:
    """What the last add, import, remove or delete said: a toast (an import's summary stays as a
    caption too), or a one-line error."""
    kind, text = st.session_state.pop(NOTE, (None, ""))
    if kind == "error":
        st.error(plain(text))
    elif kind == "imported":
        st.success(plain(text), icon=":material/bookmark_added:")
    elif kind:
        st.toast(plain(text), icon=":material/bookmark_added:")


def _on_show() -> None:
    """A collection chosen: its recommendations replace the papers picked and the text query."""
    if st.session_state.get(Key.COLLECTION):
        st.session_state.update(View(papers=[], not_papers=[], query="", like_set=[]))


def _listing_html(listing: list[dict], shown: str | None) -> str:
    header = "".join(f"<th>{html.escape(label)}</th>" for label in ("collection", *(label for _, label in COUNTS)))
    rows = "".join(
        f"<tr{' class=ps-shown' if row['name'] == shown else ''}><td>{html.escape(row['name'])}</td>"
        + "".join(f"<td>{int(row[column]):,}</td>" for column, _ in COUNTS)
        + "</tr>"
        for row in listing
    )
    return f"{PANEL_CSS}<table class='ps-collections'><tr>{header}</tr>{rows}</table>"


def _check_shown(index, names: list[str]) -> None:
    """Before the chooser exists: a collection shown that the index does not have (a link's
    typo, or deleted by another session) is dropped, with the collections' own message."""
    shown = st.session_state.get(Key.COLLECTION)
    if shown is None or shown in names:
        return
    st.session_state[Key.COLLECTION] = None
    try:
        index.collections.members(shown)  # raises the message naming close names
    except UserError as exc:
        st.error(plain(str(exc)))


class ShownCollection(TypedDict):
    """The collection the panel shows (:func:`collections_panel`): its name, its listing row's
    counts, the ids of its members in the index, its members (key → title) and the papers
    dismissed from its recommendations (id → title)."""

    name: str
    counts: dict[str, Any]
    ids: list[str]
    members: dict[str, str]
    dismissed: dict[str, str]


def collections_panel(index) -> ShownCollection | None:
    """The Collections panel: every collection of the index with its counts, a chooser of the one
    shown, and (for that one) removing members and deleting it. Returns the collection shown:
    {name, counts (a listing row), ids (its members in the index), members (key → title)}, or None."""
    _show_note()
    try:
        listing = index.collections.listing_records()
    except UserError as exc:  # a damaged or locked collections file: one line, the rest of the app works
        st.error(plain(str(exc)))
        return None
    names = [row["name"] for row in listing]
    _check_shown(index, names)
    shown = st.session_state.get(Key.COLLECTION)
    with st.expander(f"Collections ({len(names)})", icon=":material/bookmarks:"):
        _import_form(index, names)
        if not names:
            st.caption("None yet: import a library file above, or add papers with the bookmark button of an "
                       "opened result, the selected paper or a map selection.")  # fmt: skip
            return None
        st.html(_listing_html(listing, shown))
        choose, edit = st.columns([5, 1], vertical_alignment="bottom", gap="small")
        choose.selectbox("Show a collection", names, index=None, key=Key.COLLECTION, on_change=_on_show,
                         placeholder="choose one: its recommendations, its members on the map")  # fmt: skip
        if not shown:
            return None
        try:
            members = index.collections.members(shown)
        except UserError as exc:  # deleted by another session since the listing, or the file locked
            st.error(plain(str(exc)))
            return None
        titles = dict(zip(members["key"], members["title"].fillna(members["key"]), strict=True))
        manage = edit.popover("", icon=":material/edit:", help="Remove members, or delete the collection",
                              key="collection_manage", on_change="rerun")  # fmt: skip
        with manage:
            if manage.open:  # its widgets drawn only while open: every rerun sends what is drawn
                _manage(index, shown, titles)
    counts = next({column: value for column, value in row.items() if column != "name"}
                  for row in listing if row["name"] == shown)  # fmt: skip
    ids = members.loc[members["in_index"], "id"].tolist()
    return ShownCollection(name=shown, counts=counts, ids=ids, members=titles, dismissed=_dismissed(index, shown))


def _dismissed(index, name: str) -> dict[str, str]:
    """The papers dismissed from the recommendations of ``name``: id → title (the id for a paper
    gone from the index), in the order they were dismissed."""
    try:
        dismissed = index.collections.dismissed(name)
    except UserError as exc:
        st.error(plain(str(exc)))
        return {}
    present = index.known(dismissed)
    titles = index.table(index.rows(present), ["title"]).column("title").to_pylist() if present else []
    title_of = dict(zip(present, titles, strict=True))
    return {paper_id: title_of.get(paper_id, paper_id) for paper_id in dismissed}


def _import(index) -> None:
    """Import the uploaded library file into the collection named (made if new): the summary the
    command line prints, or the one-line error naming the file as uploaded."""
    upload, name = st.session_state.get(Key.COLLECTION_IMPORT_FILE), (st.session_state.get(Key.COLLECTION_IMPORT_NAME)
                                                                     or "").strip()  # fmt: skip
    if upload is None or not name:
        st.session_state[NOTE] = ("error", "choose a library file and a collection (or type a new name)")
        return
    with tempfile.TemporaryDirectory() as folder:
        saved = Path(folder) / Path(upload.name).name
        saved.write_bytes(upload.getvalue())
        try:
            matched = audited(f"import {upload.name} into collection {name}", index.folder,
                              lambda: index.collections.add(name, files=[saved], create=True))  # fmt: skip
        except UserError as exc:
            st.session_state[NOTE] = ("error", str(exc).replace(str(saved), upload.name))
            return
    st.session_state[LAST] = name
    st.session_state[NOTE] = ("imported", f"Imported {upload.name} into “{name}”: {matched.summary()}")


def _import_form(index, names: list[str]) -> None:
    """A library file (BibTeX, RIS, CSL-JSON) imported into a new or existing collection (in a
    read-only app: why not)."""
    if read_only():
        st.caption(READ_ONLY_NOTE)
        return
    popover = st.popover("Import a library file", icon=":material/upload_file:", key="collection_import",
                         on_change="rerun")  # fmt: skip
    with popover:
        if not popover.open:  # its widgets drawn only while open: every rerun sends what is drawn
            return
        st.file_uploader("BibTeX, RIS or CSL-JSON (Zotero, Mendeley, JabRef …)", type=["bib", "ris", "json"],
                         key=Key.COLLECTION_IMPORT_FILE)  # fmt: skip
        default = st.session_state.get(Key.COLLECTION) or st.session_state.get(LAST)
        st.selectbox("into the collection", names, index=names.index(default) if default in names else None,
                     key=Key.COLLECTION_IMPORT_NAME, accept_new_options=True,
                     placeholder="choose, or type a new name")  # fmt: skip
        st.button("Import", key="collection_import_go", type="primary", on_click=_import, args=(index,))


def _remove(index, name: str) -> None:
    keys = st.session_state.get(Key.COLLECTION_REMOVE) or []
    try:
        removed = audited(f"remove {counted(len(keys), 'member')} from collection {name}", index.folder,
                          lambda: index.collections.remove(name, keys))  # fmt: skip
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state[Key.COLLECTION_REMOVE] = []
    st.session_state[NOTE] = ("removed", f"Removed {counted(removed, 'paper')} from “{name}”")


def _delete(index, name: str) -> None:
    try:
        audited(f"delete collection {name}", index.folder, lambda: index.collections.delete(name))
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state[Key.COLLECTION], st.session_state[Key.COLLECTION_DELETE_SURE] = None, False
    st.session_state[NOTE] = ("deleted", f"Deleted the collection “{name}”")


def _manage(index, name: str, titles: dict[str, str]) -> None:
    """Removing members of the collection shown, and deleting it (once ticked); in a read-only app, why not."""
    if read_only():
        st.caption(READ_ONLY_NOTE)
        return
    picked = st.multiselect("Remove members", list(titles), key=Key.COLLECTION_REMOVE, format_func=titles.__getitem__,
                            placeholder="pick members to remove")  # fmt: skip
    st.button(f"Remove {counted(len(picked), 'paper')}", key="collection_remove_go", disabled=not picked,
              on_click=_remove, args=(index, name))  # fmt: skip
    sure = st.checkbox(
        f"Delete this collection and its {counted(len(titles), 'paper')}", key=Key.COLLECTION_DELETE_SURE
    )
    st.button("Delete it", key="collection_delete", type="primary", disabled=not sure, on_click=_delete,
              args=(index, name))  # fmt: skip


def _dismiss(index, name: str, paper_id: str, title: str) -> None:
    """A recommendation dismissed ("not interested"): kept with the collection, the next
    recommendations steered away from it; its Undo offered until the next dismissal."""
    try:
        audited(f"dismiss {paper_id} from the recommendations of collection {name}", index.folder,
                lambda: index.collections.dismiss(name, paper_id))  # fmt: skip
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state[UNDO] = (name, paper_id, title)


def _undismiss(index, name: str, paper_id: str, title: str) -> None:
    """A dismissed paper brought back to the recommendations of ``name``."""
    try:
        audited(f"bring {paper_id} back to the recommendations of collection {name}", index.folder,
                lambda: index.collections.undismiss(name, paper_id))  # fmt: skip
    except UserError as exc:
        st.session_state[NOTE] = ("error", str(exc))
        return
    st.session_state.pop(UNDO, None)
    st.session_state[NOTE] = ("back", f"“{title}” is back among the recommendations")


def _cut(text: str, limit: int = REASON_TITLE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def reason_html(because, members: dict[str, str]) -> str:
    """A recommendation's reason, escaped: "like <member's title> (0.71), …; shares federated
    learning, privacy" (the member's title, inside or outside the index; ``members``: a member's
    id → title, for reasons without titles), and when a new paper came."""
    if not isinstance(because, dict):
        return ""
    closest = [] if because.get("members") is None else list(because["members"])  # a list, or an array from pandas
    like = ", ".join(
        f"<i>{html.escape(_cut(str(member.get('title') or members.get(member['id']) or member['id'])))}</i>"
        f" ({member['similarity']:.2f})"
        for member in closest
    )
    text = f"like {like}" if like else "like the collection"
    terms = [] if because.get("terms") is None else list(because["terms"])
    if terms:
        text += f"; shares {', '.join(f'<mark>{html.escape(str(term))}</mark>' for term in terms)}"
    if because.get("added"):
        came = datetime.datetime.fromtimestamp(int(because["added"]) / 1000, datetime.UTC)
        text += f"; new on {came:%Y-%m-%d %H:%M} UTC"
    return f"<div class='ps-because'>{text}</div>"


def recommended_reason(row, shown: ShownCollection) -> str:
    """Why the card ``row`` is recommended for the collection ``shown``: the last line of its header (HTML, escaped)."""
    return reason_html(getattr(row, "because", None), shown["members"])


def dismiss_button(index, shown: ShownCollection, row) -> None:
    """The "Not interested" button under a recommended card ``row``, dismissing it from the
    recommendations of the collection ``shown`` (none in a read-only app)."""
    if not read_only():
        st.button("Not interested", key=f"dismiss-{row.id}", type="tertiary", icon=":material/thumb_down:",
                  on_click=_dismiss, args=(index, shown["name"], row.id, str(row.title)),
                  help="Never recommend this paper for this collection, and steer away from it")  # fmt: skip


def _dismissed_line(index, shown: ShownCollection) -> None:
    """Right after a dismissal: what was dismissed and an Undo; and the papers dismissed from
    this collection's recommendations, each with a button bringing it back."""
    undo = st.session_state.get(UNDO)
    if undo and undo[0] == shown["name"] and undo[1] in shown["dismissed"]:
        line = st.container(horizontal=True, vertical_alignment="center", gap="small", key="collection_undo_line")
        line.html(f"<span class='ps-meta'>Not interested in <b>{html.escape(_cut(undo[2]))}</b>: dismissed "
                  "from these recommendations.</span>", width="stretch")  # fmt: skip
        line.button("Undo", key="collection_undo", icon=":material/undo:", on_click=_undismiss, args=(index, *undo))


def _dismissed_popover(index, shown: ShownCollection, row) -> None:
    """The papers dismissed from the recommendations of the collection ``shown`` (in ``row``),
    each with a button bringing it back."""
    dismissed = shown["dismissed"]
    if not dismissed:
        return
    with row.popover(f"Dismissed ({len(dismissed)})", icon=":material/thumb_down:", type="tertiary", key="dismissed",
                     help="Papers dismissed from these recommendations; bring one back"):  # fmt: skip
        for number, (paper_id, title) in enumerate(dismissed.items()):
            item, back = st.columns([5, 2], vertical_alignment="center", gap="small")
            item.html(f"<span class='ps-meta ps-dismissed'>{html.escape(_cut(title, 90))}</span>")
            if not read_only():
                back.button("Bring back", key=f"undismiss-{number}", type="tertiary",
                            on_click=_undismiss, args=(index, shown["name"], paper_id, title))  # fmt: skip


def _file_stem(name: str) -> str:
    """A collection name as a download's file name: letters, digits, dots and dashes."""
    return "paperscope-" + (re.sub(r"[^A-Za-z0-9.]+", "-", name).strip("-.")[:60] or "collection")


def _close() -> None:
    st.session_state[Key.COLLECTION] = None


def collection_header(index, shown: ShownCollection) -> None:
    """What the results answer (the collection shown and its counts), its members' exports (a
    popover of BibTeX, RIS, CSL-JSON and CSV, each written when clicked) and a button to stop
    showing it."""
    counts = shown["counts"]
    more = [f"{counts[column]:,} {label}" for column, label in COUNTS[2:] if counts[column]]
    ringed = f"{counts['in_index']:,} ◆ on the map" if counts["in_index"] else "none in the index"
    st.html(
        f"<div class='ps-meta ps-collection'>Recommended for the collection <b>{html.escape(shown['name'])}</b>: "
        f"{counted(int(counts['members']), 'paper')}, {ringed}{''.join(f'; {m}' for m in more)}</div>"
    )
    row = st.container(horizontal=True, vertical_alignment="center", gap="small", key="collection_exports")
    _exports_popover(index, shown["name"], row)
    _dismissed_popover(index, shown, row)
    row.button("Close", key="collection_close", type="tertiary", icon=":material/close:", on_click=_close,
               help="Stop showing this collection")  # fmt: skip
    _dismissed_line(index, shown)


def _exports_popover(index, name: str, row) -> None:
    """The members of the collection ``name`` as a file (in ``row``): its download buttons drawn only
    while open (five elements fewer for the browser to draw on every rerun while a collection is shown)."""
    popover = row.popover("Export members", icon=":material/download:", type="tertiary", key="collection_export",
                          help="Its members as BibTeX, RIS, CSL-JSON or CSV", on_change="rerun")  # fmt: skip
    with popover:
        if not popover.open:
            return
        stem = _file_stem(name)
        for label, fmt, suffix, mime in (
            ("BibTeX", "bib", "bib", "application/x-bibtex"),
            ("RIS", "ris", "ris", "application/x-research-info-systems"),
            ("CSL-JSON", "csl", "json", "application/vnd.citationstyles.csl+json"),
            ("CSV", "csv", "csv", "text/csv"),
        ):
            st.download_button(
                label,
                functools.partial(index.collections.export_text, name, fmt),
                f"{stem}.{suffix}",
                mime,
                key=f"collection_{suffix}",
                on_click="ignore",  # a download changes nothing: no rerun
                type="tertiary",
                icon=":material/download:",
            )


def collection_focus(index, shown: ShownCollection, results, level: str, lasso_rows=()) -> dict:
    """The map for a collection shown: its members in the index as filled diamonds, its
    recommendations as rings numbered by rank (a legend says which is which), a star at the
    members' centre joined to the recommendations; a map selection's papers ringed while there is one."""
    rows = index.rows(shown["ids"]) if shown["ids"] else np.empty(0, np.int64)
    centre = None
    if len(rows):
        table = index.table(rows, ["x", "y"])
        centre = np.array([np.mean(table.column("x").to_numpy()), np.mean(table.column("y").to_numpy())])
    return map_focus(
        level,
        neighbour_rows=index.rows(results["id"].tolist()).tolist()
        if results is not None and centre is not None
        else [],
        chosen_rows=lasso_rows,
        query_xy=centre,
        member_rows=rows,
    )
