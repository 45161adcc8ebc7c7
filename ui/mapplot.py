"""Drawing the topic map the index stores. ``map.js`` draws the interactive map, in the app (a
Streamlit component, ``ui/map_component.py``) and in the self-contained HTML export; matplotlib
draws the static PNG (:func:`save_png`). Nothing here computes a layout: it only draws the columns x, y, cluster,
coarse_cluster and the topic tables."""

from __future__ import annotations

import base64
import datetime
import html
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from paperscope.embed.library import paper_link
from paperscope.errors import UserError, shown
from paperscope.files import atomic_path
from paperscope.settings import UNCLUSTERED_NAME

if TYPE_CHECKING:  # imported where a column is coloured or a PNG drawn: the app's first page draws no pandas
    import pandas as pd

    Columns = pd.DataFrame | dict[str, np.ndarray]  # a table as the map reads it: each column by its name

MAX_STARRED = 12  # chosen papers up to this many are starred (ringed boldly) on the map; more, ringed lightly

HERE = Path(__file__).parent
UNCLUSTERED_COLOUR = "#c8c8c8"
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
]
TITLE_CHARS = 160  # hover titles are cut here: the map sends every title to the browser
LEVEL_COLUMNS = (("coarse", "coarse_cluster"), ("fine", "cluster"))  # each level's topic column in the papers' table
ANCHOR_CELLS = 32  # a label's anchor: its topic's papers counted in cells of this share of the map's larger side
ANCHORS = 3  # where a label may sit: up to this many of its topic's densest cells
ANCHOR_SHARE = 0.5  # ... each at least this share of the densest one's papers


def _densest_cells(unique: np.ndarray, density: np.ndarray, side: int, count: int) -> list[list[int]]:
    """Per topic, up to ``count`` of its cells (indices into ``unique``, the cells' keys), densest
    first, each at least 3 cells from those before it and at least ``ANCHOR_SHARE`` of the densest's
    density."""
    cell_topics = unique // (side * side)
    order = np.lexsort((-density, cell_topics))
    starts = np.flatnonzero(np.r_[True, cell_topics[order][1:] != cell_topics[order][:-1]])
    picked = []
    for part in np.split(order, starts[1:]):
        part = part[density[part] >= ANCHOR_SHARE * density[part[0]]]
        columns, rows = unique[part] % side, unique[part] // side % side
        mine = [0]
        for k in range(1, len(part)):
            if len(mine) == count:
                break
            if np.all(np.maximum(abs(columns[k] - columns[mine]), abs(rows[k] - rows[mine])) >= 3):
                mine.append(k)
        picked.append(part[mine].tolist())
    return picked


