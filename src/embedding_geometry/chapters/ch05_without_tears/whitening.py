"""Centering and whitening, fitted on one split and judged on another (book/methods.md,
"methods-practice"); the article's score and cone arithmetic are in ``studies.isotropy``.

Centering and whitening are fitted on one split F ([n_F, d]) and applied to any Y ([m, d]):

    μ = mean of F,  Σ = (F − μ)ᵀ(F − μ) / (n_F − 1) = U Λ Uᵀ
    none(Y)   = Y                                            (the baseline)
    centre(Y) = Y − μ
    whiten(Y) = (Y − μ) W,   W = U diag(1 / √(λ + ε)) Uᵀ   (the article's ``whiten_embeddings``, ε = 1e-6)
    top k     W_k = U_k diag(1 / √(λ_k + ε)) U_kᵀ           whitening of the k largest directions only

``domain_transfer`` asks whether a fitted transform travels: labels (topics) split into domains
A and B; B's held-out rows transformed with B's own fit rows or with A's ("borrowed").

On F itself whitening gives the covariance U diag(λ / (λ + ε)) Uᵀ: the identity wherever λ ≫ ε.
A direction with λ ≈ 0 is multiplied by 1/√ε = 1000; ``null_space_share`` measures how much of
the whitened held-out vectors lies in such directions (with n_F ≤ d there are at least d − n_F + 1
of them). Anisotropy is the mean pairwise cosine (``geometry.mean_pairwise_cosine``) throughout.

The evaluation (the chapter's results JSON):

    held_out_study        → whitening_fair: the article's setting. Fitted on the L2-normalised
                          embeddings of the fit split (what the article's ``model.encode`` returns);
                          every measure on held-out documents only: the queries rank the held-out
                          split, each against its relevant held-out sentences (queries with none
                          are left out). {n_fit, n_held_out, dims, zero_eigenvalues (λ < 1e-10 λ_max),
                          held_out {none, center, whiten: {anisotropy, isotropy_score}},
                          anisotropy_reduction (none − whiten), retrieval {method: summary},
                          ndcg_at_10 {method: nDCG@10}, retrieval_change (whiten − none),
                          borrowed (domain_transfer), borrowed_minus_own (centering),
                          fit_per_dim = n_F / d,
                          article_fit_size (10,000, the article's ``sample_size``),
                          n_queries, null_space_share, centering_change (center − none), and a
                          sensitivity table {variant: nDCG@10} of the VARIANTS, with
                          sensitivity_minus_raw {variant: variant − raw}.
                          per_unit: "whitening_fair.anisotropy_reduction" and
                          ".borrowed_minus_own", kernels over pairs of held-out sentences (of domain
                          B for the second): K_ij before minus after whitening, after the borrowed
                          minus after the own centering (their U-statistics, the mean over pairs
                          i ≠ j, are the metrics: anisotropy is a pairwise statistic);
                          ".retrieval_change", ".centering_change" per query (paired nDCG@10
                          differences). An exercise's evaluation goes under another ``key``, without
                          per_unit (``samples=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...core.geometry import cosine_matrix, mean_pairwise_cosine, unit_rows, vector_set
from ...studies import retrieval
from ...studies.isotropy import isotropy_score, stored

EPS = 1e-6
"""The article's ε in ``whiten_embeddings``."""

Method = Literal["none", "center", "whiten"]
METHODS = ("none", "center", "whiten")
ARTICLE_FIT_SIZE = 10_000
"""The article's ``fit_whitening(sample_texts, sample_size=10000)``."""
ZERO = 1e-10
"""An eigenvalue below ZERO · λ_max counts as zero."""


# --------------------------------------------------------------------------- centering and whitening


@dataclass(frozen=True)
class Transform:
    """A fitted transform: apply(Y) = Y − mean (centering; mean 0 for "none") or (Y − mean) W.

    mean [d]; matrix [d, d] or None; eigenvalues [d] of the fit split's covariance (ascending)."""

    method: str
    mean: np.ndarray
    matrix: np.ndarray | None
    eigenvalues: np.ndarray

    def apply(self, y: np.ndarray) -> np.ndarray:
        """(Y − μ) or (Y − μ) W for Y: [m, d] → [m, d] (a new array)."""
        y = np.asarray(y, dtype=np.float64)
        if y.shape[-1] != len(self.mean):
            raise ValueError(f"the transform was fitted on width {len(self.mean)}; got width {y.shape[-1]}")
        centred = y - self.mean
        return centred if self.matrix is None else centred @ self.matrix


