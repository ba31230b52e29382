"""Claims: reducing metrics, verdicts on synthetic metrics, tables, and the atomic results JSON."""

import json

import numpy as np
import pytest

from embedding_geometry.book import claims

METRICS = {"curve": {"hard": [0.2, 0.5, 0.9, 0.7]}, "gap": 0.12, "missing": None}
MODEL = "org/published-model"


def ledger(tmp_path, text):
    (tmp_path / "ch.yaml").write_text(text)
    return claims.load("ch", folder=tmp_path)


LEDGER = """
claims:
  - id: peak
    statement: the hard pair peaks inside the network
    source: seed §1
    metric: curve.hard
    reduce: max
    published: {value: 0.9, model: org/published-model}
    tolerance: 0.01
    shape: {test: peaks_inside}
  - id: gap
    statement: the gap is large
    source: seed §2
    metric: gap
    published: {value: 0.3, model: org/published-model}
    tolerance: 0.05
    shape: {test: above, args: {bound: 0.2}}
  - id: missing
    statement: needs a model feature
    source: seed §3
    metric: missing
    shape: {test: below, args: {bound: 1}}
errata:
  - {id: e1, statement: prose says 0.88, prose_value: 0.88, data_value: 0.8798, evidence: chart data}
"""


def test_reducers_and_lookup():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.0])
    assert claims.reduce_metric(series, "argmax") == 1
    assert claims.reduce_metric(series, "argmax_relative") == 0.25
    assert claims.reduce_metric(series, "at_relative:0.5") == 0.3
    assert claims.reduce_metric(series, "last") == 0.0
    assert claims.lookup(METRICS, "curve.hard") == [0.2, 0.5, 0.9, 0.7]
    with pytest.raises(KeyError, match="missing 'soft'"):
        claims.lookup(METRICS, "curve.soft")
    with pytest.raises(ValueError, match="reduce must be one of"):
        claims.reduce_metric(series, "median")


def test_numeric_verdicts_only_on_the_published_model(tmp_path):
    book = ledger(tmp_path, LEDGER)
    same = {v.claim.id: v for v in claims.evaluate(book, METRICS, MODEL)}
    assert (same["peak"].numeric, same["peak"].shape) == ("reproduced", "holds")
    assert (same["gap"].numeric, same["gap"].shape) == ("not reproduced", "does not hold")
    other = {v.claim.id: v for v in claims.evaluate(book, METRICS, "another/model")}
    assert other["peak"].numeric is None and other["peak"].shape == "holds"
    assert other["missing"].measured is None and other["missing"].shape == "not measured"


def test_series_shapes():
    assert claims.SHAPES["peaks_inside"]([0.1, 0.3, 0.2])
    assert not claims.SHAPES["peaks_inside"]([0.1, 0.2, 0.3])
    assert claims.SHAPES["rises"]([0.1, 0.0, 0.3]) and claims.SHAPES["falls"]([0.3, 0.5, 0.1])


def test_tables(tmp_path):
    book = ledger(tmp_path, LEDGER)
    table = claims.table(claims.evaluate(book, METRICS, "another/model"))
    assert list(table.columns) == ["claim", "published (model)", "this run (model)", "verdict"]
    assert table.loc[0, "published (model)"] == "0.9 (org/published-model)"
    assert table.loc[0, "this run (model)"] == "0.9 (another/model)"
    assert table.loc[1, "verdict"] == "shape: does not hold"
    assert table.loc[2, "this run (model)"] == "not measured (another/model)"
    errata = claims.errata_table(book)
    assert errata.loc[0, "data_value"] == 0.8798


def _write(tmp_path, metrics):
    return claims.write_results("ch", model={"id": MODEL}, params={"seed": 0}, inputs={"sentences": ["a"]},
                                metrics=metrics, claims=[], device="cpu", started=0.0)


def test_results_json_schema(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    path = _write(tmp_path, {"curve": np.array([0.1, 0.2]), "n": np.int64(3)})
    document = json.loads(path.read_text())
    assert set(document) == {"chapter", "model", "params", "inputs", "metrics", "claims", "environment"}
    assert document["metrics"] == {"curve": [0.1, 0.2], "n": 3}
    assert {"python", "torch", "transformers", "device", "seconds"} <= set(document["environment"])


def test_results_write_is_atomic_and_refuses_nan(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    good = _write(tmp_path, {"x": 1.0}).read_text()
    with pytest.raises(ValueError, match=r"'metrics.curve\[1\]' is nan"):
        _write(tmp_path, {"curve": np.array([0.1, np.nan])})
    assert (tmp_path / "ch.json").read_text() == good
    assert [p.name for p in tmp_path.iterdir()] == ["ch.json"]


def test_every_packaged_ledger_loads():
    from importlib import resources

    folder = resources.files("embedding_geometry") / "data" / "claims"
    for item in folder.iterdir():
        book = claims.load(item.name.removesuffix(".yaml"))
        for claim in book.claims:
            assert claim.reduce in claims.REDUCERS or claim.reduce.startswith(("at_relative:", "last_over:"))
            if claim.shape:
                assert claim.shape["test"] in claims.SHAPES


def test_penultimate_last_over_and_dips_inside():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.8])
    assert claims.reduce_metric(series, "penultimate") == 0.2
    assert claims.reduce_metric(series, "last_over:0.75") == pytest.approx(4.0)  # 0.8 / 0.2
    assert claims.SHAPES["dips_inside"](series)  # 0.4 → 0.3 inside the network
    assert not claims.SHAPES["dips_inside"](np.array([0.1, 0.2, 0.3, 0.1]))  # only the last step falls


def test_measured_on_names_the_model_a_claim_was_measured_on(tmp_path):
    book = ledger(tmp_path, """
claims:
  - id: other
    statement: the other model ends at 0.3
    source: seed §4
    metric: curve.hard
    reduce: last
    published: {value: 0.7, model: org/other}
    tolerance: 0.01
    measured_on: org/other
""")
    (verdict,) = claims.evaluate(book, METRICS, MODEL)
    assert verdict.model == "org/other" and verdict.numeric == "reproduced"


def test_prose_values_format_each_claim_for_glue(tmp_path):
    values = claims.prose_values(claims.evaluate(ledger(tmp_path, LEDGER), METRICS, MODEL))
    assert values["run_peak"] == "0.9" and values["pub_peak"] == "0.9" and values["shape_peak"] == "holds"
    assert values["run_missing"] == "not measured" and values["pub_missing"] == "—"
    assert values["shape_missing"] == "not measured"
