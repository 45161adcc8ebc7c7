"""Import rules: no import cycle in the package, and a lookup or the app loads no build code.

Build code: UMAP, numba, HDBSCAN, scikit-learn, PyNNDescent and the modules of
``paperscope.index.build`` and ``paperscope.index.topics``. A lookup (``PaperIndex.load``, then
``similar`` and ``search``) imports none of it: loading an index stays fast and light. The app
imports none of it until a user builds an index. Read from the sources (an AST walk, every import
of a paperscope module, those inside functions included) and checked in fresh processes.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = "paperscope"
BUILD_LIBRARIES = ("umap", "numba", "hdbscan", "sklearn", "pynndescent")
BUILD_PACKAGES = ("paperscope.index.build", "paperscope.index.topics")
LOOKUP = "paperscope.index.paper_index"
APP = "paperscope.ui.app"


def is_build_code(module: str) -> bool:
    """Whether ``module`` (a dotted name) is one of the build libraries or build modules."""
    return module.partition(".")[0] in BUILD_LIBRARIES or any(
        module == package or module.startswith(package + ".") for package in BUILD_PACKAGES
    )


@dataclass(frozen=True)
class Import:
    """One import statement's target: the module it imports, where, and whether it runs at import."""

    target: str
    line: int
    function: str | None  # the function holding the import; None: module level (runs when imported)
    type_only: bool = False  # under ``if TYPE_CHECKING:``: never run, but a dependency all the same

    def where(self, module: str, files: dict[str, Path]) -> str:
        place = f"{files[module].relative_to(ROOT)}:{self.line}"
        return f"{place}, in {self.function}()" if self.function else place


