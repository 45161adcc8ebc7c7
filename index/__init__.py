"""The index folder: ``build_index`` writes it, ``PaperIndex.load`` reads it."""

from index import locations
from index.build import BuildReport, build_index
from index.paper_index import PaperIndex

__all__ = ["BuildReport", "PaperIndex", "build_index", "locations"]
