"""Intervals over two levels of sampling: training seeds, and the units measured on each copy.

A trained model is one draw of its training (initialisation, batch order, dropout: its *seed*),
and a measurement of it averages over *units* (sentences, pairs, queries). For S seeds and U
units, ``values[s, u, …]`` is unit u measured on the copy of seed s. Every statistic here is a
function g of the mean over seeds and units, θ = g(x̄) with x̄ = (1 / S U) Σ_s Σ_u x_su: a mean
(g the identity), a ratio of means (B / W), a difference of two copies' means, or a peak located
on a mean curve. It has two sources of noise: which seeds were trained, and which units were
measured. A bootstrap over the units alone leaves the first out.

**Crossed units.** The *same* units are measured on every copy (chapter 7 measures the same
sentences on every copy). Model each value as x_su = μ + a_s + b_u + e_su (seed effect, unit
effect, the rest), so that

    Var(x̄) = σ_a² / S + σ_b² / U + σ_e² / (S U).

Each draw b reweights the two levels separately — the seeds with weights v_b (every unit kept),
the units with weights w_b (every seed kept) — and adds their deviations from the estimate θ̂:

    θ*_b = θ̂ + (g(x̄(v_b, ·)) − θ̂) + (g(x̄(·, w_b)) − θ̂),     x̄(v, w) = Σ_s Σ_u v_s w_u x_su.

The two terms carry σ_a² / S and σ_b² / U, and each carries the remainder σ_e² / (S U) once, so
the interval errs wide only when both effects vanish. Drawing the units anew *within* each seed
would treat them as nested and drop the shared unit effect b_u.

**Units** are drawn as a bootstrap: w_b = the counts of U draws with replacement, over U.

**Seeds** are few (5 to 16), and a bootstrap of S seeds cannot give a small-sample interval: its
most extreme draw is the most extreme seed, and it uses normal quantiles where Student's t
applies (at S = 5 a percentile interval covers about 85 %, and no level can be reached beyond
the range of the seeds). The seed weights are instead Gaussian multipliers with a χ² mixing,

    v_b,s = 1/S + √((S − 1) / V_b) · (g_b,s − ḡ_b) / √(S (S − 1)),   g_b,s ~ N(0, 1), V_b ~ χ²_{S−1},

which sum to 1. For a mean, θ*_b − θ̂ = Σ_s (v_b,s − 1/S) x̄_s is then distributed exactly as
(s / √S) · T with T ~ t_{S−1} and s the standard deviation of the S per-seed means (given g, the
sum is normal with variance s² / S; the mixing turns it into Student's t). So the percentile
interval of the draws is Student's t interval **at every level** — the 95 % one and the
multiplicity-adjusted 1 − 0.05/m one that decides a verdict alike — and a non-linear statistic
(a ratio, a peak) is recomputed on each draw of the whole curve x̄(v_b, ·), the peak found again
in every draw. ``tests/test_hierarchical.py`` checks the quantiles against Student's and the
coverage on simulated data with a known mean at 5 and 8 seeds.

**A paired test over seeds** (:func:`sign_flip_test`): for per-seed differences d_s between two
treatments that share each seed, the exact null distribution of their mean under "no
difference" flips each sign independently: all 2^S assignments, p = share of them whose mean is
at least as extreme as the observed one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Statistic = Callable[[np.ndarray], np.ndarray]
"""g: means [B, …] (the mean over seeds and units, one row per draw) → statistics [B, …]."""
RESAMPLES = 20_000
"""B: as many as the claims engine draws (book/claims/pvalues.py), so that each tail of the
multiplicity-adjusted interval holds a few draws."""
LEVEL = 0.95


def identity(means: np.ndarray) -> np.ndarray:
    """The mean itself: g(x̄) = x̄."""
    return means


def unit_weights(rng: np.random.Generator, resamples: int, n_units: int) -> np.ndarray:
    """[B, U] bootstrap weights: the counts of U draws with replacement, over U."""
    drawn = rng.integers(0, n_units, size=(resamples, n_units)) + n_units * np.arange(resamples)[:, None]
    return np.bincount(drawn.ravel(), minlength=resamples * n_units).reshape(resamples, n_units) / n_units


def seed_weights(rng: np.random.Generator, resamples: int, n_seeds: int) -> np.ndarray:
    """[B, S] Student weights (module docstring): 1/S + √((S − 1)/V) (g − ḡ) / √(S (S − 1))."""
    g = rng.standard_normal((resamples, n_seeds))
    mixing = np.sqrt((n_seeds - 1) / rng.chisquare(n_seeds - 1, size=(resamples, 1)))
    return 1.0 / n_seeds + mixing * (g - g.mean(axis=1, keepdims=True)) / np.sqrt(n_seeds * (n_seeds - 1))


@dataclass(frozen=True)
class Hierarchical:
    """A statistic over seeds and units: its ``value`` θ̂, its 95 % ``band`` [2, …] (low row,
    high row), the ``draws`` [B, …] the band is taken from, and the numbers of seeds and units."""

    value: np.ndarray
    band: np.ndarray
    draws: np.ndarray
    n_seeds: int
    n_units: int

    @property
    def half_width(self) -> np.ndarray:
        """(high − low) / 2 of the band: the noise a difference must exceed to be seen."""
        return (self.band[1] - self.band[0]) / 2


def point(values: np.ndarray, statistic: Statistic = identity) -> np.ndarray:
    """θ̂ = g(x̄) of ``values`` [S, U, …]."""
    return np.asarray(statistic(np.asarray(values, dtype=float).mean(axis=(0, 1))[None]), dtype=float)[0]


def draws(values: np.ndarray, statistic: Statistic = identity, seed: int | np.random.Generator = 0,
          resamples: int = RESAMPLES) -> np.ndarray:
    """B = ``resamples`` draws θ*_b of ``statistic`` over seeds and units (module docstring): [B, …]."""
    values = np.asarray(values, dtype=float)
    if values.ndim < 2 or values.shape[0] < 2 or values.shape[1] < 2:
        raise ValueError(f"values must be [seeds ≥ 2, units ≥ 2, …]; got shape {values.shape}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n_seeds, n_units = values.shape[:2]
    by_seed, by_unit = values.mean(axis=1), values.mean(axis=0)  # [S, …], [U, …]
    theta = point(values, statistic)
    v, w = seed_weights(rng, resamples, n_seeds), unit_weights(rng, resamples, n_units)
    seeds = np.tensordot(v, by_seed, axes=1)  # x̄(v_b, ·): [B, …]
    units = np.tensordot(w, by_unit, axes=1)  # x̄(·, w_b)
    return np.asarray(statistic(seeds), dtype=float) + np.asarray(statistic(units), dtype=float) - theta


def band(drawn: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """[2, …]: the central ``level`` percentile interval of every entry of the draws."""
    tail = 100 * (1 - level) / 2
    return np.percentile(drawn, [tail, 100 - tail], axis=0)


def hierarchical_interval(values: np.ndarray, statistic: Statistic = identity, seed: int | np.random.Generator = 0,
                          resamples: int = RESAMPLES, level: float = LEVEL) -> Hierarchical:
    """``statistic`` of ``values`` [seeds, units, …] with its ``level`` interval over seeds and
    units (:func:`draws`, then :func:`band`)."""
    values = np.asarray(values, dtype=float)
    drawn = draws(values, statistic, seed, resamples)
    return Hierarchical(value=point(values, statistic), band=band(drawn, level), draws=drawn,
                        n_seeds=values.shape[0], n_units=values.shape[1])


def sign_flip_test(differences: np.ndarray,
                   alternative: Literal["two-sided", "greater", "less"] = "two-sided") -> float:
    """Exact p-value of the mean of per-seed ``differences`` [S] under "no difference": over all
    2^S sign assignments ε, the share with mean(ε·d) at least as extreme as mean(d) (2 ≤ S ≤ 20):
    scipy's permutation test of one paired sample, every assignment enumerated."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or not 2 <= len(d) <= 20:
        raise ValueError(f"differences must be one value per seed, 2 to 20 seeds; got shape {d.shape}")
    return float(stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                        alternative=alternative).pvalue)
