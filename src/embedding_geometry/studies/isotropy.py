"""The article's isotropy score, its anisotropy warning and its cone "proof" (book/methods.md,
"methods-practice"; chapter 3 measures the cone itself).

For n vectors X = [x_1 … x_n] of width d (X: [n, d], n ≥ 2) with unit rows x̂_i = x_i / ‖x_i‖
and off-diagonal cosines c = {x̂_i · x̂_j : i ≠ j} (n(n − 1) values):

    mean_iso        = 1 − |mean c|
    var_iso         = min(var c / (1/d), 1)                 1/d: var of cos for random directions
    isotropy_score  = (mean_iso + var_iso) / 2              the article's ``measure_anisotropy``
    avg_sim         = (1/n²) Σ_{i,j} x̂_i · x̂_j              sklearn's cosine_similarity(X).mean():
                                                            the diagonal (n ones) is included
    warns           = avg_sim > 0.6                         the article's "Monitor anisotropy" rule

The score's two ends are not where its docstring puts them: identical vectors score 0, but an
orthonormal set (every cosine exactly 0) scores 0.5, because its cosines have no variance; a
sample of isotropic random directions scores about 1. Once var c ≥ 1/d the variance term is
capped at 1 and the score is 1 − |mean c| / 2, never below 0.5.

Cone arithmetic. With m̂ the direction of Σ_i x̂_i and κ = mean_i x̂_i · m̂ (the mean cosine to the
cone's axis), Σ_{i≠j} x̂_i · x̂_j = ‖Σ_i x̂_i‖² − n = n²κ² − n, so exactly

    mean c = (n κ² − 1) / (n − 1)  ≈ κ²                   (the article says E[cos θ] = cos α = κ)

**Per-sentence values** (the sampling unit of these claims; each averages over the sentences to
its metric, ``sentence_values``): a_i = the mean cosine of x̂_i with the other rows (mean: mean c);
u_i = x̂_i · Σ_j x̂_j / n (mean: avg_sim); s_i = (1 − sign(mean c) · a_i + var_iso) / 2 (mean: the
score, with the variance term held at its value on all n rows); k_i = x̂_i · m̂ (mean: κ).

Metrics (the chapter's results JSON):

    reference_study  → isotropy_reference {identical, orthonormal, isotropic} (``reference_scores``),
                       isotropic_mean_cos (mean c of the isotropic sample: the chance null of a
                       cone); per_unit "isotropy_reference.orthonormal": s_i of the d basis vectors
    model_row        one model's corpus embeddings: isotropy_components, anisotropy_warning and
                     retrieval.summary (recall@10, nDCG@10) of its query embeddings, with its
                     per_sentence values (``isotropy_study`` moves them to per_unit)
    isotropy_study   → isotropy_score, isotropy (the main model's row), isotropy_by_model {model
                     id: row}, isotropy_article_models {article name: score, None when not run},
                     isotropy_reference, isotropy_control {mean_cos, avg_sim, score, warns} of the
                     random-init control (None values without one); per_unit "isotropy.mean_cos",
                     "isotropy.avg_sim", "isotropy_score", "isotropy_control.mean_cos" and
                     ".avg_sim", "isotropy_article_models.<name>" (s_i)
    cone_study       → cone {cone_concentration, article_abs_error = |mean c − κ|, article_error =
                     mean c − κ, simulated {alpha_degrees, mean_pairwise_cosine} of a cone of
                     angle arccos κ, trained_minus_control (mean c of the model − the control's,
                     paired by sentence; None without a control)}; per_unit "cone.article_error"
                     (a_i − k_i), "cone.trained_minus_control" (a_i − a_i of the control)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core.geometry import mean_pairwise_cosine, row_mean_cosine, unit_rows
from . import retrieval

WARNING_THRESHOLD = 0.6
"""The article's rule: "If average similarity > 0.6, you have a problem"."""


# --------------------------------------------------------------------------- the article's score

