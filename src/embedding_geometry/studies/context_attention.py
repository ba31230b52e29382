"""Context similarity against attention and against its cosine form, chapter 4 (the paper's
Mechanism 1: context similarity matrices "reveal information processing patterns that attention
maps alone cannot capture").

For head h of block l on one text, with S = O Oᵀ its context similarity matrix and A its attention
map (rows: queries), every pair i < j of the P = T(T − 1)/2 pairs has

    S_ij                 the context similarity of the pair
    A_ij + A_ji          the attention between the two tokens, both ways (A is not symmetric; S is)

and the head's high pairs of each kind are those at or above their q-quantile (the chapter's
``q``, :func:`.context_matrices.quantile_mask`). Per head and text:

    overlap   = #(high in S and high in A)          its share of the high S pairs is the top-k
                                                    overlap; two independent choices of the top
                                                    pairs give #high A / P on average (chance)
    rank      = Spearman's ρ between S_ij and A_ij + A_ji over a fixed sample of pairs
                (:func:`pair_sample`: :data:`SAMPLED_PAIRS` pairs drawn once from a generator
                seeded by the chapter's seed, the same for every text), from distinct ranks
                (ties, rare between continuous values, in the sort's order):
                ρ = 1 − 6 Σ d² / (M (M² − 1))

The same comparison puts S against its cosine form (the design trade-off of the unnormalised
S: magnitude kept, scale dependence bought), cos_ij = S_ij / (‖o_i‖ ‖o_j‖) with o_i the head's
output at token i (:func:`cosine_pairs`), in place of A_ij + A_ji: how many of S's top pairs the
token norms alone put there.

The per-text rows (``context_stats.TEXT_ROWS``: ``head_{name}_high``, ``head_{name}_overlap``,
``head_{name}_rank`` with name ``attention`` or ``cosine``) are summarised by
:func:`overlap_metrics` into the keys ``attention_overlap`` and ``cosine_overlap`` of the
chapter's metrics, pooled over texts (counts summed first, then divided; ρ averaged):

    share [L], head_share [L, H]   Σ overlap / Σ high S pairs, per block (all heads) and per head
    chance [L], chance_all         Σ high pairs of the other measure / (texts · heads · P), per
                                   block and overall
    rank [L], head_rank [L, H]     the mean of ρ over texts (and heads), per block and per head
    sampled_pairs                  M, the pairs ρ is computed on
"""

from __future__ import annotations

import numpy as np

from .context_matrices import pair_values, quantile_mask, upper_pairs

SAMPLED_PAIRS = 1024
"""M: the pairs Spearman's ρ is computed on (an eighth of P at T = 128, enough for a standard
error near 1 / √M per head and text; ranking all P pairs of every head and text would add a
third to the head pass's time)."""


def attention_pairs(pattern: np.ndarray) -> np.ndarray:
    """[..., P]: A_ij + A_ji of each attention map ``pattern`` [..., T, T], in ``upper_pairs`` order."""
    pattern = np.asarray(pattern)
    return pair_values(pattern + np.swapaxes(pattern, -1, -2))


def cosine_pairs(values: np.ndarray, head_out: np.ndarray) -> np.ndarray:
    """[..., P]: cos_ij = S_ij / (‖o_i‖ ‖o_j‖) from the pair values S ``values`` [..., P] and the
    head outputs ``head_out`` [..., T, d_head] (0 where a norm is 0)."""
    norms = np.linalg.norm(head_out, axis=-1)
    i, j = upper_pairs(norms.shape[-1])
    scale = norms[..., i] * norms[..., j]
    return np.divide(values, scale, out=np.zeros(np.broadcast_shapes(np.shape(values), scale.shape), scale.dtype),
                     where=scale > 0)


def pair_sample(n_pairs: int, seed: int, size: int = SAMPLED_PAIRS) -> np.ndarray:
    """Sorted indices of ``size`` pairs of ``n_pairs`` drawn without replacement by a generator
    seeded by (``seed``, ``n_pairs``); every pair when there are no more than ``size``."""
    if n_pairs <= size:
        return np.arange(n_pairs)
    return np.sort(np.random.default_rng([seed, n_pairs]).choice(n_pairs, size, replace=False))


def rank_correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ along the last axis of x and y [..., M] (M ≥ 2) from distinct ranks (ties,
    rare between continuous values, are broken in the sort's order): 1 − 6 Σ d² / (M (M² − 1))
    with d the difference of the two ranks."""
    m = x.shape[-1]
    if m < 2:
        raise ValueError(f"a rank correlation needs at least 2 pairs; got {m}")
    d = _ranks(x) - _ranks(y)
    return 1.0 - 6.0 * np.sum(d.astype(np.float64) ** 2, axis=-1) / (m * (m * m - 1.0))


def _ranks(values: np.ndarray) -> np.ndarray:
    """The rank 0 … M − 1 of each entry along the last axis (tied entries take distinct ranks in
    the sort's order): one sort, and its inverse permutation written in place."""
    order = np.argsort(values, axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(values.shape[-1]), axis=-1)
    return ranks


def overlap_rows(values: np.ndarray, high: np.ndarray, other: np.ndarray, q: float, sample: np.ndarray,
                 name: str = "attention") -> dict[str, np.ndarray]:
    """One block's per-text rows [B, H] from its pair values S ``values`` [B, H, P], their high
    pairs ``high`` [B, H, P] and another measure of the same pairs ``other`` [B, H, P]
    (:func:`attention_pairs`, :func:`cosine_pairs`): ``head_{name}_high``, the other measure's
    high pairs at q; ``head_{name}_overlap``, the pairs high in both; ``head_{name}_rank``, ρ on
    the pairs of ``sample``."""
    marked = quantile_mask(other, q)
    return {f"head_{name}_high": marked.sum(axis=-1), f"head_{name}_overlap": (marked & high).sum(axis=-1),
            f"head_{name}_rank": rank_correlation(values[..., sample], other[..., sample])}


def overlap_metrics(rows: dict[str, np.ndarray], high_pairs: np.ndarray, n_pairs: int, n_sampled: int,
                    name: str = "attention") -> dict:
    """The key ``{name}_overlap`` (module docstring) from the per-text rows [n, L, H] and each
    head's high S pairs ``high_pairs`` [n, L, H]."""
    overlap, marked = rows[f"head_{name}_overlap"].sum(axis=0), rows[f"head_{name}_high"].sum(axis=0)
    high = high_pairs.sum(axis=0).astype(np.float64)
    n_texts, _, n_heads = high_pairs.shape
    ranks = rows[f"head_{name}_rank"].mean(axis=0)
    return {f"{name}_overlap": {
        "share": overlap.sum(axis=1) / high.sum(axis=1), "head_share": overlap / high,
        "chance": marked.sum(axis=1) / (n_texts * n_heads * n_pairs),
        "chance_all": float(marked.sum() / (marked.size * n_texts * n_pairs)),
        "rank": ranks.mean(axis=1), "head_rank": ranks, "sampled_pairs": n_sampled}}