def label_anchors(x, y, topics, count: int = ANCHORS) -> dict[int, list[tuple[float, float]]]:
    """Where each topic's label may sit: up to ``count`` of its papers, each in one of its densest
    cells, densest first (a cell 1/``ANCHOR_CELLS`` of the map's larger side, its density the
    topic's papers in the 3 x 3 cells around it: :func:`_densest_cells`), the paper nearest the mean
    of those papers. Papers of the topic, in its thickest parts: a topic in two parts, or curved, is
    named on its papers, never on the empty space between them where its mean or median can fall.
    ``topics``: each paper's topic (below 0: none)."""
    topics = np.asarray(topics, dtype=np.int64)
    kept = topics >= 0
    coords, topics = np.column_stack([x, y]).astype(np.float64)[kept], topics[kept]
    if not len(topics):
        return {}
    low, span = coords.min(axis=0), max(float(np.ptp(coords, axis=0).max()), 1e-12)
    cells = np.minimum(((coords - low) / span * ANCHOR_CELLS).astype(np.int64), ANCHOR_CELLS - 1) + 1
    side = ANCHOR_CELLS + 2  # a cell of padding on each side: a neighbour is never another row's or topic's
    keys = (topics * side + cells[:, 1]) * side + cells[:, 0]
    unique, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse).astype(np.float64)
    sums = np.column_stack([np.bincount(inverse, weights=coords[:, axis]) for axis in (0, 1)])
    density, window = np.zeros(len(unique)), np.zeros((len(unique), 2))
    for offset in (dy * side + dx for dy in (-1, 0, 1) for dx in (-1, 0, 1)):
        at = np.minimum(np.searchsorted(unique, unique + offset), len(unique) - 1)
        found = unique[at] == unique + offset
        density += np.where(found, counts[at], 0)
        window += np.where(found[:, None], sums[at], 0)
    chosen = _densest_cells(unique, density, side, count)
    rows = np.flatnonzero(np.isin(inverse, np.concatenate(chosen)))
    off_centre = np.linalg.norm(coords[rows] - (window / density[:, None])[inverse[rows]], axis=1)
    rows = rows[np.lexsort((off_centre, inverse[rows]))]
    first = rows[np.r_[True, inverse[rows][1:] != inverse[rows][:-1]]]  # per cell, its paper nearest the mean
    paper = dict(zip(inverse[first].tolist(), first.tolist(), strict=True))
    side2 = side * side
    return {
        int(unique[c[0]] // side2): [(float(coords[paper[i], 0]), float(coords[paper[i], 1])) for i in c]
        for c in chosen
    }


def cluster_colours(labels) -> list[str]:
    """One colour per paper: its cluster's, grey for unclustered papers."""
    return [UNCLUSTERED_COLOUR if label < 0 else PALETTE[label % len(PALETTE)] for label in labels]


def _base64(values, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def _names(topics: Columns) -> list[str]:
    """Topic names indexed by topic number (a list: JSON has no integer keys)."""
    names = [UNCLUSTERED_NAME] * (int(topics["cluster"].max()) + 1 if len(topics["cluster"]) else 0)
    for topic, name in zip(topics["cluster"], topics["name"], strict=True):
        names[int(topic)] = str(name)
    return names


def _anchored(points: list[tuple[float, float]]) -> dict:
    """A label's anchors as ``map.js`` reads them: the first as x, y (where a zoom centres on the
    topic), all of them as anchors."""
    return {"x": points[0][0], "y": points[0][1], "anchors": [list(point) for point in points]}


def map_payload(
    papers: Columns,
    fine_topics: Columns,
    coarse_topics: Columns,
    key: str = "",
    knn: np.ndarray | None = None,
    with_titles: bool = True,
) -> dict:
    """What ``map.js`` draws, as JSON, from the ``MAP_COLUMNS`` of ``papers`` and the topic tables
    (DataFrames, or numpy arrays by column name): coordinates and
    topic numbers as base64 arrays, titles for hover (unless ``with_titles`` is False: the hover
    then names the topic only), both levels of topic labels (anchor: :func:`label_anchors`, and
    size). ``key`` changes when the points do: the browser keeps its zoom otherwise. ``knn`` (papers × k rows, nearest
    first) lets a click in the standalone map list a paper's neighbours, as links to open when
    ``papers`` has a ``url`` column (http(s) links only). ``map_focus`` adds what is selected."""
    titles = (
        [title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…" for title in papers["title"]]
        if with_titles
        else None
    )
    links = [paper_link([url]) or None for url in papers["url"]] if with_titles and "url" in papers else None
    anchors = {level: label_anchors(papers["x"], papers["y"], papers[column]) for level, column in LEVEL_COLUMNS}
    labels = [
        {"text": str(name), "size": int(size), "level": level, "topic": int(cluster)}
        | _anchored(anchors[level].get(int(cluster), [(float(x), float(y))]))
        for level, topics in (("coarse", coarse_topics), ("fine", fine_topics))
        for name, size, cluster, x, y in zip(*(topics[c] for c in ("name", "size", "cluster", "x", "y")), strict=True)
        if cluster >= 0
    ]
    return (
        {
            "key": key,
            "count": len(papers["x"]),
            "x": _base64(papers["x"], np.float32),
            "y": _base64(papers["y"], np.float32),
            "fine": _base64(papers["cluster"], np.int16),
            "coarse": _base64(papers["coarse_cluster"], np.int16),
            "trust": _base64(np.round(np.asarray(papers["map_trust"]) * 100), np.uint8),
            "titles": titles,
            "fine_names": _names(fine_topics),
            "coarse_names": _names(coarse_topics),
            "palette": PALETTE,
            "labels": labels,
        }
        | map_focus()
        | ({} if links is None else {"links": links})
        | ({} if knn is None else {"knn": _base64(knn, np.int32), "knn_k": int(knn.shape[1])})
    )


def map_focus(
    level: str = "coarse",
    selected_rows=(),
    neighbour_rows=(),
    chosen_rows=(),
    query_xy: np.ndarray | None = None,
    *,
    member_rows=(),
) -> dict:
    """The map's changing part: points coloured by ``level`` topics, the selected papers or the
    query position (the star), its neighbours (joined by lines), a chosen set (a lasso selection);
    ``member_rows``: a collection's members (filled diamonds, the neighbours then its
    recommendations, rings numbered by rank, with a legend of the two)."""
    return {
        "level": level,
        "selected": [int(row) for row in selected_rows],
        "neighbours": [int(row) for row in neighbour_rows],
        "chosen": [int(row) for row in chosen_rows],
        "star": None if query_xy is None else [float(v) for v in query_xy],
        "members": [int(row) for row in member_rows],
    }


COLOUR_CATEGORIES = 12  # colour by a column of words: its most common values named, the rest "other"
OTHER_COLOUR = "#8c8c8c"
SCALE = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]  # viridis
SCALE_STEPS = 32  # colour by a column of numbers: its range in this many colours


LEGEND_CHARS = 60  # a legend's value is cut here (the legend is 16rem wide)


def _is_list(value) -> bool:
    return isinstance(value, list | tuple | np.ndarray)


def _as_text(value) -> str | None:
    """A value of a column (not a missing one) as the legend names it: a list's items joined, None when empty."""
    if _is_list(value):
        return "; ".join(str(item) for item in value) or None
    return str(value)


def _most_common_member(series: pd.Series) -> pd.Series:
    """Each paper's most common member of a list column (over the whole column; the first in
    alphabetical order on a tie; a value not a list is its own member), None for a paper with an
    empty list or none."""
    import pandas as pd

    members = series.map(
        lambda value: [str(item) for item in value] if _is_list(value) else [] if pd.isna(value) else [str(value)]
    )
    counts = members.explode().dropna().value_counts()
    rank = {member: (-count, member) for member, count in counts.items()}
    return members.map(lambda items: min(items, key=rank.__getitem__) if items else None)


def _ramp(count: int) -> list[str]:
    """``count`` colours from the first of ``SCALE`` to the last, evenly."""
    stops = np.array([[int(colour[i : i + 2], 16) for i in (1, 3, 5)] for colour in SCALE], dtype=np.float64)
    where = np.linspace(0, len(SCALE) - 1, count)
    channels = [np.interp(where, np.arange(len(SCALE)), stops[:, c]) for c in range(3)]
    return ["#" + "".join(f"{round(value):02x}" for value in rgb) for rgb in zip(*channels, strict=True)]


def _kind_of(series: pd.Series) -> str:
    """A column's kind as ``map_colours`` colours it, told from its values: number, date, list or text."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "date"
    known = series.dropna()
    if len(known) and known.map(lambda value: isinstance(value, datetime.date)).all():
        return "date"
    if len(known) and known.map(_is_list).any():
        return "list"
    return "text"


def _scale(series: pd.Series, title: str, kind: str) -> dict:
    """Numbers or dates as a scale: the lowest value in the first colour, the highest in the last."""
    import pandas as pd

    codes = np.full(len(series), -1, dtype=np.int16)
    if kind == "date":
        days = pd.to_datetime(series, errors="coerce")
        numbers = np.where(days.notna(), days.to_numpy(dtype="datetime64[D]").astype(np.int64), np.nan)
    else:
        numbers = series.to_numpy(dtype=np.float64, na_value=np.nan)
    known = np.isfinite(numbers)
    low, high = (numbers[known].min(), numbers[known].max()) if known.any() else (0.0, 0.0)
    codes[known] = np.round((numbers[known] - low) / ((high - low) or 1.0) * (SCALE_STEPS - 1))
    if kind == "date":
        ends = [str(np.datetime64(int(end), "D")) for end in (low, high)] if known.any() else ["", ""]
    else:
        ends = [f"{low:g}", f"{high:g}"]
    legend = {"kind": "scale", "low": ends[0], "high": ends[1], "colours": SCALE}
    if (missing := int((~known).sum())) > 0:
        legend["missing"] = f"no value ({missing:,})"
    return {"title": title, "values": _base64(codes, np.int16), "palette": _ramp(SCALE_STEPS), "legend": legend}


def map_colours(values, title: str, kind: str | None = None) -> dict:
    """The payload's ``colour`` (``map.js`` draws it in place of the topics' colours, with a
    legend): ``values`` has one value per paper, in row order; ``kind`` (as ``PaperIndex.columns``
    names it; default: told from the values). Numbers (not booleans) and dates are a scale from the
    lowest to the highest; a list colours each paper by its most common member; anything else is
    categories: the ``COLOUR_CATEGORIES`` most common values in colours, the rest "other", missing
    values grey. Values in the legend and the tooltip are on one line, unprintable characters
    escaped (``\\x07``); ``map.js`` writes them as text, never as HTML."""
    import pandas as pd

    series = pd.Series(values).reset_index(drop=True)
    kind = kind or _kind_of(series)
    if kind in ("number", "date"):
        return _scale(series, title, kind)
    text = _most_common_member(series) if kind == "list" else series.map(_as_text, na_action="ignore")
    counts = text.value_counts()
    named = sorted(counts.index, key=lambda value: (-counts[value], value))[:COLOUR_CATEGORIES]
    number = {value: i for i, value in enumerate(named)}
    codes = text.map(number).fillna(len(named)).where(text.notna(), -1).to_numpy(dtype=np.int16)
    palette = [*PALETTE[: len(named)], OTHER_COLOUR]
    names = [shown(value, LEGEND_CHARS) for value in named]
    items = [
        {"text": f"{name} ({counts[value]:,})", "colour": PALETTE[i]}
        for i, (name, value) in enumerate(zip(names, named, strict=True))
    ]
    if (rest := int(counts.sum() - counts[named].sum())) > 0:
        items.append({"text": f"other ({rest:,})", "colour": OTHER_COLOUR})
    if (missing := int(text.isna().sum())) > 0:
        items.append({"text": f"no value ({missing:,})", "colour": UNCLUSTERED_COLOUR})
    legend = {"kind": "categories", "items": items}
    title = f"{title} (most common member)" if kind == "list" else title
    colour = {"title": title, "values": _base64(codes, np.int16), "palette": palette, "legend": legend}
    return colour | {"names": [*names, "other"]}


def map_script() -> tuple[str, str]:
    """The map's JavaScript and CSS."""
    return (HERE / "map.js").read_text(encoding="utf-8"), (HERE / "map.css").read_text(encoding="utf-8")


def map_page(payload: dict, title: str) -> str:
    """A self-contained interactive map page: no network access, the data inside. Hover shows
    titles, the search box finds titles, a click stars a paper and joins it to its nearest papers
    (when the payload has ``knn``)."""
    script, style = map_script()
    # JSON inside <script>: "</" and "<!--" must not end or open anything in HTML.
    data = json.dumps(payload, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body {{margin: 0; padding: 8px 12px;}} h1 {{font: 600 16px system-ui, sans-serif; margin: 0 0 6px 0;}}
{style}</style></head>
<body>{f"<h1>{html.escape(title)}</h1>" if title else ""}<div id="map"></div>
<script>{script}
const PAYLOAD = {data};
const map = paperscopeMap(document.getElementById("map"), PAYLOAD, (name, row) => {{
  if (name === "click") map.selectLocally(row);
}});
</script></body></html>
"""
    return page


def save_html(payload: dict, path: Path, title: str) -> None:
    """Write ``map_page`` to ``path``."""
    path.write_text(map_page(payload, title), encoding="utf-8")


def notebook_map(papers: pd.DataFrame, fine_topics: pd.DataFrame, coarse_topics: pd.DataFrame, height: int = 620):
    """The interactive map in a Jupyter notebook (an isolated frame holding ``map_page``)."""
    from IPython.display import HTML

    page = map_page(map_payload(papers, fine_topics, coarse_topics, key="notebook") | {"search": True}, "")
    frame = f'<iframe srcdoc="{html.escape(page)}" style="width: 100%; height: {height}px; border: 0"></iframe>'
    return HTML(frame)


def point_colours(colour: dict) -> list[str]:
    """Each paper's colour in ``colour`` (from :func:`map_colours`), in row order: grey for no value."""
    palette = colour["palette"]
    codes = np.frombuffer(base64.b64decode(colour["values"]), dtype=np.int16)
    return [UNCLUSTERED_COLOUR if code < 0 else palette[code % len(palette)] for code in codes]


def _as_matplotlib_text(text: str) -> str:
    """Text matplotlib draws as written: a "$" would start its mathtext."""
    return text.replace("$", r"\$")


def _png_legend(figure, colour: dict) -> None:
    """The legend of a map coloured by a column, right of the map (never over a label): a swatch
    per category, or the scale from its lowest value to its highest."""
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D

    axes, legend = figure.axes[0], colour["legend"]
    title = _as_matplotlib_text(colour["title"])
    if legend["kind"] == "scale":
        scale = axes.inset_axes([1.02, 0.95, 0.22, 0.02])
        scale.imshow(np.linspace(0, 1, 256)[None, :], aspect="auto", cmap=ListedColormap(colour["palette"]))
        scale.set_yticks([])
        scale.set_xticks([0, 255], [_as_matplotlib_text(legend["low"]), _as_matplotlib_text(legend["high"])])
        scale.tick_params(labelsize=10)
        scale.set_title(title, fontsize=11, loc="left")
        return
    handles = [
        Line2D([], [], marker="o", linestyle="", color=item["colour"], label=_as_matplotlib_text(item["text"]))
        for item in legend["items"]
    ]
    axes.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10,
                title_fontsize=11, frameon=False)  # fmt: skip


PNG_INCHES, PNG_DPI = 12.0, 110  # the map's side: 1,320 pixels
PNG_FONT_SIZES = (
    8.5,
    16.0,
)  # a label's size, from the smallest topic's to the largest's (by the square root of its papers)
PNG_WRAP = 22  # a label's line, in characters
PNG_GAP = 3.0  # pixels kept between two labels
PNG_REACH = 90.0  # the farthest, in pixels, a label's centre moves from its anchor to find room
GLOW_CELLS = 320  # the glow under each topic: its papers' density on a grid of this many cells a side, blurred


def _text_colour(colour: str) -> str:
    """A dark, less saturated shade of ``colour`` for a label's text, dark enough to read on white
    (WCAG contrast at least 4.5)."""
    import colorsys

    from matplotlib.colors import to_hex, to_rgb

    hue, light, saturation = colorsys.rgb_to_hls(*to_rgb(colour))
    light, saturation = min(light * 0.6, 0.34), saturation * 0.8
    while True:
        rgb = colorsys.hls_to_rgb(hue, light, saturation)
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        if 1.05 / (0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2] + 0.05) >= 4.5 or light <= 0:
            return to_hex(rgb)
        light -= 0.03


