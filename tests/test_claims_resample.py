"""Resampling a claim's statistic: each statistic on hand-computed cases, the U-statistic's
resampling, the seeds, and BCa's interval and p-value."""

import numpy as np
import pytest

from embedding_geometry.book.claims import samples as s


def identity(x):
    """A reduce that keeps the number: the tests' statistics are scalars."""
    return x


# --------------------------------------------------------------------------- statistics of weighted means

def test_a_resample_is_the_mean_of_the_rows_it_drew():
    x = np.random.default_rng(3).normal(size=(9, 4))
    fast = s.bootstrap(s.Units(x), identity, 50, np.random.default_rng(1))
    drawn = np.random.default_rng(1).integers(0, 9, size=(50, 9))
    assert fast == pytest.approx(np.stack([x[rows].mean(axis=0) for rows in drawn]))
    assert s.Units(x).point() == pytest.approx(x.mean(axis=0))


def test_a_ratio_is_a_ratio_of_means_not_a_mean_of_ratios():
    metrics = {"per_unit": {"between": [[1.0], [3.0]], "within": [[2.0], [1.0]]}}
    assert s.find(metrics, ["between", "within"]).point() == pytest.approx([4 / 3])  # (1 + 3) / (2 + 1)
    assert s.find(metrics, {"numerator": "between", "denominator": "within"}).point() == pytest.approx([4 / 3])
    assert isinstance(s.find(metrics, "absent"), s.Missing) and "no per-unit samples" in s.find(metrics, "absent")
    assert s.find({"x": {"y": [[1.0], [2.0]]}}, {"path": "x.y"}).n_units == 2


def test_a_difference_resamples_both_sides_with_the_same_units():
    metrics = {"per_unit": {"a_b": [[1.0], [3.0]], "a_w": [[2.0], [1.0]], "b_b": [[1.0], [1.0]], "b_w": [[1.0], [3.0]]}}
    statistic = s.find(metrics, {"minuend": ["a_b", "a_w"], "subtrahend": ["b_b", "b_w"]})
    assert statistic.point() == pytest.approx([4 / 3 - 2 / 4])
    np.testing.assert_allclose(statistic.values(np.array([[1.0, 0.0]])), [[1 / 2 - 1 / 1]])  # unit 1 drawn twice
    metrics["per_unit"]["c"] = [[1.0], [2.0], [3.0]]
    assert "not the same units" in s.find(metrics, {"minuend": "a_b", "subtrahend": "c"})


def test_a_pairwise_statistic_leaves_out_self_pairs_and_the_pairs_of_a_unit_drawn_twice():
    kernel = np.array([[9.0, 1.0, 2.0], [1.0, 9.0, 3.0], [2.0, 3.0, 9.0]])  # the diagonal is never used
    statistic = s.Units(kernel, pairwise=True)
    assert statistic.point() == pytest.approx(2.0)  # (1 + 2 + 3) · 2 / 6 ordered pairs
    # units 0, 0, 1 drawn: pairs between distinct units are (0,1) twice each way → all 1.0
    assert statistic.values(np.array([[2 / 3, 1 / 3, 0.0]])) == pytest.approx([1.0])


def test_resampling_a_pairwise_mean_by_its_units_doubles_the_row_mean_standard_error():
    """For a U-statistic of order 2, a unit's row mean carries half of its influence: resampling
    the row means as if they were independent gives about half the standard error of resampling
    the units and recomputing the pairs (the review's finding), and the unit resampling matches
    the standard error over fresh samples."""
    rng = np.random.default_rng(0)
    n, d = 30, 8

    def sample():
        z = rng.normal(size=(n, d)) + np.array([1.0] + [0.0] * (d - 1))
        u = z / np.linalg.norm(z, axis=1, keepdims=True)
        return u @ u.T

    truth = np.std([s.Units(sample(), pairwise=True).point() for _ in range(400)])
    kernel = sample()
    by_units = np.std(s.bootstrap(s.Units(kernel, pairwise=True), identity, 4000, np.random.default_rng(1)))
    rows = (kernel.sum(axis=1) - np.diag(kernel)) / (n - 1)
    by_rows = np.std(s.bootstrap(s.Units(rows), identity, 4000, np.random.default_rng(1)))
    assert by_units == pytest.approx(truth, rel=0.3)
    assert by_units / by_rows == pytest.approx(2.0, rel=0.2)


