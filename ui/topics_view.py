"""The dashboard's topics panel: the topics of either level (renamed or merged here), their shares
over the years (or by venue, category…), two groups of papers compared, and the papers between
two topics. It only draws what ``PaperIndex.topics`` computes, and corrects the topics
through it."""

from __future__ import annotations

import streamlit as st

from paperscope.errors import UserError, shown
from paperscope.ui.app_access import READ_ONLY_NOTE, audited, read_only
from paperscope.ui.collections_view import plain
from paperscope.ui.session import Key

MAX_GROUP_CHOICES = 500  # values a group can be picked from (the most common)


def _over_time(shares, selected: list[str]) -> None:
    """The chart of the topics' shares over the years (``selected`` topics, or the five largest)."""
    years = shares.attrs["values"]
    if len(years) == 1:
        st.caption(f"Only one year in this corpus ({years[0]}): no change over time to show.")
        return
    topics = shares[shares["cluster"] >= 0]
    shown = topics[topics["name"].isin(selected)] if selected else topics.nlargest(5, years[-1])
    chart = shown.set_index("name")[years].T
    chart.index = chart.index.astype(str)
    st.line_chart(chart, x_label="year", y_label="share of the year's papers")
    grew, shrank = topics.iloc[0], topics.iloc[-1]
    st.caption(
        f"Grew most: {grew['name']} ({grew['change'] * 100:+.1f} points, {years[0]}–{years[-1]}); "
        f"shrank most: {shrank['name']} ({shrank['change'] * 100:+.1f} points)."
    )


def _by_value(shares) -> None:
    """The table of the topics' shares of each value's papers (a column other than year)."""
    column, values, papers = shares.attrs["column"], shares.attrs["values"], shares.attrs["papers"]
    headers = {
        value: f"{shown(value)} ({papers[value]})" for value in values
    }  # on one line, control characters escaped
    st.dataframe(
        shares[["name", *values]].rename(columns={"name": "topic", **headers}),
        hide_index=True,
        column_config={header: st.column_config.NumberColumn(format="percent") for header in headers.values()},
    )
    st.caption(
        f"Each topic's share of the papers with each value of {plain(shown(column))} (their number in brackets), "
        "most common first."
    )


def _by_column(index, level: str, selected: list[str], columns: list[str]) -> None:
    """The topics' shares by the column the user picks (year first when the corpus has years)."""
    column = st.selectbox(
        "Topics by", columns, index=columns.index("year") if "year" in columns else 0, key="topics_by"
    )
    shares = index.topics.by(column, level)
    if column == "year" or shares.attrs.get("over_time"):  # years, or a column of dates by year
        _over_time(shares, selected)
    else:
        _by_value(shares)


