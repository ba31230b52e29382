"""Reader-facing pages: parameter tables from notebooks, provenance, the claims dashboard."""

import json

import nbformat
import pytest

from embedding_geometry import pages


def write_notebook(folder, slug, source):
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    notebook.cells.append(cell)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (folder / "notebooks").mkdir(exist_ok=True)
    nbformat.write(notebook, folder / "notebooks" / f"{slug}.ipynb")


def test_parameter_table_reads_the_parameters_cell(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: t\n")
    write_notebook(tmp_path, "01_x", 'model = "m"  # which model\nsizes = [1, 2]  # some sizes\nflag: bool = False\n')
    monkeypatch.chdir(tmp_path)
    table = pages.parameter_table("01_x")
    assert table.to_dict("records") == [
        {"parameter": "model", "default": '"m"', "type": "str", "meaning": "which model"},
        {"parameter": "sizes", "default": "[1, 2]", "type": "list", "meaning": "some sizes"},
        {"parameter": "flag", "default": "False", "type": "bool", "meaning": ""},
    ]


def result(chapter, claims):
    return {"chapter": chapter, "model": {"id": "m", "sha256": "abc", "layers": 3, "hidden": 40},
            "params": {"seed": 0}, "inputs": {}, "metrics": {}, "claims": claims,
            "environment": {"python": "3.11", "torch": "2", "transformers": "5", "device": "cpu", "seconds": 1.5}}


CLAIMS = [
    {"statement": "peaks inside", "published": {"value": 0.9, "model": "big"}, "measured": 0.5, "model": "m",
     "numeric_verdict": None, "shape_verdict": "holds"},
    {"statement": "gap", "published": None, "measured": None, "model": "m",
     "numeric_verdict": None, "shape_verdict": "not measured"},
    {"statement": "exact", "published": {"value": 1.0, "model": "m"}, "measured": 0.2, "model": "m",
     "numeric_verdict": "not reproduced", "shape_verdict": "does not hold"},
]


def test_dashboard_and_counts(tmp_path):
    (tmp_path / "01_a.json").write_text(json.dumps(result("01_a", CLAIMS[:2])))
    (tmp_path / "02_b.json").write_text(json.dumps(result("02_b", CLAIMS[2:])))
    board = pages.claims_dashboard(tmp_path)
    assert board["chapter"].tolist() == ["01_a", "01_a", "02_b"]
    assert board.loc[0, "published (model)"] == "0.9 (big)"
    assert board.loc[1, "this run (model)"] == "not measured (m)"
    assert board.loc[2, "verdict"] == "numeric: not reproduced; shape: does not hold"
    counts = dict(zip(*pages.verdict_counts(board).to_dict("list").values()))
    assert counts == {"holds": 1, "does not hold": 1, "not reproduced": 1, "not measured": 1}
    assert pages.claims_dashboard(tmp_path, chapters=["02_b"])["claim"].tolist() == ["exact"]


def test_provenance_and_sortable_table(tmp_path):
    table = pages.provenance(result("01_a", []))
    assert table.loc["model", "this build"] == "m"
    assert table.loc["run time", "this build"] == "1.5 s"
    html = pages.SortableTable(pages.claims_dashboard(tmp_path))._repr_html_()
    assert html.startswith('<table class="eg-sortable">')
    escaped = pages.SortableTable(__import__("pandas").DataFrame({"a": ["<b>"]}))._repr_html_()
    assert "&lt;b&gt;" in escaped
