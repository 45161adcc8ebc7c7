"""The curation room: corrections to the topics (rename, merge, split, move) as typed operations,
the rules that apply them to a loaded index's topic columns and tables, the k-means splits and the
names of a split's parts. The log itself (``curations.json``) is read and written by
:mod:`paperscope.index.store.curations`; a load applies it with :mod:`.rules` (no build code)."""
