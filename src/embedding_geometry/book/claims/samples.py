"""A claim's statistic as a function of weighted per-unit values: what a resample recomputes.

A chapter stores what each sampling unit contributes beside its metric, in
``metrics["per_unit"][key]``: [n, …] (a mean over axis 0 is the metric), [n, n, …] (a pairwise
kernel), [S, n, …] or [S, n, n, …] (one per seed). The ledger's ``samples`` says how the statistic
is built from them (:func:`find`): ``key`` or ``{path: a.b}`` a mean; ``[num, den]`` or
``{numerator, denominator}`` a ratio of means; ``{minuend, subtrahend}`` a difference on the same
units; ``{pairwise: key}`` the U-statistic Σ_{i≠j} c_i c_j K_ij / Σ_{i≠j} c_i c_j; ``{seeds: key}``
and ``{seeds: {pairwise: key}}`` the same over seeds, seeds and units resampled together;
``{correlation: {x, y, xx, yy, xy}}`` the mean over dimensions of Pearson's r from per-unit moments.

A resample is a weight per unit (and per seed), w = c / n with c multinomial counts
(``core.hierarchical.unit_weights``); every statistic is a function of weighted means, so B
resamples are a few matrix products. The jackknife uses weights (1 − e_i) / (n − 1).

**BCa** (Efron 1987): z₀ = Φ⁻¹(G(θ̂)), G the share of resamples below the point (ties half), and
a = Σ d³ / (6 (Σ d²)^{3/2}), d the jackknife values' deviations from their mean; the interval takes
the percentiles α_i = Φ(z₀ + (z₀ + z_i) / (1 − a (z₀ + z_i))). Its p inverts it: with g = G(t) and
w = Φ⁻¹(g) − z₀, p = Φ(w / (1 + a w) − z₀), with g's Monte Carlo error √(g (1 − g) / B) carried
through the same map.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scipy import stats

from ...core.hierarchical import unit_weights

# --------------------------------------------------------------------------- statistics of weighted means

class Statistic:
    """A statistic of weighted per-unit values on ``n_units`` units (and ``n_seeds`` seeds, None
    without): ``values(w, v)`` for unit weights w [B, n] (rows sum to 1) and seed weights v [B, S]
    (None without seeds) gives [B, …]."""

    source: str = ""
    n_units: int
    n_seeds: int | None = None

    def linear(self) -> np.ndarray | None:
        """Per-unit values [n, …] whose plain mean is the statistic, when it is a mean (or a
        difference of means on the same units); else None."""
        return None

    def unit_means(self) -> np.ndarray | None:
        """Per-unit values [n, …] whose mean is the statistic (a seeded mean: over seeds), else None."""
        return self.linear()

    def per_seed(self) -> np.ndarray:
        """[S, …]: the statistic of each seed alone, on every unit (a statistic with seeds)."""
        return self.values(np.full((self.n_seeds, self.n_units), 1.0 / self.n_units), np.eye(self.n_seeds))

    def reduced(self, reduce) -> "Statistic | None":
        """The statistic of the reduced data, when a linear ``reduce`` of its series (one fixed
        depth, or a fixed mix of depths) commutes with it: reduce(U_K(w)) = U_{reduce(K)}(w) for a
        kernel, so a resample takes one matrix product instead of one per depth. None otherwise."""
        return None

    def point(self) -> np.ndarray:
        """The statistic on every unit (and seed) once: what the metric must equal."""
        v = None if self.n_seeds is None else np.full((1, self.n_seeds), 1.0 / self.n_seeds)
        return self.values(np.full((1, self.n_units), 1.0 / self.n_units), v)[0]


@dataclass(frozen=True)
class Units(Statistic):
    """Per-unit values X [n, …] (the statistic is their mean) or, ``pairwise``, a kernel K [n, n, …]
    (its U-statistic, :func:`pairwise_values`); ``seeded``, one of them per seed, [S, …]: the mean
    over seeds, seeds and units resampled together."""

    data: np.ndarray
    source: str = ""
    pairwise: bool = False
    seeded: bool = False

    @property
    def n_units(self) -> int:
        return int(self.data.shape[1 if self.seeded else 0])

    @property
    def n_seeds(self) -> int | None:
        return int(self.data.shape[0]) if self.seeded else None

    def values(self, w, v=None):
        if self.seeded and v is None:  # the jackknife keeps every seed
            v = np.full((len(w), self.n_seeds), 1.0 / self.n_seeds)
        if self.pairwise and self.seeded:
            return np.einsum("bs,sb...->b...", v, np.stack([pairwise_values(kernel, w) for kernel in self.data]))
        if self.pairwise:
            return pairwise_values(self.data, w)
        if self.seeded:
            flat = self.data.reshape(self.n_seeds, self.n_units, -1)
            return np.einsum("bs,snk,bn->bk", v, flat, w, optimize=True).reshape((len(w), *self.data.shape[2:]))
        return (w @ self.data.reshape(self.n_units, -1)).reshape((len(w), *self.data.shape[1:]))

    def linear(self):
        return None if self.pairwise or self.seeded else self.data

    def reduced(self, reduce):
        if not self.pairwise or self.data.ndim != 3 + self.seeded:  # a kernel with one series axis
            return None
        flat = np.asarray(reduce(self.data.reshape(-1, self.data.shape[-1])), dtype=float)
        return Units(flat.reshape(self.data.shape[:-1]), self.source, self.pairwise, self.seeded)

    def unit_means(self):
        return self.data.mean(axis=0) if self.seeded and not self.pairwise else self.linear()


def pairwise_values(kernel: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[B, …]: Σ_{i≠j} w_i w_j K_ij / (1 − Σ_i w_i²) for each row of weights w [B, n] (rows sum
    to 1) and a kernel K [n, n, …]: the U-statistic of the resample, its diagonal left out (a unit
    drawn twice is not paired with itself). One matrix product per trailing entry of K (a BLAS
    product, far faster than one einsum)."""
    n = kernel.shape[0]
    flat = kernel.reshape(n, n, -1)
    diagonal = np.einsum("iik->ik", flat)
    pairs = np.stack([np.einsum("bj,bj->b", w @ flat[:, :, k], w) for k in range(flat.shape[2])], axis=1)
    pairs -= (w ** 2) @ diagonal
    weight = 1.0 - np.sum(w ** 2, axis=1, keepdims=True)
    return (pairs / np.where(weight > 0, weight, np.nan)).reshape((len(w), *kernel.shape[2:]))


