"""Library files in: BibTeX, RIS, CSL-JSON, OpenAlex works and Semantic Scholar records, read into
papers with DOIs and arXiv ids, entries without an abstract counted, malformed files one line."""

import gzip
import json
import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paperscope import PaperIndex, UserError
from paperscope.embed.library import latex_to_text, normalise_arxiv_id, normalise_doi, normalise_title
from paperscope.embed.readers import read_records
from paperscope.embed.readers.sniff import detect_format
from tests.conftest import paperscope

# As Zotero's Better BibTeX writes it: accents as {\"u}, a @string, a comment, tabs, an arXiv preprint,
# an entry without an abstract.
ZOTERO_BIB = r"""% Encoding: UTF-8
@string{jmlr = "Journal of Machine Learning Research"}

@article{muller_uber_2024,
	title = {{\"U}ber {Graphen}: \emph{Message Passing} on Heterophilic Graphs},
	volume = {25},
	doi = {https://doi.org/10.5555/JMLR.2024\_117},
	abstract = {We study message passing on heterophilic graphs with $\alpha$-weighted
		neighbourhoods -- a family~of filters. Results \& code: \url{https://example.org/code}.
		Accuracy improves by 5\% on \textit{all} benchmarks, see Schr{\"o}dinger bridges in
		$O(n \log n)$ time.},
	journal = jmlr,
	author = {M{\"u}ller, J{\"o}rg and Garc{\'i}a, Mar{\'i}a and {The Graph Consortium}},
	year = {2024},
	keywords = {graphs, message passing},
}

@misc{vaswani_attention_2017,
	title = {Attention Is All You Need},
	url = {http://arxiv.org/abs/1706.03762},
	abstract = {The dominant sequence transduction models are based on complex recurrent or
		convolutional neural networks. We propose the Transformer, based solely on attention mechanisms.},
	publisher = {arXiv},
	author = {Vaswani, Ashish and Shazeer, Noam},
	month = dec,
	year = {2017},
	note = {arXiv:1706.03762 [cs]},
	eprint = {1706.03762v7},
	archivePrefix = {arXiv},
}

@inproceedings{nobody_2020,
	title = {A Paper Without Its Abstract},
	booktitle = {Proceedings of Nothing},
	year = {2020},
}
"""

RIS = """TY  - JOUR
TI  - Sparse attention for long video diffusion
AU  - Chen, Li
AU  - Okafor, Ada
T2  - Transactions on Machine Learning Research
AB  - Diffusion models generate video slowly. We make them faster with sparse attention
  over space and time.
DA  - 2023/05/14/
PY  - 2023
DO  - 10.48550/arXiv.2305.01234
UR  - https://arxiv.org/abs/2305.01234v3
KW  - diffusion
KW  - video
ER  -

TY  - CONF
ID  - kim2021
T1  - Federated learning with noisy clients
A1  - Kim, Soo
JO  - Advances in Neural Information Processing Systems
N2  - Clients with noisy labels slow federated learning. A robust aggregation rule fixes this.
Y1  - 2021
ER  -
""".replace("ER  -\n\n", "ER  - \n\n")  # as written by Zotero, a space after the dash

CSL = [
    {
        "id": "http://zotero.org/users/local/abc/items/QW8E2ZJK",
        "type": "article-journal",
        "title": "Protein structure prediction with <i>language</i> models",
        "container-title": "Nature Methods",
        "abstract": "Language models trained on protein sequences predict structure.",
        "DOI": "10.1038/S41592-024-0001-X",
        "URL": "https://www.nature.com/articles/s41592-024-0001-x",
        "author": [{"family": "Lin", "given": "Zeming"}, {"literal": "ESM Team"}],
        "issued": {"date-parts": [[2024, 5]]},
    },
    {
        "id": "rives2021",
        "type": "article",
        "title": "Biological structure emerges from scaling unsupervised learning",
        "abstract": "Scaling unsupervised learning to 250 million protein sequences reveals structure.",
        "number": "arXiv:2104.00001",
        "publisher": "arXiv",
        "author": [{"family": "Rives", "given": "Alexander"}],
        "issued": {"date-parts": [["2021"]]},
    },
    {"id": "noabs", "type": "book", "title": "A Book", "issued": {"raw": "1999"}},
]

