"""Reader-facing pages: parameter tables from notebooks, provenance, the claims dashboard."""

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import papermill
import pytest

from embedding_geometry.book import claims, pages, performance, results, rules, tables
from embedding_geometry.book.claims import words
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
    write_notebook(tmp_path, "01_x", 'model = "m"  # which model\nsizes = [1, 2]  # some sizes\n'
                   'flag: bool = False\nn = None  # None: all\n')
    monkeypatch.chdir(tmp_path)
    rule_table = {"model": p.text, "sizes": p.number_list(0, 5), "flag": p.boolean, "n": p.optional(p.integer(1))}
    monkeypatch.setattr(rules, "chapters", lambda: {"01_x": rule_table})
    table = pages.parameter_table("01_x")
    assert table.to_dict("records") == [
        {"parameter": "model", "default": '"m"', "type": "str", "meaning": "which model",
         "expects": "a non-empty string"},
        {"parameter": "sizes", "default": "[1, 2]", "type": "list", "meaning": "some sizes",
         "expects": "a non-empty list of numbers in [0, 5]"},
        {"parameter": "flag", "default": "False", "type": "bool", "meaning": "", "expects": "true or false"},
        {"parameter": "n", "default": "None", "type": "optional", "meaning": "None: all",
         "expects": "None or an integer ≥ 1"},
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_parameter_of_a_notebook_has_a_rule_and_every_rule_a_parameter(notebook):
    declared, table = set(papermill.inspect_notebook(str(notebook))), rules.rules_for(notebook.stem)
    assert declared - set(table) == set(), f"parameters of {notebook.name} with no rule in book/rules.py"
    assert set(table) - declared == set(), f"rules in book/rules.py for parameters {notebook.name} does not declare"
    assert all(getattr(rule, "expects", "") for rule in table.values()), "every rule says what it expects"


def test_every_rule_table_belongs_to_a_notebook():
    assert set(rules.chapters()) == {path.stem for path in NOTEBOOKS}


def result(chapter, claims):
    return {"chapter": chapter, "model": {"id": "m", "sha256": "abc", "layers": 3, "hidden": 40},
            "params": {"seed": 0}, "inputs": {}, "metrics": {}, "claims": claims,
            "environment": {"python": "3.11", "torch": "2", "transformers": "5", "device": "cpu", "seconds": 1.5}}


def test_chapter_claims_table_rows_carry_their_anchor():
    ledger = claims.Ledger(chapter="01_a",
                           claims=[claims.Claim(id="gap-end", statement="a gap", source="s", metric="gap"),
                                   claims.Claim(id="peak", statement="a peak", source="s", metric="peak")])
    found = claims.evaluate(ledger, {"gap": 0.2, "peak": 0.5}, "m", family=claims.family_size())
    html = pages.claims_table(found)._repr_html_()
    assert html.startswith('<details class="eg-fold"><summary>The 2 claims this chapter tests')  # folded
    assert '<table class="eg-table eg-cards">' in html  # one card per claim (_static/book.css)
    assert html.count("<tr id=") == 2 and '<tr id="claim-gap-end">' in html and '<tr id="claim-peak">' in html
    assert '<td data-label="null" class="eg-empty">—</td>' in html  # a card leaves out what holds nothing
    assert re.findall(r"<th [^>]*>(.*?)</th>", html) == ["claim", "home", *list(words.row(found[0].record()))[1:]]


def test_a_re_judged_claim_links_to_its_row_in_its_home_chapter():
    ledger = claims.Ledger(chapter="08_a", claims=[
        claims.Claim(id="gap-end", statement="a gap", source="s", metric="gap", home="01_layer_by_layer"),
        claims.Claim(id="peak", statement="a peak", source="s", metric="peak")])
    one = pages.claims_cards(claims.evaluate(ledger, {"gap": 0.2, "peak": 0.5}, "m", family=claims.family_size()))
    html = one._repr_html_()
    assert '<a href="01_layer_by_layer.html#claim-gap-end">counted in 1 · layer by layer</a>' in html
    assert one.frame["home"].tolist() == ["counted in 1 · layer by layer", "—"]  # the plain-text output names it
    two = pages.claims_cards(claims.evaluate(ledger, {"gap": 0.2, "peak": 0.5}, "m", family=claims.family_size())
                             + claims.evaluate(ledger, {"gap": 0.3, "peak": 0.4}, "n",
                                               family=claims.family_size()))._repr_html_()
    assert two.count('href="01_layer_by_layer.html#claim-gap-end"') == 1 and pages.claim_href("01_a", "x") == \
        "01_a.html#claim-x"


def test_provenance_and_html_tables(tmp_path):
    shown = pages.provenance(result("01_a", []))
    assert shown.frame.loc["model", "this build"] == "m"
    assert shown.frame.loc["run time", "this build"] == "1.5 s"
    html = shown._repr_html_()
    assert 'href="../../downloads/results/01_a.json"' in html  # the results JSON, linked, never a local path
    assert "<details" in html and "<code>0</code>" in html  # its parameters folded, values as code
    frame = pd.DataFrame({"a": ["<b>", "x"]})
    assert "&lt;b&gt;" in pages.HtmlTable(frame)._repr_html_()
    assert repr(pages.HtmlTable(frame)) == repr(frame)  # the plain-text output does not change from run to run


BENCH = {
    "figures": [performance.figure("roofline", "roofline ratio, MiniLM", 0.72, "≥", 0.7, "median of 3"),
                performance.figure("cache", "cache speed-up, MiniLM", 12.0, "≥", 20, "3 s vs 0.25 s"),
                performance.figure("batching", "batching gain", 4.0, None, None, "8 s vs 2 s"),
                performance.figure("build", "warm ÷ cold book build", 0.1, "<", 0.15, "", met=False),
                performance.figure("memory", "chapter 4 peak RSS", 1.04, "≤", 1.10, "200 texts: 500 MiB")],
    "build": {"chapters": {"01_a": {"wall_s": 20.0, "forward_s": 12.0, "analysis_s": 5.5, "fixed_s": 2.5,
                                    "to_first_model_use_s": 1.5, "model_used": True, "cpu_to_first_model_use_s": 0.7},
                           "98_b": {"wall_s": 2.0, "forward_s": 0.0, "analysis_s": 0.2, "fixed_s": 1.8,
                                    "to_first_model_use_s": 0.8, "model_used": False}}},
    "machine": {"cpus": 2, "command": ".venv/bin/python benchmarks/run.py"},
}


def test_performance_table_shows_each_target_and_met_flag(tmp_path, monkeypatch):
    table = performance.performance_table(BENCH)
    assert table["met"].tolist() == ["yes", "no", "—", "no", "yes"]  # build: set by the benchmark (a chapter ran)
    assert table["target"].tolist() == ["≥ 0.7", "≥ 20", "information", "< 0.15", "≤ 1.1"]
    assert performance.figure("s", "x", 3.0, "≤", 3)["met"] and not performance.figure("s", "x", 3.0, "<", 3)["met"]
    assert performance.performance_table({}).empty
    assert performance.build_table(BENCH)["start → first model use s"].tolist() == [1.5, "0.8 (no model)"]
    assert performance.build_table(BENCH)["its CPU s"].tolist() == [0.7, "—"]
    (tmp_path / "_config.yml").write_text("title: t\n")
    monkeypatch.chdir(tmp_path)
    assert performance.load_bench() is None
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "bench.json").write_text(json.dumps(BENCH))
    assert performance.load_bench()["figures"][1]["value"] == 12.0
    for damaged in ({"figures": [{"figure": "x"}]}, {"figures": [{**BENCH["figures"][0], "sense": ">"}]},
                    {"build": {"chapters": {"01_a": {"wall_s": "slow"}}}}, {"figures": {}}):
        (tmp_path / "build" / "bench.json").write_text(json.dumps(damaged))
        with pytest.raises(results.DamagedResultsError,
                           match=r"^benchmark file build/bench.json is not usable: .*make bench$"):
            performance.load_bench()


