"""Shared geometry on hand-computed cases."""

import numpy as np
import pytest

from embedding_geometry.core import geometry


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
    with pytest.raises(ValueError, match="n ≥ 2"):
        geometry.mean_pairwise_cosine(np.ones((1, 3)))
    with pytest.raises(ValueError, match="zero vector"):
        geometry.mean_pairwise_cosine(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_mean_pairwise_cosine_equals_the_mean_of_the_full_cosine_matrix_off_its_diagonal():
    x = np.random.default_rng(3).normal(size=(40, 6)) + 0.3
    sims = geometry.cosine_matrix(x)
    assert geometry.mean_pairwise_cosine(x) == pytest.approx((sims.sum() - 40) / (40 * 39), abs=1e-12)


def test_row_mean_cosine_per_row_and_its_mean():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    # row 0: (0 + 1/√2) / 2, row 1 the same, row 2: (1/√2 + 1/√2) / 2
    a = geometry.row_mean_cosine(x)
    np.testing.assert_allclose(a, [1 / (2 * np.sqrt(2)), 1 / (2 * np.sqrt(2)), 1 / np.sqrt(2)])
    assert a.mean() == pytest.approx(geometry.mean_pairwise_cosine(x))
    with pytest.raises(ValueError, match="n ≥ 2"):
        geometry.row_mean_cosine(np.ones((1, 2)))


def test_principal_axis_is_pc1_of_the_centred_rows_with_sklearn_sign():
    x = np.array([[0.0, 0.0], [2.0, -1.0], [4.0, -2.0]]) + [7.0, 3.0]
    # the spread is along (2, −1); the sign puts the largest |coefficient| positive
    np.testing.assert_allclose(geometry.principal_axis(x), np.array([2.0, -1.0]) / np.sqrt(5))
    x = np.array([[10.0, -1.0], [10.0, 1.0], [10.0, 3.0]])  # every vector along +x, spread along y
    np.testing.assert_allclose(np.abs(geometry.principal_axis(x)), [0.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="identical"):
        geometry.principal_axis(np.ones((3, 2)))
    with pytest.raises(ValueError, match="n ≥ 2"):
        geometry.principal_axis(np.ones((1, 2)))


@pytest.mark.parametrize("shape", [(6, 40), (300, 12)])
def test_principal_axis_equals_scikit_learns_pca_with_more_rows_or_more_dimensions(shape):
    """Both Gram routes of first_axes (n < D and n ≥ D) give scikit-learn's PC1, its sign included."""
    from sklearn.decomposition import PCA

    x = np.random.default_rng(5).normal(size=shape) * np.linspace(1, 3, shape[1]) + 2.0
    np.testing.assert_allclose(geometry.principal_axis(x), PCA(n_components=1).fit(x).components_[0], atol=1e-12)


def test_centred_subtracts_the_mean_or_a_given_vector_without_mutating():
    x = np.array([[1.0, 2.0], [3.0, 6.0]])
    np.testing.assert_allclose(geometry.centred(x), [[-1.0, -2.0], [1.0, 2.0]])
    np.testing.assert_allclose(geometry.centred(x, [1.0, 0.0]), [[0.0, 2.0], [2.0, 6.0]])
    np.testing.assert_array_equal(x, [[1.0, 2.0], [3.0, 6.0]])


def test_relative_depth_and_norms_and_group_mean():
    np.testing.assert_allclose(geometry.relative_depth(4), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(geometry.token_norms(np.array([[[3.0, 4.0], [0.0, 1.0]]])), [[5.0, 1.0]])
    values = np.array([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]])
    means = geometry.group_mean(values, np.array(["a", "b", "a"]))
    np.testing.assert_allclose(means["a"], [2.0, 6.0])
    np.testing.assert_allclose(means["b"], [2.0, 6.0])


# --------------------------------------------------------------------------- §1 / §2 measurements

def stack(*depths):
    """One text's stack [L + 1, n, D] from per-depth token lists."""
    return np.array(depths, dtype=float)


def test_per_text_splits_rows_and_keeps_masked_tokens():
    hidden = np.arange(2 * 5 * 2, dtype=float).reshape(2, 5, 2)
    parts = geometry.per_text(hidden, np.array([0, 3, 5]), np.array([False, True, True, True, False]))
    assert [p.shape for p in parts] == [(2, 2, 2), (2, 1, 2)]
    np.testing.assert_array_equal(parts[1], hidden[:, 3:4])


def test_pair_cosine_along_the_last_axis():
    np.testing.assert_allclose(geometry.pair_cosine([[1, 0], [1, 1]], [[0, 1], [2, 2]]), [0, 1])
    with pytest.raises(ValueError, match="zero vector"):
        geometry.pair_cosine([[0, 0]], [[1, 0]])


def test_intra_sentence_cosine_is_a_macro_mean_over_texts():
    orthogonal = stack([[1, 0], [0, 1]], [[1, 1], [2, 2]])  # depth 0: cos 0; depth 1: identical directions
    identical = stack([[1, 0], [1, 0], [1, 0]], [[1, 0], [1, 0], [1, 0]])
    np.testing.assert_allclose(geometry.intra_sentence_cosine([orthogonal, identical]), [0.5, 1.0])
    with pytest.raises(ValueError, match="tokens ≥ 2"):
        geometry.intra_sentence_cosine([stack([[1, 0]])])  # one token has no pairs


def test_mean_pair_dot_and_pair_mean_are_the_mean_over_ordered_pairs():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(5, 3))
    kernel = v @ v.T
    brute = np.mean([kernel[i, j] for i in range(5) for j in range(5) if i != j])
    np.testing.assert_allclose(geometry.mean_pair_dot(v.sum(0), 5, (v ** 2).sum()), brute)
    np.testing.assert_allclose(geometry.pair_mean(kernel), brute)
    unit = geometry.unit_rows(v)
    np.testing.assert_allclose(geometry.mean_pair_dot(unit.sum(0), 5), geometry.pair_mean(unit @ unit.T))


L0_TOKENS = [[2, 0, 0], [-2, 0, 0], [0, 1, 0], [0, -1, 0]]


def test_pca_projection_fits_once_and_reports_explained_variance():
    shifted = [[x + 1, y, z] for x, y, z in L0_TOKENS]
    coords, explained = geometry.pca_projection(np.array([L0_TOKENS, shifted], float), fit_depth=0)
    np.testing.assert_allclose(explained, [0.8, 0.2])  # variances 8/3 and 2/3
    np.testing.assert_allclose(np.abs(coords[0]), [[2, 0], [2, 0], [0, 1], [0, 1]], atol=1e-12)
    np.testing.assert_allclose(np.abs(coords[1, :, 0] - coords[0, :, 0]), 1)  # the shift along PC1


def test_pca_steps_fixed_sees_movement_refit_sees_only_the_axes():
    shifted = [[x + 1, y, z] for x, y, z in L0_TOKENS]  # every token moves by 1 inside the PCA plane
    lifted = [[x, y, z + 5] for x, y, z in shifted]  # every token moves by 5, orthogonal to the plane
    states = np.array([L0_TOKENS, shifted, lifted], float)
    np.testing.assert_allclose(geometry.pca_steps(states, "fixed"), [1, 0], atol=1e-12)
    np.testing.assert_allclose(geometry.pca_steps(states, "refit"), [0, 0], atol=1e-12)  # each refit re-centres
    np.testing.assert_allclose(geometry.pca_token_steps(states, "fixed"), [[1] * len(L0_TOKENS), [0] * len(L0_TOKENS)],
                               atol=1e-12)  # per token: [L, n]
    with pytest.raises(ValueError, match="axes must be one of"):
        geometry.pca_steps(states, "moving")


def test_peak_write_picks_the_transition_with_the_largest_mean_absolute_write():
    pools = np.array([[[0, 0], [0, 0]], [[2, 0.5], [-2, 0.5]], [[2, 1.5], [-2, 2.5]]])
    # |Δ1| means: [2, 0.5]; |Δ2| means: [0, 1.5]
    np.testing.assert_array_equal(geometry.peak_write(pools), [1, 2])
    tie = np.array([[[0.0]], [[1.0]], [[2.0]]])
    assert geometry.peak_write(tie).tolist() == [1]  # first on ties
    np.testing.assert_array_equal(geometry.depth_histogram(np.array([1, 2, 2]), 3), [1, 2, 0])


def test_dim_correlation_against_hand_values_and_constant_dims():
    first = np.array([[1, 1], [2, 2], [3, 3]], float)
    last = np.array([[2, 3], [4, 2], [6, 1]], float)
    np.testing.assert_allclose(geometry.dim_correlation(first, last), [1, -1])
    with pytest.raises(ValueError, match="dimension 1 is constant"):
        geometry.dim_correlation(first, np.array([[1, 5], [2, 5], [3, 5]], float))
    with pytest.raises(ValueError, match="at least 3 texts"):
        geometry.dim_correlation(first[:2], last[:2])


def test_top_discriminative_dims_and_half_value_depth():
    a = np.array([[0, 0, 0], [0.5, 1, 1], [1, 5, 3]], float)
    b = np.array([[0, 0, 0], [0, 0, 0], [0, 1, -1]], float)
    dims, diffs = geometry.top_discriminative_dims(a, b, k=2)
    assert dims.tolist() == [1, 2]  # |diff| at the end: [1, 4, 4] (stable order on the tie)
    np.testing.assert_allclose(diffs, [[0, 1, 4], [0, 1, 4]])
    assert geometry.half_value_depth(np.array([0.1, 0.2, 0.6, 1.0])) == 2
    assert geometry.half_value_depth(np.array([0.5, 0.2, 1.0])) == 0


def test_matryoshka_slices_are_clipped_to_the_width():
    assert geometry.matryoshka_slices(300) == {"0-64": (0, 64), "64-128": (64, 128), "128-256": (128, 256),
                                               "256-512": (256, 300), "512-D": None}
    assert geometry.matryoshka_slices(1000)["512-D"] == (512, 1000)
    assert geometry.matryoshka_slices(40) == {"0-64": (0, 40), "64-128": None, "128-256": None,
                                              "256-512": None, "512-D": None}
    np.testing.assert_allclose(geometry.slice_cosine([1, 0, 0, 1], [1, 0, 1, 0], (0, 2)), 1)
    np.testing.assert_allclose(geometry.slice_cosine([1, 0, 0, 1], [1, 0, 1, 0], (2, 4)), 0)


def test_separability_ratio_against_hand_values():
    a, b = stack([[0.0], [2.0]]), stack([[4.0], [6.0]])
    # centroids 1 and 5, grand mean 3: B = 4; every token is 1 from its centroid: W = 1
    np.testing.assert_allclose(geometry.separability_ratio([a, b]), [4.0])
    with pytest.raises(ValueError, match="within-text scatter is zero"):
        geometry.separability_ratio([stack([[1.0], [1.0]]), stack([[2.0]])])


def test_the_between_kernel_is_b_as_a_u_statistic():
    c = np.array([[[1.0]], [[5.0]], [[3.0]]])  # three centroids at one depth: C = 3, B = (4 + 4 + 0) / 3
    kernel = geometry.between_kernel(c)
    np.testing.assert_allclose(kernel[..., 0], 2 / 3 * np.array([[0, 16, 4], [16, 0, 4], [4, 4, 0]]) / 2)
    np.testing.assert_allclose(geometry.pair_mean(kernel), [8 / 3])
    rng = np.random.default_rng(0)
    c = rng.normal(size=(7, 3, 4)) + 1e4  # far from the origin, where ‖c_s‖² + ‖c_t‖² − 2 c_s·c_t cancels (5e-9)
    tokens = np.array([-1.0, 1.0])[None, :, None]  # two tokens per text around its centroid
    between, _ = geometry.separability_parts([x[:, None] + tokens for x in c])
    np.testing.assert_allclose(geometry.pair_mean(geometry.between_kernel(c)), between.mean(axis=0), rtol=1e-12)


def test_pc1_alignment_against_hand_values_and_scikit_learns_axis():
    along = stack([[1, 0], [3, 0]])  # PC1 = e1, mean (2, 0): |cos| = 1
    across = stack([[1, 1], [1, 3]])  # PC1 = e2, mean (1, 2): |cos| = 2 / √5
    np.testing.assert_allclose([geometry.pc1_alignment(along), geometry.pc1_alignment(across)], [[1], [2 / np.sqrt(5)]])
    tokens = np.random.default_rng(5).normal(size=(2, 6, 12))
    by_pca = [abs(geometry.cosine(geometry.principal_axis(x), x.mean(axis=0))) for x in tokens]
    np.testing.assert_allclose(geometry.pc1_alignment(tokens), by_pca, atol=1e-9)


def test_maxsim_is_one_directional():
    a = stack([[1, 0], [0, 1]])
    b = stack([[1, 0], [1, 1]])
    np.testing.assert_allclose(geometry.maxsim(a, b), [[1, 1 / np.sqrt(2)]])
    np.testing.assert_allclose(geometry.maxsim(b, a), [[1, 1 / np.sqrt(2)]])
    np.testing.assert_allclose(geometry.maxsim(a, stack([[1, 0]])), [[1, 0]])


def test_correlation_summary_counts_both_tails():
    summary = geometry.correlation_summary(np.array([0.9, 0.75, 0.1, -0.8]), threshold=0.7)
    assert summary == {"mean": pytest.approx(0.2375), "threshold": 0.7, "n_above": 2, "n_below": 1,
                       "fraction_above": 0.5, "fraction_below": 0.25}
