"""Chapter 3's studies (studies.anisotropy, studies.centering, chapters.ch03_cone.exercises): anisotropy,
the cone axis, every study function and the per-unit values its claims resample, on hand-computed
cases."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from embedding_geometry.book.claims import reduce as reducers
from embedding_geometry.book.claims import samples
from embedding_geometry.chapters.ch03_cone import exercises as ex
from embedding_geometry.core import geometry
from embedding_geometry.studies import anisotropy as an
from embedding_geometry.studies import cone
from embedding_geometry.studies import cone_axis as ax
from embedding_geometry.studies import centering

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
    assert ax.explained_variance_ratio(x, geometry.principal_axis(x)) == pytest.approx(1.0)


def test_cone_axis_and_mean_direction_can_be_orthogonal():
    # every vector points along +x (the cone); the spread around the mean is along y
    x = np.array([[10.0, -1.0], [10.0, 1.0], [10.0, -2.0], [10.0, 2.0]])
    axis = geometry.principal_axis(x)
    np.testing.assert_allclose(np.abs(axis), [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(ax.mean_direction(x), [1.0, 0.0])
    assert geometry.cosine(axis, ax.mean_direction(x)) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(ax.axis_scores(x, axis)), [1.0, 1.0, 2.0, 2.0], atol=1e-12)
    assert ax.explained_variance_ratio(x, [1.0, 0.0]) == pytest.approx(0.0)


def test_cone_axis_of_identical_or_single_vectors_is_an_error():
    with pytest.raises(ValueError, match="identical"):
        geometry.principal_axis(np.ones((4, 3)))
    with pytest.raises(ValueError, match="n ≥ 2"):
        geometry.principal_axis(np.ones((1, 3)))
    with pytest.raises(ValueError, match="zero vector"):
        ax.mean_direction(np.array([[1.0, 1.0], [-1.0, -1.0]]))
    with pytest.raises(ValueError, match="identical"):
        ax.explained_variance_ratio(np.ones((3, 2)), [1.0, 0.0])


def test_extremes_highest_first_lowest_first_ties_in_order():
    top, bottom = ax.extremes(np.array([3.0, 1.0, 2.0, 5.0, 4.0]), k=2)
    np.testing.assert_array_equal(top, [3, 4])
    np.testing.assert_array_equal(bottom, [1, 2])
    top, bottom = ax.extremes(np.array([1.0, 1.0, 0.0]), k=1)
    assert top.tolist() == [0] and bottom.tolist() == [2]
    with pytest.raises(ValueError, match="k must be"):
        ax.extremes(np.array([1.0, 2.0]), k=3)


def test_vocabulary_projection_on_a_hand_matrix():
    embeddings = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, -1.0]])
    projections, top, bottom = ax.vocabulary_projection(embeddings, np.array([0.0, 0.0, 2.0]), k=2)
    np.testing.assert_allclose(projections, [0.0, 0.0, 3.0, -1.0])
    assert top.tolist() == [2, 0] and bottom.tolist() == [3, 0]
    assert ax.vocabulary_ranks(projections, [2, 3, 0]) == [1, 4, 2]


def test_axis_cosines_are_absolute_and_width_mismatch_is_not_comparable():
    axes = {"a": np.array([1.0, 0.0]), "b": np.array([-1.0, 1.0]), "c": np.array([1.0, 0.0, 0.0])}
    matrix = ax.axis_cosines(axes)
    assert matrix["a"]["a"] == pytest.approx(1.0)
    assert matrix["a"]["b"] == pytest.approx(1 / SQRT2) and matrix["b"]["a"] == pytest.approx(1 / SQRT2)
    assert matrix["a"]["c"] is None and matrix["c"]["b"] is None
    assert matrix["c"]["c"] == pytest.approx(1.0)


def test_family_pairs_pick_the_extreme_pairs_and_need_every_model():
    matrix = {"a": {"a": 1.0, "b": 0.9, "c": 0.8, "o": 0.1},
              "b": {"a": 0.9, "b": 1.0, "c": 0.95, "o": 0.2},
              "c": {"a": 0.8, "b": 0.95, "c": 1.0, "o": 0.05},
              "o": {"a": 0.1, "b": 0.2, "c": 0.05, "o": 1.0}}
    assert ax.family_pairs(matrix, ["a", "b", "c"], "o") == {"within_min": ("a", "c"), "to_outsider_max": ("b", "o")}
    assert ax.family_pairs(matrix, ["a", "b", "x"], "o") == {"within_min": None, "to_outsider_max": None}
    matrix["a"]["o"] = None  # widths differ: not comparable
    assert ax.family_pairs(matrix, ["a", "b"], "o")["to_outsider_max"] is None


def test_axis_products_average_to_the_absolute_cosine():
    u, v = np.array([1.0, 2.0, 2.0]), np.array([-2.0, 0.0, -1.0])  # cos = −4 / (3 √5)
    terms = ax.axis_products(u, v)
    np.testing.assert_allclose(terms, 3 * np.array([2.0, 0.0, 2.0]) / (3 * np.sqrt(5)))  # sign flipped
    assert terms.mean() == pytest.approx(4 / (3 * np.sqrt(5)))
    np.testing.assert_allclose(ax.axis_products(u, u), 3 * u ** 2 / 9)


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


def test_centering_removal_from_the_gram_matrix_is_the_definition_in_a_narrow_cone():
    rng = np.random.default_rng(3)
    x = 0.05 * rng.normal(size=(24, 16)) + rng.normal(size=16)  # cosines near 0.998: the Gram form's worst case
    labels = np.repeat(["a", "b", "c"], 8)
    removal = centering.centering_removal(x, labels)
    for a in "abc":
        for b in "abc":
            direct = centering.removal_share(x[labels == b], x[labels == a].mean(axis=0))
            assert removal[a][b] == pytest.approx(direct, rel=1e-9)
    shuffled = centering.permuted_removal(x, labels, permutations=3, seed=5)
    rng = np.random.default_rng(5)
    by_definition = [centering.offdiagonal_mean(centering.centering_removal(x, rng.permutation(labels)))
                     for _ in range(3)]
    assert shuffled == pytest.approx(by_definition, rel=1e-12)
    with pytest.raises(ValueError, match="zero vector"):
        centering.centering_removal(np.vstack([x[:2], x[:1], x[:1]]), ["p", "p", "q", "q"])


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
        assert set(too_few["not_measured"]) == set(centering.TOPIC_KEYS)  # the claims say why they are not measured
        assert "fewer than two topics have" in too_few["not_measured"]["topic_centering_removal_offdiag"]
    assert "not_measured" not in result
    assert centering.topic_measurements(states, ["only"] * 12)["topics"] == ["only"]
    assert centering.topic_measurements(states, ["only"] * 12)["topic_centering_removal_offdiag_permutations"] is None


def test_per_topic_removal_averages_to_the_offdiagonal_mean():
    matrix = {"p": {"p": 1.0, "q": 0.2, "r": 0.4}, "q": {"p": 0.6, "q": 1.0, "r": 0.0},
              "r": {"p": -0.2, "q": 0.5, "r": 1.0}}
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


def test_shared_direction_hand_case_random_and_related_pairs():
    # unit vectors (1, 0), (1, 0), (0, 1), (0, 1) (scaled: only directions count): μ = (½, ½), ‖μ‖² = ½;
    # a same-topic pair: cos 1 = shared ½ + ½ − ½ = ½ + specific ½; over all 12 ordered pairs cos averages 1/3
    x = np.array([[[2.0, 0.0], [1.0, 0.0], [0.0, 3.0], [0.0, 1.0]]])
    found = centering.shared_direction(x, LABELS)["shared_direction"]
    related, random = found["related"], found["random"]
    np.testing.assert_allclose([related["cosine"][0], related["shared"][0], related["specific"][0]], [1.0, 0.5, 0.5])
    assert related["share"][0] == pytest.approx(0.5)
    np.testing.assert_allclose([random["cosine"][0], random["shared"][0], random["share"][0]], [1 / 3, 0.5, 1.5])
    # three orthogonal topics with no common offset: the specific part dominates (share 1/3) …
    eye = np.repeat(np.eye(3), 2, axis=0)[None]
    assert centering.shared_direction(eye, list("aabbcc"))["shared_direction"]["related"]["share"][0] == \
        pytest.approx(1 / 3)
    # … and a common offset ten times larger makes the shared direction carry nearly all of it
    offset = centering.shared_direction(eye + [10.0, 10.0, 10.0], list("aabbcc"))["shared_direction"]["related"]
    assert offset["share"][0] > 0.99


def test_shared_direction_parts_are_the_centred_products_and_random_share_is_exact():
    rng = np.random.default_rng(3)
    states = rng.normal(size=(2, 9, 5)) + [1.5, 0, 0, 0, 0]
    labels = list("aaabbbccc")
    result = centering.shared_direction(states, labels)
    unit = geometry.unit_rows(states[1])
    mean = unit.mean(axis=0)
    centred = unit - mean
    same = [(s, t) for s in range(9) for t in range(9) if s != t and labels[s] == labels[t]]
    found = result["shared_direction"]
    assert found["related"]["specific"][1] == pytest.approx(np.mean([centred[s] @ centred[t] for s, t in same]))
    assert found["related"]["cosine"][1] == pytest.approx(np.mean([unit[s] @ unit[t] for s, t in same]))
    norm2, a = mean @ mean, an.anisotropy(states[1])
    assert found["random"]["shared"][1] == pytest.approx(norm2) and found["random"]["cosine"][1] == pytest.approx(a)
    assert found["random"]["share"][1] == pytest.approx(norm2 / a) == pytest.approx(norm2 * 8 / (9 * norm2 - 1))
    units = result["per_unit"]
    ratio = samples.find({"per_unit": units}, {"numerator": {"pairwise": "shared_direction.related.shared"},
                                               "denominator": {"pairwise": "shared_direction.related.cosine"}})
    np.testing.assert_allclose(ratio.point(), found["related"]["share"], atol=1e-12)


def test_shared_direction_of_one_topic_has_no_related_pairs():
    rng = np.random.default_rng(5)
    result = centering.shared_direction(rng.normal(size=(2, 6, 3)) + 1.0, ["only"] * 6)
    assert result["shared_direction"]["related"] is None and "per_unit" not in result
    assert "two topics or more" in result["not_measured"]["shared_direction.related.share"]
    assert result["shared_direction"]["random"]["share"].shape == (2,)


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
    pairs = an.cone_formation(pools, "pairs")
    assert {k: v for k, v in pairs.items() if k != "per_unit"}.keys() == {k for k in result if k != "per_unit"}
    kernel, rise = pairs["per_unit"]["anisotropy.pairs"], pairs["per_unit"]["anisotropy_rise.pairs"]
    assert kernel.shape == rise.shape == (2, 2, 3)
    np.testing.assert_allclose(geometry.pair_mean(kernel), result["anisotropy"], atol=1e-12)
    np.testing.assert_allclose(geometry.pair_mean(rise), result["anisotropy_rise"], atol=1e-12)
    with pytest.raises(ValueError, match="units"):
        an.cone_formation(pools, "sentences")


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


def test_per_sentence_anisotropy_differs_between_sentences_but_averages_to_the_metric():
    pools = np.array([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]] * 2)
    per_sentence = an.cone_formation(pools)["per_unit"]["anisotropy"][:, 0]
    np.testing.assert_allclose(per_sentence, [1 / (2 * SQRT2), 1 / (2 * SQRT2), 1 / SQRT2])
    assert per_sentence.mean() == pytest.approx((2 / SQRT2) / 3)


def test_word_counts_per_text():
    acts = SimpleNamespace(word_mask=np.array([0, 1, 1, 0, 0, 1, 0], bool), offsets=np.array([0, 4, 7]))
    assert ax.word_counts(acts).tolist() == [2, 1]


def test_end_topics_counts_the_most_frequent_topic_at_each_end():
    scores, topics = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0]), ["a", "a", "b", "b", "c", "c"]
    assert ax.end_topics(scores, topics, 3) == {"high": {"topic": "a", "sentences": 2, "of": 3},
                                                "low": {"topic": "c", "sentences": 2, "of": 3}}
    everything = ax.end_topics(scores, topics, 20)  # k is clipped to the number of sentences
    assert everything["high"]["of"] == 6 and everything["high"]["sentences"] == 2


# the cone along +x; spread along y (PC1), scores −2, −1, 1, 2
CONE = np.array([[10.0, -2.0], [10.0, -1.0], [10.0, 1.0], [10.0, 2.0]])


def test_cone_axis_reading_on_a_cone_whose_spread_is_orthogonal_to_its_direction():
    sentences = ["s0", "s1", "s2", "s3"]
    result = ax.cone_axis_reading(CONE, ["a", "a", "b", "b"], [1, 2, 3, 4], sentences, k=1)
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
    draws = result["cone_axis_topic_eta2_permutations"]
    np.testing.assert_allclose(draws, an.permuted_eta2_draws(result["cone_axis_scores"], ["a", "a", "b", "b"], seed=0))
    assert draws.shape == (an.PERMUTATIONS,) and set(np.round(draws, 9)) <= {0.0, 0.1, 0.9}  # the 3 splits of 2 + 2
    assert result["cone_axis_length_spearman"] == pytest.approx(1.0)
    units = result["per_unit"]
    between, total = units["cone_axis_topic_eta2.between"], units["cone_axis_topic_eta2.total"]
    np.testing.assert_allclose(between, [2.25] * 4)
    np.testing.assert_allclose(total, [4.0, 1.0, 1.0, 4.0], atol=1e-12)
    np.testing.assert_allclose(units["cone_axis_length.x"][:, 0], [1.0, 2.0, 3.0, 4.0])
    moments = {name: units[f"cone_axis_length.{name}"] for name in ("x", "y", "xx", "yy", "xy")}
    assert samples.Correlation(moments).point() == pytest.approx(1.0)


def test_cone_axis_reading_with_one_topic_has_no_eta2():
    result = ax.cone_axis_reading(CONE, ["t"] * 4, [4, 3, 2, 1], ["s0", "s1", "s2", "s3"], k=2)
    assert result["cone_axis_topic_eta2"] is None and result["cone_axis_topic_eta2_permutations"] is None
    assert set(result["per_unit"]) == {f"cone_axis_length.{name}" for name in ("x", "y", "xx", "yy", "xy")}
    assert result["cone_axis_length_spearman"] == pytest.approx(-1.0)


def test_vocabulary_reading_ranks_common_words():
    embeddings = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, -1.0]])
    def names(ids):
        return [f"t{i}" for i in ids]
    result = ax.vocabulary_reading(embeddings, np.array([0.0, 0.0, 2.0]), 2, {"the": 3, "a": 2}, names)
    assert result["top"] == [{"token": "t2", "id": 2, "projection": 3.0}, {"token": "t0", "id": 0, "projection": 0.0}]
    assert [row["id"] for row in result["bottom"]] == [3, 0]
    assert result["common_word_ranks"] == {"the": 4, "a": 1}
    assert result["common_in_top"] == 1 and result["n_tokens"] == 4
    assert result["common_in_top_each"] == [0, 1] and result["common_share_in_top"] == pytest.approx(0.5)
    assert result["post_tokens"] == []
    listed = ax.vocabulary_reading(embeddings, np.array([0.0, 0.0, 2.0]), 2, {"the": 3}, names, {"t1": 1, "zz": None})
    assert listed["post_tokens"] == [{"token": "t1", "in_vocabulary": True, "rank": 2, "projection": 0.0},
                                     {"token": "zz", "in_vocabulary": False, "rank": None, "projection": None}]


def test_vocabulary_on_axis_reads_the_input_embeddings_and_the_tokenizer():
    vocab = ["[PAD]", "the", "cat", "a"]
    table = torch.nn.Embedding(4, 2)
    with torch.no_grad():
        table.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 5.0], [0.0, -1.0]]))
    tokenizer = SimpleNamespace(convert_tokens_to_ids=lambda words: [vocab.index(w) for w in words],
                                convert_ids_to_tokens=lambda ids: [vocab[i] for i in ids],
                                get_vocab=lambda: {w: i for i, w in enumerate(vocab)})
    loaded = SimpleNamespace(model=SimpleNamespace(get_input_embeddings=lambda: table), tokenizer=tokenizer)
    result = ax.vocabulary_on_axis(loaded, np.array([0.0, 1.0]), 1, ["the", "a"], ["cat", "##ffs"])
    assert result["top"][0]["token"] == "cat" and result["bottom"][0]["token"] == "a"
    assert result["common_word_ranks"] == {"the": 2, "a": 4}
    assert [(t["token"], t["rank"]) for t in result["post_tokens"]] == [("cat", 1), ("##ffs", None)]


def test_chance_axis_cosine_matches_random_directions():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 4000, 384))
    observed = np.abs(geometry.pair_cosine(a, b)).mean()
    assert observed == pytest.approx(ax.chance_axis_cosine(384), rel=0.03)


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
    np.testing.assert_allclose(result["sample_anisotropy"], [0.0, 1.0, 1 / SQRT2], atol=1e-12)
    assert result["sample"] == {"n": 2, "peak": pytest.approx(1.0), "peak_depth": 1,
                                "final": pytest.approx(1 / SQRT2), "max_difference": pytest.approx(0.1)}


def test_listed_in_top_counts_the_post_tokens_in_the_vocabulary():
    vocab = {"post_tokens": [{"token": "a", "in_vocabulary": True, "rank": 3},
                             {"token": "b", "in_vocabulary": True, "rank": 150},
                             {"token": "c", "in_vocabulary": False, "rank": None}]}
    assert ex.listed_in_top(vocab, 100) == {"k": 100, "in_top": 1, "of": 2, "best_rank": 3}
    assert ex.listed_in_top({"post_tokens": []}, 5) == {"k": 5, "in_top": 0, "of": 0, "best_rank": None}


# --------------------------------------------------------------------------- the chapter's sentences

def test_chapter_corpus_takes_the_same_number_from_every_topic_and_nests():
    whole = cone.chapter_corpus("project")
    assert len(whole) == len(whole.drop_duplicates()) and whole["topic"].nunique() == 16
    small, large = cone.chapter_corpus("project", 32, seed=3), cone.chapter_corpus("project", 64, seed=3)
    assert set(small["topic"].value_counts()) == {2} and set(large["topic"].value_counts()) == {4}
    assert set(small["sentence"]) < set(large["sentence"])  # the same shuffles, taken further
    order = {s: i for i, s in enumerate(whole["sentence"])}
    assert list(small["sentence"]) == sorted(small["sentence"], key=order.get)  # corpus order
    assert small.equals(cone.chapter_corpus("project", 32, seed=3))
    assert not small.equals(cone.chapter_corpus("project", 32, seed=4))
    odd = cone.chapter_corpus("project", 18, seed=0)
    assert len(odd) == 18 and sorted(odd["topic"].value_counts()) == [1] * 14 + [2] * 2
    assert cone.chapter_corpus("project", 10_000).equals(whole)


# --------------------------------------------------------------------------- pairwise kernels

def brute_cross_text(hidden, owners):
    """Mean cosine over pairs of tokens of different texts, by a double loop."""
    values = [geometry.cosine(hidden[i], hidden[j]) for i in range(len(owners)) for j in range(len(owners))
              if owners[i] != owners[j]]
    return np.mean(values)


def test_cosine_kernel_has_a_zero_diagonal_and_its_pair_mean_is_the_anisotropy():
    states = np.random.default_rng(6).normal(size=(3, 7, 4)) + 1.0
    kernel = an.cosine_kernel(states)
    assert kernel.shape == (7, 7, 3)
    np.testing.assert_array_equal(np.einsum("ssl->sl", kernel), 0.0)
    assert kernel[2, 5, 1] == pytest.approx(geometry.cosine(states[1, 2], states[1, 5]))
    np.testing.assert_allclose(kernel, kernel.transpose(1, 0, 2))
    np.testing.assert_allclose(geometry.pair_mean(kernel), an.anisotropy_per_depth(states), atol=1e-12)


def test_token_kernels_pair_tokens_of_different_texts_only():
    hidden = np.array([[[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [2.0, 0.0], [-1.0, 1.0]]])  # one depth, 5 tokens
    owners = np.array([0, 0, 1, 1, 2])
    pairs, counts = an.token_kernels(hidden, owners, 3)
    assert pairs.shape == (3, 3, 1) and counts.shape == (3, 3, 1)
    np.testing.assert_array_equal(counts[..., 0], [[0, 4, 2], [4, 0, 2], [2, 2, 0]])
    # texts 0 and 1: cos(t0, t2) + cos(t0, t3) + cos(t1, t2) + cos(t1, t3) = 0 + 1 + 1/√2 + 1/√2
    assert pairs[0, 1, 0] == pytest.approx(1 + SQRT2)
    assert np.all(np.einsum("ssl->sl", pairs) == 0)
    expected = brute_cross_text(hidden[0], owners)
    assert pairs.sum() / counts.sum() == pytest.approx(expected)


def record(hidden, offsets, word, special):
    """A stand-in Activations record: token states, text offsets and masks."""
    offsets = np.asarray(offsets)
    return SimpleNamespace(hidden=np.asarray(hidden, dtype=float), offsets=offsets, n_texts=len(offsets) - 1,
                           word_mask=np.array(word, bool), special_mask=np.array(special, bool),
                           text_index=lambda: np.repeat(np.arange(len(offsets) - 1), np.diff(offsets)))


def test_token_rows_count_word_or_all_tokens():
    acts = record(np.zeros((1, 6, 2)), [0, 3, 6], [0, 1, 1, 0, 1, 0], [1, 0, 0, 1, 0, 1])
    assert an.token_rows(acts, "word").tolist() == [1, 2, 4]
    assert an.token_rows(acts, "all").tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="token_set"):
        an.token_rows(acts, "special")


def test_pooling_gap_is_sentence_minus_cross_text_token_anisotropy():
    rng = np.random.default_rng(8)
    hidden = rng.normal(size=(2, 9, 3)) + [1.0, 0.5, 0.0]
    acts = record(hidden, [0, 3, 6, 9], [0, 1, 1] * 3, [1, 0, 0] * 3)  # each text: [CLS] then two words
    pools = rng.normal(size=(2, 3, 3)) + 1.0
    result = an.pooling_gap(pools, acts, "word")
    words = acts.word_mask
    for depth in range(2):
        assert result["token_anisotropy"][depth] == pytest.approx(brute_cross_text(hidden[depth, words],
                                                                                  acts.text_index()[words]))
        assert result["token_anisotropy_all"][depth] == pytest.approx(brute_cross_text(hidden[depth],
                                                                                       acts.text_index()))
    np.testing.assert_allclose(result["anisotropy_gap"], an.anisotropy_per_depth(pools) - result["token_anisotropy"])
    np.testing.assert_allclose(result["pooling_share"], result["anisotropy_gap"] / an.anisotropy_per_depth(pools))
    np.testing.assert_allclose(result["token_set_effect"],
                               (result["token_anisotropy_all"] - result["token_anisotropy_word"])
                               / result["anisotropy_gap"])
    assert result["n_tokens"] == 6
    units = result["per_unit"]
    ratio = samples.find({"per_unit": units}, {"numerator": {"pairwise": "token_anisotropy.pairs"},
                                               "denominator": {"pairwise": "token_anisotropy.counts"}})
    np.testing.assert_allclose(ratio.point(), result["token_anisotropy"])
    every = an.pooling_gap(pools, acts, "all")
    np.testing.assert_allclose(every["token_anisotropy"], result["token_anisotropy_all"])
    np.testing.assert_allclose(every["token_set_effect"] * every["anisotropy_gap"],
                               result["token_set_effect"] * result["anisotropy_gap"])


def test_control_formation_keeps_one_kernel_per_seed_and_nothing_without_controls():
    rng = np.random.default_rng(9)
    pools = rng.normal(size=(3, 6, 4)) + 1.0
    controls = [rng.normal(size=(3, 6, 4)) + 3.0 for _ in range(3)]
    result = an.control_formation(pools, controls)
    curves = np.stack([an.anisotropy_per_depth(c) for c in controls])
    np.testing.assert_allclose(result["controls"]["anisotropy"], curves)
    np.testing.assert_allclose(result["controls"]["final_anisotropy"], curves[:, -1])
    np.testing.assert_allclose(result["random_control"]["anisotropy_excess"],
                               curves.mean(0) - an.anisotropy_per_depth(pools))
    kernels = result["per_unit"]["controls.anisotropy.pairs"]
    assert kernels.shape == (3, 6, 6, 3)
    seeded = samples.find({"per_unit": result["per_unit"]}, {"seeds": {"pairwise": "controls.anisotropy.pairs"}})
    np.testing.assert_allclose(seeded.point(), curves.mean(0))
    np.testing.assert_allclose(seeded.per_seed(), curves)
    none = an.control_formation(pools, [])
    assert none["controls"] == {"anisotropy": None, "anisotropy_mean": None, "final_anisotropy": None}
    assert none["random_control"] == {"anisotropy_excess": None} and "per_unit" not in none


def test_pairwise_resampling_gives_twice_the_standard_error_of_row_means():
    """The reason for the kernels: the row means a_s of a U-statistic are not independent; treated
    as independent units they give half its standard error (Hoeffding: var ≈ 4σ₁²/n, not σ₁²/n)."""
    rng = np.random.default_rng(10)
    x = rng.normal(size=(80, 5)) + [2.0, 0, 0, 0, 0]
    kernel = an.cosine_kernel(x[None])
    rows = an.row_means_per_depth(x[None])
    pairs = samples.bootstrap(samples.Units(kernel, pairwise=True), lambda x: x, 4000, np.random.default_rng(1))
    naive = samples.bootstrap(samples.Units(rows), lambda x: x, 4000, np.random.default_rng(1))
    assert np.std(pairs) / np.std(naive) == pytest.approx(2.0, rel=0.15)


# --------------------------------------------------------------------------- models and the comparison across them

def encoder(name, source="local"):
    return SimpleNamespace(info=SimpleNamespace(id=name, source=source))


def test_run_models_gives_each_trained_model_its_controls():
    calls = []

    def extract(texts, model, source):
        calls.append((model.info.id, source))
        return SimpleNamespace(mean_pool=lambda tokens: np.full((2, len(texts), 3), len(calls), dtype=float))

    models = [encoder("m"), encoder("n"), encoder("m [random-init control, seed 0]", "control"),
              encoder("m [random-init control, seed 1]", "control"),
              encoder("n [random-init control, seed 0]", "control")]
    runs = cone.run_models(models, extract, ["a", "b"])
    assert list(runs) == ["m", "n"] and all(source == "corpus" for _, source in calls)
    assert list(runs["m"].controls) == ["m [random-init control, seed 0]", "m [random-init control, seed 1]"]
    assert runs["m"].controls["m [random-init control, seed 1]"][0, 0, 0] == 4.0
    with pytest.raises(ValueError, match="not the control"):
        cone.control_of(SimpleNamespace(id="x [random-init control, seed 0]"), ["m"])


CONTROL_CONE = np.array([[-2.0, 10.0], [-1.0, 10.0], [1.0, 10.0], [2.0, 10.0]])  # axis along x
POST = {"models": {"m": "trained", "n": "other", "base": "base"}, "fine_tuned": ["m", "n"], "base": "base"}


def test_axis_comparison_of_every_model_and_the_post_family():
    result = ax.axis_comparison({"trained": CONE, "trained [control]": CONTROL_CONE}, POST)
    assert result["cone_axis_cosine"]["trained"]["trained [control]"] == pytest.approx(0.0, abs=1e-12)
    assert result["models_final_anisotropy"]["trained"] == pytest.approx(an.anisotropy(CONE))
    assert result["cone_axis_family"] == {"within_min": None, "to_outsider_max": None} and result["per_unit"] == {}
    assert result["chance_axis_cosine"] == pytest.approx(np.sqrt(1 / np.pi))
    family = ax.axis_comparison({"trained": CONE, "other": CONE * [1.0, 2.0], "base": CONTROL_CONE}, POST)
    assert family["cone_axis_family"] == {"within_min": pytest.approx(1.0),
                                          "to_outsider_max": pytest.approx(0.0, abs=1e-12)}
    for key, value in family["cone_axis_family"].items():  # per dimension, averaging to the |cos|
        assert family["per_unit"][f"cone_axis_family.{key}"].mean() == pytest.approx(value, abs=1e-12)


def test_rotation_compares_the_axes_with_each_control_and_tries_their_centering_vectors():
    result = ax.rotation(CONE, [CONTROL_CONE, CONE * [1.0, 3.0]])
    np.testing.assert_allclose(result["axis_cos"], [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(result["axis_cos_over_q99"], result["axis_cos"] / ax.chance_axis_quantile(2))
    assert result["axis_cos_over_q99_mean"] == pytest.approx(np.mean(result["axis_cos_over_q99"]))
    assert result["controls_axis_cos"] == [pytest.approx(0.0, abs=1e-12)]
    shares = result["centering"]
    assert shares["model_by_control"][1] == pytest.approx(centering.removal_share(CONE, (CONE * [1.0, 3.0]).mean(0)))
    assert shares["control_by_model"][0] == pytest.approx(centering.removal_share(CONTROL_CONE, CONE.mean(0)))
    assert ax.rotation(CONE, []) == dict.fromkeys(ax.ROTATION_KEYS)


def test_chance_axis_quantile_matches_random_directions():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(2, 20000, 64))
    observed = np.quantile(np.abs(geometry.pair_cosine(a, b)), 0.99)
    assert ax.chance_axis_quantile(64) == pytest.approx(observed, rel=0.05)


def test_permuted_eta2_draws_are_seeded_and_centre_on_their_expectation():
    rng = np.random.default_rng(3)
    values, labels = rng.normal(size=30), np.repeat(["a", "b", "c"], [8, 10, 12])
    draws = an.permuted_eta2_draws(values, labels, 2000, seed=5)
    np.testing.assert_array_equal(draws, an.permuted_eta2_draws(values, labels, 2000, seed=5))
    assert draws.mean() == pytest.approx(2 / 29, rel=0.08)  # (K − 1) / (N − 1), K = 3 labels of N = 30


def test_rank_moments_rebuild_spearman_with_ties():
    x, y = np.array([3.0, 1.0, 2.0, 2.0, 5.0]), np.array([1.0, 0.0, 4.0, 2.0, 3.0])
    moments = an.rank_moments(x, y)
    assert moments["x"].shape == (5, 1)
    assert samples.Correlation(moments).point() == pytest.approx(an.rank_correlation(x, y))


def test_centred_anisotropy_and_permuted_removal():
    rng = np.random.default_rng(11)
    x, means = rng.normal(size=(6, 3)) + 2.0, rng.normal(size=(4, 3))
    expected = [an.anisotropy(x - mu) for mu in means]
    np.testing.assert_allclose(centering.centred_anisotropy(x, means), expected)
    states = rng.normal(size=(12, 3)) + [3.0, 0.0, 0.0]
    labels = ["x"] * 6 + ["y"] * 6
    draws = centering.permuted_removal(states, labels, 3, seed=7)
    order = np.random.default_rng(7)
    shuffles = [order.permutation(np.asarray(labels)) for _ in range(3)]
    np.testing.assert_allclose(draws, [centering.offdiagonal_mean(centering.centering_removal(states, s))
                                       for s in shuffles])
    result = centering.topic_measurements(states[None], labels, seed=7, permutations=3)
    np.testing.assert_allclose(result["topic_centering_removal_offdiag_permutations"], draws)


# --------------------------------------------------------------------------- the whole chapter on the tiny model

def test_measure_all_gives_every_model_every_ledger_metric(tiny_bert):
    from embedding_geometry.book import claims
    from embedding_geometry.core import activations, corpora, models

    frame = cone.chapter_corpus("project", 32, seed=0)
    texts, topics = frame["sentence"].tolist(), frame["topic"].tolist()
    encoders = [tiny_bert, *(models.random_control(tiny_bert, seed) for seed in range(1, 11))]  # a null needs 10 seeds
    runs = cone.run_models(encoders, lambda t, m, source: activations.extract(m, t, cache=False, progress=False), texts)
    params = {"token_set": "word", "k_extremes": 3, "k_vocab": 4, "seed": 0}
    found = cone.measure_all(runs, topics, texts, params, corpora.published("03_inside_the_cone"))
    metrics = found[tiny_bert.info.id]
    assert len(metrics["controls"]["anisotropy"]) == 10 and len(metrics["rotation"]["axis_cos"]) == 10
    assert set(metrics["cone_axis_cosine"]) == {e.info.id for e in encoders}
    ledger = claims.load("03_inside_the_cone")
    for claim in ledger.claims:
        claims.lookup(metrics, claim.metric)  # every claim's metric exists (None allowed)
    verdicts = {v.claim.id: v for v in claims.evaluate(ledger, metrics, tiny_bert.info.id, resamples=200,
                                                          family=claims.family_size())}
    assert verdicts["anisotropy-peak"].null["distribution"] == "10 seeds, unit by unit"
    assert verdicts["cone-axis-content"].null["distribution"] == f"{an.PERMUTATIONS} draws"
    assert verdicts["centering-is-corpus-specific"].status == "not measured"  # 2 sentences per topic
    assert "no per-unit samples" not in " ".join(str(v.reason) for v in verdicts.values())


# --------------------------------------------------------------------------- the seed's coverage

def test_coverage_lists_every_figure_claim_and_erratum_of_the_post_with_a_status():
    import yaml

    from embedding_geometry.book import claims, coverage as grades
    from embedding_geometry.core import corpora

    coverage = yaml.safe_load(grades.path("03_inside_the_cone").read_text())
    items = coverage["items"]
    assert coverage["seed"] == "002" and coverage["chapter"] == "03_inside_the_cone"
    for item in items:
        assert item["status"] in grades.STATUSES, item["item"]
        assert item.get("where"), item["item"]
        if item["status"] != "reproduced":
            assert item.get("why"), item["item"]
    figures = {value["figure"] for value in corpora.published("03_inside_the_cone").values()}
    assert figures <= {item.get("figure") for item in items}
    ledger = claims.load("03_inside_the_cone")
    named = {i for item in items for i in item.get("claims", []) + item.get("errata", [])}
    published = [c.id for c in ledger.claims if c.kind == "published"]
    assert [i for i in published + [e["id"] for e in ledger.errata] if i not in named] == []
