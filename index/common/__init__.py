"""What the index's rooms share, below them all: the papers' table, the keyword index, k-means."""
