"""The store: the index folder on disk (generations, manifest, checksums) and the papers' table as read back."""