def test_the_performance_report_with_and_without_figures(tmp_path):
    assert performance.PerformanceReport(None, pd.DataFrame())._repr_html_().count("<code>make bench</code>") == 1
    empty = performance.PerformanceReport({"machine": {}}, pd.DataFrame())._repr_html_()
    assert empty.count("<table") == 1 and "The time budget" in empty  # the budget's table only: "not measured"
    html = performance.PerformanceReport(BENCH)._repr_html_()
    assert html.count("<table") == 4 and "roofline ratio, MiniLM" in html and "0.8 (no model)" in html
    assert "benchmarks/run.py" in html and "<h3>The cold build on params/mpnet.yaml" not in html
    with_mpnet = performance.PerformanceReport(
        {**BENCH, "mpnet_build": {"chapters": {"01_a": BENCH["build"]["chapters"]["01_a"]}}})
    assert with_mpnet._repr_html_().count("<table") == 5  # its own per-chapter table, under its own heading
    assert "<h3>The cold build on params/mpnet.yaml, chapter by chapter</h3>" in with_mpnet._repr_html_()


def test_without_bench_figures_the_performance_page_shows_the_chapter_times_the_build_recorded(tmp_path):
    state = tmp_path / "build" / "state"
    state.mkdir(parents=True)
    (state / "01_a.json").write_text(json.dumps({"fingerprint": "f", "seconds": 12.34}))
    (state / "99_dashboard.json").write_text(json.dumps({"seconds": 1.0}))  # a reference page: left out
    (state / "02_c.json").write_text("{damaged")  # left out, not an error
    times = performance.chapter_times(tmp_path)
    assert times["chapter"].tolist() == ["1 · a"] and times["seconds"].tolist() == [12.3]
    html = performance.PerformanceReport(None, times)._repr_html_()
    assert "12 s in all" in html and "<td data-label=\"chapter\">1 · a</td>" in html
    stamped = performance.PerformanceReport(
        {**BENCH, "machine": {"measured_at": "2026-11-20 10:00", "commit": "abc1234"}})
    assert "on 2026-11-20 10:00 at commit <code>abc1234</code>" in stamped._repr_html_()


