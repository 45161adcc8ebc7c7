"""Reading corpora and turning abstracts into vectors: ``read_corpus`` and ``Encoder``."""

from embed.cache import EmbeddingCache, encode_with_cache
from embed.corpus import ReadReport, read_corpus
from embed.errors import UserError
from embed.model import LONG_TEXT_STRATEGIES, Encoder
from embed.text import normalise_text, split_sentences
from embed.titles import derive_title

__all__ = ["EmbeddingCache", "Encoder", "LONG_TEXT_STRATEGIES", "ReadReport", "UserError", "derive_title",
           "encode_with_cache", "normalise_text", "read_corpus", "split_sentences"]
