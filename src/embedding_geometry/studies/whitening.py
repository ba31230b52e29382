"""The article's isotropy score, its anisotropy warning, and centering / whitening (METHODS.md §5).

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

Centering and whitening are fitted on one split F ([n_F, d]) and applied to any Y ([m, d]):

    μ = mean of F,  Σ = (F − μ)ᵀ(F − μ) / (n_F − 1) = U Λ Uᵀ
    none(Y)   = Y                                            (the baseline)
    centre(Y) = Y − μ
    whiten(Y) = (Y − μ) W,   W = U diag(1 / √(λ + ε)) Uᵀ   (the article's ``whiten_embeddings``, ε = 1e-6)

``domain_transfer`` asks whether a fitted transform travels: labels (topics) split into domains
A and B; B's held-out rows transformed with B's own fit rows or with A's ("borrowed").

On F itself whitening gives the covariance U diag(λ / (λ + ε)) Uᵀ: the identity wherever λ ≫ ε.
With n_F ≤ d, Σ has at most n_F − 1 non-zero eigenvalues and W multiplies the remaining
directions by 1/√ε = 1000: held-out vectors then live mostly in directions F never varied in.
Anisotropy is the mean pairwise cosine (``geometry.mean_pairwise_cosine``) throughout.

Metrics (the chapter's results JSON):

    model_row        one model's corpus embeddings: isotropy_components, anisotropy_warning and
                     retrieval.summary (recall@10, nDCG@10) of its query embeddings
    isotropy_study   → isotropy_score, isotropy (the main model's row), isotropy_by_model {model
                     id: row}, isotropy_article_models {article name: score, None when not run},
                     isotropy_reference {identical, orthonormal, isotropic}, isotropy_control
                     {mean_cos, avg_sim, score, warns} of the random-init control (None values
                     without one)
    cone_study       → cone {cone_concentration, article_abs_error = |mean pairwise − κ|,
                     simulated {alpha_degrees, mean_pairwise_cosine} of a cone of angle arccos κ,
                     trained_minus_control (mean cosine; None without a control)}
    whitening_study  → whitening {n_fit, n_held_out, dims, zero_eigenvalues (λ < 1e-10 λ_max),
                     held_out {none, center, whiten: {anisotropy, isotropy_score}},
                     anisotropy_reduction (none − whiten), retrieval {method: summary},
                     ndcg_at_10 {method: nDCG@10}, retrieval_change (whiten − none),
                     borrowed (domain_transfer), borrowed_minus_own (centering)}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.geometry import mean_pairwise_cosine, unit_rows
from . import retrieval

WARNING_THRESHOLD = 0.6
"""The article's rule: "If average similarity > 0.6, you have a problem"."""

EPS = 1e-6
"""The article's ε in ``whiten_embeddings``."""

Method = Literal["none", "center", "whiten"]
METHODS = ("none", "center", "whiten")


# --------------------------------------------------------------------------- the article's score

def _check(x: np.ndarray, name: str = "embeddings") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"{name}: needs an [n, d] array with n ≥ 2 vectors; got shape {x.shape}")
    return x


def offdiagonal_cosines(x: np.ndarray) -> np.ndarray:
    """The n(n − 1) cosines x̂_i · x̂_j, i ≠ j, of the rows of ``x`` ([n, d], n ≥ 2)."""
    unit = unit_rows(_check(x))
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
    unit = unit_rows(_check(x))
    total = unit.sum(axis=0)
    return float(total @ total / len(unit) ** 2)


def anisotropy_warning(x: np.ndarray, threshold: float = WARNING_THRESHOLD) -> dict[str, float | bool]:
    """``avg_sim`` of the rows of ``x``, the mean over distinct pairs only, and whether the
    article's rule (avg_sim > threshold) fires."""
    value = avg_sim(x)
    return {"avg_sim": value, "mean_offdiagonal": mean_pairwise_cosine(x),
            "threshold": threshold, "warns": bool(value > threshold)}


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


# --------------------------------------------------------------------------- cone arithmetic

def cone_concentration(x: np.ndarray) -> dict[str, float]:
    """κ, the mean cosine of the rows of ``x`` with the direction of their summed unit vectors;
    the mean pairwise cosine; the exact value (nκ² − 1)/(n − 1); and the article's E[cos θ] = κ."""
    unit = unit_rows(_check(x))
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


