"""Anisotropy, the cone axis and per-topic geometry on hand-computed cases."""

import numpy as np
import pytest

from embedding_geometry.studies import anisotropy as an
from embedding_geometry.core import geometry

SQRT2 = np.sqrt(2)


# --------------------------------------------------------------------------- anisotropy

def test_anisotropy_of_hand_computed_sets():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    # pairs: (0,1) = 0, (0,2) = (1,2) = 1/√2, each counted twice → mean = (2/√2) / 3
    assert an.anisotropy(x) == pytest.approx((2 / SQRT2) / 3)
    assert an.anisotropy(np.array([[1.0, 2.0], [-1.0, -2.0]])) == pytest.approx(-1.0)
    assert an.anisotropy(np.array([[1.0, 0.0], [0.0, 5.0]])) == pytest.approx(0.0)


def test_anisotropy_of_identical_vectors_is_one_and_matches_the_pairwise_definition():
    assert an.anisotropy(np.tile([0.3, -2.0, 1.0], (5, 1))) == pytest.approx(1.0)
    x = np.random.default_rng(0).normal(size=(30, 7)) + 0.5
    assert an.anisotropy(x) == pytest.approx(geometry.mean_pairwise_cosine(x), abs=1e-12)


def test_anisotropy_edge_cases_are_errors_not_nan():
    with pytest.raises(ValueError, match="n ≥ 2"):
        an.anisotropy(np.ones((1, 3)))
    with pytest.raises(ValueError, match="n ≥ 2"):
        an.anisotropy(np.ones(3))
    with pytest.raises(ValueError, match="zero vector"):
        an.anisotropy(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_anisotropy_per_depth_and_input_not_mutated():
    states = np.stack([np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 1.0], [2.0, 2.0]])])
    before = states.copy()
    np.testing.assert_allclose(an.anisotropy_per_depth(states), [0.0, 1.0], atol=1e-12)
    np.testing.assert_array_equal(states, before)


def test_sample_rows_is_seeded_sorted_and_without_repeats():
    np.testing.assert_array_equal(an.sample_rows(5, size=10), np.arange(5))
    rows = an.sample_rows(1000, size=50, seed=3)
    assert len(rows) == 50 and len(np.unique(rows)) == 50 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, an.sample_rows(1000, size=50, seed=3))
    assert not np.array_equal(rows, an.sample_rows(1000, size=50, seed=4))


def test_token_anisotropy_uses_kept_tokens_and_never_pairs_a_token_with_itself():
    # depth 0: kept tokens (rows 1, 2) are orthogonal → 0; depth 1: kept tokens identical → 1
    hidden = np.array([[[5.0, 5.0], [1.0, 0.0], [0.0, 1.0]],
                       [[5.0, -5.0], [1.0, 1.0], [3.0, 3.0]]])
    values, rows = an.token_anisotropy_per_depth(hidden, np.array([False, True, True]))
    np.testing.assert_allclose(values, [0.0, 1.0], atol=1e-12)
    np.testing.assert_array_equal(rows, [1, 2])
    with pytest.raises(ValueError, match="n ≥ 2"):
        an.token_anisotropy_per_depth(hidden, np.array([False, True, False]))


def test_token_anisotropy_samples_the_same_tokens_at_every_depth():
    hidden = np.random.default_rng(1).normal(size=(3, 200, 4))
    values, rows = an.token_anisotropy_per_depth(hidden, np.ones(200, bool), size=20, seed=7)
    assert len(rows) == 20
    np.testing.assert_allclose(values, [an.anisotropy(hidden[d, rows]) for d in range(3)])


def test_final_step_share():
    # the post's table: (0.672 − 0.417) / (0.924 − 0.417)
    series = [0.626, 0.924, 0.672, 0.417]
    assert an.final_step_share(series) == pytest.approx(0.255 / 0.507)
    assert an.final_step_share([0.2, 0.5, 0.1]) == pytest.approx(1.0)
    assert an.final_step_share([0.1, 0.5]) == 0.0
    with pytest.raises(ValueError, match="at least 2"):
        an.final_step_share([0.3])


def test_nearest_depth_maps_relative_depth():
    assert an.nearest_depth(0.5, 24) == 12 and an.nearest_depth(0.5, 6) == 3
    assert an.nearest_depth(1.0, 6) == 6 and an.nearest_depth(0.0, 6) == 0
    assert an.nearest_depth(0.125, 6) == 1


# --------------------------------------------------------------------------- the cone axis

