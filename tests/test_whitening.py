"""The article's isotropy score, its warning rule, cone arithmetic and whitening, on known arrays."""

import numpy as np
import pytest

from embedding_geometry.chapters.ch05_without_tears import whitening
from embedding_geometry.studies import isotropy


def test_identical_vectors_score_zero_and_warn():
    x = np.tile([[3.0, 4.0, 0.0]], (5, 1))
    parts = isotropy.isotropy_components(x)
    assert parts["mean_cos"] == pytest.approx(1.0) and parts["var_cos"] == pytest.approx(0.0)
    assert isotropy.isotropy_score(x) == pytest.approx(0.0)
    check = isotropy.anisotropy_warning(x)
    assert check["avg_sim"] == pytest.approx(1.0) and check["warns"] is True


def test_orthonormal_vectors_score_one_half_not_one():
    x = np.eye(6)
    parts = isotropy.isotropy_components(x)
    assert parts["mean_iso"] == pytest.approx(1.0) and parts["var_iso"] == pytest.approx(0.0)
    assert isotropy.isotropy_score(x) == pytest.approx(0.5)
    assert isotropy.anisotropy_warning(x)["warns"] is False


def test_isotropic_random_directions_score_about_one():
    x = isotropy.isotropic_sample(2000, 20, seed=1)
    parts = isotropy.isotropy_components(x)
    assert abs(parts["mean_cos"]) < 0.01
    assert parts["var_ratio"] == pytest.approx(1.0, abs=0.05)
    assert isotropy.isotropy_score(x) > 0.97


def test_score_by_hand_on_three_vectors():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    a = 1 / np.sqrt(2)  # cosines: 0 (twice), a (four times) over ordered pairs
    mean = 4 * a / 6
    var = 4 * a**2 / 6 - mean**2
    expected = ((1 - mean) + min(var * 2, 1)) / 2
    assert isotropy.isotropy_score(x) == pytest.approx(expected)
    assert sorted(isotropy.offdiagonal_cosines(x)) == pytest.approx([0, 0, a, a, a, a])


def test_avg_sim_includes_the_diagonal():
    x = np.random.default_rng(0).standard_normal((7, 4))
    mean = isotropy.offdiagonal_cosines(x).mean()
    n = len(x)
    assert isotropy.avg_sim(x) == pytest.approx((n + n * (n - 1) * mean) / n**2)
    check = isotropy.anisotropy_warning(x, threshold=0.6)
    assert check["mean_offdiagonal"] == pytest.approx(mean)
    assert check["warns"] is bool(check["avg_sim"] > 0.6)


def test_zero_vector_and_too_few_vectors_are_clear_errors():
    with pytest.raises(ValueError, match="zero vector"):
        isotropy.isotropy_score(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="n ≥ 2"):
        isotropy.isotropy_score(np.ones((1, 3)))


def test_reference_scores():
    refs = isotropy.reference_scores(d=8, n=50)
    assert refs["identical"] == pytest.approx(0.0)
    assert refs["orthonormal"] == pytest.approx(0.5)
    assert refs["isotropic"] > 0.9


def test_cone_identity_is_exact():
    x = np.random.default_rng(2).standard_normal((40, 6)) + 1.5
    cone = isotropy.cone_concentration(x)
    assert cone["mean_pairwise_cosine"] == pytest.approx(cone["identity"], abs=1e-12)
    assert cone["mean_pairwise_cosine"] == pytest.approx(isotropy.offdiagonal_cosines(x).mean())
    assert cone["kappa_squared"] == pytest.approx(cone["kappa"] ** 2)


def test_vectors_on_a_cone_boundary_average_cos_squared_not_cos():
    alpha = np.radians(60)
    x = isotropy.cap_boundary_sample(600, 80, alpha, seed=0)
    assert np.allclose(x[:, 0], np.cos(alpha)) and np.allclose(np.linalg.norm(x, axis=1), 1)
    mean = isotropy.offdiagonal_cosines(x).mean()
    assert mean == pytest.approx(np.cos(alpha) ** 2, abs=0.01)
    assert abs(mean - np.cos(alpha)) > 0.2


