"""The map in a notebook, both ways: ``ix.map.widget()``, an anywidget.

``map.js`` draws it as in the app (topic labels at two levels, zoom, hover, lasso and box, a
query's star joined to its results) and is inlined into the widget's module with its style:
nothing is fetched from a CDN, nothing leaves the notebook's server. A selection made in the map
(box, lasso, a click) comes back to Python as ``selected`` (ids) and ``selection`` (their papers);
setting ``selected`` draws it; ``query`` stars a text and its nearest papers; ``colour_by``
colours the papers by a column (text as categories with a legend, a list by each paper's most
common member, numbers and dates with a scale) or by their collection. The widget state holds
the points once (``_points``) and what changes apart: ``_colour``, ``_focus`` (selection, star)
and ``_rows`` (what the map selected, as rows).

anywidget is imported here, and this module only by ``ix.map.widget()``: importing
paperscope stays light.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anywidget
import numpy as np
import pandas as pd
import traitlets

from paperscope.errors import UserError, shown
from paperscope.ui.mapplot import map_colours, map_focus, map_payload, map_script

log = logging.getLogger(__name__)
COLLECTION = "collection"  # colour_by this: each paper by its collection (the first by name when in several)

# After map.js in the widget's module: draw the map from the model, send a selection back as rows.
GLUE = """
function psWidgetPayload(model) {
  const focus = model.get("_focus");
  return { ...model.get("_points"), ...focus, colour: model.get("_colour"), height: model.get("height") };
}

export default {
  render({ model, el }) {
    let map = null;
    const send = (name, value) => {
      model.set("_rows", name === "click" ? [value] : Array.from(value));
      model.save_changes();
    };
    const draw = () => {
      if (!el.isConnected || el.clientWidth === 0 || !model.get("_points").count) return;
      map = paperscopeMap(el, psWidgetPayload(model), send);
    };
    // An output is often rendered before it is on the page: the map waits until it has a width.
    const sized = new ResizeObserver(() => map || draw());
    sized.observe(el);
    const changes = ["change:_points", "change:_focus", "change:_colour", "change:height"];
    for (const change of changes) model.on(change, draw);
    draw();
    return () => {
      sized.disconnect();
      for (const change of changes) model.off(change, draw);
      if (map) map.destroy();
      delete el.__paperscopeMap;
    };
  },
};
"""


def widget_module() -> tuple[str, str]:
    """The widget's ES module (``map.js`` and the glue above, self-contained) and its CSS."""
    script, style = map_script()
    return script + "\n" + GLUE, style


class Ids(traitlets.List):
    """Paper ids: any iterable of ids (a list, an array, a Series) or one id, kept as a list of str.
    Converted at once: traitlets' check of each element costs a second at 50,000 ids."""

    def validate(self, obj, value):
        """Take an id or an iterable of ids as a list of str."""
        if isinstance(value, str):
            return [value]
        try:
            return [str(item) for item in value]
        except TypeError:
            self.error(obj, value)


