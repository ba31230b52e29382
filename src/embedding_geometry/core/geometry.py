"""Measurements on arrays: the geometry every chapter shares (book/methods.md, Conventions).

    cos(u, v)          = u·v / (‖u‖ ‖v‖)                         u, v: [D]
    cosine_matrix(X,Y) = X̂ Ŷᵀ, rows normalised                   X: [n, D], Y: [m, D] → [n, m]
    mean_pairwise(X)   = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)       X: [n, D], n ≥ 2
                       = (‖Σ_i x̂_i‖² − n) / (n(n−1))           (x̂ = x / ‖x‖; O(nD), no n × n matrix)
    mean_pair_dot(σ, n, q) = (‖σ‖² − q) / (n(n−1))               the mean of v_i·v_j over ordered pairs i ≠ j
                         of n vectors with sum σ and Σ‖v_i‖² = q (q = n for unit vectors): the one
                         formula behind every mean pairwise cosine, in memory or accumulated
    pair_kernel(V)     = K_st = v_s·v_t per depth, diagonal 0    V: [N, L + 1, D] → [N, N, L + 1]
    pair_mean(K)       = (Σ_{s,t} K_st − Σ_s K_ss) / (n(n−1))      a kernel [n, n, …] over ordered pairs s ≠ t
    row_mean_cosine(X) = a_i = (1 / (n−1)) Σ_{j≠i} cos(x_i, x_j)  [n]; mean_i a_i = mean_pairwise(X)
    principal_axis(X)  = PC1 of the centred rows of X (first_axes: the top eigenvector of the smaller
                         Gram matrix; scikit-learn's sign: the largest |coefficient| is positive) → [D]
    r(l)               = l / L                                   relative depth of depth l of L
    ‖h‖₂ per token     = sqrt(Σ_d h_d²)                          H: [..., D] → [...]
    group_mean(V, g)   = for each label k: mean over columns j with g_j = k of V[:, j]
    label_rows(g)      = for each label k (in order of first appearance): the rows i with g_i = k
    centred(X, μ)      = X − μ                                   (μ defaults to the mean row x̄)

Token collapse and pair similarity (book/methods.md, chapters 1 and 2). A *stack* is one text's states at every
depth, S: [L + 1, n, D]; a *pool* array is P: [L + 1, N, D] (one vector per text and depth):

    pair_cosine(a, b)[l]         = cos(a_l, b_l)                               a, b: [..., D] → [...]
    within_cosine(S)[l]          = mean_{i≠j} cos(h_i, h_j) of one text        S → [L + 1]
    intra_sentence_cosine[l]     = mean_s within_cosine(S_s)[l]                stacks → [L + 1]
    pca_projection(S, f)         = X_l ↦ PCA₂ fitted on X_f, applied to X_l    [L + 1, n, D] → [L + 1, n, 2]
    pca_steps(S, fixed)[l]       = mean_i ‖p_l(i) − p_{l−1}(i)‖, one PCA fitted at depth 0, l = 1..L
    pca_steps(S, refit)[l]       = mean_i ‖PCA_l(h_l(i)) − PCA_{l−1}(h_{l−1}(i))‖, a PCA per depth
    peak_write(P)[d]             = argmax_{l=1..L} mean_s |P_l[s,d] − P_{l−1}[s,d]|  (first on ties)
    dim_correlation(X, Y)[d]     = Pearson r over rows of X[:, d] and Y[:, d]   [N, D] → [D]
    correlation_summary(r, t)    = mean r, #{r > t}, #{r < −t} and their fractions
    top_discriminative_dims(a,b) = the k dims d with largest |a_L[d] − b_L[d]|; |a_l[d] − b_l[d]| per depth
    half_value_depth(x)          = min { l : x_l ≥ x_L / 2 }
    slice_cosine(a, b, [p, q))   = cos(a_l[p:q], b_l[p:q]) per depth          (Matryoshka slices)
    separability_parts           per text: B_s = ‖c_s − C‖², W_s = mean_{i∈s} ‖h_i − c_s‖² (within_scatter)
    between_kernel(c)[s, t]      = (N − 1)/N · ‖c_s − c_t‖² / 2, diagonal 0: B's kernel, whose mean over
                                   pairs s ≠ t is B            c: [N, L + 1, D] → [N, N, L + 1]
    separability_ratio[l]        = B / W, c_s = mean_{i∈s} h_i, C = mean_s c_s,
                                   B = mean_s ‖c_s − C‖², W = mean_s mean_{i∈s} ‖h_i − c_s‖²
    pc1_alignment(S)[l]          = |cos(PC1 of the text's centred tokens, mean of its tokens)|
    maxsim(A, B)[l, i]           = max_j cos(a_{l,i}, b_{l,j})
                                   [L+1, n_a, D], [L+1, n_b, D] → [L+1, n_a]

Cosines are taken on raw vectors (no centring, no normalisation first) unless a function says
otherwise. A zero vector has no direction: every cosine function raises on one instead of
returning NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.decomposition import PCA


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


def mean_pair_dot(total: np.ndarray, n: int | np.ndarray, squares: float | np.ndarray | None = None) -> np.ndarray:
    """Mean of v_i · v_j over ordered pairs i ≠ j of n vectors whose sum is ``total`` ([..., D]) and
    whose squared norms sum to ``squares`` (default n: unit vectors), (‖Σ_i v_i‖² − Σ_i ‖v_i‖²) / (n(n−1))
    → [...]. The accumulators and the in-memory statistics both take their pairwise means here."""
    return (np.vecdot(total, total) - (n if squares is None else squares)) / (n * (n - 1))


def pair_kernel(vectors: np.ndarray) -> np.ndarray:
    """K_st = v_s · v_t at every depth of per-text vectors [N, L + 1, D] → [N, N, L + 1], its diagonal
    (which no mean over pairs s ≠ t reads) set to 0: in memory and in the accumulators' sample."""
    kernel = np.einsum("sld,tld->stl", vectors, vectors)
    kernel[np.arange(len(vectors)), np.arange(len(vectors))] = 0.0
    return kernel


