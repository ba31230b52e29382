"""Is a centering vector corpus-specific? Per-topic geometry of sentence vectors (chapter 3).

With A the anisotropy (mean pairwise cosine, ``geometry.mean_pairwise_cosine``), X_b the vectors
of topic b and μ_b their mean:

    group_anisotropy(X, g)[b]   = A(X_b)
    group_mean_cosines(X, g)    = cos(μ_a, μ_b) for every pair of topics
    centred_anisotropy(X, M)    = [A(X − μ) for μ in the rows of M], in one pass:
                                  (‖Σ_i u_i‖² − n) / (n(n − 1)) with u_i = (x_i − μ) / ‖x_i − μ‖
                                  (centering_removal: the same sums from the Gram matrix X Xᵀ)
    removal_share(X, μ)         = (A(X) − A(X − μ)) / (A(X) − A(X − x̄)): the anisotropy centring
                                  with μ removes, as a share of what X's own mean x̄ removes
    centering_removal(X, g)     = R[a][b] = removal_share(X_b, μ_a): 1 when a's mean serves b as
                                  well as b's own, 0 when it removes nothing, < 0 when it makes b
                                  *more* anisotropic
    offdiagonal_mean(M)         = mean of M[a][b] over a ≠ b
    column_offdiagonal_means(M) = for each b, the mean of M[a][b] over a ≠ b: per-topic values
                                  whose mean is offdiagonal_mean(M) (each column has K − 1 cells)

:func:`topic_measurements` is the study function; its keys join chapter 3's metrics dict:

    topics [names], topic_sizes {topic: n}        the topics with at least ``min_size`` sentences
    topic_anisotropy {topic: A}                   at the final depth
    topic_mean_cosine, topic_centering_removal    {topic: {topic: value}}, at the final depth
    topic_mean_cosine_offdiag [L + 1]             offdiagonal_mean of topic_mean_cosine, per depth
    topic_centering_removal_offdiag [L + 1]       offdiagonal_mean of R, per depth
    corpus_mean_removal [L + 1]                   mean over topics b of removal_share(X_b, mean of all)
    topic_centering_removal_offdiag_permutations [P]   the final depth's offdiagonal_mean of R with
                                                  the topic labels shuffled (seeded, groups of the
                                                  same sizes): the permutation distribution of what
                                                  groups with no topic give
    per_unit {topic_centering_removal_offdiag: [K, L + 1]}   column_offdiagonal_means per depth, one
                                                  row per topic (unit: topics)

All but ``topics`` and ``topic_sizes`` are None when fewer than two topics qualify (a corpus with
one topic, such as SNLI, has nothing to compare), and ``not_measured`` {key: why} says so (the
claims that read them are *not measured*, for that reason).

**How much of a pair's cosine is the shared direction** (:func:`shared_direction`). With
û_s = m(s) / ‖m(s)‖ the unit vectors of one depth and μ = (1/N) Σ_s û_s their mean, write
û_s = μ + û'_s. Then, for every pair,

    cos(m(s), m(t)) = û_s · û_t = [‖μ‖² + μ·û'_s + μ·û'_t] + û'_s · û'_t
                    =      shared part                   + specific part

(the shared part is μ·û_s + μ·û_t − ‖μ‖²; the specific part is what the cosine of the centred
vectors starts from). The **shared share** of a set of pairs is Σ shared / Σ cos over those pairs
(a ratio of means, never a mean of ratios). Over all pairs s ≠ t of the sample ("random pairs")
Σ_s û'_s = 0 gives it exactly: the shared parts average ‖μ‖², the cosines the anisotropy
A = (N‖μ‖² − 1) / (N − 1), so the share is ‖μ‖² / A, a little above 1 (the specific parts of
unrelated pairs average −(1 − ‖μ‖²) / (N − 1) < 0). Over same-topic pairs ("related pairs") the
specific part is the semantic signal the post calls "a small perturbation on top"; with topics of
equal size their shared parts average ‖μ‖² too, so all that sets related pairs apart is specific.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..core.geometry import centred, cosine, label_rows, mean_pair_dot, pair_mean, unit_rows
from ..core.geometry import mean_pairwise_cosine as anisotropy
from .anisotropy import PERMUTATIONS  # one count of shuffles for every permutation null

TOPIC_KEYS = ("topic_anisotropy", "topic_mean_cosine", "topic_centering_removal", "topic_mean_cosine_offdiag",
              "topic_centering_removal_offdiag", "corpus_mean_removal", "topic_centering_removal_offdiag_permutations")
"""The keys that need at least two topics."""




def group_anisotropy(x: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """``anisotropy`` of the rows of each label (each label needs at least 2 rows)."""
    x = np.asarray(x, dtype=np.float64)
    return {name: anisotropy(x[rows]) for name, rows in label_rows(labels).items()}


def group_means(x: np.ndarray, labels: Sequence[str]) -> dict[str, np.ndarray]:
    """The mean vector [D] of the rows of each label."""
    x = np.asarray(x, dtype=np.float64)
    return {name: x[rows].mean(axis=0) for name, rows in label_rows(labels).items()}


def group_mean_cosines(x: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """cos(x̄_a, x̄_b) between the mean vectors of every pair of labels."""
    means = group_means(x, labels)
    return {a: {b: cosine(u, v) for b, v in means.items()} for a, u in means.items()}


def centred_anisotropy(x: np.ndarray, means: np.ndarray) -> np.ndarray:
    """[K]: A(X − μ_k) for each row μ_k of ``means`` [K, D], ``x`` [n, D] with n ≥ 2."""
    shifted = np.asarray(x, dtype=np.float64)[None] - np.asarray(means, dtype=np.float64)[:, None]
    return mean_pair_dot(unit_rows(shifted, "centred vectors").sum(axis=1), shifted.shape[1])


def removal_shares(x: np.ndarray, means: Mapping[str, np.ndarray], name: str = "vectors") -> dict[str, float]:
    """(A(X) − A(X − μ)) / (A(X) − A(X − x̄)) for each of several ``means``: the anisotropy that
    centring ``x`` with μ removes, as a share of what centring with its own mean x̄ removes."""
    x = np.asarray(x, dtype=np.float64)
    raw = anisotropy(x)
    own = raw - anisotropy(centred(x))
    if abs(own) < 1e-12:
        raise ValueError(f"{name}: centring with its own mean removes no anisotropy, so the share is undefined")
    removed = raw - centred_anisotropy(x, np.stack(list(means.values())))
    return {key: float(value) for key, value in zip(means, removed / own)}


def removal_share(x: np.ndarray, mean: np.ndarray, name: str = "vectors") -> float:
    """:func:`removal_shares` for one ``mean``."""
    return removal_shares(x, {name: mean}, name)[name]


def centering_removal(x: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """R[a][b]: how much of label b's anisotropy the mean of label a removes, relative to what
    b's own mean removes (R[b][b] = 1; 1 means a's centering vector works as well as b's own),
    from the Gram matrix of ``x`` (:func:`removal_matrix`)."""
    x = np.asarray(x, dtype=np.float64)
    groups = label_rows(labels)
    shares = removal_matrix(x @ x.T, list(groups.values()))
    names = list(groups)
    return {a: {b: float(shares[i, j]) for j, b in enumerate(names)} for i, a in enumerate(names)}


def removal_matrix(gram: np.ndarray, groups: Sequence[np.ndarray]) -> np.ndarray:
    """R [K, K] (:func:`centering_removal`) from the Gram matrix G = X Xᵀ [N, N] and the rows of
    each of K labels. With g_ia = x_i · μ_a, every dot product of centred vectors is
    (x_i − μ_a) · (x_j − μ_a) = G_ij − g_ia − g_ja + ‖μ_a‖², so with w_ia = 1 / ‖x_i − μ_a‖,

        ‖Σ_{i∈b} u_i‖² = wᵀ G_bb w − 2 (Σ_{i∈b} w_ia)(Σ_{i∈b} w_ia g_ia) + (Σ_{i∈b} w_ia)² ‖μ_a‖²

    and A(X_b − μ_a) = (‖Σ_{i∈b} u_i‖² − n_b) / (n_b(n_b − 1)). Only G's diagonal blocks are
    read, so a relabelling (:func:`permuted_removal`) costs O(N² K), not O(N K² D)."""
    n = np.array([len(rows) for rows in groups], dtype=np.float64)
    if np.any(n < 2):
        raise ValueError("centering removal needs at least 2 rows of every label")
    member = np.zeros((len(groups), len(gram)))
    for k, rows in enumerate(groups):
        member[k, rows] = 1.0 / len(rows)
    g = np.hstack([gram @ member.T, np.zeros((len(gram), 1))])  # [N, K + 1]; the last mean: 0, X itself
    norm2 = np.append(np.einsum("an,na->a", member, g[:, :-1]), 0.0)  # ‖μ_a‖²
    squares = np.diagonal(gram)[:, None] - 2 * g + norm2  # ‖x_i − μ_a‖²
    if np.any(squares <= 1e-12 * np.max(np.diagonal(gram))):  # zero but for the Gram form's rounding
        raise ValueError("centred vectors: cosine is undefined for a zero vector")
    w = 1 / np.sqrt(squares)
    totals = np.empty((len(groups) + 1, len(groups)))  # ‖Σ_{i∈b} u_i‖², [K + 1, K]
    for b, rows in enumerate(groups):
        wb, s1 = w[rows], w[rows].sum(axis=0)
        quadratic = np.einsum("ia,ij,ja->a", wb, gram[np.ix_(rows, rows)], wb)
        totals[:, b] = quadratic - 2 * s1 * (wb * g[rows]).sum(axis=0) + s1 ** 2 * norm2
    centred_a = (totals - n) / (n * (n - 1))  # A(X_b − μ_a); the last row: A(X_b)
    raw, own = centred_a[-1], np.diagonal(centred_a[:-1])
    if np.any(np.abs(raw - own) < 1e-12):
        raise ValueError("a label's own mean removes no anisotropy, so the share is undefined")
    return (raw[None] - centred_a[:-1]) / (raw - own)[None]


def offdiagonal_mean(matrix: Mapping[str, Mapping[str, float]]) -> float:
    """Mean of ``matrix[a][b]`` over a ≠ b (needs at least two labels)."""
    values = [v for a, row in matrix.items() for b, v in row.items() if a != b]
    if not values:
        raise ValueError("an off-diagonal mean needs at least two labels")
    return float(np.mean(values))


def column_offdiagonal_means(matrix: Mapping[str, Mapping[str, float]]) -> np.ndarray:
    """[K]: for each column b (in the matrix's order), the mean of ``matrix[a][b]`` over a ≠ b."""
    columns = list(matrix)
    return np.array([np.mean([matrix[a][b] for a in columns if a != b]) for b in columns])


def corpus_mean_removal(x: np.ndarray, labels: Sequence[str]) -> float:
    """Mean over labels b of removal_share(X_b, x̄), x̄ the mean of all rows of ``x``."""
    x = np.asarray(x, dtype=np.float64)
    overall = x.mean(axis=0)
    return float(np.mean([removal_share(x[rows], overall, name) for name, rows in label_rows(labels).items()]))


def permuted_removal(x: np.ndarray, labels: Sequence[str], permutations: int = PERMUTATIONS,
                     seed: int = 0) -> np.ndarray:
    """[P]: offdiagonal_mean(centering_removal(x, shuffled labels)) for ``permutations`` seeded
    shuffles: the permutation distribution of the centering test (groups of the topics' sizes
    with no topic in common)."""
    rng = np.random.default_rng(seed)
    labels, x = np.asarray(labels), np.asarray(x, dtype=np.float64)
    gram = x @ x.T
    return np.array([pair_mean(removal_matrix(gram, list(label_rows(rng.permutation(labels)).values())))
                     for _ in range(permutations)])


def topic_measurements(states: np.ndarray, labels: Sequence[str], min_size: int = 5, seed: int = 0,
                       permutations: int = PERMUTATIONS) -> dict:
    """Per-topic geometry of sentence vectors ``states`` ([L + 1, n, D]) labelled by topic, on the
    topics with at least ``min_size`` sentences, with the final depth's centering test under
    ``permutations`` shuffles of the labels drawn from a generator seeded by ``seed`` (the keys
    are in the module docstring)."""
    labels = np.asarray(labels)
    sizes = {name: len(rows) for name, rows in label_rows(labels).items()}
    kept = [name for name, size in sizes.items() if size >= min_size]
    result = {"topics": kept, "topic_sizes": {name: sizes[name] for name in kept}}
    if len(kept) < 2:
        why = f"fewer than two topics have {min_size} sentences or more (sentences per topic: {sizes})"
        return {**result, **dict.fromkeys(TOPIC_KEYS), "not_measured": dict.fromkeys(TOPIC_KEYS, why)}
    rows = np.isin(labels, kept)
    states, labels = np.asarray(states, dtype=np.float64)[:, rows], labels[rows]
    removal = [centering_removal(x, labels) for x in states]
    return {
        **result,
        "topic_anisotropy": group_anisotropy(states[-1], labels),
        "topic_mean_cosine": group_mean_cosines(states[-1], labels),
        "topic_centering_removal": removal[-1],
        "topic_mean_cosine_offdiag": np.array([offdiagonal_mean(group_mean_cosines(x, labels)) for x in states]),
        "topic_centering_removal_offdiag": np.array([offdiagonal_mean(r) for r in removal]),
        "corpus_mean_removal": np.array([corpus_mean_removal(x, labels) for x in states]),
        "topic_centering_removal_offdiag_permutations": permuted_removal(states[-1], labels, permutations, seed),
        "per_unit": {"topic_centering_removal_offdiag":
                     np.stack([column_offdiagonal_means(r) for r in removal], axis=1)},
    }


def shared_direction(states: np.ndarray, labels: Sequence[str]) -> dict:
    """The shared direction's part of each pair's cosine at every depth of ``states`` ([L + 1, N, D],
    labelled by topic), with μ the mean unit vector of the N rows (module docstring):

        shared_direction {pairs: {cosine, shared, specific, share} [L + 1]}   means over the pairs
            of ``random`` (all s ≠ t) and ``related`` (same label) of cos, the shared part, the
            specific part, and shared share Σ shared / Σ cos
        per_unit {shared_direction.related.cosine, shared_direction.related.shared} [N, N, L + 1]
            the kernels of the related pairs (0 elsewhere), whose ratio of U-statistics is the
            related share; μ is held at its value on all N sentences in a resample

    ``related`` is None, and ``not_measured`` says why, with fewer than two labels or no label of
    two rows (nothing to relate)."""
    unit = unit_rows(np.asarray(states, dtype=np.float64))             # [L + 1, N, D]
    mean = unit.mean(axis=1)                                             # μ per depth [L + 1, D]
    cosines = np.einsum("lsd,ltd->stl", unit, unit)                      # [N, N, L + 1]
    along = np.einsum("lsd,ld->sl", unit, mean)                          # μ · û_s [N, L + 1]
    shared = along[:, None] + along[None] - np.einsum("ld,ld->l", mean, mean)
    labels = np.asarray(labels)
    n = len(labels)
    others = ~np.eye(n, dtype=bool)
    pairs = {"random": others, "related": (labels[:, None] == labels[None]) & others}
    found = {name: _shared_parts(cosines, shared, mask) for name, mask in pairs.items()}
    if len(set(labels.tolist())) < 2 or not pairs["related"].any():
        why = f"the shared direction of related pairs needs two topics or more, one of them with 2 sentences " \
              f"(labels: {sorted(set(labels.tolist()))})"
        return {"shared_direction": {**found, "related": None}, "not_measured": {"shared_direction.related.share": why}}
    keep = pairs["related"][:, :, None]
    return {"shared_direction": found,
            "per_unit": {"shared_direction.related.cosine": np.where(keep, cosines, 0.0),
                         "shared_direction.related.shared": np.where(keep, shared, 0.0)}}


def _shared_parts(cosines: np.ndarray, shared: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Means over the pairs of ``mask`` [N, N] of the cosine, its shared and specific parts, and
    the shared share (ratio of the means)."""
    cos, part = cosines[mask].mean(axis=0), shared[mask].mean(axis=0)
    return {"cosine": cos, "shared": part, "specific": cos - part, "share": part / cos}
