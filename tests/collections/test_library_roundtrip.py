"""A collection gives the library back as it came: import → export → import of files shaped like
Zotero, Better BibTeX (suffixed keys), Google Scholar, JabRef (@string, #, crossref) and Mendeley
exports, and a file with a repeated key (in tests/files/library_exports, written from those tools'
documented formats) gives entries with the same citation keys, types and fields, macros as
macros; the corpus only fills what an entry lacks, and a second cycle is byte-equal to the first."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from paperscope import PaperIndex
from paperscope.embed.readers import read_records
from tests.conftest import FILES, paperscope

pytestmark = pytest.mark.slow  # the library corpus's index
EXPORTS = sorted((FILES / "library_exports").iterdir())
SUFFIX = {"bib": ".bib", "ris": ".ris", "json": ".json"}
# What the corpus may fill in an entry matched to it, by format (the corpus's title, abstract, …)
FILLED = {
    ".bib": {"title", "author", "year", "abstract", "doi", "url", "eprint", "archiveprefix", "booktitle", "journal",
             "howpublished"},
    ".ris": {"title", "authors", "year", "abstract", "doi", "urls", "notes", "secondary_title"},
    ".json": {"title", "author", "issued", "abstract", "DOI", "URL", "number", "container-title"},
}  # fmt: skip


def entries(path: Path) -> list[dict]:
    """Each entry of a library file as the file wrote it: key, type and fields."""
    found = []
    for record in read_records(path, keep_without_abstract=True, announce=False):
        entry = dict(record["entry"])
        entry.pop("line")
        found.append(entry)
    return found


def fields(entry: dict) -> dict:
    """An entry's fields by name (BibTeX's in lower case, as BibTeX reads them)."""
    if entry["format"] == "bib":
        return {name.lower(): value for name, value in entry["fields"].items()}
    return dict(entry["fields"] if entry["format"] == "ris" else entry["item"])


def identity(entry: dict) -> tuple:
    """What names an entry: its format, citation key and type."""
    if entry["format"] == "bib":
        return "bib", entry["key"], entry["type"]
    if entry["format"] == "ris":
        return "ris", entry["fields"].get("id"), entry["fields"]["type_of_reference"]
    return "csl", entry["item"].get("id"), entry["item"]["type"]


@pytest.fixture
def index(library_corpus, tmp_path, monkeypatch) -> PaperIndex:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    return PaperIndex.load(library_corpus / "index")


@pytest.mark.parametrize("library", EXPORTS, ids=[path.name for path in EXPORTS])
def test_an_export_gives_every_entry_back_with_its_key_type_and_fields(index, library, tmp_path):
    before = entries(library)
    collections = index.collections
    collections.create("mine", files=[library], embed=False)
    members = collections.members("mine")
    assert len(members) == len(before)  # every entry is a member: none merged, none dropped
    in_index = dict(zip(range(len(before)), members["in_index"], strict=True))
    exported = collections.export("mine", tmp_path / f"mine{library.suffix}")
    after = entries(exported)
    assert [identity(entry) for entry in after] == [identity(entry) for entry in before]
    for number, (old, new) in enumerate(zip(before, after, strict=True)):
        old_fields, new_fields = fields(old), fields(new)
        assert {name: new_fields.get(name) for name in old_fields} == old_fields  # every field, as it was
        added = set(new_fields) - set(old_fields)
        assert added <= FILLED[library.suffix], added  # the corpus fills only what the entry lacks …
        assert not added or in_index[number]  # … and only for a paper of the corpus


@pytest.mark.parametrize("name", ["zotero.bib", "better-bibtex.bib"])
def test_entries_outside_the_corpus_come_back_exactly_and_the_corpus_may_win(index, name, tmp_path):
    library = EXPORTS[0].parent / name
    collections = index.collections
    collections.create("mine", files=[library], embed=False)
    unmatched = [e for e, m in zip(entries(library), collections.members("mine")["in_index"], strict=True) if not m]
    exported = entries(collections.export("mine", tmp_path / "mine.bib"))
    assert [e for e, m in zip(exported, collections.members("mine")["in_index"], strict=True) if not m] == unmatched
    corpus = entries(collections.export("mine", tmp_path / "corpus.bib", prefer="corpus"))
    title = index.paper("p3")["title"]  # the entry matched to p3 by its DOI takes the corpus's title
    assert any(fields(entry)["title"] == title.replace("&", r"\&") for entry in corpus)


def test_an_entry_exported_to_another_format_keeps_its_key_and_type(index, tmp_path):
    collections = index.collections
    collections.create("mine", ids=["p7"], files=[EXPORTS[0].parent / "zotero.bib"], embed=False)
    ris = entries(collections.export("mine", tmp_path / "mine.ris"))
    assert [(e["fields"].get("id"), e["fields"]["type_of_reference"]) for e in ris] == [
        (ris[0]["fields"]["id"], "GEN"),
        ("lin_stochastic_2024", "CPAPER"),
        ("vaswani_attention_2017", "GEN"),
        ("knuth_art_1997", "BOOK"),
        ("chen_sparse_2025", "JOUR"),
    ]
    assert ris[3]["fields"]["publisher"] == "Addison-Wesley" and ris[3]["fields"]["issn"] == "978-0-201-89683-1"
    assert ris[1]["fields"]["authors"] == ["Lin, Wei", "van der Maaten, Laurens", "Müller, Jörg"]
    csl = json.loads(collections.export("mine", tmp_path / "mine.json").read_text())
    assert [item["id"] for item in csl[1:]] == ["lin_stochastic_2024", "vaswani_attention_2017", "knuth_art_1997",
                                                "chen_sparse_2025"]  # fmt: skip
    assert (
        csl[4]["type"] == "article-journal" and csl[4]["container-title"] == "Transactions on Machine Learning Research"
    )


def test_papers_added_from_the_corpus_get_readable_keys_unique_in_the_file(index, tmp_path):
    collections = index.collections
    collections.create("mine", ids=["p7", "p8", "p9"], embed=False)
    keys = [entry["key"] for entry in entries(collections.export("mine", tmp_path / "mine.bib"))]
    assert len(set(keys)) == 3
    for key, paper_id in zip(keys, ["p7", "p8", "p9"], strict=True):
        paper = index.paper(paper_id)
        assert key.startswith("anon" + str(paper["year"])) and key.isascii() and key.isalnum()


def _import_and_export(library: Path, index: Path, home: Path, out: Path):
    """``collection create mine --from LIBRARY`` then ``collection export mine -o OUT`` through the
    command line, in a data folder of their own: what each printed."""
    steps = (["create", "mine", "--from", library], ["export", "mine", "-o", out])
    return [paperscope("collection", *step, "--index", index, home=home) for step in steps]


def test_the_command_line_exports_as_the_library_came(library_corpus, tmp_path):
    out = tmp_path / "out.bib"
    created, exported = _import_and_export(
        EXPORTS[0].parent / "zotero.bib", library_corpus / "index", tmp_path / "home", out
    )
    assert created.returncode == 0, created.stderr
    assert (
        "4 entries: 2 new members matched to corpus papers (1 by DOI, 1 by arXiv id); 2 new outside" in created.stderr
    )
    assert exported.returncode == 0, exported.stderr
    text = out.read_text()
    assert "@inproceedings{lin_stochastic_2024," in text and "@book{knuth_art_1997," in text
    assert "publisher = {Addison-Wesley}" in text and "isbn = {978-0-201-89683-1}" in text
    helped = paperscope("collection", "export", "--help")
    assert "the entry wins" in helped.stdout.replace("\n", " ")


@pytest.mark.parametrize("library", EXPORTS, ids=[path.name for path in EXPORTS])
def test_a_second_cycle_gives_the_first_export_back_byte_for_byte(index, library, tmp_path):
    collections = index.collections
    collections.create("first", files=[library], embed=False)
    first = collections.export("first", tmp_path / f"first{library.suffix}")
    collections.create("second", files=[first], embed=False)
    second = collections.export("second", tmp_path / f"second{library.suffix}")
    assert second.read_bytes() == first.read_bytes()


def test_entries_sharing_a_citation_key_are_exported_as_they_came_with_a_warning(library_corpus, tmp_path):
    out = tmp_path / "out.bib"
    created, exported = _import_and_export(
        EXPORTS[0].parent / "merged-repeated-keys.bib", library_corpus / "index", tmp_path / "home", out
    )
    assert created.returncode == 0, created.stderr
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    assert "citation keys used by more than one entry, written as they came: smith2020" in exported.stderr
    text = out.read_text()
    assert "@article{smith2020," in text and "@inproceedings{smith2020," in text and "@misc{lee2019," in text
    assert "\tmonth = mar\n" in text and "March" not in text  # BibTeX's own macro, as it came


def test_suffixed_keys_are_two_entries_unless_every_field_is_equal(index, tmp_path):
    collections = index.collections
    matched = collections.create("mine", files=[EXPORTS[0].parent / "zotero-suffixed.bib"], embed=False)
    assert matched.repeated == 0 and len(matched.members) == 4
    text = collections.export_text("mine", "bib")
    for key in ("rita_role_2021", "rita_role_2021-1", "gupta_analyzing_nodate", "gupta_analyzing_nodate-1"):
        assert f"{{{key},\n" in text
    assert "\tmonth = jun,\n" in text and "\tmonth = feb,\n" in text and "June" not in text  # macros, as they came
    again = tmp_path / "again.bib"  # one entry twice, under two keys: every other field equal, one entry
    again.write_text("@misc{a, title = {One paper}, year = {2020}}\n@misc{a-1, title = {One paper}, year = {2020}}\n")
    matched = collections.create("again", files=[again], embed=False)
    assert (len(matched.members), matched.repeated) == (1, 1)


def test_a_csl_date_gives_its_month_to_bibtex(index, tmp_path):
    collections = index.collections
    collections.create("mine", files=[EXPORTS[0].parent / "zotero.json"], embed=False)
    exported = entries(collections.export("mine", tmp_path / "mine.bib"))
    assert exported[0]["key"] == "http://zotero.org/users/1234567/items/ABCD1234"
    assert exported[0]["macros"] == {"month": "may"} and fields(exported[0])["month"] == "May"
    items = json.loads(collections.export("mine", tmp_path / "mine.json").read_text())
    assert items[0]["issued"] == {"date-parts": [["2024", 5]]}  # its own, as it came


def test_text_the_corpus_adds_is_escaped_once():
    from paperscope.index.collections.entries import Member, as_text

    paper = {"title": "Sparse R&D", "abstract": r"Gains of 6.9\% on $x_1$ for 5% of R&D \emph{costs}"}
    text = as_text([Member({"format": "bib", "type": "misc", "key": "k", "fields": {}}, paper, True)], "bib")
    assert r"abstract = {Gains of 6.9\% on $x_1$ for 5\% of R\&D \emph{costs}}" in text
    assert r"title = {Sparse R\&D}" in text


def test_a_crossref_parent_is_inherited_from_and_written_after_its_children_not_a_member(index):
    collections = index.collections
    collections.create("mine", files=[EXPORTS[0].parent / "jabref-strings.bib"], embed=False)
    assert list(collections.members("mine")["title"]) == ["Sparse Mixtures of Experts at Scale",
                                                          "Kernel methods for Graph data"]  # fmt: skip
    text = collections.export_text("mine", "bib")
    child, parent = text[: text.index("@proceedings{ICML2023,")], text[text.index("@proceedings{ICML2023,") :]
    assert "@inproceedings{okafor2023," in child.lower() and "\tcrossref = {ICML2023}" in child
    assert "PMLR" not in child and "\tpublisher = {PMLR}" in parent  # inherited, left to the parent


def test_a_files_own_string_macros_come_back_as_macros_with_their_definitions(index, tmp_path):
    collections = index.collections
    collections.create("mine", files=[EXPORTS[0].parent / "jabref-strings.bib"], embed=False)
    text = collections.export_text("mine", "bib")
    assert text.startswith("@string{pmlr = {Proceedings of Machine Learning Research}}\n")
    assert "\tseries = pmlr,\n" in text and "\tmonth = jul,\n" in text
    assert "icml" not in text  # joined with '#' to a literal: kept resolved, so no @string it needs
    changed = tmp_path / "changed.bib"  # another file: its @string, its macro used alone
    changed.write_text("@string{jmlr = {JMLR}}\n@article{a, title = {One}, journal = jmlr}\n")
    collections.create("changed", files=[changed], embed=False)
    assert "\tjournal = jmlr\n" in collections.export_text("changed", "bib")


def test_a_second_collection_from_the_same_file_embeds_nothing(index, caplog):
    import logging

    library = EXPORTS[0].parent / "zotero-suffixed.bib"  # four entries outside the corpus
    collections = index.collections
    with caplog.at_level(logging.INFO, logger="paperscope"):
        collections.create("first", files=[library])
        assert not any("embedding cache" in message for message in caplog.messages)
        collections.create("second", files=[library])
    taken = "4 of 4 entries outside the corpus taken from the embedding cache (embedded before)"
    assert caplog.messages.count(taken) == 1  # the second import embedded none of them
    assert np.array_equal(collections.steering("first")[1], collections.steering("second")[1])


def test_two_entries_of_one_corpus_paper_are_two_members_and_both_come_back(index, tmp_path):
    library = tmp_path / "versions.bib"  # a preprint and its published version, both naming p3 by its DOI
    library.write_text(
        "@misc{lin2023, title = {SGD for heterophilic graphs}, doi = {10.5555/sample.3}, note = {Preprint}}\n"
        "@inproceedings{lin2024, title = {SGD for Heterophilic Graphs}, doi = {10.5555/sample.3}, year = {2024}}\n"
        "@inproceedings{lin2024-1, title = {SGD for Heterophilic Graphs}, doi = {10.5555/sample.3}, year = {2024}}\n"
    )
    collections = index.collections
    matched = collections.create("mine", files=[library], embed=False)
    assert (len(matched.members), matched.repeated) == (2, 1)  # the third repeats the second, field for field
    assert list(collections.members("mine")["id"]) == ["p3", "p3"]
    exported = entries(collections.export("mine", tmp_path / "out.bib"))
    assert [entry["key"] for entry in exported] == ["lin2023", "lin2024"]
    again = collections.add("mine", files=[library], embed=False)
    assert (len(again.members), len(again.present)) == (0, 2)  # the same file again: nothing new
    assert len(index.collections.recommend("mine", k=3)) == 3
