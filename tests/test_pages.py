"""Reader-facing pages: parameter tables from notebooks, provenance, the claims dashboard."""

import json
from pathlib import Path

import nbformat
import papermill
import pytest

from embedding_geometry.book import pages, rules
from embedding_geometry.book import parameters as p

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def write_notebook(folder, slug, source):
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = ["parameters"]
    notebook.cells.append(cell)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (folder / "notebooks").mkdir(exist_ok=True)
    nbformat.write(notebook, folder / "notebooks" / f"{slug}.ipynb")


def test_parameter_table_reads_the_parameters_cell_and_the_rules(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: t\n")
    write_notebook(tmp_path, "01_x", 'model = "m"  # which model\nsizes = [1, 2]  # some sizes\nflag: bool = False\nn = None  # None: all\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(rules.CHAPTERS, "01_x", {"model": p.text, "sizes": p.number_list(0, 5), "flag": p.boolean,
                                                 "n": p.optional(p.integer(1))})
    table = pages.parameter_table("01_x")
    assert table.to_dict("records") == [
        {"parameter": "model", "default": '"m"', "type": "str", "meaning": "which model", "expects": "a non-empty string"},
        {"parameter": "sizes", "default": "[1, 2]", "type": "list", "meaning": "some sizes",
         "expects": "a non-empty list of numbers in [0, 5]"},
        {"parameter": "flag", "default": "False", "type": "bool", "meaning": "", "expects": "true or false"},
        {"parameter": "n", "default": "None", "type": "optional", "meaning": "None: all", "expects": "None or an integer ≥ 1"},
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_parameter_of_a_notebook_has_a_rule_and_every_rule_a_parameter(notebook):
    declared, table = set(papermill.inspect_notebook(str(notebook))), rules.rules_for(notebook.stem)
    assert declared - set(table) == set(), f"parameters of {notebook.name} with no rule in book/rules.py"
    assert set(table) - declared == set(), f"rules in book/rules.py for parameters {notebook.name} does not declare"
    assert all(getattr(rule, "expects", "") for rule in table.values()), "every rule says what it expects"


def test_every_rule_table_belongs_to_a_notebook():
    assert set(rules.CHAPTERS) == {path.stem for path in NOTEBOOKS}


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
    assert board.loc[2, "verdict"] == "does not hold (no interval)" and board.loc[2, "numeric"] == "not reproduced"
    counts = dict(zip(*pages.verdict_counts(board).to_dict("list").values()))
    assert counts == {"holds (no interval)": 1, "does not hold (no interval)": 1, "not measured": 1}
    assert sum(counts.values()) == len(board)  # one verdict per claim
    numeric = dict(zip(*pages.verdict_counts(board, "numeric").to_dict("list").values()))
    assert numeric == {"not reproduced": 1, "—": 2}
    assert pages.claims_dashboard(tmp_path, chapters=["02_b"])["claim"].tolist() == ["exact"]


def test_provenance_and_sortable_table(tmp_path):
    table = pages.provenance(result("01_a", []))
    assert table.loc["model", "this build"] == "m"
    assert table.loc["run time", "this build"] == "1.5 s"
    html = pages.SortableTable(pages.claims_dashboard(tmp_path))._repr_html_()
    assert html.startswith('<table class="eg-sortable">')
    escaped = pages.SortableTable(__import__("pandas").DataFrame({"a": ["<b>"]}))._repr_html_()
    assert "&lt;b&gt;" in escaped


BENCH = {
    "extraction": {"texts": 10, "tokens": 100, "bare_tokens_per_s": 1000, "extract_tokens_per_s": 950, "ratio": 0.95, "target": 0.9},
    "batching": {"texts": 10, "loop_s": 8.0, "extract_s": 2.0, "gain": 4.0, "target": 5.0},
    "cache": {"texts": 10, "first_s": 3.0, "second_s": 0.1, "speedup": 30.0, "target": 20.0},
    "build": {"cold_s": 100.0, "warm_s": 10.0, "warm_fraction": 0.1, "target": 0.15, "warm_skipped_every_chapter": False, "chapters": 3},
    "memory": {"runs": [{"n_texts": 200, "peak_rss_mib": 500.0, "seconds": 10}, {"n_texts": 2000, "peak_rss_mib": 520.0, "seconds": 100}],
               "ratio": 1.04, "texts_per_s": 20.0, "target": 1.1},
}


def test_performance_table_judges_each_target(tmp_path, monkeypatch):
    table = pages.performance_table(BENCH)
    assert table["met"].tolist() == [True, False, True, False, True]  # build: a chapter was not skipped
    assert table.loc[4, "detail"] == "200 texts: 500.0 MiB, 2,000 texts: 520.0 MiB; 20.0 texts/s"
    assert pages.performance_table({}).empty
    (tmp_path / "_config.yml").write_text("title: t\n")
    monkeypatch.chdir(tmp_path)
    assert pages.load_bench() is None
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "bench.json").write_text(json.dumps(BENCH))
    assert pages.load_bench()["cache"]["speedup"] == 30.0
