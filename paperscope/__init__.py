"""paperscope: a semantic similarity explorer for research-paper abstracts.

    from paperscope import PaperIndex
    index = PaperIndex.load("myindex")
    index.similar("paper-id", k=10)

The public names are imported on first use, so ``import paperscope`` (and the command line's
``--help``) stays light; the code lives in the subpackages ``embed``, ``index`` and ``ui``.
"""

from importlib import import_module

_PUBLIC = {
    "PaperIndex": "paperscope.index.paper_index",
    "build_index": "paperscope.index.build.pipeline",
    "sample_index": "paperscope.index.build.pipeline",
    "UserError": "paperscope.errors",
    "BuildSettings": "paperscope.settings",
    "QuerySettings": "paperscope.settings",
    "Fields": "paperscope.settings",
    "Smoothing": "paperscope.settings",
    "Feedback": "paperscope.settings",
    "TopicSeeds": "paperscope.settings",
    "SeedTopic": "paperscope.settings",
    "TopicSettings": "paperscope.settings",
    "LayoutSettings": "paperscope.settings",
    "ClusterSettings": "paperscope.settings",
    "NamingSettings": "paperscope.settings",
    "read_seed_topics": "paperscope.embed.seed_file",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'paperscope' has no attribute {name!r}")
    return getattr(import_module(_PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