@dataclass(frozen=True)
class Paired(Statistic):
    """Two statistics on the same units, drawn alike (paired): their ratio (``op`` "÷": the
    resampled B over the resampled W, never a mean of ratios) or their difference ("−")."""

    first: Statistic
    second: Statistic
    op: str

    @property
    def n_units(self):
        return self.first.n_units

    @property
    def n_seeds(self):
        return self.first.n_seeds or self.second.n_seeds

    @property
    def source(self):
        return f"{self.first.source} {self.op} {self.second.source}"

    def values(self, w, v=None):
        a, b = self.first.values(w, v), self.second.values(w, v)
        return a / b if self.op == "÷" else a - b

    def linear(self):
        a, b = self.first.linear(), self.second.linear()
        return None if self.op == "÷" or a is None or b is None else a - b

    def reduced(self, reduce):
        a, b = self.first.reduced(reduce), self.second.reduced(reduce)
        return None if self.op == "÷" or a is None or b is None else Paired(a, b, self.op)


ROW_BLOCK = 256
"""Resamples :class:`Correlation` computes at a time."""


@dataclass(frozen=True)
class Correlation(Statistic):
    """The mean over dimensions of Pearson's r between x and y across units, from the per-unit
    moments x, y, x², y², xy [n, D]: r_d = cov / √(var_x var_y), each a function of weighted means."""

    moments: Mapping[str, np.ndarray]
    source: str = ""

    @property
    def n_units(self):
        return int(self.moments["x"].shape[0])

    def values(self, w, v=None):
        """[B]: the weighted means of every resample at once, then r and its mean ``ROW_BLOCK``
        resamples at a time. Those steps are row by row, so the values are those of all rows at
        once, whose [B, D] temporaries would not stay in the processor's cache (four times slower
        at B = 20,000, D = 768)."""
        m = {name: w @ array for name, array in self.moments.items()}
        return np.concatenate([_mean_r({name: mean[start:start + ROW_BLOCK] for name, mean in m.items()})
                               for start in range(0, len(w), ROW_BLOCK)])


