"""What the benchmark scripts share: Markdown tables and JSON results."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import subprocess

from tests.support.servers import paperscope_server


def report(header: list[str], rows: list[list], results, json_path: str) -> None:
    """Print a Markdown table and write ``results`` as JSON."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")
    with open(json_path, "w") as handle:
        json.dump(results, handle, indent=2)


def parser(doc: str, name: str) -> argparse.ArgumentParser:
    """A benchmark's argument parser: its docstring's first line, and --json (default benchmarks/NAME.json)."""
    arguments = argparse.ArgumentParser(description=doc.splitlines()[0])
    arguments.add_argument("--json", default=f"benchmarks/{name}.json", help="where to write the results")
    return arguments


@contextlib.contextmanager
def app_server(index_dir: str):
    """A fresh ``paperscope app`` server on ``index_dir``, healthy; yields its URL, stops it after."""
    with paperscope_server("app", index_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as (url, _):
        yield url


@functools.cache
def ranker_of(index):
    """A :class:`~paperscope.index.search.ranking.Ranker` of the generation ``index`` (a loaded
    PaperIndex) serves: for the benchmarks that time or vary the ranking's own parts."""
    from paperscope.index.search.ranking import Ranker
    from paperscope.index.store.generations import read_generation

    stored = read_generation(index.folder)
    return Ranker(stored.vectors, stored.smoothed, stored.faiss_index, stored.keyword, stored.manifest.search)
