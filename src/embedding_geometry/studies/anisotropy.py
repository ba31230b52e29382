"""Anisotropy (chapter 3; definitions on the book's Methods page, "Inside the cone"): how much a
set of vectors shares one direction, as a mean over pairs, and the statistics chapter 3 reads an
axis with.

Measurements (X: [n, D] vectors, S: [L + 1, n, D] the same n texts at every depth, A = anisotropy):

    anisotropy(X)            = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)   (geometry.mean_pairwise_cosine)
    cosine_kernel(S)         = K[s, t, l] = cos(S[l, s], S[l, t]), K[s, s, ·] = 0      → [n, n, L + 1]
                               A_l is the mean of K[·, ·, l] over pairs s ≠ t: a U-statistic
    token_kernels(H, owner)  = T[s, t, l] = Σ_{i∈s, j∈t} cos(h_il, h_jl) = Σ_s·Σ_t with Σ_s the sum of
                               text s's unit token states, and C[s, t] = n_s n_t (both 0 for s = t)
    token-level anisotropy   = Σ_{s≠t} T[s, t, l] / Σ_{s≠t} C[s, t]: the mean cosine of two tokens
                               of different texts (``pooling_gap``)                 → [L + 1]
    final_step_share(x)      = (x_{L−1} − x_L) / (max_l x_l − x_L)
    correlation_ratio(y, g)  = η² = Σ_k n_k (ȳ_k − ȳ)² / Σ_i (y_i − ȳ)²        g: labels
    permuted_eta2_draws(y, g) = η² over shuffles of the N labels; their mean is about (K − 1) / (N − 1)
    rank_correlation(x, y)   = Spearman's ρ (scipy), Pearson's r of the ranks (ties averaged)

**Sampling units** (``per_unit``, for the claims' bootstrap intervals, ``book.claims.samples``).
The unit is the sentence. Anisotropy is a mean over *pairs* of sentences, so its per-unit values
are kernels [N, N, …] — a resample recomputes the mean over the pairs of the sentences it drew
(``{pairwise: key}``); resampling each sentence's mean cosine with the others instead would
halve the standard error. Token-level anisotropy is a ratio of two such kernels, the cosines of
two texts' tokens over the number of token pairs, so that the tokens of one sentence travel
with it. The random-init controls give one kernel per seed, [S, N, N, …], on the same
sentences (``{seeds: {pairwise: key}}``): their difference from the trained model is resampled
sentence by sentence and seed by seed.

The study functions (their keys join chapter 3's metrics dict, ``studies.cone``; N sentences, a
model of L blocks, S control seeds):

    cone_formation(pools, "pairs")                 Experiment 1: when does the cone form?
      anisotropy, anisotropy_rise (A_l − A_0) [L + 1]; anisotropy_peak_depth; final_step_share;
      per_unit: anisotropy.pairs, anisotropy_rise.pairs [N, N, L + 1] ("rows": each sentence's
      mean cosine with the others [N, L + 1], what chapters 7 and 8 resample)
    control_formation(pools, controls)             the random-init controls, the null of Experiment 1
      controls {anisotropy [S, L + 1], anisotropy_mean [L + 1], final_anisotropy [S]};
      random_control {anisotropy_excess [L + 1]: the controls' mean minus the model's};
      per_unit: controls.anisotropy.pairs, controls.anisotropy_rise.pairs [S, N, N, L + 1]
      (None values and no per-unit samples without controls)
    pooling_gap(pools, acts, token_set)            Experiment 2: how much does pooling make?
      token_anisotropy (of the chapter's token set), anisotropy_gap (sentence − token),
      pooling_share (gap / sentence), token_anisotropy_word and token_anisotropy_all (each token
      set), token_set_effect ((all − word) / gap) [L + 1]; n_tokens; per_unit: for the chapter's
      set, word tokens and all tokens, <key>.pairs [N, N, L + 1] and <key>.counts [N, N, 1] with
      <key> token_anisotropy, token_anisotropy_word, token_anisotropy_all

Cosines are on raw vectors (no centring, no normalisation first), as everywhere in the book; a
zero vector has no direction and raises ValueError instead of giving NaN. Nothing here mutates
its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from ..core.geometry import label_rows, mean_pairwise_cosine, pair_kernel, row_mean_cosine, unit_rows

anisotropy = mean_pairwise_cosine
"""Anisotropy *is* the mean pairwise cosine: one implementation, in ``core.geometry``."""

PERMUTATIONS = 2000
"""Shuffles of the labels in a permutation null (η² of the cone axis, the centering test): its
smallest p, 1 / 2001, lies below the threshold a chapter of a dozen claims can give (q·m_k/m ≈ 0.005);
200 shuffles could not go below 0.005."""

TOKEN_SETS = ("word", "all")


# --------------------------------------------------------------------------- pairwise kernels

def cosine_kernel(states: np.ndarray) -> np.ndarray:
    """K [n, n, L + 1]: K[s, t, l] = cos(states[l, s], states[l, t]) for s ≠ t and 0 on the
    diagonal, from ``states`` [L + 1, n, D]. The mean over s ≠ t of K[·, ·, l] is the anisotropy."""
    return pair_kernel(unit_rows(np.asarray(states, dtype=np.float64)).transpose(1, 0, 2))


def token_kernels(hidden: np.ndarray, owners: np.ndarray, n_texts: int) -> tuple[np.ndarray, np.ndarray]:
    """(T [N, N, L + 1], C [N, N, 1]) of the token states ``hidden`` [L + 1, n_tok, D], token i
    belonging to text ``owners[i]``: T[s, t, l] = Σ_{i∈s, j∈t} cos(h_il, h_jl) = Σ_s·Σ_t, with Σ_s the
    sum of text s's unit token states at depth l, and C[s, t] = n_s n_t; both 0 for s = t."""
    unit = unit_rows(np.asarray(hidden, dtype=np.float64))
    owners = np.asarray(owners)
    sums = np.zeros((unit.shape[0], n_texts, unit.shape[2]))
    np.add.at(sums, (slice(None), owners), unit)
    counts = np.bincount(owners, minlength=n_texts).astype(np.float64)
    products = np.outer(counts, counts)[:, :, None]
    products[np.arange(n_texts), np.arange(n_texts)] = 0.0
    return pair_kernel(sums.transpose(1, 0, 2)), products


