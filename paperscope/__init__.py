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
    "read_seed_topics": "paperscope.embed.seeds",
}
_MOVED = {"near_duplicates": "duplicates", "outliers": "outliers"}  # until 0.3: now verbs of PaperIndex
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _MOVED:
        return _moved(name)
    if name not in _PUBLIC:
        raise AttributeError(f"module 'paperscope' has no attribute {name!r}")
    return getattr(import_module(_PUBLIC[name]), name)


def _moved(name: str):
    """The function ``paperscope.<name>(index, ...)`` of earlier releases: the verb it became, with
    a DeprecationWarning naming it."""
    import warnings

    from paperscope.errors import PaperscopeDeprecationWarning

    def call(index, *args, **kwargs):
        warnings.warn(
            f"paperscope.{name}(index) is index.{_MOVED[name]}() now; the old name goes in 0.3",
            PaperscopeDeprecationWarning,
            stacklevel=2,
        )
        return getattr(index, _MOVED[name])(*args, **kwargs)

    return call


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
