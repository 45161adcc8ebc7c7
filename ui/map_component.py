"""The topic map in the app: ``map.js`` mounted as a Streamlit component (components v2, in the
page itself, no iframe), reporting a clicked paper or a lasso selection back to Python."""

from __future__ import annotations

from functools import cache

import streamlit as st

from paperscope.ui.mapplot import map_script

BRIDGE = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  paperscopeMap(parentElement, data, (name, value) => setTriggerValue(name, value));
}
"""


@cache
def _component():
    script, style = map_script()
    return st.components.v2.component("paperscope_map", js=script + BRIDGE, css=style, isolate_styles=False)


def topic_map(payload: dict, key: str = "map") -> None:
    """Draw the map from ``mapplot.map_payload``. A click on a paper or a lasso selection reruns the
    app with ``st.session_state[key]`` holding ``{"click": row}`` or ``{"lasso": [rows]}`` for that run."""
    _component()(data=payload, key=key, on_click_change=lambda: None, on_lasso_change=lambda: None)
