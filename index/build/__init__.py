"""Building: read and embed a corpus (local or Ray engine), FAISS, keyword index, smoothing; add papers later."""