def pair_mean(kernel: np.ndarray) -> np.ndarray:
    """The mean of a kernel [n, n, …] over ordered pairs s ≠ t (its diagonal left out) → […]."""
    n = kernel.shape[0]
    return (kernel.sum(axis=(0, 1)) - np.einsum("ss...->...", kernel)) / (n * (n - 1))


def mean_pairwise_cosine(x: np.ndarray) -> float:
    """Mean cosine over ordered pairs i ≠ j of the rows of ``x`` ([n, D], n ≥ 2): the book's
    anisotropy. Computed in O(nD) from the sum of the unit rows (:func:`mean_pair_dot`)."""
    unit = unit_rows(vector_set(x, "mean pairwise cosine"))
    return float(mean_pair_dot(unit.sum(axis=0), len(unit)))


def row_mean_cosine(x: np.ndarray) -> np.ndarray:
    """a_i, the mean cosine of row i of ``x`` ([n, D], n ≥ 2) with every other row → [n]. Their
    mean over i is :func:`mean_pairwise_cosine`: a_i = (x̂_i · Σ_j x̂_j − 1) / (n − 1)."""
    unit = unit_rows(vector_set(x, "mean pairwise cosine"))
    return (unit @ unit.sum(axis=0) - 1) / (len(unit) - 1)


def vector_set(x: np.ndarray, name: str = "embeddings") -> np.ndarray:
    """``x`` as float64, checked to be an [n, D] array of n ≥ 2 vectors (a one-line ValueError)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"{name}: needs an [n, D] array with n ≥ 2 vectors; got shape {x.shape}")
    return x


def principal_axis(x: np.ndarray) -> np.ndarray:
    """PC1 of the centred rows of ``x`` ([n, D], n ≥ 2): the unit vector [D] of largest spread
    around the mean (:func:`first_axes`), in scikit-learn's sign convention: its entry of largest
    magnitude is positive (a principal axis has no natural sign). Equal to
    ``PCA(n_components=1).fit(x).components_[0]`` to 1e-15."""
    x = vector_set(x, "a principal axis")
    if np.ptp(x, axis=0).max() == 0:
        raise ValueError("the principal axis is undefined: all vectors are identical (no variance)")
    axis = first_axes(x - x.mean(axis=0))
    return axis * np.sign(axis[np.argmax(np.abs(axis))])


def first_axes(centred: np.ndarray) -> np.ndarray:
    """[…, D]: the first principal axis of centred rows X [n, D] (any leading axes batched), up to
    sign: the top right singular vector of X, from the top eigenvector of the smaller Gram matrix —
    v of XᵀX [D, D] when n ≥ D; else u of XXᵀ [n, n] and v = Xᵀu / ‖Xᵀu‖. The same axis as an SVD
    of X to round-off, and 10–30 times faster on a text's tokens (n ≪ D) or a vocabulary (n ≫ D)."""
    x = np.asarray(centred, dtype=np.float64)
    rows_first = x.shape[-2] < x.shape[-1]
    gram = x @ np.swapaxes(x, -1, -2) if rows_first else np.swapaxes(x, -1, -2) @ x
    top = np.linalg.eigh(gram)[1][..., -1]
    if not rows_first:
        return top
    axis = np.einsum("...n,...nd->...d", top, x)
    return axis / np.linalg.norm(axis, axis=-1, keepdims=True)


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