def test_whitening_makes_the_fit_split_covariance_the_identity():
    rng = np.random.default_rng(3)
    rotation, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    x = rng.standard_normal((2000, 5)) @ np.diag([1.0, 2.0, 3.0, 4.0, 5.0]) @ rotation + 4.0
    before = x.copy()
    transform = whitening.fit(x, "whiten")
    white = transform.apply(x)
    assert np.allclose(x, before)  # inputs untouched
    assert np.allclose(white.mean(axis=0), 0, atol=1e-10)
    assert np.allclose(whitening.covariance(white), np.eye(5), atol=1e-5)
    u = np.linalg.eigh(whitening.covariance(x))[1]  # exactly U diag(λ / (λ + ε)) Uᵀ
    shrink = transform.eigenvalues / (transform.eigenvalues + whitening.EPS)
    assert np.allclose(whitening.covariance(white), u @ np.diag(shrink) @ u.T, atol=1e-10)
    assert np.allclose(transform.matrix, transform.matrix.T)


def test_transforms_fitted_on_one_split_apply_to_another():
    rng = np.random.default_rng(4)
    fit_split, other = rng.standard_normal((100, 3)) + 2, rng.standard_normal((10, 3))
    centre = whitening.fit(fit_split, "center")
    assert np.allclose(centre.apply(other), other - fit_split.mean(axis=0))
    assert np.allclose(centre.apply(fit_split).mean(axis=0), 0)
    white = whitening.fit(fit_split, "whiten")
    assert np.allclose(white.apply(other), (other - fit_split.mean(axis=0)) @ white.matrix)
    assert np.allclose(whitening.fit(fit_split, "none").apply(other), other)
    with pytest.raises(ValueError, match="width 3"):
        white.apply(np.ones((2, 4)))
    with pytest.raises(ValueError, match="method must be one of"):
        whitening.fit(fit_split, "zca")


def test_a_fit_on_fewer_vectors_than_dimensions_has_zero_eigenvalues():
    transform = whitening.fit(np.random.default_rng(5).standard_normal((4, 6)), "whiten")
    assert np.sum(transform.eigenvalues < 1e-10) >= 3


def test_split_is_seeded_disjoint_and_complete():
    fit_rows, held = whitening.split(20, 0.7, seed=1)
    assert len(fit_rows) == 14 and len(held) == 6
    assert sorted(np.concatenate([fit_rows, held]).tolist()) == list(range(20))
    assert np.array_equal(fit_rows, whitening.split(20, 0.7, seed=1)[0])
    assert list(fit_rows) == sorted(fit_rows)
    with pytest.raises(ValueError, match="fit fraction"):
        whitening.split(5, 0.95)


def test_a_borrowed_mean_removes_less_than_the_domains_own():
    rng = np.random.default_rng(6)
    labels = np.repeat(["a", "b"], 60)  # two labels: each is one domain
    offsets = {"a": [5, 0, 0], "b": [0, 0, 5]}
    x = np.stack([rng.standard_normal(3) + offsets[label] for label in labels])
    fit_rows, held = whitening.split(len(x), 0.5, seed=0)
    result, _ = whitening.domain_transfer(x, labels, fit_rows, held, seed=0)
    assert set(result["domain_a"]) | set(result["domain_b"]) == set(labels)
    for method in ("center", "whiten"):
        assert result[method]["own"] < result[method]["borrowed"]
        assert result[method]["own"] < result[method]["raw"]


# --------------------------------------------------------------------------- the chapter's metrics


def u_statistic(kernel):
    """The mean of K_ij over pairs i ≠ j: what a claim's samples rebuild from a pairwise kernel."""
    kernel = np.asarray(kernel, dtype=float)
    n = len(kernel)
    return (kernel.sum() - np.trace(kernel)) / (n * (n - 1))


