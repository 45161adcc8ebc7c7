"""The store: the index folder on disk (generations, manifest, keyword index files, checksums, identity, curations)."""