def _glow(axes, coords: np.ndarray, topics: np.ndarray, colours: dict[int, str], extent) -> None:
    """A soft halo under each topic: its papers' density, blurred, in its colour, each topic's
    densest part strongest; one image for all (a contour per topic took seconds)."""
    from matplotlib.colors import to_rgb
    from scipy.ndimage import gaussian_filter

    low_x, high_x, low_y, high_y = extent
    densities = {}
    for topic in colours:
        mine = coords[topics == topic]
        counts, _, _ = np.histogram2d(mine[:, 1], mine[:, 0], GLOW_CELLS, [[low_y, high_y], [low_x, high_x]])
        densities[topic] = gaussian_filter(counts, GLOW_CELLS / 90)
    floor = 0.2 * max((float(d.max()) for d in densities.values()), default=1.0)  # a few papers glow faintly
    image = np.zeros((GLOW_CELLS, GLOW_CELLS, 4))
    for topic, density in densities.items():
        alpha = 0.3 * np.sqrt(density / max(float(density.max()), floor, 1e-12))
        alpha[alpha < 0.04] = 0  # no haze over the whole map
        image[..., :3] = image[..., :3] * (1 - alpha[..., None]) + np.multiply.outer(alpha, to_rgb(colours[topic]))
        image[..., 3] = image[..., 3] + alpha * (1 - image[..., 3])
    image[..., :3] /= np.maximum(image[..., 3:], 1e-12)  # the colours were weighted by their alpha as they were laid
    axes.imshow(image, extent=extent, origin="lower", interpolation="bilinear", zorder=0, aspect="auto")


