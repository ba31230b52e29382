"""Claims: reducers on relative depth, bootstrap intervals, nulls, verdicts, prose from the
ledger, tables and the atomic results JSON — on synthetic metrics with known answers."""

import json

import re

import numpy as np
import pytest

from embedding_geometry.book import claims, results
from embedding_geometry.core import relative_depth
from embedding_geometry.book.claims import judge, reduce as reducers, words

METRICS = {"curve": {"hard": [0.2, 0.5, 0.9, 0.7]}, "gap": 0.12, "missing": None}
MODEL = "org/published-model"


def ledger(tmp_path, text):
    (tmp_path / "ch.yaml").write_text(text)
    return claims.load("ch", folder=tmp_path)


def judged(tmp_path, text, metrics, model=MODEL, **options):
    found = claims.evaluate(ledger(tmp_path, text), metrics, model, **{"family": claims.family_size(), **options})
    return {v.claim.id: v for v in found}


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
    no_null: size
  - id: gap
    statement: the gap is large
    source: seed §2
    metric: gap
    published: {value: 0.3, model: org/published-model}
    tolerance: 0.05
    shape: {test: above, args: {bound: 0.2}}
    no_null: size
  - id: missing
    statement: needs a model feature
    source: seed §3
    metric: missing
    shape: {test: below, args: {bound: 1}}
    no_null: size
errata:
  - {id: e1, statement: prose says 0.88, prose_value: 0.88, data_value: 0.8798, evidence: chart data}
"""


# --------------------------------------------------------------------------- reducers and depth

def test_reducers_and_lookup():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.0])
    assert reducers.reduce_metric(series, "argmax") == 1
    assert reducers.reduce_metric(series, "argmax_relative") == 0.25
    assert reducers.reduce_metric(series, "at_relative:0.5") == 0.3
    assert reducers.reduce_metric(series, "last") == 0.0
    assert reducers.reduce_metric(series, "penultimate") == 0.2
    assert claims.lookup(METRICS, "curve.hard") == [0.2, 0.5, 0.9, 0.7]
    with pytest.raises(KeyError, match="missing 'soft'"):
        claims.lookup(METRICS, "curve.soft")
    with pytest.raises(ValueError, match="reduce must be one of"):
        reducers.reduce_metric(series, "median")


def test_last_over_is_growth_after_a_relative_depth():
    series = np.array([0.1, 0.4, 0.3, 0.2, 0.8])
    assert reducers.reduce_metric(series, "last_over:0.75") == pytest.approx(4.0)  # 0.8 / 0.2


@pytest.mark.parametrize("L, index, label", [
    (6, 2, "depth 2 of 6 (l/L = 0.33)"),   # 0.25 · 6 = 1.5: the tie goes deeper, and the label says so
    (24, 6, "depth 6 of 24 (l/L = 0.25)"),
])
def test_at_relative_names_the_depth_it_landed_on(L, index, label):
    series = np.arange(L + 1) / 10
    assert relative_depth.index_at(0.25, L + 1) == index
    assert reducers.reduce_metric(series, "at_relative:0.25") == pytest.approx(index / 10)
    assert reducers.where("at_relative:0.25", series) == label


@pytest.mark.parametrize("L, tail", [(6, 1), (24, 3)])
def test_last_fraction_is_the_share_in_the_last_tenth_of_the_blocks(L, tail):
    """On L = 6 the last 10 % of relative depth holds 1 block (l/L = 1 > 0.9), on L = 24 it holds
    3 (22/24, 23/24, 24/24 > 0.9): "the last two" is 2/6 of one network and 2/24 of the other."""
    hist = np.ones(L)
    assert reducers.reduce_metric(hist, "last_fraction:0.1", series="blocks") == pytest.approx(tail / L)
    assert reducers.where("last_fraction:0.1", hist, "blocks").startswith(f"the last {tail} of {L} entries")
    assert reducers.reduce_metric(np.eye(L)[-1], "last_fraction:0.1", series="blocks") == 1.0


def test_a_plateau_is_flatter_in_its_window_than_the_curve_s_average_slope(tmp_path):
    """The post's own curve moves 0.0778 over L10–L14 (0.4037 − 0.3259) against a range of 0.8244
    and a width of 4/24: 0.0778 / (4/24 · 0.8244) = 0.566. A straight line scores exactly 1; a
    curve flat across the window 0; a 6-block model has one depth in the window, so no test."""
    post = [0.0554, 0.24, 0.3032, 0.3606, 0.3281, 0.2852, 0.2093, 0.2763, 0.3096, 0.3726, 0.3881, 0.4037, 0.4028,
            0.3896, 0.3259, 0.2954, 0.4016, 0.4294, 0.3753, 0.3146, 0.3709, 0.4755, 0.5524, 0.7295, 0.8798]
    how = "plateau:10/24-14/24"
    assert reducers.reduce_metric(post, how) == pytest.approx(0.0778 / (4 / 24 * 0.8244))
    assert reducers.reduce_metric(np.linspace(0, 1, 13), how) == pytest.approx(1.0)
    step = np.r_[np.zeros(8), np.ones(5)]  # flat across l/L = 5/12 … 7/12, rising after it
    assert reducers.reduce_metric(step, how) == 0.0
    assert reducers.where(how, post) == "depth 10 of 24 (l/L = 0.42) to depth 14 of 24 (l/L = 0.58)"
    assert reducers.too_narrow(how, 7) and reducers.too_narrow(how, 13) is None
    with pytest.raises(ValueError, match="0 ≤ a < b ≤ 1"):
        reducers.parse("plateau:0.6-0.4")
    text = """
