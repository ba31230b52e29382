"""Anisotropy and the cone: how much a set of vectors shares one direction (METHODS.md §3).

    anisotropy(X)            = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)            X: [n, D], n ≥ 2
                             = (‖Σ_i x̂_i‖² − n) / (n(n−1))                    (x̂ = x / ‖x‖)
    anisotropy_per_depth(S)  = [anisotropy(S[l]) for l = 0..L]                 S: [L + 1, n, D]
    token_anisotropy(H, k)   = anisotropy_per_depth of the rows of H kept by the mask k, a seeded
                               uniform sample of at most 4,000 of them, self-pairs excluded
                                                                               H: [L + 1, n_tok, D]
    cone_axis(X)             = PC1 of the centred rows of X (scikit-learn PCA and its sign
                               convention: the largest |coefficient| is positive)   → [D], ‖·‖ = 1
    mean_direction(X)        = x̄ / ‖x̄‖, x̄ = (1/n) Σ_i x_i                      → [D]
    axis_scores(X, a)        = (x_i − x̄) · a, the PCA score of each row on a    → [n]
    axis_cosines({m: a_m})   = |cos(a_m, a_m')| for every pair of equal width, None otherwise
    final_step_share(x)      = (x_{L−1} − x_L) / (max_l x_l − x_L): the share of the fall from the
                               peak that happens in the last step                 x: [L + 1]
    extremes(s, k), vocabulary_projection(E, a, k): the k highest and lowest scores; E a: [V]
    correlation_ratio(y, g)  = η² = Σ_k n_k (ȳ_k − ȳ)² / Σ_i (y_i − ȳ)²        y: [n], g: [n] labels
    rank_correlation(x, y)   = Spearman's ρ (scipy)                            x, y: [n]
    centred(X, μ)            = X − μ                                           (μ defaults to x̄)
    centering_removal[a][b]  = (A_b − A(X_b − μ_a)) / (A_b − A(X_b − μ_b)), A = anisotropy:
                               the share of topic b's anisotropy that topic a's mean removes,
                               relative to what b's own mean removes
    removal_share(X, μ)      = (A(X) − A(X − μ)) / (A(X) − A(X − x̄)), the building block above
    offdiagonal_mean(M)      = mean of M[a][b] over a ≠ b                       M: nested mapping
    topic_measurements(S, g) = all of the above per topic, at the final depth and at every depth

Cosines are on raw vectors (no centring, no normalisation first), as everywhere in the book; a
zero vector has no direction and raises ValueError instead of giving NaN. Nothing here mutates
its inputs. The mean-direction / PC1 distinction matters: PC1 of *centred* vectors is the
direction of largest spread around the mean, while the mean direction is where the cone points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats
from sklearn.decomposition import PCA

from ..core.geometry import cosine, unit_rows

TOKEN_SAMPLE = 4000
"""METHODS.md §3: token anisotropy uses at most this many tokens (a seeded uniform sample)."""


# --------------------------------------------------------------------------- anisotropy

def anisotropy(x: np.ndarray) -> float:
    """Mean pairwise cosine over ordered pairs i ≠ j of the rows of ``x`` ([n, D], n ≥ 2).

    Computed in O(nD) from the sum of the unit rows: Σ_{i≠j} x̂_i·x̂_j = ‖Σ_i x̂_i‖² − n.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"anisotropy needs an [n, D] array with n ≥ 2 vectors; got shape {x.shape}")
    n = len(x)
    total = unit_rows(x).sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def anisotropy_per_depth(states: np.ndarray) -> np.ndarray:
    """[L + 1]: ``anisotropy(states[l])`` at every depth of ``states`` ([L + 1, n, D])."""
    return np.array([anisotropy(layer) for layer in np.asarray(states)])


def sample_rows(n: int, size: int = TOKEN_SAMPLE, seed: int = 0) -> np.ndarray:
    """Sorted indices of a seeded uniform sample of ``size`` of ``n`` rows (all rows if n ≤ size)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def token_anisotropy_per_depth(hidden: np.ndarray, keep: np.ndarray, size: int = TOKEN_SAMPLE,
                               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token-level anisotropy at every depth: ``(values [L + 1], rows used)``.

    ``hidden`` is [L + 1, n_tokens, D] (every token of every sentence, as in
    ``activations.Activations.hidden``); ``keep`` ([n_tokens] bool) selects the tokens that
    count (word tokens, METHODS.md §0). When more than ``size`` are kept, the same seeded sample
    of ``size`` is used at every depth. A token is never paired with itself.
    """
    kept = np.flatnonzero(np.asarray(keep, dtype=bool))
    rows = kept[sample_rows(len(kept), size, seed)]
    return anisotropy_per_depth(np.asarray(hidden)[:, rows]), rows


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