OPENALEX = [
    {
        "id": "https://openalex.org/W4385245566",
        "doi": "https://doi.org/10.48550/ARXIV.2307.09288",
        "title": "Llama 2: Open Foundation and Fine-Tuned Chat Models",
        "display_name": "Llama 2: Open Foundation and Fine-Tuned Chat Models",
        "publication_year": 2023,
        "publication_date": "2023-07-18",
        "ids": {"openalex": "https://openalex.org/W4385245566", "doi": "https://doi.org/10.48550/arxiv.2307.09288"},
        "primary_location": {
            "landing_page_url": "https://arxiv.org/abs/2307.09288",
            "source": {"display_name": "arXiv (Cornell University)"},
        },
        "authorships": [
            {"author": {"display_name": "Hugo Touvron"}},
            {"author": {"display_name": "Louis Martin"}},
        ],
        "abstract_inverted_index": {
            "In": [0],
            "this": [1],
            "work,": [2],
            "we": [3],
            "develop": [4],
            "Llama": [5, 9],
            "2,": [6],
            "a": [7],
            "collection.": [8],
            "2-Chat": [10],
            "is": [11],
            "tuned.": [12],
        },
        "primary_topic": {"display_name": "Natural Language Processing Techniques"},
    },
    {
        "id": "https://openalex.org/W2100000001",
        "doi": None,
        "title": "A work without an abstract",
        "publication_year": 2001,
        "abstract_inverted_index": None,
        "authorships": [],
        "primary_location": None,
    },
]

S2 = [
    {  # the Graph API's paper
        "paperId": "649def34f8be52c8b66281af98ae884c09aef38b",
        "externalIds": {"DOI": "10.18653/V1/N18-3011", "ArXiv": "1805.02262", "CorpusId": 19170988},
        "url": "https://www.semanticscholar.org/paper/649def34f8be52c8b66281af98ae884c09aef38b",
        "title": "Construction of the Literature Graph in Semantic Scholar",
        "abstract": "We describe a deployed scalable system for organizing published scientific literature.",
        "venue": "NAACL",
        "year": 2018,
        "authors": [{"authorId": "1", "name": "Waleed Ammar"}, {"authorId": "2", "name": "Dirk Groeneveld"}],
        "fieldsOfStudy": ["Computer Science"],
    },
    {  # the datasets' papers+abstracts, lower-case keys
        "corpusid": 215416146,
        "externalids": {"DOI": None, "ArXiv": "2004.07180v4", "CorpusId": "215416146"},
        "title": "SPECTER: Document-level Representation Learning",
        "abstract": "Representation learning is a critical ingredient for natural language processing systems.",
        "year": 2020,
        "authors": [{"authorId": "3", "name": "Arman Cohan"}],
        "venue": "",
        "journal": {"name": "ArXiv"},
        "s2fieldsofstudy": [{"category": "Computer Science", "source": "s2-fos-model"}],
    },
]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def by_id(records: list[dict]) -> dict[str, dict]:
    return {record["id"]: record for record in records}


def test_zotero_bibtex_latex_becomes_text(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="paperscope"):
        records = by_id(read_records(write(tmp_path, "refs.bib", ZOTERO_BIB)))
    assert set(records) == {"muller_uber_2024", "vaswani_attention_2017"}
    muller = records["muller_uber_2024"]
    assert muller["title"] == "Über Graphen: Message Passing on Heterophilic Graphs"
    assert muller["abstract"] == (
        "We study message passing on heterophilic graphs with \u03b1-weighted neighbourhoods – a family of "
        "filters. Results & code: https://example.org/code. Accuracy improves by 5% on all benchmarks, "
        "see Schrödinger bridges in O(n log n) time."
    )
    assert muller["authors"] == "Jörg Müller; María García; The Graph Consortium"
    assert muller["venue"] == "Journal of Machine Learning Research"  # the @string resolved
    assert (muller["year"], muller["doi"], muller["categories"]) == (
        2024,
        "10.5555/jmlr.2024_117",
        "graphs; message passing",
    )
    assert "arxiv_id" not in muller and muller["source"] == "refs.bib:4"
    vaswani = records["vaswani_attention_2017"]
    assert (vaswani["arxiv_id"], vaswani["year"], vaswani["source"]) == ("1706.03762", 2017, "refs.bib:18")
    assert vaswani["authors"] == "Ashish Vaswani; Noam Shazeer" and vaswani["url"] == "http://arxiv.org/abs/1706.03762"
    assert "1 of 3 entries in refs.bib have no abstract: skipped" in caplog.messages
    fields = next(m for m in caplog.messages if m.startswith("refs.bib: BibTeX, 3 entries; fields"))
    assert "text ← 'abstract'" in fields and "id ← 'citation key'" in fields and "arxiv_id ← 'eprint'" in fields


