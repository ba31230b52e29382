"""Judging a ledger against a run's metrics: ``evaluate(ledger, metrics, model) → verdicts``.

Each claim passes through its stages once, in order:

1. **ledger** — the claim as data (:mod:`.ledger`);
2. **statistic** — its metric, a number or a per-depth series, becomes the number the claim is
   about (:mod:`.reduce`, :mod:`.shape_tests`), rebuilt from its per-unit samples (:mod:`.samples`);
3. **test** — the test its design calls for gives p₊ and p₋ (:mod:`.pvalues`): exact sign-flip or
   binomial tests at small n and for shares, the bootstrap (BCa) otherwise, the share of resamples
   outside the window for a location; a null (chance, a permutation distribution, random-init
   controls compared unit by unit) is a second test the claim must also pass;
4. **adjustment** — :func:`decide` adjusts the chapter's p-values for the number of claims
   (Benjamini–Hochberg, :func:`.pvalues.adjust`): a claim *holds* or *does not hold* when its
   adjusted p is at most q = 0.05, on the side of its smaller one-sided p; it is *inconclusive*
   otherwise, with the smallest effect its n detects;
5. **words** — :mod:`.words`.

A claim that cannot be tested — no model-agnostic form, true by construction, its metric not
computed, fewer than 5 units, too few control seeds — is *not tested*, with the reason.
Separately, a **numeric** verdict (reproduced / not reproduced within ``tolerance``) is given
only when this run's model is the published model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import pvalues, resample, samples, shape_tests
from . import reduce as reducers
from .ledger import EXACT_NULLS, NULL_KINDS, Claim, Ledger, LedgerError, family_size, lookup
from .pvalues import Evidence

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
DESCRIPTIVE, NOT_MEASURED, BY_CONSTRUCTION = "descriptive", "not measured", "by construction"
"""Why a claim is not tested (its ``status``)."""
MIN_SEEDS = 3
"""The fewest random-init control seeds that make a null distribution (book/methods.md)."""


@dataclass(frozen=True)
class Verdict:
    """One claim judged on one model (:meth:`record` is what the results JSON keeps). ``outcome``
    is None until :func:`decide` has adjusted the chapter's p-values."""

    claim: Claim
    model: str
    measured: float | None = None
    depth: str | None = None
    numeric: str | None = None
    status: str | None = None  # None: tested; else DESCRIPTIVE, NOT_MEASURED or BY_CONSTRUCTION
    reason: str | None = None
    statistic: Mapping[str, Any] | None = None  # the tested statistic: name, value, 95 % interval, method, n
    null: Mapping[str, Any] | None = None
    p_holds: float | None = None
    p_fails: float | None = None
    mc_error: float = 0.0
    se: float | None = None
    outcome: str | None = None
    p_adjusted: float | None = None
    detectable: float | None = None
    fragile: str | None = None
    family: int | None = None

    @property
    def tested(self) -> bool:
        return self.status is None

    @property
    def p(self) -> float | None:
        """The claim's two-sided p (:func:`.pvalues.two_sided`)."""
        return None if self.p_holds is None else pvalues.two_sided(self.p_holds, self.p_fails)

    @property
    def verdict(self) -> str:
        """The verdict word (claims.words)."""
        from .words import verdict_word

        return verdict_word(self.record())

    @property
    def counted(self) -> bool:
        """Whether this verdict counts in the tally: a published claim at its home, tested."""
        return self.tested and self.claim.in_family

    def record(self) -> dict[str, Any]:
        """The verdict as a plain dict for the results JSON (what :mod:`.words` reads)."""
        from .words import verdict_word

        c = self.claim
        stat = self.statistic or {}
        record = {
            "id": c.id, "kind": c.kind, "home": c.home, "statement": c.statement, "source": c.source,
            "caveat": c.caveat, "headline": c.headline, "metric": c.metric, "reduce": c.reduce, "series": c.series,
            "published": dict(c.published) if c.published else None, "tolerance": c.tolerance, "model": self.model,
            "measured": self.measured, "depth": self.depth, "numeric_verdict": self.numeric,
            "shape": dict(c.shape) if c.shape else None,
            "test": shape_tests.threshold_text(*c.test) if c.test else None,
            "bound": {"source": c.bound_source, "fraction": c.fraction,
                      "reason": c.fraction_reason} if c.bound_source else None,
            "unit": c.unit, "status": self.status, "reason": self.reason, "outcome": self.outcome,
            "statistic": dict(self.statistic) if self.statistic else None,
            "null": dict(self.null) if self.null else None, "no_null": c.no_null_reason,
            "p": self.p, "p_holds": self.p_holds, "p_fails": self.p_fails, "p_adjusted": self.p_adjusted,
            "mc_error": self.mc_error, "detectable": self.detectable, "family": self.family,
            "fragile": self.fragile, "counted": self.counted, "n_units": stat.get("n_units"),
            "interval": stat.get("interval"), "interval_method": stat.get("method"),
            "sensitivity": _sensitivity(c, stat.get("interval")),
        }
        record["verdict"] = verdict_word(record)
        return record