claims:
  - id: plateau
    statement: it plateaus in L10–L14
    source: seed §1
    metric: curve
    reduce: plateau:10/24-14/24
    unit: sentences
    shape: {test: below, args: {bound: 1}, statement: flatter than its average slope}
    says: {holds: it levels off, fails: it does not level off}
    no_null: own-curve
"""
    shallow = judged(tmp_path, text, {"curve": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]})["plateau"]
    assert shallow.verdict == judge.NOT_TESTED and "a plateau needs two" in shallow.reason


def test_block_series_are_named_by_the_depth_they_write():
    hist = np.array([0, 0, 5, 0, 0, 1.0])  # blocks 1..6
    assert reducers.reduce_metric(hist, "argmax", series="blocks") == 3
    assert reducers.reduce_metric(hist, "argmax_relative", series="blocks") == 0.5
    assert reducers.where("max", hist, "blocks") == "block 3 of 6 (l/L = 0.50)"
    assert reducers.entry_text(3, 25) == "depth 3 of 24 (l/L = 0.12)"


def test_reducers_are_vectorised_over_rows():
    rows = np.array([[0.1, 0.5, 0.2], [0.3, 0.1, 0.9]])
    assert reducers.reduce_array(rows, "argmax").tolist() == [1, 2]
    assert reducers.reduce_array(rows, "at_relative:0.5").tolist() == [0.5, 0.1]


# --------------------------------------------------------------------------- shape tests

def test_series_statistics_pick_their_entries_on_each_row():
    assert reducers.statistic("peaks_inside", [0.1, 0.3, 0.2]) == pytest.approx(0.1)
    assert reducers.statistic("rises", [0.1, 0.0, 0.3]) == pytest.approx(0.2)
    assert reducers.statistic("falls", [0.3, 0.5, 0.1]) == pytest.approx(0.2)
    assert reducers.statistic("dips_inside", [0.1, 0.4, 0.3, 0.2, 0.8]) == pytest.approx(0.1)
    assert reducers.statistic("dips_inside", [0.1, 0.2, 0.3, 0.1]) < 0  # only the last step falls
    rows = np.array([[0.1, 0.3, 0.2, 0.0], [0.0, 0.1, 0.5, 0.1]])  # the peak moves from depth 1 to depth 2
    assert reducers.statistic("peaks_inside", rows) == pytest.approx([0.2, 0.4])


def test_two_dips_needs_two_troughs_that_each_recover():
    post = [0.0554, 0.24, 0.3032, 0.3606, 0.3281, 0.2852, 0.2093, 0.2763, 0.3096, 0.3726, 0.3881, 0.4037, 0.4028,
            0.3896, 0.3259, 0.2954, 0.4016, 0.4294, 0.3753, 0.3146, 0.3709, 0.4755, 0.5524, 0.7295, 0.8798]
    assert reducers.statistic("two_dips", post) == pytest.approx(0.4294 - 0.3146)  # its L19 trough, the weaker
    assert reducers.where("two_dips", post) == ("the troughs at depth 6 of 24 (l/L = 0.25) and "
                                               "depth 19 of 24 (l/L = 0.79)")
    one_dip = [0.1, 0.4, 0.2, 0.5, 0.6, 0.9]
    assert reducers.statistic("second_rise", one_dip) == pytest.approx(0.2)
    assert reducers.statistic("two_dips", one_dip) < 0  # one trough is not two
    assert reducers.statistic("two_dips", [0.1, 0.4, 0.2, 0.5, 0.3, 0.9]) == pytest.approx(0.2)
    rows = np.array([[0.1, 0.4, 0.2, 0.5, 0.3, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]])
    assert reducers.statistic("two_dips", rows) == pytest.approx([0.2, -0.1])  # each row its own troughs
    with pytest.raises(ValueError, match="at least 5 depths"):
        reducers.statistic("two_dips", [0.1, 0.3, 0.2, 0.4])


def test_second_rise_needs_a_rebuild_after_the_dip():
    post = [0.626, 0.881, 0.702, 0.924, 0.417]  # rise, partial reversal, second build, crash
    assert reducers.statistic("second_rise", post) == pytest.approx(0.179)  # min(.881 − .702, .924 − .702)
    assert reducers.statistic("second_rise", [0.1, 0.5, 0.4, 0.3, 0.2]) < 0  # a plain decline



# --------------------------------------------------------------------------- the ledger

def per_unit_ledger(extra="", shape="{test: above, args: {bound: 0.5}, statement: the score exceeds 0.5}"):
    no_null = "" if "null:" in extra else "    no_null: size\n"
    return f"""