# --------------------------------------------------------------------------- Experiment 1

def anisotropy_per_depth(states: np.ndarray) -> np.ndarray:
    """[L + 1]: ``anisotropy(states[l])`` at every depth of ``states`` ([L + 1, n, D])."""
    return np.array([anisotropy(layer) for layer in np.asarray(states)])


def row_means_per_depth(states: np.ndarray) -> np.ndarray:
    """[n, L + 1]: each row's mean cosine with the other rows at every depth of ``states``
    ([L + 1, n, D]); the mean over rows is :func:`anisotropy_per_depth`."""
    return np.stack([row_mean_cosine(layer) for layer in np.asarray(states)], axis=1)


def final_step_share(series: np.ndarray) -> float:
    """(x_{L−1} − x_L) / (max_l x_l − x_L): the share of the fall from the peak of a per-depth
    series that happens in its last step (0 when the final depth is the peak: nothing falls)."""
    series = np.asarray(series, dtype=np.float64)
    if len(series) < 2:
        raise ValueError(f"a final step needs a series of at least 2 depths; got {len(series)}")
    fall = series.max() - series[-1]
    return 0.0 if fall == 0 else float((series[-2] - series[-1]) / fall)


def nearest_depth(relative: float, n_layers: int) -> int:
    """The depth l of a model of ``n_layers`` blocks nearest relative depth r = l / L."""
    return int(round(relative * n_layers))


def cone_formation(pools: np.ndarray, units: str = "rows") -> dict:
    """Experiment 1 on mean pools [L + 1, N, D]: sentence-level anisotropy at every depth, its
    rise from depth 0, the depth of its peak and the share of the fall from the peak made by the
    last step. ``units``: ``"pairs"``, the kernels of :func:`cosine_kernel` (chapter 3's claims
    resample these), or ``"rows"``, each sentence's mean cosine with the others [N, L + 1] (what
    chapters 7 and 8 resample; as independent units they understate a pairwise statistic's
    standard error)."""
    if units not in ("rows", "pairs"):
        raise ValueError(f"units must be 'rows' or 'pairs'; got {units!r}")
    series = anisotropy_per_depth(pools)
    if units == "pairs":
        kernel = cosine_kernel(pools)
        per_unit = {"anisotropy.pairs": kernel, "anisotropy_rise.pairs": kernel - kernel[..., :1]}
    else:
        rows = row_means_per_depth(pools)
        per_unit = {"anisotropy": rows, "anisotropy_rise": rows - rows[:, :1]}
    return {"anisotropy": series, "final_step_share": final_step_share(series),
            "anisotropy_peak_depth": int(np.argmax(series)), "anisotropy_rise": series - series[0],
            "per_unit": per_unit}


def control_formation(pools: np.ndarray, controls: Sequence[np.ndarray]) -> dict:
    """The random-init controls' anisotropy per depth on the same sentences as ``pools``
    ([L + 1, N, D]; ``controls``: one such array per seed), their mean's excess over the model,
    and their kernels, one per seed (module docstring). None values without controls."""
    if not controls:
        return {"controls": {"anisotropy": None, "anisotropy_mean": None, "final_anisotropy": None},
                "random_control": {"anisotropy_excess": None}}
    curves = np.stack([anisotropy_per_depth(c) for c in controls])
    kernels = np.stack([cosine_kernel(c) for c in controls])
    return {"controls": {"anisotropy": curves, "anisotropy_mean": curves.mean(axis=0),
                         "final_anisotropy": curves[:, -1]},
            "random_control": {"anisotropy_excess": curves.mean(axis=0) - anisotropy_per_depth(pools)},
            "per_unit": {"controls.anisotropy.pairs": kernels,
                         "controls.anisotropy_rise.pairs": kernels - kernels[..., :1]}}