def test_model_row_joins_the_score_the_warning_retrieval_and_the_speed():
    docs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    row = isotropy.model_row(docs, docs, docs[:2], [0, 1], texts_per_second=12.5)
    assert row["mean_cos"] == pytest.approx((0 + 2 / np.sqrt(2)) * 2 / 6)
    assert row["mean_offdiagonal"] == pytest.approx(row["mean_cos"])
    assert row["recall_at_10"] == 1.0 and row["ndcg_at_10"] == pytest.approx(1.0) and row["texts_per_second"] == 12.5
    assert row["avg_sim"] == pytest.approx((3 + 4 / np.sqrt(2)) / 9) and row["warns"] is True  # 0.647 > 0.6
    assert set(row) >= {"score", "var_ratio", "threshold", "kernels"}
    control = isotropy.model_row(docs)  # a control: no search, no speed
    assert control["recall_at_10"] is None and control["ndcg_at_10"] is None and control["texts_per_second"] is None


def test_pair_kernels_are_u_statistics_of_the_mean_cosine_avg_sim_and_score():
    x = np.random.default_rng(1).standard_normal((30, 4)) - 0.5  # mean cosine > 0
    kernels, parts = isotropy.pair_kernels(x), isotropy.isotropy_components(x)
    assert u_statistic(kernels["mean_cos"]) == pytest.approx(parts["mean_cos"])
    assert u_statistic(kernels["avg_sim"]) == pytest.approx(isotropy.avg_sim(x))  # its diagonal of ones included
    assert u_statistic(kernels["score"]) == pytest.approx(parts["score"])
    flipped = np.array([[1.0, 0.0], [-1.0, 0.1], [-1.0, -0.1]])  # mean cosine < 0
    assert u_statistic(isotropy.pair_kernels(flipped)["score"]) == pytest.approx(isotropy.isotropy_score(flipped))


def test_a_pairwise_kernel_resampled_has_the_standard_error_of_its_pairs_not_of_row_means():
    """The U-statistic's bootstrap spread is about twice that of row means treated as independent:
    each sentence enters n − 1 pairs (Hoeffding: Var U ≈ 4 σ₁² / n)."""
    from embedding_geometry.book.claims import samples

    x = np.random.default_rng(2).standard_normal((60, 6)) + 0.3
    kernel = isotropy.pair_kernels(x)["mean_cos"]
    rows = (kernel.sum(axis=1) - 1) / (len(x) - 1)
    statistic = samples.Units(kernel, pairwise=True)
    pairwise = samples.bootstrap(statistic, lambda x: x, 4000, np.random.default_rng(0)).std()
    as_rows = rows.std(ddof=1) / np.sqrt(len(rows))
    assert 1.6 < pairwise / as_rows < 2.4


def test_stored_kernels_round_to_seven_digits_of_their_scale():
    kernel = np.array([[0.0, 0.123456789], [0.123456789, 1.0e-9]])
    assert isotropy.stored(kernel).tolist() == [[0.0, 0.1234568], [0.1234568, 0.0]]
    assert isotropy.stored(np.zeros((2, 2))).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert isotropy.stored(kernel * 1000)[0, 1] == pytest.approx(123.4568)


def test_pair_sample_is_seeded_sorted_and_all_when_none():
    a, b = isotropy.pair_sample(50, 10, seed=3), isotropy.pair_sample(50, 10, seed=3)
    assert a.tolist() == b.tolist() == sorted(set(a.tolist())) and len(a) == 10
    assert isotropy.pair_sample(5, None).tolist() == isotropy.pair_sample(5, 9).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="at least 2"):
        isotropy.pair_sample(50, 1)


def test_reference_study_scores_sets_of_known_geometry():
    study = isotropy.reference_study(d=8, n=50, seed=0)
    assert study["isotropy_reference"] == isotropy.reference_scores(8, 50, 0)
    assert study["isotropy_reference"]["orthonormal"] == pytest.approx(0.5)
    assert abs(study["isotropic_mean_cos"]) < 0.05  # random directions: mean cosine about 0


