"""The topic map in the app: ``map.js`` mounted as a Streamlit component (components v2, in the
page itself, no iframe), reporting a clicked paper or a lasso selection back to Python.

The map's data comes in two elements: the points (coordinates, titles, labels; megabytes at
50,000 papers, the same on every rerun: JSON text made once per index generation, which Streamlit
sends once and then only as a reference to its cached copy, and the page parses once) and the
focus (selection, neighbours, star; a few bytes)."""

from __future__ import annotations

import json
from functools import cache
from typing import NamedTuple

import streamlit as st

from paperscope.ui.mapplot import map_script

KEEP_POINTS = """
export default function (component) {
  if (window.__paperscopeMapPointsText === component.data) return;  // the same text on every rerun: parsed once
  const points = JSON.parse(component.data);
  (window.__paperscopeMapPoints ||= {})[points.key] = points;
  window.__paperscopeMapPointsText = component.data;
}
"""
DRAW = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const draw = () => {
    const points = (window.__paperscopeMapPoints || {})[data.key];
    if (!points) return requestAnimationFrame(draw);  // the points element is mounted after this one
    paperscopeMap(parentElement, { ...points, ...data }, (name, value) => setTriggerValue(name, value));
  };
  draw();
}
"""


class MapPoints(NamedTuple):
    """The map's unchanging part of one index generation: its key and its payload as JSON text."""

    key: str
    text: str


def map_points_of(payload: dict) -> MapPoints:
    """``payload`` (``mapplot.map_payload``) as the points :func:`topic_map` sends, serialised once:
    given as a dict, Streamlit looked for a table in each of its lists and serialised it on every
    rerun (at 50,000 papers, 4.8 MB: the points element took 64 ms a rerun, as text 42)."""
    return MapPoints(payload["key"], json.dumps(payload, separators=(",", ":")))


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
    ``{"click": row}`` or ``{"lasso": [rows]}`` for that run."""
    draw, keep_points = _components()
    draw(data=focus | {"key": points.key}, key=key, on_click_change=lambda: None, on_lasso_change=lambda: None)
    keep_points(data=points.text, key=f"{key}_points")