claims:
  - id: score
    statement: the score is high
    source: seed §1
    metric: score
    unit: sentences
    shape: {shape}
{no_null}{extra}"""


def scores(mean, spread=0.05, n=40, seed=0):
    values = mean + spread * np.random.default_rng(seed).standard_normal(n)
    return {"score": float(values.mean()), "per_unit": {"score": values}}


def test_a_malformed_ledger_entry_is_one_line_naming_the_claim(tmp_path):
    base = per_unit_ledger()
    with pytest.raises(claims.LedgerError, match="claim 'score' in ch.yaml has unknown fields \\['units'\\]"):
        ledger(tmp_path, base.replace("unit:", "units:"))
    with pytest.raises(claims.LedgerError, match="unit must be one of"):
        ledger(tmp_path, base.replace("unit: sentences", "unit: paragraphs"))
    with pytest.raises(claims.LedgerError, match="null needs kind"):
        ledger(tmp_path, base + "    null: {kind: control}\n")
    with pytest.raises(claims.LedgerError, match="is a distribution, not a number"):
        ledger(tmp_path, base + "    null: {kind: control, value: 0.3}\n")
    with pytest.raises(claims.LedgerError, match="kind must be one of"):
        ledger(tmp_path, base + "    kind: opinion\n")
    with pytest.raises(claims.LedgerError, match="needs args.window"):
        ledger(tmp_path, per_unit_ledger(shape="{test: location, args: {window: [0.6, 0.2]}}"))
    with pytest.raises(claims.LedgerError, match="repeats claim ids"):
        ledger(tmp_path, base + base.split("claims:")[1])


def test_every_packaged_ledger_loads_and_the_family_counts_published_claims_at_home():
    from embedding_geometry.book.claims import ledger

    slugs = ledger.ledgers()  # each chapter package's ledger.yaml
    assert "07_training_objective" in slugs and slugs["07_training_objective"].name == "ledger.yaml"
    found = [claim for slug in slugs for claim in claims.load(slug).claims]
    assert claims.family_size() == sum(c.in_family for c in found) > 50
    assert all(c.kind == "published" or not c.in_family for c in found)
    # each claim with a shape test says its finding in its own words for each outcome (at home, or from its home)
    assert [c.id for c in found if c.shape and not c.says] == []
    # a chapter opens with at most five headline claims (CONTRIBUTING, "Claims and verdicts")
    for slug in slugs:
        headlines = [c.id for c in claims.load(slug).claims if c.headline]
        assert 1 <= len(headlines) <= 5, (slug, headlines)


def test_says_takes_a_sentence_per_outcome_and_an_entry_away_from_home_takes_its_homes(tmp_path):
    with pytest.raises(claims.LedgerError, match="says needs exactly"):
        ledger(tmp_path, per_unit_ledger() + '    says: {holds: "it holds"}\n')
    (tmp_path / "01_home.yaml").write_text(per_unit_ledger() + '    says: {holds: "it rises", fails: "it falls"}\n')
    away = per_unit_ledger().replace("  - id: score", "  - id: score\n    home: 01_home")
    (tmp_path / "08_away.yaml").write_text(away)
    assert dict(claims.load("08_away", tmp_path).claims[0].says) == {"holds": "it rises", "fails": "it falls"}


def test_where_a_bound_comes_from(tmp_path):
    text = """
claims:
  - {id: a, statement: s, source: s, metric: x, shape: {test: above, args: {bound: 0}}, no_null: paired}
  - {id: b, statement: s, source: s, metric: x, shape: {test: above, args: {bound: 0.09}}, no_null: size}
  - {id: c, statement: s, source: s, metric: x, published: {value: 20.0, model: m}, fraction: 0.5,
     fraction_reason: why, shape: {test: above}, no_null: size}
"""
    found = {c.id: c for c in ledger(tmp_path, text).claims}
    assert [found[i].bound_source for i in "abc"] == ["sign", "typed", "fraction"]
    assert found["c"].test == ("above", {"bound": 10.0})


# --------------------------------------------------------------------------- verdicts

def test_one_verdict_per_case_decided_on_the_adjusted_p(tmp_path):
    text = per_unit_ledger()
    holds = judged(tmp_path, text, scores(0.8))["score"]
    assert (holds.outcome, holds.record()["verdict"]) == ("holds", "holds")
    assert judged(tmp_path, text, scores(0.2))["score"].record()["verdict"] == "does not hold"
    straddle = np.linspace(0.1, 0.9, 21)  # mean 0.5 exactly
    undecided = judged(tmp_path, text, {"score": 0.5, "per_unit": {"score": straddle}})["score"]
    assert undecided.outcome == "inconclusive" and undecided.p > 0.5
    record = holds.record()
    assert record["n_units"] == 40 and record["interval_method"] == "bootstrap (BCa)" and record["counted"]
    lo, hi = record["interval"]
    assert lo < holds.measured < hi and hi - lo == pytest.approx(2 * 1.96 * 0.05 / np.sqrt(40), rel=0.3)
    m = claims.family_size()
    assert record["family"] == m and record["p_adjusted"] == pytest.approx(min(1, record["p"] * m))
    assert record["p"] < 1e-3 and record["mc_error"] < record["p"]


def test_a_claim_below_0_05_can_be_inconclusive_once_adjusted_and_says_what_its_n_detects(tmp_path):
    rng = np.random.default_rng(4)
    values = 0.5 + 0.035 + 0.1 * rng.standard_normal(60)
    values += 0.535 - values.mean()  # a mean 2.9 standard errors above the bound
    verdict = judged(tmp_path, per_unit_ledger(),
                     {"score": float(values.mean()), "per_unit": {"score": values}})["score"]
    assert verdict.p < 0.05 < verdict.p_adjusted and verdict.outcome == "inconclusive"
    assert verdict.detectable > 0.035  # the effect it would detect with 80 % power is larger than the one seen
    cell = words.verdict_cell(verdict.record())
    assert cell.startswith("inconclusive: too few sentences to tell: 60 detect a difference of ")
    family_of_one = judged(tmp_path, per_unit_ledger(), {"score": float(values.mean()), "per_unit": {"score": values}},
                           family=1)["score"]
    assert family_of_one.outcome == "holds"


def test_small_n_takes_the_exact_sign_flip_test_and_fewer_than_five_units_none(tmp_path):
    text = per_unit_ledger()
    eight = judged(tmp_path, text, scores(0.8, n=8))["score"].record()
    assert eight["interval_method"] == "sign-flip (exact)" and eight["p"] == 2 / 2 ** 8  # every unit above the bound
    # 0.0078 is the smallest p 8 units give: in a chapter of one claim among m it can never clear q / m,
    # so the claim is shown, not counted
    assert eight["verdict"] == "not tested" and eight["status"] == "cannot decide" and not eight["counted"]
    assert eight["reach"] == {"holds": False, "does not hold": False} and "cannot reach" in eight["reason"]
    assert judged(tmp_path, text, scores(0.8, n=8), family=1)["score"].outcome == "holds"
    lo, hi = eight["interval"]
    assert 0.7 < lo < hi < 0.9
    four = judged(tmp_path, text, scores(0.8, n=4))["score"]
    assert four.status == "descriptive" and "fewer than 5" in four.reason and not four.counted


def test_every_unit_agreeing_is_an_exact_result_not_a_census(tmp_path):
    text = per_unit_ledger()  # a share of units above 0.5, each unit 0 or 1
    none = judged(tmp_path, text, {"score": 0.0, "per_unit": {"score": np.zeros(96)}})["score"]
    assert none.outcome == "does not hold" and none.counted and none.statistic["method"] == "binomial (exact)"
    assert none.p_fails == pytest.approx(0.5 ** 96) and none.statistic["interval"][0] == 0.0
    hits = np.r_[np.ones(60), np.zeros(36)]
    share = judged(tmp_path, text, {"score": 0.625, "per_unit": {"score": hits}})["score"]
    lo, hi = share.statistic["interval"]
    assert 0 <= lo < 0.625 < hi <= 1  # Clopper–Pearson stays inside [0, 1]


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
    no_null: size
  - id: exact
    statement: mxbai's value is 0.361 at L3
    source: s
    metric: cos0
    description: a number of the published model only
  - id: no-unit
    statement: the score is high
    source: s
    metric: cos0
    shape: {test: above, args: {bound: 0.5}}
    no_null: size
  - id: twice
    statement: the score is high, again
    source: s
    metric: cos0
    unit: sentences
    shape: {test: above, args: {bound: 0.5}}
    description: its statistic is no-unit's, counted once there
"""
    found = judged(tmp_path, text,
                   {"cos0": 1.0, "colbert": None, "not_measured": {"colbert": "jina-colbert-v2 was not run"}})
    assert {v.record()["verdict"] for v in found.values()} == {"not tested"}
    assert [found[i].status for i in ("same-token", "colbert", "exact", "no-unit", "twice")] == [
        "by construction", "not measured", "descriptive", "descriptive", "descriptive"]
    assert found["colbert"].reason == "jina-colbert-v2 was not run" and found["exact"].measured == 1.0
    assert found["no-unit"].reason == "no sampling unit declared"
    assert found["twice"].reason == "its statistic is no-unit's, counted once there"  # a shape shown, not tested
    assert found["twice"].record()["test"] == "> 0.5" and not found["twice"].claim.in_family
    assert not any(v.counted for v in found.values())


