"""Judging a ledger against a run's metrics, each claim once through the stages the package names:
``evaluate(ledger, metrics, model, family=m) → verdicts``. A claim that cannot be tested is *not
tested*, with the reason; a **numeric** verdict (reproduced or not within ``tolerance``) is given
only on the published model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from . import pvalues
from . import reduce as reducers
from .ledger import Claim, Ledger, lookup

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
DESCRIPTIVE, NOT_MEASURED, BY_CONSTRUCTION = "descriptive", "not measured", "by construction"
CANNOT_DECIDE = "cannot decide"
"""Why a claim is not tested (its ``status``)."""
NOT_TESTED = "not tested"
PENDING = "decided when the chapter's last cell has run"
"""What a claim shows between its measurement and the chapter's adjustment (:func:`decide`)."""


def verdict_word(record: Mapping[str, Any]) -> str:
    """A record's verdict word: the one it carries; else :data:`NOT_TESTED` when it has a ``status``,
    its outcome (HOLDS, FAILS or INCONCLUSIVE), or :data:`PENDING` before its chapter decides."""
    if record.get("verdict"):
        return record["verdict"]
    return NOT_TESTED if record.get("status") else record.get("outcome") or PENDING


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
    tested_at: str | None = None  # a claim whose home is another chapter: that chapter, whose verdict this is
    floor: tuple[float, float] = (0.0, 0.0)  # the smallest p₊, p₋ its test can give (pvalues.floors)
    reach: Mapping[str, bool] | None = None  # whether its test can decide holds and does not hold at all

    @property
    def tested(self) -> bool:
        return self.status is None

    @property
    def p(self) -> float | None:
        """The claim's two-sided p (:func:`.pvalues.two_sided`)."""
        return None if self.p_holds is None else pvalues.two_sided(self.p_holds, self.p_fails)

    @property
    def verdict(self) -> str:
        """The verdict word (:func:`verdict_word`)."""
        return verdict_word(self.record())

    @property
    def counted(self) -> bool:
        """Whether this verdict counts in the tally: a published claim at its home, tested."""
        return self.tested and self.claim.in_family

    def record(self) -> dict[str, Any]:
        """The verdict as a plain dict for the results JSON (what :mod:`.words` reads): the claim's
        fields, the verdict's own (``numeric`` as ``numeric_verdict``; not ``se`` and ``floor``,
        which only :func:`decide` reads) and what follows from them."""
        c, stat = self.claim, self.statistic or {}
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("claim", "numeric", "se", "floor")}
        record = {
            **{name: getattr(c, name) for name in _CLAIM_FIELDS}, **own, "numeric_verdict": self.numeric,
            "test": reducers.threshold_text(*c.test) if c.test else None,
            "bound": {"source": c.bound_source, "fraction": c.fraction,
                      "reason": c.fraction_reason} if c.bound_source else None,
            "no_null": c.no_null_reason, "p": self.p, "counted": self.counted, "n_units": stat.get("n_units"),
            "interval": stat.get("interval"), "interval_method": stat.get("method"),
            "sensitivity": _sensitivity(c, stat.get("interval")),
        }
        record = {key: dict(value) if isinstance(value, Mapping) else value for key, value in record.items()}
        record["verdict"] = verdict_word(record)
        return record


_CLAIM_FIELDS = ("id", "kind", "home", "statement", "source", "caveat", "says", "headline", "metric", "reduce",
                 "series", "published", "tolerance", "shape", "unit")


def evaluate(ledger: Ledger, metrics: Mapping[str, Any], model: str, *, family: int, seed: int = 0,
             resamples: int = pvalues.RESAMPLES, flips: Mapping[str, list[str]] | None = None) -> list[Verdict]:
    """Verdicts for every claim of ``ledger`` on ``metrics`` of ``model``, decided together
    (:func:`decide`; ``family`` is m, as :func:`.ledger.family_size` counts it for the book, ``flips``
    the claims whose verdict a perturbed float path changed): a function of its arguments alone."""
    found = [judge_claim(claim, metrics, model, seed=seed, resamples=resamples) for claim in ledger.claims]
    return decide(found, family, flips)