def test_cone_axis_is_pc1_of_centred_vectors_with_sklearn_sign():
    x = np.array([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]]) + [7.0, -3.0]
    np.testing.assert_allclose(an.cone_axis(x), np.array([2.0, 1.0]) / np.sqrt(5))
    assert an.explained_variance_ratio(x, an.cone_axis(x)) == pytest.approx(1.0)


def test_cone_axis_and_mean_direction_can_be_orthogonal():
    # every vector points along +x (the cone); the spread around the mean is along y
    x = np.array([[10.0, -1.0], [10.0, 1.0], [10.0, -2.0], [10.0, 2.0]])
    axis = an.cone_axis(x)
    np.testing.assert_allclose(np.abs(axis), [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(an.mean_direction(x), [1.0, 0.0])
    assert geometry.cosine(axis, an.mean_direction(x)) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(an.axis_scores(x, axis)), [1.0, 1.0, 2.0, 2.0], atol=1e-12)
    assert an.explained_variance_ratio(x, [1.0, 0.0]) == pytest.approx(0.0)


def test_cone_axis_of_identical_or_single_vectors_is_an_error():
    with pytest.raises(ValueError, match="identical"):
        an.cone_axis(np.ones((4, 3)))
    with pytest.raises(ValueError, match="n ≥ 2"):
        an.cone_axis(np.ones((1, 3)))
    with pytest.raises(ValueError, match="zero vector"):
        an.mean_direction(np.array([[1.0, 1.0], [-1.0, -1.0]]))
    with pytest.raises(ValueError, match="identical"):
        an.explained_variance_ratio(np.ones((3, 2)), [1.0, 0.0])


def test_extremes_highest_first_lowest_first_ties_in_order():
    top, bottom = an.extremes(np.array([3.0, 1.0, 2.0, 5.0, 4.0]), k=2)
    np.testing.assert_array_equal(top, [3, 4])
    np.testing.assert_array_equal(bottom, [1, 2])
    top, bottom = an.extremes(np.array([1.0, 1.0, 0.0]), k=1)
    assert top.tolist() == [0] and bottom.tolist() == [2]
    with pytest.raises(ValueError, match="k must be"):
        an.extremes(np.array([1.0, 2.0]), k=3)


def test_vocabulary_projection_on_a_hand_matrix():
    embeddings = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, -1.0]])
    projections, top, bottom = an.vocabulary_projection(embeddings, np.array([0.0, 0.0, 2.0]), k=2)
    np.testing.assert_allclose(projections, [0.0, 0.0, 3.0, -1.0])
    assert top.tolist() == [2, 0] and bottom.tolist() == [3, 0]
    assert an.vocabulary_ranks(projections, [2, 3, 0]) == [1, 4, 2]


def test_axis_cosines_are_absolute_and_width_mismatch_is_not_comparable():
    axes = {"a": np.array([1.0, 0.0]), "b": np.array([-1.0, 1.0]), "c": np.array([1.0, 0.0, 0.0])}
    matrix = an.axis_cosines(axes)
    assert matrix["a"]["a"] == pytest.approx(1.0)
    assert matrix["a"]["b"] == pytest.approx(1 / SQRT2) and matrix["b"]["a"] == pytest.approx(1 / SQRT2)
    assert matrix["a"]["c"] is None and matrix["c"]["b"] is None
    assert matrix["c"]["c"] == pytest.approx(1.0)


def test_axis_family_summary_needs_every_model():
    matrix = {"a": {"a": 1.0, "b": 0.9, "c": 0.8, "o": 0.1},
              "b": {"a": 0.9, "b": 1.0, "c": 0.95, "o": 0.2},
              "c": {"a": 0.8, "b": 0.95, "c": 1.0, "o": 0.05},
              "o": {"a": 0.1, "b": 0.2, "c": 0.05, "o": 1.0}}
    assert an.axis_family_summary(matrix, ["a", "b", "c"], "o") == {"within_min": 0.8, "to_outsider_max": 0.2}
    assert an.axis_family_summary(matrix, ["a", "b", "x"], "o") == {"within_min": None, "to_outsider_max": None}
    matrix["a"]["o"] = None  # widths differ: not comparable
    assert an.axis_family_summary(matrix, ["a", "b"], "o")["to_outsider_max"] is None


# --------------------------------------------------------------------------- groups

X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 2.0]])
LABELS = ["a", "a", "b", "b"]