def _free_spot(size, anchors, placed: list, frame) -> tuple[float, float] | None:
    """Where a label of ``size`` (width, height in pixels) fits: its centre on one of ``anchors``
    (pixels) or up to ``PNG_REACH`` from one, its box inside ``frame`` and clear of the boxes
    ``placed`` (x0, y0, x1, y1, with ``PNG_GAP`` between); None if nowhere."""
    half_w, half_h = size[0] / 2 + PNG_GAP, size[1] / 2 + PNG_GAP
    boxes = np.asarray(placed, dtype=np.float64).reshape(-1, 4)
    for radius in np.arange(0.0, PNG_REACH + 1, 6.0):
        turns = [0.0] if radius == 0 else np.linspace(0, 2 * np.pi, max(8, int(radius / 3)), endpoint=False)
        for ax, ay in anchors:
            for turn in turns:
                x, y = ax + radius * np.cos(turn), ay + radius * np.sin(turn)
                if x - half_w < frame[0] or x + half_w > frame[2] or y - half_h < frame[1] or y + half_h > frame[3]:
                    continue
                clear = (boxes[:, 0] >= x + half_w) | (boxes[:, 2] <= x - half_w)
                clear |= (boxes[:, 1] >= y + half_h) | (boxes[:, 3] <= y - half_h)
                if clear.all():
                    return float(x), float(y)
    return None