def vector_set(x: np.ndarray, name: str = "embeddings") -> np.ndarray:
    """``x`` as float64, checked to be an [n, d] array of n ≥ 2 vectors (a one-line ValueError)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"{name}: needs an [n, d] array with n ≥ 2 vectors; got shape {x.shape}")
    return x


def offdiagonal_cosines(x: np.ndarray) -> np.ndarray:
    """The n(n − 1) cosines x̂_i · x̂_j, i ≠ j, of the rows of ``x`` ([n, d], n ≥ 2)."""
    unit = unit_rows(vector_set(x))
    sims = unit @ unit.T
    return sims[~np.eye(len(unit), dtype=bool)]


def isotropy_components(x: np.ndarray) -> dict[str, float]:
    """Every term of the article's isotropy score for the rows of ``x`` ([n, d]): the mean and
    variance of the off-diagonal cosines, the expected variance 1/d, var c · d (``var_ratio``),
    mean_iso, var_iso and the score itself."""
    cosines = offdiagonal_cosines(x)
    d = np.asarray(x).shape[1]
    mean, var = mean_pairwise_cosine(x), float(np.var(cosines))
    mean_iso, var_iso = 1.0 - abs(mean), min(var * d, 1.0)
    return {"mean_cos": mean, "var_cos": var, "expected_var": 1.0 / d, "var_ratio": var * d,
            "mean_iso": mean_iso, "var_iso": var_iso, "score": (mean_iso + var_iso) / 2}


def isotropy_score(x: np.ndarray) -> float:
    """(1 − |mean c| + min(var c · d, 1)) / 2: 0 = highly anisotropic, 1 = "perfectly isotropic"
    in the article's words (see the module docstring for what it really rewards)."""
    return isotropy_components(x)["score"]


def avg_sim(x: np.ndarray) -> float:
    """The article's check: the mean of the full cosine matrix, its diagonal of ones included."""
    unit = unit_rows(vector_set(x))
    total = unit.sum(axis=0)
    return float(total @ total / len(unit) ** 2)


def anisotropy_warning(x: np.ndarray, threshold: float = WARNING_THRESHOLD) -> dict[str, float | bool]:
    """``avg_sim`` of the rows of ``x``, the mean over distinct pairs only, and whether the
    article's rule (avg_sim > threshold) fires."""
    value = avg_sim(x)
    return {"avg_sim": value, "mean_offdiagonal": mean_pairwise_cosine(x),
            "threshold": threshold, "warns": bool(value > threshold)}


