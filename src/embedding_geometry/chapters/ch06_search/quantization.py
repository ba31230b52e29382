"""Compressing embeddings: the article's int8, binary codes and product quantization (faiss).

For N embeddings X ([N, d], float32 = 32 bits a number) and a quantizer with reconstruction X̂:

    int8 (article)   s = 95th percentile of |X| (one scale for the whole set),
                     q = clip(X / s · 127, −128, 127) cast to int8 (the cast truncates toward 0),
                     X̂ = q · s / 127;  8 bits a dimension
    binary           b = [X > 0],  X̂ = 2b − 1 ∈ {−1, +1}^d;  1 bit a dimension
    PQ (faiss)       X split into m sub-vectors of d/m dimensions, each replaced by the nearest of
                     2^nbits k-means centroids trained on X;  m · nbits bits a vector

    compression_ratio   = 32 d / (bits a vector)             int8 4, binary 32, PQ 32d / (m · nbits)
    reconstruction_error = mean_i (1 − cos(x_i, x̂_i))
    mean_cosine_error    = mean_{i<j} |cos(x_i, x_j) − cos(x̂_i, x̂_j)|   (the "cosine similarity
                           error" of the article, in cosine units: 0.02 = "2 %"), over the pairs
                           of a seeded sample of the vectors (the pair sample: a pairwise statistic
                           is resampled as one, its kernel [n, n] kept small)
    recall_at_k          = mean_i |N_k(x_i) ∩ N̂_k(x̂_i)| / k, N_k the k nearest other vectors by
                           cosine (self excluded), N̂_k the same among reconstructions

Queries are quantized like the documents (symmetric search on reconstructions). The int8
scale is a single number and is not counted in the bits.

Non-uniformity over the labels (topics) of the per-vector reconstruction errors e_i: the
Kruskal–Wallis p, the ratio of the largest to the smallest topic mean, and η² = Σ_i (ē_{g(i)} − ē)²
/ Σ_i (e_i − ē)², the share of their variance the topics explain, against its permuted-labels
null: the η² of P shuffles of the topics (a distribution, ``permuted_eta2_draws``; its mean is
about (K − 1)/(N − 1)) (``anisotropy.correlation_ratio_parts``).

Metrics: ``quantization_study`` → {quantization, per_unit}: quantization {int8, binary,
pq_article, pq_8x, pq_16x: each ``evaluate`` (bits_per_vector, compression_ratio,
mean_cosine_error, reconstruction_error, recall_at_10)}; int8 adds mse, clipped_fraction and
``group_nonuniformity`` of its reconstruction errors over the labels (kruskal_p, max_over_min,
topic_eta2, topic_eta2_permuted (the mean of the shuffles), topic_eta2_null [P] (the shuffles'
η²: the permutation distribution)); each PQ adds m, its number of sub-vectors (pq_article: the
article's default; pq_8x, pq_16x: ``pq_subvectors`` for 8× and 16×); n_pairs, the size of the pair
sample. per_unit: "quantization.<name>.mean_cosine_error", the kernel [n, n] of |error| over pairs
of the pair sample (``cosine_error_kernel``; its U-statistic is the metric), and, per sentence,
"quantization.int8.topic_eta2.between" and ".total" (η²'s per-sentence parts, a ratio of means).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ...core.geometry import cosine_matrix, pair_cosine
from ...studies.anisotropy import correlation_ratio_parts, permuted_eta2_draws
from ...studies.isotropy import stored

Method = Literal["int8", "binary", "pq"]
CLAIMED = ("int8", "pq_8x", "pq_16x")
"""The quantizers whose cosine error the article states (their kernels go to per_unit)."""
METHODS = ("int8", "binary", "pq")


# --------------------------------------------------------------------------- quantizers


def int8_article(x: np.ndarray, percentile: float = 95.0) -> dict[str, object]:
    """The article's ``scalar_quantize``: codes [N, d] int8, the scale, the reconstruction and
    its mean squared error, as the article's code computes them."""
    x = np.asarray(x, dtype=np.float32)
    scale = float(np.percentile(np.abs(x), percentile))
    if scale == 0:
        raise ValueError("int8 quantization: the 95th percentile of |x| is 0, so the scale is undefined")
    codes = np.clip(x / scale * 127, -128, 127).astype(np.int8)
    restored = codes.astype(np.float32) * scale / 127
    return {
        "codes": codes,
        "scale": scale,
        "reconstruction": restored,
        "mse": float(np.mean((x - restored) ** 2)),
        "clipped_fraction": float(np.mean(np.abs(x) > scale)),
    }


