"""Reading corpora and turning abstracts into vectors (``readers``, ``model``); imports nothing itself."""
