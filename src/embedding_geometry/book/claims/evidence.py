"""The evidence a claim's test gives, by its design: the shape test and the null, each as two
one-sided p-values and a 95 % interval (:class:`.pvalues.Evidence`; the tests' maths are there).

The **shape test** (:func:`shape`) rebuilds the claim's statistic from its per-unit samples and
tests it against its bound. The **null** (:func:`null`) is a second test: chance or uniform
attention as a bound, a permutation distribution by its rank, random-init controls unit by unit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import pvalues, samples
from . import reduce as reducers
from .ledger import EXACT_NULLS, NULL_KINDS, Claim, LedgerError, lookup
from .pvalues import Evidence

MIN_SEEDS = 10
"""The fewest random-init control seeds that make a null distribution (book/methods.md)."""


def reducer(claim: Claim):
    """[B, …] → [B]: the claim's reduce, its series test's statistic, or its location."""
    test = claim.test[0]
    if test in reducers.SERIES_SHAPES:
        return lambda x: reducers.statistic(test, x)
    if test == reducers.LOCATION:
        at = claim.shape["args"].get("at", "max")
        return lambda x: reducers.reduce_array(x, f"arg{at}_relative", claim.series)
    return lambda x: np.asarray(reducers.reduce_array(x, claim.reduce, claim.series), dtype=float).reshape(len(x))


def too_short(claim: Claim, raw: Any) -> str | None:
    """Why the claim's series test, or its window, cannot run on a series this short (a shallow
    model), or None."""
    test = claim.test[0] if claim.test else None
    if np.ndim(raw) == 1 and (narrow := reducers.too_narrow(claim.reduce, np.shape(raw)[-1], claim.series)):
        return narrow
    fewest = reducers.MIN_ENTRIES.get(test, 3)
    if test in reducers.SERIES_SHAPES and np.ndim(raw) > 0 and np.shape(raw)[-1] < fewest:
        return f"a series of {np.shape(raw)[-1]} entries: the '{test}' test needs at least {fewest}"
    return None


def point_of(claim: Claim, raw: Any) -> float:
    """The tested statistic on the run's own metric."""
    return float(reducer(claim)(np.asarray(raw, dtype=float)[None])[0])


def statistic_name(claim: Claim) -> str:
    test = claim.test[0]
    if test in reducers.STATISTICS:
        return reducers.STATISTICS[test][0]
    if test == reducers.LOCATION:
        return "relative depth of the " + ("peak" if claim.shape["args"].get("at", "max") == "max" else "trough")
    return "value"


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
    point, sides = point_of(claim, raw), sides or _sides(claim)
    if isinstance(claim.samples, Mapping) and "draws" in claim.samples:
        return _drawn(claim, metrics, point, sides)
    statistic = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(statistic, samples.Missing):
        return str(statistic)
    reduce = reducer(claim)
    full = float(reduce(statistic.point()[None])[0])
    if not math.isclose(full, point, rel_tol=1e-4, abs_tol=1e-6):
        raise LedgerError(f"claim '{claim.id}': {statistic.source} gives {full:.6g}, but the metric gives "
                          f"{point:.6g}; the per-unit samples must rebuild the metric")
    if statistic.n_units < pvalues.MIN_UNITS:
        return f"only {statistic.n_units} {claim.unit}: fewer than {pvalues.MIN_UNITS}, too few for a test"
    if claim.test[0] == reducers.LOCATION:
        return _location(claim, statistic, raw, point, resamples, rng)
    values = _unit_values(claim, statistic, reduce)
    if values is not None:
        return _exact(claim, values, point, sides, statistic, reduce, resamples, rng)
    return _bootstrapped(statistic, reduce, point, sides, resamples, rng)


