"""p-values: the test each design calls for, the bootstrap it may rest on, the adjustment for the
number of claims, and power (the maths in full: book/methods.md, "How a verdict is made").

A claim is decided on a directional difference D, signed so that it holds when D > 0. Each test
gives p₊ for H₀: D ≤ 0, p₋ for H₀: D ≥ 0 and a 95 % interval inside the statistic's range: the
exact sign-flip test (a mean of per-unit values, n < 20), the exact binomial test (a share of 0/1
units), the bootstrap (BCa; anything else), the share of resamples outside a location's window,
the rank among a permutation null's draws. A claim with a null must clear its bound and its null
(:func:`combine`). Each chapter decides its m_k counted claims by Benjamini–Hochberg at level
q m_k / m (:func:`adjust`), so the family's false discovery rate over a model's m claims is at most q.

**BCa** (Efron 1987): z₀ = Φ⁻¹(G(θ̂)), G the share of resamples below the point (ties half), and
a = Σ d³ / (6 (Σ d²)^{3/2}), d the jackknife values' deviations from their mean; the interval takes
the percentiles α_i = Φ(z₀ + (z₀ + z_i) / (1 − a (z₀ + z_i))). Its p inverts it: with g = G(t) and
w = Φ⁻¹(g) − z₀, p = Φ(w / (1 + a w) − z₀), with g's Monte Carlo error √(g (1 − g) / B) carried
through the same map.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ...core.hierarchical import unit_weights
from .samples import Statistic

Q = 0.05
"""The false discovery rate the book controls over each model's counted claims."""
SMALL_N = 20
"""Below this many units a mean is tested exactly (sign-flip), not by the bootstrap."""
POWER = 0.8
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
        w = unit_weights(rng, b, n)
        found = reduce(statistic.values(w, _seed_weights(rng, b, statistic)))
        if other is not None:
            found = found - reduce(other.values(w, _seed_weights(rng, b, other)))
        out.append(np.asarray(found, dtype=float))
    return np.concatenate(out)


def _seed_weights(rng: np.random.Generator, b: int, statistic: Statistic) -> np.ndarray | None:
    return None if statistic.n_seeds is None else unit_weights(rng, b, statistic.n_seeds)


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


# --------------------------------------------------------------------------- exact tests, p-values, the adjustment

@dataclass(frozen=True)
class Evidence:
    """One test of a directional difference D (module docstring)."""

    method: str  # "sign-flip", "binomial", "bootstrap (BCa)", "location", "permutation", "resamples"
    point: float  # the statistic (not D): what the interval is about
    interval: tuple[float, float]  # 95 %, of the statistic
    n: int
    p_holds: float
    p_fails: float
    mc_error: float = 0.0
    se: float | None = None  # the statistic's standard error: the detectable effect when undecided
    floor: tuple[float, float] = (0.0, 0.0)  # the smallest p₊ and p₋ this test can give at its n


def floors(least: float, sides: list[tuple[float, float]], se: float | None) -> tuple[float, float]:
    """The smallest p₊ and p₋ a test can give on ``sides`` when each one-sided p is at least
    ``least``, combined as :func:`combine` combines p-values; for a between test (two sides, a band
    of half-width h), p₊ cannot fall below Φ(−h / se), its value with the statistic at the band's
    centre: a band narrower than the statistic's noise cannot be shown to hold."""
    holds, fails = combine([(least, least)] * len(sides))
    if len(sides) == 2 and se:
        holds = max(holds, float(stats.norm.sf((sides[1][1] - sides[0][1]) / 2 / se)))
    return holds, fails


def _subset_means(x: np.ndarray) -> np.ndarray:
    """The means of the 2ⁿ − 1 non-empty subsets of ``x``."""
    n = len(x)
    masks = ((np.arange(1, 2 ** n)[:, None] >> np.arange(n)) & 1).astype(float)
    return masks @ x / masks.sum(axis=1)


