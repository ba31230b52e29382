"""Intervals over seeds and units: the seed draws are Student's t at every level, the sign-flip
test by hand, and the coverage of the interval on simulated data whose mean is known, at the
numbers of seeds chapter 7 uses (5 and 8) and its number of sentences."""

import numpy as np
import pytest
from scipy import stats

from embedding_geometry.book.claims import samples
from embedding_geometry.core import hierarchical

UNITS = 24  # chapter 1's sentences, the fine-tuning arm's unit


def simulated(rng, n_seeds, seed_sd, unit_sd, noise_sd=1.0, n_units=UNITS):
    """x_su = a_s + b_u + e_su, true mean 0: seed effect, unit effect (shared by every seed: the
    units are crossed with the seeds) and the rest."""
    return (seed_sd * rng.normal(size=(n_seeds, 1)) + unit_sd * rng.normal(size=(1, n_units))
            + noise_sd * rng.normal(size=(n_seeds, n_units)))


def coverage(n_seeds, seed_sd, unit_sd, level=0.95, datasets=200, resamples=2000):
    """The share of ``datasets`` simulated datasets whose ``level`` interval holds the true mean 0."""
    hits = 0
    for i in range(datasets):
        rng = np.random.default_rng(i)
        low, high = hierarchical.hierarchical_interval(simulated(rng, n_seeds, seed_sd, unit_sd), seed=rng,
                                                       resamples=resamples, level=level).band
        hits += low < 0 < high
    return hits / datasets


@pytest.mark.parametrize("n_seeds", [2, 5, 8])
def test_seed_weights_sum_to_one_and_give_students_quantiles_at_every_level(n_seeds):
    """Per-seed means with no unit spread: the draws' percentiles are x̄ ± t_{S−1,q} s / √S, at
    95 % and at the multiplicity-adjusted level alike (within the Monte Carlo error of 200,000 draws)."""
    rng = np.random.default_rng(n_seeds)
    per_seed = rng.normal(size=n_seeds)
    values = np.repeat(per_seed[:, None], 6, axis=1)  # every unit of a seed alike: only the seeds vary
    weights = hierarchical.seed_weights(np.random.default_rng(0), 10, n_seeds)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    drawn = hierarchical.draws(values, seed=1, resamples=200_000)
    se = per_seed.std(ddof=1) / np.sqrt(n_seeds)
    for level in (0.95, 0.99):
        low, high = hierarchical.band(drawn, level)
        t = stats.t.ppf((1 + level) / 2, n_seeds - 1)
        assert low == pytest.approx(per_seed.mean() - t * se, rel=0.05, abs=0.02 * t * se)
        assert high == pytest.approx(per_seed.mean() + t * se, rel=0.05, abs=0.02 * t * se)


@pytest.mark.parametrize("n_seeds", [5, 8])
def test_coverage_is_near_95_percent_when_seeds_vary(n_seeds):
    assert 0.92 <= coverage(n_seeds, seed_sd=1.0, unit_sd=0.3) <= 0.995


def test_coverage_is_near_95_percent_when_units_vary():
    assert 0.92 <= coverage(8, seed_sd=0.0, unit_sd=1.0) <= 0.995


def test_coverage_at_a_strict_level_stays_near_it_with_five_seeds():
    """At 99 % and 5 seeds a bootstrap over seeds could not reach beyond the seeds' range; the
    Student draws do: at most a few misses in 300 datasets (1 % expected)."""
    assert coverage(5, seed_sd=1.0, unit_sd=0.3, level=0.99, datasets=300) >= 0.975


def test_the_interval_is_wider_than_a_units_only_bootstrap_when_seeds_vary():
    rng = np.random.default_rng(3)
    values = simulated(rng, 8, seed_sd=1.0, unit_sd=0.3)
    both = hierarchical.hierarchical_interval(values, seed=1)
    units_only = np.quantile(samples.bootstrap(samples.Units(values.mean(axis=0)), lambda x: x, 2000, rng),
                             [0.025, 0.975])
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
    ratio = hierarchical.hierarchical_interval(terms, lambda m: m[..., 0] / m[..., 1], seed=0, resamples=50)
    assert float(ratio.value) == pytest.approx(terms[..., 0].mean() / terms[..., 1].mean())
    assert ratio.draws.shape == (50,)


def test_draws_are_deterministic_for_a_seed_and_refuse_bad_input():
    values = np.random.default_rng(1).normal(size=(4, 6))
    one = hierarchical.draws(values, seed=5, resamples=50)
    assert np.array_equal(one, hierarchical.draws(values, seed=5, resamples=50))
    assert not np.array_equal(one, hierarchical.draws(values, seed=6, resamples=50))
    with pytest.raises(ValueError, match="seeds ≥ 2"):
        hierarchical.draws(values[:1])


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
