"""The primer's toy constructions on hand-computed cases, its charts, and the page end to end."""

import json

import numpy as np
import pytest

from embedding_geometry.book import parameters
from embedding_geometry.chapters.ch00b_primer import charts, primer
from embedding_geometry.core import geometry
from embedding_geometry.core.activations import Activations
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.studies import anisotropy

SLUG = "00b_primer"


# --------------------------------------------------------------------------- hidden states and pooling

def test_residual_stream_adds_one_update_per_block():
    states = primer.residual_stream(n_tokens=3, width=4, n_layers=2, scale=0.5, seed=1)
    assert states.shape == (3, 3, 4)
    np.testing.assert_array_equal(states, primer.residual_stream(3, 4, 2, 0.5, seed=1))
    same_start = primer.residual_stream(3, 4, 2, scale=0.0, seed=1)
    np.testing.assert_array_equal(same_start[0], same_start[2])  # no updates: every depth equals depth 0


def test_similarity_modes_against_hand_values():
    a = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # one depth, two tokens
    b = np.array([[[1.0, 0.0]]])
    assert primer.similarity(a, b, "mean")[0] == pytest.approx(1 / np.sqrt(2))  # cos((.5, .5), (1, 0))
    assert primer.similarity(a, b, "cls")[0] == pytest.approx(1.0)
    assert primer.similarity(a, b, "maxsim")[0] == pytest.approx(0.5)  # best matches 1 and 0
    c = np.array([[[0.0, 1.0], [4.0, 0.0], [0.0, 2.0]]])  # CLS along y, mean of the tokens (4/3, 1)
    assert primer.similarity(a, c, "cls")[0] == pytest.approx(0.0, abs=1e-12)
    assert primer.similarity(a, c, "mean")[0] == pytest.approx(geometry.cosine([0.5, 0.5], [4 / 3, 1.0]))
    with pytest.raises(ValueError, match="maxsim"):
        primer.similarity(a, b, "sum")


def test_similarity_of_one_token_each_is_their_cosine_and_identical_texts_score_one():
    u, v = np.array([[[3.0, 4.0]]]), np.array([[[4.0, 3.0]]])
    for mode in primer.SIMILARITY_MODES:
        assert primer.similarity(u, v, mode)[0] == pytest.approx(24 / 25)
    stack = primer.residual_stream(4, 5, 3, seed=2)
    for mode in primer.SIMILARITY_MODES:
        np.testing.assert_allclose(primer.similarity(stack, stack, mode), 1.0)


def test_a_zero_mean_pool_is_an_error_not_nan():
    opposite = np.array([[[1.0, 0.0], [-1.0, 0.0]]])
    with pytest.raises(ValueError, match="zero vector"):
        primer.similarity(opposite, opposite, "mean")


def test_cosine_to_depth0_and_pair_cosines():
    states = np.array([[[1.0, 0.0]], [[1.0, 1.0]], [[0.0, 2.0]]])  # one token turning by 45° per depth
    np.testing.assert_allclose(primer.cosine_to_depth0(states), [[1.0], [1 / np.sqrt(2)], [0.0]], atol=1e-12)
    pools = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    pairs = primer.pair_cosines(pools, ["a", "b", "c"])
    assert list(pairs) == ["a · b", "a · c", "b · c"]
    np.testing.assert_allclose([pairs[k][0] for k in pairs], [0.0, 1 / np.sqrt(2), 1 / np.sqrt(2)], atol=1e-12)


def test_toy_similarities_follow_the_definitions():
    (_, a), (_, b) = primer.TOY_PAIR.values()
    a, b = np.asarray(a), np.asarray(b)
    toy = primer.toy_similarities()
    assert toy["mean"] == pytest.approx(geometry.cosine(a.mean(0), b.mean(0)))
    assert toy["cls"] == pytest.approx(geometry.cosine(a[0], b[0]))
    assert toy["maxsim"] == pytest.approx(geometry.cosine_matrix(a[1:], b[1:]).max(axis=1).mean())
    frame = charts.toy_pair_frame()
    assert set(frame["kind"]) == {"token", "CLS", "mean pool"} and len(frame) == len(a) + len(b) + 2