def sign_flip(d: np.ndarray) -> tuple[float, float]:
    """Exact one-sided p₊, p₋ of the mean of ``d`` against 0, over all 2ⁿ sign patterns s. A
    pattern's mean reaches the observed one exactly when the units it flips, S, have
    Σ_{i∈S} d_i ≤ 0, so p₊ = (1 + #{S ≠ ∅ : mean(d_S) ≤ 0}) / 2ⁿ (and p₋ likewise): the p-values of
    ``scipy.stats.permutation_test(permutation_type="samples", n_resamples=np.inf)``
    (tests/test_claims_pvalues.py), from the subset means, 0.1 s at n = 19 where scipy takes 13 s."""
    d = np.asarray(d, dtype=float)
    means, slack = _subset_means(d), 1e-12 * max(1.0, float(np.max(np.abs(d))))  # ties, up to rounding
    total = 2 ** len(d)
    return float((1 + np.sum(means <= slack)) / total), float((1 + np.sum(means >= -slack)) / total)


def sign_flip_interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The exact interval for the centre of a symmetric distribution that inverts the sign-flip
    test (Hartigan 1969): every μ the test at 1 − ``level`` does not reject lies between the k-th
    smallest and k-th largest subset mean, k = ⌊(1 − level) / 2 · 2ⁿ⌋; inside [min x, max x]. Below
    n = 6 (k = 0) no μ is rejected, and the interval is [min x, max x]."""
    x = np.asarray(x, dtype=float)
    k = int(np.floor((1 - level) / 2 * 2 ** len(x)))
    if k == 0:
        return float(x.min()), float(x.max())
    means = np.sort(_subset_means(x))
    return float(means[k - 1]), float(means[-k])


def binomial(k: int, n: int, bound: float) -> tuple[float, float, tuple[float, float]]:
    """Exact p₊ (share > bound), p₋ (share < bound) and the Clopper–Pearson 95 % interval."""
    greater = stats.binomtest(k, n, bound, alternative="greater")
    less = stats.binomtest(k, n, bound, alternative="less")
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return float(greater.pvalue), float(less.pvalue), (float(ci.low), float(ci.high))


def share_p(against: np.ndarray, toward: np.ndarray) -> tuple[float, float]:
    """p₊ = (1 + #{draws against the claim}) / (B + 1) and p₋ = (1 + #{draws toward it}) / (B + 1):
    a resampling or a permutation p-value on each side (a permutation draw tied with the statistic
    counts on both)."""
    return (1 + int(np.sum(against))) / (len(against) + 1), (1 + int(np.sum(toward))) / (len(toward) + 1)


def combine(parts: list[tuple[float, float]]) -> tuple[float, float]:
    """p₊ and p₋ of "every part holds": the largest p₊ (intersection–union), and the smallest
    p₋ times the number of parts (Bonferroni over the ways to fail)."""
    return max(p for p, _ in parts), min(1.0, len(parts) * min(p for _, p in parts))


def two_sided(p_holds: float, p_fails: float) -> float:
    """p = min(1, 2 min(p₊, p₋)): the claim's p-value, whichever side it falls."""
    return min(1.0, 2 * min(p_holds, p_fails))


def adjust(p: list[float], chapter_size: int, family_size: int) -> list[float]:
    """Adjusted p-values: Benjamini–Hochberg within the chapter (``scipy.stats.false_discovery_control``)
    scaled by m / m_k, so that p_adj ≤ q exactly when BH at level q m_k / m rejects (module docstring).
    ``p`` holds the chapter's tested claims; ``chapter_size`` m_k counts every counted claim of the
    chapter, tested or not (an untested one is a p of 1)."""
    if not p:
        return []
    padded = np.ones(max(chapter_size, len(p)))
    padded[: len(p)] = p
    adjusted = stats.false_discovery_control(padded, method="bh")[: len(p)]
    return [float(min(1.0, x * family_size / len(padded))) for x in adjusted]


def reachable(floor: tuple[float, float], chapter_size: int, family_size: int) -> dict[str, bool]:
    """Whether a test with these floors can decide *holds* and *does not hold* at all: its smallest
    two-sided p against the most lenient threshold its chapter can give, q m_k / m (every counted
    claim of the chapter decided)."""
    best = Q * chapter_size / family_size
    return {"holds": 2 * floor[0] <= best, "does not hold": 2 * floor[1] <= best}


def threshold(decided: int, family_size: int) -> float:
    """The two-sided level at which one more claim of a chapter with ``decided`` discoveries
    would be decided: q (R + 1) / m."""
    return Q * (decided + 1) / family_size


def detectable(se: float, level: float) -> float:
    """The smallest |D| this n detects with 80 % power at two-sided ``level``: (z_{1−level/2} + z_0.8) · se."""
    return float((stats.norm.ppf(1 - level / 2) + stats.norm.ppf(POWER)) * se)