def test_isotropy_study_picks_the_model_its_controls_and_the_articles_rows():
    docs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    article = [{"name": "Main", "model": "main", "score": 0.67}, {"name": "Absent", "model": "absent", "score": 0.3}]
    refs = {"identical": 0.0, "orthonormal": 0.5, "isotropic": 1.0}
    measured = {
        "main": isotropy.model_row(docs, docs, docs[:2], [0, 1]),
        "main [random-init control, seed 0]": isotropy.model_row(docs + 5),
        "main [random-init control, seed 1]": isotropy.model_row(docs + 3),
        "other": isotropy.model_row(docs * [1, 2], docs, docs[:2], [0, 1]),
    }
    found = isotropy.isotropy_study(measured, "main", article, refs)
    assert found["isotropy_score"] == measured["main"]["score"] and "kernels" not in found["isotropy"]
    assert found["isotropy_article_models"] == {"Main": measured["main"]["score"], "Absent": None}
    controls = [measured[f"main [random-init control, seed {s}]"] for s in (0, 1)]
    assert found["isotropy_control"]["avg_sim"] == pytest.approx(np.mean([c["avg_sim"] for c in controls]))
    assert found["isotropy_control"]["seeds"] == 2 and found["isotropy_reference"] == refs
    units = found["per_unit"]
    assert set(units) == {
        "isotropy.mean_cos",
        "isotropy.avg_sim",
        "isotropy_control.mean_cos",
        "isotropy_control.avg_sim",
        "isotropy_article_models.Main",
    }
    assert np.shape(units["isotropy_control.mean_cos"]) == (2, 4, 4)
    assert u_statistic(units["isotropy.avg_sim"]) == pytest.approx(found["isotropy"]["avg_sim"])
    assert u_statistic(units["isotropy_article_models.Main"]) == pytest.approx(found["isotropy_article_models"]["Main"])
    other = isotropy.isotropy_study(measured, "other", article, refs)  # the same rows, read for another model
    assert other["isotropy"] == found["isotropy_by_model"]["other"] and other["isotropy_control"]["mean_cos"] is None


def test_cone_study_of_vectors_on_a_cone():
    x = isotropy.cap_boundary_sample(300, 20, np.pi / 3, seed=1)
    rows = {"m": isotropy.model_row(x), "m [random-init control, seed 0]": isotropy.model_row(x + 3)}
    found = isotropy.cone_study(x, rows, "m", seed=0)
    cone, per_unit = found["cone"], found["per_unit"]
    assert cone["kappa"] == pytest.approx(0.5, abs=0.02)
    assert cone["simulated"]["alpha_degrees"] == pytest.approx(np.degrees(np.arccos(cone["kappa"])))
    assert cone["simulated"]["mean_pairwise_cosine"] == pytest.approx(cone["kappa"] ** 2, abs=0.01)
    assert cone["article_abs_error"] == pytest.approx(abs(cone["mean_pairwise_cosine"] - cone["kappa"]))
    assert cone["article_error"] == pytest.approx(cone["mean_pairwise_cosine"] - cone["kappa"])  # κ² − κ < 0
    control = rows["m [random-init control, seed 0]"]["mean_cos"]
    assert cone["trained_minus_control"] == pytest.approx(cone["mean_pairwise_cosine"] - control)
    kernel = isotropy.pair_kernels(x)["mean_cos"]
    assert u_statistic(kernel) - per_unit["cone.to_axis"].mean() == pytest.approx(cone["article_error"])
    alone = isotropy.cone_study(x, {"m": rows["m"]}, "m")
    assert alone["cone"]["trained_minus_control"] is None


