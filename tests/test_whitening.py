"""The article's isotropy score, its warning rule, cone arithmetic and whitening, on known arrays."""

import numpy as np
import pytest

from embedding_geometry.studies import isotropy, whitening


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
    var = 4 * a ** 2 / 6 - mean ** 2
    expected = ((1 - mean) + min(var * 2, 1)) / 2
    assert isotropy.isotropy_score(x) == pytest.approx(expected)
    assert sorted(isotropy.offdiagonal_cosines(x)) == pytest.approx([0, 0, a, a, a, a])


def test_avg_sim_includes_the_diagonal():
    x = np.random.default_rng(0).standard_normal((7, 4))
    mean = isotropy.offdiagonal_cosines(x).mean()
    n = len(x)
    assert isotropy.avg_sim(x) == pytest.approx((n + n * (n - 1) * mean) / n ** 2)
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
    assert not transform.rank_deficient


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


def test_rank_deficient_fit_is_flagged():
    transform = whitening.fit(np.random.default_rng(5).standard_normal((4, 6)), "whiten")
    assert transform.rank_deficient
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
    result = whitening.domain_transfer(x, labels, fit_rows, held, seed=0)
    assert set(result["domain_a"]) | set(result["domain_b"]) == set(labels)
    for method in ("center", "whiten"):
        assert result[method]["own"] < result[method]["borrowed"]
        assert result[method]["own"] < result[method]["raw"]


# --------------------------------------------------------------------------- the chapter's metrics

def test_model_row_joins_the_score_the_warning_and_retrieval():
    docs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    row = isotropy.model_row(docs, docs[:2], [0, 1])
    assert row["mean_cos"] == pytest.approx((0 + 2 / np.sqrt(2)) * 2 / 6)
    assert row["mean_offdiagonal"] == pytest.approx(row["mean_cos"])
    assert row["recall_at_10"] == 1.0 and row["ndcg_at_10"] == pytest.approx(1.0)
    assert row["avg_sim"] == pytest.approx((3 + 4 / np.sqrt(2)) / 9) and row["warns"] is True  # 0.647 > 0.6
    assert set(row) >= {"score", "var_ratio", "threshold", "per_sentence"}
    per_sentence = row["per_sentence"]
    for key in ("mean_cos", "avg_sim", "score"):
        assert len(per_sentence[key]) == 3 and per_sentence[key].mean() == pytest.approx(row[key])
    c = 1 / np.sqrt(2)  # sentence 0: cosines 0 and c with the others
    assert per_sentence["mean_cos"][0] == pytest.approx(c / 2) and per_sentence["avg_sim"][0] == pytest.approx((1 + c) / 3)


def test_sentence_values_average_to_the_score_with_the_variance_term_held():
    x = np.random.default_rng(1).standard_normal((30, 4)) - 0.5  # mean cosine > 0
    values, parts = isotropy.sentence_values(x), isotropy.isotropy_components(x)
    assert values["score"].mean() == pytest.approx(parts["score"])
    assert values["score"] == pytest.approx((1 - values["mean_cos"] + parts["var_iso"]) / 2)
    flipped = isotropy.sentence_values(np.array([[1.0, 0.0], [-1.0, 0.1], [-1.0, -0.1]]))  # mean cosine < 0
    assert flipped["score"].mean() == pytest.approx(isotropy.isotropy_score(np.array([[1.0, 0.0], [-1.0, 0.1], [-1.0, -0.1]])))


def test_reference_study_gives_the_orthonormal_set_one_half_per_dimension():
    study = isotropy.reference_study(d=8, n=50, seed=0)
    assert study["isotropy_reference"] == isotropy.reference_scores(8, 50, 0)
    assert study["per_unit"]["isotropy_reference.orthonormal"] == pytest.approx([0.5] * 8)
    assert abs(study["isotropic_mean_cos"]) < 0.05  # random directions: mean cosine about 0