# --------------------------------------------------------------------------- the cone axis

def cone_axis(x: np.ndarray) -> np.ndarray:
    """PC1 of the centred rows of ``x`` ([n, D], n ≥ 2): a unit vector [D] in scikit-learn's
    sign convention."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"the cone axis needs an [n, D] array with n ≥ 2 vectors; got shape {x.shape}")
    if np.ptp(x, axis=0).max() == 0:
        raise ValueError("the cone axis is undefined: all vectors are identical (no variance)")
    return PCA(n_components=1, svd_solver="full").fit(x).components_[0]


def explained_variance_ratio(x: np.ndarray, axis: np.ndarray) -> float:
    """Share of the total variance of the centred rows of ``x`` along the unit vector ``axis``."""
    centred_x = centred(x)
    total = float(np.sum(centred_x ** 2))
    if total == 0:
        raise ValueError("explained variance is undefined: all vectors are identical")
    return float(np.sum((centred_x @ unit_rows(axis)) ** 2) / total)


def mean_direction(x: np.ndarray) -> np.ndarray:
    """The unit vector along the mean of the rows of ``x``: where the cone points."""
    return unit_rows(np.asarray(x, dtype=np.float64).mean(axis=0), "mean vector")


def axis_scores(x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """PCA scores [n]: each centred row of ``x`` projected on the unit vector ``axis``."""
    return centred(x) @ unit_rows(axis, "axis")


def extremes(scores: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``k`` highest scores (highest first) and the ``k`` lowest (lowest first);
    ties keep input order."""
    scores = np.asarray(scores, dtype=np.float64)
    if not 1 <= k <= len(scores):
        raise ValueError(f"k must be in [1, {len(scores)}]; got {k}")
    order = np.argsort(-scores, kind="stable")
    return order[:k], np.argsort(scores, kind="stable")[:k]


def vocabulary_projection(embeddings: np.ndarray, axis: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of a word-embedding matrix ([V, D]) projected on the unit vector ``axis``:
    ``(projections [V], top k row ids, bottom k row ids)`` (raw dot products, not centred)."""
    projections = np.asarray(embeddings, dtype=np.float64) @ unit_rows(axis, "axis")
    top, bottom = extremes(projections, k)
    return projections, top, bottom


def vocabulary_ranks(projections: np.ndarray, ids: Sequence[int]) -> list[int]:
    """1-based rank from the top of each row id in ``projections`` (rank 1 = highest)."""
    projections = np.asarray(projections, dtype=np.float64)
    return [int(np.sum(projections > projections[i])) + 1 for i in ids]


def axis_cosines(axes: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """|cos| between every pair of axes (the sign of a principal axis is arbitrary); None where
    the widths differ, so the pair is not comparable."""
    return {a: {b: abs(cosine(u, v)) if len(u) == len(v) else None for b, v in axes.items()}
            for a, u in axes.items()}


def axis_family_summary(matrix: Mapping[str, Mapping[str, float | None]], family: Sequence[str],
                        outsider: str) -> dict[str, float | None]:
    """From an ``axis_cosines`` matrix: ``within_min``, the smallest |cos| between two members of
    ``family``, and ``to_outsider_max``, the largest |cos| between a member and ``outsider``;
    each None unless every model it needs is in the matrix and comparable."""
    def cell(a: str, b: str) -> float | None:
        return matrix.get(a, {}).get(b)

    within = [cell(a, b) for i, a in enumerate(family) for b in family[i + 1:]]
    across = [cell(a, outsider) for a in family]
    return {"within_min": min(within) if within and None not in within else None,
            "to_outsider_max": max(across) if across and None not in across else None}


# --------------------------------------------------------------------------- groups (topics)

def _groups(labels: Sequence[str]) -> dict[str, np.ndarray]:
    """Row indices per label, labels in order of first appearance."""
    labels = np.asarray(labels)
    names = list(dict.fromkeys(labels.tolist()))
    return {str(name): np.flatnonzero(labels == name) for name in names}


def group_anisotropy(x: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """``anisotropy`` of the rows of each label (each label needs at least 2 rows)."""
    x = np.asarray(x, dtype=np.float64)
    return {name: anisotropy(x[rows]) for name, rows in _groups(labels).items()}


def group_means(x: np.ndarray, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """The mean vector [D] of the rows of each label."""
    x = np.asarray(x, dtype=np.float64)
    return {name: x[rows].mean(axis=0) for name, rows in _groups(labels).items()}


def group_mean_cosines(x: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """cos(x̄_a, x̄_b) between the mean vectors of every pair of labels."""
    means = group_means(x, labels)
    return {a: {b: cosine(u, v) for b, v in means.items()} for a, u in means.items()}


def centred(x: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """A new array ``x − mean`` (``mean`` defaults to the mean of the rows of ``x``)."""
    x = np.asarray(x, dtype=np.float64)
    return x - (x.mean(axis=0) if mean is None else np.asarray(mean, dtype=np.float64))


def centering_removal(x: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """R[a][b]: how much of label b's anisotropy the mean of label a removes, relative to what
    b's own mean removes (R[b][b] = 1; 1 means a's centering vector works as well as b's own)."""
    x = np.asarray(x, dtype=np.float64)
    groups, means = _groups(labels), group_means(x, labels)
    return {a: {b: removal_share(x[rows], means[a], b) for b, rows in groups.items()} for a in groups}


def removal_share(x: np.ndarray, mean: np.ndarray, name: str = "vectors") -> float:
    """(A(X) − A(X − mean)) / (A(X) − A(X − x̄)): the anisotropy that centring ``x`` with
    ``mean`` removes, as a share of what centring with its own mean x̄ removes."""
    raw = anisotropy(x)
    own = raw - anisotropy(centred(x))
    if abs(own) < 1e-12:
        raise ValueError(f"{name}: centring with its own mean removes no anisotropy, so the share is undefined")
    return (raw - anisotropy(centred(x, mean))) / own


def correlation_ratio(values: np.ndarray, labels: Sequence[str]) -> float:
    """η²: the share of the variance of ``values`` explained by the label means (0 = the labels
    tell nothing, 1 = the values are constant within every label)."""
    values = np.asarray(values, dtype=np.float64)
    total = float(np.sum((values - values.mean()) ** 2))
    if total == 0:
        raise ValueError("correlation ratio is undefined for constant values")
    between = sum(len(rows) * (values[rows].mean() - values.mean()) ** 2 for rows in _groups(labels).values())
    return float(between / total)


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ between two series of the same length (scipy)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"rank correlation needs two series of equal length ≥ 3; got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rank correlation is undefined for a constant series")
    return float(stats.spearmanr(x, y).statistic)


