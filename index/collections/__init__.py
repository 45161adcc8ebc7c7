"""Collections: your own library of papers, kept beside the index (SQLite), with recommendations and a feed."""
