"""The topic map in the app: ``map.js`` mounted as a Streamlit component (components v2, in the
page itself, no iframe), reporting a clicked paper or a lasso selection back to Python.

The map's data comes in two elements: the points (coordinates, titles, labels; megabytes at
50,000 papers, the same on every rerun: JSON made once per index generation, sent as bytes to each
session once, kept by the page) and the focus (selection, neighbours, star; a few bytes, sent on
every run). Sent on every run, the points cost 75 ms of each run at 50,000 papers (Streamlit hashes
an element's data for its identity, and each message for its cache, even when the page has it)."""

from __future__ import annotations

import json
from functools import cache
from typing import Final, NamedTuple

import streamlit as st

from paperscope.ui.mapplot import map_script

KEEP_POINTS = """
export default function (component) {
  const points = JSON.parse(new TextDecoder().decode(component.data));
  window.__paperscopeMapPoints = { [points.key]: points };  // those of the index shown: an older index's are let go
}
"""
DRAW = """
export default function (component) {
  const { parentElement, setTriggerValue } = component;
  const { sending, ...data } = JSON.parse(new TextDecoder().decode(component.data));
  const draw = () => {
    const points = (window.__paperscopeMapPoints || {})[data.key];
    if (!points && sending) return requestAnimationFrame(draw);  // sent in this run: its element may mount after
    if (!points) return setTriggerValue("missing", data.key);  // not here (a page reloaded, a run cut short): again
    paperscopeMap(parentElement, { ...points, ...data }, (name, value) => setTriggerValue(name, value));
  };
  draw();
}
"""
SENT: Final = "map_points_sent"  # session state: the key of the points this session's page was last sent


class MapPoints(NamedTuple):
    """The map's unchanging part of one index generation: its key and its payload as UTF-8 JSON."""

    key: str
    data: bytes


def map_points_of(payload: dict) -> MapPoints:
    """``payload`` (``mapplot.map_payload``) as the points :func:`topic_map` sends, serialised once
    and sent as bytes, which Streamlit forwards as they are: given as a dict,
    it looked for a table in each list and serialised it on every rerun (at 50,000 papers, 4.8 MB:
    64 ms a rerun); as text, it wrote it as a JSON string twice (escaping each quote) and hashed it
    three times (42 ms, and the page parsed that string again)."""
    return MapPoints(payload["key"], json.dumps(payload, separators=(",", ":")).encode())


@cache
def _components():
    script, style = map_script()
    return (
        st.components.v2.component("paperscope_map", js=script + DRAW, css=style, isolate_styles=False),
        st.components.v2.component("paperscope_map_points", js=KEEP_POINTS, isolate_styles=False),
    )


def topic_map(points: MapPoints, focus: dict, key: str = "map") -> None:
    """Draw the map: ``points`` from :func:`map_points_of`, ``focus`` from ``mapplot.map_focus``.
    A click on a paper or a lasso selection reruns the app with ``st.session_state[key]`` holding
    ``{"click": row}`` or ``{"lasso": [rows]}`` for that run.

    The points go to the session's page once (again when they change, or when the page says it
    has not got them: ``{"missing": key}``, after a page reload or a run cut short)."""
    draw, keep_points = _components()
    missing = (st.session_state.get(key) or {}).get("missing") == points.key
    sending = missing or st.session_state.get(SENT) != points.key
    with st.empty():  # a place of its own, sent or not: what follows the map keeps its place on the page
        if sending:
            keep_points(data=points.data, key=f"{key}_points")
            st.session_state[SENT] = points.key
    # as bytes: in a dict, Streamlit looks for a table in each value, importing pandas (0.35 s of a first page)
    focused = json.dumps(focus | {"key": points.key, "sending": sending}, separators=(",", ":")).encode()
    draw(data=focused, key=key, on_click_change=lambda: None, on_lasso_change=lambda: None,
         on_missing_change=lambda: None)  # fmt: skip