def test_the_errata_table_keeps_its_columns_and_folds_on_the_page():
    ledger = claims.Ledger(chapter="01_a", claims=[], errata=[
        {"statement": "the prose says 0.9", "prose_value": 0.9, "data_value": 0.85, "evidence": "its table 2"}])
    frame = pages.errata_table(ledger)
    assert list(frame.columns) == ["statement", "prose_value", "data_value", "evidence"]  # what callers rename
    shown = tables.frame_html(frame)
    assert shown.startswith('<details class="eg-fold"><summary>1 erratum: where the text')
    assert "<th" in shown and ">prose value</th>" in shown and "0.85" in shown


def test_the_models_table_shows_each_trained_model_and_its_controls_as_one_row():
    info = {"layers": 6, "hidden": 384, "sha256": "ab" * 32}
    ran = {"org/m": info, "org/n": {**info, "layers": 12, "sha256": None},
           **{f"org/m [random-init control, seed {s}]": {**info, "sha256": f"{s:064x}"} for s in (3, 4, 5)}}
    table = pages.models_table(ran)
    assert table["model"].tolist() == ["org/m", "org/n", "org/m · random-init controls"]
    assert table["kind"].tolist() == ["trained", "trained", "3 controls (seeds 3–5)"]
    assert table["weights (SHA-256)"].tolist() == ["abababababab", "—", "drawn afresh per seed"]
    assert table["blocks L"].tolist() == [6, 12, 6]


def test_the_float_path_report_names_where_each_deviation_is_in_steps_a_cell_can_wrap_between():
    where = "07_training_objective:objectives.finetune.per_seed_difference.other_twin_mean_pool[3][6]"
    found = {"run": {"command": "python benchmarks/float_paths.py", "profile": "default", "commit": "abc1234",
                     "date": "2026-11-28", "machine": "AMD EPYC"},
             "perturbations": {"perturbed": {"spec": "threads=1", "largest": {
                 "trained": {"max": 0.29, "where": where}, "exact": {"max": 0.0, "where": "00b_primer:x"}}}},
             "verdict_changes": {"perturbed": []}, "tolerances": {"trained": 5.0}, "margin": 10}
    shown = performance.FloatPathReport(found)._repr_html_()
    assert "on the path <code>threads=1</code>" in shown and '<td data-label="chapter">07_training_objective' in shown
    metric = "objectives · finetune · per_seed_difference · other_twin_mean_pool[3]\u2060[6]"  # no break in ][
    assert f'<td data-label="metric">{metric}' in shown
    assert "00b_primer" not in shown  # a family that did not move has no row
    assert "<td data-label=\"trained (× scale)\">5</td>" in shown and "Measured with <code>python" in shown