def test_entries_without_abstract_are_kept_for_collections(tmp_path):
    records = by_id(read_records(write(tmp_path, "refs.bib", ZOTERO_BIB), keep_without_abstract=True))
    assert records["nobody_2020"]["abstract"] == "" and records["nobody_2020"]["venue"] == "Proceedings of Nothing"


def test_ris_two_records(tmp_path):
    first, second = read_records(write(tmp_path, "export.ris", RIS))
    assert first["title"] == "Sparse attention for long video diffusion"
    assert first["abstract"].endswith("sparse attention over space and time.")  # the continued line
    assert (first["authors"], first["year"]) == ("Li Chen; Ada Okafor", 2023)
    assert (first["doi"], first["arxiv_id"]) == ("10.48550/arxiv.2305.01234", "2305.01234")
    assert (first["venue"], first["categories"], first["source"]) == (
        "Transactions on Machine Learning Research",
        "diffusion; video",
        "export.ris:1",
    )
    assert (second["id"], second["title"], second["authors"], second["year"]) == (
        "kim2021",
        "Federated learning with noisy clients",
        "Soo Kim",
        2021,
    )
    assert second["abstract"].startswith("Clients with noisy labels") and second["source"] == "export.ris:16"
    assert second["venue"] == "Advances in Neural Information Processing Systems"


def test_csl_json_from_zotero(tmp_path, caplog):
    path = write(tmp_path, "library.json", json.dumps(CSL, indent=2))
    with caplog.at_level(logging.INFO, logger="paperscope"):
        lin, rives = read_records(path)
    assert lin["title"] == "Protein structure prediction with language models"  # <i> dropped
    assert (lin["authors"], lin["year"], lin["venue"]) == ("Zeming Lin; ESM Team", 2024, "Nature Methods")
    assert lin["doi"] == "10.1038/s41592-024-0001-x" and lin["id"] == CSL[0]["id"]
    assert (rives["arxiv_id"], rives["year"], rives["id"]) == ("2104.00001", 2021, "rives2021")
    assert (lin["source"], rives["source"]) == ("library.json:2", "library.json:28")  # the items' lines
    assert "1 of 3 entries in library.json have no abstract: skipped" in caplog.messages
    assert any(m.startswith("library.json: CSL-JSON, 3 entries") for m in caplog.messages)


def test_openalex_works_rebuild_the_abstract(tmp_path):
    path = tmp_path / "works.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(json.dumps(w) for w in OPENALEX).encode()))
    (work,) = read_records(path)
    assert work["abstract"] == "In this work, we develop Llama 2, a collection. Llama 2-Chat is tuned."
    assert (work["id"], work["doi"], work["arxiv_id"]) == ("W4385245566", "10.48550/arxiv.2307.09288", "2307.09288")
    assert (work["year"], work["authors"]) == (2023, "Hugo Touvron; Louis Martin")
    assert (work["venue"], work["categories"]) == (
        "arXiv (Cornell University)",
        "Natural Language Processing Techniques",
    )
    assert work["title"].startswith("Llama 2") and work["url"] == "https://arxiv.org/abs/2307.09288"


def test_openalex_api_page_as_json(tmp_path):
    page = {"meta": {"count": 2}, "results": OPENALEX, "group_by": []}
    (work,) = read_records(write(tmp_path, "page.json", json.dumps(page)))
    assert work["id"] == "W4385245566"