# --------------------------------------------------------------------------- centering and whitening

@dataclass(frozen=True)
class Transform:
    """A fitted transform: apply(Y) = Y − mean (centering; mean 0 for "none") or (Y − mean) W.

    mean [d]; matrix [d, d] or None; eigenvalues [d] of the fit split's covariance (ascending);
    n_fit, the number of vectors it was fitted on."""

    method: str
    mean: np.ndarray
    matrix: np.ndarray | None
    eigenvalues: np.ndarray
    n_fit: int

    def apply(self, y: np.ndarray) -> np.ndarray:
        """(Y − μ) or (Y − μ) W for Y: [m, d] → [m, d] (a new array)."""
        y = np.asarray(y, dtype=np.float64)
        if y.shape[-1] != len(self.mean):
            raise ValueError(f"the transform was fitted on width {len(self.mean)}; got width {y.shape[-1]}")
        centred = y - self.mean
        return centred if self.matrix is None else centred @ self.matrix

    @property
    def rank_deficient(self) -> bool:
        """True when the fit split had no more vectors than dimensions (n_F ≤ d)."""
        return self.n_fit <= len(self.mean)


def fit(x: np.ndarray, method: Method = "whiten", eps: float = EPS) -> Transform:
    """Fit the identity ("none", the baseline), a centering (μ) or the article's ZCA whitening
    (μ, W) on the rows of ``x`` ([n, d]). Eigenvalues below 0 by round-off count as 0."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    x = _check(x, "fit split")
    eigenvalues, eigenvectors = np.linalg.eigh(covariance(x))
    mean = x.mean(axis=0) if method != "none" else np.zeros(x.shape[1])
    matrix = None
    if method == "whiten":
        matrix = eigenvectors @ np.diag(1.0 / np.sqrt(np.clip(eigenvalues, 0.0, None) + eps)) @ eigenvectors.T
    return Transform(method=method, mean=mean, matrix=matrix, eigenvalues=eigenvalues, n_fit=len(x))


def covariance(x: np.ndarray) -> np.ndarray:
    """The sample covariance (X − x̄)ᵀ(X − x̄) / (n − 1) of the rows of ``x`` ([n, d]) → [d, d]."""
    x = _check(x)
    centred = x - x.mean(axis=0)
    return centred.T @ centred / (len(x) - 1)


def split(n: int, fit_fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of range(n) into sorted fit and held-out indices, the fit split
    holding round(fit_fraction · n) of them (each side at least 2)."""
    n_fit = int(round(fit_fraction * n))
    if not 2 <= n_fit <= n - 2:
        raise ValueError(f"a split of {n} vectors with fit fraction {fit_fraction} leaves a side with < 2")
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[:n_fit]), np.sort(order[n_fit:])