def test_the_bootstrap_is_deterministic_for_a_seed(tmp_path):
    text, metrics = per_unit_ledger(), scores(0.55, spread=0.3)
    first = judged(tmp_path, text, metrics, seed=4)["score"].record()["interval"]
    assert judged(tmp_path, text, metrics, seed=4)["score"].record()["interval"] == first
    assert judged(tmp_path, text, metrics, seed=5)["score"].record()["interval"] != first


def test_samples_must_rebuild_the_metric(tmp_path):
    with pytest.raises(claims.LedgerError, match="must rebuild the metric"):
        judged(tmp_path, per_unit_ledger(), {"score": 0.9, "per_unit": {"score": np.full(5, 0.8)}})


# --------------------------------------------------------------------------- nulls

def test_an_exact_null_is_a_number_and_the_difference_must_clear_zero(tmp_path):
    chance = per_unit_ledger("    null: {kind: chance, value: 0.85}")
    verdict = judged(tmp_path, chance, scores(0.8))["score"]
    assert verdict.null["distribution"] == "exact" and verdict.outcome == "does not hold"  # above 0.5, below chance
    assert judged(tmp_path, chance.replace("0.85", "0.1"), scores(0.8))["score"].outcome == "holds"


def test_a_control_with_seeds_is_compared_unit_by_unit(tmp_path):
    rng = np.random.default_rng(0)
    trained = 0.8 + 0.05 * rng.standard_normal(30)
    seeds = 0.6 + 0.05 * rng.standard_normal((10, 30)) + np.linspace(-0.02, 0.02, 10)[:, None]
    metrics = {"score": float(trained.mean()), "per_unit": {"score": trained, "control": seeds}}
    text = per_unit_ledger("    null: {kind: control, samples: {seeds: control}}")
    verdict = judged(tmp_path, text, metrics)["score"]
    assert verdict.null["distribution"] == "10 seeds, unit by unit" and verdict.outcome == "holds"
    assert verdict.null["difference_value"] == pytest.approx(trained.mean() - seeds.mean())
    assert len(verdict.null["seed_values"]) == 10 and verdict.null["difference"][0] > 0.1
    metrics["per_unit"]["control"] = seeds + 0.25  # the control scores above the trained model
    assert judged(tmp_path, text, metrics)["score"].outcome == "does not hold"


def test_a_null_of_fewer_than_ten_control_seeds_makes_the_claim_descriptive(tmp_path):
    rng = np.random.default_rng(1)
    trained = 0.8 + 0.05 * rng.standard_normal(30)
    text = per_unit_ledger("    null: {kind: control, samples: {seeds: control}}")
    for n in (1, 3, 9):
        control = 0.3 + 0.05 * rng.standard_normal((n, 30))
        verdict = judged(tmp_path, text, {"score": float(trained.mean()),
                                          "per_unit": {"score": trained, "control": control}})["score"]
        assert verdict.status == "descriptive" and not verdict.counted and verdict.outcome is None
        assert f"only {n} random-init control seed" in verdict.reason and "fewer than 10" in verdict.reason
    single = judged(tmp_path, per_unit_ledger("    null: {kind: control, metric: control_score}"),
                    {**scores(0.8), "control_score": 0.3})["score"]
    assert single.status == "descriptive" and "fewer than 10" in single.reason  # one value is one seed