def _compared(index, level: str, columns: list[str]) -> None:
    """Two groups of papers (a column, a value for each) and the topics over-represented in each."""
    st.markdown("**Compare two groups**")
    column_box, a_box, b_box = st.columns(3)
    column = column_box.selectbox("Column", columns, key="compare_column")
    counts = index.topics.values(column).value_counts()
    values = sorted(counts.index) if column == "year" else counts.index.tolist()  # by count, most common first
    values = values[:MAX_GROUP_CHOICES] if column != "year" else values
    if len(values) < 2:
        st.caption(
            f"The papers have one {plain(shown(column))} only ({plain(shown(values[0]))}): "
            "pick a column with two values or more."
        )
        return
    first = a_box.selectbox("Group A", values, index=0, format_func=shown, key=f"compare_a_{column}")
    second = b_box.selectbox("Group B", values, index=1, format_func=shown, key=f"compare_b_{column}")
    if first == second:
        st.caption("Pick two different values.")
        return
    compared = index.topics.compare((column, first), (column, second), level)
    in_a, in_b = compared.attrs["papers"]
    st.dataframe(
        compared[["name", "papers_a", "papers_b", "share_a", "share_b", "ratio"]].rename(
            columns={
                "name": "topic",
                "papers_a": "papers in A",
                "papers_b": "papers in B",
                "share_a": "share of A",
                "share_b": "share of B",
            }
        ),
        hide_index=True,
        column_config={
            "share of A": st.column_config.NumberColumn(format="percent"),
            "share of B": st.column_config.NumberColumn(format="percent"),
            "ratio": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    st.caption(
        f"A: {plain(shown(column))}={plain(shown(first))} ({in_a} papers); "
        f"B: {plain(shown(column))}={plain(shown(second))} ({in_b} papers). Ratio: share of A over "
        "share of B; most over-represented in A first, in B last."
    )


def _curate(index, change, message: str, then: dict) -> None:
    """Run ``change`` (a correction of the index's topics, written beside it; recorded in the audit
    log), then show ``message`` and set the widgets ``then`` on the next run (the app's "pending"
    state; the new curations give the index a new cache key, so the next run loads it anew); an
    error shows here."""
    try:
        audited(message, index.folder, change)
    except UserError as exc:
        st.error(str(exc))
        return
    st.session_state[Key.CURATED] = message
    st.session_state[Key.PENDING] = {**st.session_state.get(Key.PENDING, {}), **then}
    st.rerun()


def _corrections(index, overview, level: str) -> None:
    """Rename the topic picked, or merge two: kept beside the index, applied whenever it loads."""
    if message := st.session_state.pop(Key.CURATED, None):
        st.success(message)
    for sentence in index.topics.report:
        st.warning(sentence)
    names = overview["name"].tolist()
    number = dict(zip(overview["name"], overview["cluster"], strict=True))
    st.markdown("**Correct the topics**")
    if read_only():
        st.caption(READ_ONLY_NOTE)
        return
    topic_box, name_box, button_box = st.columns([4, 4, 2], vertical_alignment="bottom")
    topic = topic_box.selectbox("Topic", names, key=f"curate_topic_{level}")
    name = name_box.text_input("New name", key=f"curate_name_{level}", placeholder=topic)
    if button_box.button("Rename", key="curate_rename", disabled=not name.strip()):
        then = {f"curate_topic_{level}": " ".join(name.split()), f"curate_name_{level}": ""}
        renamed = f"Renamed '{topic}' to '{name}'."
        _curate(index, lambda: index.topics.rename(number[topic], name, level), renamed, then)
    if len(names) < 2:
        return
    merged_box, kept_box, button_box = st.columns([4, 4, 2], vertical_alignment="bottom")
    merged = merged_box.selectbox("Merge topic", names, index=1, key=f"curate_merged_{level}")
    kept = kept_box.selectbox("into", names, index=0, key=f"curate_kept_{level}")
    if button_box.button("Merge", key="curate_merge", disabled=merged == kept):
        message = f"Merged '{merged}' into '{kept}'."
        _curate(index, lambda: index.topics.merge(number[kept], number[merged], level=level), message, {})
    st.caption("Corrections are kept beside the index (curations.json) and applied whenever it is loaded; "
               "`paperscope topics curations` lists them.")  # fmt: skip


def _maps(index) -> None:
    """The maps of the index side by side: the one shown is chosen here ("Map"), and "Re-map" makes
    another with a number of topics from the stored layout, in seconds, and shows it (both change
    the folder's current map: hidden in read-only mode)."""
    table = index.map.maps()
    usable = table[~table["stale"]]
    names, current = usable["name"].tolist(), index.map.current
    label = {row.name: f"{row.name} ({row.topics} topics)" for row in usable.itertuples()}
    map_box, topics_box, button_box = st.columns([5, 3, 2], vertical_alignment="bottom")
    chosen = map_box.selectbox(
        "Map", names, index=names.index(current), format_func=label.__getitem__, key=f"map_choice_{current}",
        disabled=read_only(), help="the maps of this index; paperscope remap and maps make and switch them too",
    )  # fmt: skip
    if chosen != current:
        _curate(index, lambda: index.map.use(chosen), f"Map '{chosen}' shown.", {})
    if read_only():
        return
    clusters = len(index.topics.table("fine"))
    if clusters < 2:
        return
    shown = min(max(2, len(index.topics.table("coarse"))), clusters)
    most = max(clusters, len(index) // 2)  # more than the fine clusters: a remap finds smaller ones (2 papers each)
    topics = topics_box.number_input("Topics", min_value=2, max_value=most, value=shown, step=1, key="remap_n")
    if button_box.button("Re-map", key="remap_go", help="re-cut and re-name the topics into this many"):
        with st.spinner(f"Re-mapping into {topics} topics…"):
            _curate(index, lambda: index.map.remap(int(topics)), f"Re-mapped into {topics} topics.", {})


def topics_panel(index, level: str, selected: list[str]) -> None:
    """Three tabs about the topics of ``level``; ``selected`` names the topics picked in the
    sidebar (the chart over time shows them, or the five largest)."""
    overview = index.topics.overview(level)
    listing, by_column, between = st.tabs(["Topics", "By year or column", "Between two topics"])
    with listing:
        _maps(index)
        st.dataframe(
            index.topics.overview(level, unclustered=True)[["name", "size", "share", "map_trust"]].rename(
                columns={"name": "topic", "size": "papers", "map_trust": "map trust"}
            ),
            hide_index=True,
            column_config={
                "share": st.column_config.ProgressColumn("share", format="percent", min_value=0.0, max_value=1.0),
                "map trust": st.column_config.NumberColumn(format="%.2f"),
            },
        )
        _corrections(index, overview, level)
    with by_column:
        columns = index.topics.columns()
        if not columns:
            st.caption("The papers have no year, venue, category or other column to split the topics by.")
        else:
            try:
                _by_column(index, level, selected, columns)
                _compared(index, level, columns)
            except UserError as exc:
                st.caption(str(exc))
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
            st.session_state[Key.BRIDGE_ASKED] = asked
        if st.session_state.get(Key.BRIDGE_ASKED) != asked:  # on demand: over large topics it takes seconds
            return
        number = dict(zip(overview["name"], overview["cluster"], strict=True))
        found = index.topics.bridges(number[first], number[second], level=level)
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
