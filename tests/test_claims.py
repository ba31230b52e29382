"""Claims: reducers on relative depth, bootstrap intervals, nulls, verdicts, prose from the
ledger, tables and the atomic results JSON — on synthetic metrics with known answers."""

import json

import numpy as np
import pytest

from embedding_geometry.book import claims, intervals, reducers, shapes

METRICS = {"curve": {"hard": [0.2, 0.5, 0.9, 0.7]}, "gap": 0.12, "missing": None}
MODEL = "org/published-model"


def ledger(tmp_path, text):
    (tmp_path / "ch.yaml").write_text(text)
    return claims.load("ch", folder=tmp_path)


def judged(tmp_path, text, metrics, model=MODEL, **options):
    return {v.claim.id: v for v in claims.evaluate(ledger(tmp_path, text), metrics, model, **options)}


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


# --------------------------------------------------------------------------- reducers and depth

def test_reducers_and_lookup():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.0])
    assert claims.reduce_metric(series, "argmax") == 1
    assert claims.reduce_metric(series, "argmax_relative") == 0.25
    assert claims.reduce_metric(series, "at_relative:0.5") == 0.3
    assert claims.reduce_metric(series, "last") == 0.0
    assert claims.reduce_metric(series, "penultimate") == 0.2
    assert claims.lookup(METRICS, "curve.hard") == [0.2, 0.5, 0.9, 0.7]
    with pytest.raises(KeyError, match="missing 'soft'"):
        claims.lookup(METRICS, "curve.soft")
    with pytest.raises(ValueError, match="reduce must be one of"):
        claims.reduce_metric(series, "median")


def test_last_over_is_growth_after_a_relative_depth():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.8])
    assert claims.reduce_metric(series, "last_over:0.75") == pytest.approx(4.0)  # 0.8 / 0.2


@pytest.mark.parametrize("L, index, label", [
    (6, 2, "depth 2 of 6 (l/L = 0.33)"),   # 0.25 · 6 = 1.5: the tie goes deeper, and the label says so
    (24, 6, "depth 6 of 24 (l/L = 0.25)"),
])
def test_at_relative_names_the_depth_it_landed_on(L, index, label):
    series = np.arange(L + 1) / 10
    assert reducers.index_at(0.25, L + 1) == index
    assert claims.reduce_metric(series, "at_relative:0.25") == pytest.approx(index / 10)
    assert reducers.where("at_relative:0.25", series) == label


@pytest.mark.parametrize("L, tail", [(6, 1), (24, 3)])
def test_last_fraction_is_the_share_in_the_last_tenth_of_the_blocks(L, tail):
    """On L = 6 the last 10 % of relative depth holds 1 block (l/L = 1 > 0.9), on L = 24 it holds
    3 (22/24, 23/24, 24/24 > 0.9): "the last two" is 2/6 of one network and 2/24 of the other."""
    hist = np.ones(L)
    assert claims.reduce_metric(hist, "last_fraction:0.1", series="blocks") == pytest.approx(tail / L)
    assert reducers.where("last_fraction:0.1", hist, "blocks").startswith(f"the last {tail} of {L} entries")
    assert claims.reduce_metric(np.eye(L)[-1], "last_fraction:0.1", series="blocks") == 1.0


def test_block_series_are_named_by_the_depth_they_write():
    hist = np.array([0, 0, 5, 0, 0, 1.0])  # blocks 1..6
    assert claims.reduce_metric(hist, "argmax", series="blocks") == 3
    assert claims.reduce_metric(hist, "argmax_relative", series="blocks") == 0.5
    assert reducers.where("max", hist, "blocks") == "block 3 of 6 (l/L = 0.50)"
    assert reducers.depth_text(3, 24) == "depth 3 of 24 (l/L = 0.12)"


def test_reducers_are_vectorised_over_rows():
    rows = np.array([[0.1, 0.5, 0.2], [0.3, 0.1, 0.9]])
    assert reducers.reduce_array(rows, "argmax").tolist() == [1, 2]
    assert reducers.reduce_array(rows, "at_relative:0.5").tolist() == [0.5, 0.1]


# --------------------------------------------------------------------------- shape tests

