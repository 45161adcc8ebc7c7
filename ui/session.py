"""The app's ``st.session_state`` in one place: the name of each value it keeps between reruns
(:class:`Key`; a widget given ``key=Key.X`` keeps its value there) and what the results answer
(:class:`View`, the values that change together when a user asks something else).

A value a page keeps under a name of its own making (a card's ``why-ID``, a collection's
``collection_…`` widgets) is named where it is made.
"""

from __future__ import annotations

from typing import Final, TypedDict


class Key:
    """The session state's names."""

    PAPERS: Final = "papers"  # ids picked: more like these (the picker's value)
    NOT_PAPERS: Final = "not_papers"  # ids picked: less like these
    QUERY: Final = "query"  # the text query
    LIKE_SET: Final = "like_set"  # ids of a set of papers liked (a map selection's "more like these")
    LASSO: Final = "lasso"  # ids of the map's lasso selection
    COLLECTION: Final = "collection"  # the collection shown (also the URL's parameter)
    SHOWN: Final = "shown"  # ids of the results shown, best first
    TITLE_MATCHES: Final = "title_matches"  # ids of the papers whose titles hold the words last typed in the picker
    PICKER_NOTE: Final = "picker_note"  # what the picker says of the words last typed there, shown once
    K: Final = "k"  # how many results
    MODE: Final = "mode"  # the ranking mode
    TOPIC_LEVEL: Final = "topic_level"  # coarse or fine topics on the cards and the map
    EXPLAIN: Final = "explain"  # whether an opened card says why it is similar
    SIDEBAR_OPENED: Final = "sidebar_opened"  # the sidebar was opened in this session: its settings are drawn
    FILTER_COLUMN: Final = "filter_column"  # the column the sidebar filters by
    COLOUR_BY: Final = "colour_by"  # the column the map and the cards are coloured by
    INDEX_LABEL: Final = "index_label"  # the index chosen (the bundled sample or one built from an upload)
    MAP: Final = "map"  # the map component's last event (a click, a lasso)
    PENDING: Final = "pending"  # widget values to set on the next run (only before the widgets exist)
    URL_READ: Final = "url_read"  # the URL's parameters were read into the state (once a session)
    BUILT_UPLOAD: Final = "built_upload"  # the file id of the upload last built, not to build it twice
    CURATED: Final = "curated"  # what the last correction of the topics said, shown on the next run
    BRIDGE_ASKED: Final = "bridge_asked"  # the two topics whose bridge papers were last asked for
    COLLECTION_REMOVE: Final = "collection_remove"  # members picked to remove from the collection shown
    COLLECTION_DELETE_SURE: Final = "collection_delete_sure"  # the box ticked before a collection is deleted
    COLLECTION_IMPORT_FILE: Final = "collection_import_file"  # the library file uploaded into a collection
    COLLECTION_IMPORT_NAME: Final = "collection_import_name"  # the collection it goes into


class View(TypedDict, total=False):
    """What the results answer (``app._view``): the values set together when a user asks anew."""

    papers: list[str]
    not_papers: list[str]
    query: str
    like_set: list[str]
    lasso: list[str]
    collection: str | None
