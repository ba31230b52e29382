"""Resampling a claim's statistic over its sampling unit: the one bootstrap of the claims package.

B resamples draw each unit's weight as the counts of n draws with replacement over n (and each
seed's, for a statistic with seeds), and recompute the statistic (:mod:`.samples`) on each; the
jackknife leaves each unit out in turn with the same code.

**BCa** (Efron 1987) corrects the percentile interval for the bias z₀ = Φ⁻¹(G(θ̂)), G the share of
resamples below the point (ties counted half), and the acceleration a = Σ d³ / (6 (Σ d²)^{3/2}),
d the jackknife values' deviations from their mean. Its interval at level 1 − 2α takes the
percentiles α₁, α₂ of the resamples, α_i = Φ(z₀ + (z₀ + z_i) / (1 − a (z₀ + z_i))), and so stays
inside the range the statistic takes on resamples (never past 0 or 1 for a share).

**A BCa p-value** inverts that interval: the one-sided p for H₀: θ ≤ t is the α at which the lower
end reaches t. With g = G(t) and w = Φ⁻¹(g) − z₀, the equation above gives
z_α = w / (1 + a w) − z₀ and p = Φ(z_α). Its Monte Carlo error comes from g's,
√(g (1 − g) / B), carried through the same map (:func:`bca_p`).
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy import stats

from .samples import Statistic

UNITS = ("sentences", "pairs", "queries", "texts", "documents", "tokens", "dimensions", "topics", "keys",
         "compounds", "seeds")
RESAMPLES = 20_000
"""B: a one-sided p as small as 1 / B = 5 · 10⁻⁵ is resolved, below the smallest adjusted threshold q / m."""
LEVEL = 0.95
MIN_UNITS = 5
"""Below this many units there is no test: a claim is not tested."""
_CHUNK_CELLS = 2 ** 22  # resamples × units per chunk of weights: 4 M weights, 32 MiB as float64


def generator(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by (``seed``, a hash of ``name``): each claim gets its own stream, and
    adding a claim to a ledger changes no other claim's resamples."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def weights(rng: np.random.Generator, b: int, n: int) -> np.ndarray:
    """[b, n] bootstrap weights: counts of n draws with replacement, over n."""
    drawn = rng.integers(0, n, size=(b, n)) + n * np.arange(b)[:, None]
    return np.bincount(drawn.ravel(), minlength=b * n).reshape(b, n) / n


def bootstrap(statistic: Statistic, reduce, resamples: int, rng: np.random.Generator,
              other: Statistic | None = None) -> np.ndarray:
    """reduce(statistic) on ``resamples`` resamples of its units (and seeds): [B, …]. With ``other``
    (the same units), reduce(statistic) − reduce(other) on the same unit draws, each one's seeds
    drawn on their own: a paired difference."""
    n = statistic.n_units
    chunk = max(1, min(resamples, _CHUNK_CELLS // n))
    out = []
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        w = weights(rng, b, n)
        found = reduce(statistic.values(w, _seed_weights(rng, b, statistic)))
        if other is not None:
            found = found - reduce(other.values(w, _seed_weights(rng, b, other)))
        out.append(np.asarray(found, dtype=float))
    return np.concatenate(out)


def _seed_weights(rng: np.random.Generator, b: int, statistic: Statistic) -> np.ndarray | None:
    return None if statistic.n_seeds is None else weights(rng, b, statistic.n_seeds)


def jackknife(statistic: Statistic, reduce, other: Statistic | None = None) -> np.ndarray:
    """reduce(statistic) (− reduce(other)) with each unit left out in turn: [n, …] (seeds all kept)."""
    n = statistic.n_units
    w = (1.0 - np.eye(n)) / (n - 1)
    found = np.asarray(reduce(statistic.values(w)), dtype=float)
    return found if other is None else found - np.asarray(reduce(other.values(w)), dtype=float)


def _bias_acceleration(draws: np.ndarray, point: float, jack: np.ndarray) -> tuple[float, float]:
    """z₀ and a of BCa (module docstring)."""
    below = (np.sum(draws < point) + 0.5 * np.sum(draws == point)) / len(draws)
    z0 = float(stats.norm.ppf(np.clip(below, 1 / (len(draws) + 1), len(draws) / (len(draws) + 1))))
    d = np.mean(jack) - jack  # the caller keeps the finite draws and jackknife values
    spread = float(np.sum(d ** 2))
    return z0, float(np.sum(d ** 3) / (6 * spread ** 1.5)) if spread > 0 else 0.0


def bca_interval(draws: np.ndarray, point: float, jack: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The BCa interval at ``level`` (module docstring); the percentile interval where the
    correction breaks down (1 − a (z₀ + z) ≤ 0)."""
    z0, a = _bias_acceleration(draws, point, jack)
    z = stats.norm.ppf([(1 - level) / 2, (1 + level) / 2])
    denominator = 1 - a * (z0 + z)
    shares = stats.norm.cdf(z0 + (z0 + z) / denominator) if np.all(denominator > 0) else [(1 - level) / 2,
                                                                                          (1 + level) / 2]
    lo, hi = np.quantile(draws, shares)
    return float(lo), float(hi)


def bca_p(draws: np.ndarray, point: float, jack: np.ndarray, threshold: float = 0.0) -> tuple[float, float]:
    """The one-sided BCa p-value for H₀: θ ≤ ``threshold`` (evidence that θ > threshold), and its
    Monte Carlo standard error (module docstring). g is floored at 1 / (2B): a p below the
    resolution of B resamples reads as that resolution, not as 0."""
    z0, a = _bias_acceleration(draws, point, jack)
    b = len(draws)

    def p_of(g: float) -> float:
        w = stats.norm.ppf(np.clip(g, 0.5 / b, 1 - 0.5 / b)) - z0
        denominator = 1 + a * w
        return float(stats.norm.cdf(w / denominator - z0)) if denominator > 0 else float(g)

    g = float(np.mean(draws <= threshold))
    se = np.sqrt(max(g, 1 / b) * (1 - g) / b)
    return p_of(g), abs(p_of(g + se) - p_of(max(g - se, 0.0))) / 2
