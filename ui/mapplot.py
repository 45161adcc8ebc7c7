"""Drawing the topic map the index stores: an interactive Plotly figure (app, HTML export) and a
static PNG (matplotlib). Nothing here computes a layout; it only draws the columns x, y,
cluster, cluster_name and the clusters table."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd

from paperscope.errors import UserError
from paperscope.files import atomic_path

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


def cluster_colours(labels) -> list[str]:
    """One colour per paper: its cluster's, grey for unclustered papers."""
    return [UNCLUSTERED_COLOUR if label < 0 else PALETTE[label % len(PALETTE)] for label in labels]


def _hover(papers: pd.DataFrame) -> list[str]:
    # Plotly renders hover text as HTML: escape what comes from the corpus.
    return [
        f"<b>{html.escape(title)}</b><br>{html.escape(cluster)} · map trust {trust:.0%}"
        for title, cluster, trust in zip(papers["title"], papers["cluster_name"], papers["map_trust"], strict=True)
    ]


def map_figure(
    papers: pd.DataFrame,
    clusters: pd.DataFrame,
    selected_rows=(),
    neighbour_rows=(),
    query_xy: np.ndarray | None = None,
    height: int = 560,
):
    """The interactive map: one WebGL point per paper coloured by cluster, cluster names at their
    centres, the selected paper or query joined by lines to its neighbours."""
    import plotly.graph_objects as go

    figure = go.Figure()
    figure.add_trace(
        go.Scattergl(
            x=papers["x"],
            y=papers["y"],
            mode="markers",
            customdata=papers["id"],
            marker={
                "size": 8 if len(papers) < 2000 else 4,
                "color": cluster_colours(papers["cluster"]),
                "opacity": 0.85,
                "line": {"width": 0},
            },
            hovertext=_hover(papers),
            hoverinfo="text",
            name="papers",
            showlegend=False,
        )
    )
    anchor = None
    if query_xy is not None:
        anchor = np.asarray(query_xy, dtype=float)
    elif len(selected_rows):
        anchor = papers[["x", "y"]].to_numpy()[list(selected_rows)].mean(axis=0)
    if anchor is not None and len(neighbour_rows):
        neighbour_xy = papers[["x", "y"]].to_numpy()[list(neighbour_rows)]
        line_x = [v for x in neighbour_xy[:, 0] for v in (anchor[0], x, None)]
        line_y = [v for y in neighbour_xy[:, 1] for v in (anchor[1], y, None)]
        figure.add_trace(
            go.Scattergl(
                x=line_x,
                y=line_y,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line={"color": "rgba(30,30,30,0.45)", "width": 1.5},
            )
        )
        figure.add_trace(
            go.Scattergl(
                x=neighbour_xy[:, 0],
                y=neighbour_xy[:, 1],
                mode="markers",
                hoverinfo="skip",
                showlegend=False,
                marker={"size": 13, "color": "rgba(0,0,0,0)", "line": {"color": "#111", "width": 2}},
            )
        )
    if anchor is not None:
        figure.add_trace(
            go.Scattergl(
                x=[anchor[0]],
                y=[anchor[1]],
                mode="markers",
                hoverinfo="skip",
                showlegend=False,
                marker={"size": 18, "symbol": "star", "color": "#ffd400", "line": {"color": "#111", "width": 1.5}},
            )
        )
    for row in clusters.itertuples():
        figure.add_annotation(
            x=row.x,
            y=row.y,
            text=f"<b>{html.escape(row.name)}</b>",
            showarrow=False,
            font={"size": 12, "color": "#111"},
            bgcolor="rgba(255,255,255,0.75)",
            borderpad=2,
        )
    figure.update_layout(
        height=height,
        margin={"l": 0, "r": 0, "t": 0, "b": 0},
        dragmode="pan",
        plot_bgcolor="white",
        hovermode="closest",
        clickmode="event+select",
    )
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False, scaleanchor="x")
    return figure


def save_png(papers: pd.DataFrame, clusters: pd.DataFrame, path: Path, title: str = "") -> None:
    """A labelled static map: points coloured by cluster, each cluster's name at its centre."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patheffects as effects
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(11, 8), dpi=130)
    size = 36 if len(papers) < 500 else max(2, 12000 / len(papers))
    axes.scatter(papers["x"], papers["y"], c=cluster_colours(papers["cluster"]), s=size, alpha=0.85, linewidths=0)
    for row in clusters.itertuples():
        axes.text(
            row.x,
            row.y,
            row.name,
            ha="center",
            va="center",
            fontsize=11,
            fontweight="bold",
            color="#111",
            path_effects=[effects.withStroke(linewidth=4, foreground="white")],
        )
    unclustered = int((papers["cluster"] < 0).sum())
    axes.set_title(title + (f"   (grey: {unclustered} unclustered)" if unclustered else ""), fontsize=12)
    axes.set_axis_off()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def export_map(papers: pd.DataFrame, clusters: pd.DataFrame, path: str | Path, title: str = "") -> Path:
    """Write the map as ``.png`` (static, labelled) or ``.html`` (interactive, self-contained, offline)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".html"):
        raise UserError(f"{path}: the map is written as .png or .html")
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such folder")
    with atomic_path(path) as temporary:
        if suffix == ".png":
            save_png(papers, clusters, temporary, title)
        else:
            map_figure(papers, clusters, height=800).write_html(
                temporary, include_plotlyjs=True, full_html=True, config={"scrollZoom": True}
            )
    return path