def _unit_values(claim: Claim, statistic: samples.Statistic, reduce) -> np.ndarray | None:
    """Each unit's own value [n] when the statistic is their plain mean (a linear reduce of a mean,
    or a mean over seeds of one); else None."""
    linear_test = claim.test[0] in ("rises", "falls") or (
        claim.test[0] in reducers.SCALAR_SHAPES and reducers.is_linear(claim.reduce))
    if not linear_test:
        return None
    data = statistic.unit_means()
    return None if data is None else np.asarray(reduce(np.asarray(data, dtype=float)), dtype=float)


def _exact(claim: Claim, values: np.ndarray, point: float, sides, statistic, reduce, resamples: int,
           rng) -> Evidence | str:
    """A mean of unit values: exact binomial for 0/1 units, exact sign-flip below n = 20, else the bootstrap."""
    n = len(values)
    if np.isin(values, (0.0, 1.0)).all() and all(0 < t < 1 for _, t in sides):
        parts, interval = [], None
        for sign, t in sides:
            greater, less, interval = pvalues.binomial(int(values.sum()), n, t)
            parts.append((greater, less) if sign > 0 else (less, greater))
        p_holds, p_fails = pvalues.combine(parts)
        least = pvalues.combine([(t ** n, (1 - t) ** n) if sign > 0 else ((1 - t) ** n, t ** n) for sign, t in sides])
        t = sides[0][1]  # the share's standard error at the bound: what its power rests on
        return Evidence("binomial (exact)", point, interval, n, p_holds, p_fails, se=float(np.sqrt(t * (1 - t) / n)),
                        floor=least)
    if n >= pvalues.SMALL_N:
        return _bootstrapped(statistic, reduce, point, sides, resamples, rng)
    p_holds, p_fails = pvalues.combine([pvalues.sign_flip(sign * (values - t)) for sign, t in sides])
    se = float(np.std(values, ddof=1) / np.sqrt(n))
    return Evidence("sign-flip (exact)", point, pvalues.sign_flip_interval(values), n, p_holds, p_fails, se=se,
                    floor=pvalues.floors(0.5 ** n, sides, se))


def _bootstrapped(statistic, reduce, point: float, sides, resamples: int, rng, other=None,
                  method: str = "bootstrap (BCa)") -> Evidence | str:
    """BCa p-values on each side of each part, and the BCa interval (:func:`.pvalues.bootstrap`)."""
    draws = pvalues.bootstrap(statistic, reduce, resamples, rng, other)
    jack = pvalues.jackknife(statistic, reduce, other)
    draws, jack = draws[np.isfinite(draws)], jack[np.isfinite(jack)]
    if len(draws) < resamples / 2 or len(jack) < 2:
        return "the statistic is undefined on most resamples"
    parts, errors = [], []
    for sign, t in sides:
        above, e1 = pvalues.bca_p(sign * draws, sign * point, sign * jack, sign * t)
        below, e2 = pvalues.bca_p(-sign * draws, -sign * point, -sign * jack, -sign * t)
        parts.append((above, below))
        errors += [e1, e2]
    p_holds, p_fails = pvalues.combine(parts)
    se, least = float(np.std(draws, ddof=1)), 1 / len(draws)
    return Evidence(method, point, pvalues.bca_interval(draws, point, jack), statistic.n_units, p_holds, p_fails,
                    mc_error=max(errors), se=se, floor=pvalues.floors(least, sides, se))


