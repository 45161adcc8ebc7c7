"""Reading corpora and turning abstracts into vectors (``corpus``, ``model``); imports nothing itself."""
