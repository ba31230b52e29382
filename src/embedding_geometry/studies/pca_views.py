"""Chapter 1's 2-D PCA views of every word token over depth: steps in fixed and in refitted axes,
and the post's teleological view, fitted at the final depth, with its "semantic assembly" curve.

pca_steps(acts): every word token of the sentence set in a 2-D PCA
    pca_step_fixed, pca_step_refit   [L]   mean step l−1 → l, one PCA at depth 0 / a PCA per depth
    pca_step_ratio             float     mean refit step / mean fixed step
    per_unit: pca_step_fixed, pca_step_refit [N, L] and pca_step_ratio.{fixed, refit} [N]: a
    sentence's token sums · N / n (PCA axes held fixed), whose means over sentences are the metrics
final_view(four): the hard and easy pairs in a PCA fitted on their word tokens at depth L
    final_pca_projection       {coords [L + 1, n_word, 2], explained_variance_ratio [2], tokens [n_word]}
    semantic_assembly          {text: [L + 1]}   cos(centroid_l, centroid_L) of a text's tokens in that 2-D view
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import geometry
from ..core.activations import Activations

Metrics = dict[str, Any]


def _token_sums(values: np.ndarray, text_of: np.ndarray, n_texts: int) -> np.ndarray:
    """Per text s, Σ_{i∈s} values[:, i] · N / n: rows whose mean over texts is the mean over all n
    tokens. values [L, n] → [N, L]."""
    sums = np.stack([np.bincount(text_of, weights=row, minlength=n_texts) for row in values], axis=1)
    return sums * n_texts / values.shape[1]


def pca_steps(acts: Activations) -> Metrics:
    """The mean 2-D step of every word token between depths, in fixed and in refitted PCA axes,
    and their ratio. Per sentence (``per_unit``, PCA axes held fixed): its tokens' share of each
    mean step, and of the mean over steps (the ratio's numerator and denominator)."""
    words, text_of = acts.hidden[:, acts.word_mask], acts.text_index()[acts.word_mask]
    steps = {axes: geometry.pca_token_steps(words, axes) for axes in geometry.PCA_AXES}
    fixed, refit = steps["fixed"].mean(axis=1), steps["refit"].mean(axis=1)
    shares = {axes: _token_sums(step, text_of, acts.n_texts) for axes, step in steps.items()}
    return {"pca_step_fixed": fixed, "pca_step_refit": refit, "pca_step_ratio": refit.mean() / fixed.mean(),
            "per_unit": {"pca_step_fixed": shares["fixed"], "pca_step_refit": shares["refit"],
                         **{f"pca_step_ratio.{axes}": share.mean(axis=1) for axes, share in shares.items()}}}


def token_pca(acts: Activations, fit_depth: int) -> Metrics:
    """Every word token at every depth in a 2-D PCA fitted on the word tokens at ``fit_depth``."""
    coords, explained = geometry.pca_projection(acts.hidden[:, acts.word_mask], fit_depth)
    return {"coords": coords, "explained_variance_ratio": explained, "tokens": acts.word_tokens()}


def final_view(acts: Activations, labels: Sequence[str] = ("surged", "plunged", "fox", "RAG")) -> Metrics:
    """The post's teleological view: word tokens in a PCA fitted at the final depth, and its
    unrendered "semantic assembly" curve, per text (``labels``) the cosine between the centroid
    of its tokens at depth l and at depth L in that 2-D view."""
    view = token_pca(acts, fit_depth=acts.n_layers)
    text_of = acts.text_index()[acts.word_mask]
    centroids = np.stack([view["coords"][:, text_of == t].mean(axis=1) for t in range(acts.n_texts)])  # [N, L + 1, 2]
    return {"final_pca_projection": view,
            "semantic_assembly": dict(zip(labels, geometry.pair_cosine(centroids, centroids[:, -1:]).tolist()))}
