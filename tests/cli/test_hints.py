"""Nothing a user has is overwritten, and every hint that prints a command does what it says
(issue 50): outputs refuse an existing file unless --force; a build refuses a folder that is not
an index, and the bundled sample over an index of other files; each hint a real mistake provokes
is run as printed, and the user's index holds its own papers afterwards, never the sample's."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from paperscope import PaperIndex, UserError
from paperscope.index.store import generations
from paperscope.ui import cli
from tests.conftest import copy_index, paperscope


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(
    "command, name",
    [
        (["collection", "export", "rl", "-o"], "precious.bib"),
        (["map", "-o"], "map.html"),
        (["collection", "backup", "-o"], "backup.json"),
    ],
)
def test_an_output_file_that_exists_is_refused_without_force(sample_index_dir, tmp_path, command, name):
    precious = tmp_path / name
    precious.write_text("@article{a, title = {169 entries of a Zotero library}}\n")
    said = paperscope(*command, precious, "--index", sample_index_dir, here=True)
    assert said.returncode == 2
    assert said.stderr.splitlines() == [
        f"paperscope: error: -o {precious}: the file exists; give --force to replace it"
    ]
    assert precious.read_text() == "@article{a, title = {169 entries of a Zotero library}}\n"
    assert sorted(tmp_path.iterdir()) == [precious]


def test_force_replaces_the_file(sample_index_dir, tmp_path):
    backup = tmp_path / "backup.json"
    backup.write_text("old")
    said = paperscope("collection", "backup", "-o", backup, "--force", "--index", sample_index_dir, here=True)
    assert said.returncode == 0, said.stderr
    assert '"format"' in backup.read_text()


def test_a_build_refuses_a_file_and_a_folder_that_is_not_an_index(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Title\nAn abstract long enough to be read as one by the reader of plain text files.\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("three years of work")
    said = paperscope("build", corpus, "-o", notes, here=True)
    assert said.returncode == 2 and len(said.stderr.splitlines()) == 1
    assert said.stderr.startswith(f"paperscope: error: {notes}: a folder that is not a paperscope index;")
    assert "--force" in said.stderr
    assert _snapshot(notes) == {"thesis.tex": b"three years of work"}
    said = paperscope("build", corpus, "-o", notes / "thesis.tex", here=True)
    assert said.returncode == 2 and len(said.stderr.splitlines()) == 1 and f"{notes / 'thesis.tex'}" in said.stderr
    assert "Traceback" not in said.stderr and _snapshot(notes) == {"thesis.tex": b"three years of work"}


def test_a_build_of_the_sample_refuses_an_index_of_other_files(library_corpus, tmp_path):
    # the hint damaged indexes gave: `paperscope build -o DIR`, which replaced 300 papers with the 38 of the sample
    folder = copy_index(library_corpus / "index", tmp_path / "index")
    before = _snapshot(folder)
    said = paperscope("build", "-o", folder, here=True)
    corpus = (library_corpus / "corpus.jsonl").resolve()  # as the manifest names it, wherever the build ran
    assert said.returncode == 2
    assert said.stderr.splitlines() == [
        f"paperscope: error: {folder}: holds an index of 36 papers of {corpus}, not the bundled sample; "
        f"rebuild it from them (paperscope build {corpus} -o {folder}), or give --force to build the sample there"
    ]
    assert _snapshot(folder) == before


def test_a_build_of_the_sample_refuses_an_index_whose_manifest_names_no_files(library_corpus, tmp_path):
    # a manifest without corpus.sources (another format): the refusal was a TypeError joining None
    folder = copy_index(library_corpus / "index", tmp_path / "index")
    manifest = folder / (folder / "CURRENT").read_text().strip() / "manifest.json"
    value = json.loads(manifest.read_text())
    del value["corpus"]["sources"]
    manifest.write_text(json.dumps(value))
    before = _snapshot(folder)
    said = paperscope("build", "-o", folder, here=True)
    assert said.returncode == 2
    assert said.stderr.splitlines() == [
        f"paperscope: error: {folder}: holds an index of 36 papers whose files its manifest does not name, not the "
        f"bundled sample; rebuild it from them (paperscope build YOUR_FILES -o {folder}), or give --force to build "
        "the sample there"
    ]
    assert _snapshot(folder) == before


# --- every hint, run as printed ------------------------------------------------------------------

PLACEHOLDERS = {"NAME": "fresh", "TEXT": "graph neural networks"}  # YOUR_FILES: the user's corpus; DIR: a new folder
NAMES = "|".join(re.escape(name) for name, *_ in cli.COMMANDS)
COMMAND = re.compile(rf"\bpaperscope (?:{NAMES})\b[^`();]*")


def _commands(message: str) -> list[str]:
    """The commands a message prints (after any command name the parser knows)."""
    return [found.group(0).strip() for found in COMMAND.finditer(message)]


def _flip_a_byte(folder: Path) -> None:
    path = folder / generations.current_generation_name(folder) / generations.FAISS_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the vectors
    path.write_bytes(bytes(data))


def _corrupt_manifest(folder: Path) -> None:
    (folder / generations.current_generation_name(folder) / generations.MANIFEST_FILE).write_text("{")


def _older_format(folder: Path) -> None:
    path = folder / generations.current_generation_name(folder) / generations.MANIFEST_FILE
    path.write_text(path.read_text().replace('"format_version": 6', '"format_version": 5'))


RECIPES = [  # papers of no topic of a corpus of machine learning: `add` says to rebuild the map
    ("Sourdough bread with a long cold proof", "We bake sourdough loaves after a two-day cold proof in the fridge; "
     "the crumb opens and the crust blisters when the dough is scored deeply before baking."),
    ("Braising beef cheeks in red wine", "Beef cheeks are seared, then braised for four hours in red wine with "
     "shallots and thyme until tender; the sauce is reduced and finished with butter."),
]  # fmt: skip


def _hints(library: Path, tmp_path: Path) -> dict[str, tuple[list, Path | str]]:
    """Each mistake a hint answers: the command that provokes it, and what following the hint must
    do: the index folder it must leave holding the papers it held (the user's, where it could not
    be read), or what it must say it did. Provoked in the current folder (where ``add`` reads its file)."""
    damaged, broken, older, collections, added = (copy_index(library / "index", tmp_path / name) for name in "abcde")
    Path("recipes.jsonl").write_text(
        "".join(json.dumps({"id": f"recipe{i}", "title": t, "abstract": a}) + "\n" for i, (t, a) in enumerate(RECIPES))
    )
    _flip_a_byte(damaged)
    _corrupt_manifest(broken)
    _older_format(older)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "thesis.tex").write_text("three years of work")
    return {
        "checksum": (["verify", "--index", damaged], damaged),
        "corrupt manifest": (["info", "--index", broken], broken),
        "an older format": (["info", "--index", older], older),
        "no such folder": (["info", "--index", tmp_path / "nowhere"], tmp_path / "nowhere"),
        "a folder of the user's": (["info", "--index", notes], notes / "index"),
        "a file for a folder": (["info", "--index", library / "corpus.jsonl"], tmp_path / "DIR"),
        # either way a user's first collection or saved search, named as the hint asks
        "no collections at all": (["collection", "list", "--index", collections], ("created 'fresh'", "saved 'fresh'")),
        "no collection yet": (["collection", "show", "nosuch", "--index", damaged], "created 'fresh'"),  # rebuilt
        "deferred embedding": (
            [
                *("collection", "create", "mine", "--from", library / "refs.bib"),
                "--defer-embedding",
                "--index",
                collections,
            ],
            "embedded 1 entry outside the corpus",
        ),
        "no paper": (["similar", "zzzz-no-such-paper", "--index", collections], ""),
        "papers of no topic added": (["add", "recipes.jsonl", "--index", added], added),
        "a library file for an id": (
            ["collection", "create", "imported", "p3", library / "refs.bib", "--index", collections],
            "created 'imported'",
        ),
    }


def _held(folder: Path, papers: set[str]) -> set[str]:
    """The ids of the index at ``folder``, or ``papers`` where it cannot be read."""
    try:
        return set(PaperIndex.load(folder).ids())
    except UserError:
        return papers


@pytest.mark.slow
def test_every_hint_runs_as_printed_and_keeps_the_users_papers(library_corpus, tmp_path, monkeypatch):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"  # where the user adds files from; another folder
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(work)
    papers = set(PaperIndex.load(library_corpus / "index").ids())
    for case, (provoke, done) in _hints(library_corpus, tmp_path).items():
        monkeypatch.chdir(work)
        said = paperscope(*provoke, here=True)
        monkeypatch.chdir(elsewhere)  # a hint runs wherever the user is next: a rebuild's files by their full paths
        commands = _commands(said.stderr)
        assert commands, (case, said.stderr)
        held = _held(done, papers) if isinstance(done, Path) else set()
        for command in commands:
            argv = shlex.split(re.sub(r"\s*\[[^\]]*\]", "", command))[1:]  # [optional parts] left out
            argv = [str(library_corpus / "corpus.jsonl") if arg == generations.YOUR_FILES else arg for arg in argv]
            argv = [str(tmp_path / "DIR") if arg == "DIR" else PLACEHOLDERS.get(arg, arg) for arg in argv]
            assert not [arg for arg in argv if re.fullmatch(r"[A-Z_]{3,}", arg)], (case, command)  # unknown placeholder
            followed = paperscope(*argv, here=True)
            assert followed.returncode == 0, (case, command, followed.stderr)
            said_done = (done,) if isinstance(done, str) else done
            assert isinstance(done, Path) or any(text in followed.stderr for text in said_done), (case, command)
        if isinstance(done, Path):
            assert set(PaperIndex.load(done).ids()) == held, case
    assert (tmp_path / "notes" / "thesis.tex").read_text() == "three years of work"


def test_the_copy_hint_gives_a_copy_collections_of_its_own(library_corpus, tmp_path, monkeypatch):
    original = tmp_path / "original"
    shutil.copytree(library_corpus / "index", original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)  # as `cp -r` copies it: IDENTITY and all
    assert paperscope("collection", "create", "theirs", "--index", original, here=True).returncode == 0
    noted = paperscope("collection", "list", "--index", copy, here=True)
    assert noted.returncode == 0 and "is a copy of the index at" in noted.stderr, noted.stderr
    said = paperscope("collection", "create", "scratch", "--index", copy, here=True)  # a write to shared collections
    assert (
        said.returncode == 0 and f"this changes the collections of the index at {original.resolve()} too" in said.stderr
    ), said.stderr
    assert paperscope("collection", "delete", "scratch", "--index", copy, here=True).returncode == 0
    hint = re.search(r"collections of its own: (.*)", noted.stderr).group(1)
    monkeypatch.chdir(tmp_path)  # the hint's backup file is written where the user is
    for command in hint.split(", then "):  # followed as printed
        followed = paperscope(*shlex.split(command.strip().removeprefix("paperscope ")), here=True)
        assert followed.returncode == 0, (command, followed.stderr)
    assert paperscope("collection", "create", "mine", "--index", copy, here=True).returncode == 0
    restored = paperscope("collection", "delete", "theirs", "--index", copy, here=True)  # the copy's own, restored
    assert restored.returncode == 0
    listed = paperscope("collection", "list", "--json", "--index", original, here=True, check=True)
    names = [row["name"] for row in json.loads(listed.stdout)]
    assert names == ["theirs"]  # the copy's own collection is not the original's, nor its delete
