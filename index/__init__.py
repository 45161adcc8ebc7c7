"""The index folder: ``build_index`` writes it, ``PaperIndex.load`` reads it."""

from index import locations
from index.analysis import near_duplicates, outliers
from index.build import BuildReport, build_index, sample_index
from index.paper_index import PaperIndex

__all__ = ["BuildReport", "PaperIndex", "build_index", "locations", "near_duplicates", "outliers", "sample_index"]