def label_rows(labels: Sequence[str]) -> dict[str, np.ndarray]:
    """The row indices of each label, labels in order of first appearance."""
    labels = np.asarray(labels)
    return {str(name): np.flatnonzero(labels == name) for name in dict.fromkeys(labels.tolist())}


def centred(x: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """A new array ``x − mean`` (``mean`` defaults to the mean of the rows of ``x``)."""
    x = np.asarray(x, dtype=np.float64)
    return x - (x.mean(axis=0) if mean is None else np.asarray(mean, dtype=np.float64))


# ------------------------------------------------------------------ per-text stacks: within- and cross-sentence cosines

def per_text(hidden: np.ndarray, offsets: np.ndarray, keep: np.ndarray) -> list[np.ndarray]:
    """Split token rows into one stack per text: text i gets ``hidden[:, offsets[i]:offsets[i+1]]``
    restricted to its rows where ``keep`` is true. hidden: [L + 1, n_tokens, D] → N × [L + 1, n_i, D]."""
    keep = np.asarray(keep, bool)
    return [hidden[:, a:b][:, keep[a:b]] for a, b in zip(offsets[:-1], offsets[1:])]


def pair_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a, b) along the last axis: [..., D] × [..., D] → [...] (e.g. [L + 1] for two pools)."""
    return np.sum(unit_rows(a, "a") * unit_rows(b, "b"), axis=-1)


def within_cosine(stack: np.ndarray) -> np.ndarray:
    """One text's within-sentence cosine: per depth, the mean cosine over ordered pairs i ≠ j of
    its tokens, from the sum of its unit token states (:func:`mean_pair_dot`). [L + 1, n ≥ 2, D] → [L + 1]"""
    n = stack.shape[1]
    if n < 2:
        raise ValueError(f"a text needs at least 2 tokens for its within-sentence cosine; got {n}")
    return mean_pair_dot(unit_rows(stack).sum(axis=1), n)


def intra_sentence_cosine(stacks: Sequence[np.ndarray]) -> np.ndarray:
    """Per depth: each text's :func:`within_cosine`, then the macro mean over texts. Every text
    needs at least 2 tokens. → [L + 1]"""
    _check_stacks(stacks, min_texts=1, min_tokens=2)
    return np.mean([within_cosine(s) for s in stacks], axis=0)


def _check_stacks(stacks: Sequence[np.ndarray], min_texts: int, min_tokens: int) -> None:
    if len(stacks) < min_texts:
        raise ValueError(f"needs at least {min_texts} texts; got {len(stacks)}")
    for i, stack in enumerate(stacks):
        if stack.ndim != 3 or stack.shape[1] < min_tokens:
            raise ValueError(f"text {i}: needs a [depths, tokens ≥ {min_tokens}, D] stack; got shape {stack.shape}")


# --------------------------------------------------------------------------- 2-D PCA views

PCAAxes = Literal["fixed", "refit"]
PCA_AXES = ("fixed", "refit")


def pca_projection(states: np.ndarray, fit_depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Fit a centred 2-D PCA on the tokens at ``fit_depth`` and project every depth with it.
    states: [L + 1, n, D] → (coordinates [L + 1, n, 2], explained variance ratio [2] at fit_depth)."""
    states = np.asarray(states, dtype=np.float64)
    pca = PCA(n_components=2).fit(states[fit_depth])
    return np.stack([pca.transform(x) for x in states]), pca.explained_variance_ratio_


