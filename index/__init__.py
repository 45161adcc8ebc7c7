"""The index folder: ``build`` writes it, ``paper_index`` reads it; imports nothing itself."""