def fit(x: np.ndarray, method: Method = "whiten", eps: float = EPS, keep: int | None = None) -> Transform:
    """Fit the identity ("none", the baseline), a centering (μ) or the article's ZCA whitening
    (μ, W) on the rows of ``x`` ([n, d]); ``keep``: whiten only the ``keep`` directions of
    largest variance (W_k, which drops the others). Eigenvalues below 0 by round-off count as 0."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    x = vector_set(x, "fit split")
    eigenvalues, eigenvectors = np.linalg.eigh(covariance(x))
    mean = x.mean(axis=0) if method != "none" else np.zeros(x.shape[1])
    matrix = None
    if method == "whiten":
        kept = eigenvectors[:, -keep:] if keep else eigenvectors
        scale = 1.0 / np.sqrt(np.clip(eigenvalues[-kept.shape[1] :], 0.0, None) + eps)
        matrix = kept @ np.diag(scale) @ kept.T
    return Transform(method=method, mean=mean, matrix=matrix, eigenvalues=eigenvalues)


def covariance(x: np.ndarray) -> np.ndarray:
    """The sample covariance (X − x̄)ᵀ(X − x̄) / (n − 1) of the rows of ``x`` ([n, d]) → [d, d]."""
    x = vector_set(x)
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


def domain_transfer(
    x: np.ndarray, labels, fit_rows: np.ndarray, held_rows: np.ndarray, seed: int = 0
) -> tuple[dict[str, object], np.ndarray]:
    """Is a transform portable between domains? The labels (topics) are split, seeded, into two
    halves A and B; centering and whitening fitted on B's fit rows ("own") or on A's fit rows
    ("borrowed") are applied to B's held-out rows. → anisotropy (mean pairwise cosine) of those
    rows raw, after the own and after the borrowed transform, per method, and the domains; and
    the kernel over pairs of B's held-out rows of their cosine after the borrowed centering minus
    after the own (its U-statistic: borrowed − own)."""
    labels = np.asarray(labels)
    names = list(dict.fromkeys(labels.tolist()))
    domain_a = _domain_a(names, seed)
    in_a = np.isin(labels, list(domain_a))
    fit_a, fit_b = fit_rows[in_a[fit_rows]], fit_rows[~in_a[fit_rows]]
    held_b = held_rows[~in_a[held_rows]]
    x = np.asarray(x, dtype=np.float64)
    raw = mean_pairwise_cosine(x[held_b])
    result: dict[str, object] = {
        "domain_a": sorted(domain_a),
        "domain_b": sorted(set(names) - domain_a),
        "n_fit_own": len(fit_b),
        "n_fit_borrowed": len(fit_a),
        "n_held_out": len(held_b),
    }
    for method in ("center", "whiten"):
        own, borrowed = fit(x[fit_b], method).apply(x[held_b]), fit(x[fit_a], method).apply(x[held_b])
        result[method] = {"raw": raw, "own": mean_pairwise_cosine(own), "borrowed": mean_pairwise_cosine(borrowed)}
        if method == "center":
            gap = cosine_matrix(borrowed) - cosine_matrix(own)
    return result, gap


def _domain_a(names: list[str], seed: int) -> set[str]:
    """Domain A of ``domain_transfer``: a seeded half of the label ``names`` (B is the rest)."""
    if len(names) < 2:
        raise ValueError("a transfer between domains needs at least two labels")
    order = np.random.default_rng(seed).permutation(len(names))
    return {names[i] for i in order[: len(names) // 2]}


def split_shortfall(relevant: retrieval.Relevant, labels, fit_fraction: float, seed: int = 0) -> str | None:
    """What the split ``split(len(labels), fit_fraction, seed)`` leaves too small for
    :func:`held_out_study` with draw ``seed``, in words; None when nothing: each side at least
    2 rows, a query of ``relevant`` with a relevant held-out row, and in ``domain_transfer`` at
    least 2 fit rows in each domain and 2 held-out rows in B."""
    labels = np.asarray(labels)
    n, n_fit = len(labels), int(round(fit_fraction * len(labels)))
    if not 2 <= n_fit <= n - 2:
        return f"it leaves {min(n_fit, n - n_fit)} of {n} sentences on one side (needs 2)"
    fit_rows, held_rows = split(n, fit_fraction, seed)
    held = set(held_rows.tolist())
    if not any(r in held for r in relevant for r in ([r] if np.isscalar(r) else r)):
        return "no judged query has a relevant sentence in the held-out split"
    in_a = np.isin(labels, list(_domain_a(list(dict.fromkeys(labels.tolist())), seed)))
    sizes = {
        "fit sentences in domain A": in_a[fit_rows].sum(),
        "fit sentences in domain B": (~in_a[fit_rows]).sum(),
        "held-out sentences in domain B": (~in_a[held_rows]).sum(),
    }
    small = next((name for name, size in sizes.items() if size < 2), None)
    return None if small is None else f"the domain transfer has {sizes[small]} {small} (needs 2)"


def null_space_share(fit_split: np.ndarray, whitened: np.ndarray) -> float:
    """The share of Σ‖y‖² of ``whitened`` rows ([m, d]) that lies in the directions whose
    eigenvalue in the fit split's covariance is zero (λ < ZERO · λ_max)."""
    eigenvalues, eigenvectors = np.linalg.eigh(covariance(fit_split))
    null = eigenvectors[:, eigenvalues < ZERO * eigenvalues.max()]
    whitened = np.asarray(whitened, dtype=np.float64)
    return float(np.sum((whitened @ null) ** 2) / np.sum(whitened**2))


