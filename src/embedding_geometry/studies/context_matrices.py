"""Context similarity matrices and their pairs (the book's Methods page, section
``methods-heads``; after Halevi et al., arXiv 2512.21956).

For one text of exactly T tokens and one head h of block l, with d_head the head width:

    O_{l,h}     = A_{l,h} V_{l,h}                      [T, d_head]  head output: the input of the
                                                                    attention output projection
    S_{l,h}     = O Oᵀ, diagonal set to 0              [T, T]       context similarity matrix
    P           = {(i, j) : i < j}                     T(T − 1)/2 off-diagonal pairs (S is symmetric)
    θ_q         = q-quantile of {S_ij : (i, j) ∈ P}    linear interpolation (numpy's default)
    high pairs  = {(i, j) ∈ P : S_ij ≥ θ_q}            about (1 − q)·|P| pairs per matrix
    d(i, j)     = j − i                                distance of a pair, 1 … T − 1
    focus       = argmax_t #{high pairs with endpoint t}   a token position (lowest on ties)
    a_j         = c_j / max_k c_k,  c_j = Σ_i A_ij     attention received by token j, max 1   [T]

θ_q is Hyndman and Fan's type 7 (numpy's default): with the pairs' values sorted,
v_(0) ≤ … ≤ v_(P−1), and x = (P − 1) q, θ_q = v_(⌊x⌋) + (x − ⌊x⌋) (v_(⌊x⌋+1) − v_(⌊x⌋))
(:func:`quantile_threshold`, from the top P − ⌊x⌋ values alone).

For the threshold-sensitivity check, a second rule keeps the pairs with S_ij ≥ t · max_P S and
S_ij > 0 (:func:`relative_mask`). Every function works on any leading batch indices.

The random-positions null of the focus tokens: if each of k heads picked its focus uniformly
among a text's T positions, the expected number of distinct picks is (:func:`expected_distinct`)

    E = Σ_v [1 − (1 − c_v / T)^k]          c_v: positions holding value v (Σ_v c_v = T)

— T (1 − (1 − 1/T)^k) for distinct positions (every c_v = 1; 11.50 for T = 128, k = 12), less
for distinct token ids, which repeat. Its distribution is drawn by :func:`random_focus_counts`.

Segmentation from attention (:func:`boundary_hits`): rank a text's word tokens by a score (the
attention they receive), take the top k, k the number of true sentence ends b_j in the text,
and count the hits h = #{top k} ∩ {b}; h / k is the R-precision. A random ranking hits
k · k / W on average (W word tokens): each of the k picks is a sentence end with probability k / W.
"""

from __future__ import annotations

import numpy as np



def context_similarity(head_out: np.ndarray) -> np.ndarray:
    """S = O Oᵀ with its diagonal set to 0, for every leading index.
    head_out: [..., T, d_head] → [..., T, T], float32 for float32 outputs (a model's: the forward
    pass's own float noise is larger than float32's rounding of S), else float64; the input is
    not modified."""
    import torch  # its batched matmul is several times faster than numpy's

    o = np.asarray(head_out)
    o = torch.as_tensor(o if o.dtype == np.float32 else o.astype(np.float64))
    if o.ndim < 2 or o.shape[-2] < 2:
        raise ValueError(f"a context similarity matrix needs at least 2 tokens; got shape {tuple(o.shape)}")
    s = (o @ o.transpose(-1, -2)).numpy()
    s[..., np.arange(o.shape[-2]), np.arange(o.shape[-2])] = 0.0
    return s