def _place_labels(axes, renderer, labels: list[dict]) -> None:
    """Each label (text, colour, size, weight, anchors in data units; largest topic first) drawn as
    an Annotation of its anchor, over its topic's papers, where it overlaps no label placed before;
    a label with no room is made a point smaller until it finds some."""
    import matplotlib.patheffects as effects

    to_pixels, frame = axes.transData, axes.bbox.extents
    placed: list[tuple[float, float, float, float]] = []
    for label in labels:
        anchors = to_pixels.transform(label["anchors"])
        text = axes.annotate(
            label["text"], xy=label["anchors"][0], ha="center", va="center", color=label["colour"],
            fontweight=label["weight"], linespacing=1.05, zorder=4,
            path_effects=[effects.withStroke(linewidth=3, foreground="white", alpha=0.85)],
        )  # fmt: skip
        for size in np.arange(label["size"], 5.5, -1.0):
            text.set_fontsize(size)
            box = text.get_window_extent(renderer)
            spot = _free_spot((box.width, box.height), anchors, placed, frame)
            if spot is not None:
                break
        else:
            spot = tuple(anchors[0])  # nowhere: on its topic (no map of a few dozen topics gets here)
        nearest = anchors[np.argmin(np.linalg.norm(anchors - spot, axis=1))]
        text.xy = tuple(to_pixels.inverted().transform(nearest))
        text.set_position(tuple(to_pixels.inverted().transform(spot)))
        placed.append(
            (spot[0] - box.width / 2, spot[1] - box.height / 2, spot[0] + box.width / 2, spot[1] + box.height / 2)
        )