class MapWidget(anywidget.AnyWidget):
    """The topic map of ``index`` as a two-way widget: see the module docstring.

    ``selected``: the selected papers' ids (set it to draw a selection); ``selection``: their
    papers as a DataFrame; ``selected_rows``: their rows. ``query``: a text starred on the map,
    joined to its ``k`` nearest papers (``query_results``). ``colour_by``: a column of the papers,
    ``"collection"``, or None (the topics of ``level``). ``on_select(callback)``: called with the
    ids at each selection. ``refresh()``: read the map again after correcting the topics."""

    _esm, _css = widget_module()
    _points = traitlets.Dict().tag(sync=True)
    _colour = traitlets.Dict().tag(sync=True)
    _focus = traitlets.Dict().tag(sync=True)
    _rows: traitlets.List = traitlets.List().tag(sync=True)  # whole numbers: from the browser, checked in _rows_changed
    height = traitlets.Int(620).tag(sync=True)
    selected = Ids()
    query = traitlets.Unicode("")
    colour_by = traitlets.Unicode(None, allow_none=True)
    level = traitlets.Enum(("coarse", "fine"), "coarse")
    k = traitlets.Int(10)

    def __init__(self, index, level: str = "coarse", colour_by: str | None = None, height: int = 620, k: int = 10):
        self.index = index
        self.query_results = pd.DataFrame()
        self._callbacks: list[Callable] = []
        self._query: tuple[list[int], np.ndarray | None] = ([], None)
        self._checked: tuple[list[str], np.ndarray] = ([], np.zeros(0, np.int64))  # ids validated, their rows
        self._version = 0
        super().__init__(level=level, height=height, k=k)
        self.refresh()
        self.colour_by = colour_by

    def refresh(self) -> None:
        """Read the points, topic names and colours from the index again (after renaming,
        merging, splitting topics or moving papers in this session, or adding to a collection)."""
        self._version += 1
        papers, fine, coarse = (
            self.index.map.table(),
            self.index.topics.table("fine"),
            self.index.topics.table("coarse"),
        )
        self._ids = np.asarray(self.index.ids(), dtype=object)
        with self.hold_sync():
            self._points = map_payload(papers, fine, coarse, key=f"{self.index.generation}:{self._version}")
            self._colour = self._colours(self.colour_by)
            self._show()

    # --- the selection --------------------------------------------------------------------

    @property
    def selected_rows(self) -> np.ndarray:
        """The selected papers' rows in the index."""
        return np.asarray(self._rows, dtype=np.int64)

    @property
    def selection(self) -> pd.DataFrame:
        """The selected papers, every column, in the order of ``selected``."""
        return self.index.table(self.selected_rows).to_pandas()

    def on_select(self, callback: Callable[[list[str]], object], remove: bool = False) -> None:
        """Call ``callback(ids)`` after each change of the selection (in the map or from Python);
        ``remove``: stop calling it."""
        if remove:
            self._callbacks.remove(callback)
        else:
            self._callbacks.append(callback)

    def select_collection(self, name: str) -> None:
        """Select the papers of the collection ``name`` that are in the index."""
        members = self.index.collections.members(name)
        self.selected = self.index.known([i for i in members["id"] if isinstance(i, str)])

    def add_to_collection(self, name: str):
        """Add the selected papers to the collection ``name`` (made if new); returns what matched."""
        matched = self.index.collections.add(name, ids=self.selected, create=True)
        if self.colour_by == COLLECTION:
            self._colour = self._colours(COLLECTION)
        return matched

    @traitlets.validate("selected")
    def _check_selected(self, proposal) -> list[str]:
        ids = list(dict.fromkeys(proposal["value"]))
        self._checked = (ids, self.index.rows(ids))  # an unknown id is a UserError naming close ones
        return ids

    @traitlets.observe("selected")
    def _selected_changed(self, change) -> None:
        ids, rows = self._checked
        self._rows = (rows if ids is change["new"] else self.index.rows(change["new"])).tolist()
        for callback in list(self._callbacks):
            try:
                callback(list(change["new"]))
            except Exception:
                log.exception("map widget: the selection callback %r failed", callback)
        self._show()

    @traitlets.observe("_rows")
    def _rows_changed(self, change) -> None:
        """A selection made in the map (rows, from the browser)."""
        rows = np.asarray(change["new"], dtype=np.int64).reshape(-1)
        ids = self._ids[rows[(rows >= 0) & (rows < len(self._ids))]].tolist()
        if ids != self.selected:
            self.selected = ids

    # --- the query, the colours and the level ------------------------------------------------

    @traitlets.observe("query", "k")
    def _query_changed(self, change) -> None:
        text = self.query.strip()
        if not text:
            self._query, self.query_results = ([], None), pd.DataFrame()
        else:
            found = self.index.search(text, k=self.k)
            self._query = (found.rows.tolist(), self.index.map.position(self.index.embed_query(text)))
            self.query_results = found.to_pandas()
        self._show()

    @traitlets.validate("colour_by")
    def _check_colour_by(self, proposal) -> str | None:
        name = proposal["value"]
        if name not in (None, COLLECTION) and name not in self.index.fields():
            columns = list(self.index.columns())
            fields = ", ".join(field for field in self.index.fields() if field not in columns)
            raise UserError(
                f"the papers have no column '{shown(name)}': colour by one of the corpus's columns "
                f"({', '.join(columns) or 'none'}), {COLLECTION!r} or another field ({fields})"
            )
        return name

    @traitlets.observe("colour_by")
    def _colour_by_changed(self, change) -> None:
        self._colour = self._colours(change["new"])

    @traitlets.observe("level")
    def _level_changed(self, change) -> None:
        self._show()

    def _colours(self, name: str | None) -> dict:
        """The payload's ``colour`` for ``colour_by`` = ``name`` ({} for the topics' colours)."""
        if name is None:
            return {}
        if name == COLLECTION:
            return map_colours(self._collection_of(), "collection")
        values = self.index.table(columns=[name]).column(name).to_pandas()
        return map_colours(values, name, self.index.columns().get(name))

    def _collection_of(self) -> np.ndarray:
        """Each paper's collection (the first by name when in several), None when in none."""
        collection = np.full(len(self.index), None, dtype=object)
        for name in reversed(self.index.collections.names()):
            members = self.index.collections.members(name)
            known = self.index.known([i for i in members["id"] if isinstance(i, str)])
            collection[self.index.rows(known)] = name
        return collection

    def _show(self) -> None:
        """Send what the map highlights: the selection, the query's star and its results."""
        rows, position = self._query
        self._focus = map_focus(self.level, neighbour_rows=rows, chosen_rows=self._rows, query_xy=position)