def test_angle_frame_cosine_ignores_length_but_the_dot_product_does_not():
    frame = primer.angle_frame([0, 90, 180], [1.0, 2.0]).query("vector == 'v'").set_index(["angle", "length"])
    assert frame.loc[(90, 1.0), "cosine"] == pytest.approx(0.0, abs=1e-3)
    assert frame.loc[(180, 2.0), "cosine"] == pytest.approx(-1.0)
    assert frame.loc[(0, 1.0), "cosine"] == frame.loc[(0, 2.0), "cosine"]
    assert frame.loc[(0, 2.0), "dot"] == pytest.approx(2 * frame.loc[(0, 1.0), "dot"])


# --------------------------------------------------------------------------- PCA: fixed vs refitted axes

def test_elongated_cloud_has_exactly_the_asked_covariance():
    cloud = primer.elongated_cloud(12, 0.02, seed=3)
    np.testing.assert_allclose(cloud.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.cov(cloud, rowvar=False), [[1.02, 0.0], [0.0, 1.0]], atol=1e-12)
    with pytest.raises(ValueError, match="at least 3"):
        primer.elongated_cloud(2, 0.1)
    with pytest.raises(ValueError, match="elongation"):
        primer.elongated_cloud(10, 0.0)


def test_stretch_moves_points_only_along_its_direction_and_leaves_its_input_alone():
    points = np.array([[1.0, 2.0], [-3.0, 0.5]])
    before = points.copy()
    np.testing.assert_allclose(primer.stretch(points, 0, 0.1), [[1.1, 2.0], [-3.3, 0.5]])
    np.testing.assert_allclose(primer.stretch(points, 90, 0.1), [[1.0, 2.2], [-3.0, 0.55]])
    np.testing.assert_array_equal(points, before)


def test_refitting_fakes_movement_that_fixed_axes_do_not_show():
    cloud = primer.elongated_cloud(12, 0.02)
    steps = primer.refit_artefact(cloud, [0, 90], amount=0.05)
    np.testing.assert_allclose(steps["fixed"], steps["true"], atol=1e-9)  # 2-D: the fixed view is exact
    assert steps["refit"][0] == pytest.approx(steps["true"][0], abs=1e-9)  # stretching along PC1 keeps the axes
    assert steps["refit"][1] > 10 * steps["true"][1]  # y becomes the longer axis: the axes swap
    wide = primer.refit_artefact(primer.elongated_cloud(12, 0.5), np.arange(0, 181, 15), amount=0.05)
    narrow = primer.refit_artefact(cloud, np.arange(0, 181, 15), amount=0.05)
    assert wide["refit"].max() < narrow["refit"].max() / 5


def test_refit_projection_and_artefact_frames():
    states = np.stack([primer.elongated_cloud(6, 0.3), primer.elongated_cloud(6, 0.3, seed=4)])
    coords = primer.refit_projection(states)
    assert coords.shape == (2, 6, 2)
    np.testing.assert_allclose(np.linalg.norm(coords[1], axis=1), np.linalg.norm(states[1], axis=1))  # centred cloud
    frames = charts.artefact_frames(states[0], primer.refit_artefact(states[0], [0, 45], 0.05), 0.05)
    assert len(frames["points"]) == 2 * 2 * 6 and len(frames["steps"]) == 2 * 2
    assert set(frames["points"]["view"]) == set(charts.VIEWS.values())


# --------------------------------------------------------------------------- anisotropy and centering

def test_partial_centering_interpolates_and_does_not_mutate():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    before = x.copy()
    np.testing.assert_array_equal(primer.partly_centred(x, 0.0), x)
    np.testing.assert_allclose(primer.partly_centred(x, 1.0), [[-1.0, -1.0], [1.0, 1.0]])
    np.testing.assert_allclose(primer.partly_centred(x, 0.5), [[0.0, 0.5], [2.0, 2.5]])  # mean (2, 3)
    np.testing.assert_array_equal(x, before)