def _png_labels(papers: pd.DataFrame, topic_column: str, name_column: str) -> list[dict]:
    """The labels of the PNG, largest topic first: text (wrapped), colour, size and weight by the
    topic's papers, anchors (:func:`label_anchors`)."""
    import textwrap

    import pandas as pd

    topics = papers[topic_column].to_numpy(dtype=np.int64)
    kept = topics >= 0
    if not kept.any():
        return []
    sizes = pd.Series(topics[kept]).value_counts()
    names = dict(zip(topics[kept].tolist(), papers[name_column].to_numpy(dtype=object)[kept], strict=True))
    anchors = label_anchors(papers["x"], papers["y"], topics)
    low, high = np.sqrt(sizes.min()), np.sqrt(sizes.max())
    labels = []
    for topic, size in zip(sizes.index.tolist(), sizes.tolist(), strict=True):
        share = (np.sqrt(size) - low) / (high - low) if high > low else 1.0
        wrapped = textwrap.fill(str(names[topic]), PNG_WRAP, break_long_words=False, break_on_hyphens=False)
        labels.append({
            "text": _as_matplotlib_text(wrapped), "colour": _text_colour(PALETTE[topic % len(PALETTE)]),
            "size": PNG_FONT_SIZES[0] + share * (PNG_FONT_SIZES[1] - PNG_FONT_SIZES[0]),
            "weight": 500 + 100 * round(2 * share), "anchors": anchors[topic],
        })  # fmt: skip
    return labels