def test_a_single_value_of_another_null_is_reported_as_no_distribution(tmp_path):
    text = per_unit_ledger("    null: {kind: permuted_labels, metric: permuted_score}")
    verdict = judged(tmp_path, text, {**scores(0.8), "permuted_score": 0.3})["score"]
    assert verdict.null["distribution"] == "a single value (no distribution)"


def test_a_permutation_null_gives_its_own_p_and_its_draws_bound_how_small_it_can_be(tmp_path):
    text = per_unit_ledger("    null: {kind: permuted_labels, draws: permuted}")
    metrics = {**scores(0.8), "permuted": 0.78 + 0.05 * np.random.default_rng(1).standard_normal(500)}
    verdict = judged(tmp_path, text, metrics, family=1)["score"]
    assert verdict.null["distribution"] == "500 draws" and verdict.outcome == "inconclusive"
    metrics["permuted"] = metrics["permuted"] - 0.5
    beaten = judged(tmp_path, text, metrics)["score"]
    assert beaten.p_holds == pytest.approx(1 / 501)  # no draw reaches the statistic: (1 + 0) / (N + 1)
    assert beaten.status == "cannot decide"  # 500 draws cannot resolve q / m
    assert judged(tmp_path, text, metrics, family=1)["score"].outcome == "holds"


# --------------------------------------------------------------------------- series and location claims

def _curves(peak_at: int, n: int = 30, noise: float = 0.02, seed: int = 1) -> np.ndarray:
    base = np.array([0.2, 0.4, 0.5, 0.6, 0.5, 0.4, 0.3])
    base[peak_at] = 0.9
    return base + noise * np.random.default_rng(seed).standard_normal((n, 7))


def test_a_location_claim_tests_where_the_peak_is(tmp_path):
    text = """
claims:
  - id: peak
    statement: the hard pair peaks at L12–13 of 24
    source: s
    metric: curve
    unit: pairs
    shape: {test: location, args: {window: [0.46, 0.56], at: max}}
    no_null: size
"""
    at_three = _curves(3)
    found = judged(tmp_path, text, {"curve": at_three.mean(0), "per_unit": {"curve": at_three}})["peak"]
    assert found.outcome == "holds" and found.statistic["value"] == 0.5
    at_one = _curves(1)
    assert judged(tmp_path, text,
                  {"curve": at_one.mean(0), "per_unit": {"curve": at_one}})["peak"].outcome == "does not hold"
    flat = 0.5 + 0.05 * np.random.default_rng(2).standard_normal((30, 7))
    assert judged(tmp_path, text,
                  {"curve": flat.mean(0), "per_unit": {"curve": flat}})["peak"].outcome == "inconclusive"


def test_a_trough_located_among_some_depths_needs_a_dip_there(tmp_path):
    text = """
claims:
  - id: dip
    statement: it dips again around L15
    source: s
    metric: curve
    unit: sentences
    shape: {test: location, args: {window: [0.5, 0.5], at: trough, among: [0.5, 0.84]}}
    no_null: size
"""
    noise = 0.02 * np.random.default_rng(5).standard_normal((30, 7))
    # the whole curve is lowest at depth 0; among depths 3-5 of 6 the lowest trough is depth 3, or depth 5;
    # a curve that only rises there has no trough (NO_TROUGH), although its lowest point is depth 3
    early = np.array([0.0, 0.5, 0.6, 0.3, 0.6, 0.5, 0.9]) + noise
    late = np.array([0.0, 0.5, 0.6, 0.5, 0.6, 0.3, 0.9]) + noise
    rising = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.9]) + noise
    for curves, outcome, at in ((early, "holds", 0.5), (late, "does not hold", 5 / 6), (rising, "does not hold", -1)):
        found = judged(tmp_path, text, {"curve": curves.mean(0), "per_unit": {"curve": curves}})["dip"]
        assert (found.outcome, found.statistic["value"]) == (outcome, at)
    assert words.result_text(found.record()).endswith(": no trough [no trough, no trough]")
    shallow = np.array([0.0, 0.5, 0.6, 0.59, 0.6, 0.7, 0.9]) + noise  # a dip at depth 3 the noise hides
    found = judged(tmp_path, text, {"curve": shallow.mean(0), "per_unit": {"curve": shallow}})["dip"]
    assert found.outcome == "inconclusive" and re.search(r"the resamples put it inside the window \d+ % of the time",
                                                         words.why_undecided(found.record()))
    short = early[:, [0, 2, 4, 6]]  # depths 0-3 of 3: one depth (2/3) lies in [0.5, 0.84]
    found = judged(tmp_path, text, {"curve": short.mean(0), "per_unit": {"curve": short}})["dip"]
    assert found.status == "descriptive" and "hold 1 of the 3-block model's depths" in found.reason
    with pytest.raises(claims.LedgerError, match="takes args.among"):
        ledger(tmp_path, text.replace("among: [0.5, 0.84]", "among: [0.6, 0.84]"))