def test_whitening_only_the_top_directions():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((500, 4)) @ np.diag([1.0, 2.0, 3.0, 4.0])
    top = whitening.fit(x, "whiten", keep=2)
    white = top.apply(x)
    u = np.linalg.eigh(whitening.covariance(x))[1]
    assert np.allclose(white @ u[:, :2], 0, atol=1e-9)  # the two weakest directions are dropped
    assert np.allclose(np.var(white @ u[:, 2:], axis=0, ddof=1), 1, atol=1e-4)  # the two strongest whitened
    assert np.allclose(whitening.fit(x, "whiten", keep=4).matrix, whitening.fit(x, "whiten").matrix)


def test_null_space_share_of_a_fit_split_with_a_dead_dimension():
    rng = np.random.default_rng(8)
    fit_split = np.c_[rng.standard_normal((50, 3)), np.zeros(50)]  # the 4th dimension never varies
    held = np.c_[rng.standard_normal((10, 3)), np.full(10, 0.01)]
    white = whitening.fit(fit_split, "whiten").apply(held)  # 0.01 · 1000 = 10 along the dead dimension
    expected = np.sum(white[:, 3] ** 2) / np.sum(white**2)
    assert whitening.null_space_share(fit_split, white) == pytest.approx(expected) and expected > 0.5
    assert whitening.null_space_share(fit_split, white[:, [0, 1, 2]] @ np.eye(3, 4)) == pytest.approx(0.0, abs=1e-12)


def test_held_out_queries_keep_only_relevant_held_out_sentences():
    kept, relevant = whitening.held_out_queries([[0, 3], [1], [4, 2]], np.array([2, 3, 4]))
    assert kept.tolist() == [0, 2] and relevant == [[1], [2, 0]]
    with pytest.raises(ValueError, match="no query"):
        whitening.held_out_queries([[0], [1]], np.array([2, 3]))


def test_held_out_study_judges_only_held_out_documents():
    rng = np.random.default_rng(9)
    topics = np.repeat(np.arange(4), 30)
    centres = rng.standard_normal((4, 12)) * 3
    x = centres[topics] + rng.standard_normal((120, 12)) + np.r_[8.0, np.zeros(11)]  # four clusters in one cone
    queries = centres + np.r_[8.0, np.zeros(11)]  # each query is its topic's centre
    relevant = [np.flatnonzero(topics == t).tolist() for t in range(4)]
    fit_rows, held_rows = whitening.split(120, 0.7, seed=0)
    found = whitening.held_out_study(x, queries, relevant, topics.astype(str), fit_rows, held_rows, seed=0)
    study, per_unit = found["whitening_fair"], found["per_unit"]
    assert (study["n_fit"], study["n_held_out"], study["dims"], study["n_queries"]) == (84, 36, 12, 4)
    assert study["fit_per_dim"] == pytest.approx(7.0) and study["article_fit_size"] == 10_000
    assert set(study["sensitivity"]) == set(whitening.VARIANTS)
    assert study["sensitivity"]["whitened"] == pytest.approx(study["ndcg_at_10"]["whiten"])
    assert study["sensitivity"]["raw"] == pytest.approx(study["ndcg_at_10"]["none"])
    for name, change in study["sensitivity_minus_raw"].items():
        assert change == pytest.approx(study["sensitivity"][name] - study["sensitivity"]["raw"])
    held = study["held_out"]
    assert held["none"]["anisotropy"] > 0.3 and abs(held["center"]["anisotropy"]) < held["none"]["anisotropy"] / 5
    for key in ("retrieval_change", "centering_change"):
        assert per_unit[f"whitening_fair.{key}"].mean() == pytest.approx(study[key]), key
    for key in ("anisotropy_reduction", "borrowed_minus_own"):  # pairwise: kernels over held-out sentences
        assert u_statistic(per_unit[f"whitening_fair.{key}"]) == pytest.approx(study[key], abs=1e-7), key
    assert np.shape(per_unit["whitening_fair.anisotropy_reduction"]) == (36, 36)
    assert len(per_unit["whitening_fair.retrieval_change"]) == 4
    exercise = whitening.held_out_study(
        x, queries, relevant, topics.astype(str), fit_rows, held_rows, seed=0, key="exercise", samples=False
    )
    assert set(exercise) == {"exercise"} and exercise["exercise"]["retrieval_change"] == study["retrieval_change"]
    # the held-out study ranks the held-out split only: the same transforms, fitted on unit rows
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    kept, pool = whitening.held_out_queries(relevant, held_rows)
    white = whitening.fit(unit[fit_rows], "whiten")
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    expected = whitening.retrieval.ndcg_at_k(
        whitening.cosine_matrix(white.apply(q[kept]), white.apply(unit[held_rows])), pool
    )
    assert study["ndcg_at_10"]["whiten"] == pytest.approx(expected)


