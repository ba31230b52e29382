"""A between test with a null: the value inside a band and, with the null's ``side``, on the side
of the null the published value lies on (chapter 5's [CLS] buckets against uniform attention)."""

import numpy as np
import pytest

from embedding_geometry.book import claims


def judged(tmp_path, null: str, mean: float, n: int = 40):
    (tmp_path / "ch.yaml").write_text(f"""
claims:
  - id: share
    statement: positions 51–100 receive 18 %
    source: seed §1
    metric: share
    unit: texts
    null: {null}
    shape: {{test: between, args: {{low: 0.13, high: 0.23}}, statement: within 5 points of 18 %, above uniform}}
""")
    values = mean + 0.01 * np.random.default_rng(0).standard_normal(n)
    metrics = {"share": float(values.mean()), "per_unit": {"share": values}, "uniform": 0.195}
    return claims.evaluate(claims.load("ch", folder=tmp_path), metrics, "m", family=claims.family_size())[0]


def test_inside_the_band_but_on_the_wrong_side_of_the_null_does_not_hold(tmp_path):
    below_uniform = judged(tmp_path, "{kind: uniform_attention, metric: uniform, side: above}", 0.169)
    assert below_uniform.outcome == "does not hold" and below_uniform.null["side"] == "above"
    assert below_uniform.null["difference"][1] < 0
    above_uniform = judged(tmp_path, "{kind: uniform_attention, metric: uniform, side: above}", 0.215)
    assert above_uniform.outcome == "holds"
    assert judged(tmp_path, "{kind: uniform_attention, metric: uniform, side: below}", 0.169).outcome == "holds"


def test_without_a_side_a_between_test_reads_the_band_alone(tmp_path):
    assert judged(tmp_path, "{kind: uniform_attention, metric: uniform}", 0.169).outcome == "holds"


def test_straddling_the_null_is_inconclusive_whatever_the_band_says(tmp_path):
    straddling = judged(tmp_path, "{kind: uniform_attention, metric: uniform, side: above}", 0.195)
    assert straddling.outcome == "inconclusive" and straddling.statistic["p_holds"] < 1e-3  # inside the band
    lo, hi = straddling.null["difference"]
    assert lo < 0 < hi


def test_a_side_must_be_above_or_below(tmp_path):
    with pytest.raises(claims.LedgerError, match="null side must be above or below"):
        judged(tmp_path, "{kind: uniform_attention, metric: uniform, side: left}", 0.2)