def test_semantic_scholar_records(tmp_path):
    api, dataset = read_records(write(tmp_path, "s2.jsonl", "\n".join(json.dumps(p) for p in S2)))
    assert (api["id"], api["doi"], api["arxiv_id"]) == (S2[0]["paperId"], "10.18653/v1/n18-3011", "1805.02262")
    assert (api["authors"], api["venue"], api["year"], api["categories"]) == (
        "Waleed Ammar; Dirk Groeneveld",
        "NAACL",
        2018,
        "Computer Science",
    )
    assert (dataset["id"], dataset["arxiv_id"], dataset["venue"]) == ("215416146", "2004.07180", "ArXiv")
    assert "doi" not in dataset and dataset["categories"] == "Computer Science" and dataset["source"] == "s2.jsonl:2"


def test_csv_and_json_columns_named_doi_and_arxiv_id(tmp_path):
    path = write(
        tmp_path, "papers.csv", "title,abstract,doi,arxiv_id\nT,Some abstract.,DOI:10.1234/ABC,arXiv:2101.00001v2\n"
    )
    (record,) = read_records(path)
    assert (record["doi"], record["arxiv_id"]) == ("10.1234/abc", "2101.00001")
    snapshot = {"id": "0704.0001", "authors_parsed": [], "versions": [], "abstract": "A", "doi": None}
    (arxiv,) = read_records(write(tmp_path, "arxiv.jsonl", json.dumps(snapshot)))
    assert arxiv["arxiv_id"] == "0704.0001" and arxiv["id"] == "0704.0001"


def test_format_from_the_first_bytes():
    assert detect_format(Path("upload"), b"% comment\n@article{x,") == "bib"
    assert detect_format(Path("upload"), b"\xef\xbb\xbf\n@Misc( x,") == "bib"
    assert detect_format(Path("upload"), b"TY  - JOUR\nTI  - x") == "ris"
    assert detect_format(Path("refs.bib.gz"), b"\x1f\x8b") == "bib"
    assert detect_format(Path("upload"), b'[{"type": "article"') == "json"


@pytest.mark.parametrize(
    "value, doi",
    [
        ("https://doi.org/10.1000/ABC", "10.1000/abc"),
        ("doi:10.1000/x.y.", "10.1000/x.y"),
        ("https://dx.doi.org/10.1000%2Fabc", "10.1000/abc"),
        ("10.1016/0000-0000(90)90000-X", "10.1016/0000-0000(90)90000-x"),
        ("10.1000/a\\_b", "10.1000/a_b"),
        ("not a doi", ""),
        (None, ""),
    ],
)
def test_normalise_doi(value, doi):
    assert normalise_doi(value) == doi


@pytest.mark.parametrize(
    "value, arxiv",
    [
        ("arXiv:2101.00001v2", "2101.00001"),
        ("https://arxiv.org/pdf/2101.00001v3.pdf", "2101.00001"),
        ("1706.03762", "1706.03762"),
        ("hep-th/9901001v1", "hep-th/9901001"),
        ("arXiv:math.GT/0309136", "math.GT/0309136"),
        ("2113.00001", ""),  # month 13
        ("12345678", ""),
    ],
)
def test_normalise_arxiv_id(value, arxiv):
    assert normalise_arxiv_id(value) == arxiv


def test_normalise_title():
    assert normalise_title(r"{\"U}ber \emph{Graphs}: a Study!") == "uber graphs a study"
    assert normalise_title("Über  graphs — a <i>study</i>") == "uber graphs a study"
    assert normalise_title("Self-Attention   Is All") == normalise_title("self attention is all")


@pytest.mark.parametrize(
    "latex, text",
    [
        (r"Caf\'e na\"ive G\"{o}del numbering", "Café naïve Gödel numbering"),
        (r"\textbf{Bold} and {\em old} and \LaTeX{} code", "Bold and old and LaTeX code"),
        (r"pages 1--10 --- and ``quoted''", "pages 1–10 — and “quoted”"),
        (r"raw 5% and R&D kept", "raw 5% and R&D kept"),
        (r"$\mathbb{R}^d$ with $k$-NN \cite{x}", "\u211d^d with k-NN"),
        (r"\textit{unclosed {braces", "unclosed braces"),
    ],
)
def test_latex_to_text(latex, text):
    assert latex_to_text(latex) == text