def pca_token_steps(states: np.ndarray, axes: PCAAxes = "fixed") -> np.ndarray:
    """Euclidean step of each token's 2-D position from depth l − 1 to l, l = 1..L.

    ``fixed``: one PCA fitted at depth 0 projects every depth (true movement in that plane).
    ``refit``: depth l − 1 is projected with a PCA fitted at l − 1 and depth l with one fitted
    at l, so a rotation or sign flip of the axes shows up as movement. [L + 1, n, D] → [L, n]"""
    if axes not in PCA_AXES:
        raise ValueError(f"axes must be one of {PCA_AXES}; got {axes!r}")
    states = np.asarray(states, dtype=np.float64)
    if axes == "fixed":
        points = pca_projection(states, 0)[0]
    else:
        points = np.stack([PCA(n_components=2).fit_transform(x) for x in states])
    return np.linalg.norm(np.diff(points, axis=0), axis=-1)


def pca_steps(states: np.ndarray, axes: PCAAxes = "fixed") -> np.ndarray:
    """Mean over tokens of :func:`pca_token_steps`, per transition l − 1 → l. → [L]"""
    return pca_token_steps(states, axes).mean(axis=1)


# --------------------------------------------------------------------------- dimensions of the pools

def peak_write(pools: np.ndarray) -> np.ndarray:
    """For every dimension d, the depth l ∈ 1..L whose transition writes most to it on average
    over texts: argmax_l mean_s |P_l[s, d] − P_{l−1}[s, d]| (first on ties). pools: [L + 1, N, D] → [D]"""
    score = np.abs(np.diff(np.asarray(pools, dtype=np.float64), axis=0)).mean(axis=1)  # [L, D]
    return np.argmax(score, axis=0) + 1


def depth_histogram(peaks: np.ndarray, n_layers: int) -> np.ndarray:
    """How many entries of ``peaks`` (depths in 1..L) fall on each depth l = 1..L. → [L]"""
    return np.bincount(np.asarray(peaks), minlength=n_layers + 1)[1:]