def test_group_anisotropy_means_and_mean_cosines():
    assert an.group_anisotropy(X, LABELS) == pytest.approx({"a": 1 / SQRT2, "b": 1.0})
    means = an.group_means(X, LABELS)
    np.testing.assert_allclose(means["a"], [1.0, 0.5])
    np.testing.assert_allclose(means["b"], [0.0, 1.5])
    cosines = an.group_mean_cosines(X, LABELS)
    assert cosines["a"]["b"] == pytest.approx(0.5 / np.sqrt(1.25)) and cosines["b"]["b"] == pytest.approx(1.0)
    assert list(cosines) == ["a", "b"]


def test_centred_does_not_mutate_and_defaults_to_the_mean():
    before = X.copy()
    np.testing.assert_allclose(an.centred(X).mean(axis=0), [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(an.centred(X, [1.0, 0.0])[0], [0.0, 0.0])
    np.testing.assert_array_equal(X, before)


def test_removal_share_hand_case():
    x = np.array([[2.0, 1.0], [2.0, -1.0]])
    # raw: cos = (4 − 1) / 5 = 0.6; own mean (2, 0) → [[0, 1], [0, −1]]: −1; own removal 1.6
    assert an.removal_share(x, np.array([2.0, 0.0])) == pytest.approx(1.0)
    assert an.removal_share(x, np.array([0.0, 0.0])) == pytest.approx(0.0)
    # mean (1, 0) → [[1, 1], [1, −1]]: cos 0 → removal 0.6 / 1.6
    assert an.removal_share(x, np.array([1.0, 0.0])) == pytest.approx(0.375)


def test_centering_removal_is_one_on_the_diagonal():
    x = np.array([[2.0, 1.0], [2.0, -1.0], [1.0, 3.0], [-1.0, 3.0]])
    removal = an.centering_removal(x, ["p", "p", "q", "q"])
    assert removal["p"]["p"] == pytest.approx(1.0) and removal["q"]["q"] == pytest.approx(1.0)
    # q's mean (0, 3) on p: [[2, −2], [2, −4]] → cos = (4 + 8) / (√8 √20)
    expected = (0.6 - 12 / np.sqrt(8 * 20)) / 1.6
    assert removal["q"]["p"] == pytest.approx(expected)
    assert an.offdiagonal_mean(removal) == pytest.approx((removal["q"]["p"] + removal["p"]["q"]) / 2)
    with pytest.raises(ValueError, match="two labels"):
        an.offdiagonal_mean({"p": {"p": 1.0}})


def test_correlation_ratio_and_rank_correlation():
    assert an.correlation_ratio([1.0, 1.0, 3.0, 3.0], ["a", "a", "b", "b"]) == pytest.approx(1.0)
    assert an.correlation_ratio([1.0, 3.0, 1.0, 3.0], ["a", "a", "b", "b"]) == pytest.approx(0.0)
    # mean 2.5: total = 2.25 + 0.25 + 0.25 + 2.25 = 5; label means 1.5, 3.5: between = 2·1 + 2·1 = 4
    values = np.array([1.0, 2.0, 3.0, 4.0])
    assert an.correlation_ratio(values, ["a", "a", "b", "b"]) == pytest.approx(4.0 / 5.0)
    with pytest.raises(ValueError, match="constant"):
        an.correlation_ratio([2.0, 2.0], ["a", "b"])
    assert an.rank_correlation([1, 2, 3, 4], [10, 20, 25, 100]) == pytest.approx(1.0)
    assert an.rank_correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="constant"):
        an.rank_correlation([1, 1, 1], [1, 2, 3])


def test_topic_measurements_shapes_and_too_few_topics():
    rng = np.random.default_rng(0)
    states = rng.normal(size=(3, 12, 4)) + 2.0
    labels = ["x"] * 5 + ["y"] * 5 + ["z"] * 2
    result = an.topic_measurements(states, labels, min_size=5)
    assert result["topics"] == ["x", "y"] and result["topic_sizes"] == {"x": 5, "y": 5}
    assert set(result["topic_anisotropy"]) == {"x", "y"}
    assert result["topic_anisotropy"]["x"] == pytest.approx(an.anisotropy(states[-1, :5]))
    for key in ("topic_mean_cosine_offdiag", "topic_centering_removal_offdiag", "corpus_mean_removal"):
        assert result[key].shape == (3,)
    assert result["topic_mean_cosine_offdiag"][-1] == pytest.approx(
        geometry.cosine(states[-1, :5].mean(0), states[-1, 5:10].mean(0)))
    assert an.topic_measurements(states, labels, min_size=6) is None
    assert an.topic_measurements(states, ["only"] * 12) is None