HOSTILE = {
    "cut.bib": (  # its only entry broken (one broken among others is skipped: see below)
        "% cut off\n@article{b,\n  title = {Cut},\n  abstract = {some te",
        "cut.bib:2: broken BibTeX entry @article{b (Unexpectedly reached end of file)",
    ),
    "noer.ris": (
        "TY  - JOUR\nTI  - First\nAB  - x\nER  - \n\nTY  - JOUR\nTI  - Cut\nAB  - no end\n",
        "noer.ris:6: RIS",
    ),
    "twoty.ris": ("TY  - JOUR\nTI  - First\nTY  - JOUR\nTI  - x\nER  - \n", "twoty.ris:1: RIS record has no 'ER"),
    "stray.ris": ("TY  - JOUR\nAB  - x\nER  - \nTI  - orphan\n", "stray.ris:4: RIS tag TI outside a record"),
    "notalist.json": ('\n\n"a CSL item?"', "notalist.json:3: expected a JSON list"),
    "itemnotobject.json": ('[\n  {"type": "book", "title": "x"},\n  "oops"\n]', "itemnotobject.json:3: record 2"),
    "broken.json": ('[\n  {"type": "book",\n  "title": "x"\n', "broken.json:4: broken JSON"),
    "latin1.bib": ("@article{a, title={Caf\xe9}, abstract={x}}", "latin1.bib:1: not UTF-8"),
    "empty.ris": ("just some text\n", "empty.ris: no RIS entries found"),
    "nothing.bib": ("% only a comment\n", "nothing.bib: no BibTeX entries found"),
    "noabstracts.bib": ("@article{a, title={One}}\n@article{b, title={Two}}\n", "no abstracts found in"),
}


def _hostile(folder: Path, name: str) -> Path:
    content, _ = HOSTILE[name]
    path = folder / name
    path.write_bytes(content.encode("latin-1") if name.startswith("latin1") else content.encode())
    return path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_malformed_files_are_one_line_naming_file_and_line(tmp_path, name):
    from tests.support.corpora import read_corpus

    with pytest.raises(UserError) as error:
        read_corpus([_hostile(tmp_path, name)])
    message = str(error.value)
    assert HOSTILE[name][1] in message and "\n" not in message, message


def _docx() -> bytes:
    """A Word document as Word writes one: a ZIP archive of XML parts."""
    import io
    import zipfile

    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        archive.writestr("word/document.xml", "<w:document><w:t>An abstract, typed in Word.</w:t></w:document>")
    return data.getvalue()


# Files that are not what a corpus reader reads: the error says what is wrong with them, not which
# corpus formats exist (a garbled .bib got "pass CSV, TSV, JSON, JSONL, TXT or Parquet"; issue 50)
NOT_READABLE = {
    "paper.docx": (_docx(), "paper.docx: a ZIP archive (a Word .docx"),
    "paper.pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "paper.pdf: a PDF document, not a corpus format"),
    "garbled.bib": (
        b"@article{a, title = {Fine}, abstract = {Fine.}}\n@article{b,\n title = {\x00\x13\x88}}\n",
        "garbled.bib:3: binary data (NUL bytes), not BibTeX text",
    ),
    "garbled.ris": (
        b"TY  - JOUR\nTI  - x\nAB  - \x00\xff\x10\nER  - \n",
        "garbled.ris:3: binary data (NUL bytes), not RIS text",
    ),
    "latin1.ris": (
        "TY  - JOUR\nTI  - Caf\xe9\nER  - \n".encode("latin-1"),
        "latin1.ris:2: not UTF-8 text (byte 0xe9); export the library again as RIS in UTF-8",
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_READABLE))
def test_a_file_that_is_no_corpus_is_told_what_is_wrong_with_it(tmp_path, name):
    from tests.support.corpora import read_corpus

    content, said = NOT_READABLE[name]
    (tmp_path / name).write_bytes(content)
    with pytest.raises(UserError) as error:
        read_corpus([tmp_path / name])
    message = str(error.value)
    assert said in message and "\n" not in message, message
    assert "no abstracts" not in message and "pass CSV" not in message and "CSV/JSON/Parquet" not in message
    if name.endswith((".docx", ".pdf")):  # the formats it does read, by name
        assert all(suffix in message for suffix in (".txt", ".csv", ".jsonl", ".parquet", ".bib", ".ris")), message