def test_a_series_test_finds_its_peak_again_in_every_resample(tmp_path):
    text = per_unit_ledger(shape="{test: peaks_inside}").replace("metric: score", "metric: curve")
    flat = 0.5 + 0.05 * np.random.default_rng(3).standard_normal((30, 7))
    metrics = {"curve": flat.mean(0), "per_unit": {"curve": flat}}
    verdict = judged(tmp_path, text, metrics)["score"]
    assert verdict.outcome != "holds"  # noise alone gives no inside peak
    peaked = _curves(3)
    assert judged(tmp_path, text, {"curve": peaked.mean(0), "per_unit": {"curve": peaked}})["score"].outcome == "holds"


def test_two_dips_holds_on_curves_that_dip_twice_and_is_not_tested_on_a_short_series(tmp_path):
    text = per_unit_ledger(shape="{test: two_dips}").replace("metric: score", "metric: curve")
    noise = 0.02 * np.random.default_rng(4).standard_normal((30, 7))
    twice = np.array([0.1, 0.5, 0.2, 0.6, 0.3, 0.7, 0.9]) + noise
    once = np.array([0.1, 0.5, 0.2, 0.6, 0.7, 0.8, 0.9]) + noise
    for curves, outcome in ((twice, "holds"), (once, "does not hold")):
        found = judged(tmp_path, text, {"curve": curves.mean(0), "per_unit": {"curve": curves}})["score"]
        assert found.outcome == outcome and found.statistic["name"] == "weaker of two dips"
    short = twice[:, :4]
    found = judged(tmp_path, text, {"curve": short.mean(0), "per_unit": {"curve": short}})["score"]
    assert found.status == "descriptive" and "needs at least 5" in found.reason


# --------------------------------------------------------------------------- sensitivity

def test_a_fraction_bound_reports_the_fraction_at_which_the_verdict_flips(tmp_path):
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
    no_null: size
"""
    found = judged(tmp_path, text, {"jump": 12.0, "per_unit": {"jump": np.linspace(11, 13, 30)}})["jump"]
    sensitivity = found.record()["sensitivity"]
    lo, hi = found.statistic["interval"]
    assert sensitivity["holds_below"] == pytest.approx(lo / 20) and sensitivity["fails_from"] == pytest.approx(hi / 20)
    assert found.outcome == "holds" and 0.5 < sensitivity["holds_below"]
    row = words.row(found.record())
    assert "0.5 × the published 20" in row["test (its bound)"]
    assert row["sensitivity"].startswith("f = 0.5; the interval clears the bound for f < ")
    below = {**found.record(), "shape": {"test": "below"}, "test": "< 40"}  # a below bound is published / f
    assert words.test_text(below).startswith("< 40 (the published 20 / 0.5: ")


def test_a_fraction_bound_above_an_interval_that_reaches_zero_holds_for_every_fraction_in_finite_results(tmp_path):
    # a bound p / f is positive for every f: an interval below 0 holds for every f and fails for none (once
    # written as inf, which the results JSON refuses: chapter 3 on six sentences failed in its last cell)
    text = """
claims:
  - id: small
    statement: The gap is at most a tenth.
    source: s
    metric: gap
    published: {value: 0.1, model: big}
    unit: sentences
    fraction: 0.5
    fraction_reason: a smaller model
    shape: {test: below, statement: the gap stays small}
    no_null: size
"""
    found = judged(tmp_path, text, {"gap": -0.5, "per_unit": {"gap": np.linspace(-0.6, -0.4, 30)}})["small"]
    assert found.outcome == "holds" and found.statistic["interval"][1] < 0
    sensitivity = found.record()["sensitivity"]
    assert sensitivity["holds_below"] is None and sensitivity["fails_from"] is None
    assert words.sensitivity_text(found.record()) == (
        "f = 0.5; the interval clears the bound for every f, lies past it for no f")
    results.to_jsonable(found.record())  # finite: the results JSON takes it


def test_a_typed_bound_is_marked_and_its_flip_reported(tmp_path):
    text = per_unit_ledger(shape="{test: above, args: {bound: 0.09}}")
    found = judged(tmp_path, text, scores(0.2))["score"].record()
    assert found["bound"]["source"] == "typed" and "typed into the ledger" in words.test_text(found)
    assert found["sensitivity"] is None  # the interval beside it says the rest


# --------------------------------------------------------------------------- words

def _mixed(tmp_path):
    text = per_unit_ledger("    headline: true") + """
  - id: weak
    statement: the weak score is high
    source: s
    metric: weak
    unit: sentences
    headline: true
    shape: {test: above, args: {bound: 0.5}}
    no_null: size
  - id: absent
    statement: a model we did not run
    source: s
    metric: absent
    shape: {test: above, args: {bound: 0}}
    no_null: size
  - id: own
    kind: hypothesis
    statement: our own idea
    source: the book
    metric: score
    unit: sentences
    shape: {test: above, args: {bound: 0.5}}
    no_null: size