def _mean_r(m: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each row's mean over dimensions of r = cov / √(var_x var_y), from its weighted means
    ``m`` (x, y, xx, yy, xy: [b, D]); a dimension with no variance is left out."""
    cov = m["xy"] - m["x"] * m["y"]
    var = (m["xx"] - m["x"] ** 2) * (m["yy"] - m["y"] ** 2)
    r = cov / np.sqrt(np.where(var > 0, var, np.nan))
    return np.nanmean(r, axis=-1)


# --------------------------------------------------------------------------- finding a claim's samples

def _array(metrics: Mapping[str, Any], spec: Any) -> tuple[np.ndarray | None, str]:
    """The array ``spec`` names: a key of ``metrics["per_unit"]`` (flat, or a dotted path in it),
    or ``{path: "a.b"}``, a key path from the top of ``metrics``."""
    if isinstance(spec, Mapping):
        where, path, value = "metrics", str(spec["path"]), metrics
    else:
        where, path, value = "metrics['per_unit']", str(spec), metrics.get("per_unit")
        if isinstance(value, Mapping) and path in value:
            return _numeric(value[path]), f"{where}['{path}']"
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None, f"{where} has no '{path}'"
        value = value[part]
    return _numeric(value), f"{where} path '{path}'"


def _numeric(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


class Missing(str):
    """Why a claim has no samples (a str, so a caller can show it)."""


def find(metrics: Mapping[str, Any], spec: Any) -> Statistic | Missing:
    """The :class:`Statistic` that ``spec`` names (module docstring), or :class:`Missing`."""
    if isinstance(spec, Mapping):
        if "minuend" in spec:
            return _pair("−", find(metrics, spec["minuend"]), find(metrics, spec["subtrahend"]))
        if "numerator" in spec:
            return _pair("÷", find(metrics, spec["numerator"]), find(metrics, spec["denominator"]))
        if "pairwise" in spec:
            return _leaf(metrics, spec["pairwise"], square=True)
        if "seeds" in spec:
            if isinstance(spec["seeds"], Mapping) and "pairwise" in spec["seeds"]:
                return _leaf(metrics, spec["seeds"]["pairwise"], square=True, seeds=True)
            return _leaf(metrics, spec["seeds"], seeds=True)
        if "correlation" in spec:
            found = {name: _array(metrics, key) for name, key in spec["correlation"].items()}
            missing = [where for array, where in found.values() if array is None]
            if missing:
                return Missing(f"no per-unit samples: {missing[0]}")
            moments = {name: array for name, (array, _) in found.items()}
            if {"x", "y"} <= set(moments):
                x, y = moments["x"], moments["y"]
                moments = {"xx": x * x, "yy": y * y, "xy": x * y, **moments}
            return Correlation(moments, "correlation moments")
    if isinstance(spec, (list, tuple)):
        return _pair("÷", find(metrics, spec[0]), find(metrics, spec[1]))
    return _leaf(metrics, spec)


def _leaf(metrics, spec, square: bool = False, seeds: bool = False) -> Statistic | Missing:
    array, where = _array(metrics, spec)
    if array is None:
        return Missing(f"no per-unit samples: {where}" if "has no" in where
                       else f"per-unit samples at {where} are not numbers")
    axis = 1 if seeds else 0
    if array.ndim <= axis or array.shape[axis] < 2:
        return Missing(f"per-unit samples at {where} hold fewer than 2 units")
    if square and (array.ndim < axis + 2 or array.shape[axis] != array.shape[axis + 1]):
        shape = "[S, n, n, …]" if seeds else "[n, n, …]"
        return Missing(f"a pairwise kernel at {where} must be {shape}; got shape {array.shape}")
    return Units(array, where, pairwise=square, seeded=seeds)


def _pair(op: str, a: Statistic | Missing, b: Statistic | Missing) -> Statistic | Missing:
    if isinstance(a, Missing) or isinstance(b, Missing):
        return a if isinstance(a, Missing) else b
    if a.n_units != b.n_units:
        return Missing(f"{a.source} has {a.n_units} units, {b.source} {b.n_units}: not the same units")
    if a.n_seeds and b.n_seeds and a.n_seeds != b.n_seeds:
        return Missing(f"{a.source} has {a.n_seeds} seeds, {b.source} {b.n_seeds}")
    return Paired(a, b, op)


# --------------------------------------------------------------------------- resampling: the bootstrap and BCa

LEVEL = 0.95
_CHUNK_CELLS = 2 ** 22  # resamples × units per chunk of weights: 4 M weights, 32 MiB as float64


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