def test_centering_curve_ends_match_the_anisotropy_module():
    cone = primer.toy_cone(20, 3.0)
    curve = primer.centering_curve(cone, [0.0, 1.0])
    assert curve[0] == pytest.approx(anisotropy.anisotropy(cone))
    assert curve[1] == pytest.approx(anisotropy.anisotropy(cone - cone.mean(axis=0)))
    assert curve[0] > 0.8 > abs(curve[1])
    assert anisotropy.anisotropy(primer.toy_cone(20, 0.0)) < curve[0]
    pools = np.stack([cone, 2 * cone])
    np.testing.assert_allclose(primer.centred_anisotropy(pools, 1.0), [curve[1], curve[1]])
    frames = charts.centering_frames(cone, {"toy": curve}, [0.0, 1.0])
    assert len(frames["points"]) == 2 * 20 and len(frames["curves"]) == 2


def test_depth_grid_marks_exactly_one_nearest_depth_per_model_and_slider_value():
    grid = charts.depth_grid({"six": 6, "twenty-four": 24}, [0.0, 0.5, 1.0])
    assert len(grid) == 3 * (7 + 25)
    nearest = grid[grid["nearest"]]
    assert len(nearest) == 3 * 2
    assert set(nearest.query("r == 0.5")["depth"]) == {3, 12}


def test_sentence_pair_rule():
    assert parameters.sentence_pair("pair", None) is None
    assert parameters.sentence_pair("pair", ("a b", "c d")) == ["a b", "c d"]
    for bad in (["only one"], ["same", "same"], ["a", ""], "a, b", ["a", 3]):
        with pytest.raises(ParameterError, match="parameter 'pair' expects"):
            parameters.sentence_pair("pair", bad)


# --------------------------------------------------------------------------- the page's numbers

def record(*stacks):
    """An ``Activations`` of hand-made texts: each stack [L + 1, T, D] is [CLS], T − 2 words, [SEP]."""
    lengths = [stack.shape[1] for stack in stacks]
    special = np.concatenate([[True] + [False] * (n - 2) + [True] for n in lengths])
    word_ids = np.concatenate([[-1, *range(n - 2), -1] for n in lengths])
    return Activations(texts=[f"text {i}" for i in range(len(stacks))], hidden=np.concatenate(stacks, axis=1),
                       offsets=np.concatenate([[0], np.cumsum(lengths)]), input_ids=np.zeros(sum(lengths), np.int64),
                       tokens=["t"] * sum(lengths), special_mask=special, word_mask=~special, word_ids=word_ids)


def turning_text(scale: float) -> np.ndarray:
    """[3, 4, 2]: [CLS] and [SEP] at (1, 1), and two word tokens of lengths scale and 2 · scale
    along x at depth 0, at 45° at depth 1 and along y at depth 2 (cosine with depth 0: 1, 1/√2, 0)."""
    turn = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    words = scale * np.array([1.0, 2.0])[None, :, None] * turn[:, None, :]
    ends = np.ones((3, 1, 2))
    return np.concatenate([ends, words, ends], axis=1)


CONE_POOLS = np.random.default_rng(1).normal(size=(3, 6, 2)) + np.array([0.0, 5.0, 1.0])[:, None, None]
"""Corpus mean pools [3, 6, 2] whose depth 1 sits far from the origin: the most anisotropic depth."""


@pytest.fixture(scope="module")
def measured():
    reference = record(turning_text(1.0), turning_text(3.0))
    pair = record(turning_text(1.0), turning_text(1.0))  # two equal texts
    return primer.measure(reference, ["a", "b"], pair, CONE_POOLS, seed=2, centering=1.0, toy_offset=3.0,
                          toy_elongation=0.02, toy_stretch=0.05)


def test_measure_has_the_documented_schema(measured):
    assert set(measured) == {
        "token_cosine_to_depth0", "relative_depth", "toy_cosine", "reference_pair_cosine", "toy_pooling",
        "pooling_cosine", "toy_pca_steps", "pca_step_fixed", "pca_step_refit", "pca_step_ratio",
        "anisotropy", "anisotropy_centred", "centering_curve"}
    assert set(measured["centering_curve"]) == {"alpha", "toy", "model_peak_depth", "model_last_depth"}
    np.testing.assert_array_equal(measured["centering_curve"]["alpha"], primer.UNIT_STEPS)


