"""Whether a user has opened the app's sidebar: a component of a few lines in the sidebar, which
reports the first time the sidebar is expanded (its ``data-collapsed`` turns false).

The sidebar starts folded, and Streamlit draws a folded sidebar's widgets all the same: its
sliders, radios, toggle and boxes were 12 elements of a first page of 21, and their code was
fetched and run before the page was usable (IJCAI, 2,690 papers: the first page 2.3 -> 2.1 s,
six rounds each way). So the app draws them once the sidebar has been opened, and from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import streamlit as st

OPENED = """
export default function ({ parentElement, setTriggerValue }) {
  const sidebar = parentElement.closest("[data-testid='stSidebar']");
  if (!sidebar) return;
  const observer = new MutationObserver(() => report());
  const report = () => {
    if (sidebar.dataset.collapsed !== "false") return;
    observer.disconnect();
    setTriggerValue("opened", true);
  };
  observer.observe(sidebar, { attributes: true, attributeFilter: ["data-collapsed"] });
  report();
  return () => observer.disconnect();
}
"""


@cache
def _component():
    return st.components.v2.component("paperscope_sidebar_opened", js=OPENED, isolate_styles=False)


def watch_sidebar(on_opened: Callable[[], None]) -> None:
    """Call ``on_opened`` (a callback, before the rerun it causes) once the sidebar is expanded;
    to be drawn inside ``st.sidebar``."""
    _component()(key="sidebar_watch", on_opened_change=on_opened)