def test_isotropy_study_picks_the_main_model_the_control_and_the_articles_rows():
    rows = {"main": {"score": 0.9, "mean_cos": 0.1, "avg_sim": 0.12, "warns": False},
            "main [control]": {"score": 0.52, "mean_cos": 0.95, "avg_sim": 0.95, "warns": True}}
    article = [{"name": "Main", "model": "main", "score": 0.67}, {"name": "Other", "model": "other", "score": 0.3}]
    refs = {"identical": 0.0, "orthonormal": 0.5, "isotropic": 1.0}
    study = isotropy.isotropy_study(rows, "main", "main [control]", article, refs)
    assert study["isotropy_score"] == 0.9 and study["isotropy"] == rows["main"]
    assert study["isotropy_article_models"] == {"Main": 0.9, "Other": None}
    assert study["isotropy_control"] == {"mean_cos": 0.95, "avg_sim": 0.95, "score": 0.52, "warns": True}
    assert study["isotropy_reference"] == refs and study["isotropy_by_model"] == rows and study["per_unit"] == {}
    docs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    measured = {"main": isotropy.model_row(docs, docs[:2], [0, 1]), "main [control]": isotropy.model_row(docs + 5, docs[:2], [0, 1])}
    found = isotropy.isotropy_study(measured, "main", "main [control]", article, refs)
    assert "per_sentence" not in found["isotropy"] and "per_sentence" not in found["isotropy_by_model"]["main [control]"]
    units = found["per_unit"]
    assert set(units) == {"isotropy.mean_cos", "isotropy.avg_sim", "isotropy_score", "isotropy_control.mean_cos",
                          "isotropy_control.avg_sim", "isotropy_article_models.Main"}
    assert units["isotropy_control.avg_sim"].mean() == pytest.approx(found["isotropy_control"]["avg_sim"])
    assert units["isotropy_article_models.Main"].mean() == pytest.approx(found["isotropy_article_models"]["Main"])
    alone = isotropy.isotropy_study({"main": rows["main"]}, "main", None, article, refs)
    assert alone["isotropy_control"] == {"mean_cos": None, "avg_sim": None, "score": None, "warns": None}


def test_cone_study_of_vectors_on_a_cone():
    x = isotropy.cap_boundary_sample(300, 20, np.pi / 3, seed=1)
    found = isotropy.cone_study(x, control_rows=np.full(300, 0.9), seed=0)
    cone, per_unit = found["cone"], found["per_unit"]
    assert cone["kappa"] == pytest.approx(0.5, abs=0.02)
    assert cone["simulated"]["alpha_degrees"] == pytest.approx(np.degrees(np.arccos(cone["kappa"])))
    assert cone["simulated"]["mean_pairwise_cosine"] == pytest.approx(cone["kappa"] ** 2, abs=0.01)
    assert cone["article_abs_error"] == pytest.approx(abs(cone["mean_pairwise_cosine"] - cone["kappa"]))
    assert cone["article_error"] == pytest.approx(cone["mean_pairwise_cosine"] - cone["kappa"])  # κ² − κ < 0
    assert cone["trained_minus_control"] == pytest.approx(cone["mean_pairwise_cosine"] - 0.9)
    assert per_unit["cone.article_error"].mean() == pytest.approx(cone["article_error"])
    assert per_unit["cone.trained_minus_control"].mean() == pytest.approx(cone["trained_minus_control"])
    alone = isotropy.cone_study(x, None)
    assert alone["cone"]["trained_minus_control"] is None and "cone.trained_minus_control" not in alone["per_unit"]