def sentence_values(x: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of ``x`` ([n, d]): ``mean_cos`` a_i, ``avg_sim`` u_i and ``score`` s_i (see the
    module docstring), each [n], each averaging to its metric over the rows."""
    unit = unit_rows(vector_set(x))
    parts = isotropy_components(x)
    a = row_mean_cosine(unit)
    return {"mean_cos": a, "avg_sim": unit @ unit.sum(axis=0) / len(unit),
            "score": (1.0 - np.sign(parts["mean_cos"]) * a + parts["var_iso"]) / 2}


def isotropic_sample(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n directions drawn uniformly on the unit sphere of R^d (normalised Gaussian rows)."""
    return unit_rows(np.random.default_rng(seed).standard_normal((n, d)))


def reference_scores(d: int, n: int, seed: int = 0) -> dict[str, float]:
    """The article's score on three sets of known geometry in R^d: n ``identical`` vectors (0),
    an ``orthonormal`` set of min(n, d) vectors (0.5: no variance), n ``isotropic`` random
    directions (≈ 1)."""
    identical = np.tile(np.eye(d)[:1], (n, 1))
    return {"identical": isotropy_score(identical), "orthonormal": isotropy_score(np.eye(d)[:min(n, d)]),
            "isotropic": isotropy_score(isotropic_sample(n, d, seed))}


def reference_study(d: int, n: int, seed: int = 0) -> dict[str, object]:
    """isotropy_reference, isotropic_mean_cos and the orthonormal set's per-vector scores
    (see the module docstring)."""
    return {"isotropy_reference": reference_scores(d, n, seed),
            "isotropic_mean_cos": mean_pairwise_cosine(isotropic_sample(n, d, seed)),
            "per_unit": {"isotropy_reference.orthonormal": sentence_values(np.eye(d)[:min(n, d)])["score"]}}


# --------------------------------------------------------------------------- cone arithmetic

def cone_concentration(x: np.ndarray) -> dict[str, float]:
    """κ, the mean cosine of the rows of ``x`` with the direction of their summed unit vectors;
    the mean pairwise cosine; the exact value (nκ² − 1)/(n − 1); and the article's E[cos θ] = κ."""
    unit = unit_rows(vector_set(x))
    n = len(unit)
    kappa = float(np.linalg.norm(unit.sum(axis=0)) / n)
    return {"kappa": kappa, "mean_pairwise_cosine": mean_pairwise_cosine(unit),
            "identity": (n * kappa ** 2 - 1) / (n - 1), "kappa_squared": kappa ** 2, "article": kappa}


def cap_boundary_sample(n: int, d: int, alpha: float, seed: int = 0) -> np.ndarray:
    """n unit vectors at exactly angle ``alpha`` (radians) from the first axis of R^d, their
    other components uniform in direction: x = cos α e_1 + sin α u, u ⊥ e_1, ‖u‖ = 1.
    Their expected pairwise cosine is cos²α (the cross terms average to 0)."""
    if d < 2:
        raise ValueError(f"a cone needs d ≥ 2 dimensions; got {d}")
    u = isotropic_sample(n, d - 1, seed)
    return np.hstack([np.full((n, 1), np.cos(alpha)), np.sin(alpha) * u])


# --------------------------------------------------------------------------- the chapter's metrics

def model_row(docs: np.ndarray, queries: np.ndarray, relevant: retrieval.Relevant) -> dict[str, object]:
    """One model's row of the isotropy table: the score's terms and the article's warning on its
    corpus embeddings ``docs`` ([N, d]), recall@10 / nDCG@10 of ranking them for ``queries``, and
    its ``per_sentence`` values (``sentence_values``)."""
    ranking = retrieval.summary(retrieval.cosine_scores(queries, docs), relevant, ks=(10,))
    return {**isotropy_components(docs), **anisotropy_warning(docs), **ranking, "per_sentence": sentence_values(docs)}


def isotropy_study(by_model: Mapping[str, Mapping], main: str, control: str | None, article_rows: list[dict],
                   references: dict[str, float]) -> dict[str, object]:
    """isotropy_score, isotropy, isotropy_by_model, isotropy_article_models, isotropy_reference,
    isotropy_control and per_unit (see the module docstring) from ``model_row`` per model id, the
    main model's id, the control's id (or None), the article's table rows ({name, model, score})
    and ``reference_scores``."""
    rows = {m: {k: v for k, v in row.items() if k != "per_sentence"} for m, row in by_model.items()}
    units = {m: row.get("per_sentence") for m, row in by_model.items()}
    row, of_control = rows[main], rows[control] if control else {}
    per_unit = {}
    if units[main] is not None:
        per_unit.update({"isotropy.mean_cos": units[main]["mean_cos"], "isotropy.avg_sim": units[main]["avg_sim"],
                         "isotropy_score": units[main]["score"]})
    if control and units[control] is not None:
        per_unit.update({f"isotropy_control.{k}": units[control][k] for k in ("mean_cos", "avg_sim")})
    per_unit.update({f"isotropy_article_models.{r['name']}": units[r["model"]]["score"]
                     for r in article_rows if units.get(r["model"]) is not None})
    return {"isotropy_score": row["score"], "isotropy": dict(row), "isotropy_by_model": rows,
            "isotropy_article_models": {r["name"]: rows[r["model"]]["score"] if r["model"] in rows else None
                                        for r in article_rows},
            "isotropy_reference": dict(references),
            "isotropy_control": {k: of_control.get(k) for k in ("mean_cos", "avg_sim", "score", "warns")},
            "per_unit": per_unit}


def cone_study(x: np.ndarray, control_rows: np.ndarray | None, seed: int = 0) -> dict[str, object]:
    """{cone, per_unit} (see the module docstring) of the rows of ``x`` ([n, d]), with a simulated
    cone of n vectors in R^d at the same angle (seeded), and the control's per-sentence mean
    cosines a_i on the same sentences (``isotropy_control.mean_cos`` of per_unit; None without one)."""
    cone = cone_concentration(x)
    n, d = np.shape(x)
    alpha = float(np.arccos(cone["kappa"]))
    simulated = mean_pairwise_cosine(cap_boundary_sample(n, d, alpha, seed))
    unit = unit_rows(vector_set(x))
    rows, to_axis = row_mean_cosine(unit), unit @ (unit.sum(axis=0) / np.linalg.norm(unit.sum(axis=0)))
    per_unit = {"cone.article_error": rows - to_axis}
    if control_rows is not None:
        per_unit["cone.trained_minus_control"] = rows - np.asarray(control_rows, dtype=np.float64)
    return {"cone": {**cone, "article_abs_error": abs(cone["mean_pairwise_cosine"] - cone["kappa"]),
                     "article_error": cone["mean_pairwise_cosine"] - cone["kappa"],
                     "simulated": {"alpha_degrees": float(np.degrees(alpha)), "mean_pairwise_cosine": simulated},
                     "trained_minus_control": None if control_rows is None
                     else float(np.mean(per_unit["cone.trained_minus_control"]))},
            "per_unit": per_unit}