def _location(claim: Claim, statistic, raw, point: float, resamples: int, rng) -> Evidence:
    """Where the re-found peak lies on each resample: p₊ the share outside the window, p₋ inside."""
    a, b = claim.test[1]["window"]
    draws = pvalues.bootstrap(statistic, reducer(claim), resamples, rng)
    inside = (draws >= a - 1e-9) & (draws <= b + 1e-9)
    p_holds, p_fails = pvalues.share_p(~inside, inside)
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
    if n_units < pvalues.MIN_UNITS:
        return f"only {n_units} {claim.unit}: fewer than {pvalues.MIN_UNITS}, too few for a test"
    reduced = draws if draws.ndim == 1 else reducer(claim)(draws)
    reduced = reduced[np.isfinite(reduced)]
    parts = [pvalues.share_p(sign * (reduced - t) <= 0, sign * (reduced - t) > 0) for sign, t in sides]
    p_holds, p_fails = pvalues.combine(parts)
    lo, hi = np.quantile(reduced, [0.025, 0.975])
    se, least = float(np.std(reduced, ddof=1)), 1 / (len(reduced) + 1)
    return Evidence("resamples (the chapter's own)", point, (float(lo), float(hi)), n_units, p_holds, p_fails,
                    mc_error=float(np.sqrt(p_holds * (1 - p_holds) / len(reduced))), se=se,
                    floor=pvalues.floors(least, sides, se))


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
        try:
            draws = lookup(metrics, spec["draws"])
        except KeyError:
            draws = None
        if draws is None:
            return f"its null was not measured on this run ('{spec['draws']}')"
        null = np.asarray(draws, dtype=float).ravel()
        p_holds, p_fails = pvalues.share_p(sign * null >= sign * own.point, sign * null <= sign * own.point)
        record.update(value=float(np.mean(null)), distribution=f"{len(null)} draws")
        least = 1 / (len(null) + 1)
        return record, Evidence("permutation", own.point, own.interval, len(null), p_holds, p_fails,
                                floor=(least, least))
    if "samples" in spec:
        return _paired(claim, metrics, record, sign, resamples, rng)
    if "value" in spec:
        value = float(spec["value"])
    else:
        try:
            found = lookup(metrics, spec["metric"])
        except KeyError:
            found = None
        if found is None:
            return f"its null was not measured on this run ('{spec['metric']}')"
        if kind == "control":
            return f"a single random-init control value: fewer than {MIN_SEEDS} seeds, too few for a null distribution"
        value = float(found) if np.ndim(found) == 0 else point_of(claim, found)
    record.update(value=value, distribution="exact" if kind in EXACT_NULLS else "a single value (no distribution)")
    found = shape(claim, metrics, raw, resamples, rng, sides=[(sign, value)])
    if isinstance(found, str):
        return found
    record.update(difference_value=own.point - value, difference=[x - value for x in found.interval])
    return record, found


def _null_sign(claim: Claim) -> float | None:
    """The side of its null a claim's statistic must lie on: the side of an above/below test,
    the null's ``side`` for a between test, above for a series test, none for a location."""
    test = claim.test[0]
    if test == reducers.LOCATION:
        return None
    if test == "between":
        side = claim.null.get("side")
        return None if side is None else (1.0 if side == "above" else -1.0)
    return -1.0 if test == "below" else 1.0


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
    reduce = reducer(claim)
    record.update(value=float(reduce(other.point()[None])[0]),
                  distribution=f"{other.n_seeds} seeds, unit by unit" if other.n_seeds else "one run, unit by unit")
    if other.n_seeds:
        record["seed_values"] = [float(x) for x in reduce(other.per_seed())]
    point = float(reduce(own.point()[None])[0] - reduce(other.point()[None])[0])
    record["difference_value"] = point
    a, b = _unit_values(claim, own, reduce), _unit_values(claim, other, reduce)
    if a is not None and b is not None and len(a) < pvalues.SMALL_N:
        d = sign * (a - b)
        record["difference"] = list(pvalues.sign_flip_interval(a - b))
        return record, Evidence("sign-flip (exact), unit by unit", point, tuple(record["difference"]), len(d),
                                *pvalues.sign_flip(d), se=float(np.std(d, ddof=1) / np.sqrt(len(d))),
                                floor=(0.5 ** len(d), 0.5 ** len(d)))
    found = _bootstrapped(own, reduce, point, [(sign, 0.0)], resamples, rng, other=other,
                          method="bootstrap (BCa), unit by unit")
    if isinstance(found, str):
        return f"the difference from the controls: {found}"
    record["difference"] = list(found.interval)
    return record, found