# --------------------------------------------------------------------------- Experiment 2

def token_rows(acts, token_set: str = "word") -> np.ndarray:
    """The token rows of an ``Activations`` record that token-level anisotropy uses: word tokens
    (``"word"``, the book's convention) or every real token, [CLS] and [SEP] included (``"all"``)."""
    if token_set not in TOKEN_SETS:
        raise ValueError(f"token_set must be 'word' or 'all'; got {token_set!r}")
    keep = acts.word_mask if token_set == "word" else acts.word_mask | acts.special_mask
    return np.flatnonzero(np.asarray(keep, dtype=bool))


def pooling_gap(pools: np.ndarray, acts, token_set: str = "word") -> dict:
    """Experiment 2: token-level anisotropy (the mean cosine of two tokens of different
    sentences, over every token of ``token_set``), the gap that mean pooling adds (sentence −
    token) and the gap's share of the mean pools' anisotropy, with the token kernels; and the
    effect of counting [CLS] and [SEP]: (A_all − A_word) / gap, per depth."""
    sentence, kernels = anisotropy_per_depth(pools), {}
    for name in TOKEN_SETS:
        rows = token_rows(acts, name)
        kernels[name] = token_kernels(acts.hidden[:, rows], acts.text_index()[rows], acts.n_texts)
    by_set = {name: pairs.sum(axis=(0, 1)) / products.sum() for name, (pairs, products) in kernels.items()}
    token, gap = by_set[token_set], sentence - by_set[token_set]
    return {"token_anisotropy": token, "anisotropy_gap": gap, "pooling_share": gap / sentence,
            "n_tokens": len(token_rows(acts, token_set)),
            "token_anisotropy_word": by_set["word"], "token_anisotropy_all": by_set["all"],
            "token_set_effect": (by_set["all"] - by_set["word"]) / gap,
            "per_unit": {"token_anisotropy.pairs": kernels[token_set][0],
                         "token_anisotropy.counts": kernels[token_set][1],
                         "token_anisotropy_word.pairs": kernels["word"][0],
                         "token_anisotropy_word.counts": kernels["word"][1],
                         "token_anisotropy_all.pairs": kernels["all"][0],
                         "token_anisotropy_all.counts": kernels["all"][1]}}


# --------------------------------------------------------------------------- what an axis separates

def correlation_ratio_parts(values: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row i, (b_i, t_i) = ((ȳ_{g(i)} − ȳ)², (y_i − ȳ)²), with ȳ_{g(i)} the mean of row i's
    label: Σ b / Σ t = η², a ratio of means of per-row values (label means held fixed)."""
    values = np.asarray(values, dtype=np.float64)
    means = np.empty_like(values)
    for rows in label_rows(labels).values():
        means[rows] = values[rows].mean()
    return (means - values.mean()) ** 2, (values - values.mean()) ** 2


def correlation_ratio(values: np.ndarray, labels: Sequence[str]) -> float:
    """η²: the share of the variance of ``values`` explained by the label means (0 = the labels
    tell nothing, 1 = the values are constant within every label)."""
    between, total = correlation_ratio_parts(values, labels)
    if total.sum() == 0:
        raise ValueError("correlation ratio is undefined for constant values")
    return float(between.sum() / total.sum())


def permuted_eta2_draws(values: np.ndarray, labels: Sequence[str], permutations: int = PERMUTATIONS,
                        seed: int = 0) -> np.ndarray:
    """[P]: η² of ``values`` under ``permutations`` shuffles of ``labels`` (a generator seeded by
    ``seed``): the permutation distribution of η², whose mean is about (K − 1) / (N − 1). Each
    shuffle's η² = Σ_k S_k² / n_k / Σ_i (y_i − ȳ)², S_k the sum of the centred values of label k."""
    values, labels = np.asarray(values, dtype=np.float64), np.asarray(labels)
    codes = np.unique(labels, return_inverse=True)[1]
    rng = np.random.default_rng(seed)
    centred = values - values.mean()
    total, k = float(centred @ centred), int(codes.max()) + 1
    if total == 0:
        raise ValueError("correlation ratio is undefined for constant values")
    draws = np.empty(permutations)
    for p in range(permutations):
        shuffled = rng.permutation(codes)
        sums, counts = np.bincount(shuffled, centred, k), np.bincount(shuffled, minlength=k)
        draws[p] = float(np.sum(sums**2 / np.maximum(counts, 1)) / total)
    return draws


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ between two series of the same length (scipy)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"rank correlation needs two series of equal length ≥ 3; got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rank correlation is undefined for a constant series")
    return float(stats.spearmanr(x, y).statistic)


def rank_moments(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The per-unit moments {x, y, xx, yy, xy} [n, 1] of the ranks of x and y (ties averaged):
    Pearson's r of them, rebuilt from weighted means in each resample, is Spearman's ρ."""
    rx, ry = stats.rankdata(x)[:, None], stats.rankdata(y)[:, None]
    return {"x": rx, "y": ry, "xx": rx ** 2, "yy": ry ** 2, "xy": rx * ry}