def records(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as plain dicts for the results JSON (:meth:`Verdict.record`)."""
    return [v.record() for v in verdicts]


# --------------------------------------------------------------------------- one claim, once through

def judge_claim(claim: Claim, metrics: Mapping[str, Any], model: str, *, seed: int = 0,
                resamples: int = pvalues.RESAMPLES, test: bool = True) -> Verdict:
    """One claim's statistic and p-values on ``metrics``, not yet decided (:func:`decide`); without
    ``test``, its measured value only (a claim whose verdict is its home's: :func:`at_home`)."""
    model = claim.measured_on or model
    raw = lookup(metrics, claim.metric)
    if raw is None:
        return Verdict(claim, model, status=NOT_MEASURED, reason=_absence(claim, metrics))
    if short := claim.too_short(raw):
        return Verdict(claim, model, status=DESCRIPTIVE, reason=short)
    series_test = claim.test is not None and claim.test[0] not in reducers.SCALAR_SHAPES
    if claim.reduce == "value" and np.ndim(raw) > 0 and series_test:
        measured = claim.point_of(raw)
    else:
        measured = reducers.reduce_metric(raw, claim.reduce, claim.series)
    found = dict(claim=claim, model=model, measured=measured, numeric=_numeric(claim, measured, model),
                 depth=reducers.where(claim.reduce, raw, claim.series))
    if not test:
        return Verdict(**found)
    if claim.test is None or claim.by_construction or claim.description:
        status = BY_CONSTRUCTION if claim.by_construction else DESCRIPTIVE
        return Verdict(**found, status=status, reason=claim.by_construction or claim.description)
    if claim.unit is None:
        return Verdict(**found, status=DESCRIPTIVE, reason="no sampling unit declared")
    rng = pvalues.generator(seed, claim.id)
    shape = pvalues.shape(claim, metrics, raw, resamples, rng)
    if isinstance(shape, str):
        return Verdict(**found, status=DESCRIPTIVE, reason=shape)
    statistic = {"name": claim.statistic_name, "value": shape.point, "n_units": shape.n,
                 "method": shape.method, "interval": list(shape.interval), "p_holds": shape.p_holds,
                 "p_fails": shape.p_fails}
    null = pvalues.null(claim, metrics, raw, shape, resamples, rng)
    if isinstance(null, str):
        return Verdict(**found, status=DESCRIPTIVE, reason=null, statistic=statistic)
    parts = [shape] + ([null[1]] if null and null[1] else [])
    p_holds, p_fails = pvalues.combine([(e.p_holds, e.p_fails) for e in parts])
    se = max((e.se or 0.0) for e in parts) or None
    return Verdict(**found, statistic=statistic, null=null[0] if null else None, p_holds=p_holds, p_fails=p_fails,
                   mc_error=max(e.mc_error for e in parts), se=se, floor=pvalues.combine([e.floor for e in parts]))


def _numeric(claim: Claim, measured: float, model: str) -> str | None:
    if claim.published and claim.published.get("model") == model and claim.tolerance is not None:
        close = abs(measured - float(claim.published["value"])) <= claim.tolerance
        return "reproduced" if close else "not reproduced"
    return None


# ------------------------------------------------------------ the adjustment: a chapter's claims together

def decide(verdicts: list[Verdict], family: int, flips: Mapping[str, list[str]] | None = None) -> list[Verdict]:
    """The outcome of every tested verdict of one chapter on one model. The counted ones are
    adjusted together (:func:`.pvalues.adjust`, m_k the ledger's counted claims); a hypothesis or a
    claim whose home is elsewhere is read at the level of the chapter's next discovery,
    q (R + 1) / m; a check of the pipeline, a test of the code rather than a finding, at q alone.
    A verdict is *fragile* when a perturbed float path changed it (``flips``), or when its p moved
    by twice its Monte Carlo error would cross q. A verdict that carries its home's record keeps it."""
    m = family
    by_model: dict[str, list[int]] = {}
    for i, v in enumerate(verdicts):
        by_model.setdefault(v.model, []).append(i)
    out = list(verdicts)
    for indices in by_model.values():
        size = sum(verdicts[i].claim.in_family for i in indices)
        for i in indices:
            out[i] = _reached(verdicts[i], size, m)
        counted = [i for i in indices if out[i].counted]
        adjusted = pvalues.adjust([out[i].p for i in counted], size, m)
        scale = {i: a / out[i].p if out[i].p else 1.0 for i, a in zip(counted, adjusted)}
        decided = sum(a <= pvalues.Q for a in adjusted)
        for i in indices:
            v = out[i]
            if not v.tested or v.tested_at:  # not tested, or decided at its home (:func:`at_home`)
                continue
            factor = scale.get(i, 1.0 if v.claim.kind == "pipeline" else m / (decided + 1))
            p_adj = adjusted[counted.index(i)] if i in scale else min(1.0, v.p * factor)
            flipped = (flips or {}).get((v.claim.id, v.model))
            out[i] = _decided(v, p_adj, factor, m, pvalues.threshold(decided, m), flipped)
    return out


def _reached(v: Verdict, size: int, m: int) -> Verdict:
    """A counted claim whose test cannot reach both *holds* and *does not hold* at its n
    (:func:`.pvalues.reachable`) is not tested, with why: it could not have failed, or not passed."""
    if not v.counted:
        return v
    reach = pvalues.reachable(v.floor, size, m)
    if all(reach.values()):
        return replace(v, reach=reach)
    missing = " or ".join(f"'{word}'" for word, can in reach.items() if not can)
    why = (f"its test cannot reach {missing} at n = {v.statistic['n_units']} ({v.statistic['method']}): the "
           f"smallest p it can give is above q·m_k/m = {pvalues.Q * size / m:.2g}, the most lenient threshold of "
           f"its chapter")
    return replace(v, status=CANNOT_DECIDE, reason=why, reach=reach)


def at_home(verdict: Verdict, record: Mapping[str, Any] | None) -> Verdict:
    """``verdict`` of a claim whose home is another chapter, carrying the home chapter's ``record``
    for the same claim and model — its statistic, p-values and outcome, or why it is not tested
    there: one verdict per claim and model across the book. Without a home record (a home the
    build has not run) the verdict stays as it is."""
    if not verdict.claim.home or not record:
        return verdict
    return replace(verdict, **{name: record.get(name) for name in _FROM_HOME}, mc_error=record.get("mc_error") or 0.0,
                   tested_at=verdict.claim.home)


_FROM_HOME = ("status", "reason", "statistic", "null", "p_holds", "p_fails", "outcome", "p_adjusted", "family",
              "detectable", "fragile")


def _decided(v: Verdict, p_adj: float, factor: float, m: int, level: float, flipped: list[str] | None) -> Verdict:
    outcome = (HOLDS if v.p_holds <= v.p_fails else FAILS) if p_adj <= pvalues.Q else INCONCLUSIVE
    reasons = [f"its verdict changed on a perturbed float path ({', '.join(flipped)})"] if flipped else []
    if v.mc_error and (min(1.0, (v.p - 2 * v.mc_error) * factor) <= pvalues.Q) != (
            min(1.0, (v.p + 2 * v.mc_error) * factor) <= pvalues.Q):
        reasons.append(f"its p ({v.p:.2g}) is within twice its Monte Carlo error ({v.mc_error:.1g}) of the threshold")
    detectable = pvalues.detectable(v.se or 0.0, level) if outcome == INCONCLUSIVE else None
    return replace(v, outcome=outcome, p_adjusted=p_adj, family=m, detectable=detectable,
                   fragile="; ".join(reasons) or None)


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
