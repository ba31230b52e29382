"""Intervals over seeds and units: the small-n factor in closed form, the sign-flip test by hand,
and the coverage of the interval on simulated data whose mean is known, at the numbers of seeds
chapter 7 uses (5 and 8) and its number of sentences."""

import math

import numpy as np
import pytest
from scipy import stats

from embedding_geometry.book import intervals
from embedding_geometry.core import hierarchical

UNITS = 24  # chapter 1's sentences, the fine-tuning arm's unit


def simulated(rng, n_seeds, seed_sd, unit_sd, noise_sd=1.0, n_units=UNITS):
    """x_su = a_s + b_u + e_su, true mean 0: seed effect, unit effect (shared by every seed: the
    units are crossed with the seeds) and the rest."""
    return (seed_sd * rng.normal(size=(n_seeds, 1)) + unit_sd * rng.normal(size=(1, n_units))
            + noise_sd * rng.normal(size=(n_seeds, n_units)))


def coverage(n_seeds, seed_sd, unit_sd, design="crossed", datasets=150, resamples=300):
    """The share of ``datasets`` simulated datasets whose 95 % interval holds the true mean 0, and
    the intervals' mean width."""
    hits, widths = 0, []
    for i in range(datasets):
        rng = np.random.default_rng(i)
        found = hierarchical.hierarchical_interval(simulated(rng, n_seeds, seed_sd, unit_sd), seed=rng,
                                                   resamples=resamples, design=design)
        low, high = found.band
        hits += low < 0 < high
        widths.append(high - low)
    return hits / datasets, float(np.mean(widths))


def test_small_n_factor_is_students_interval_over_the_bootstraps():
    for n in (2, 5, 8, 20):
        expected = math.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1) / stats.norm.ppf(0.975)
        assert hierarchical.small_n_factor(n) == pytest.approx(expected)
    assert hierarchical.small_n_factor(5) == pytest.approx(1.5835, abs=1e-3)
    assert hierarchical.small_n_factor(8) == pytest.approx(1.2900, abs=1e-3)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        hierarchical.small_n_factor(1)


@pytest.mark.parametrize("n_seeds", [5, 8])
def test_coverage_is_near_95_percent_when_seeds_vary(n_seeds):
    covered, _ = coverage(n_seeds, seed_sd=1.0, unit_sd=0.3)
    assert 0.91 <= covered <= 0.99


def test_coverage_is_near_95_percent_when_units_vary_and_the_nested_design_falls_short():
    covered, _ = coverage(8, seed_sd=0.0, unit_sd=1.0)
    assert 0.91 <= covered <= 0.99
    nested, _ = coverage(8, seed_sd=0.0, unit_sd=1.0, design="nested")  # drops the shared unit effect
    assert nested < 0.88


def test_the_interval_is_wider_than_a_units_only_bootstrap_when_seeds_vary():
    rng = np.random.default_rng(3)
    values = simulated(rng, 8, seed_sd=1.0, unit_sd=0.3)
    both = hierarchical.hierarchical_interval(values, seed=1)
    units_only = intervals.percentile_interval(intervals.resampled(intervals.Samples(values.mean(axis=0)), rng=rng))
    assert both.band[1] - both.band[0] > 2 * (units_only[1] - units_only[0])
    assert both.band[0] < values.mean() < both.band[1] and both.value == pytest.approx(values.mean())
    assert (both.n_seeds, both.n_units) == (8, UNITS)


def test_a_statistic_of_curves_gets_a_band_at_every_depth_and_a_ratio_of_means():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(5, 10, 3)) + np.arange(3)
    found = hierarchical.hierarchical_interval(values, seed=0, resamples=300)
    assert found.band.shape == (2, 3) and found.draws.shape == (300, 3)
    assert np.all(found.band[0] < found.value) and np.all(found.value < found.band[1])
    np.testing.assert_allclose(found.half_width, (found.band[1] - found.band[0]) / 2)
    terms = np.abs(rng.normal(size=(5, 10, 2))) + 1
    of_means = lambda v: v[..., 0].mean() / v[..., 1].mean()  # noqa: E731
    ratio = hierarchical.hierarchical_interval(terms, of_means, seed=0, resamples=50)
    assert float(ratio.value) == pytest.approx(terms[..., 0].mean() / terms[..., 1].mean())


def test_draws_are_deterministic_for_a_seed_and_refuse_bad_input():
    values = np.random.default_rng(1).normal(size=(4, 6))
    one = hierarchical.draws(values, seed=5, resamples=50)
    assert np.array_equal(one, hierarchical.draws(values, seed=5, resamples=50))
    assert not np.array_equal(one, hierarchical.draws(values, seed=6, resamples=50))
    assert hierarchical.draws(values, seed=5, resamples=50, design="nested").shape == (50,)
    with pytest.raises(ValueError, match="seeds ≥ 2"):
        hierarchical.draws(values[:1])
    with pytest.raises(ValueError, match="design"):
        hierarchical.draws(values, design="other")


def test_sign_flip_test_by_hand():
    # all 2^3 sign assignments of (1, 2, 3): means ±1/3, ±2/3, ±1, ±4/3, ±2; the observed 2 is the largest
    assert hierarchical.sign_flip_test(np.array([1.0, 2.0, 3.0]), "greater") == pytest.approx(1 / 8)
    assert hierarchical.sign_flip_test(np.array([1.0, 2.0, 3.0])) == pytest.approx(2 / 8)
    assert hierarchical.sign_flip_test(np.array([1.0, 2.0, 3.0]), "less") == pytest.approx(1.0)
    # (1, −1): the mean 0 is as extreme as every assignment's |mean| ≥ 0
    assert hierarchical.sign_flip_test(np.array([1.0, -1.0])) == pytest.approx(1.0)
    # five seeds all positive: the smallest two-sided p-value five seeds can give
    assert hierarchical.sign_flip_test(np.ones(5)) == pytest.approx(2 / 32)
    with pytest.raises(ValueError, match="one value per seed"):
        hierarchical.sign_flip_test(np.ones((2, 2)))