def dim_correlation(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Pearson r, for every dimension d, between first[:, d] and last[:, d] over the N rows
    (texts). [N, D] × [N, D] → [D]. A dimension constant over the texts has no r: ValueError."""
    x, y = (np.asarray(a, dtype=np.float64) for a in (first, last))
    if len(x) < 3:
        raise ValueError(f"a correlation over texts needs at least 3 texts; got {len(x)}")
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    sx, sy = np.sqrt((xc ** 2).sum(axis=0)), np.sqrt((yc ** 2).sum(axis=0))
    if np.any(sx == 0) or np.any(sy == 0):
        bad = int(np.flatnonzero((sx == 0) | (sy == 0))[0])
        raise ValueError(f"dimension {bad} is constant over the texts; its correlation is undefined")
    return (xc * yc).sum(axis=0) / (sx * sy)


def correlation_summary(r: np.ndarray, threshold: float = 0.7) -> dict[str, float]:
    """Mean of the correlations r and how many (and what fraction) lie above +threshold and
    below −threshold."""
    r = np.asarray(r, dtype=np.float64)
    above, below = int(np.sum(r > threshold)), int(np.sum(r < -threshold))
    return {"mean": float(r.mean()), "threshold": threshold, "n_above": above, "n_below": below,
            "fraction_above": above / len(r), "fraction_below": below / len(r)}


def top_discriminative_dims(a: np.ndarray, b: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The k dimensions with the largest |a_L[d] − b_L[d]| at the final depth (largest first), and
    their |difference| at every depth. a, b: [L + 1, D] → (dims [k], differences [k, L + 1])."""
    diff = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    dims = np.argsort(-diff[-1], kind="stable")[:k]
    return dims, diff[:, dims].T


def half_value_depth(series: np.ndarray) -> int:
    """The first depth l at which ``series`` reaches half its final value: min {l : x_l ≥ x_L / 2}."""
    series = np.asarray(series, dtype=np.float64)
    return int(np.flatnonzero(series >= series[-1] / 2)[0])


MATRYOSHKA_BOUNDS = ((0, 64), (64, 128), (128, 256), (256, 512), (512, None))


def matryoshka_slices(width: int) -> dict[str, tuple[int, int] | None]:
    """The Matryoshka slices [0,64), [64,128), [128,256), [256,512), [512,D) of a D-wide space,
    each clipped to D; a slice that starts at or beyond D is None. Keys name the published slices."""
    slices: dict[str, tuple[int, int] | None] = {}
    for start, stop in MATRYOSHKA_BOUNDS:
        name = f"{start}-{stop if stop is not None else 'D'}"
        slices[name] = (start, min(stop or width, width)) if start < width else None
    return slices


def slice_cosine(a: np.ndarray, b: np.ndarray, bounds: tuple[int, int]) -> np.ndarray:
    """cos(a[..., p:q], b[..., p:q]) for bounds (p, q): [..., D] × [..., D] → [...]."""
    start, stop = bounds
    return pair_cosine(np.asarray(a)[..., start:stop], np.asarray(b)[..., start:stop])


# --------------------------------------------------------------------------- sentences as token clouds

def separability_parts(stacks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per text s, B_s = ‖c_s − C‖² and W_s = mean_{i∈s} ‖h_i − c_s‖² → two [N, L + 1] (Euclidean,
    raw states): c_s the mean of text s's tokens, C = mean_s c_s. Their means over texts are the B
    and W of :func:`separability_ratio`; chapter 1 resamples them per text."""
    _check_stacks(stacks, min_texts=2, min_tokens=1)
    centroids = np.stack([s.astype(np.float64).mean(axis=1) for s in stacks])  # [N, L + 1, D]
    between = ((centroids - centroids.mean(axis=0)) ** 2).sum(-1)
    return between, np.stack([within_scatter(s) for s in stacks])


def between_kernel(centroids: np.ndarray) -> np.ndarray:
    """B = mean_s ‖c_s − C‖² as a U-statistic over pairs of texts: its kernel (N − 1)/N · ‖c_s − c_t‖² / 2
    for the text centroids c [N, L + 1, D] → [N, N, L + 1], 0 on the diagonal, whose mean over
    pairs s ≠ t is B (Σ_{s,t} ‖c_s − c_t‖² = 2N Σ_s ‖c_s − C‖²). ‖c_s − c_t‖² is scipy's
    ``cdist(…, "sqeuclidean")`` per depth: summed differences, not the Gram expansion, so no
    entry cancels below 0."""
    n = len(centroids)
    squared = np.stack([cdist(depth, depth, "sqeuclidean") for depth in np.asarray(centroids).transpose(1, 0, 2)],
                       axis=-1)
    return (n - 1) / n * squared / 2


def within_scatter(stack: np.ndarray) -> np.ndarray:
    """W_s = mean_i ‖h_i − c_s‖² of one text's tokens [L + 1, n, D] at every depth → [L + 1]."""
    x = np.asarray(stack, dtype=np.float64)
    return ((x - x.mean(axis=1)[:, None]) ** 2).sum(-1).mean(axis=1)


def separability_ratio(stacks: Sequence[np.ndarray]) -> np.ndarray:
    """Between-text spread over within-text scatter, per depth: B / W with B = mean_s B_s and
    W = mean_s W_s (:func:`separability_parts`). → [L + 1]"""
    return parts_ratio(*separability_parts(stacks))


def parts_ratio(between: np.ndarray, within: np.ndarray) -> np.ndarray:
    """B / W per depth from the per-text parts B_s, W_s [N, L + 1] of :func:`separability_parts`."""
    between, within = between.mean(axis=0), within.mean(axis=0)
    if np.any(within == 0):
        raise ValueError("within-text scatter is zero at some depth (every text's tokens identical); "
                         "the ratio is undefined")
    return between / within


def pc1_alignment(stack: np.ndarray) -> np.ndarray:
    """|cos(PC1, w)| at every depth of one text's tokens [L + 1, n, D] → [L + 1]: PC1 the first principal
    axis of the centred tokens (:func:`first_axes`; its sign is irrelevant under |cos|), w the mean of the tokens."""
    x = np.asarray(stack, dtype=np.float64)
    mean = x.mean(axis=1)
    return np.abs(pair_cosine(first_axes(x - mean[:, None]), mean))


# --------------------------------------------------------------------------- token matching (chapter 2)

def maxsim(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each token i of a, its best cosine with any token of b, per depth (one direction,
    a → b). a: [L + 1, n_a, D], b: [L + 1, n_b, D] → [L + 1, n_a]."""
    return np.stack([cosine_matrix(x, y).max(axis=1) for x, y in zip(a, b)])
