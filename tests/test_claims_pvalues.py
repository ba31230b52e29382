"""The tests a verdict rests on, on synthetic data with known answers: exact p-values against hand
enumeration and scipy, the intervals' coverage at the n they are used for (1,000 simulated data
sets each), the false discovery rate of the adjustment, and the detectable effect."""

import itertools

import numpy as np
import pytest
from scipy import stats

from embedding_geometry.book.claims import pvalues

REPS = 1000


def test_the_sign_flip_p_is_the_share_of_sign_patterns_by_hand():
    d = np.array([0.5, -0.2, 0.3])  # mean 0.2; patterns with a mean ≥ 0.2: (+,+,+) and (+,−,+)... by hand:
    means = [np.mean(np.array(s) * d) for s in itertools.product((1, -1), repeat=3)]
    assert pvalues.sign_flip(d) == (np.mean(np.array(means) >= 0.2 - 1e-12), np.mean(np.array(means) <= 0.2 + 1e-12))
    assert pvalues.sign_flip(d)[0] == 2 / 8


@pytest.mark.parametrize("n, seed", [(7, 0), (12, 1), (15, 2)])
def test_the_sign_flip_p_equals_scipys_enumerated_permutation_test(n, seed):
    d = np.random.default_rng(seed).normal(0.3, 1.0, n)

    def p(alternative):
        return stats.permutation_test((d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
                                      n_resamples=np.inf, alternative=alternative, vectorized=True).pvalue

    assert pvalues.sign_flip(d) == pytest.approx((p("greater"), p("less")))


def test_every_unit_on_one_side_gives_the_smallest_sign_flip_p():
    assert pvalues.sign_flip(np.full(8, 0.3)) == (1 / 256, 1.0)


@pytest.mark.parametrize("n", [6, 8, 12])
def test_the_sign_flip_interval_covers_at_least_95_percent(n):
    rng = np.random.default_rng(n)
    hits = [lo <= 0.0 <= hi for lo, hi in (pvalues.sign_flip_interval(rng.standard_t(3, n)) for _ in range(REPS))]
    # exactly 1 − 2k / 2ⁿ under symmetry (0.953 at n = 8); 1,000 simulations read it within ±0.02
    assert 0.93 <= np.mean(hits) <= 1 - 2 * np.floor(0.025 * 2 ** n) / 2 ** n + 0.02


def test_the_sign_flip_interval_inverts_the_test_and_stays_inside_the_data():
    x = np.random.default_rng(4).normal(0.5, 1.0, 10)
    lo, hi = pvalues.sign_flip_interval(x)
    assert x.min() <= lo < x.mean() < hi <= x.max()
    assert pvalues.sign_flip(x - lo)[0] > 0.025 and pvalues.sign_flip(x - (lo - 1e-9))[0] <= 0.025
    assert pvalues.sign_flip(x - hi)[1] > 0.025 and pvalues.sign_flip(x - (hi + 1e-9))[1] <= 0.025


def test_the_binomial_test_is_exact_and_its_interval_stays_in_0_1():
    greater, less, (lo, hi) = pvalues.binomial(10, 12, 0.5)
    assert greater == pytest.approx(sum(stats.binom.pmf(k, 12, 0.5) for k in range(10, 13)))
    assert less == pytest.approx(stats.binom.cdf(10, 12, 0.5)) and 0 < lo < 10 / 12 < hi < 1
    assert pvalues.binomial(0, 96, 0.5)[2][0] == 0.0 and pvalues.binomial(96, 96, 0.5)[2][1] == 1.0
    rng = np.random.default_rng(0)
    hits = [lo <= 0.3 <= hi for lo, _, (lo, hi) in
            ((None, None, pvalues.binomial(int(rng.binomial(12, 0.3)), 12, 0.5)[2]) for _ in range(REPS))]
    assert np.mean(hits) >= 0.95  # Clopper–Pearson never covers less than its level


def test_resampled_and_permutation_p_values_count_the_observed_draw():
    assert pvalues.share_p(np.arange(9.0) < -1, np.arange(9.0) > -1) == (1 / 10, 1.0)
    null = np.zeros(199)
    assert pvalues.share_p(null >= 5.0, null <= 5.0) == (1 / 200, 1.0)
    assert pvalues.share_p(null >= 0.0, null <= 0.0) == (1.0, 1.0)  # a tie counts on both sides


def test_a_claim_with_a_null_must_pass_both_and_fails_if_either_fails():
    assert pvalues.combine([(0.001, 0.9), (0.02, 0.5)]) == (0.02, 1.0)
    assert pvalues.combine([(0.001, 0.9), (0.9, 0.004)]) == (0.9, 0.008)
    assert pvalues.two_sided(0.001, 0.9) == 0.002 and pvalues.two_sided(0.7, 0.6) == 1.0


def test_the_adjustment_is_benjamini_hochberg_at_level_q_m_k_over_m():
    p = [0.0001, 0.004, 0.03]
    bh = stats.false_discovery_control([0.0001, 0.004, 0.03, 1, 1], method="bh")[:3]
    assert pvalues.adjust(p, chapter_size=5, family_size=20) == pytest.approx(np.minimum(1, bh * 20 / 5))
    # BH at level q m_k / m rejects p_(j) ≤ q j / m: 0.004 ≤ 0.05 · 2 / 20
    assert [a <= 0.05 for a in pvalues.adjust(p, 5, 20)] == [True, True, False]
    assert pvalues.adjust([], 3, 20) == []


def test_the_family_false_discovery_rate_stays_below_q_when_chapters_adjust_alone():
    """Nine chapters of 12 claims, a third with real effects; each chapter adjusts its own p-values
    (pvalues.adjust): the share of false discoveries among all discoveries, averaged over 1,000
    simulated books, stays below q = 0.05 (V / R ≤ Σ V_k / R_k)."""
    rng = np.random.default_rng(7)
    chapters, per, m = 9, 12, 108
    rates = []
    for _ in range(REPS):
        effect = rng.random((chapters, per)) < 1 / 3
        z = rng.standard_normal((chapters, per)) + 3.0 * effect
        p = 2 * stats.norm.sf(np.abs(z))
        decided = np.array([np.array(pvalues.adjust(list(row), per, m)) <= 0.05 for row in p])
        false = decided & ~effect
        rates.append(false.sum() / max(decided.sum(), 1))
    assert np.mean(rates) <= 0.05
    assert np.mean(rates) > 0.001  # it can fail: some false discoveries are made


def test_the_detectable_effect_is_the_80_percent_power_distance():
    assert pvalues.detectable(0.1, 0.05) == pytest.approx(0.1 * (1.95996 + 0.84162), rel=1e-4)
    assert pvalues.threshold(0, 100) == pytest.approx(0.0005) and pvalues.threshold(9, 100) == pytest.approx(0.005)