def test_series_statistics():
    assert claims.SHAPES["peaks_inside"]([0.1, 0.3, 0.2])
    assert not claims.SHAPES["peaks_inside"]([0.1, 0.2, 0.3])
    assert claims.SHAPES["rises"]([0.1, 0.0, 0.3]) and claims.SHAPES["falls"]([0.3, 0.5, 0.1])
    assert shapes.statistic("peaks_inside", [0.1, 0.3, 0.2]) == pytest.approx(0.1)
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.8])
    assert claims.SHAPES["dips_inside"](series)  # 0.4 → 0.3 inside the network
    assert not claims.SHAPES["dips_inside"](np.array([0.1, 0.2, 0.3, 0.1]))  # only the last step falls


def test_second_rise_needs_a_rebuild_after_the_dip():
    post = [0.626, 0.881, 0.702, 0.924, 0.417]  # rise, partial reversal, second build, crash
    assert shapes.statistic("second_rise", post) == pytest.approx(0.179)  # min(.881 − .702, .924 − .702)
    decline = [0.1, 0.5, 0.4, 0.3, 0.2]
    assert claims.SHAPES["dips_inside"](decline)  # the loose test passes any decline
    assert not claims.SHAPES["second_rise"](decline)
    assert shapes.statistic("second_rise", decline) < 0


def test_judging_an_interval():
    above = {"bound": 0.5}
    assert shapes.judge("above", above, (0.6, 0.7)) == "holds"
    assert shapes.judge("above", above, (0.3, 0.4)) == "does not hold"
    assert shapes.judge("above", above, (0.4, 0.6)) == "inconclusive"
    assert shapes.judge("above", above, (0.6, 0.7), null=0.8) == "does not hold"  # below chance
    assert shapes.judge("above", above, (0.6, 0.7), null=0.65) == "inconclusive"
    assert shapes.judge("below", {"bound": 0.1}, (0.01, 0.05)) == "holds"
    between = {"low": 0.2, "high": 0.4}
    assert shapes.judge("between", between, (0.25, 0.35)) == "holds"
    assert shapes.judge("between", between, (0.25, 0.35), null=0.3) == "inconclusive"
    assert shapes.judge("between", between, (0.5, 0.6)) == "does not hold"
    assert shapes.threshold_text("second_rise", {}) == "second rise > 0"


# --------------------------------------------------------------------------- the bootstrap

def test_bootstrap_is_the_mean_of_resampled_rows():
    x = np.random.default_rng(3).normal(size=(9, 4))
    samples = intervals.Samples(x)
    fast = intervals.resampled(samples, 50, np.random.default_rng(1))
    drawn = np.random.default_rng(1).integers(0, 9, size=(50, 9))
    assert fast == pytest.approx(np.stack([x[rows].mean(axis=0) for rows in drawn]))
    assert samples.full() == pytest.approx(x.mean(axis=0))


def test_ratio_statistic_is_a_ratio_of_means():
    metrics = {"per_unit": {"between": [[1.0], [3.0]], "within": [[1.0], [3.0]]}, "sep": [1.0]}
    samples = intervals.find_samples(metrics, ["between", "within"])
    assert samples.full() == pytest.approx([1.0])  # mean of the ratios would also be 1 …
    metrics["per_unit"]["within"] = [[2.0], [1.0]]
    assert intervals.find_samples(metrics, {"numerator": "between", "denominator": "within"}).full() == \
        pytest.approx([4 / 3])  # … but (1 + 3) / (2 + 1), not (1/2 + 3/1) / 2
    assert "no per-unit samples" in intervals.find_samples(metrics, "absent")
    assert intervals.find_samples({"x": {"y": [[1.0], [2.0]]}}, {"path": "x.y"}).n_units == 2


def test_difference_of_ratios_resamples_both_with_the_same_units():
    metrics = {"per_unit": {"a_b": [[1.0], [3.0]], "a_w": [[2.0], [1.0]], "b_b": [[1.0], [1.0]], "b_w": [[1.0], [3.0]]}}
    spec = {"minuend": ["a_b", "a_w"], "subtrahend": ["b_b", "b_w"]}
    samples = intervals.find_samples(metrics, spec)
    assert samples.full() == pytest.approx([4 / 3 - 2 / 4])
    only_first = np.array([[1.0, 0.0]])  # a resample that drew the first unit twice
    np.testing.assert_allclose(samples.statistic(only_first), [[1 / 2 - 1 / 1]])
    assert "no per-unit samples" in intervals.find_samples(metrics, {"minuend": "a_b", "subtrahend": "absent"})
    metrics["per_unit"]["c"] = [[1.0], [2.0], [3.0]]
    assert "differ in shape" in intervals.find_samples(metrics, {"minuend": "a_b", "subtrahend": "c"})