def evaluate(ledger: Ledger, metrics: Mapping[str, Any], model: str, *, seed: int = 0,
             resamples: int = resample.RESAMPLES, family: int | None = None,
             flips: Mapping[str, list[str]] | None = None) -> list[Verdict]:
    """Verdicts for every claim of ``ledger`` on ``metrics`` of ``model``, decided together
    (:func:`decide`); ``family`` is m (default: :func:`.ledger.family_size`), ``flips`` the claims
    whose verdict a perturbed float path changed ((id, model) → the paths)."""
    found = [judge(claim, metrics, model, seed=seed, resamples=resamples) for claim in ledger.claims]
    return decide(found, family, flips)


def records(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as plain dicts for the results JSON (:meth:`Verdict.record`)."""
    return [v.record() for v in verdicts]


def decide(verdicts: list[Verdict], family: int | None = None,
           flips: Mapping[str, list[str]] | None = None) -> list[Verdict]:
    """The outcome of every tested verdict of one chapter on one model. The counted ones are
    adjusted together (:func:`.pvalues.adjust`, m_k the ledger's counted claims); any other tested
    claim (a check, a hypothesis, a claim whose home is elsewhere) is read at the level of the
    chapter's next discovery, q (R + 1) / m. A verdict is *fragile* when a perturbed float path
    changed it (``flips``), or when its p moved by twice its Monte Carlo error would cross q."""
    m = family or family_size()
    by_model: dict[str, list[int]] = {}
    for i, v in enumerate(verdicts):
        by_model.setdefault(v.model, []).append(i)
    out = list(verdicts)
    for indices in by_model.values():
        group = [verdicts[i] for i in indices]
        counted = [i for i, v in zip(indices, group) if v.counted]
        size = sum(v.claim.in_family for v in group)
        adjusted = pvalues.adjust([verdicts[i].p for i in counted], size, m)
        scale = {i: a / verdicts[i].p if verdicts[i].p else 1.0 for i, a in zip(counted, adjusted)}
        decided = sum(a <= pvalues.Q for a in adjusted)
        for i in indices:
            v = verdicts[i]
            if not v.tested:
                continue
            p_adj = adjusted[counted.index(i)] if i in scale else min(1.0, v.p * m / (decided + 1))
            factor = scale.get(i, m / (decided + 1))
            flipped = (flips or {}).get((v.claim.id, v.model))
            out[i] = _decided(v, p_adj, factor, m, pvalues.threshold(decided, m), flipped)
    return out


def _decided(v: Verdict, p_adj: float, factor: float, m: int, level: float, flipped: list[str] | None) -> Verdict:
    outcome = (HOLDS if v.p_holds <= v.p_fails else FAILS) if p_adj <= pvalues.Q else INCONCLUSIVE
    reasons = [f"its verdict changed on a perturbed float path ({', '.join(flipped)})"] if flipped else []
    if v.mc_error and (min(1.0, (v.p - 2 * v.mc_error) * factor) <= pvalues.Q) != (
            min(1.0, (v.p + 2 * v.mc_error) * factor) <= pvalues.Q):
        reasons.append(f"its p ({v.p:.2g}) is within twice its Monte Carlo error ({v.mc_error:.1g}) of the threshold")
    detectable = pvalues.detectable(v.se, level) if outcome == INCONCLUSIVE and v.se else None
    return replace(v, outcome=outcome, p_adjusted=p_adj, family=m, detectable=detectable,
                   fragile="; ".join(reasons) or None)


# --------------------------------------------------------------------------- one claim, once through

def judge(claim: Claim, metrics: Mapping[str, Any], model: str, *, seed: int = 0,
          resamples: int = resample.RESAMPLES) -> Verdict:
    """One claim's statistic and p-values on ``metrics``, not yet decided (:func:`decide`)."""
    model = claim.measured_on or model
    raw = lookup(metrics, claim.metric)
    if raw is None:
        return Verdict(claim, model, status=NOT_MEASURED, reason=_absence(claim, metrics))
    series_test = claim.test is not None and claim.test[0] not in shape_tests.SCALAR_SHAPES
    if claim.reduce == "value" and np.ndim(raw) > 0 and series_test:
        measured = _point(claim, raw)
    else:
        measured = reducers.reduce_metric(raw, claim.reduce, claim.series)
    found = dict(claim=claim, model=model, measured=measured, numeric=_numeric(claim, measured, model),
                 depth=reducers.where(claim.reduce, raw, claim.series))
    if claim.test is None or claim.by_construction:
        status = BY_CONSTRUCTION if claim.by_construction else DESCRIPTIVE
        return Verdict(**found, status=status, reason=claim.by_construction or claim.description)
    if claim.unit is None:
        return Verdict(**found, status=DESCRIPTIVE, reason="no sampling unit declared")
    rng = resample.generator(seed, claim.id)
    shape = _shape_evidence(claim, metrics, raw, resamples, rng)
    if isinstance(shape, str):
        return Verdict(**found, status=DESCRIPTIVE, reason=shape)
    statistic = {"name": _statistic_name(claim), "value": shape.point, "n_units": shape.n, "method": shape.method,
                 "interval": list(shape.interval), "p_holds": shape.p_holds, "p_fails": shape.p_fails}
    null = _null_evidence(claim, metrics, raw, shape, resamples, rng)
    if isinstance(null, str):
        return Verdict(**found, status=DESCRIPTIVE, reason=null, statistic=statistic)
    parts = [shape] + ([null[1]] if null and null[1] else [])
    p_holds, p_fails = pvalues.combine([(e.p_holds, e.p_fails) for e in parts])
    se = max((e.se or 0.0) for e in parts) or None
    return Verdict(**found, statistic=statistic, null=null[0] if null else None, p_holds=p_holds, p_fails=p_fails,
                   mc_error=max(e.mc_error for e in parts), se=se)


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
    """The tested statistic on the run's own metric."""
    return float(_reducer(claim)(np.asarray(raw, dtype=float)[None])[0])


def _statistic_name(claim: Claim) -> str:
    test = claim.test[0]
    if test in shape_tests.STATISTICS:
        return shape_tests.STATISTICS[test][0]
    if test == shape_tests.LOCATION:
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


def _shape_evidence(claim: Claim, metrics, raw, resamples: int, rng) -> Evidence | str:
    """The shape test's evidence, or why there is none."""
    point = _point(claim, raw)
    if isinstance(claim.samples, Mapping) and "draws" in claim.samples:
        return _drawn(claim, metrics, point)
    statistic = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(statistic, samples.Missing):
        return str(statistic)
    reduce = _reducer(claim)
    full = float(reduce(statistic.point()[None])[0])
    if not math.isclose(full, point, rel_tol=1e-4, abs_tol=1e-6):
        raise LedgerError(f"claim '{claim.id}': {statistic.source} gives {full:.6g}, but the metric gives "
                          f"{point:.6g}; the per-unit samples must rebuild the metric")
    if statistic.n_units < resample.MIN_UNITS:
        return f"only {statistic.n_units} {claim.unit}: fewer than {resample.MIN_UNITS}, too few for a test"
    if claim.test[0] == shape_tests.LOCATION:
        return _location(claim, statistic, raw, point, resamples, rng)
    values = _unit_values(claim, statistic, reduce)
    if values is not None:
        return _exact(claim, values, point, _sides(claim), statistic, reduce, resamples, rng)
    return _bootstrapped(statistic, reduce, point, _sides(claim), resamples, rng)


def _unit_values(claim: Claim, statistic: samples.Statistic, reduce) -> np.ndarray | None:
    """Each unit's own value [n] when the statistic is their plain mean (a linear reduce of a mean,
    or a mean over seeds of one); else None."""
    linear_test = claim.test[0] in ("rises", "falls") or (
        claim.test[0] in shape_tests.SCALAR_SHAPES and reducers.is_linear(claim.reduce))
    if not linear_test:
        return None
    data = statistic.data.mean(axis=0) if isinstance(statistic, samples.Seeded) else statistic.linear()
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
        return Evidence("binomial (exact)", point, interval, n, p_holds, p_fails, se=np.sqrt(point * (1 - point) / n))
    if n >= pvalues.SMALL_N:
        return _bootstrapped(statistic, reduce, point, sides, resamples, rng)
    p_holds, p_fails = pvalues.combine([pvalues.sign_flip(sign * (values - t)) for sign, t in sides])
    return Evidence("sign-flip (exact)", point, pvalues.sign_flip_interval(values), n, p_holds, p_fails,
                    se=float(np.std(values, ddof=1) / np.sqrt(n)))


def _bootstrapped(statistic, reduce, point: float, sides, resamples: int, rng, other=None,
                  method: str = "bootstrap (BCa)") -> Evidence | str:
    """BCa p-values on each side of each part, and the BCa interval (:mod:`.resample`)."""
    draws = resample.bootstrap(statistic, reduce, resamples, rng, other)
    jack = resample.jackknife(statistic, reduce, other)
    draws, jack = draws[np.isfinite(draws)], jack[np.isfinite(jack)]
    if len(draws) < resamples / 2 or len(jack) < 2:
        return "the statistic is undefined on most resamples"
    parts, errors = [], []
    for sign, t in sides:
        above, e1 = resample.bca_p(sign * draws, sign * point, sign * jack, sign * t)
        below, e2 = resample.bca_p(-sign * draws, -sign * point, -sign * jack, -sign * t)
        parts.append((above, below))
        errors += [e1, e2]
    p_holds, p_fails = pvalues.combine(parts)
    return Evidence(method, point, resample.bca_interval(draws, point, jack), statistic.n_units, p_holds, p_fails,
                    mc_error=max(errors), se=float(np.std(draws, ddof=1)))


def _location(claim: Claim, statistic, raw, point: float, resamples: int, rng) -> Evidence:
    """Where the re-found peak lies on each resample: p₊ the share outside the window, p₋ inside."""
    a, b = claim.test[1]["window"]
    draws = resample.bootstrap(statistic, _reducer(claim), resamples, rng)
    inside = (draws >= a - 1e-9) & (draws <= b + 1e-9)
    p_holds, p_fails = pvalues.share_p(draws, inside)
    lo, hi = np.quantile(draws, [0.025, 0.975], method="inverted_cdf")
    return Evidence("location (resamples)", point, (float(lo), float(hi)), statistic.n_units, p_holds, p_fails,
                    mc_error=float(np.sqrt(p_holds * (1 - p_holds) / len(draws))))


def _drawn(claim: Claim, metrics, point: float) -> Evidence | str:
    """``samples: {draws, n_units}``: resamples a chapter drew itself (e.g. over seeds, then
    sentences): p from the share of draws on each side, and their percentile interval."""
    try:
        draws = np.asarray(lookup(metrics, claim.samples["draws"]), dtype=float)
        n_units = int(lookup(metrics, claim.samples["n_units"])) if "n_units" in claim.samples else len(draws)
    except (KeyError, TypeError, ValueError):
        return f"no resamples at '{claim.samples['draws']}'"
    if n_units < resample.MIN_UNITS:
        return f"only {n_units} {claim.unit}: fewer than {resample.MIN_UNITS}, too few for a test"
    reduced = draws if draws.ndim == 1 else _reducer(claim)(draws)
    reduced = reduced[np.isfinite(reduced)]
    parts = [pvalues.share_p(reduced, sign * (reduced - t) > 0) for sign, t in _sides(claim)]
    p_holds, p_fails = pvalues.combine(parts)
    lo, hi = np.quantile(reduced, [0.025, 0.975])
    return Evidence("resamples (the chapter's own)", point, (float(lo), float(hi)), n_units, p_holds, p_fails,
                    mc_error=float(np.sqrt(p_holds * (1 - p_holds) / len(reduced))), se=float(np.std(reduced, ddof=1)))


# --------------------------------------------------------------------------- the null

def _null_evidence(claim: Claim, metrics, raw, shape: Evidence, resamples: int, rng):
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
            null = np.asarray(lookup(metrics, spec["draws"]), dtype=float).ravel()
        except KeyError:
            return f"its null was not measured on this run ('{spec['draws']}')"
        p_holds, p_fails = pvalues.permutation_p(sign * shape.point, sign * null)
        record.update(value=float(np.mean(null)), distribution=f"{len(null)} draws")
        return record, Evidence("permutation", shape.point, shape.interval, len(null), p_holds, p_fails)
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
        value = float(found) if np.ndim(found) == 0 else _point(claim, found)
    record.update(value=value, distribution="exact" if kind in EXACT_NULLS else "a single value (no distribution)")
    found = _against(claim, metrics, raw, shape, [(sign, value)], resamples, rng)
    if isinstance(found, str):
        return found
    record.update(difference_value=shape.point - value, difference=[x - value for x in found.interval])
    return record, found


def _null_sign(claim: Claim) -> float | None:
    """The side of its null a claim's statistic must lie on: the side of an above/below test,
    the null's ``side`` for a between test, above for a series test, none for a location."""
    test = claim.test[0]
    if test == shape_tests.LOCATION:
        return None
    if test == "between":
        side = claim.null.get("side")
        return None if side is None else (1.0 if side == "above" else -1.0)
    return -1.0 if test == "below" else 1.0


def _against(claim: Claim, metrics, raw, shape: Evidence, sides, resamples: int, rng) -> Evidence | str:
    """The claim's statistic tested against the thresholds ``sides`` by the shape test's own design."""
    statistic = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(statistic, samples.Missing):
        return replace(shape, p_holds=1.0, p_fails=1.0)
    values = _unit_values(claim, statistic, _reducer(claim))
    if values is not None:
        return _exact(claim, values, shape.point, sides, statistic, _reducer(claim), resamples, rng)
    return _bootstrapped(statistic, _reducer(claim), shape.point, sides, resamples, rng)


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
    reduce = _reducer(claim)
    record.update(value=float(reduce(other.point()[None])[0]),
                  distribution=f"{other.n_seeds} seeds, unit by unit" if other.n_seeds else "one run, unit by unit")
    if other.n_seeds:
        record["seed_values"] = [float(x) for x in reduce(other.per_seed())]
    a, b = _unit_values(claim, own, reduce), _unit_values(claim, other, reduce)
    point = float(reduce(own.point()[None])[0] - reduce(other.point()[None])[0])
    record["difference_value"] = point
    a, b = _unit_values(claim, own, reduce), _unit_values(claim, other, reduce)
    if a is not None and b is not None and len(a) < pvalues.SMALL_N:
        d = sign * (a - b)
        record["difference"] = list(pvalues.sign_flip_interval(a - b))
        return record, Evidence("sign-flip (exact), unit by unit", point, tuple(record["difference"]), len(d),
                                *pvalues.sign_flip(d), se=float(np.std(d, ddof=1) / np.sqrt(len(d))))
    found = _bootstrapped(own, reduce, point, [(sign, 0.0)], resamples, rng, other=other,
                          method="bootstrap (BCa), unit by unit")
    if isinstance(found, str):
        return f"the difference from the controls: {found}"
    record["difference"] = list(found.interval)
    return record, found


# --------------------------------------------------------------------------- words that need the ledger

def _sensitivity(claim: Claim, interval) -> dict[str, Any] | None:
    """For a bound derived from ``fraction`` (f · published or published / f), the values of f at
    which the 95 % interval would clear it or lie past it: it clears it for f below
    ``holds_below`` and lies past it from ``fails_from`` on (None: for every f, or for no f)."""
    if claim.bound_source != "fraction" or not interval:
        return None
    lo, hi = interval
    p = float(claim.published["value"])
    if claim.test[0] == "above":
        holds_below, fails_from = lo / p, hi / p
    else:
        holds_below = p / hi if hi > 0 else None
        fails_from = p / lo if lo > 0 else None
    return {"bound": "fraction", "fraction": claim.fraction, "holds_below": holds_below, "fails_from": fails_from}


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