def package_modules() -> dict[str, Path]:
    """Every module of the installed package and its source file, named as installed: the
    folders of pyproject.toml's package-dir (``index/build/pipeline.py`` is
    ``paperscope.index.build.pipeline``)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {package: ROOT / folder for package, folder in setuptools["package-dir"].items()}
    files = {}
    for package, folder in folders.items():
        for path in sorted(folder.glob("*.py")):
            files[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    sources = {path for folder in folders.values() for path in folder.rglob("*.py") if "__pycache__" not in path.parts}
    unmapped = sorted(str(path.relative_to(ROOT)) for path in sources - set(files.values()))
    assert not unmapped, f"source files in no package of pyproject.toml's package-dir: {unmapped}"
    return files


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    node: ast.AST, module: str, is_package: bool, known: set[str], function: str | None, type_only: bool = False
) -> list[Import]:
    """The imports under ``node`` (``function``: the function they are in); those under ``if
    TYPE_CHECKING:`` (never run) marked ``type_only``. ``from a import b`` imports the module
    ``a.b`` when there is one, else ``a``."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for branch, never_run in ((child.body, True), (child.orelse, type_only)):
                branch_node = ast.Module(body=branch, type_ignores=[])
                found += _imports(branch_node, module, is_package, known, function, never_run)
            continue
        if isinstance(child, ast.Import):
            found += [Import(alias.name, child.lineno, function, type_only) for alias in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:  # relative: from the package holding ``module``
                parts = module.split(".")[: len(module.split(".")) - child.level + is_package]
                base = ".".join(parts + ([base] if base else []))
            for alias in child.names:
                target = f"{base}.{alias.name}"
                found.append(Import(target if target in known else base, child.lineno, function, type_only))
        inner = function
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            name = getattr(child, "name", "<lambda>")
            inner = f"{function}.{name}" if function else name
        found += _imports(child, module, is_package, known, inner, type_only)
    return found


def import_graph() -> tuple[dict[str, list[Import]], dict[str, Path]]:
    """For each module of the package, its imports (of any module), in source order."""
    files = package_modules()
    known = set(files)
    graph = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[module] = sorted(
            _imports(tree, module, path.stem == "__init__", known, None), key=lambda i: (i.line, i.target)
        )
    return graph, files


def find_cycle(edges: dict[str, list[Import]]) -> list[tuple[str, Import]] | None:
    """An import cycle among the modules of ``edges`` as (module, its import of the next one), or None."""
    state: dict[str, str] = {}  # "open" while on the path, "done" once explored
    path: list[tuple[str, Import]] = []

    def visit(module: str) -> list[tuple[str, Import]] | None:
        state[module] = "open"
        for edge in edges[module]:
            if edge.target not in edges:  # type-only imports too: a circle of types is a circle to a reader
                continue
            path.append((module, edge))
            if state.get(edge.target) == "open":
                start = next(i for i, (m, _) in enumerate(path) if m == edge.target)
                return path[start:]
            if edge.target not in state and (cycle := visit(edge.target)):
                return cycle
            path.pop()
        state[module] = "done"
        return None

    for module in sorted(edges):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def _ancestors(module: str) -> list[str]:
    """The packages whose ``__init__`` runs before ``module``: "a.b.c" gives "a", "a.b"."""
    parts = module.split(".")
    return [".".join(parts[:size]) for size in range(1, len(parts))]


def build_code_at_import(start: str) -> list[str]:
    """Each way that importing ``start`` imports build code through module-level imports (those
    of its package ``__init__``s included), as an import chain with file and line of each import."""
    graph, files = import_graph()
    reached = {start: []}  # module: the chain of (module, import) that reaches it
    queue = [start]
    for package in _ancestors(start):
        reached.setdefault(package, [])
        queue.append(package)
    offending = []
    while queue:
        module = queue.pop(0)
        for edge in graph[module]:
            if edge.function is not None or edge.type_only:
                continue  # runs only when that function is called, or never
            chain = [*reached[module], (module, edge)]
            if is_build_code(edge.target):
                offending.append(
                    " -> ".join([start, *(e.target for _, e in chain)])
                    + " ("
                    + "; ".join(f"{e.target} at {e.where(m, files)}" for m, e in chain)
                    + ")"
                )
                continue
            for target in [*_ancestors(edge.target), edge.target]:
                if target in graph and target not in reached:
                    reached[target] = chain
                    queue.append(target)
    return offending


def test_the_package_has_no_import_cycle():
    graph, files = import_graph()
    assert len(graph) > 40 and "paperscope.index.build.pipeline" in graph  # the walk finds the rooms
    cycle = find_cycle(graph)
    assert cycle is None, (
        "import cycle: "
        + " -> ".join([m for m, _ in cycle] + [cycle[0][0]])
        + "\n"
        + "\n".join(f"  {module} imports {edge.target} at {edge.where(module, files)}" for module, edge in cycle)
    )


def test_the_walk_sees_imports_inside_functions_and_relative_ones():
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        from . import sibling
        from ..other import thing
        if TYPE_CHECKING:
            import never_run
        def outer():
            def inner():
                import paperscope.deep
        """
    )
    found = _imports(ast.parse(source), "paperscope.index.search.mod", False, {"paperscope.index.search.sibling"}, None)
    assert [(i.target, i.function, i.type_only) for i in found] == [
        ("typing", None, False),
        ("paperscope.index.search.sibling", None, False),
        ("paperscope.index.other", None, False),
        ("never_run", None, True),
        ("paperscope.deep", "outer.inner", False),
    ]
    cycle = find_cycle({"a": [Import("b", 1, None)], "b": [Import("c", 2, "f")], "c": [Import("a", 3, None)]})
    assert [m for m, _ in cycle] == ["a", "b", "c"]
    cycle = find_cycle({"a": [Import("b", 1, None)], "b": [Import("a", 9, None, type_only=True)]})
    assert [m for m, _ in cycle] == ["a", "b"]  # a type-only import back is a circle too


@pytest.mark.parametrize("start", [LOOKUP, APP])
def test_module_level_imports_of_a_lookup_and_the_app_reach_no_build_code(start):
    offending = build_code_at_import(start)
    assert not offending, f"importing {start} imports build code:\n" + "\n".join(offending)


# Run in a fresh interpreter: records who imports each module of build code (the call stack at
# its import), then prints that and every module loaded, as JSON on the last line.
WITNESS = """
import json, sys

BUILD_LIBRARIES, BUILD_PACKAGES = {libraries!r}, {packages!r}
chains = {{}}


def is_build_code(name):
    return name.partition(".")[0] in BUILD_LIBRARIES or any(
        name == package or name.startswith(package + ".") for package in BUILD_PACKAGES
    )


class Witness:
    def find_spec(self, name, path=None, target=None):
        family = next((p for p in BUILD_PACKAGES if name == p or name.startswith(p + ".")), name.partition(".")[0])
        if is_build_code(name) and family not in chains:
            stack, frame = [], sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "?")
                if not module.startswith("importlib"):
                    code = frame.f_code
                    where = module if code.co_name == "<module>" else f"{{module}}:{{code.co_qualname}}"
                    stack.append(f"{{where}} (line {{frame.f_lineno}})")
                frame = frame.f_back
            chains[family] = " -> ".join([*reversed(stack), name])
        return None