def test_bootstraps_keep_the_band_and_its_draws():
    metrics = {"per_unit": {"x": np.random.default_rng(2).normal(size=(12, 3))}}
    found = intervals.bootstraps(metrics, {"x": "x"}, seed=0, resamples=200)["x"]
    assert found.n_units == 12 and found.draws.shape == (200, 3)
    draws = intervals.resampled(intervals.Samples(metrics["per_unit"]["x"]), 200, intervals.generator(0, "x"))
    np.testing.assert_allclose(found.draws, draws)  # the same seeded stream as a claim named "x"
    np.testing.assert_allclose(found.band, np.percentile(draws, [2.5, 97.5], axis=0))
    with pytest.raises(KeyError, match="absent"):
        intervals.bootstraps(metrics, {"y": "absent"}, seed=0)


def test_a_stored_interval_judges_a_statistic_that_is_no_mean(tmp_path):
    text = """
claims:
  - id: reach
    statement: the difference reaches back over half the depths
    source: s
    metric: reach.share
    unit: sentences
    samples: {interval: reach.share_interval, n_units: reach.n_units}
    shape: {test: above, args: {bound: 0.5}}
"""
    v = judged(tmp_path, text, {"reach": {"share": 0.8, "share_interval": [0.6, 1.0], "n_units": 24}})["reach"]
    assert v.verdict == "holds" and v.interval == (0.6, 1.0) and v.n_units == 24
    v = judged(tmp_path, text, {"reach": {"share": 0.6, "share_interval": [0.4, 0.8], "n_units": 24}})["reach"]
    assert v.verdict == "inconclusive"
    v = judged(tmp_path, text, {"reach": {"share": 0.6, "n_units": 24}})["reach"]
    assert v.interval is None and "no stored interval" in v.interval_note and v.verdict.endswith("(no interval)")
    series = text.replace("{test: above, args: {bound: 0.5}}", "{test: peaks_inside}")
    with pytest.raises(claims.LedgerError, match="stored interval"):
        judged(tmp_path, series, {"reach": {"share": 0.6}})


def per_unit_ledger(extra=""):
    return f"""
claims:
  - id: score
    statement: the score is high
    source: seed §1
    metric: score
    unit: sentences
    shape: {{test: above, args: {{bound: 0.5}}, statement: the score exceeds 0.5}}
{extra}"""


def scores(mean, spread=0.05, n=40):
    values = mean + spread * np.random.default_rng(0).standard_normal(n)
    return {"score": float(values.mean()), "per_unit": {"score": values}}


def test_one_verdict_per_case(tmp_path):
    text = per_unit_ledger()
    assert judged(tmp_path, text, scores(0.8))["score"].verdict == "holds"
    assert judged(tmp_path, text, scores(0.2))["score"].verdict == "does not hold"
    straddle = np.linspace(0.1, 0.9, 21)  # mean 0.5 exactly
    assert judged(tmp_path, text, {"score": 0.5, "per_unit": {"score": straddle}})["score"].verdict == "inconclusive"
    v = judged(tmp_path, text, scores(0.8))["score"]
    assert v.n_units == 40 and v.interval[0] < v.measured < v.interval[1]
    assert v.interval[1] - v.interval[0] == pytest.approx(2 * 1.96 * 0.05 / np.sqrt(40), rel=0.3)


def test_by_construction_not_measured_and_description(tmp_path):
    text = """
claims:
  - id: same-token
    statement: CLS starts aligned
    source: s
    metric: cos0
    shape: {test: above, args: {bound: 0.999}}
    by_construction: the same token sits at the same position at depth 0
  - id: colbert
    statement: ColBERT ends at 0.286
    source: s
    metric: colbert
    shape: {test: below, args: {bound: 0.5}}
  - id: exact
    statement: mxbai's value is 0.361 at L3
    source: s
    metric: cos0
    description: a number of the published model only
"""
    found = judged(tmp_path, text, {"cos0": 1.0, "colbert": None, "not_measured": {"colbert": "jina-colbert-v2 was not run"}})
    assert found["same-token"].verdict == "by construction" and "same position" in found["same-token"].reason
    assert found["colbert"].verdict == "not measured" and found["colbert"].reason == "jina-colbert-v2 was not run"
    assert found["exact"].verdict == "description" and found["exact"].measured == 1.0
    counts = claims.tally(found.values())
    assert sum(counts.values()) == 3
    assert not any(r["counted"] for r in claims.records([found["same-token"], found["exact"]]))


