"""Judging a ledger against a run's metrics: ``evaluate(ledger, metrics, model) → verdicts``.

Each claim passes through its stages once, in order:

1. **ledger** — the claim as data (:mod:`.ledger`);
2. **reduce** — its metric, a number or a per-depth series, becomes the number the claim is
   about (:mod:`.reduce`); a metric that is None makes the claim *not measured*;
3. **resample** — the statistic is rebuilt from its per-unit samples on B bootstrap resamples of
   the units, with the null's samples on the same draws (:mod:`.resample`); the interval method
   follows the statistic and n, and with fewer than 5 units — or a null of fewer than 3
   random-init control seeds (:data:`.nulls.MIN_SEEDS`) — the claim is *descriptive*;
4. **test** — the shape test judges the interval (:mod:`.shape_tests`) and the null judges the
   interval of the difference statistic − null, which must clear 0. A claim *holds* when both
   hold, *does not hold* when either does not, and is *inconclusive* otherwise. It is judged at
   the 95 % level (the *raw* result) and at the multiplicity-adjusted level 1 − 0.05/m, m the
   number of published claims in the family (:func:`.ledger.family_size`, Bonferroni): the
   adjusted result is the verdict. An interval of zero width is a *census* (every unit agrees),
   shown, not counted as a verdict;
5. **words** — the verdict word for the claim's kind (:mod:`.words`), its margin and whether float
   noise could flip it (:mod:`embedding_geometry.book.reproducibility`), and, for a bound the
   ledger derived or typed, the bound at which the verdict would flip.

Separately, a **numeric** verdict (reproduced / not reproduced within ``tolerance``) is given
only when this run's model is the published model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import reproducibility
from . import reduce as reducers
from . import nulls, resample, samples, shape_tests
from .ledger import Claim, Ledger, LedgerError, family_size, lookup
from .shape_tests import FAILS, HOLDS, INCONCLUSIVE

ALPHA = 1 - resample.LEVEL

# Why a claim gets no counted verdict (the words say each once, claims.words).
DESCRIPTIVE, CENSUS, NOT_MEASURED, BY_CONSTRUCTION = "descriptive", "census", "not measured", "by construction"


@dataclass(frozen=True)
class Judged:
    """A statistic's resamples, reduced to the number the test judges: the point value, its
    intervals (95 % and adjusted), n and the method, and the resampled values themselves."""

    point: float
    interval: resample.Interval | None
    adjusted: resample.Interval | None
    n_units: int
    draws: np.ndarray


@dataclass(frozen=True)
class Verdict:
    """One claim judged on one model (:meth:`record` is what the results JSON keeps)."""

    claim: Claim
    model: str
    measured: float | None = None
    depth: str | None = None
    numeric: str | None = None
    status: str | None = None  # None: judged; else DESCRIPTIVE, CENSUS, NOT_MEASURED, BY_CONSTRUCTION
    reason: str | None = None
    raw: str | None = None  # the outcome at 95 %
    outcome: str | None = None  # the outcome at the adjusted level: the verdict
    statistic: Mapping[str, Any] | None = None  # the judged statistic: name, value, intervals, method, n
    null: Mapping[str, Any] | None = None
    margin: float | None = None
    deviation: float | None = None
    fragile: str | None = None
    sensitivity: Mapping[str, Any] | None = None
    family: int | None = None

    @property
    def verdict(self) -> str:
        """The verdict word (claims.words)."""
        from .words import verdict_word

        return verdict_word({"status": self.status, "kind": self.claim.kind, "outcome": self.outcome})

    @property
    def counted(self) -> bool:
        """Whether this verdict counts in the tally: judged, a published claim, at its home."""
        return self.status is None and self.claim.kind == "published" and self.claim.home is None

    def record(self) -> dict[str, Any]:
        """The verdict as a plain dict for the results JSON (what :mod:`.words` reads)."""
        from .words import verdict_word

        c, test = self.claim, self.claim.test
        record = {
            "id": c.id, "kind": c.kind, "home": c.home, "statement": c.statement, "source": c.source,
            "caveat": c.caveat, "headline": c.headline, "metric": c.metric, "reduce": c.reduce, "series": c.series,
            "published": dict(c.published) if c.published else None, "tolerance": c.tolerance, "model": self.model,
            "measured": self.measured, "depth": self.depth, "numeric_verdict": self.numeric,
            "shape": dict(c.shape) if c.shape else None,
            "test": shape_tests.threshold_text(*test) if test else None,
            "bound": {"source": c.bound_source, "fraction": c.fraction,
                      "reason": c.fraction_reason} if c.bound_source else None,
            "unit": c.unit, "status": self.status, "reason": self.reason, "raw": self.raw, "outcome": self.outcome,
            "statistic": dict(self.statistic) if self.statistic else None,
            "null": dict(self.null) if self.null else None, "no_null": c.no_null_reason,
            "family": self.family, "margin": self.margin, "float_deviation": self.deviation, "fragile": self.fragile,
            "sensitivity": dict(self.sensitivity) if self.sensitivity else None, "counted": self.counted,
        }
        stat = self.statistic or {}
        record.update(n_units=stat.get("n_units"), interval=stat.get("interval"),
                      interval_method=stat.get("method"), adjusted_interval=stat.get("adjusted"))
        record["verdict"] = verdict_word(record)
        return record


def evaluate(ledger: Ledger, metrics: Mapping[str, Any], model: str, *, seed: int = 0,
             resamples: int = resample.RESAMPLES) -> list[Verdict]:
    """Verdicts for every claim of ``ledger`` against this run's ``metrics`` on ``model``; each
    claim's bootstrap draws from a generator seeded by (``seed``, claim id)."""
    m = family_size()
    return [_stability(ledger.chapter, _judge(claim, metrics, model, seed, resamples, m), metrics)
            for claim in ledger.claims]