def offdiagonal_mean(matrix: Mapping[str, Mapping[str, float]]) -> float:
    """Mean of ``matrix[a][b]`` over a ≠ b (needs at least two labels)."""
    values = [v for a, row in matrix.items() for b, v in row.items() if a != b]
    if not values:
        raise ValueError("an off-diagonal mean needs at least two labels")
    return float(np.mean(values))


def topic_measurements(states: np.ndarray, labels: Sequence[str], min_size: int = 5) -> dict | None:
    """Per-topic geometry of sentence vectors ``states`` ([L + 1, n, D]) labelled by topic.

    Only topics with at least ``min_size`` sentences take part; with fewer than two such topics
    there is nothing to compare and the result is None. Returns, at the final depth,
    ``topic_anisotropy`` {topic: A}, ``topic_mean_cosine`` and ``topic_centering_removal``
    (label × label), and at every depth the off-diagonal means ``topic_mean_cosine_offdiag``
    and ``topic_centering_removal_offdiag``, and ``corpus_mean_removal`` (the mean over topics of
    the removal achieved by the mean of all kept sentences).
    """
    labels = np.asarray(labels)
    sizes = {name: len(rows) for name, rows in _groups(labels).items()}
    kept = [name for name, size in sizes.items() if size >= min_size]
    if len(kept) < 2:
        return None
    rows = np.isin(labels, kept)
    states, labels = np.asarray(states, dtype=np.float64)[:, rows], labels[rows]
    final = states[-1]
    return {
        "topics": kept,
        "topic_sizes": {name: sizes[name] for name in kept},
        "topic_anisotropy": group_anisotropy(final, labels),
        "topic_mean_cosine": group_mean_cosines(final, labels),
        "topic_centering_removal": centering_removal(final, labels),
        "topic_mean_cosine_offdiag": np.array([offdiagonal_mean(group_mean_cosines(x, labels)) for x in states]),
        "topic_centering_removal_offdiag": np.array([offdiagonal_mean(centering_removal(x, labels)) for x in states]),
        "corpus_mean_removal": np.array([_corpus_mean_removal(x, labels) for x in states]),
    }


def _corpus_mean_removal(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean over labels b of (A_b − A(X_b − x̄)) / (A_b − A(X_b − μ_b)), x̄ the mean of all rows."""
    overall = x.mean(axis=0)
    return float(np.mean([removal_share(x[rows], overall, name) for name, rows in _groups(labels).items()]))