def test_bootstrap_is_deterministic_for_a_seed(tmp_path):
    text, metrics = per_unit_ledger(), scores(0.55, spread=0.3)
    first = judged(tmp_path, text, metrics, seed=4)["score"].interval
    assert judged(tmp_path, text, metrics, seed=4)["score"].interval == first
    assert judged(tmp_path, text, metrics, seed=5)["score"].interval != first
    assert intervals.RESAMPLES >= 1000


def test_nulls_are_reported_and_judged(tmp_path):
    control = per_unit_ledger("    null: {kind: control, metric: control_score}")
    metrics = {**scores(0.8), "control_score": 0.9}
    v = judged(tmp_path, control, metrics)["score"]
    assert v.null["value"] == 0.9 and v.null["label"] == "random-init control"
    assert v.verdict == "does not hold"  # clears the bound, but lies below the control
    chance = per_unit_ledger("    null: {kind: chance, value: 0.1}")
    assert judged(tmp_path, chance, scores(0.8))["score"].verdict == "holds"
    missing = judged(tmp_path, control, scores(0.8))["score"]
    assert missing.verdict == "holds" and "not measured" in missing.null["note"]


def test_series_tests_get_an_interval_of_their_statistic(tmp_path):
    text = """
claims:
  - id: peak
    statement: the pair peaks at L13
    source: s
    metric: curve
    reduce: argmax_relative
    unit: pairs
    shape: {test: peaks_inside}
  - id: rebuild
    statement: anisotropy builds again after the dip
    source: s
    metric: flat
    reduce: at_relative:0.5
    unit: sentences
    shape: {test: second_rise}
"""
    noise = 0.02 * np.random.default_rng(1).standard_normal((30, 7))
    curve = np.array([0.2, 0.5, 0.8, 0.9, 0.7, 0.5, 0.3]) + noise
    flat = np.array([0.5, 0.7, 0.6, 0.559, 0.5595, 0.560, 0.4]) + 5 * noise
    metrics = {"curve": curve.mean(0), "flat": flat.mean(0), "per_unit": {"curve": curve, "flat": flat}}
    found = judged(tmp_path, text, metrics)
    assert found["peak"].verdict == "holds" and found["peak"].statistic["support"] > 0.99
    assert found["peak"].depth == "depth 3 of 6 (l/L = 0.50)"
    assert found["rebuild"].verdict != "holds"  # a rebound of 0.001 is no second build


def test_samples_must_reproduce_the_metric(tmp_path):
    with pytest.raises(claims.LedgerError, match="must average over axis 0"):
        judged(tmp_path, per_unit_ledger(), {"score": 0.9, "per_unit": {"score": np.full(5, 0.8)}})


def test_fraction_derives_the_bound_and_marks_the_table(tmp_path):
    text = """
claims:
  - id: jump
    statement: Separability jumps about 20× in the final five layers.
    source: s
    metric: jump
    published: {value: 20.0, model: big}
    unit: sentences
    fraction: 0.5
    fraction_reason: a 6-block model has fewer blocks to grow over
    shape: {test: above, statement: separability grows in the last fifth}
"""
    assert ledger(tmp_path, text).claims[0].test == ("above", {"bound": 10.0})
    assert judged(tmp_path, text, {"jump": 12.0, "per_unit": {"jump": np.linspace(11, 13, 30)}})["jump"].verdict == "holds"
    found = judged(tmp_path, text, {"jump": 9.0, "per_unit": {"jump": np.linspace(8, 10, 30)}})
    row = claims.table(list(found.values())).iloc[0]
    assert "[> 10]" in row["test"] and "loosened to 0.5 × the published 20" in row["test"]
    assert row["verdict"] == "does not hold"
    with pytest.raises(claims.LedgerError, match="fraction_reason"):
        ledger(tmp_path, text.replace("    fraction_reason: a 6-block model has fewer blocks to grow over\n", ""))
    with pytest.raises(claims.LedgerError, match="no args.bound"):
        ledger(tmp_path, text.replace("test: above,", "test: above, args: {bound: 2},"))


# --------------------------------------------------------------------------- ledgers without intervals