def save_png(papers: pd.DataFrame, path: Path, title: str, colour: dict | None = None):
    """A labelled static map drawn with matplotlib: each topic named over its own papers (no long
    lines to follow; none overlapping), sized by topic, in a dark shade of its colour (the colours
    of the app's map), over a soft glow of its papers' density. Points are named by the papers' own
    topic columns, those of the current map: the coarse topics, as the app names them on the whole
    map (fine ones only where no paper has a coarse topic). The PNG's Description says the names
    drawn. ``colour`` (from :func:`map_colours`): the points in a column's colours instead, with its
    legend beside the map (the labels keep their topics' shades). Returns the matplotlib figure."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # Roboto: Debian's fonts-roboto (.ci/setup)
    coarse = bool((papers["coarse_cluster"] >= 0).any())
    topic_column, name_column = ("coarse_cluster", "coarse_name") if coarse else ("cluster", "cluster_name")
    topics = papers[topic_column].to_numpy(dtype=np.int64)
    coords = papers[["x", "y"]].to_numpy(dtype=np.float64)
    figure = Figure(figsize=(PNG_INCHES, PNG_INCHES + 0.9), dpi=PNG_DPI)
    with matplotlib.rc_context({"font.family": ["Roboto", "DejaVu Sans"]}):
        renderer = FigureCanvasAgg(figure).get_renderer()
        axes = figure.add_axes((0.0, 0.0, 1.0, PNG_INCHES / (PNG_INCHES + 0.9)))
        centre = (coords.min(axis=0) + coords.max(axis=0)) / 2 if len(coords) else np.zeros(2)
        half = max(float(np.ptp(coords, axis=0).max()) if len(coords) else 1.0, 1e-9) * 0.54
        extent = (centre[0] - half, centre[0] + half, centre[1] - half, centre[1] + half)
        axes.set_xlim(extent[:2])
        axes.set_ylim(extent[2:])
        axes.set_xticks([])
        axes.set_yticks([])
        for spine in axes.spines.values():
            spine.set_color("#bbbbbb")
        kept = sorted({int(t) for t in topics if t >= 0})
        _glow(axes, coords, topics, {t: PALETTE[t % len(PALETTE)] for t in kept}, extent)
        points = point_colours(colour) if colour else cluster_colours(topics)
        order = np.argsort(topics >= 0, kind="stable")  # the unclustered first, under the topics' papers
        axes.scatter(
            coords[order, 0],
            coords[order, 1],
            s=float(np.clip(12_000 / max(len(coords), 1), 4, 24)),
            c=[points[i] for i in order],
            linewidths=0,
            zorder=2,
        )
        figure.text(0.005, 0.995, "paperscope topic map", fontsize=20, fontweight="bold", va="top")
        figure.text(0.005, 0.955, _as_matplotlib_text(title), fontsize=13, color="#777777", va="top")
        labels = _png_labels(papers, topic_column, name_column)
        _place_labels(axes, renderer, labels)
        if colour:
            _png_legend(figure, colour)
        named = "\n".join(sorted({str(name) for name in papers[name_column] if name != UNCLUSTERED_NAME}))
        metadata = {"Title": title, "Description": f"topics named:\n{named}"}
        figure.savefig(path, format="png", bbox_inches="tight", metadata=metadata)
    return figure


def export_map(
    papers: pd.DataFrame,
    fine_topics: pd.DataFrame,
    coarse_topics: pd.DataFrame,
    path: str | Path,
    title: str = "",
    knn: np.ndarray | None = None,
    colour: dict | None = None,
) -> Path:
    """Write the map as ``.png`` (static, labelled) or ``.html`` (interactive, self-contained,
    offline); ``knn`` (papers × k rows, nearest first) lets a click in the HTML show neighbours;
    ``colour`` (``map_colours`` of a column's values): the points in its colours, with a legend."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".html"):
        raise UserError(f"{path}: the map is written as .png or .html")
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such folder")
    with atomic_path(path) as temporary:
        if suffix == ".png":
            save_png(papers, temporary, title, colour)
        else:
            payload = map_payload(papers, fine_topics, coarse_topics, key=title, knn=knn)
            save_html(payload | {"search": True} | ({"colour": colour} if colour else {}), temporary, title)
    return path
