"""Is the similarity of two sentences inside the network their shared surface form? (chapter 2)

The post explains its attractor by what the middle layers encode: "surface structure — shared
vocabulary, syntactic patterns, domain signals". Shared vocabulary can be measured. Over the N
sentences of a corpus sample (:func:`corpus_texts`), every pair (s, t) of distinct sentences has

    overlap(s, t) = |W_s ∩ W_t| / |W_s ∪ W_t|   the Jaccard index of their lowercase word sets
    cos_l(s, t)   = cos(m_l(s), m_l(t))        their mean-pool cosine at depth l

and, per depth, ρ_l is Spearman's rank correlation between cos_l and overlap over the N(N − 1)/2
pairs (Pearson's r of their ranks, ties averaged). The depth where ρ_l peaks, and its peak margin
max_{0<l<L} ρ_l − max(ρ_0, ρ_L) (> 0: it peaks strictly inside the network), say where a pair's
similarity follows its shared words most closely.

**Resampling.** Pairs share sentences, so they are not independent units: the unit is the
sentence. A resample draws N sentences with replacement (counts c_s) and weighs pair (s, t) by
c_s c_t (a sentence drawn twice is not paired with itself); the ranks are held at their values
on all pairs, so ρ_l of a resample is the weighted Pearson's r of the fixed ranks, each moment a
ratio Σ_{s≠t} c_s c_t K_st / Σ_{s≠t} c_s c_t of pairwise kernels K (as chapter 3 rebuilds
Spearman's ρ from the ranks' moments).

:func:`surface_form` is the study function; its key ``surface_form`` joins chapter 2's metrics:

    spearman [L + 1]            ρ_l
    peak_depth, peak_relative_depth, peak_margin   argmax_l ρ_l (first on ties), over L, and the margin
    peak_margin_draws [B]       the peak margin of each of B resamples of the sentences (seeded)
    n_sentences, n_pairs        N and N(N − 1)/2
    overlap_mean, overlap_zero_share   the mean overlap over pairs, and the share of pairs sharing no word
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from scipy import stats

from .anisotropy import cosine_kernel
from .cone import chapter_corpus
from ..core.hierarchical import unit_weights

N_TEXTS = 96
"""Sentences of the book's corpus, the same sample as chapter 3's (its default ``n_texts`` and
seed), so that a build runs their forward pass once."""
RESAMPLES = 20_000
"""Resamples of the sentences (as many as the claims engine draws)."""
CHUNK = 2000
"""Resamples weighed at once (a [CHUNK, N] matrix of counts per product)."""


def corpus_texts(n: int = N_TEXTS) -> list[str]:
    """``n`` sentences of the book's corpus, spread evenly over its topics (drawn as chapter 3 draws its sample)."""
    return chapter_corpus("project", n, seed=0)["sentence"].tolist()


def word_sets(texts: Sequence[str]) -> list[set[str]]:
    """Each text's set of lowercase words (runs of letters and digits)."""
    return [set(re.findall(r"[^\W_]+", text.lower())) for text in texts]


def jaccard_matrix(texts: Sequence[str]) -> np.ndarray:
    """[N, N]: |W_s ∩ W_t| / |W_s ∪ W_t| for every pair of texts (1 on the diagonal)."""
    words = word_sets(texts)
    if any(not w for w in words):
        raise ValueError("texts: every text needs at least one word for a Jaccard overlap")
    return np.array([[len(a & b) / len(a | b) for b in words] for a in words])


def pair_ranks(values: np.ndarray) -> np.ndarray:
    """[N, N, …]: the rank (ties averaged) of each pair s < t among all such pairs, per trailing
    entry of ``values`` [N, N, …], mirrored to t < s; 0 on the diagonal."""
    n = values.shape[0]
    upper = np.triu_indices(n, k=1)
    ranks = np.zeros(values.shape)
    ranks[upper] = stats.rankdata(values[upper], axis=0)
    return ranks + np.swapaxes(ranks, 0, 1)


def weighted_correlation(x: np.ndarray, y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """[B, L + 1]: Pearson's r between kernels x [N, N, L + 1] and y [N, N] over the pairs s ≠ t,
    pair (s, t) weighted c_s c_t by each row of ``counts`` [B, N] (zero diagonals); nan for a
    resample whose pairs do not vary (the claims engine keeps the finite draws)."""
    weight = counts.sum(axis=1) ** 2 - np.sum(counts ** 2, axis=1)

    def mean(kernel):
        return np.einsum("bs,bs->b", counts @ kernel, counts) / weight

    ey, eyy = mean(y), mean(y * y)
    r = []
    for depth in range(x.shape[2]):
        k = x[:, :, depth]
        ex, exx, exy = mean(k), mean(k * k), mean(k * y)
        with np.errstate(invalid="ignore", divide="ignore"):
            r.append((exy - ex * ey) / np.sqrt((exx - ex ** 2) * (eyy - ey ** 2)))
    return np.stack(r, axis=1)


def peak_margin(series: np.ndarray) -> np.ndarray:
    """max_{0<l<L} x_l − max(x_0, x_L) along the last axis of ``series`` [..., L + 1]."""
    return series[..., 1:-1].max(axis=-1) - np.maximum(series[..., 0], series[..., -1])


def surface_form(pools: np.ndarray, texts: Sequence[str], resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """The correlation of a pair's mean-pool cosine with its word overlap at every depth of
    ``pools`` ([L + 1, N, D], the mean pools of ``texts``), with ``resamples`` seeded resamples of
    the sentences for its peak margin (keys in the module docstring)."""
    pools = np.asarray(pools, dtype=np.float64)
    n, layers = pools.shape[1], pools.shape[0] - 1
    if n != len(texts) or n < 3 or layers < 2:
        raise ValueError(f"pools: [L + 1 ≥ 3, N ≥ 3, D] for the N = {len(texts)} texts; got shape {pools.shape}")
    overlap = jaccard_matrix(texts)
    x, y = pair_ranks(cosine_kernel(pools)), pair_ranks(overlap)
    rho = weighted_correlation(x, y, np.ones((1, n)))[0]
    counts = unit_weights(np.random.default_rng(seed), resamples, n)
    draws = np.concatenate([peak_margin(weighted_correlation(x, y, counts[start:start + CHUNK]))
                            for start in range(0, resamples, CHUNK)])
    pairs = overlap[np.triu_indices(n, k=1)]
    peak = int(np.argmax(rho))
    return {"surface_form": {
        "spearman": rho, "peak_depth": peak, "peak_relative_depth": peak / layers,
        "peak_margin": float(peak_margin(rho)), "peak_margin_draws": draws,
        "n_sentences": n, "n_pairs": len(pairs), "overlap_mean": float(pairs.mean()),
        "overlap_zero_share": float(np.mean(pairs == 0)),
    }}