@pytest.mark.slow
def test_cli_refuses_malformed_library_files_with_exit_2(tmp_path):
    for name in ("cut.bib", "noer.ris", "notalist.json"):
        result = paperscope("build", _hostile(tmp_path, name), "-o", tmp_path / "index")
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and HOSTILE[name][1] in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_build_a_bib_file_end_to_end(tmp_path):
    path = write(tmp_path, "refs.bib", ZOTERO_BIB)
    result = paperscope("build", path, "-o", tmp_path / "index")
    assert result.returncode == 0, result.stderr
    assert "refs.bib: BibTeX, 3 entries; fields" in result.stderr
    assert "1 of 3 entries in refs.bib have no abstract: skipped" in result.stderr
    index = PaperIndex.load(tmp_path / "index")
    papers = index.papers.set_index("id")
    assert sorted(papers.index) == ["muller_uber_2024", "vaswani_attention_2017"]
    assert papers.loc["muller_uber_2024", "doi"] == "10.5555/jmlr.2024_117"
    assert papers.loc["vaswani_attention_2017", "arxiv_id"] == "1706.03762"
    assert papers.loc["muller_uber_2024", "title"].startswith("Über Graphen")
    assert list(index.similar("muller_uber_2024", k=1).to_pandas()["id"]) == ["vaswani_attention_2017"]


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
LIBRARY_KEYS = [
    *("type", "title", "abstract", "issued", "author", "container-title", "DOI", "URL", "id", "number"),
    *("abstract_inverted_index", "authorships", "primary_location", "locations", "ids", "host_venue", "doi"),
    *("paperId", "corpusid", "externalIds", "externalids", "authors", "journal", "s2fieldsofstudy", "year"),
]


def _read_or_user_error(path: Path) -> None:
    from tests.support.corpora import read_corpus

    try:
        papers, _ = read_corpus([path])
    except UserError as error:
        assert "\n" not in str(error) and str(error)
        return
    assert len(papers) > 0 and papers["id"].is_unique and (papers["abstract"].str.len() > 0).all()


@pytest.mark.slow
@FUZZ
@given(rows=st.lists(st.dictionaries(st.sampled_from(LIBRARY_KEYS), json_values, max_size=8), max_size=5))
def test_library_records_of_any_shape(tmp_path, rows):
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "r.json").write_text(json.dumps(rows))
    for name in ("r.jsonl", "r.json"):
        _read_or_user_error(tmp_path / name)


bib_text = st.lists(
    st.sampled_from(["@article{", "@string{", "@comment{", "a,", "title = ", "abstract", "=", "{", "}", '"', "\n"])
    | st.sampled_from(['\\"u', "\\emph{", "$", "\\", "%", "#", "and", ",", "@", "(", ")"])
    | st.text(max_size=8),
    max_size=60,
).map("".join)
ris_text = st.lists(
    st.sampled_from(["TY  - JOUR\n", "ER  - \n", "AB  - text\n", "TI  - t\n", "AU  - A, B\n", "KW  - k\n", "\n"])
    | st.text(max_size=10),
    max_size=30,
).map("".join)


@FUZZ
@given(bib=bib_text, ris=ris_text)
def test_any_text_as_bibtex_or_ris(tmp_path, bib, ris):
    (tmp_path / "f.bib").write_text(bib)
    (tmp_path / "f.ris").write_text(ris)
    for name in ("f.bib", "f.ris"):
        _read_or_user_error(tmp_path / name)


def test_named_fields_apply_to_library_files(tmp_path):
    path = write(tmp_path, "refs.bib", ZOTERO_BIB)
    (record,) = read_records(path, {"abstract": "note"})
    assert (record["id"], record["abstract"]) == ("vaswani_attention_2017", "arXiv:1706.03762 [cs]")
    with pytest.raises(UserError, match=r"no field 'nosuch' \(given as --text-field\); fields are: title"):
        read_records(path, {"abstract": "nosuch"})


