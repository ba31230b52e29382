"""The article's isotropy score, its warning rule, cone arithmetic and whitening, on known arrays."""

import numpy as np
import pytest

from embedding_geometry.studies import whitening


def test_identical_vectors_score_zero_and_warn():
    x = np.tile([[3.0, 4.0, 0.0]], (5, 1))
    parts = whitening.isotropy_components(x)
    assert parts["mean_cos"] == pytest.approx(1.0) and parts["var_cos"] == pytest.approx(0.0)
    assert whitening.isotropy_score(x) == pytest.approx(0.0)
    check = whitening.anisotropy_warning(x)
    assert check["avg_sim"] == pytest.approx(1.0) and check["warns"] is True


def test_orthonormal_vectors_score_one_half_not_one():
    x = np.eye(6)
    parts = whitening.isotropy_components(x)
    assert parts["mean_iso"] == pytest.approx(1.0) and parts["var_iso"] == pytest.approx(0.0)
    assert whitening.isotropy_score(x) == pytest.approx(0.5)
    assert whitening.anisotropy_warning(x)["warns"] is False


def test_isotropic_random_directions_score_about_one():
    x = whitening.isotropic_sample(2000, 20, seed=1)
    parts = whitening.isotropy_components(x)
    assert abs(parts["mean_cos"]) < 0.01
    assert parts["var_ratio"] == pytest.approx(1.0, abs=0.05)
    assert whitening.isotropy_score(x) > 0.97


def test_score_by_hand_on_three_vectors():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    a = 1 / np.sqrt(2)  # cosines: 0 (twice), a (four times) over ordered pairs
    mean = 4 * a / 6
    var = 4 * a ** 2 / 6 - mean ** 2
    expected = ((1 - mean) + min(var * 2, 1)) / 2
    assert whitening.isotropy_score(x) == pytest.approx(expected)
    assert sorted(whitening.offdiagonal_cosines(x)) == pytest.approx([0, 0, a, a, a, a])


def test_avg_sim_includes_the_diagonal():
    x = np.random.default_rng(0).standard_normal((7, 4))
    mean = whitening.offdiagonal_cosines(x).mean()
    n = len(x)
    assert whitening.avg_sim(x) == pytest.approx((n + n * (n - 1) * mean) / n ** 2)
    check = whitening.anisotropy_warning(x, threshold=0.6)
    assert check["mean_offdiagonal"] == pytest.approx(mean)
    assert check["warns"] is bool(check["avg_sim"] > 0.6)


def test_zero_vector_and_too_few_vectors_are_clear_errors():
    with pytest.raises(ValueError, match="zero vector"):
        whitening.isotropy_score(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="n ≥ 2"):
        whitening.isotropy_score(np.ones((1, 3)))


def test_reference_scores():
    refs = whitening.reference_scores(d=8, n=50)
    assert refs["identical"] == pytest.approx(0.0)
    assert refs["orthonormal"] == pytest.approx(0.5)
    assert refs["isotropic"] > 0.9


def test_cone_identity_is_exact():
    x = np.random.default_rng(2).standard_normal((40, 6)) + 1.5
    cone = whitening.cone_concentration(x)
    assert cone["mean_pairwise_cosine"] == pytest.approx(cone["identity"], abs=1e-12)
    assert cone["mean_pairwise_cosine"] == pytest.approx(whitening.offdiagonal_cosines(x).mean())
    assert cone["kappa_squared"] == pytest.approx(cone["kappa"] ** 2)


def test_vectors_on_a_cone_boundary_average_cos_squared_not_cos():
    alpha = np.radians(60)
    x = whitening.cap_boundary_sample(600, 80, alpha, seed=0)
    assert np.allclose(x[:, 0], np.cos(alpha)) and np.allclose(np.linalg.norm(x, axis=1), 1)
    mean = whitening.offdiagonal_cosines(x).mean()
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
    row = whitening.model_row(docs, docs[:2], [0, 1])
    assert row["mean_cos"] == pytest.approx((0 + 2 / np.sqrt(2)) * 2 / 6)
    assert row["mean_offdiagonal"] == pytest.approx(row["mean_cos"])
    assert row["recall_at_10"] == 1.0 and row["ndcg_at_10"] == pytest.approx(1.0)
    assert row["avg_sim"] == pytest.approx((3 + 4 / np.sqrt(2)) / 9) and row["warns"] is True  # 0.647 > 0.6
    assert set(row) >= {"score", "var_ratio", "threshold"}


def test_isotropy_study_picks_the_main_model_the_control_and_the_articles_rows():
    rows = {"main": {"score": 0.9, "mean_cos": 0.1, "avg_sim": 0.12, "warns": False},
            "main [control]": {"score": 0.52, "mean_cos": 0.95, "avg_sim": 0.95, "warns": True}}
    article = [{"name": "Main", "model": "main", "score": 0.67}, {"name": "Other", "model": "other", "score": 0.3}]
    refs = {"identical": 0.0, "orthonormal": 0.5, "isotropic": 1.0}
    study = whitening.isotropy_study(rows, "main", "main [control]", article, refs)
    assert study["isotropy_score"] == 0.9 and study["isotropy"] == rows["main"]
    assert study["isotropy_article_models"] == {"Main": 0.9, "Other": None}
    assert study["isotropy_control"] == {"mean_cos": 0.95, "avg_sim": 0.95, "score": 0.52, "warns": True}
    assert study["isotropy_reference"] == refs and study["isotropy_by_model"] is rows
    alone = whitening.isotropy_study({"main": rows["main"]}, "main", None, article, refs)
    assert alone["isotropy_control"] == {"mean_cos": None, "avg_sim": None, "score": None, "warns": None}


def test_cone_study_of_vectors_on_a_cone():
    x = whitening.cap_boundary_sample(300, 20, np.pi / 3, seed=1)
    cone = whitening.cone_study(x, control_mean_cos=0.9, seed=0)
    assert cone["kappa"] == pytest.approx(0.5, abs=0.02)
    assert cone["simulated"]["alpha_degrees"] == pytest.approx(np.degrees(np.arccos(cone["kappa"])))
    assert cone["simulated"]["mean_pairwise_cosine"] == pytest.approx(cone["kappa"] ** 2, abs=0.01)
    assert cone["article_abs_error"] == pytest.approx(abs(cone["mean_pairwise_cosine"] - cone["kappa"]))
    assert cone["trained_minus_control"] == pytest.approx(cone["mean_pairwise_cosine"] - 0.9)
    assert whitening.cone_study(x, None)["trained_minus_control"] is None


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