def domain_transfer(x: np.ndarray, labels, fit_rows: np.ndarray, held_rows: np.ndarray, seed: int = 0) -> dict[str, object]:
    """Is a transform portable between domains? The labels (topics) are split, seeded, into two
    halves A and B; centering and whitening fitted on B's fit rows ("own") or on A's fit rows
    ("borrowed") are applied to B's held-out rows. → anisotropy (mean pairwise cosine) of those
    rows raw, after the own and after the borrowed transform, per method, and the domains."""
    labels = np.asarray(labels)
    names = list(dict.fromkeys(labels.tolist()))
    if len(names) < 2:
        raise ValueError("a transfer between domains needs at least two labels")
    order = np.random.default_rng(seed).permutation(len(names))
    domain_a = {names[i] for i in order[: len(names) // 2]}
    in_a = np.isin(labels, list(domain_a))
    fit_a, fit_b = fit_rows[in_a[fit_rows]], fit_rows[~in_a[fit_rows]]
    held_b = held_rows[~in_a[held_rows]]
    x = np.asarray(x, dtype=np.float64)
    raw = mean_pairwise_cosine(x[held_b])
    result: dict[str, object] = {"domain_a": sorted(domain_a), "domain_b": sorted(set(names) - domain_a),
                                 "n_fit_own": len(fit_b), "n_fit_borrowed": len(fit_a), "n_held_out": len(held_b)}
    for method in ("center", "whiten"):
        own, borrowed = fit(x[fit_b], method).apply(x[held_b]), fit(x[fit_a], method).apply(x[held_b])
        result[method] = {"raw": raw, "own": mean_pairwise_cosine(own), "borrowed": mean_pairwise_cosine(borrowed)}
    return result


# --------------------------------------------------------------------------- the chapter's metrics

def model_row(docs: np.ndarray, queries: np.ndarray, relevant: retrieval.Relevant) -> dict[str, float | bool]:
    """One model's row of the isotropy table: the score's terms and the article's warning on its
    corpus embeddings ``docs`` ([N, d]), and recall@10 / nDCG@10 of ranking them for ``queries``."""
    ranking = retrieval.summary(retrieval.cosine_scores(queries, docs), relevant, ks=(10,))
    return {**isotropy_components(docs), **anisotropy_warning(docs), **ranking}


def isotropy_study(by_model: dict[str, dict], main: str, control: str | None, article_rows: list[dict],
                   references: dict[str, float]) -> dict[str, object]:
    """isotropy_score, isotropy, isotropy_by_model, isotropy_article_models, isotropy_reference
    and isotropy_control (see the module docstring) from ``model_row`` per model id, the main
    model's id, the control's id (or None), the article's table rows ({name, model, score}) and
    ``reference_scores``."""
    row = by_model[main]
    of_control = by_model[control] if control else {}
    return {"isotropy_score": row["score"], "isotropy": dict(row), "isotropy_by_model": by_model,
            "isotropy_article_models": {r["name"]: by_model[r["model"]]["score"] if r["model"] in by_model else None
                                        for r in article_rows},
            "isotropy_reference": dict(references),
            "isotropy_control": {k: of_control.get(k) for k in ("mean_cos", "avg_sim", "score", "warns")}}


def cone_study(x: np.ndarray, control_mean_cos: float | None, seed: int = 0) -> dict[str, object]:
    """cone (see the module docstring) of the rows of ``x`` ([n, d]), with a simulated cone of
    n vectors in R^d at the same angle (seeded), and the control's mean cosine (or None)."""
    cone = cone_concentration(x)
    n, d = np.shape(x)
    alpha = float(np.arccos(cone["kappa"]))
    simulated = mean_pairwise_cosine(cap_boundary_sample(n, d, alpha, seed))
    return {**cone, "article_abs_error": abs(cone["mean_pairwise_cosine"] - cone["kappa"]),
            "simulated": {"alpha_degrees": float(np.degrees(alpha)), "mean_pairwise_cosine": simulated},
            "trained_minus_control": None if control_mean_cos is None else cone["mean_pairwise_cosine"] - control_mean_cos}


def whitening_study(x: np.ndarray, queries: np.ndarray, relevant: retrieval.Relevant, labels,
                    fit_rows: np.ndarray, held_rows: np.ndarray, seed: int = 0) -> dict[str, object]:
    """whitening (see the module docstring): every method fitted on ``x[fit_rows]`` and judged on
    ``x[held_rows]`` (anisotropy, score) and on ranking all of ``x`` for ``queries`` (both
    transformed); ``domain_transfer`` over ``labels`` with the same split."""
    transforms = {method: fit(x[fit_rows], method) for method in METHODS}
    held = {method: t.apply(x[held_rows]) for method, t in transforms.items()}
    scores = {m: {"anisotropy": mean_pairwise_cosine(y), "isotropy_score": isotropy_score(y)} for m, y in held.items()}
    ranking = {m: retrieval.summary(retrieval.cosine_scores(t.apply(queries), t.apply(x)), relevant)
               for m, t in transforms.items()}
    transfer = domain_transfer(x, labels, fit_rows, held_rows, seed)
    eigenvalues = transforms["whiten"].eigenvalues
    return {"n_fit": len(fit_rows), "n_held_out": len(held_rows), "dims": np.shape(x)[1],
            "zero_eigenvalues": int(np.sum(eigenvalues < 1e-10 * eigenvalues.max())), "held_out": scores,
            "anisotropy_reduction": scores["none"]["anisotropy"] - scores["whiten"]["anisotropy"],
            "retrieval": ranking, "ndcg_at_10": {m: r["ndcg_at_10"] for m, r in ranking.items()},
            "retrieval_change": ranking["whiten"]["ndcg_at_10"] - ranking["none"]["ndcg_at_10"],
            "borrowed": transfer, "borrowed_minus_own": transfer["center"]["borrowed"] - transfer["center"]["own"]}