sys.meta_path.insert(0, Witness())
{code}
print(json.dumps({{"modules": sorted(sys.modules), "chains": chains}}))
"""


def loaded_in_fresh_process(code: str) -> tuple[list[str], dict[str, str]]:
    """The modules a fresh interpreter has loaded after running ``code``, and for each module of
    build code among them the call stack that imported it first."""
    script = WITNESS.format(libraries=BUILD_LIBRARIES, packages=BUILD_PACKAGES, code=textwrap.dedent(code))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["modules"], answer["chains"]


def assert_no_build_code(modules: list[str], chains: dict[str, str], what: str) -> None:
    loaded = [module for module in modules if is_build_code(module)]
    assert not loaded, f"{what} loaded build code {loaded[:10]}; imported by:\n" + "\n".join(
        f"  {chain}" for chain in chains.values()
    )


def test_a_lookup_in_a_fresh_process_loads_no_build_code(sample_index_dir):
    code = f"""
        from paperscope.index.paper_index import PaperIndex

        index = PaperIndex.load({str(sample_index_dir)!r})
        found = index.search("graph neural networks", k=5).to_pandas()
        assert len(found) == 5
        assert len(index.similar([found["id"].iloc[0]], k=5).to_pandas()) == 5
        assert len(index.search("LLMs for reasoning", k=5, mode="keyword").to_pandas()) > 0
    """
    modules, chains = loaded_in_fresh_process(code)
    assert "paperscope.index.paper_index" in modules and "faiss" in modules  # it did load and search
    assert_no_build_code(modules, chains, "a lookup (load, similar, search)")
    collections = [module for module in modules if module.startswith("paperscope.index.collections")]
    assert not collections, f"a lookup loaded the collections' code: {collections}"  # ix.collections loads it


# What a lookup (from the command line or Python) must not load besides build code: the app, the
# service and their libraries, torch (the query model runs in onnxruntime), and pandas and scipy,
# 0.4 s and 0.12 s to import (results become records straight from Arrow, the keyword index is
# read as its arrays).
NOT_FOR_A_LOOKUP = ("paperscope.ui.app", "paperscope.ui.service", "streamlit", "fastapi", "uvicorn", "torch")
NOT_FOR_A_LOOKUP += ("pandas", "scipy")
# cli.main itself, not conftest's paperscope(): the code runs in a fresh process whose imports are the
# thing checked, and conftest would bring pytest and the test helpers along.
LOOKUPS = {
    "similar": "assert main(['similar', {id!r}, '--index', {folder!r}, '--json']) == 0",
    "search": "assert main(['search', 'graph neural networks', '--index', {folder!r}]) == 0",
    "python": "assert len(PaperIndex.load({folder!r}).similar([{id!r}], k=5).to_records()) == 5",
}


@pytest.mark.slow  # three fresh processes
@pytest.mark.parametrize("lookup", LOOKUPS)
def test_a_lookup_from_the_command_line_or_python_loads_only_what_it_uses(sample_index, sample_index_dir, lookup):
    code = f"""
        from paperscope.index.paper_index import PaperIndex
        from paperscope.ui.cli import main

        {LOOKUPS[lookup].format(id=sample_index.ids()[0], folder=str(sample_index_dir))}
    """
    modules, chains = loaded_in_fresh_process(code)
    assert "faiss" in modules  # it did look up
    assert_no_build_code(modules, chains, f"a lookup ({lookup})")
    loaded = [m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_FOR_A_LOOKUP)]
    assert not loaded, f"a lookup ({lookup}) loaded {loaded[:10]}"


def test_the_app_module_in_a_fresh_process_loads_no_build_code():
    modules, chains = loaded_in_fresh_process(f"import {APP}")
    assert APP in modules
    assert_no_build_code(modules, chains, f"importing {APP}")


def test_the_fresh_process_check_names_who_imported_build_code():
    """The check can fail: a process that imports build code is caught, with the importer named."""
    modules, chains = loaded_in_fresh_process("import paperscope.index.topics.naming")
    with pytest.raises(
        AssertionError, match=r"loaded build code(?s:.*)__main__ \(line \d+\) -> paperscope\.index\.topics"
    ):
        assert_no_build_code(modules, chains, "this process")


# --- rooms that import one way -------------------------------------------------------------------

BASE, EMBED, COMMON = "paperscope", "paperscope.embed", "paperscope.index.common"
STORE, SEARCH, TOPICS = "paperscope.index.store", "paperscope.index.search", "paperscope.index.topics"
BUILD, ANALYSIS, COLLECTIONS = "paperscope.index.build", "paperscope.index.analysis", "paperscope.index.collections"
CURATION, FRONT, UI = "paperscope.index.curation", "paperscope.index.paper_index", "paperscope.ui"
SOURCES = "paperscope.sources"
# the front: the index, its groups, and the loaded state and interface the groups are handed
FRONT_MODULES = (FRONT, "paperscope.index.groups", "paperscope.index.collections_group", "paperscope.index.loaded")
# Each room and the rooms it may import (besides itself), type-only imports included: the shared
# room (the papers' table, the keyword index, k-means) under both the store and search; the
# collections get parts (a papers' table, a manifest, a query encoder), never the front; the user
# interfaces reach an index through the front, and build one through the build room. The curation
# room types the corrections to the topics and applies them on a load (the store keeps their log as
# JSON); it may use the topic code only to name a split's parts, in a module the front imports when
# a split is made. The sources fetch corpus files from services and know nothing of an index; a
# build records where its papers came from, and an update fetches anew, through them.
MAY_IMPORT = {
    BASE: set(),
    EMBED: {BASE},
    COMMON: {BASE, EMBED},
    STORE: {BASE, EMBED, COMMON},
    SEARCH: {BASE, EMBED, COMMON},
    TOPICS: {BASE, EMBED, COMMON, SEARCH},
    CURATION: {BASE, EMBED, COMMON, STORE, TOPICS},
    SOURCES: {BASE},
    BUILD: {BASE, EMBED, COMMON, STORE, SEARCH, TOPICS, SOURCES},
    ANALYSIS: {BASE, EMBED, COMMON, SEARCH},
    COLLECTIONS: {BASE, EMBED, COMMON, STORE, SEARCH},
    FRONT: {BASE, EMBED, COMMON, STORE, SEARCH, CURATION, ANALYSIS, COLLECTIONS},
    UI: {BASE, EMBED, FRONT, BUILD, SOURCES},
}
# The imports against the rooms' order, inside a function: ``ix.map.widget()`` is a verb of the
# index that imports the widget (and anywidget) when called; ``ix.map.remap()`` one that imports the
# remap (build and topic code) when called.
ALLOWED = {
    ("paperscope.index.groups", "paperscope.ui.widget"),
    ("paperscope.index.groups", "paperscope.index.build.remap"),
}
DOORS = ("paperscope", "paperscope.index", "paperscope.data")  # package __init__s: the door, imports lazily


def room_of(module: str) -> str | None:
    """The room of a module of the package (None: a package door of :data:`DOORS`)."""
    if module in DOORS:
        return None
    if module in FRONT_MODULES:
        return FRONT
    rooms = sorted((room for room in MAY_IMPORT if room not in (BASE, FRONT)), key=len, reverse=True)
    found = next((room for room in rooms if module == room or module.startswith(room + ".")), None)
    return found or (BASE if module.count(".") == 1 and module.startswith("paperscope.") else "unplaced")


def room_violations(graph: dict[str, list[Import]]) -> list[str]:
    """Each import of a module of another room its room may not import, as "room -> room: where"."""
    found = []
    for module, edges in graph.items():
        room = room_of(module)
        for edge in edges:
            if not edge.target.startswith("paperscope.") or edge.target not in graph:
                continue
            target = room_of(edge.target)
            if room is None or target in (None, room) or (module, edge.target) in ALLOWED:
                continue
            if target not in MAY_IMPORT.get(room, set()):
                kind = " (type-only)" if edge.type_only else ""
                found.append(f"{room} -> {target}: {module} imports {edge.target}{kind}")
    return found


def test_every_module_has_a_room():
    graph, _ = import_graph()
    unplaced = [module for module in graph if room_of(module) == "unplaced"]
    assert not unplaced, f"modules in no room of MAY_IMPORT: {unplaced}"
    assert {room_of(module) for module in graph} >= set(MAY_IMPORT)  # every room is still there


def test_rooms_import_one_way():
    graph, _ = import_graph()
    violations = room_violations(graph)
    assert not violations, "imports against the rooms' order:\n" + "\n".join(violations)
    order = [BASE, SOURCES, EMBED, COMMON, STORE, SEARCH, TOPICS, CURATION, BUILD, ANALYSIS, COLLECTIONS, FRONT, UI]
    for room, allowed in MAY_IMPORT.items():  # the rules themselves have no circle
        assert all(order.index(other) < order.index(room) for other in allowed), room


def test_the_room_check_sees_a_type_only_import_back():
    """The check can fail: a type-only import of the front from collections (the old circle) is caught."""
    graph = {
        "paperscope.index.collections.collections": [Import(FRONT, 3, None, type_only=True)],
        FRONT: [Import("paperscope.index.collections.collections", 5, None)],
    }
    assert room_violations(graph) == [
        f"{COLLECTIONS} -> {FRONT}: paperscope.index.collections.collections imports {FRONT} (type-only)"
    ]


# --- nothing private used outside its room --------------------------------------------------------

# Names with one leading underscore that other code may use: Python's and libraries' own
# (argparse's sub-parsers, namedtuple methods, IPython's display hook, anywidget's code and style)
# and the map widget's synced traits, the wire between Python and the browser's map.js, which
# tests write as the browser does.
FOREIGN = {"_subparsers", "_group_actions", "_getframe", "_exit", "_replace", "_asdict", "_fields", "_repr_html_",
           "_esm", "_css", "_points", "_colour", "_focus", "_rows"}  # fmt: skip


def private_uses(path: Path, own: set[str]) -> list[str]:
    """Uses in ``path`` of a private name (one leading underscore) of another module: an attribute
    of anything but ``self`` or ``cls``, or a name imported from a module not in ``own``
    (the modules of the file's room)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in FOREIGN:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
        elif (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("paperscope.")
            and node.module not in own
        ):
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}: import {a.name}" for a in node.names if _private(a.name)
            ]
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_nothing_private_is_used_outside_its_room():
    graph, files = import_graph()
    rooms: dict[str | None, set[str]] = {}
    for module in graph:
        rooms.setdefault(room_of(module), set()).add(module)
    found = []
    for module, path in files.items():
        own = rooms[room_of(module)]
        found += private_uses(path, own)
    for path in sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py")):
        found += private_uses(path, set())
    assert not found, "private names used outside their room:\n" + "\n".join(found)