def binary(x: np.ndarray) -> dict[str, object]:
    """Sign bits: codes [N, d] bool (x > 0) and the reconstruction 2b − 1."""
    codes = np.asarray(x) > 0
    return {"codes": codes, "reconstruction": codes.astype(np.float32) * 2 - 1}


def product_quantization(x: np.ndarray, m: int, nbits: int = 8, seed: int = 0) -> dict[str, object]:
    """faiss ProductQuantizer with ``m`` sub-vectors of ``nbits`` bits, trained on ``x`` itself
    (seeded k-means; faiss recommends 39 training vectors a centroid, a small corpus has fewer):
    codes [N, m · nbits / 8] uint8 and the decoded reconstruction."""
    import faiss

    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    n, d = x.shape
    if m < 1 or d % m:
        raise ValueError(f"PQ needs a number of sub-vectors m that divides d = {d}; got m = {m}")
    if n < 2**nbits:
        raise ValueError(
            f"PQ with {nbits} bits trains {2**nbits} centroids and needs at least as many vectors; got {n}"
        )
    quantizer = faiss.ProductQuantizer(d, m, nbits)
    quantizer.cp.seed = seed
    quantizer.cp.min_points_per_centroid = 1  # silence faiss's "provide at least 39 points a centroid"
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # a small k-means; faiss's OpenMP threads spin and stall on a busy machine
    try:
        quantizer.train(x)
        codes = quantizer.compute_codes(x)
    finally:
        faiss.omp_set_num_threads(threads)
    return {"codes": codes, "reconstruction": quantizer.decode(codes)}


