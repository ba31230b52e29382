"""Chapter 1's view of the mean pool m_l(s) dimension by dimension: how far it travels, which
block writes most to each dimension, how much of depth 0 survives at the final depth, which
dimensions tell the hard pair apart, and the Matryoshka slices.

travel(acts)
    meanpool_first_last_cosine [N]       cos(m_0(s), m_L(s)) per sentence
    meanpool_first_last_abs    float     mean_s |cos(m_0(s), m_L(s))| (per sentence under ``per_unit``)
    meanpool_to_final          [L + 1]   mean_s cos(m_l(s), m_L(s))
peak_writes(acts, tail)
    peak_write_depth           [D]       argmax_{l=1..L} mean_s |m_l(s)_d − m_{l−1}(s)_d|
    peak_write_hist            [L]       dimensions per peak block l = 1..L
    peak_write_share           [L]       peak_write_hist / D;  peak_write_uniform [L]: 1 / L each (chance)
    peak_write_last_two        float     share of the D dimensions peaking in the last ``tail`` of the blocks
    resampled.peak_write_last_two [B]    that share on B bootstrap resamples of the sentences
dimension_correlation(acts)
    dim_corr_first_last        {r [D], mean, threshold, n_above, n_below, fraction_above, fraction_below}
                                         Pearson r over sentences of m_0(s)_d and m_L(s)_d; per sentence
                                         (``per_unit``) the centred pools x, y [N, D] that rebuild every r
discriminative_dims(pair): the hard pair (a, b)
    top_discriminative_dims    {dims [5], difference [5, L + 1], half_value_depth [5], half_value_relative_depth [5],
                                earliest_half_value_relative_depth}
matryoshka(pair, twins)
    slice_bounds               {name: [p, q) or None}   the Matryoshka slices clipped to D
    slice_cosine               {name: [L + 1] or None}  cos(m_l(a)[p:q], m_l(b)[p:q]) of the hard pair
    slice_margin               {first_least, middle_most: [L + 1] or None}   over the negation twins (d, n):
                               first_least = mean_twins (c_{0-64} − max_{other slices} c), middle_most =
                               mean_twins (min_{other slices} c − c_{256-512}), c = cos(m_l(d)[p:q], m_l(n)[p:q]);
                               per twin (``per_unit``) [n, L + 1]; None without the slice or another one
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import geometry
from ..core.hierarchical import unit_weights
from ..core.relative_depth import in_tail
from ..core.activations import Activations

Metrics = dict[str, Any]

TAIL = 2 / 24
"""The post's "final two layers" of 24, as a share of the blocks (peak writes; the ledger's
``last_fraction:0.0833``)."""

RESAMPLES = 20_000
"""Bootstrap resamples a study draws itself (the claims engine's own number)."""


def travel(acts: Activations) -> Metrics:
    """How far a sentence's mean pool travels: cos(m_0(s), m_L(s)) per sentence, its mean
    absolute value (per sentence under ``per_unit``), and mean_s cos(m_l(s), m_L(s)) per depth."""
    pools = acts.mean_pool("all")
    to_final = geometry.pair_cosine(pools, pools[-1:])  # [L + 1, N]
    first = to_final[0]
    return {"meanpool_first_last_cosine": first, "meanpool_first_last_abs": np.abs(first).mean(),
            "meanpool_to_final": to_final.mean(axis=1), "per_unit": {"meanpool_first_last_abs": np.abs(first)}}


def _peak_share(writes: np.ndarray, weights: np.ndarray, tail: float) -> np.ndarray:
    """For each row of sentence weights [B, N], the share of dimensions whose largest weighted
    mean write (writes [N, D, L]) falls in the last ``tail`` of the L blocks → [B]. The first
    block of largest write is in the tail exactly when the tail's largest write is larger than
    every earlier block's."""
    n, D, L = writes.shape
    late = in_tail(tail, L, "blocks")
    mean = (weights.astype(np.float32) @ writes.reshape(n, -1)).reshape(len(weights), D, L)
    return (mean[..., late].max(axis=-1) > mean[..., ~late].max(axis=-1, initial=-np.inf)).mean(axis=1)


def peak_writes(acts: Activations, tail: float = TAIL, resamples: int = RESAMPLES,
                seed: int = 0) -> Metrics:
    """Each dimension's peak-write block, their histogram over blocks 1..L (counts, and shares
    of the D dimensions), the share peaking in the last ``tail`` of the blocks, the shares if
    every block were equally likely (``peak_write_uniform``), and that share on ``resamples``
    bootstrap resamples of the sentences (each dimension's peak found again on each)."""
    pools = acts.mean_pool("all")
    peaks = geometry.peak_write(pools)
    hist = geometry.depth_histogram(peaks, acts.n_layers)
    writes = np.abs(np.diff(pools, axis=0)).transpose(1, 2, 0).astype(np.float32)  # [N, D, L], contiguous
    rng, n = np.random.default_rng([seed, 1]), acts.n_texts
    draws = [_peak_share(writes, unit_weights(rng, b, n), tail) for b in np.diff(np.r_[0:resamples:2000, resamples])]
    late = in_tail(tail, acts.n_layers, "blocks")
    return {"peak_write_depth": peaks, "peak_write_hist": hist, "peak_write_share": hist / len(peaks),
            "peak_write_last_two": hist[late].sum() / len(peaks),
            "peak_write_uniform": np.full(acts.n_layers, 1 / acts.n_layers),
            "resampled": {"peak_write_last_two": np.concatenate(draws), "n_sentences": n}}


def dimension_correlation(acts: Activations, threshold: float = 0.7) -> Metrics:
    """Per dimension, Pearson r over the sentences of m_0(s)_d and m_L(s)_d, and its summary;
    per sentence (``per_unit``) the centred pools x = m_0(s) − mean and y = m_L(s) − mean [N, D],
    whose moments x, y, x², y², xy let a resample of the sentences rebuild every r."""
    pools = acts.mean_pool("all")
    r = geometry.dim_correlation(pools[0], pools[-1])
    x, y = (geometry.centred(p) for p in (pools[0], pools[-1]))
    return {"dim_corr_first_last": {"r": r, **geometry.correlation_summary(r, threshold=threshold)},
            "per_unit": {"dim_corr_first_last.x": x, "dim_corr_first_last.y": y}}


def discriminative_dims(pair: Activations, k: int = 5) -> Metrics:
    """The k dimensions that best tell the two texts' final mean pools apart, their difference at
    every depth, and the (relative) depth at which each reaches half its final difference."""
    pools = pair.mean_pool("all")
    dims, diffs = geometry.top_discriminative_dims(pools[:, 0], pools[:, 1], k=k)
    half = np.array([geometry.half_value_depth(d) for d in diffs])
    return {"top_discriminative_dims": {"dims": dims, "difference": diffs, "half_value_depth": half,
                                        "half_value_relative_depth": half / pair.n_layers,
                                        "earliest_half_value_relative_depth": half.min() / pair.n_layers}}


def matryoshka(pair: Activations, twins: Activations) -> Metrics:
    """The hard pair's mean-pool cosine within each Matryoshka slice of the dimensions, and how the
    slices order themselves over the negation twins (``twins``: triplets document, negation, role
    reversal, as chapter 1's ``twin_cosine``): does [0, 64) tell a twin apart least, and [256, 512)
    most, twin by twin (the module docstring's margins; > 0 when so)."""
    pools, twin_pools = pair.mean_pool("all"), twins.mean_pool("all")
    bounds = geometry.matryoshka_slices(pools.shape[-1])
    cos = {name: geometry.slice_cosine(twin_pools[:, 0::3], twin_pools[:, 1::3], b).T
           for name, b in bounds.items() if b is not None}  # [n, L + 1]
    margins = {"first_least": _margin(cos, "0-64", 1), "middle_most": _margin(cos, "256-512", -1)}
    return {"slice_bounds": bounds,
            "slice_cosine": {name: None if b is None else geometry.slice_cosine(pools[:, 0], pools[:, 1], b)
                             for name, b in bounds.items()},
            "slice_margin": {name: None if m is None else m.mean(axis=0) for name, m in margins.items()},
            "per_unit": {f"slice_margin.{name}": m for name, m in margins.items() if m is not None}}


def _margin(cos: dict[str, np.ndarray], kept: str, sign: int) -> np.ndarray | None:
    """sign = 1: c_kept − max of the other slices' c; sign = −1: min of the others − c_kept (per twin
    and depth); None when the slice or every other one lies beyond the width."""
    rest = [c for name, c in cos.items() if name != kept]
    if kept not in cos or not rest:
        return None
    return sign * (cos[kept] - (np.max(rest, axis=0) if sign > 0 else np.min(rest, axis=0)))
