"""Pairwise statistics in the claims engine (book/claims/samples.py) and what chapter 3 added for
them: the U-statistic of a kernel computed one matrix product per entry, kernels of random-init
controls with their seeds, the statistic of each seed alone, the second-rise reducer, and the
results JSON that records a large kernel by its shape."""

import json

import numpy as np
import pytest

from embedding_geometry.book import results
from embedding_geometry.book.claims import reduce as reducers
from embedding_geometry.book.claims import samples
from embedding_geometry.core import hierarchical


def kernel(n: int, k: int, seed: int = 0) -> np.ndarray:
    """A symmetric kernel [n, n, k] with a zero diagonal."""
    x = np.random.default_rng(seed).normal(size=(n, n, k))
    x = x + x.transpose(1, 0, 2)
    x[np.arange(n), np.arange(n)] = 0.0
    return x


def weights(b: int, n: int, seed: int = 1) -> np.ndarray:
    return hierarchical.unit_weights(np.random.default_rng(seed), b, n)


def test_pairwise_values_are_the_u_statistic_of_each_resample():
    K, w = kernel(6, 3), weights(5, 6)
    found = samples.pairwise_values(K, w)
    for b in range(5):
        off = w[b][:, None] * w[b][None, :] * (1 - np.eye(6))
        expected = np.einsum("ij,ijk->k", off, K) / off.sum()
        np.testing.assert_allclose(found[b], expected)
    diagonal = K.copy()
    diagonal[np.arange(6), np.arange(6)] = 5.0  # a diagonal is never read
    np.testing.assert_allclose(samples.pairwise_values(diagonal, w), found)


def test_a_unit_drawn_twice_is_not_paired_with_itself():
    K = kernel(4, 1)
    w = np.array([[0.5, 0.5, 0.0, 0.0]])  # units 0 and 1, each drawn twice: the only pair is (0, 1)
    assert samples.pairwise_values(K, w)[0, 0] == pytest.approx(K[0, 1, 0])


def test_seeded_pairwise_is_the_mean_over_seeds_of_each_seeds_u_statistic():
    kernels = np.stack([kernel(7, 2, seed) for seed in range(3)])
    found = samples.find({"per_unit": {"c": kernels}}, {"seeds": {"pairwise": "c"}})
    assert isinstance(found, samples.Units) and found.pairwise and found.seeded
    assert found.n_units == 7 and found.n_seeds == 3
    each = np.stack([samples.Units(k, pairwise=True).point() for k in kernels])
    np.testing.assert_allclose(found.per_seed(), each)
    np.testing.assert_allclose(found.point(), each.mean(axis=0))
    w, v = weights(4, 7), weights(4, 3, seed=2)
    np.testing.assert_allclose(found.values(w, v), np.einsum("bs,sbk->bk", v,
                                                             [samples.pairwise_values(k, w) for k in kernels]))
    assert "must be [S, n, n, …]" in samples.find({"per_unit": {"c": kernels[:, :, :4]}}, {"seeds": {"pairwise": "c"}})


def test_per_seed_of_a_difference_subtracts_the_trained_statistic_from_each_seed():
    kernels = np.stack([kernel(5, 2, seed) for seed in range(3)])
    trained = kernel(5, 2, 9)
    spec = {"minuend": {"seeds": {"pairwise": "c"}}, "subtrahend": {"pairwise": "t"}}
    found = samples.find({"per_unit": {"c": kernels, "t": trained}}, spec)
    each = np.stack([samples.Units(k, pairwise=True).point() for k in kernels])
    expected = each - samples.Units(trained, pairwise=True).point()
    np.testing.assert_allclose(found.per_seed(), expected)
    means = samples.Units(np.random.default_rng(3).normal(size=(3, 5, 2)), seeded=True)
    np.testing.assert_allclose(means.per_seed(), means.data.mean(axis=1))


def test_second_rise_reducer_is_the_series_statistic():
    x = np.array([[0.6, 0.88, 0.7, 0.92, 0.4], [0.1, 0.2, 0.3, 0.4, 0.5]])
    np.testing.assert_allclose(reducers.reduce_array(x, "second_rise"), reducers.statistic("second_rise", x))
    assert reducers.reduce_metric(x[0], "second_rise") == pytest.approx(0.18)  # min(0.88 − 0.7, 0.92 − 0.7)
    assert reducers.where("second_rise", x[0]) == "the trough at depth 2 of 4 (l/L = 0.50)"
    assert not reducers.is_linear("second_rise")


def test_results_record_a_large_per_unit_array_by_its_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    big, small = np.zeros((30, 30, 30)), np.arange(4.0)
    metrics = {"x": 1.0, "per_unit": {"big": big, "small": small}}
    compact = results.compact_units(metrics)
    assert compact["per_unit"]["big"]["shape"] == [30, 30, 30]
    assert "not recorded" in compact["per_unit"]["big"]["values"]
    assert compact["per_unit"]["small"] is small and metrics["per_unit"]["big"] is big  # the input is not changed
    assert results.compact_units({"x": 1.0}) == {"x": 1.0}
    path = results.write_results("c", model={}, params={}, inputs={}, metrics=metrics, claims=[], device="cpu",
                                 started=0.0)
    written = json.loads(path.read_text())["metrics"]["per_unit"]
    assert written["small"] == [0.0, 1.0, 2.0, 3.0] and written["big"]["shape"] == [30, 30, 30]
