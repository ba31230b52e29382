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

For the threshold-sensitivity check, a second rule keeps the pairs with S_ij ≥ t · max_P S and
S_ij > 0 (:func:`relative_high_pairs`). Every function works on any leading batch indices.

The random-positions null of the focus tokens (:func:`expected_distinct`): if each of k heads
picked its focus uniformly among a text's T positions, the expected number of distinct picks is

    E = Σ_v [1 − (1 − c_v / T)^k]          c_v: positions holding value v (Σ_v c_v = T)

— T (1 − (1 − 1/T)^k) for distinct positions (every c_v = 1; 11.50 for T = 128, k = 12), less
for distinct token ids, which repeat.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ParameterError


def context_similarity(head_out: np.ndarray) -> np.ndarray:
    """S = O Oᵀ with its diagonal set to 0, for every leading index.
    head_out: [..., T, d_head] → [..., T, T] (float64; the input is not modified)."""
    import torch  # its batched float64 matmul is several times faster than numpy's

    o = torch.as_tensor(np.asarray(head_out, dtype=np.float64))
    if o.ndim < 2 or o.shape[-2] < 2:
        raise ValueError(f"a context similarity matrix needs at least 2 tokens; got shape {tuple(o.shape)}")
    s = (o @ o.transpose(-1, -2)).numpy()
    s[..., np.arange(o.shape[-2]), np.arange(o.shape[-2])] = 0.0
    return s


def upper_pairs(n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs P = {(i, j) : i < j} of T tokens, row by row: (i [P], j [P])."""
    return np.triu_indices(n_tokens, k=1)


def pair_values(similarity: np.ndarray) -> np.ndarray:
    """float64 [..., P]: the entries S_ij of P, in :func:`upper_pairs` order."""
    s = np.asarray(similarity, dtype=np.float64)
    i, j = upper_pairs(s.shape[-1])
    return s[..., i, j]


def high_pairs(similarity: np.ndarray, q: float) -> np.ndarray:
    """bool [..., P]: the pairs of P (in :func:`upper_pairs` order) with S_ij ≥ θ_q, the
    q-quantile of that matrix's off-diagonal entries. A matrix that is all zero (a zero head
    output) has no similarity structure: ValueError."""
    _unit_interval("q", q)
    return quantile_mask(pair_values(similarity), q)


def relative_high_pairs(similarity: np.ndarray, t: float) -> np.ndarray:
    """bool [..., P]: the pairs with S_ij ≥ t · max_P S and S_ij > 0 (the sensitivity rule)."""
    _unit_interval("t", t)
    return relative_mask(pair_values(similarity), t)


def quantile_mask(values: np.ndarray, q: float) -> np.ndarray:
    """bool [..., P]: values at or above their row's q-quantile (``values`` from :func:`pair_values`)."""
    if np.any(np.all(values == 0, axis=-1)):
        raise ValueError("a context similarity matrix is all zero (zero head output): no high pairs")
    return values >= np.quantile(values, q, axis=-1, keepdims=True)


def relative_mask(values: np.ndarray, t: float) -> np.ndarray:
    """bool [..., P]: positive values at or above t times their row's maximum."""
    return (values >= t * values.max(axis=-1, keepdims=True)) & (values > 0)


def endpoint_counts(mask: np.ndarray, n_tokens: int) -> np.ndarray:
    """int64 [..., T]: for each position, how many of the marked pairs it is an endpoint of."""
    mask = np.asarray(mask, bool)
    i, j = upper_pairs(n_tokens)
    rows, p = np.nonzero(mask.reshape(-1, len(i)))
    n_rows = int(np.prod(mask.shape[:-1], dtype=np.int64))
    counts = (np.bincount(rows * n_tokens + i[p], minlength=n_rows * n_tokens)
              + np.bincount(rows * n_tokens + j[p], minlength=n_rows * n_tokens))
    return counts.reshape(mask.shape[:-1] + (n_tokens,))


def focus_positions(mask: np.ndarray, n_tokens: int) -> np.ndarray:
    """int64 [...]: the position that is an endpoint of the most high pairs (lowest on ties).
    mask: bool [..., P] from :func:`high_pairs`."""
    return np.argmax(endpoint_counts(mask, n_tokens), axis=-1)


def expected_distinct(counts: np.ndarray, picks: int) -> float:
    """E[#distinct values] among ``picks`` uniform draws of a position, when value v fills
    ``counts[v]`` of the positions: Σ_v [1 − (1 − c_v / T)^k] with T = Σ_v c_v (by linearity of
    expectation: v is missed by all k draws with probability (1 − c_v / T)^k)."""
    c = np.asarray(counts, dtype=np.float64)
    return float(np.sum(1.0 - (1.0 - c / c.sum()) ** picks))


def attention_received(pattern: np.ndarray) -> np.ndarray:
    """a_j = c_j / max_k c_k with c_j = Σ_i A_ij, the column sums of each attention map.
    pattern: [..., T, T] (rows: queries, summing to 1) → [..., T], max 1."""
    c = np.asarray(pattern, dtype=np.float64).sum(axis=-2)
    top = c.max(axis=-1, keepdims=True)
    if np.any(top <= 0):
        raise ValueError("an attention map receives no attention at all (all zero)")
    return c / top


def _unit_interval(name: str, value) -> float:
    """``value`` when it is a number in [0, 1], else ParameterError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ParameterError(name, "a number in [0, 1]", value)
    return float(value)
