"""Notebooks run top to bottom on the bundled sample, with no warning from paperscope, and are committed
without outputs."""

import json
import re

import nbformat
import pytest
from nbclient import NotebookClient

from paperscope import locations
from tests.conftest import ROOT, copy_index

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


# Run first in the kernel: a warning raised from paperscope's modules stops the run.
STRICT = """import warnings
warnings.filterwarnings("error", module="paperscope")"""


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, tmp_path, sample_index_dir, sample_index, data_home, monkeypatch):
    home = tmp_path / "home"  # the kernel's data folder: the session's sample index as its default one
    copy_index(sample_index_dir, home / "indexes" / locations.SAMPLE_INDEX_NAME)
    (data_home / "onnx").mkdir(exist_ok=True)
    (home / "onnx").symlink_to(data_home / "onnx", target_is_directory=True)  # the exported model, shared
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the notebook builds "my index"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(STRICT))
    heatmap = next(i for i, cell in enumerate(notebook.cells) if "imshow" in cell.source)
    check = "import json; print('AXES', json.dumps([[t.get_text() for t in a] for a in (ax.get_yticklabels(), "
    check += "ax.get_xticklabels())]))"
    notebook.cells.insert(heatmap + 1, nbformat.v4.new_code_cell(check))  # what the heatmap's axes say
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "PaperIndex(" in text and "similarity" in text and "shared terms" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the heatmap was drawn
    rows, columns = json.loads(next(line for line in text.splitlines() if "AXES " in line).split("AXES ", 1)[1])
    assert len(rows) == 38 and all(len(row) <= 45 and not row.isdigit() for row in rows)  # short titles
    assert "unclustered" in columns and len(columns) >= 4  # topic names, one per block
    assert "TqdmWarning" not in text and "IProgress" not in text  # a plain text progress bar
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)  # the map widget
    assert re.search(r"\b[1-9]\d* papers selected\n", text)  # headless: nothing selected, a topic instead
    assert_shows_the_neighbours(notebook, sample_index)


def assert_shows_the_neighbours(notebook, index) -> None:
    """The first table the notebook shows: the paper's title, then its 5 nearest papers of the index in rank order."""
    cell = next(cell for cell in notebook.cells if "similar(paper_id, k=5)" in cell.source)
    first = index.ids()[0]
    printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert printed.strip() == index.paper(first)["title"]
    table = next(o for o in cell.outputs if o.output_type == "execute_result")["data"]["text/html"]
    expected = index.similar(first, k=5).ids
    places = [table.find(f"<td>{paper}</td>") for paper in expected]
    assert -1 not in places and places == sorted(places), (expected, table)
    assert table.count("</tr>") == 1 + len(expected)  # the header and one row a paper, nothing else