def test_seeds_and_units_are_resampled_together():
    data = np.zeros((3, 4))
    data[2] = 1.0  # one seed of three differs
    statistic = s.Units(data, seeded=True)
    assert statistic.point() == pytest.approx(1 / 3) and statistic.n_seeds == 3 and statistic.n_units == 4
    draws = s.bootstrap(statistic, identity, 2000, np.random.default_rng(0))
    assert draws.min() == 0.0 and draws.max() == 1.0  # all three seeds drawn as seed 0 or as seed 2
    assert np.std(draws) == pytest.approx(np.sqrt(2 / 9 / 3), rel=0.1)  # the seed mean's standard error


def test_a_correlation_is_rebuilt_from_its_moments_on_each_resample():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    y[:, 0] = x[:, 0] + 0.1 * y[:, 0]
    moments = {"x": x, "y": y, "xx": x ** 2, "yy": y ** 2, "xy": x * y}
    expected = np.mean([np.corrcoef(x[:, d], y[:, d])[0, 1] for d in range(3)])
    assert s.Correlation(moments).point() == pytest.approx(expected)
    found = s.find({"per_unit": {"a": x, "b": y}}, {"correlation": {"x": "a", "y": "b"}})  # products taken from x, y
    assert found.point() == pytest.approx(expected)


def test_a_correlation_of_many_resamples_in_blocks_is_the_same_as_all_at_once():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(30, 5)), rng.normal(size=(30, 5))
    y[:, 1] = 2.0  # a constant dimension: r undefined there, left out of the mean
    statistic = s.Correlation({"x": x, "y": y, "xx": x ** 2, "yy": y ** 2, "xy": x * y})
    w = s.unit_weights(rng, 2 * s.ROW_BLOCK + 1, 30)  # three blocks, the last one a single resample
    m = {name: w @ moment for name, moment in statistic.moments.items()}
    cov, var = m["xy"] - m["x"] * m["y"], (m["xx"] - m["x"] ** 2) * (m["yy"] - m["y"] ** 2)
    at_once = np.nanmean(cov / np.sqrt(np.where(var > 0, var, np.nan)), axis=-1)  # every row in one array
    assert np.array_equal(statistic.values(w), at_once) and np.isfinite(at_once).all()


def test_a_seeded_kernel_averages_each_seeds_u_statistic_over_the_same_unit_draws():
    rng = np.random.default_rng(3)
    kernels = rng.normal(size=(3, 6, 6, 2))
    kernels = (kernels + kernels.transpose(0, 2, 1, 3)) / 2  # symmetric, as a pairwise kernel is
    statistic = s.Units(kernels, pairwise=True, seeded=True)
    assert statistic.n_seeds == 3 and statistic.n_units == 6
    np.testing.assert_allclose(statistic.point(), np.mean([s.Units(k, pairwise=True).point() for k in kernels], axis=0))
    w, v = np.array([[0.5, 0.5, 0, 0, 0, 0]]), np.array([[0.0, 1.0, 0.0]])  # units 0 and 1 of seed 1 only
    np.testing.assert_allclose(statistic.values(w, v)[0], kernels[1, 0, 1])
    found = s.find({"per_unit": {"k": kernels}}, {"seeds": {"pairwise": "k"}})
    assert isinstance(found, s.Units) and found.pairwise and found.seeded
    assert isinstance(s.find({"per_unit": {"k": kernels[:, :5]}}, {"seeds": {"pairwise": "k"}}), s.Missing)


def test_a_linear_reduce_applied_to_a_kernel_first_gives_the_same_resamples():
    rng = np.random.default_rng(8)
    kernels = rng.normal(size=(3, 7, 7, 4))
    kernels = (kernels + kernels.transpose(0, 2, 1, 3)) / 2

    def last_minus_first(x):  # linear in the series: it commutes with the U-statistic
        return x[..., -1] - x[..., 0]

    for seeded in (False, True):
        statistic = s.Units(kernels if seeded else kernels[0], pairwise=True, seeded=seeded)
        reduced = statistic.reduced(last_minus_first)
        assert reduced.data.shape == statistic.data.shape[:-1]
        as_given = s.bootstrap(statistic, last_minus_first, 50, np.random.default_rng(1))
        first = s.bootstrap(reduced, identity, 50, np.random.default_rng(1))
        np.testing.assert_allclose(first, as_given, rtol=1e-12)
    other = s.Units(kernels[1], pairwise=True)
    assert isinstance(s.Paired(s.Units(kernels[0], pairwise=True), other, "−").reduced(last_minus_first), s.Paired)
    assert s.Paired(s.Units(kernels[0], pairwise=True), other, "÷").reduced(last_minus_first) is None  # not linear
    assert s.Units(kernels[0, :, :, 0], pairwise=True).reduced(last_minus_first) is None  # no series to reduce
    assert s.Units(rng.normal(size=(7, 4))).reduced(last_minus_first) is None  # a plain mean needs no help


