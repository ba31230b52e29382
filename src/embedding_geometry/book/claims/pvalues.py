"""p-values: the test each design calls for (:func:`shape`, and the claim's :func:`null`), the
adjustment for the number of claims, and power (the maths in full: book/methods.md, "How a
verdict is made"; the bootstrap and BCa: :mod:`.samples`).

A claim is decided on a directional difference D, signed so that it holds when D > 0. Each test
gives p₊ for H₀: D ≤ 0, p₋ for H₀: D ≥ 0 and a 95 % interval inside the statistic's range: the
exact sign-flip test (a mean of per-unit values, n < 20), the exact binomial test (a share of 0/1
units), the bootstrap (BCa; anything else), the share of resamples outside a location's window,
the rank among a permutation null's draws. A claim with a null must clear its bound and its null
(:func:`combine`). Each chapter decides its m_k counted claims by Benjamini–Hochberg at level
q m_k / m (:func:`adjust`), so the family's false discovery rate over a model's m claims is at most q.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import samples
from . import reduce as reducers
from .ledger import EXACT_NULLS, NULL_KINDS, Claim, LedgerError, lookup

Q = 0.05
"""The false discovery rate the book controls over each model's counted claims."""
SMALL_N = 20
"""Below this many units a mean is tested exactly (sign-flip), not by the bootstrap."""
POWER = 0.8
RESAMPLES = 20_000
"""B: a one-sided p as small as 1 / B = 5 · 10⁻⁵ is resolved, below the smallest adjusted threshold q / m."""
MIN_UNITS = 5
"""Below this many units there is no test: a claim is not tested."""
MIN_SEEDS = 10
"""The fewest random-init control seeds that make a null distribution (book/methods.md)."""


