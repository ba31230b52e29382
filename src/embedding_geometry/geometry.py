"""Measurements on arrays: the geometry every chapter shares (METHODS.md §0).

    cos(u, v)          = u·v / (‖u‖ ‖v‖)                         u, v: [D]
    cosine_matrix(X,Y) = X̂ Ŷᵀ, rows normalised                   X: [n, D], Y: [m, D] → [n, m]
    mean_pairwise(X)   = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)       X: [n, D], n ≥ 2
    r(l)               = l / L                                   relative depth of depth l of L
    ‖h‖₂ per token     = sqrt(Σ_d h_d²)                          H: [..., D] → [...]
    group_mean(V, g)   = for each label k: mean over columns j with g_j = k of V[:, j]

Cosines are taken on raw vectors (no centring, no normalisation first) unless a function says
otherwise. A zero vector has no direction: every cosine function raises on one instead of
returning NaN.
"""

from __future__ import annotations

import numpy as np


def unit_rows(x: np.ndarray, name: str = "vectors") -> np.ndarray:
    """x / ‖x‖ along the last axis; raises ValueError if any row has zero norm."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"{name}: cosine is undefined for a zero vector")
    return x / norms


def cosine(u: np.ndarray, v: np.ndarray) -> float:
    """cos(u, v) for two vectors of the same width."""
    return float(unit_rows(u, "u") @ unit_rows(v, "v"))


def cosine_matrix(x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """All cosines between the rows of x and the rows of y (y defaults to x)."""
    xn = unit_rows(x, "x")
    return xn @ (xn if y is None else unit_rows(y, "y")).T


def mean_pairwise_cosine(x: np.ndarray) -> float:
    """Mean cosine over ordered pairs i ≠ j of the rows of x (self-pairs excluded)."""
    n = len(x)
    if n < 2:
        raise ValueError(f"mean pairwise cosine needs at least 2 vectors; got {n}")
    sims = cosine_matrix(x)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def relative_depth(n_layers: int) -> np.ndarray:
    """r = l / L for l = 0..L."""
    return np.arange(n_layers + 1) / n_layers


def token_norms(hidden: np.ndarray) -> np.ndarray:
    """Euclidean norm of every state: [..., D] → [...]."""
    return np.linalg.norm(np.asarray(hidden, dtype=np.float64), axis=-1)


def group_mean(values: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Per label, the mean over the columns of ``values`` ([L + 1, n]) carrying that label."""
    labels = np.asarray(labels)
    return {str(k): np.asarray(values)[:, labels == k].mean(axis=1) for k in np.unique(labels)}