def test_the_exercises_answers_are_held_out_studies_on_their_own_splits():
    rng = np.random.default_rng(3)
    topics = np.repeat(np.arange(4), 30)
    x = rng.standard_normal((4, 12))[topics] * 3 + rng.standard_normal((120, 12)) + np.r_[8.0, np.zeros(11)]
    queries, relevant = x[::30] + 0.1, [np.flatnonzero(topics == t).tolist() for t in range(4)]
    rows, answers = whitening.exercise_answers(x, queries, relevant, topics.astype(str), fit_fraction=0.7, seed=5)
    assert set(answers) == {"exercise_fit_fraction", "exercise_seed_1"}
    for key, name, fraction, draw in (("exercise_fit_fraction", "exercise_fit_rows", 0.2, 5),
                                      ("exercise_seed_1", "exercise_seed_1_fit_rows", 0.7, 1)):
        fit_rows, held_rows = whitening.split(120, fraction, draw)
        np.testing.assert_array_equal(rows[name], fit_rows)
        alone = whitening.held_out_study(x, queries, relevant, topics.astype(str), fit_rows, held_rows, draw,
                                         key=key, samples=False)
        assert answers[key] == alone[key]
    assert answers["exercise_fit_fraction"]["n_fit"] == 24 and answers["exercise_seed_1"]["n_fit"] == 84


def test_sensitivity_table_shows_each_variant_and_its_change_from_raw():
    from embedding_geometry.chapters.ch05_without_tears import charts

    held_out = {"sensitivity": {"raw": 0.9, "whitened": 0.6}, "sensitivity_minus_raw": {"raw": 0.0, "whitened": -0.3}}
    table = charts.sensitivity_table(held_out).frame
    assert table["nDCG@10"].tolist() == ["0.9", "0.6"] and table["minus raw"].tolist() == ["0", "-0.3"]
    assert table["variant"].tolist() == [charts.VARIANT_NAMES["raw"], charts.VARIANT_NAMES["whitened"]]


def test_split_shortfall_names_what_a_split_leaves_too_small():
    """Chapter 5's need on fit_fraction (chapters/ch05_without_tears/rules.py): each side, a judged query
    with a relevant held-out row, and 2 rows to fit in each domain and to hold out in domain B."""
    labels = ["a"] * 10 + ["b"] * 10
    relevant = [[0, 1, 2, 10, 11, 12]]
    assert whitening.split_shortfall(relevant, labels, 0.5, seed=0) is None
    one_side = whitening.split_shortfall(relevant, labels, 0.05, seed=0)
    assert one_side == "it leaves 1 of 20 sentences on one side (needs 2)"
    fit_rows, held_rows = whitening.split(20, 0.5, seed=0)
    assert (
        whitening.split_shortfall([[int(r) for r in fit_rows]], labels, 0.5, seed=0)
        == "no judged query has a relevant sentence in the held-out split"
    )
    lopsided = ["a"] * 18 + ["b"] * 2  # domain B is one of the two labels; it holds 2 sentences, split over both sides
    found = {whitening.split_shortfall([list(range(20))], lopsided, 0.5, seed) for seed in range(20)}
    assert any(f and f.startswith("the domain transfer has ") and f.endswith("(needs 2)") for f in found), found