def upper_pairs(n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs P = {(i, j) : i < j} of T tokens, row by row: (i [P], j [P])."""
    return np.triu_indices(n_tokens, k=1)


def pair_values(similarity: np.ndarray) -> np.ndarray:
    """[..., P]: the entries S_ij of P, in :func:`upper_pairs` order (in S's precision)."""
    s = np.asarray(similarity)
    i, j = upper_pairs(s.shape[-1])
    return s[..., i, j]


def quantile_threshold(values: np.ndarray, q: float) -> np.ndarray:
    """θ_q [..., 1] of each row of ``values`` [..., P] (type 7, the module docstring): the two
    order statistics around x = (P − 1) q come from the top P − ⌊x⌋ values of each row
    (``torch.topk``, a partial sort: for q = 0.99 and P = 8,128, the top 83)."""
    import torch

    v = np.asarray(values)
    n = v.shape[-1]
    x = (n - 1) * float(q)
    low = min(int(np.floor(x)), n - 1)
    gamma = x - low
    top = torch.topk(torch.as_tensor(v).reshape(-1, n), n - low, dim=-1, sorted=True).values.numpy()
    top = top.astype(np.float64)
    below, above = top[:, -1], top[:, max(n - low - 2, 0)]  # v_(⌊x⌋) and v_(⌊x⌋+1) (clipped at the top)
    theta = np.where(gamma >= 0.5, above - (above - below) * (1 - gamma), below + (above - below) * gamma)
    return theta.reshape(v.shape[:-1] + (1,))


def quantile_mask(values: np.ndarray, q: float) -> np.ndarray:
    """bool [..., P]: values at or above their row's q-quantile θ_q (``values`` from :func:`pair_values`)."""
    if np.any(np.all(values == 0, axis=-1)):
        raise ValueError("a context similarity matrix is all zero (zero head output): no high pairs")
    return values >= quantile_threshold(values, q)


def relative_mask(values: np.ndarray, t: float) -> np.ndarray:
    """bool [..., P]: positive values at or above t times their row's maximum."""
    return (values >= t * values.max(axis=-1, keepdims=True)) & (values > 0)


def expected_distinct(counts: np.ndarray, picks: int) -> float:
    """E[#distinct values] among ``picks`` uniform draws of a position, when value v fills
    ``counts[v]`` of the positions: Σ_v [1 − (1 − c_v / T)^k] with T = Σ_v c_v (by linearity of
    expectation: v is missed by all k draws with probability (1 − c_v / T)^k)."""
    c = np.asarray(counts, dtype=np.float64)
    return float(np.sum(1.0 - (1.0 - c / c.sum()) ** picks))


def random_focus_counts(input_ids: np.ndarray, n_heads: int, shape: tuple[int, ...],
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draws of the random-positions null on one text: each of ``n_heads`` heads picks its focus
    uniformly among the text's T positions, independently, ``shape`` times (e.g. draws × blocks).
    Returns (#distinct positions, #distinct token ids at them), each int64 of ``shape``; their
    means tend to :func:`expected_distinct` of ones and of the text's id counts."""
    ids = np.asarray(input_ids)
    picks = rng.integers(0, len(ids), size=(*shape, n_heads))
    return distinct_counts(picks), distinct_counts(ids[picks])


def distinct_counts(rows: np.ndarray) -> np.ndarray:
    """int64 [...]: #distinct values along the last axis of [..., k]."""
    ordered = np.sort(rows, axis=-1)
    return 1 + np.count_nonzero(np.diff(ordered, axis=-1), axis=-1)


def boundary_hits(scores: np.ndarray, boundaries: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """int64 [...]: h, how many of the k top-scored eligible tokens are boundaries, k the number
    of boundaries of each row (scores, boundaries, eligible: [..., T]; boundaries ⊂ eligible;
    ties broken by position, the lower first)."""
    s = np.where(eligible, np.asarray(scores, dtype=np.float64), -np.inf)
    order = np.argsort(-s, axis=-1, kind="stable")
    k = np.count_nonzero(boundaries, axis=-1)
    rank = np.arange(s.shape[-1])
    picked = np.take_along_axis(np.asarray(boundaries, bool), order, axis=-1) & (rank < k[..., None])
    return np.count_nonzero(picked, axis=-1)


def attention_received(pattern: np.ndarray) -> np.ndarray:
    """a_j = c_j / max_k c_k with c_j = Σ_i A_ij, the column sums of each attention map.
    pattern: [..., T, T] (rows: queries, summing to 1) → [..., T], max 1."""
    c = np.asarray(pattern).sum(axis=-2, dtype=np.float64)
    top = c.max(axis=-1, keepdims=True)
    if np.any(top <= 0):
        raise ValueError("an attention map receives no attention at all (all zero)")
    return c / top

