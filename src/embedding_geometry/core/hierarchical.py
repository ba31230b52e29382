"""Intervals over two levels of sampling: training seeds, and the units measured on each copy.

A trained model is one draw of its training (initialisation, batch order, dropout: its *seed*),
and a measurement of it averages over *units* (sentences, pairs, queries). For S seeds and U
units, ``values[s, u, …]`` is unit u measured on the copy of seed s, and a statistic
θ = f(values) (by default the mean over seeds and units) has two sources of noise: which seeds
were trained, and which units were measured. A bootstrap over the units alone (the book's
:mod:`book.intervals`) leaves the first out.

**Crossed units** (``design="crossed"``, the default: the *same* units are measured on every
copy, as chapter 7 measures the same sentences on every copy). Model each value as
x_su = μ + a_s + b_u + e_su (seed effect, unit effect, the rest), so that

    Var(x̄) = σ_a² / S + σ_b² / U + σ_e² / (S U).

Drawing the units anew *within* each seed would treat them as nested and drop the shared unit
effect b_u (tested: the interval then covers the true mean far less than 95 % of the time).
Instead each draw b resamples the two levels separately, S of the S seeds with replacement
(every unit kept) and U of the U units with replacement (every seed kept), and adds their
deviations from the estimate θ̂:

    θ*_b = θ̂ + c_S · (f(values[seeds_b, :]) − θ̂) + (f(values[:, units_b]) − θ̂).

The two terms carry σ_a² / S and σ_b² / U, and each carries the remainder σ_e² / (S U) once, so
the interval errs wide only when both effects vanish.

**Nested units** (``design="nested"``: each seed has units of its own): S seeds with
replacement, then, within each drawn seed, its U units with replacement, and
θ*_b = θ̂ + c_S · (f(values[seeds_b, units_b]) − θ̂).

**Few seeds.** A bootstrap of S values underestimates their spread by √((S − 1) / S) and uses
normal quantiles where Student's t applies, so at S = 5 a plain percentile interval covers about
85 %. The seed-level deviations are widened by

    c_S = √(S / (S − 1)) · t_{S−1, 1−α/2} / z_{1−α/2}      (c_5 ≈ 1.58, c_8 ≈ 1.29),

the factor that turns a bootstrap of the mean of S normal values into Student's interval. The
95 % interval is the 2.5th and 97.5th percentiles of the B draws. ``tests/test_hierarchical.py``
measures the coverage on simulated data with known mean at S = 5 and 8 seeds.

**A paired test over seeds** (:func:`sign_flip_test`): for per-seed differences d_s between two
treatments that share each seed, the exact null distribution of their mean under "no
difference" flips each sign independently: all 2^S assignments, p = share of them whose mean is
at least as extreme as the observed one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Statistic = Callable[[np.ndarray], np.ndarray | float]
DESIGNS = ("crossed", "nested")
RESAMPLES = 2000
LEVEL = 0.95


def mean_statistic(values: np.ndarray) -> np.ndarray:
    """The mean over seeds and units (axes 0 and 1): [S, U, …] → […]."""
    return values.mean(axis=(0, 1))


def small_n_factor(n_seeds: int, level: float = LEVEL) -> float:
    """c_S = √(S / (S − 1)) · t_{S−1, 1−α/2} / z_{1−α/2}, with α = 1 − ``level``."""
    if n_seeds < 2:
        raise ValueError(f"a seed-level interval needs at least 2 seeds; got {n_seeds}")
    tail = 1 - (1 - level) / 2
    return float(np.sqrt(n_seeds / (n_seeds - 1)) * stats.t.ppf(tail, n_seeds - 1) / stats.norm.ppf(tail))


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


def draws(values: np.ndarray, statistic: Statistic = mean_statistic, seed: int | np.random.Generator = 0,
          resamples: int = RESAMPLES, design: Literal["crossed", "nested"] = "crossed",
          level: float = LEVEL) -> np.ndarray:
    """B = ``resamples`` draws θ*_b of ``statistic`` (see the module docstring): [B, …]."""
    values = np.asarray(values, dtype=float)
    if values.ndim < 2 or values.shape[0] < 2 or values.shape[1] < 2:
        raise ValueError(f"values must be [seeds ≥ 2, units ≥ 2, …]; got shape {values.shape}")
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}; got {design!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n_seeds, n_units = values.shape[:2]
    point = np.asarray(statistic(values), dtype=float)
    c = small_n_factor(n_seeds, level)
    seeds = rng.integers(0, n_seeds, size=(resamples, n_seeds))
    out = np.empty((resamples, *point.shape))
    if design == "crossed":
        units = rng.integers(0, n_units, size=(resamples, n_units))
        for b in range(resamples):
            out[b] = point + c * (statistic(values[seeds[b]]) - point) + (statistic(values[:, units[b]]) - point)
    else:
        units = rng.integers(0, n_units, size=(resamples, n_seeds, n_units))
        for b in range(resamples):
            out[b] = point + c * (statistic(values[seeds[b][:, None], units[b]]) - point)
    return out


def band(drawn: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """[2, …]: the central ``level`` percentile interval of every entry of the draws."""
    tail = 100 * (1 - level) / 2
    return np.percentile(drawn, [tail, 100 - tail], axis=0)


def hierarchical_interval(values: np.ndarray, statistic: Statistic = mean_statistic,
                          seed: int | np.random.Generator = 0, resamples: int = RESAMPLES, design: Literal["crossed", "nested"] = "crossed",
                          level: float = LEVEL) -> Hierarchical:
    """``statistic`` of ``values`` [seeds, units, …] with its ``level`` interval over seeds and
    units (:func:`draws`, then :func:`band`)."""
    values = np.asarray(values, dtype=float)
    drawn = draws(values, statistic, seed, resamples, design, level)
    return Hierarchical(value=np.asarray(statistic(values), dtype=float), band=band(drawn, level), draws=drawn,
                        n_seeds=values.shape[0], n_units=values.shape[1])


def sign_flip_test(differences: np.ndarray,
                   alternative: Literal["two-sided", "greater", "less"] = "two-sided") -> float:
    """Exact p-value of the mean of per-seed ``differences`` [S] under "no difference": over all
    2^S sign assignments ε, the share with mean(ε·|d|) at least as extreme as mean(d) (S ≤ 20)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or not 1 <= len(d) <= 20:
        raise ValueError(f"differences must be one value per seed, 1 to 20 seeds; got shape {d.shape}")
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    null = signs @ np.abs(d) / len(d)
    observed, tol = d.mean(), 1e-12 * max(1.0, float(np.abs(d).max()))
    if alternative == "greater":
        return float(np.mean(null >= observed - tol))
    if alternative == "less":
        return float(np.mean(null <= observed + tol))
    return float(np.mean(np.abs(null) >= abs(observed) - tol))