def test_numeric_verdicts_only_on_the_published_model(tmp_path):
    book = ledger(tmp_path, LEDGER)
    same = {v.claim.id: v for v in claims.evaluate(book, METRICS, MODEL)}
    assert (same["peak"].numeric, same["peak"].shape) == ("reproduced", "holds")
    assert (same["gap"].numeric, same["gap"].shape) == ("not reproduced", "does not hold")
    other = {v.claim.id: v for v in claims.evaluate(book, METRICS, "another/model")}
    assert other["peak"].numeric is None and other["peak"].shape == "holds"
    assert other["missing"].measured is None and other["missing"].shape == "not measured"


def test_a_ledger_without_units_is_judged_on_its_value_and_says_so(tmp_path):
    found = judged(tmp_path, LEDGER, METRICS)
    assert found["peak"].verdict == "holds (no interval)" and found["peak"].interval_note == "no sampling unit declared"
    assert found["gap"].verdict == "does not hold (no interval)"
    assert found["missing"].verdict == "not measured"
    assert claims.verdict_text(None, None) != "measured only"
    assert claims.verdict_text(None, None, measured=False) == "not measured"


def test_tables(tmp_path):
    book = ledger(tmp_path, LEDGER)
    table = claims.table(claims.evaluate(book, METRICS, "another/model"))
    assert list(table.columns) == ["claim", "published (model)", "this run (model)", "verdict", "numeric",
                                   "95% interval", "null", "test"]
    assert table.loc[0, "published (model)"] == "0.9 (org/published-model)"
    assert table.loc[0, "this run (model)"] == "0.9 (another/model) at depth 2 of 3 (l/L = 0.67)"
    assert table.loc[1, "verdict"] == "does not hold (no interval)"
    assert table.loc[1, "95% interval"] == "— (no sampling unit declared)"
    assert table.loc[2, "this run (model)"] == "not measured (another/model)"
    errata = claims.errata_table(book)
    assert errata.loc[0, "data_value"] == 0.8798


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


def test_every_packaged_ledger_loads():
    from importlib import resources

    folder = resources.files("embedding_geometry") / "data" / "claims"
    for item in folder.iterdir():
        for claim in claims.load(item.name.removesuffix(".yaml")).claims:  # Claim checks reduce, shape, unit, null
            assert claim.test is None or claim.test[0] in claims.SHAPES


# --------------------------------------------------------------------------- prose from the ledger

def mixed(tmp_path):
    text = per_unit_ledger() + """
  - id: weak
    statement: the weak score is high
    source: s
    metric: weak
    unit: sentences
    shape: {test: above, args: {bound: 0.5}}
  - id: absent
    statement: a model we did not run
    source: s
    metric: absent
    shape: {test: above, args: {bound: 0}}
  - id: start
    statement: starts aligned
    source: s
    metric: start
    shape: {test: above, args: {bound: 0.999}}
    by_construction: the same token at the same position
"""
    weak = np.linspace(0.1, 0.9, 21)
    metrics = {**scores(0.8), "weak": 0.5, "absent": None, "start": 1.0}
    metrics["per_unit"]["weak"] = weak
    return claims.evaluate(ledger(tmp_path, text), metrics, "org/small")


def test_sentences_state_verdict_number_and_interval(tmp_path):
    found = {v.claim.id: v for v in mixed(tmp_path)}
    text = claims.sentence(found["score"])
    lo, hi = found["score"].interval
    assert text.startswith("The score exceeds 0.5 — holds on org/small: ")
    assert f"95 % interval [{lo:.4g}, {hi:.4g}] over 40 sentences" in text and "test > 0.5" in text
    assert "inconclusive" in claims.sentence(found["weak"])
    assert "not measured" in claims.sentence(found["absent"])
    assert "true by construction (the same token at the same position)" in claims.sentence(found["start"])


def test_summary_names_every_claim_that_does_not_hold(tmp_path):
    found = mixed(tmp_path)
    text = claims.chapter_summary(found)
    assert text.startswith("Of 4 claims — holds 1, inconclusive 1, not measured 1; shown, not counted: by construction 1.")
    assert claims.summary_omissions(text, found) == []
    assert "`score`" not in text
    assert claims.summary_omissions(text.replace("`weak`", ""), found) == ["weak"]
    assert claims.summary_omissions("`start-value` only", claims.records(found)) == ["weak", "absent", "start"]