def test_measure_on_hand_made_texts(measured):
    np.testing.assert_allclose(measured["token_cosine_to_depth0"], [1.0, 1 / np.sqrt(2), 0.0], atol=1e-12)
    np.testing.assert_allclose(measured["relative_depth"], [0.0, 0.5, 1.0])
    assert (measured["toy_cosine"][0.0], measured["toy_cosine"][60.0], measured["toy_cosine"][90.0]) == (1.0, 0.5, 0.0)
    # depth 0: text a's tokens (1, 1), (1, 0), (2, 0), (1, 1) average (5/4, 1/2); text b's (11/4, 1/2)
    assert list(measured["reference_pair_cosine"]) == ["a · b"]
    assert measured["reference_pair_cosine"]["a · b"][0] == pytest.approx(geometry.cosine([5 / 4, 1 / 2],
                                                                                          [11 / 4, 1 / 2]))
    for mode in primer.SIMILARITY_MODES:
        np.testing.assert_allclose(measured["pooling_cosine"][mode], 1.0)  # a text against itself
    assert measured["toy_pooling"] == pytest.approx(primer.toy_similarities())
    fixed, refit = measured["pca_step_fixed"], measured["pca_step_refit"]
    assert len(fixed) == len(refit) == 2
    assert measured["pca_step_ratio"] == pytest.approx(refit.mean() / fixed.mean())
    toy = measured["toy_pca_steps"]
    np.testing.assert_allclose(toy["fixed"], toy["true"], atol=1e-9)  # 2-D: fixed axes see the true move


def test_measure_centres_each_depth_and_finds_the_cone(measured):
    aniso, curve = measured["anisotropy"], measured["centering_curve"]
    assert int(np.argmax(aniso)) == 1
    assert curve["model_peak_depth"][0] == pytest.approx(aniso[1])
    assert curve["model_last_depth"][0] == pytest.approx(aniso[-1])
    np.testing.assert_allclose(measured["anisotropy_centred"],
                               [anisotropy.anisotropy(p - p.mean(axis=0)) for p in CONE_POOLS])
    assert curve["model_last_depth"][-1] == pytest.approx(measured["anisotropy_centred"][-1])  # centering = 1
    assert curve["toy"][0] == pytest.approx(anisotropy.anisotropy(primer.toy_cone(primer.CONE_POINTS, 3.0, seed=2)))


def test_exercise_answers_follow_their_definitions(measured):
    metrics = {**measured, "pooling_cosine": {"mean": np.array([1.0, 0.9]), "cls": np.array([1.0, 0.5]),
                                              "maxsim": np.array([1.0, 0.7])}}
    easy = record(turning_text(1.0), turning_text(1.0))  # similarity 1 every way
    ex = primer.exercise_answers(metrics, easy, CONE_POOLS, seed=2, toy_stretch=0.05)
    assert ex["easy_pair"] == pytest.approx({"mean": 1.0, "cls": 1.0, "maxsim": 1.0})
    assert ex["hard_minus_easy"] == pytest.approx({"mean": -0.1, "cls": -0.5, "maxsim": -0.3})
    assert ex["widest_gap"] == "mean"
    raw, full = measured["centering_curve"]["model_last_depth"][[0, -1]]
    half = anisotropy.anisotropy(CONE_POOLS[-1] - 0.5 * CONE_POOLS[-1].mean(axis=0))
    assert ex["centering_0.5_last_depth"] == pytest.approx(half)
    assert ex["centering_0.5_share_of_fall"] == pytest.approx((raw - half) / (raw - full))
    assert ex["toy_offset_0"] == pytest.approx(anisotropy.anisotropy(primer.toy_cone(primer.CONE_POINTS, 0.0, seed=2)))
    assert ex["toy_elongation_0.5_refit_max"] > ex["toy_elongation_0.5_true_max"] > 0


# --------------------------------------------------------------------------- charts

def _params(spec):
    found = list(spec.get("params", []))
    for key in ("layer", "hconcat", "vconcat"):
        for sub in spec.get(key, []):
            found += _params(sub)
    return found


