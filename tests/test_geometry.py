"""Shared geometry on hand-computed cases."""

import numpy as np
import pytest

from embedding_geometry import geometry


def test_cosine_of_orthogonal_parallel_and_opposite_vectors():
    assert geometry.cosine([1, 0], [0, 3]) == 0.0
    assert geometry.cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    assert geometry.cosine([1, 2], [-1, -2]) == pytest.approx(-1.0)
    assert geometry.cosine([1, 0], [1, 1]) == pytest.approx(1 / np.sqrt(2))


def test_zero_vector_is_an_error_not_nan():
    with pytest.raises(ValueError, match="zero vector"):
        geometry.cosine([0, 0], [1, 0])
    with pytest.raises(ValueError, match="zero vector"):
        geometry.cosine_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_cosine_matrix_against_hand_values():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    expected = np.array([[1, 0, 1 / np.sqrt(2)], [0, 1, 1 / np.sqrt(2)], [1 / np.sqrt(2), 1 / np.sqrt(2), 1]])
    np.testing.assert_allclose(geometry.cosine_matrix(x), expected)
    np.testing.assert_allclose(geometry.cosine_matrix(x[:1], x[1:]), [[0, 1 / np.sqrt(2)]])


def test_mean_pairwise_cosine_excludes_self_pairs():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    # pairs: (0,1)=0, (0,2)=(1,2)=1/√2, each counted twice → mean = 2/√2 / 3
    assert geometry.mean_pairwise_cosine(x) == pytest.approx((2 / np.sqrt(2)) / 3)
    assert geometry.mean_pairwise_cosine(np.ones((4, 3))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2"):
        geometry.mean_pairwise_cosine(np.ones((1, 3)))


def test_relative_depth_and_norms_and_group_mean():
    np.testing.assert_allclose(geometry.relative_depth(4), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(geometry.token_norms(np.array([[[3.0, 4.0], [0.0, 1.0]]])), [[5.0, 1.0]])
    values = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]])
    means = geometry.group_mean(values, np.array(["a", "b", "a"]))
    np.testing.assert_allclose(means["a"], [2.0, 6.0])
    np.testing.assert_allclose(means["b"], [2.0, 6.0])