def test_whitening_study_on_a_shifted_cloud():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((80, 5)) + np.array([4.0, 0, 0, 0, 0])  # a narrow cone along e1
    labels = ["a"] * 40 + ["b"] * 40
    fit_rows, held_rows = whitening.split(80, 0.5, seed=0)
    study = whitening.whitening_study(x, x[:4], [0, 1, 2, 3], labels, fit_rows, held_rows, seed=0)
    assert (study["n_fit"], study["n_held_out"], study["dims"], study["zero_eigenvalues"]) == (40, 40, 5, 0)
    held = study["held_out"]
    assert held["none"]["anisotropy"] > 0.7 and abs(held["center"]["anisotropy"]) < 0.1
    assert study["anisotropy_reduction"] == pytest.approx(held["none"]["anisotropy"] - held["whiten"]["anisotropy"])
    assert study["ndcg_at_10"] == {m: r["ndcg_at_10"] for m, r in study["retrieval"].items()}
    assert study["retrieval_change"] == pytest.approx(study["ndcg_at_10"]["whiten"] - study["ndcg_at_10"]["none"])
    assert study["borrowed_minus_own"] == pytest.approx(study["borrowed"]["center"]["borrowed"]
                                                        - study["borrowed"]["center"]["own"])


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
    expected = np.sum(white[:, 3] ** 2) / np.sum(white ** 2)
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
    best = study["best_variant"]
    assert whitening.VARIANTS[best][0] == "whiten"
    assert study["best_minus_raw"] == pytest.approx(max(v for n, v in study["sensitivity_minus_raw"].items()
                                                        if whitening.VARIANTS[n][0] == "whiten"))
    held = study["held_out"]
    assert held["none"]["anisotropy"] > 0.3 and abs(held["center"]["anisotropy"]) < held["none"]["anisotropy"] / 5
    for key in ("anisotropy_reduction", "retrieval_change", "centering_change", "best_minus_raw", "borrowed_minus_own"):
        assert per_unit[f"whitening_fair.{key}"].mean() == pytest.approx(study[key]), key
    assert len(per_unit["whitening_fair.anisotropy_reduction"]) == 36
    assert len(per_unit["whitening_fair.retrieval_change"]) == 4
    # the held-out study ranks the held-out split only: the same transforms, fitted on unit rows
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    kept, pool = whitening.held_out_queries(relevant, held_rows)
    white = whitening.fit(unit[fit_rows], "whiten")
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    expected = whitening.retrieval.ndcg_at_k(whitening.retrieval.cosine_scores(white.apply(q[kept]), white.apply(unit[held_rows])), pool)
    assert study["ndcg_at_10"]["whiten"] == pytest.approx(expected)


def test_sensitivity_table_marks_the_first_evaluations_other_pool():
    from embedding_geometry.book import charts

    held_out = {"n_held_out": 3, "n_queries": 2, "sensitivity": {"raw": 0.9, "whitened": 0.6},
                "sensitivity_minus_raw": {"raw": 0.0, "whitened": -0.3}}
    first = {"ndcg_at_10": {"whiten": 0.5}, "retrieval_change": -0.4}
    table = charts.sensitivity_table(held_out, first)
    assert table["nDCG@10"].tolist() == [0.9, 0.6, 0.5] and table["minus raw"].tolist() == [0.0, -0.3, -0.4]
    assert table["pool"].iloc[0] == "3 held-out sentences, 2 queries" and "every sentence" in table["pool"].iloc[-1]
    assert table.index[1] == charts.VARIANT_NAMES["whitened"]


def test_split_shortfall_names_what_a_split_leaves_too_small():
    """Chapter 5's need on fit_fraction (book/rules.py): each side, a judged query with a relevant
    held-out row, and 2 rows to fit in each domain and to hold out in domain B."""
    labels = ["a"] * 10 + ["b"] * 10
    relevant = [[0, 1, 2, 10, 11, 12]]
    assert whitening.split_shortfall(relevant, labels, 0.5, seed=0) is None
    one_side = whitening.split_shortfall(relevant, labels, 0.05, seed=0)
    assert one_side == "it leaves 1 of 20 sentences on one side (needs 2)"
    fit_rows, held_rows = whitening.split(20, 0.5, seed=0)
    assert whitening.split_shortfall([[int(r) for r in fit_rows]], labels, 0.5, seed=0) == \
        "no judged query has a relevant sentence in the held-out split"
    lopsided = ["a"] * 18 + ["b"] * 2  # domain B is one of the two labels; it holds 2 sentences, split over both sides
    found = {whitening.split_shortfall([list(range(20))], lopsided, 0.5, seed) for seed in range(20)}
    assert any(f and f.startswith("the domain transfer has ") and f.endswith("(needs 2)") for f in found), found