def bits_per_vector(method: Method, d: int, m: int | None = None, nbits: int = 8) -> int:
    """Storage of one vector: int8 8d, binary d, PQ m · nbits."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method == "pq" and m is None:
        raise ValueError("PQ storage needs m, the number of sub-vectors")
    return {"int8": 8 * d, "binary": d, "pq": (m or 0) * nbits}[method]


def compression_ratio(bits: int, d: int) -> float:
    """32 d / bits: how many times smaller than float32."""
    return 32 * d / bits


def pq_subvectors(d: int, ratio: float, nbits: int = 8) -> int:
    """The m of a PQ with ``nbits``-bit codes closest to ``ratio`` times compression among the
    divisors of d (ties: the smaller compression)."""
    divisors = [m for m in range(1, d + 1) if d % m == 0]
    return min(divisors, key=lambda m: (abs(compression_ratio(m * nbits, d) - ratio), -m))


# --------------------------------------------------------------------------- errors


def reconstruction_errors(x: np.ndarray, restored: np.ndarray) -> np.ndarray:
    """1 − cos(x_i, x̂_i) for every row → [N]."""
    return 1.0 - pair_cosine(np.asarray(x, dtype=np.float64), np.asarray(restored, dtype=np.float64))


def mean_cosine_error(x: np.ndarray, restored: np.ndarray) -> float:
    """mean over pairs i < j of |cos(x_i, x_j) − cos(x̂_i, x̂_j)|."""
    n = len(x)
    if n < 2:
        raise ValueError(f"pairwise cosine error needs at least 2 vectors; got {n}")
    upper = np.triu_indices(n, k=1)
    return float(np.mean(np.abs(cosine_matrix(x)[upper] - cosine_matrix(restored)[upper])))


def cosine_error_kernel(x: np.ndarray, restored: np.ndarray) -> np.ndarray:
    """|cos(x_i, x_j) − cos(x̂_i, x̂_j)| for every pair → [N, N] (diagonal 0): the kernel whose
    mean over pairs i ≠ j is :func:`mean_cosine_error`."""
    n = len(x)
    if n < 2:
        raise ValueError(f"pairwise cosine error needs at least 2 vectors; got {n}")
    errors = np.abs(cosine_matrix(x) - cosine_matrix(restored))
    np.fill_diagonal(errors, 0.0)
    return errors


def neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """The k nearest other rows of ``x`` by cosine, nearest first (ties: lower index) → [N, k]."""
    if not 1 <= k < len(x):
        raise ValueError(f"k must be in [1, {len(x) - 1}]; got {k}")
    sims = cosine_matrix(x)
    np.fill_diagonal(sims, -np.inf)
    return np.argsort(-sims, axis=1, kind="stable")[:, :k]


def recall_against_float(x: np.ndarray, restored: np.ndarray, k: int = 10) -> float:
    """mean_i |N_k(x_i) ∩ N̂_k(x̂_i)| / k: how many of the true k nearest neighbours the
    quantized search returns."""
    exact, approx = neighbours(x, k), neighbours(restored, k)
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(exact, approx)]))


def group_nonuniformity(errors: np.ndarray, labels, seed: int = 0) -> dict[str, object]:
    """Whether per-vector errors ([N]) differ between groups (topics): the Kruskal–Wallis p-value
    (scipy), the ratio of the largest to the smallest group mean, η² and its permuted-labels null
    (``permuted_eta2_draws``: the distribution and its mean)."""
    from scipy import stats

    errors, labels = np.asarray(errors, dtype=np.float64), np.asarray(labels)
    groups = [errors[labels == g] for g in dict.fromkeys(labels.tolist())]
    if len(groups) < 2:
        raise ValueError("non-uniformity across groups needs at least two groups")
    means = [g.mean() for g in groups]
    if min(means) <= 0:
        raise ValueError("a group has zero mean error; the max/min ratio is undefined")
    between, total = correlation_ratio_parts(errors, labels.tolist())
    null = permuted_eta2_draws(errors, labels, seed=seed)
    return {
        "kruskal_p": float(stats.kruskal(*groups).pvalue),
        "max_over_min": float(max(means) / min(means)),
        "topic_eta2": float(between.sum() / total.sum()),
        "topic_eta2_permuted": float(null.mean()),
        "topic_eta2_null": null,
    }


def evaluate(x: np.ndarray, restored: np.ndarray, bits: int, pairs: np.ndarray, k: int = 10) -> dict[str, float]:
    """compression_ratio, mean_cosine_error (over the pairs of the rows ``pairs``),
    reconstruction_error and recall_at_k (over every row) of one quantizer."""
    x = np.asarray(x, dtype=np.float64)
    return {
        "bits_per_vector": bits,
        "compression_ratio": compression_ratio(bits, x.shape[1]),
        "mean_cosine_error": mean_cosine_error(x[pairs], np.asarray(restored)[pairs]),
        "reconstruction_error": float(np.mean(reconstruction_errors(x, restored))),
        f"recall_at_{k}": recall_against_float(x, restored, k),
    }


def quantization_study(
    x: np.ndarray,
    labels,
    article_m: int,
    pairs: np.ndarray,
    seed: int = 0,
    key: str = "quantization",
    samples: bool = True,
) -> dict[str, dict]:
    """{quantization, per_unit} (see the module docstring) of the unit rows ``x`` ([N, d]);
    ``labels`` (topics) group the int8 errors, ``article_m`` is the article's PQ sub-vector
    count, ``pairs`` the rows of the pair sample (``isotropy.pair_sample``), ``seed`` seeds PQ's
    k-means and the shuffles of the topics. ``key`` renames quantization (an exercise's run),
    ``samples`` False leaves per_unit out."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[1]
    int8 = int8_article(x)
    pq_m = {"pq_article": article_m, "pq_8x": pq_subvectors(d, 8), "pq_16x": pq_subvectors(d, 16)}
    restored = {
        "int8": (int8["reconstruction"], bits_per_vector("int8", d)),
        "binary": (binary(x)["reconstruction"], bits_per_vector("binary", d)),
        **{
            name: (product_quantization(x, m, seed=seed)["reconstruction"], bits_per_vector("pq", d, m))
            for name, m in pq_m.items()
        },
    }
    found = {name: evaluate(x, r, bits, pairs) for name, (r, bits) in restored.items()}
    errors = reconstruction_errors(x, int8["reconstruction"])
    found["int8"].update(
        mse=int8["mse"], clipped_fraction=int8["clipped_fraction"], **group_nonuniformity(errors, labels, seed)
    )
    for name, m in pq_m.items():
        found[name]["m"] = m
    found["n_pairs"] = len(pairs)
    if not samples:
        return {key: found}
    per_unit = {
        f"quantization.{name}.mean_cosine_error": stored(cosine_error_kernel(x[pairs], np.asarray(r)[pairs]))
        for name, (r, _) in restored.items()
        if name in CLAIMED
    }
    per_unit.update(
        zip(
            ("quantization.int8.topic_eta2.between", "quantization.int8.topic_eta2.total"),
            correlation_ratio_parts(errors, list(labels)),
        )
    )
    return {key: found, "per_unit": per_unit}
