"""Chapter 3's studies (studies.anisotropy, studies.centering, studies.cone_exercises): anisotropy,
the cone axis, every study function and the per-unit values its claims resample, on hand-computed
cases."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from embedding_geometry.book.claims import reduce as reducers
from embedding_geometry.core import geometry
from embedding_geometry.core.models import ModelInfo
from embedding_geometry.studies import anisotropy as an
from embedding_geometry.studies import centering
from embedding_geometry.studies import cone_exercises as ex

SQRT2 = np.sqrt(2)


# --------------------------------------------------------------------------- anisotropy

def test_anisotropy_of_hand_computed_sets():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    # pairs: (0,1) = 0, (0,2) = (1,2) = 1/√2, each counted twice → mean = (2/√2) / 3
    assert an.anisotropy(x) == pytest.approx((2 / SQRT2) / 3)
    assert an.anisotropy(np.array([[1.0, 2.0], [-1.0, -2.0]])) == pytest.approx(-1.0)
    assert an.anisotropy(np.array([[1.0, 0.0], [0.0, 5.0]])) == pytest.approx(0.0)


def test_anisotropy_of_identical_vectors_is_one_and_matches_the_pairwise_definition():
    assert an.anisotropy is geometry.mean_pairwise_cosine  # one implementation
    assert an.anisotropy(np.tile([0.3, -2.0, 1.0], (5, 1))) == pytest.approx(1.0)
    x = np.random.default_rng(0).normal(size=(30, 7)) + 0.5
    sims = geometry.cosine_matrix(x)
    assert an.anisotropy(x) == pytest.approx((sims.sum() - np.trace(sims)) / (30 * 29), abs=1e-12)


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

def test_the_cone_axis_is_pc1_of_centred_vectors_with_sklearn_sign():
    x = np.array([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]]) + [7.0, -3.0]
    np.testing.assert_allclose(geometry.principal_axis(x), np.array([2.0, 1.0]) / np.sqrt(5))
    assert an.explained_variance_ratio(x, geometry.principal_axis(x)) == pytest.approx(1.0)


def test_cone_axis_and_mean_direction_can_be_orthogonal():
    # every vector points along +x (the cone); the spread around the mean is along y
    x = np.array([[10.0, -1.0], [10.0, 1.0], [10.0, -2.0], [10.0, 2.0]])
    axis = geometry.principal_axis(x)
    np.testing.assert_allclose(np.abs(axis), [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(an.mean_direction(x), [1.0, 0.0])
    assert geometry.cosine(axis, an.mean_direction(x)) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(an.axis_scores(x, axis)), [1.0, 1.0, 2.0, 2.0], atol=1e-12)
    assert an.explained_variance_ratio(x, [1.0, 0.0]) == pytest.approx(0.0)


def test_cone_axis_of_identical_or_single_vectors_is_an_error():
    with pytest.raises(ValueError, match="identical"):
        geometry.principal_axis(np.ones((4, 3)))
    with pytest.raises(ValueError, match="n ≥ 2"):
        geometry.principal_axis(np.ones((1, 3)))
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


def test_family_pairs_pick_the_extreme_pairs_and_need_every_model():
    matrix = {"a": {"a": 1.0, "b": 0.9, "c": 0.8, "o": 0.1},
              "b": {"a": 0.9, "b": 1.0, "c": 0.95, "o": 0.2},
              "c": {"a": 0.8, "b": 0.95, "c": 1.0, "o": 0.05},
              "o": {"a": 0.1, "b": 0.2, "c": 0.05, "o": 1.0}}
    assert an.family_pairs(matrix, ["a", "b", "c"], "o") == {"within_min": ("a", "c"), "to_outsider_max": ("b", "o")}
    assert an.family_pairs(matrix, ["a", "b", "x"], "o") == {"within_min": None, "to_outsider_max": None}
    matrix["a"]["o"] = None  # widths differ: not comparable
    assert an.family_pairs(matrix, ["a", "b"], "o")["to_outsider_max"] is None


def test_axis_products_average_to_the_absolute_cosine():
    u, v = np.array([1.0, 2.0, 2.0]), np.array([-2.0, 0.0, -1.0])  # cos = −4 / (3 √5)
    terms = an.axis_products(u, v)
    np.testing.assert_allclose(terms, 3 * np.array([2.0, 0.0, 2.0]) / (3 * np.sqrt(5)))  # sign flipped
    assert terms.mean() == pytest.approx(4 / (3 * np.sqrt(5)))
    np.testing.assert_allclose(an.axis_products(u, u), 3 * u ** 2 / 9)


# --------------------------------------------------------------------------- topics (studies.centering)

X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 2.0]])
LABELS = ["a", "a", "b", "b"]


def test_group_anisotropy_means_and_mean_cosines():
    assert centering.group_anisotropy(X, LABELS) == pytest.approx({"a": 1 / SQRT2, "b": 1.0})
    means = centering.group_means(X, LABELS)
    np.testing.assert_allclose(means["a"], [1.0, 0.5])
    np.testing.assert_allclose(means["b"], [0.0, 1.5])
    cosines = centering.group_mean_cosines(X, LABELS)
    assert cosines["a"]["b"] == pytest.approx(0.5 / np.sqrt(1.25)) and cosines["b"]["b"] == pytest.approx(1.0)
    assert list(cosines) == ["a", "b"]


def test_centred_does_not_mutate_and_defaults_to_the_mean():
    before = X.copy()
    np.testing.assert_allclose(geometry.centred(X).mean(axis=0), [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(geometry.centred(X, [1.0, 0.0])[0], [0.0, 0.0])
    np.testing.assert_array_equal(X, before)


def test_removal_share_hand_case():
    x = np.array([[2.0, 1.0], [2.0, -1.0]])
    # raw: cos = (4 − 1) / 5 = 0.6; own mean (2, 0) → [[0, 1], [0, −1]]: −1; own removal 1.6
    assert centering.removal_share(x, np.array([2.0, 0.0])) == pytest.approx(1.0)
    assert centering.removal_share(x, np.array([0.0, 0.0])) == pytest.approx(0.0)
    # mean (1, 0) → [[1, 1], [1, −1]]: cos 0 → removal 0.6 / 1.6
    assert centering.removal_share(x, np.array([1.0, 0.0])) == pytest.approx(0.375)


def test_centering_removal_is_one_on_the_diagonal():
    x = np.array([[2.0, 1.0], [2.0, -1.0], [1.0, 3.0], [-1.0, 3.0]])
    removal = centering.centering_removal(x, ["p", "p", "q", "q"])
    assert removal["p"]["p"] == pytest.approx(1.0) and removal["q"]["q"] == pytest.approx(1.0)
    # q's mean (0, 3) on p: [[2, −2], [2, −4]] → cos = (4 + 8) / (√8 √20)
    expected = (0.6 - 12 / np.sqrt(8 * 20)) / 1.6
    assert removal["q"]["p"] == pytest.approx(expected)
    assert centering.offdiagonal_mean(removal) == pytest.approx((removal["q"]["p"] + removal["p"]["q"]) / 2)
    with pytest.raises(ValueError, match="two labels"):
        centering.offdiagonal_mean({"p": {"p": 1.0}})


def test_topic_measurements_shapes_and_too_few_topics():
    rng = np.random.default_rng(0)
    states = rng.normal(size=(3, 12, 4)) + 2.0
    labels = ["x"] * 5 + ["y"] * 5 + ["z"] * 2
    result = centering.topic_measurements(states, labels, min_size=5)
    assert result["topics"] == ["x", "y"] and result["topic_sizes"] == {"x": 5, "y": 5}
    assert set(result["topic_anisotropy"]) == {"x", "y"}
    assert result["topic_anisotropy"]["x"] == pytest.approx(an.anisotropy(states[-1, :5]))
    for key in ("topic_mean_cosine_offdiag", "topic_centering_removal_offdiag", "corpus_mean_removal"):
        assert result[key].shape == (3,)
    assert result["topic_mean_cosine_offdiag"][-1] == pytest.approx(
        geometry.cosine(states[-1, :5].mean(0), states[-1, 5:10].mean(0)))
    assert result["corpus_mean_removal"][0] == pytest.approx(np.mean(
        [centering.removal_share(states[0, rows], states[0, :10].mean(0)) for rows in (slice(0, 5), slice(5, 10))]))
    for too_few in (centering.topic_measurements(states, labels, min_size=6),
                    centering.topic_measurements(states, ["only"] * 12)):
        assert all(too_few[key] is None for key in centering.TOPIC_KEYS)
    assert centering.topic_measurements(states, ["only"] * 12)["topics"] == ["only"]
    assert centering.topic_measurements(states, ["only"] * 12)["topic_centering_removal_offdiag_permuted"] is None


def test_per_topic_removal_averages_to_the_offdiagonal_mean():
    matrix = {"p": {"p": 1.0, "q": 0.2, "r": 0.4}, "q": {"p": 0.6, "q": 1.0, "r": 0.0}, "r": {"p": -0.2, "q": 0.5, "r": 1.0}}
    columns = centering.column_offdiagonal_means(matrix)
    np.testing.assert_allclose(columns, [0.2, 0.35, 0.2])
    assert columns.mean() == pytest.approx(centering.offdiagonal_mean(matrix))
    rng = np.random.default_rng(4)
    states = rng.normal(size=(2, 15, 4)) + 2.0
    labels = ["x"] * 5 + ["y"] * 5 + ["z"] * 5
    result = centering.topic_measurements(states, labels, seed=1, permutations=3)
    per_topic = result["per_unit"]["topic_centering_removal_offdiag"]
    assert per_topic.shape == (3, 2)
    np.testing.assert_allclose(per_topic.mean(axis=0), result["topic_centering_removal_offdiag"], atol=1e-12)


def test_permuted_null_is_seeded_and_is_the_removal_of_shuffled_groups():
    rng = np.random.default_rng(5)
    states = rng.normal(size=(1, 12, 3)) + [3.0, 0.0, 0.0]
    labels = ["x"] * 6 + ["y"] * 6
    result = centering.topic_measurements(states, labels, seed=7, permutations=2)
    order = np.random.default_rng(7)
    shuffles = [order.permutation(np.asarray(labels)) for _ in range(2)]
    expected = np.mean([centering.offdiagonal_mean(centering.centering_removal(states[0], s)) for s in shuffles])
    assert result["topic_centering_removal_offdiag_permuted"][0] == pytest.approx(expected)
    again = centering.topic_measurements(states, labels, seed=7, permutations=2)
    np.testing.assert_array_equal(again["topic_centering_removal_offdiag_permuted"],
                                  result["topic_centering_removal_offdiag_permuted"])


def test_label_rows_keep_the_order_of_first_appearance():
    rows = geometry.label_rows(["b", "a", "b", "c"])
    assert list(rows) == ["b", "a", "c"] and rows["b"].tolist() == [0, 2]


# --------------------------------------------------------------------------- what an axis separates

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


def test_correlation_ratio_parts_make_eta2_as_a_ratio_of_means():
    values, labels = np.array([1.0, 2.0, 3.0, 4.0]), ["a", "a", "b", "b"]
    between, total = an.correlation_ratio_parts(values, labels)
    np.testing.assert_allclose(between, [1.0] * 4)
    np.testing.assert_allclose(total, [2.25, 0.25, 0.25, 2.25])
    assert between.mean() / total.mean() == pytest.approx(an.correlation_ratio(values, labels))


def test_permuted_eta2_is_the_mean_over_shuffled_labels():
    rng = np.random.default_rng(3)
    values, labels = rng.normal(size=30), np.repeat(["a", "b", "c"], [8, 10, 12])
    shuffled = np.mean([an.correlation_ratio(values, rng.permutation(labels)) for _ in range(4000)])
    assert an.permuted_eta2(labels) == pytest.approx(2 / 29)
    assert shuffled == pytest.approx(2 / 29, rel=0.05)


def test_rank_products_average_to_spearman_with_ties():
    x, y = np.array([3.0, 1.0, 2.0, 2.0, 5.0]), np.array([1.0, 0.0, 4.0, 2.0, 3.0])
    assert an.rank_products(x, y).mean() == pytest.approx(an.rank_correlation(x, y))
    assert an.rank_products(x, y).shape == (5,)




# --------------------------------------------------------------------------- study functions

def test_cone_formation_series_peak_final_share_and_per_sentence_values():
    pools = np.array([[[1.0, 0.0], [0.0, 1.0]],      # orthogonal: 0
                      [[1.0, 1.0], [2.0, 2.0]],      # identical directions: 1
                      [[1.0, 0.0], [1.0, 1.0]]])     # 45°: 1/√2
    result = an.cone_formation(pools)
    np.testing.assert_allclose(result["anisotropy"], [0.0, 1.0, 1 / SQRT2], atol=1e-12)
    np.testing.assert_allclose(result["anisotropy_rise"], [0.0, 1.0, 1 / SQRT2], atol=1e-12)
    assert result["anisotropy_peak_depth"] == 1
    assert result["final_step_share"] == pytest.approx(1.0)  # the whole fall is in the last step
    units = result["per_unit"]
    assert units["anisotropy"].shape == units["anisotropy_rise"].shape == (2, 3)
    np.testing.assert_allclose(units["anisotropy"].mean(axis=0), result["anisotropy"], atol=1e-12)
    np.testing.assert_allclose(units["anisotropy_rise"].mean(axis=0), result["anisotropy_rise"], atol=1e-12)


def test_final_step_share_reducer_matches_the_study_and_relocates_the_peak_per_resample():
    rng = np.random.default_rng(1)
    pools = rng.normal(size=(5, 9, 3)) + np.array([0.0, 2.0, 4.0, 1.0, 0.5])[:, None, None]
    result = an.cone_formation(pools)
    rows = result["per_unit"]["anisotropy"]
    assert reducers.reduce_metric(rows.mean(axis=0), "final_step_share") == pytest.approx(result["final_step_share"])
    # two resamples at once: one peaks inside (share 0.6 / 0.8), one rises to its end (nothing falls: 0)
    resamples = np.array([[0.1, 0.9, 0.5, 0.3], [0.1, 0.2, 0.3, 0.4]])
    np.testing.assert_allclose(reducers.reduce_array(resamples, "final_step_share"), [0.2 / 0.6, 0.0])
    rising = an.cone_formation(pools[[0, 4, 1, 2]])  # ends at its peak: nothing falls
    assert rising["final_step_share"] == 0.0
    assert reducers.reduce_metric(rising["anisotropy"], "final_step_share") == 0.0


def test_row_means_per_depth_and_text_shares_keep_the_mean():
    states = np.random.default_rng(2).normal(size=(3, 6, 4)) + 1.0
    rows = an.row_means_per_depth(states)
    np.testing.assert_allclose(rows.mean(axis=0), an.anisotropy_per_depth(states), atol=1e-12)
    values = np.array([1.0, 2.0, 3.0, 6.0])  # tokens of texts 0, 0, 2, 2 of 3 texts; mean 3
    shares = an.text_shares(values, np.array([0, 0, 2, 2]), 3)
    np.testing.assert_allclose(shares, [3 * 3 / 4, 0.0, 3 * 9 / 4])
    assert shares.mean() == pytest.approx(values.mean())


def test_per_sentence_anisotropy_differs_between_sentences_but_averages_to_the_metric():
    pools = np.array([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]] * 2)
    per_sentence = an.cone_formation(pools)["per_unit"]["anisotropy"][:, 0]
    np.testing.assert_allclose(per_sentence, [1 / (2 * SQRT2), 1 / (2 * SQRT2), 1 / SQRT2])
    assert per_sentence.mean() == pytest.approx((2 / SQRT2) / 3)


def masks(word, special):
    return SimpleNamespace(word_mask=np.array(word, bool), special_mask=np.array(special, bool))


def test_token_sample_counts_word_or_all_tokens_and_samples_them():
    acts = masks([False, True, True, False, True, False], [True, False, False, True, False, True])
    rows, kept = an.token_sample(acts, "word", size=10)
    assert rows.tolist() == [1, 2, 4] and kept == 3
    rows, kept = an.token_sample(acts, "all", size=10)
    assert rows.tolist() == [0, 1, 2, 3, 4, 5] and kept == 6
    rows, kept = an.token_sample(acts, "all", size=4, seed=2)
    assert len(rows) == 4 and kept == 6 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, an.sample_rows(6, 4, seed=2))
    with pytest.raises(ValueError, match="token_set"):
        an.token_sample(acts, "special")


def test_pooling_gap_is_sentence_minus_token_anisotropy():
    pools = np.array([[[1.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [2.0, 2.0]]])   # 1/√2, 1
    tokens = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 3.0]],                 # (0 + 0 + 1)·2 / 6 = 1/3
                       [[1.0, 0.0], [-1.0, 0.0], [2.0, 0.0]]])                # (−1 + 1 − 1)·2 / 6 = −1/3
    result = an.pooling_gap(pools, tokens, np.array([0, 1, 1]))
    np.testing.assert_allclose(result["token_anisotropy"], [1 / 3, -1 / 3], atol=1e-12)
    np.testing.assert_allclose(result["anisotropy_gap"], [1 / SQRT2 - 1 / 3, 1 + 1 / 3], atol=1e-12)
    np.testing.assert_allclose(result["pooling_share"], [(1 / SQRT2 - 1 / 3) * SQRT2, 4 / 3], atol=1e-12)
    units = result["per_unit"]
    # token 0's cosines with tokens 1, 2 at depth 0: 0, 0 → 0; tokens 1 and 2 are parallel → 1/2 each
    np.testing.assert_allclose(units["token_anisotropy"][:, 0], [0.0, 0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(units["token_anisotropy.by_sentence"][:, 0], [0.0, 2 * 1.0 / 3], atol=1e-12)
    for key, metric in (("token_anisotropy", "token_anisotropy"), ("token_anisotropy.by_sentence", "token_anisotropy"),
                        ("anisotropy_gap", "anisotropy_gap")):
        np.testing.assert_allclose(units[key].mean(axis=0), result[metric], atol=1e-12)


def test_word_counts_per_text():
    acts = SimpleNamespace(word_mask=np.array([0, 1, 1, 0, 0, 1, 0], bool), offsets=np.array([0, 4, 7]))
    assert an.word_counts(acts).tolist() == [2, 1]


def test_end_topics_counts_the_most_frequent_topic_at_each_end():
    scores, topics = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0]), ["a", "a", "b", "b", "c", "c"]
    assert an.end_topics(scores, topics, 3) == {"high": {"topic": "a", "sentences": 2, "of": 3},
                                                "low": {"topic": "c", "sentences": 2, "of": 3}}
    everything = an.end_topics(scores, topics, 20)  # k is clipped to the number of sentences
    assert everything["high"]["of"] == 6 and everything["high"]["sentences"] == 2


# the cone along +x; spread along y (PC1), scores −2, −1, 1, 2
CONE = np.array([[10.0, -2.0], [10.0, -1.0], [10.0, 1.0], [10.0, 2.0]])


def test_cone_axis_reading_on_a_cone_whose_spread_is_orthogonal_to_its_direction():
    sentences = ["s0", "s1", "s2", "s3"]
    result = an.cone_axis_reading(CONE, ["a", "a", "b", "b"], [1, 2, 3, 4], sentences, k=1)
    np.testing.assert_allclose(result["cone_axis"], [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(result["mean_direction"], [1.0, 0.0])
    np.testing.assert_allclose(result["cone_axis_scores"], [-2.0, -1.0, 1.0, 2.0], atol=1e-12)
    assert result["cone_axis_vs_mean_direction"] == pytest.approx(0.0, abs=1e-12)
    assert result["cone_axis_explained_variance"] == pytest.approx(1.0)
    assert result["mean_direction_explained_variance"] == pytest.approx(0.0, abs=1e-12)
    spread = np.array([2.0, 1.0, 1.0, 2.0])
    assert result["mean_cos_to_mean_direction"] == pytest.approx(np.mean(10 / np.sqrt(100 + spread ** 2)))
    assert result["mean_abs_cos_to_cone_axis"] == pytest.approx(np.mean(spread / np.sqrt(100 + spread ** 2)))
    assert result["cone_extremes"] == {"high": [{"sentence": "s3", "topic": "b", "score": pytest.approx(2.0)}],
                                       "low": [{"sentence": "s0", "topic": "a", "score": pytest.approx(-2.0)}]}
    assert result["cone_end_topics"]["high"] == {"topic": "b", "sentences": 1, "of": 1}
    # label means −1.5 and 1.5: between = 2·2.25 + 2·2.25 = 9, total = 4 + 1 + 1 + 4 = 10
    assert result["cone_axis_topic_eta2"] == pytest.approx(0.9)
    assert result["cone_axis_topic_eta2_permuted"] == pytest.approx(1 / 3)  # (K − 1) / (N − 1)
    assert result["cone_axis_length_spearman"] == pytest.approx(1.0)
    units = result["per_unit"]
    between, total = units["cone_axis_topic_eta2.between"], units["cone_axis_topic_eta2.total"]
    np.testing.assert_allclose(between, [2.25] * 4)
    np.testing.assert_allclose(total, [4.0, 1.0, 1.0, 4.0], atol=1e-12)
    assert units["cone_axis_length_spearman"].mean() == pytest.approx(1.0)


def test_cone_axis_reading_with_one_topic_has_no_eta2():
    result = an.cone_axis_reading(CONE, ["t"] * 4, [4, 3, 2, 1], ["s0", "s1", "s2", "s3"], k=2)
    assert result["cone_axis_topic_eta2"] is None and result["cone_axis_topic_eta2_permuted"] is None
    assert set(result["per_unit"]) == {"cone_axis_length_spearman"}
    assert result["cone_axis_length_spearman"] == pytest.approx(-1.0)


def test_vocabulary_reading_ranks_common_words():
    embeddings = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, -1.0]])
    names = lambda ids: [f"t{i}" for i in ids]  # noqa: E731
    result = an.vocabulary_reading(embeddings, np.array([0.0, 0.0, 2.0]), 2, {"the": 3, "a": 2}, names)
    assert result["top"] == [{"token": "t2", "id": 2, "projection": 3.0}, {"token": "t0", "id": 0, "projection": 0.0}]
    assert [row["id"] for row in result["bottom"]] == [3, 0]
    assert result["common_word_ranks"] == {"the": 4, "a": 1}
    assert result["common_in_top"] == 1 and result["n_tokens"] == 4
    assert result["common_in_top_each"] == [0, 1] and result["common_share_in_top"] == pytest.approx(0.5)


def test_vocabulary_on_axis_reads_the_input_embeddings_and_the_tokenizer():
    vocab = ["[PAD]", "the", "cat", "a"]
    table = torch.nn.Embedding(4, 2)
    with torch.no_grad():
        table.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0], [0.0, -1.0]]))
    tokenizer = SimpleNamespace(convert_tokens_to_ids=lambda words: [vocab.index(w) for w in words],
                                convert_ids_to_tokens=lambda ids: [vocab[i] for i in ids])
    loaded = SimpleNamespace(model=SimpleNamespace(get_input_embeddings=lambda: table), tokenizer=tokenizer)
    result = an.vocabulary_on_axis(loaded, np.array([0.0, 1.0]), 1, ["the", "a"])
    assert result["top"][0]["token"] == "cat" and result["bottom"][0]["token"] == "a"
    assert result["common_word_ranks"] == {"the": 2, "a": 4}


INFO = ModelInfo(id="trained", source="local", sha256=None, revision=None, model_type="bert", layers=2, hidden=2,
                 heads=1, vocab=4, parameters=0, pooling="mean", max_seq_length=8)
CONTROL = replace(INFO, id="trained [random-init control, seed 0]", source="control")
# the control's cone: along +y, spread along x, so its axis is orthogonal to the trained model's
CONTROL_CONE = np.array([[-2.0, 10.0], [-1.0, 10.0], [1.0, 10.0], [2.0, 10.0]])
POST = {"models": {"m": "trained", "n": "other", "base": "base"}, "fine_tuned": ["m", "n"], "base": "base"}


def test_axis_comparison_with_a_random_control():
    curves = {INFO: np.array([0.2, 0.5, 0.3]), CONTROL: np.array([0.9, 0.95, 0.92])}
    result = an.axis_comparison({INFO: CONE, CONTROL: CONTROL_CONE}, POST, curves)
    assert list(result["models_final_anisotropy"]) == ["trained", CONTROL.id]
    assert result["models_final_anisotropy"]["trained"] == pytest.approx(an.anisotropy(CONE))
    assert result["cone_axis_cosine"]["trained"][CONTROL.id] == pytest.approx(0.0, abs=1e-12)
    assert result["cone_axis_cosine"][CONTROL.id][CONTROL.id] == pytest.approx(1.0)
    assert result["cone_axis_family"] == {"within_min": None, "to_outsider_max": None}  # "other" was not run
    assert result["chance_axis_cosine"] == pytest.approx(np.sqrt(1 / np.pi))
    control = result["random_control"]
    assert control["model"] == CONTROL.id and control["axis_cosine"] == pytest.approx(0.0, abs=1e-12)
    assert control["anisotropy_excess"] == pytest.approx(an.anisotropy(CONTROL_CONE) - an.anisotropy(CONE))
    np.testing.assert_allclose(control["anisotropy"], [0.9, 0.95, 0.92])
    np.testing.assert_allclose(control["anisotropy_rise"], [0.0, 0.05, 0.02], atol=1e-12)
    excess = result["per_unit"]["random_control.anisotropy_excess"]
    assert excess.shape == (4,) and excess.mean() == pytest.approx(control["anisotropy_excess"])
    assert not any(key.startswith("cone_axis_family") for key in result["per_unit"])


def test_axis_comparison_of_the_post_family_and_without_a_control():
    other = replace(INFO, id="other", source="hub")
    base = replace(INFO, id="base", source="hub")
    result = an.axis_comparison({INFO: CONE, other: CONE * [1.0, 2.0], base: CONTROL_CONE}, POST)
    assert result["cone_axis_family"] == {"within_min": pytest.approx(1.0), "to_outsider_max": pytest.approx(0.0, abs=1e-12)}
    assert result["random_control"] == dict.fromkeys(("model", "final_anisotropy", "axis_cosine", "anisotropy_excess",
                                                      "anisotropy", "anisotropy_rise"))
    for key, value in result["cone_axis_family"].items():  # per dimension, averaging to the |cos|
        assert result["per_unit"][f"cone_axis_family.{key}"].mean() == pytest.approx(value, abs=1e-12)


def test_second_control_against_the_model_and_the_first_control():
    second = CONTROL_CONE * [3.0, 1.0]  # its axis is the first control's
    result = ex.second_control({INFO: CONE, CONTROL: CONTROL_CONE}, second)
    assert result["final_anisotropy"] == pytest.approx(an.anisotropy(second))
    assert result["axis_cos_with_model"] == pytest.approx(0.0, abs=1e-12)
    assert result["axis_cos_with_this_control"] == pytest.approx(1.0)
    assert result["anisotropy_difference"] == pytest.approx(abs(an.anisotropy(second) - an.anisotropy(CONTROL_CONE)))
    assert result["anisotropy_change"] == pytest.approx(an.anisotropy(second) - an.anisotropy(CONTROL_CONE))
    assert result["axis_cos_over_chance"] == pytest.approx(1.0 / an.chance_axis_cosine(2))
    units = result["per_unit"]
    assert units["anisotropy_change"].mean() == pytest.approx(result["anisotropy_change"])
    assert units["axis_cos_over_chance"].shape == (2,)
    assert units["axis_cos_over_chance"].mean() == pytest.approx(result["axis_cos_over_chance"])
    alone = ex.second_control({INFO: CONE}, second)
    assert alone["axis_cos_with_this_control"] is None and alone["axis_cos_over_chance"] is None
    assert alone["anisotropy_change"] is None and alone["per_unit"] is None


def test_chance_axis_cosine_matches_random_directions():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 4000, 384))
    observed = np.abs(geometry.pair_cosine(a, b)).mean()
    assert observed == pytest.approx(an.chance_axis_cosine(384), rel=0.03)


# --------------------------------------------------------------------------- the exercises' answers

def test_sample_pools_reuses_the_corpus_pools_or_extracts():
    pools = np.arange(2 * 3 * 1, dtype=float).reshape(2, 3, 1)
    calls = []

    def extract(texts):
        calls.append(texts)
        return SimpleNamespace(mean_pool=lambda tokens: np.zeros((2, len(texts), 1)))

    np.testing.assert_array_equal(ex.sample_pools(["c", "a"], ["a", "b", "c"], pools, extract), pools[:, [2, 0]])
    assert calls == []
    assert ex.sample_pools(["a", "new"], ["a", "b", "c"], pools, extract).shape == (2, 2, 1)
    assert calls == [["a", "new"]]


def test_sample_size_check_summarises_the_sample_curve():
    pools = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [2.0, 2.0]], [[1.0, 0.0], [1.0, 1.0]]])
    result = ex.sample_size_check(pools, np.array([0.1, 0.9, 0.7]))
    np.testing.assert_allclose(result["n_texts_300_anisotropy"], [0.0, 1.0, 1 / SQRT2], atol=1e-12)
    assert result["n_texts_300"] == {"n": 2, "peak": pytest.approx(1.0), "peak_depth": 1,
                                     "final": pytest.approx(1 / SQRT2), "max_difference": pytest.approx(0.1)}


def test_token_set_check_compares_token_sets_and_the_pooling_gap():
    hidden = np.array([[[1.0, 0.0], [0.0, 1.0], [0.0, 2.0], [1.0, 1.0]]])  # one depth, four tokens
    special = np.array([False, True, True, False])
    owners = np.array([0, 0, 1, 1])  # two texts of two tokens
    # this build's token set (made up, consistent): anisotropy 0.5 = mean of its per-text shares
    # 0.4, 0.6; pooling gap 0.5 = mean of 0.6, 0.4
    measured = {"token_anisotropy": np.array([0.5]), "anisotropy_gap": np.array([0.5]),
                "per_unit": {"token_anisotropy.by_sentence": np.array([[0.4], [0.6]]),
                             "anisotropy_gap": np.array([[0.6], [0.4]])}}
    result = ex.token_set_check(hidden, np.array([0, 1, 2]), owners, special, measured, depth=0)
    # tokens 0, 1, 2: cosines 0, 0, 1 → anisotropy 1/3; the special tokens 1 and 2 are parallel
    np.testing.assert_allclose(result["token_set_all_token_anisotropy"], [1 / 3])
    every = result["token_set_all"]
    assert every["at_depth"] == pytest.approx(1 / 3) and every["this_build_at_depth"] == 0.5
    assert every["max_difference"] == pytest.approx(1 / 6) and every["special_share"] == 0.5
    assert every["special_anisotropy"] == pytest.approx(1.0)
    assert every["change_share"] == pytest.approx((1 / 6) / 0.5)
    assert every["signed_change_share"] == pytest.approx(-(1 / 6) / 0.5)
    # per token: 0, 1/2, 1/2 → text 0 holds tokens 0, 1 (share 2·0.5/3), text 1 token 2 (2·0.5/3)
    np.testing.assert_allclose(every["per_unit"]["change"], [1 / 3 - 0.4, 1 / 3 - 0.6])
    ratio = every["per_unit"]["change"].mean() / every["per_unit"]["gap"].mean()
    assert ratio == pytest.approx(every["signed_change_share"])
    no_gap = ex.token_set_check(hidden, np.array([0, 1, 2]), owners, special,
                                {**measured, "anisotropy_gap": np.array([0.0])}, depth=0)
    assert no_gap["token_set_all"]["change_share"] is None and no_gap["token_set_all"]["signed_change_share"] is None