# What a reference manager's export holds beyond plain entries: macros and # joins, a key used three
# times (a merge gone wrong), names in both orders with particles and a corporate author, crossref.
COMPLETE_BIB = r"""@string{iclr = "International Conference on Learning Representations"}
@string{proc = "Proceedings of the " # iclr}

@inproceedings{li2024,
  title = {Graph {Transformers} at Scale},
  author = {Li, Junbo and Miao, Zichen and van der Maaten, Laurens},
  booktitle = iclr,
  year = 2024,
  month = may,
}
@inproceedings{li2024,
  title = "Sparse " # {Graph} # " Attention",
  author = {Junbo Li and Laurens van der Maaten and {The GNN Consortium}},
  booktitle = proc,
  year = {2024},
}
@inproceedings{li2024,
  title = {Third of the Name},
  author = {de la Cruz, Juan and Smith, Jr., John},
  crossref = {iclr2024},
}
@proceedings{iclr2024,
  title = {Proceedings of ICLR 2024},
  year = {2024},
  publisher = {OpenReview},
}
"""


def test_bibtex_is_parsed_completely(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="paperscope"):
        first, second, third = read_records(write(tmp_path, "lib.bib", COMPLETE_BIB), keep_without_abstract=True)
    assert [r["id"] for r in (first, second, third)] == ["li2024"] * 3  # every entry sharing the key, all read
    warned = [m for m in caplog.messages if "li2024" in m]
    assert warned == ["lib.bib: the citation key 'li2024' is used by 3 entries (lines 4, 11, 17); all are read"]
    assert first["venue"] == "International Conference on Learning Representations"  # a @string
    assert first["entry"]["fields"]["month"] == "May" and first["year"] == 2024
    assert second["title"] == "Sparse Graph Attention"  # quoted and braced parts joined by #
    assert second["venue"] == "Proceedings of the International Conference on Learning Representations"  # nested
    assert first["authors"] == "Junbo Li; Zichen Miao; Laurens van der Maaten"  # "Last, First"
    assert second["authors"] == "Junbo Li; Laurens van der Maaten; The GNN Consortium"  # "First Last", a team
    assert third["authors"] == "Juan de la Cruz; John Smith Jr."
    assert third["venue"] == "Proceedings of ICLR 2024" and third["year"] == 2024  # crossref: title → booktitle
    assert third["entry"]["fields"]["publisher"] == "OpenReview"  # inherited from the parent, which is no entry
    assert third["entry"]["parent"]["key"] == "iclr2024" and third["entry"]["inherited"]["publisher"] == "OpenReview"


def test_one_broken_entry_is_skipped_with_one_line_and_the_others_come_in(tmp_path, caplog):
    broken = "@article{b,\n  title = {Broken {title},\n  abstract = {Some text.},\n}\n\n"  # a brace left open
    bib = write(tmp_path, "refs.bib", f"@article{{a, title={{Good}}}}\n\n{broken}@article{{c, title={{Third}}}}\n")
    items = [{"id": "good", "type": "article-journal", "title": "Fine", "issued": {"date-parts": [[2020]]}},
             {"id": "bad", "type": "article-journal", "title": 123, "issued": {"date-parts": [[2020]]}}]  # fmt: skip
    csl = write(tmp_path, "refs.json", "[\n" + ",\n".join(map(json.dumps, items)) + "\n]\n")  # an item a line
    with caplog.at_level(logging.WARNING, logger="paperscope"):
        assert [r["id"] for r in read_records(bib, keep_without_abstract=True)] == ["a", "c"]
        assert [r["id"] for r in read_records(csl, keep_without_abstract=True)] == ["good"]  # not a paper "123"
    assert [m for m in caplog.messages if "skipped" in m] == [
        f"{bib}:3: broken BibTeX entry @article{{b (Unexpected block start: `@article`. Was still looking for "
        "field-value closing `,` or `}`); check its braces and quotes; skipped, the other entries are read",
        f"{csl}:3: CSL-JSON item 'bad': \"title\" is a number (123), not text; skipped, the other items are read",
    ]


def test_a_json_file_that_is_no_library_names_no_option_collections_lack(tmp_path):
    path = write(tmp_path, "library.json", json.dumps([{"name": "x", "notes": "y"}]))
    with pytest.raises(UserError) as raised:
        read_records(path, keep_without_abstract=True)
    assert "not a library file paperscope knows" in str(raised.value) and "--text-field" not in str(raised.value)