def records(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as plain dicts for the results JSON (:meth:`Verdict.record`)."""
    return [v.record() for v in verdicts]


# --------------------------------------------------------------------------- one claim, once through

def _judge(claim: Claim, metrics: Mapping[str, Any], model: str, seed: int, resamples: int, m: int) -> Verdict:
    model = claim.measured_on or model
    raw = lookup(metrics, claim.metric)  # 1. the ledger's metric
    if raw is None:
        return Verdict(claim, model, status=NOT_MEASURED, reason=_absence(claim, metrics))
    series_test = claim.test is not None and claim.test[0] not in shape_tests.SCALAR_SHAPES
    if claim.reduce == "value" and np.ndim(raw) > 0 and series_test:
        measured = _point(claim, raw)  # 2. reduce: a series test's own statistic (a location: l / L)
    else:
        measured = reducers.reduce_metric(raw, claim.reduce, claim.series)  # 2. reduce
    found = dict(claim=claim, model=model, measured=measured, numeric=_numeric(claim, measured, model),
                 depth=reducers.where(claim.reduce, raw, claim.series))
    if claim.test is None:
        status = BY_CONSTRUCTION if claim.by_construction else DESCRIPTIVE
        return Verdict(**found, status=status, reason=claim.by_construction or claim.description)
    if claim.by_construction:
        return Verdict(**found, status=BY_CONSTRUCTION, reason=claim.by_construction)
    test, args = claim.test
    rng = resample.generator(seed, claim.id)
    judged = _resampled(claim, metrics, raw, measured, resamples, rng, m)  # 3. resample
    if isinstance(judged, str):
        return Verdict(**found, status=DESCRIPTIVE, reason=judged, family=m)
    if test == shape_tests.LOCATION:
        args = {**args, "L": _depths(claim, raw)}
    if judged.interval is None:
        return Verdict(**found, status=DESCRIPTIVE, reason="the statistic is undefined on every resample", family=m)
    null = nulls.judge_null(claim, metrics, judged, resamples, rng, m, _reducer(claim), lambda x: _point(claim, x))
    statistic = _statistic_record(claim, judged)
    if null and null.get("insufficient"):
        return Verdict(**found, status=DESCRIPTIVE, statistic=statistic, null=null, family=m, reason=null["note"])
    if judged.interval.width <= 1e-12 * max(1.0, abs(judged.point)) and test != shape_tests.LOCATION:
        return Verdict(**found, status=CENSUS, statistic=statistic, null=null, family=m,
                       reason=f"every one of the {judged.n_units} {claim.unit} gives {_fmt(judged.point)}: "
                              f"a census, not an estimate with noise")
    raw_outcome = _outcome(test, args, judged.interval, null, "interval")  # 4. test
    outcome = _outcome(test, args, judged.adjusted, null, "adjusted")
    return Verdict(**found, raw=raw_outcome, outcome=outcome, statistic=statistic, null=null, family=m,
                   margin=_margin(test, args, judged.adjusted, null),
                   sensitivity=_sensitivity(claim, judged.adjusted))


def _numeric(claim: Claim, measured: float, model: str) -> str | None:
    if claim.published and claim.published.get("model") == model and claim.tolerance is not None:
        close = abs(measured - float(claim.published["value"])) <= claim.tolerance
        return "reproduced" if close else "not reproduced"
    return None


def _reducer(claim: Claim):
    """[B, …] → [B]: the claim's reduce, its series test's statistic, or its location."""
    test = claim.test[0]
    if test in shape_tests.SERIES_SHAPES:
        return lambda x: shape_tests.statistic(test, x)
    if test == shape_tests.LOCATION:
        at = claim.shape["args"].get("at", "max")
        return lambda x: shape_tests.location(x, at, blocks=claim.series == "blocks")
    return lambda x: np.asarray(reducers.reduce_array(x, claim.reduce, claim.series), dtype=float).reshape(len(x))


def _point(claim: Claim, raw: Any) -> float:
    """The judged statistic on the run's own metric."""
    return float(_reducer(claim)(np.asarray(raw, dtype=float)[None])[0])


def _resampled(claim: Claim, metrics, raw, measured, resamples, rng, m) -> Judged | str:
    """The judged statistic's resamples and intervals, or why there are none (descriptive)."""
    if claim.unit is None:
        return "no sampling unit declared"
    point = _point(claim, raw)
    if isinstance(claim.samples, Mapping) and "draws" in claim.samples:
        return _drawn(claim, metrics, raw, point, m)
    statistic = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(statistic, samples.Missing):
        return str(statistic)
    reduce = _reducer(claim)
    full = float(reduce(statistic.point()[None])[0])
    if not math.isclose(full, point, rel_tol=1e-4, abs_tol=1e-6):
        raise LedgerError(f"claim '{claim.id}': {statistic.source} gives {full:.6g}, but the metric gives "
                          f"{point:.6g}; the per-unit samples must rebuild the metric")
    linear = claim.test[0] in shape_tests.SCALAR_SHAPES and reducers.is_linear(claim.reduce)
    found = resample.resample(statistic, reduce, resamples, rng, linear)
    if found.method is None:
        return f"only {found.n_units} {claim.unit}: fewer than {resample.MIN_UNITS}, too few for an interval"
    return _intervals(claim, found.point, found.draws, found.n_units, found, m, _depths(claim, raw))


def _intervals(claim: Claim, point: float, draws: np.ndarray, n_units: int, found: resample.Resampled | None,
               m: int, L: int) -> Judged:
    adjusted_level = 1 - ALPHA / m
    if claim.test[0] == shape_tests.LOCATION:
        a = resample.Interval(*shape_tests.location_interval(draws, L, resample.LEVEL), resample.LEVEL, "percentile")
        b = resample.Interval(*shape_tests.location_interval(draws, L, adjusted_level), adjusted_level, "percentile")
        return Judged(point, a, b, n_units, draws)
    if found is None:
        found = resample.Resampled(point, draws, n_units, "percentile")
    return Judged(point, found.interval(resample.LEVEL), found.interval(adjusted_level), n_units, draws)


def _depths(claim: Claim, raw: Any) -> int:
    """L, the blocks of the model a series metric runs over (1 for a number)."""
    return reducers.depth_count(np.shape(raw)[-1], claim.series) if np.ndim(raw) else 1


def _drawn(claim: Claim, metrics, raw, point: float, m: int) -> Judged | str:
    """``samples: {draws, n_units}``: resamples a chapter drew itself (e.g. over seeds, then
    sentences): the percentile intervals of the reduced draws."""
    try:
        draws = np.asarray(lookup(metrics, claim.samples["draws"]), dtype=float)
        n_units = int(lookup(metrics, claim.samples["n_units"])) if "n_units" in claim.samples else len(draws)
    except (KeyError, TypeError, ValueError):
        return f"no resamples at '{claim.samples['draws']}'"
    reduced = draws if draws.ndim == 1 else _reducer(claim)(draws)
    return _intervals(claim, point, reduced, n_units, None, m, _depths(claim, raw))


def _statistic_record(claim: Claim, judged: Judged) -> dict[str, Any]:
    test = claim.test[0]
    name = shape_tests.STATISTICS[test][0] if test in shape_tests.STATISTICS else (
        "relative depth of the " + ("peak" if claim.shape["args"].get("at", "max") == "max" else "trough")
        if test == shape_tests.LOCATION else "value")
    return {"name": name, "value": judged.point, "n_units": judged.n_units, "method": judged.interval.method,
            "interval": [judged.interval.low, judged.interval.high],
            "adjusted": [judged.adjusted.low, judged.adjusted.high], "adjusted_level": judged.adjusted.level}


# --------------------------------------------------------------------------- outcomes, margins, sensitivity

def _outcome(test: str, args, interval: resample.Interval, null, which: str) -> str:
    """The shape test on ``interval``, and the null's difference interval clearing 0 in the
    claim's direction: holds when both hold, does not hold when either does not."""
    outcomes = [shape_tests.judge(test, args, (interval.low, interval.high))]
    key = "difference" if which == "interval" else "adjusted_difference"
    if null and null.get(key) and (direction := _null_side(test, null)):
        outcomes.append(shape_tests.judge(direction, {"bound": 0.0}, tuple(null[key])))
    if FAILS in outcomes:
        return FAILS
    return HOLDS if all(o == HOLDS for o in outcomes) else INCONCLUSIVE


def _null_side(test: str, null) -> str | None:
    """The side of its null a claim's statistic must lie on: the side of an above/below test, the
    null's ``side`` for a between test (a value inside a band and, like the published one, above
    or below what the null gives), none for a location."""
    if test in ("above", "below"):
        return test
    if test == shape_tests.LOCATION:
        return None
    return null.get("side") if test == "between" else "above"


def _margin(test: str, args, interval: resample.Interval, null) -> float:
    found = shape_tests.margin(test, args, (interval.low, interval.high))
    if null and null.get("adjusted_difference") and _null_side(test, null):
        found = min(found, min(abs(x) for x in null["adjusted_difference"]))
    return found


def _sensitivity(claim: Claim, adjusted: resample.Interval) -> dict[str, Any] | None:
    """For a bound derived from ``fraction`` (f · published or published / f), the values of f at
    which the adjusted verdict changes: it holds for f below ``holds_below`` and does not hold
    from ``fails_from`` on (None: for every f, for no f: a bound p / f stays above an interval that reaches
    0). For a typed bound, the same in bound units."""
    source = claim.bound_source
    if source not in ("fraction", "typed"):
        return None
    test = claim.test[0]
    lo, hi = adjusted.low, adjusted.high
    if source == "typed":
        holds, fails = (lo, hi) if test == "above" else (hi, lo)
        return {"bound": "typed", "value": float(claim.shape["args"]["bound"]),
                "holds_if_bound": ("below" if test == "above" else "above", holds),
                "fails_if_bound": ("at or above" if test == "above" else "at or below", fails)}
    p = float(claim.published["value"])
    if test == "above":  # bound f·p: holds while f·p < lo, fails once f·p ≥ hi
        holds_below, fails_from = lo / p, hi / p
    else:  # bound p/f: holds while hi < p/f (f < p/hi), fails once lo ≥ p/f (f ≥ p/lo)
        holds_below = p / hi if hi > 0 else None
        fails_from = p / lo if lo > 0 else None
    return {"bound": "fraction", "fraction": claim.fraction, "holds_below": holds_below, "fails_from": fails_from}


def _stability(chapter: str, verdict: Verdict, metrics: Mapping[str, Any]) -> Verdict:
    """``verdict`` with its float deviation, marked fragile when its margin is smaller than that
    deviation or a perturbed float path gave it another verdict (book.reproducibility)."""
    from dataclasses import replace

    if verdict.margin is None:
        return verdict
    deviation = reproducibility.claim_deviation(chapter, verdict.claim.metric, lookup(metrics, verdict.claim.metric),
                                                {"measured": verdict.measured,
                                                 "interval": (verdict.statistic or {}).get("adjusted")})
    reasons = []
    if verdict.margin < deviation:
        reasons.append(f"its margin {_fmt(verdict.margin)} is within the float noise of its statistic "
                       f"({_fmt(deviation)})")
    if flips := reproducibility.flipped(chapter, verdict.claim.id, verdict.model):
        reasons.append(f"its verdict changed on a perturbed float path ({', '.join(flips)})")
    return replace(verdict, deviation=deviation, fragile="; ".join(reasons) or None)


def _absence(claim: Claim, metrics: Mapping[str, Any]) -> str:
    """Why the claim's metric is None: the chapter's ``metrics["not_measured"][<metric>]``, the
    ledger's ``not_measured``, or what the None itself says."""
    notes = metrics.get("not_measured")
    if isinstance(notes, Mapping) and notes.get(claim.metric):
        return str(notes[claim.metric])
    if claim.not_measured:
        return claim.not_measured
    if claim.measured_on:
        return f"{claim.measured_on} was not run in this build"
    return f"'{claim.metric}' is None on this run: the chapter did not compute it"


def _fmt(x: float) -> str:
    return f"{x:.4g}"