@pytest.mark.parametrize("name", ["angle", "artefact", "centering", "depth"])
def test_every_interactive_chart_has_one_bound_slider(name):
    cloud, cone, alphas = primer.elongated_cloud(8, 0.02), primer.toy_cone(10, 3.0), [0.0, 0.5, 1.0]
    chart = {
        "angle": lambda: charts.angle_chart(primer.angle_frame([0, 45, 90], [1.0, 2.0])),
        "artefact": lambda: charts.artefact_chart(
            charts.artefact_frames(cloud, primer.refit_artefact(cloud, [0, 45, 90], 0.05), 0.05)),
        "centering": lambda: charts.centering_chart(
            charts.centering_frames(cone, {"toy": primer.centering_curve(cone, alphas)}, alphas)),
        "depth": lambda: charts.depth_chart(charts.depth_grid({"a": 4, "b": 8}, [0.0, 0.5, 1.0])),
    }[name]()
    bound = [p for p in _params(chart.to_dict()) if "bind" in p]
    assert bound and all(p["bind"]["input"] == "range" for p in bound)
    assert len(bound) == (2 if name == "angle" else 1)


def test_pair_scatter_is_a_valid_chart_with_its_labels_towards_the_middle():
    spec = charts.pair_scatter(charts.toy_pair_frame()).to_dict()
    assert len(spec["layer"]) == 6  # rays, points, and labels by side (left/right of 0) and by kind
    labels = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert sorted((layer["mark"]["align"], layer["mark"]["dx"]) for layer in labels) == [
        ("left", 9), ("left", 9), ("right", -9), ("right", -9)]


# --------------------------------------------------------------------------- the page end to end

@pytest.fixture(scope="module")
def results(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())


@pytest.mark.slow
def test_primer_results_have_one_entry_per_depth(results):
    L, m = results["model"]["layers"], results["metrics"]
    for key in ("token_cosine_to_depth0", "relative_depth", "anisotropy", "anisotropy_centred"):
        assert len(m[key]) == L + 1, key
    for key in ("pca_step_fixed", "pca_step_refit"):
        assert len(m[key]) == L, key
    for series in [*m["pooling_cosine"].values(), *m["reference_pair_cosine"].values()]:
        assert len(series) == L + 1
    assert m["token_cosine_to_depth0"][0] == pytest.approx(1.0)
    assert len(results["inputs"]["corpus"]) == results["params"]["n_texts"] == 40


@pytest.mark.slow
def test_primer_results_are_consistent(results):
    m, p = results["metrics"], results["params"]
    # the default pair is the hard pair, whose mean-pool cosine the reference table also holds
    np.testing.assert_allclose(m["pooling_cosine"]["mean"], m["reference_pair_cosine"]["surged · plunged"], atol=1e-6)
    assert m["pca_step_ratio"] == pytest.approx(np.mean(m["pca_step_refit"]) / np.mean(m["pca_step_fixed"]))
    assert m["toy_pooling"] == pytest.approx(primer.toy_similarities())
    curve = m["centering_curve"]
    assert curve["toy"][0] == pytest.approx(anisotropy.anisotropy(primer.toy_cone(20, p["toy_offset"], seed=p["seed"])))
    assert curve["model_last_depth"][0] == pytest.approx(m["anisotropy"][-1])
    assert curve["model_last_depth"][-1] == pytest.approx(m["anisotropy_centred"][-1])  # centering = 1
    toy = m["toy_pca_steps"]
    np.testing.assert_allclose(toy["fixed"], toy["true"], atol=1e-9)


@pytest.mark.slow
def test_primer_exercise_answers_are_computed(results):
    ex, m = results["metrics"]["exercises"], results["metrics"]
    assert ex["toy_offset_0"] == pytest.approx(anisotropy.anisotropy(primer.toy_cone(20, 0.0,
                                                                                     seed=results["params"]["seed"])))
    assert set(ex["easy_pair"]) == set(primer.SIMILARITY_MODES)
    for mode, gap in ex["hard_minus_easy"].items():
        assert gap == pytest.approx(m["pooling_cosine"][mode][-1] - ex["easy_pair"][mode])
    assert ex["centering_0.5_last_depth"] == pytest.approx(m["centering_curve"]["model_last_depth"][10])  # α = 0.5
    assert ex["toy_elongation_0.5_refit_max"] < max(m["toy_pca_steps"]["refit"])
