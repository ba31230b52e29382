"""A chapter that judges its ledger on a second model measured for some claims only (chapters 5
and 6 on the article's all-mpnet-base-v2): metrics recorded per model, claims the chapter did not
measure on that model reported as not measured, and a claim measured on a named model judged once."""

from types import SimpleNamespace

import numpy as np

from embedding_geometry.book import claims
from embedding_geometry.book.claims import words
from embedding_geometry.book.chapter import Chapter, _with_none

LEDGER = """
claims:
  - id: score
    statement: the score is high
    source: seed §1
    metric: score
    unit: sentences
    shape: {test: above, args: {bound: 0.5}, statement: the score exceeds 0.5}
    no_null: size
  - id: attention
    statement: attention is uniform
    source: seed §2
    metric: attention.entropy
    unit: keys
    shape: {test: above, args: {bound: 0.9}, statement: entropy above 0.9}
    no_null: size
  - id: table-row
    statement: model B scores 0.7
    source: seed §3
    metric: rows.b
    measured_on: org/b
    description: a row of the run's table of models
"""


def chapter(tmp_path) -> Chapter:
    (tmp_path / "ch.yaml").write_text(LEDGER)
    ch = Chapter(slug="ch", params={"seed": 0})
    ch.__dict__["ledger"] = claims.load("ch", folder=tmp_path)  # the cached properties, set by hand
    ch.__dict__["model"] = SimpleNamespace(info=SimpleNamespace(id="org/a"))
    return ch


def scores(mean: float, n: int = 30) -> np.ndarray:
    return mean + 0.02 * np.random.default_rng(0).standard_normal(n)


def test_metrics_recorded_for_another_model_join_its_own_metrics(tmp_path):
    ch = chapter(tmp_path)
    ch.add_metrics({"score": 0.8, "per_unit": {"score": [0.8]}})
    ch.add_metrics({"score": 0.3, "per_unit": {"score": [0.3]}}, model="org/b")
    ch.add_metrics({"gap": 1.0, "per_unit": {"gap": [1.0]}}, model="org/a")  # the main model's id: its metrics
    assert ch.metrics == {"score": 0.8, "gap": 1.0, "per_unit": {"score": [0.8], "gap": [1.0]}}
    assert ch.other_models["org/b"] == {"score": 0.3, "per_unit": {"score": [0.3]}}
    assert ch.judged == []  # recorded, not yet judged


def test_a_claim_not_measured_on_the_second_model_says_why(tmp_path):
    ch = chapter(tmp_path)
    values, entropy = scores(0.8), scores(0.95, 8)
    ch.add_metrics(
        {
            "score": float(values.mean()),
            "attention": {"entropy": float(entropy.mean())},
            "rows": {"b": 0.7},
            "per_unit": {"score": values, "attention.entropy": entropy},
        }
    )
    ch.judge_model("org/b", not_measured="measured on the chapter's model only")
    other = scores(0.3)
    ch.add_metrics({"score": float(other.mean()), "per_unit": {"score": other}}, model="org/b")  # after: still judged
    found = {(v.claim.id, v.model): v for v in ch.decide()}
    assert found["score", "org/b"].outcome == "does not hold" and found["score", "org/a"].outcome == "holds"
    missing = found["attention", "org/b"]
    assert missing.status == "not measured" and missing.reason == "measured on the chapter's model only"
    assert [key for key in found if key[0] == "table-row"] == [("table-row", "org/b")]  # judged once, as measured_on
    assert "On b, the data show the opposite of the claim that " in words.report([found["score", "org/b"]])
    assert words.report([missing]).count(">not tested</a>") == 1


def test_with_none_fills_a_missing_path_without_touching_the_original():
    metrics = {"a": {"b": 1}, "x": 2}
    filled = _with_none(metrics, "a.c", "why")
    assert filled == {"a": {"b": 1, "c": None}, "x": 2, "not_measured": {"a.c": "why"}}
    assert metrics == {"a": {"b": 1}, "x": 2} and _with_none(metrics, "a.b", "why") is metrics