def held_out_queries(relevant: retrieval.Relevant, held_rows: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """The queries with at least one relevant sentence in ``held_rows``, and for each its
    relevant sentences as positions in ``held_rows`` (the pool the held-out evaluation ranks)."""
    where = {int(row): i for i, row in enumerate(held_rows)}
    sets = [[where[r] for r in ([r] if np.isscalar(r) else r) if r in where] for r in relevant]
    kept = np.array([q for q, items in enumerate(sets) if items], dtype=np.int64)
    if not len(kept):
        raise ValueError("no query has a relevant sentence in the held-out split")
    return kept, [sets[q] for q in kept]


# --------------------------------------------------------------------------- the chapter's metrics

VARIANTS = {
    "raw": ("none", {}),
    "centred": ("center", {}),
    "whitened": ("whiten", {}),
    "unnormalised_input": ("whiten", {"normalised": False}),
    "eps_1e-2": ("whiten", {"eps": 1e-2}),
    "top_third": ("whiten", {"top": 1 / 3}),
    "fit_on_all": ("whiten", {"fit_all": True}),
}
"""The sensitivity table: name → (method, what changes from the held-out evaluation): the input
left unnormalised, ε = 1e-2 instead of 1e-6, only the top d/3 directions whitened (128 of
MiniLM's 384), or the fit made on every document (the held-out ones included)."""


def held_out_study(
    x: np.ndarray,
    queries: np.ndarray,
    relevant: retrieval.Relevant,
    labels,
    fit_rows: np.ndarray,
    held_rows: np.ndarray,
    seed: int = 0,
    key: str = "whitening_fair",
    samples: bool = True,
) -> dict[str, object]:
    """{whitening_fair, per_unit} (see the module docstring; ``key`` renames whitening_fair, and
    ``samples`` False leaves per_unit out): centering and whitening fitted on the unit rows of
    ``x[fit_rows]`` and judged on the held-out rows only — their anisotropy, and ranking them for
    the ``queries`` that have a relevant held-out sentence — with the sensitivity table of
    VARIANTS and ``domain_transfer`` over ``labels``."""
    kept, pool_relevant = held_out_queries(relevant, held_rows)
    inputs = {
        True: (unit_rows(x), unit_rows(queries)[kept]),
        False: (np.asarray(x, dtype=np.float64), np.asarray(queries, dtype=np.float64)[kept]),
    }
    unit = inputs[True][0]

    def variant(
        method: str, normalised: bool = True, eps: float = EPS, top: float | None = None, fit_all: bool = False
    ) -> tuple[Transform, np.ndarray]:
        """One variant's transform, and its cosine scores of the kept queries against the held-out rows."""
        docs, asks = inputs[normalised]
        transform = fit(docs if fit_all else docs[fit_rows], method, eps, round(top * docs.shape[1]) if top else None)
        return transform, cosine_matrix(transform.apply(asks), transform.apply(docs[held_rows]))

    fitted = {name: variant(method, **change) for name, (method, change) in VARIANTS.items()}
    base = dict(zip(METHODS, ("raw", "centred", "whitened")))
    held = {method: fitted[name][0].apply(unit[held_rows]) for method, name in base.items()}
    pairs = {m: cosine_matrix(y) for m, y in held.items()}
    ndcg = {name: retrieval.ndcg_per_query(scores, pool_relevant) for name, (_, scores) in fitted.items()}
    transfer, gap = domain_transfer(unit, labels, fit_rows, held_rows, seed)
    ranking = {method: retrieval.summary(fitted[name][1], pool_relevant) for method, name in base.items()}
    eigenvalues, scores = fitted["whitened"][0].eigenvalues, {m: mean_pairwise_cosine(y) for m, y in held.items()}
    found = {
        "n_fit": len(fit_rows),
        "n_held_out": len(held_rows),
        "dims": unit.shape[1],
        "fit_per_dim": len(fit_rows) / unit.shape[1],
        "article_fit_size": ARTICLE_FIT_SIZE,
        "n_queries": len(kept),
        "zero_eigenvalues": int(np.sum(eigenvalues < ZERO * eigenvalues.max())),
        "null_space_share": null_space_share(unit[fit_rows], held["whiten"]),
        "held_out": {m: {"anisotropy": scores[m], "isotropy_score": isotropy_score(y)} for m, y in held.items()},
        "anisotropy_reduction": scores["none"] - scores["whiten"],
        "retrieval": ranking,
        "ndcg_at_10": {m: r["ndcg_at_10"] for m, r in ranking.items()},
        "retrieval_change": float(np.mean(ndcg["whitened"] - ndcg["raw"])),
        "centering_change": float(np.mean(ndcg["centred"] - ndcg["raw"])),
        "sensitivity": {n: float(v.mean()) for n, v in ndcg.items()},
        "sensitivity_minus_raw": {n: float(np.mean(v - ndcg["raw"])) for n, v in ndcg.items()},
        "borrowed": transfer,
        "borrowed_minus_own": transfer["center"]["borrowed"] - transfer["center"]["own"],
    }
    if not samples:
        return {key: found}
    per_unit = {
        "anisotropy_reduction": stored(pairs["none"] - pairs["whiten"]),
        "borrowed_minus_own": stored(gap),
        "retrieval_change": ndcg["whitened"] - ndcg["raw"],
        "centering_change": ndcg["centred"] - ndcg["raw"],
    }
    return {key: found, "per_unit": {f"{key}.{k}": v for k, v in per_unit.items()}}


EXERCISE_FIT_FRACTION = 0.2
"""Exercise 1's fit fraction: whitening fitted on a fifth of the corpus."""


def exercise_answers(x: np.ndarray, queries: np.ndarray, relevant: retrieval.Relevant, labels, fit_fraction: float,
                     seed: int) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """The answers of the chapter's exercises 1 and 3 on the same vectors, each a
    :func:`held_out_study` without per-unit samples: whitening fitted on
    :data:`EXERCISE_FIT_FRACTION` of the rows (split with ``seed``), and on ``fit_fraction`` of them
    split with seed 1. → (each split's fit rows, for the results' inputs; the two studies, under
    ``exercise_fit_fraction`` and ``exercise_seed_1``)."""
    cases = {"exercise_fit_fraction": ("exercise_fit_rows", EXERCISE_FIT_FRACTION, seed),
             "exercise_seed_1": ("exercise_seed_1_fit_rows", fit_fraction, 1)}
    rows, answers = {}, {}
    for key, (name, fraction, draw) in cases.items():
        fit_rows, held_rows = split(len(x), fraction, draw)
        rows[name] = fit_rows
        answers.update(held_out_study(x, queries, relevant, labels, fit_rows, held_rows, draw, key=key, samples=False))
    return rows, answers