"""
    metrics = {**scores(0.8), "weak": 0.5, "absent": None}
    metrics["per_unit"]["weak"] = np.linspace(0.1, 0.9, 21)
    return claims.evaluate(ledger(tmp_path, text), metrics, "org/small", family=claims.family_size())


def test_four_verdict_words_whatever_the_kind(tmp_path):
    found = {v.claim.id: v.record() for v in _mixed(tmp_path)}
    assert [found[i]["verdict"] for i in ("score", "weak", "absent", "own")] == [
        "holds", "inconclusive", "not tested", "holds"]
    assert [found[i]["counted"] for i in ("score", "weak", "absent", "own")] == [True, True, False, False]
    assert set(words.MEANINGS) >= set(words.VERDICTS) | set(words.NUMERIC) and len(words.VERDICTS) == 4


def test_sentences_state_the_finding_and_the_test_and_result_beside_it(tmp_path):
    found = {v.claim.id: v.record() for v in _mixed(tmp_path)}
    text = words.report([found["score"]])
    assert text.startswith('<div class="eg-finding">') and "<br>On small, the score exceeds 0.5.<details>" in text
    assert "<summary>numbers · small</summary>" in text and "&gt; 0.5: " in text  # the numbers fold under it
    assert "p = " in text and ", adjusted " in text and "not measured on small" in words.report([found["absent"]])
    assert words.plain_sentence(found["score"]) == "On small, the score exceeds 0.5."
    assert words.plain_sentence(found["weak"]).startswith("On small, this run cannot tell whether")


def test_the_findings_box_shows_every_headline_whatever_its_outcome(tmp_path):
    found = _mixed(tmp_path)
    box = words.findings(found)
    assert box.count('class="eg-finding"') == 2 and "eg-badge-holds" in box and "eg-badge-inconclusive" in box
    flipped = [v.record() for v in found]
    flipped[0] = {**flipped[0], "outcome": "does not hold", "verdict": "does not hold"}
    assert [r["id"] for r in words.headlines(flipped)] == [r["id"] for r in words.headlines(found)]
    assert "eg-badge-fails" in words.findings(flipped)


def test_a_value_near_zero_is_written_to_its_intervals_decimals():
    assert words.in_scale(-3.569e-06, -0.0004036, 0.0004436) == "-0.0000036"
    assert words.in_scale(1e-9, -0.4, 0.4) == "0"  # below the ends' last decimal
    assert words.in_scale(0.3, 0.28, 0.32) == "0.3" and words.in_scale(2e-7, 1e-7, 3e-7) == "2e-07"


def test_the_findings_open_with_the_headlines_in_one_sentence():
    def claim(*verdicts):
        return [{"model": m, "verdict": v, "outcome": v} for m, v in zip("ab", verdicts)]

    chosen = {"x": claim("holds", "holds"), "y": claim("holds", "holds"), "z": claim("does not hold", "holds"),
              "w": claim("inconclusive", "holds")}
    assert words.in_short(chosen) == ("<strong>In short:</strong> of the chapter's 4 headline claims, 2 hold on "
                                      "both models, 1 differs between the models and 1 is undecided on some model.")
    one = {"x": [{"model": "a", "verdict": "does not hold", "outcome": "does not hold"}]}
    assert words.in_short(one).endswith("of the chapter's 1 headline claim, 1 does not hold.")


def test_the_summary_counts_the_verdicts_and_says_no_claims_sentence_again(tmp_path):
    found = _mixed(tmp_path)
    text = words.chapter_summary(found)
    assert text == "Of 4 claims judged on 1 model (4 verdicts) — holds 2, inconclusive 1, not tested 1.\n"


def test_a_verdict_that_differs_between_the_models_is_said_so(tmp_path):
    text = per_unit_ledger() + """
  - id: both
    statement: both models agree
    source: s
    metric: both
    unit: sentences
    no_null: size
    shape: {test: above, args: {bound: 0.5}}