def test_each_seed_alone_is_a_one_hot_seed_weight():
    """What a null's seed values are: the statistic on every unit with one seed's weight 1 (for a
    seeded kernel, that seed's own U-statistic)."""
    rng = np.random.default_rng(6)
    kernels = rng.normal(size=(3, 5, 5))
    statistic = s.Units(kernels, pairwise=True, seeded=True)
    per_seed = statistic.values(np.full((3, 5), 0.2), np.eye(3))
    np.testing.assert_allclose(per_seed, [s.Units(k, pairwise=True).point() for k in kernels])


def test_a_unit_left_out_is_the_jackknife():
    x = np.arange(5.0)
    assert s.jackknife(s.Units(x), identity) == pytest.approx([(10 - i) / 4 for i in range(5)])


# --------------------------------------------------------------------------- BCa

def _bca_coverage(n: int, draw, truth: float, reps: int = 1000, resamples: int = 1000) -> float:
    """The share of ``reps`` simulated data sets whose 95 % BCa interval of the mean covers ``truth``."""
    data, rng = np.random.default_rng(11), np.random.default_rng(12)
    hits = 0
    for _ in range(reps):
        statistic = s.Units(draw(data, n))
        lo, hi = s.bca_interval(s.bootstrap(statistic, identity, resamples, rng), float(statistic.point()),
                                s.jackknife(statistic, identity))
        hits += lo <= truth <= hi
    return hits / reps


@pytest.mark.parametrize("n", [20, 40])
def test_the_bca_interval_covers_near_95_percent_at_the_n_it_is_used_for(n):
    """From n = 20 up a mean is tested by the bootstrap (below it, exactly: test_claims_pvalues.py);
    1,000 simulated normal samples, so a coverage of 0.95 reads between 0.936 and 0.964."""
    assert 0.925 <= _bca_coverage(n, lambda rng, k: rng.standard_normal(k), 0.0) <= 0.97


def test_bca_corrects_a_biased_statistic_towards_its_truth():
    draws = np.random.default_rng(0).normal(1.0, 1.0, 20_000)  # resamples centred above the point 0
    lo, hi = s.bca_interval(draws, 0.0, np.zeros(10))
    plo, phi = np.quantile(draws, [0.025, 0.975])
    assert lo < plo and hi < phi  # z₀ > 0 shifts the interval down


def test_the_bca_p_value_inverts_the_interval():
    rng = np.random.default_rng(3)
    draws, jack = rng.normal(0.3, 0.1, 20_000), rng.normal(0.3, 0.02, 30)
    lo, _ = s.bca_interval(draws, 0.3, jack, level=0.90)  # one-sided 5 % below
    p, error = s.bca_p(draws, 0.3, jack, threshold=lo)
    assert p == pytest.approx(0.05, abs=0.003) and 0 < error < 0.003
    symmetric = rng.normal(0.0, 1.0, 20_000)  # no bias, no acceleration: p is the share below the threshold
    assert s.bca_p(symmetric, float(np.median(symmetric)), np.zeros(5), 1.0)[0] == pytest.approx(
        np.mean(symmetric <= 1.0), abs=0.01)
    assert s.bca_p(symmetric + 10, 10.0, np.zeros(5), 0.0)[0] <= 1e-4  # far beyond: the resolution of B


def test_a_paired_difference_reduces_each_side_before_subtracting():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(25, 5)) + np.array([0, 1, 3, 1, 0.0])
    b = rng.normal(size=(25, 5))

    def peak(x):
        return np.max(x[..., 1:-1], axis=-1) - np.maximum(x[..., 0], x[..., -1])

    draws = s.bootstrap(s.Units(a), peak, 2000, rng, other=s.Units(b))
    jack = s.jackknife(s.Units(a), peak, other=s.Units(b))
    point = peak(a.mean(0)) - peak(b.mean(0))
    assert jack.mean() == pytest.approx(point, abs=0.2)
    assert s.bca_interval(draws, point, jack)[0] > 1.5