def generator(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by (``seed``, a hash of ``name``): each claim gets its own stream, and
    adding a claim to a ledger changes no other claim's resamples."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


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


# --------------------------------------------------------------------------- the shape test

def _sides(claim: Claim) -> list[tuple[float, float]]:
    """The claim's test as directional parts (sign, threshold): it holds when every
    sign · (θ − threshold) > 0 — one part for above, below and the series tests, two for between."""
    test, args = claim.test
    if test == "between":
        return [(1.0, float(args["low"])), (-1.0, float(args["high"]))]
    return [(-1.0 if test == "below" else 1.0, float(args.get("bound", 0.0)))]


def shape(claim: Claim, metrics, raw, resamples: int, rng, sides=None) -> Evidence | str:
    """The shape test's evidence, or why there is none; with ``sides``, the same test against
    those thresholds instead of the claim's own (a null's value)."""
    point, sides = claim.point_of(raw), sides or _sides(claim)
    if isinstance(claim.samples, Mapping) and "draws" in claim.samples:
        return _drawn(claim, metrics, point, sides)
    statistic = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(statistic, samples.Missing):
        return str(statistic)
    reduce = claim.reducer()
    full = float(reduce(statistic.point()[None])[0])
    if not math.isclose(full, point, rel_tol=1e-4, abs_tol=1e-6):
        raise LedgerError(f"claim '{claim.id}': {statistic.source} gives {full:.6g}, but the metric gives "
                          f"{point:.6g}; the per-unit samples must rebuild the metric")
    if statistic.n_units < MIN_UNITS:
        return f"only {statistic.n_units} {claim.unit}: fewer than {MIN_UNITS}, too few for a test"
    if claim.test[0] == reducers.LOCATION:
        return _location(claim, statistic, point, resamples, rng)
    statistic, reduce = _reduced_first(claim, statistic, reduce)
    values = _unit_values(claim, statistic, reduce)
    if values is not None:
        return _exact(values, point, sides, statistic, reduce, resamples, rng)
    return _bootstrapped(statistic, reduce, point, sides, resamples, rng)


def _reduced_first(claim: Claim, *found):
    """The statistics ``found`` (each then the reduce) with a scalar test's linear reduce applied to
    their per-unit data first (:meth:`.samples.Statistic.reduced`), when every one allows it: the
    same numbers, a resample one kernel product instead of one per depth. Else as given."""
    *statistics, reduce = found
    if claim.test[0] in reducers.SCALAR_SHAPES and reducers.is_linear(claim.reduce):
        reduced = [s.reduced(reduce) for s in statistics]
        if all(r is not None for r in reduced):
            return (*reduced, lambda x: np.asarray(x, dtype=float).reshape(len(x)))
    return found


def _unit_values(claim: Claim, statistic: samples.Statistic, reduce) -> np.ndarray | None:
    """Each unit's own value [n] when the statistic is their plain mean (a linear reduce of a mean,
    or a mean over seeds of one); else None."""
    linear_test = claim.test[0] in ("rises", "falls") or (
        claim.test[0] in reducers.SCALAR_SHAPES and reducers.is_linear(claim.reduce))
    if not linear_test:
        return None
    data = statistic.unit_means()
    return None if data is None else np.asarray(reduce(np.asarray(data, dtype=float)), dtype=float)


def _exact(values: np.ndarray, point: float, sides, statistic, reduce, resamples: int, rng) -> Evidence | str:
    """A mean of unit values: exact binomial for 0/1 units, exact sign-flip below n = 20, else the bootstrap."""
    n = len(values)
    if np.isin(values, (0.0, 1.0)).all() and all(0 < t < 1 for _, t in sides):
        parts, interval = [], None
        for sign, t in sides:
            greater, less, interval = binomial(int(values.sum()), n, t)
            parts.append((greater, less) if sign > 0 else (less, greater))
        p_holds, p_fails = combine(parts)
        least = combine([(t ** n, (1 - t) ** n) if sign > 0 else ((1 - t) ** n, t ** n) for sign, t in sides])
        t = sides[0][1]  # the share's standard error at the bound: what its power rests on
        return Evidence("binomial (exact)", point, interval, n, p_holds, p_fails, se=float(np.sqrt(t * (1 - t) / n)),
                        floor=least)
    if n >= SMALL_N:
        return _bootstrapped(statistic, reduce, point, sides, resamples, rng)
    return _sign_flipped(values, point, sides)


def _sign_flipped(values: np.ndarray, point: float, sides, method: str = "sign-flip (exact)") -> Evidence:
    """The exact sign-flip test of a mean of unit values against each side, and its exact interval."""
    n = len(values)
    p_holds, p_fails = combine([sign_flip(sign * (values - t)) for sign, t in sides])
    se = float(np.std(values, ddof=1) / np.sqrt(n))
    return Evidence(method, point, sign_flip_interval(values), n, p_holds, p_fails, se=se,
                    floor=floors(0.5 ** n, sides, se))


def _bootstrapped(statistic, reduce, point: float, sides, resamples: int, rng, other=None,
                  method: str = "bootstrap (BCa)") -> Evidence | str:
    """BCa p-values on each side of each part, and the BCa interval (:func:`.bootstrap`)."""
    draws = samples.bootstrap(statistic, reduce, resamples, rng, other)
    jack = samples.jackknife(statistic, reduce, other)
    draws, jack = draws[np.isfinite(draws)], jack[np.isfinite(jack)]
    if len(draws) < resamples / 2 or len(jack) < 2:
        return "the statistic is undefined on most resamples"
    parts, errors = [], []
    for sign, t in sides:
        above, e1 = samples.bca_p(sign * draws, sign * point, sign * jack, sign * t)
        below, e2 = samples.bca_p(-sign * draws, -sign * point, -sign * jack, -sign * t)
        parts.append((above, below))
        errors += [e1, e2]
    p_holds, p_fails = combine(parts)
    se, least = float(np.std(draws, ddof=1)), 1 / len(draws)
    return Evidence(method, point, samples.bca_interval(draws, point, jack), statistic.n_units, p_holds, p_fails,
                    mc_error=max(errors), se=se, floor=floors(least, sides, se))


def _location(claim: Claim, statistic, point: float, resamples: int, rng) -> Evidence:
    """Where the re-found peak lies on each resample: p₊ the share outside the window, p₋ inside."""
    a, b = claim.test[1]["window"]
    draws = samples.bootstrap(statistic, claim.reducer(), resamples, rng)
    inside = (draws >= a - 1e-9) & (draws <= b + 1e-9)
    p_holds, p_fails = share_p(~inside, inside)
    lo, hi = np.quantile(draws, [0.025, 0.975], method="inverted_cdf")
    least = 1 / (len(draws) + 1)
    return Evidence("location (resamples)", point, (float(lo), float(hi)), statistic.n_units, p_holds, p_fails,
                    mc_error=float(np.sqrt(p_holds * (1 - p_holds) / len(draws))), se=float(np.std(draws)),
                    floor=(least, least))


def _drawn(claim: Claim, metrics, point: float, sides) -> Evidence | str:
    """``samples: {draws, n_units}``: resamples a chapter drew itself (e.g. over seeds, then
    sentences): p from the share of draws on each side, and their percentile interval."""
    try:
        draws = np.asarray(lookup(metrics, claim.samples["draws"]), dtype=float)
        n_units = int(lookup(metrics, claim.samples["n_units"])) if "n_units" in claim.samples else len(draws)
    except (KeyError, TypeError, ValueError):
        return f"no resamples at '{claim.samples['draws']}'"
    if n_units < MIN_UNITS:
        return f"only {n_units} {claim.unit}: fewer than {MIN_UNITS}, too few for a test"
    reduced = draws if draws.ndim == 1 else claim.reducer()(draws)
    reduced = reduced[np.isfinite(reduced)]
    parts = [share_p(sign * (reduced - t) <= 0, sign * (reduced - t) > 0) for sign, t in sides]
    p_holds, p_fails = combine(parts)
    lo, hi = np.quantile(reduced, [0.025, 0.975])
    se, least = float(np.std(reduced, ddof=1)), 1 / (len(reduced) + 1)
    return Evidence("resamples (the chapter's own)", point, (float(lo), float(hi)), n_units, p_holds, p_fails,
                    mc_error=float(np.sqrt(p_holds * (1 - p_holds) / len(reduced))), se=se,
                    floor=floors(least, sides, se))


# --------------------------------------------------------------------------- the null

def null(claim: Claim, metrics, raw, own: Evidence, resamples: int, rng):
    """(record, evidence) of the claim's null, None without one, or why the claim cannot be tested."""
    if not claim.null:
        return None
    spec, kind = claim.null, claim.null["kind"]
    record = {"kind": kind, "label": NULL_KINDS[kind], "value": None, "distribution": None, "note": None,
              "side": spec.get("side")}
    sign = _null_sign(claim)
    if sign is None:
        return None
    if "draws" in spec:
        draws = _measured(metrics, spec["draws"])
        if draws is None:
            return f"its null was not measured on this run ('{spec['draws']}')"
        null = np.asarray(draws, dtype=float).ravel()
        p_holds, p_fails = share_p(sign * null >= sign * own.point, sign * null <= sign * own.point)
        record.update(value=float(np.mean(null)), distribution=f"{len(null)} draws")
        least = 1 / (len(null) + 1)
        return record, Evidence("permutation", own.point, own.interval, len(null), p_holds, p_fails,
                                floor=(least, least))
    if "samples" in spec:
        return _paired(claim, metrics, record, sign, resamples, rng)
    if "value" in spec:
        value = float(spec["value"])
    else:
        found = _measured(metrics, spec["metric"])
        if found is None:
            return f"its null was not measured on this run ('{spec['metric']}')"
        if kind == "control":
            return f"a single random-init control value: fewer than {MIN_SEEDS} seeds, too few for a null distribution"
        value = float(found) if np.ndim(found) == 0 else claim.point_of(found)
    record.update(value=value, distribution="exact" if kind in EXACT_NULLS else "a single value (no distribution)")
    found = shape(claim, metrics, raw, resamples, rng, sides=[(sign, value)])
    if isinstance(found, str):
        return found
    record.update(difference_value=own.point - value, difference=[x - value for x in found.interval])
    return record, found


def _measured(metrics, path: str):
    """The metric at ``path`` (a dotted key path), or None when the run did not record it."""
    try:
        return lookup(metrics, path)
    except KeyError:
        return None


def _null_sign(claim: Claim) -> float | None:
    """The side of its null a claim's statistic must lie on: the side of an above/below test,
    the null's ``side`` for a between test, above for a series test, none for a location."""
    test, side = claim.test[0], claim.null.get("side")
    if test == "between":
        return None if side is None else (1.0 if side == "above" else -1.0)
    return None if test == reducers.LOCATION else _sides(claim)[0][0]


def _paired(claim: Claim, metrics, record, sign: float, resamples: int, rng):
    """A null measured on the same units (random-init controls with their seeds): the claim's
    statistic minus the null's, unit by unit — exact sign-flip on the units' differences below
    n = 20 when both are means, else the bootstrap of the difference on the same unit draws."""
    own = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    other = samples.find(metrics, claim.null["samples"])
    for found in (own, other):
        if isinstance(found, samples.Missing):
            return str(found)
    if own.n_units != other.n_units:
        return f"the null has {other.n_units} units, the claim {own.n_units}: not the same units"
    seeds = other.n_seeds or 1
    if claim.null["kind"] == "control" and seeds < MIN_SEEDS:
        return (f"only {seeds} random-init control seed{'s' if seeds > 1 else ''}: fewer than {MIN_SEEDS}, "
                f"too few for a null distribution")
    own, other, reduce = _reduced_first(claim, own, other, claim.reducer())
    record.update(value=float(reduce(other.point()[None])[0]),
                  distribution=f"{other.n_seeds} seeds, unit by unit" if other.n_seeds else "one run, unit by unit")
    if other.n_seeds:
        record["seed_values"] = [float(x) for x in reduce(other.per_seed())]
    point = float(reduce(own.point()[None])[0] - reduce(other.point()[None])[0])
    record["difference_value"] = point
    a, b = _unit_values(claim, own, reduce), _unit_values(claim, other, reduce)
    if a is not None and b is not None and len(a) < SMALL_N:
        found = _sign_flipped(a - b, point, [(sign, 0.0)], "sign-flip (exact), unit by unit")
    else:
        found = _bootstrapped(own, reduce, point, [(sign, 0.0)], resamples, rng, other=other,
                              method="bootstrap (BCa), unit by unit")
    if isinstance(found, str):
        return f"the difference from the controls: {found}"
    record["difference"] = list(found.interval)
    return record, found