"""
    found = []
    for model, mean in (("org/all-mpnet-base-v2", 0.8), ("org/all-MiniLM-L6-v2", 0.2)):
        metrics, agreed = scores(mean), scores(0.8)
        metrics.update(both=agreed["score"], per_unit={**metrics["per_unit"], "both": agreed["per_unit"]["score"]})
        found += claims.evaluate(ledger(tmp_path, text), metrics, model, family=claims.family_size())
    expected = "`score`: holds on MPNet but does not hold on MiniLM."
    assert words.differences(found) == [expected]  # the claim both models agree on is not named
    shown = words.report(found)  # each claim once, one sentence per model where they differ
    assert shown.count('<div class="eg-finding">') == 2
    assert "MPNet</span> <a class=\"eg-badge eg-badge-holds" in shown
    assert "On both encoders, the score exceeds 0.5." not in shown and "On both encoders" in shown
    assert f"**The models differ** (1):\n\n- {expected}" in words.chapter_summary(found)
    assert words.differences([v for v in found if v.model.endswith("mpnet-base-v2")]) == []


def test_maths_in_a_claim_is_set_as_maths_in_html(tmp_path):
    from embedding_geometry.book import maths

    text = per_unit_ledger(shape="{test: above, args: {bound: 0.5}, statement: 'most tokens have $a_j \\ge \\tau$'}")
    record = judged(tmp_path, text, scores(0.8))["score"].record()
    span = maths.SPAN.format(maths.mathml("a_j \\ge \\tau"))
    assert span in words.report([record])  # an HTML block beside its badges: MathML in a span
    assert 'display="inline"' in span and "<mi>&#x003C4;</mi>" in span and "<mo>&#x02265;</mo>" in span  # τ, ≥
    assert span in words.findings([{**record, "headline": True}])  # an HTML block: MathML in a span
    assert maths.html("a < b, $x < y$") == "a &lt; b, " + maths.SPAN.format(maths.mathml("x < y"))
    assert "<mo>&#x0003C;</mo>" in maths.mathml("x < y")  # the formula's "<" is an operator, not a tag
    assert maths.FORMULA.findall("$a$ and $b_1$") == ["a", "b_1"] and maths.html("costs $5") == "costs $5"


def test_numeric_verdicts_only_on_the_published_model(tmp_path):
    book = ledger(tmp_path, LEDGER)
    same = {v.claim.id: v for v in claims.evaluate(book, METRICS, MODEL, family=claims.family_size())}
    assert same["peak"].numeric == "reproduced" and same["gap"].numeric == "not reproduced"
    other = {v.claim.id: v for v in claims.evaluate(book, METRICS, "another/model", family=claims.family_size())}
    assert other["peak"].numeric is None and other["missing"].status == "not measured"


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
    (verdict,) = claims.evaluate(book, METRICS, MODEL, family=claims.family_size())
    assert verdict.model == "org/other" and verdict.numeric == "reproduced"


# --------------------------------------------------------------------------- results JSON

def _write(metrics, verdicts=()):
    return results.write_results("ch", model={"id": MODEL}, params={"seed": 0}, inputs={"sentences": ["a"]},
                                 metrics=metrics, claims=list(verdicts), device="cpu", started=0.0)


def test_results_json_schema(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path / "out"))
    path = _write({"curve": np.array([0.1, 0.2]), "n": np.int64(3)}, _mixed(tmp_path))
    document = json.loads(path.read_text())
    assert set(document) == {"chapter", "model", "models", "params", "inputs", "metrics", "claims", "environment"}
    assert document["metrics"] == {"curve": [0.1, 0.2], "n": 3}
    record = document["claims"][0]
    assert {"kind", "interval", "interval_method", "p", "p_holds", "p_fails", "p_adjusted", "mc_error", "detectable",
            "null", "outcome", "verdict", "counted", "fragile", "sensitivity", "family"} <= set(record)


def test_results_write_is_atomic_and_refuses_nan(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    good = _write({"x": 1.0}).read_text()
    with pytest.raises(ValueError, match=r"'metrics.curve\[1\]' is nan"):
        _write({"curve": np.array([0.1, np.nan])})
    assert (tmp_path / "ch.json").read_text() == good
    assert [p.name for p in tmp_path.iterdir()] == ["ch.json"]


def test_a_plain_sentence_keeps_an_acronym_or_a_name_in_capitals_at_its_start():
    from embedding_geometry.book.claims.words import _lowered

    assert _lowered("CLS alignment dips") == "CLS alignment dips"
    assert _lowered("MaxSim keeps the spread") == "MaxSim keeps the spread"
    assert _lowered("L6 is a dip") == "L6 is a dip"
    assert _lowered("Within-sentence cosine rises") == "within-sentence cosine rises"


def test_a_claim_whose_home_is_another_chapter_shows_the_homes_verdict(tmp_path):
    text = per_unit_ledger() + "    home: 01_layer_by_layer\n"
    (away,) = claims.evaluate(ledger(tmp_path, text), scores(0.51, n=12), "m", family=claims.family_size())
    home = judged(tmp_path, per_unit_ledger(), scores(0.8, n=96), model="m")["score"].record()
    shown = claims.judge.at_home(away, home)
    assert away.outcome == "inconclusive" and shown.outcome == home["outcome"] == "holds"
    assert shown.statistic["n_units"] == 96 and shown.tested_at == "01_layer_by_layer" and not shown.counted
    assert "(its home chapter's verdict, chapter 1, on 96 units)" in words.verdict_cell(shown.record())
    assert claims.judge.at_home(away, None) is away
    untested = {**home, "outcome": None, "status": "descriptive", "reason": "too short a series at home"}
    shown = claims.judge.at_home(away, untested)  # not tested at home: not tested here, for the home's reason
    assert words.verdict_of(shown.record()) == "not tested" and shown.reason == untested["reason"]


def test_a_counted_claim_must_be_able_to_both_pass_and_fail(tmp_path):
    """A band narrower than its statistic's noise cannot be shown to hold; a permutation null of 200
    draws cannot give a p below 0.005; each is shown with why, not counted. In a family of one
    both can decide."""
    band = per_unit_ledger(shape="{test: between, args: {low: 0.49, high: 0.51}}")
    wide = judged(tmp_path, band, scores(0.5, spread=0.2))["score"]
    assert wide.status == "cannot decide" and wide.reach == {"holds": False, "does not hold": True}
    assert "cannot reach 'holds'" in wide.reason
    narrow = judged(tmp_path, band, scores(0.5, spread=0.001, n=200))["score"]
    assert narrow.reach == {"holds": True, "does not hold": True} and narrow.outcome == "holds"
    permuted = per_unit_ledger("    null: {kind: permuted_labels, draws: permuted}")
    metrics = {**scores(0.8), "permuted": np.zeros(200)}
    assert judged(tmp_path, permuted, metrics)["score"].status == "cannot decide"
    assert judged(tmp_path, permuted, metrics, family=1)["score"].outcome == "holds"


def test_a_claim_not_tested_on_one_model_beside_a_verdict_on_another_is_not_restated():
    base = {"id": "k", "statement": "The score exceeds 0.5.", "says": {"holds": "the score exceeds 0.5"},
            "kind": "published", "headline": True}
    tested = {**base, "model": "sentence-transformers/all-MiniLM-L6-v2", "outcome": "holds", "status": None}
    absent = {**base, "model": "sentence-transformers/all-mpnet-base-v2", "outcome": None,
              "status": "not measured", "reason": "measured on the chapter's model only"}
    assert words.said([tested, absent]) == ("On MiniLM, the score exceeds 0.5. "
                                            "Not measured on MPNet: measured on the chapter's model only.")
    assert words.said([absent]).endswith(": not measured on MPNet (measured on the chapter's model only).")


def test_a_path_through_a_none_is_not_measured_and_a_misspelt_one_is_an_error():
    from embedding_geometry.book.claims.ledger import lookup

    metrics = {"shared": {"related": None, "random": {"share": [0.5]}}}
    assert lookup(metrics, "shared.related.share") is None and lookup(metrics, "shared.random.share") == [0.5]
    with pytest.raises(KeyError, match="missing 'shares'"):
        lookup(metrics, "shared.random.shares")