def test_findings_box_and_markdown_to_glue(tmp_path):
    found = mixed(tmp_path)
    box = claims.findings(found, ["score", "weak", "absent"])
    # the section heading says "What this run found"; the box is titled by its tally
    assert box.startswith(":::{admonition} 3 headline claims — holds 1, inconclusive 1, not measured 1\n")
    assert "What this run found" not in box and box.count("\n- ") == 3
    assert "**inconclusive** · The weak score is high: 0.5" in box
    with pytest.raises(ValueError, match="3 to 6"):
        claims.findings(found, ["score"] * 7)
    values = claims.markdown_values(found)
    assert {"findings", "claims_summary", "verdict_legend", "sentence_score"} <= set(values)
    assert values["claims_summary"].data == claims.chapter_summary(found)
    prose = claims.prose_values(found)
    assert prose["shape_weak"] == "inconclusive" and prose["interval_absent"] == "—"


def test_glued_summary_is_read_back_from_an_executed_notebook(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "claims_summary", "mime_prefix": ""}},
         "data": {"text/markdown": ["- `weak` · …\n", "- `absent` · …"]}}]}]}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook))
    assert claims.glued_text(path) == "- `weak` · …\n- `absent` · …"
    assert claims.glued_text(path, "findings") is None
    # papermill, which executes the chapters, stores a glued value under its record's MIME type
    output = notebook["cells"][0]["outputs"][0]
    output["data"] = {"application/papermill.record/text/markdown": "- `weak` · …"}
    path.write_text(json.dumps(notebook))
    assert claims.glued_text(path) == "- `weak` · …"


def test_prose_values_format_each_claim_for_glue(tmp_path):
    values = claims.prose_values(claims.evaluate(ledger(tmp_path, LEDGER), METRICS, MODEL))
    assert values["run_peak"] == "0.9" and values["pub_peak"] == "0.9" and values["shape_peak"] == "holds"
    assert values["verdict_peak"] == "holds (no interval)" and values["depth_peak"] == "depth 2 of 3 (l/L = 0.67)"
    assert values["run_missing"] == "not measured" and values["pub_missing"] == "—"
    assert values["shape_missing"] == "not measured"


# --------------------------------------------------------------------------- results JSON

def _write(tmp_path, metrics, verdicts=()):
    return claims.write_results("ch", model={"id": MODEL}, params={"seed": 0}, inputs={"sentences": ["a"]},
                                metrics=metrics, claims=list(verdicts), device="cpu", started=0.0)


def test_results_json_schema(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path / "out"))
    path = _write(tmp_path, {"curve": np.array([0.1, 0.2]), "n": np.int64(3)}, mixed(tmp_path))
    document = json.loads(path.read_text())
    assert set(document) == {"chapter", "model", "models", "params", "inputs", "metrics", "claims", "environment"}
    assert document["models"] == [document["model"]]  # no models named: the main one
    assert document["metrics"] == {"curve": [0.1, 0.2], "n": 3}
    assert {"python", "torch", "transformers", "device", "seconds"} <= set(document["environment"])
    record = document["claims"][0]
    assert {"interval", "null", "unit", "n_units", "verdict", "fraction"} <= set(record)
    assert record["unit"] == "sentences" and record["n_units"] == 40 and len(record["interval"]) == 2


def test_results_write_is_atomic_and_refuses_nan(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    good = _write(tmp_path, {"x": 1.0}).read_text()
    with pytest.raises(ValueError, match=r"'metrics.curve\[1\]' is nan"):
        _write(tmp_path, {"curve": np.array([0.1, np.nan])})
    assert (tmp_path / "ch.json").read_text() == good
    assert [p.name for p in tmp_path.iterdir()] == ["ch.json"]


def test_a_malformed_ledger_entry_is_one_line_naming_the_claim(tmp_path):
    base = per_unit_ledger()
    with pytest.raises(claims.LedgerError, match="claim 'score' in ch.yaml has unknown fields \\['units'\\]"):
        ledger(tmp_path, base.replace("unit:", "units:"))
    with pytest.raises(claims.LedgerError, match="unit must be one of"):
        ledger(tmp_path, base.replace("unit: sentences", "unit: paragraphs"))
    with pytest.raises(claims.LedgerError, match="null needs kind"):
        ledger(tmp_path, base + "    null: {kind: control}\n")
    with pytest.raises(claims.LedgerError, match="needs args.bound"):
        ledger(tmp_path, base.replace("args: {bound: 0.5}, ", ""))
