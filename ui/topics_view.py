"""The dashboard's topics panel: the topics of either level, their shares over the years, and the
papers between two topics. It only draws what :mod:`paperscope.index.analysis.corpus` computes."""

from __future__ import annotations

import streamlit as st

from paperscope.errors import UserError
from paperscope.index.analysis.topics import bridges, topic_overview, topics_by_year


def _over_time(shares, selected: list[str]) -> None:
    """The chart of the topics' shares over the years (``selected`` topics, or the five largest)."""
    years = [column for column in shares.columns if isinstance(column, int)]
    if len(years) == 1:
        st.caption(f"Only one year in this corpus ({years[0]}): no change over time to show.")
        return
    shown = shares[shares["name"].isin(selected)] if selected else shares.nlargest(5, years[-1])
    chart = shown.set_index("name")[years].T
    chart.index = chart.index.astype(str)
    st.line_chart(chart, x_label="year", y_label="share of the year's papers")
    grew, shrank = shares.iloc[0], shares.iloc[-1]
    st.caption(
        f"Grew most: {grew['name']} ({grew['change'] * 100:+.1f} points, {years[0]}–{years[-1]}); "
        f"shrank most: {shrank['name']} ({shrank['change'] * 100:+.1f} points)."
    )


def topics_panel(index, level: str, selected: list[str]) -> None:
    """Three tabs about the topics of ``level``; ``selected`` names the topics picked in the
    sidebar (the chart over time shows them, or the five largest)."""
    overview = topic_overview(index, level)
    listing, over_time, between = st.tabs(["Topics", "Over time", "Between two topics"])
    with listing:
        st.dataframe(
            overview[["name", "size", "share", "map_trust"]].rename(
                columns={"name": "topic", "size": "papers", "map_trust": "map trust"}
            ),
            hide_index=True,
            column_config={
                "share": st.column_config.ProgressColumn("share", format="percent", min_value=0.0, max_value=1.0),
                "map trust": st.column_config.NumberColumn(format="%.2f"),
            },
        )
    with over_time:
        try:
            shares = topics_by_year(index, level)
        except UserError as exc:
            st.caption(str(exc))
        else:
            _over_time(shares, selected)
    with between:
        if len(overview) < 2:
            st.caption("This index has fewer than two topics at this level.")
            return
        names = overview["name"].tolist()
        first_column, second_column = st.columns(2)
        first = first_column.selectbox("Topic A", names, index=0, key="bridge_a")
        second = second_column.selectbox("Topic B", names, index=1, key="bridge_b")
        if first == second:
            st.caption("Pick two different topics.")
            return
        asked = (first, second, level)
        if st.button("Find the papers between them", key="bridge_go"):
            st.session_state["bridge_asked"] = asked
        if st.session_state.get("bridge_asked") != asked:  # on demand: over large topics it takes seconds
            return
        number = dict(zip(overview["name"], overview["cluster"], strict=True))
        found = bridges(index, number[first], number[second], level=level)
        if found.empty:
            st.caption("No paper has nearest neighbours in both topics.")
            return
        st.caption("Papers whose 10 nearest papers fall in both topics, most evenly split first.")
        st.dataframe(
            found[["title", "topic", "in_a", "in_b", "balance"]].rename(
                columns={"topic": "its topic", "in_a": "in A", "in_b": "in B"}
            ),
            hide_index=True,
            column_config={"balance": st.column_config.NumberColumn(format="%.2f")},
        )
