"""A claim's null, judged as a distribution: the difference statistic − null and its intervals.

A claim with a null must also beat it (book/methods.md, "How a verdict is made"): the interval of
the difference must clear 0 in the claim's direction. The null comes in one of four forms
(``null:`` in the ledger, book/claims/ledger.py):

* ``value`` — an exact expectation (chance, uniform attention): the difference is the claim's
  resamples minus that number;
* ``draws`` — a distribution of the null statistic (permutations, random positions): one draw
  against each resample of the claim;
* ``samples`` — the null measured on the same units (random-init controls, with their seeds):
  the claim's statistic minus the null's, each reduced as the claim reduces, on the same unit
  draws (seeds resampled too), with the controls' seed-to-seed spread as the effect-size unit.
  Fewer than :data:`MIN_SEEDS` seeds of a control are too few for a distribution: the null is
  marked ``insufficient`` and the claim is *descriptive* (claims.judge);
* ``metric`` — one value of a null metric: reported as "a single value (no distribution)"; a
  control's single value is one seed, too few (the claim is descriptive).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import resample, samples
from .ledger import EXACT_NULLS, NULL_KINDS, Claim, lookup

ALPHA = 1 - resample.LEVEL
MIN_SEEDS = 3
"""The fewest random-init control seeds that make a null distribution (book/methods.md)."""


def judge_null(claim: Claim, metrics, judged, resamples: int, rng, m: int, reducer, point) -> dict[str, Any] | None:
    """The claim's null (module docstring): its value and the intervals of the difference. ``judged``
    holds the claim's point value and resampled draws; ``reducer`` reduces resampled series as the
    claim does ([B, …] → [B]) and ``point`` one series to the claim's number."""
    if not claim.null:
        return None
    spec, kind = claim.null, claim.null["kind"]
    record = {"kind": kind, "label": NULL_KINDS[kind], "value": None, "distribution": None, "difference": None,
              "adjusted_difference": None, "note": None, "side": spec.get("side")}
    if "value" in spec:
        record.update(value=float(spec["value"]), distribution="exact")
        return _difference(record, judged.point - record["value"], judged.draws - record["value"], m)
    if "draws" in spec:
        try:
            null_draws = np.asarray(lookup(metrics, spec["draws"]), dtype=float).ravel()
        except KeyError:
            record["note"] = f"not measured on this run ('{spec['draws']}')"
            return record
        picked = null_draws[rng.integers(0, len(null_draws), size=len(judged.draws))]
        record.update(value=float(np.mean(null_draws)), distribution=f"{len(null_draws)} draws")
        return _difference(record, judged.point - float(np.mean(null_draws)), judged.draws - picked, m)
    if "samples" in spec:
        return _paired(claim, metrics, record, resamples, rng, m, reducer)
    try:
        raw = lookup(metrics, spec["metric"])
    except KeyError:
        raw = None
    if raw is None:
        record["note"] = f"not measured on this run ('{spec['metric']}')"
        return record
    value = float(raw) if np.ndim(raw) == 0 else point(raw)
    if kind == "control":  # one control value: one seed
        record.update(value=value, insufficient=True, note=f"a single random-init control value: fewer than "
                                                           f"{MIN_SEEDS} seeds, too few for a null distribution")
        return record
    exact = kind in EXACT_NULLS
    record.update(value=value, distribution="exact" if exact else "a single value (no distribution)")
    return _difference(record, judged.point - value, judged.draws - value, m)


def _paired(claim: Claim, metrics, record, resamples: int, rng, m: int, reducer) -> dict[str, Any]:
    """A null measured on the same units (a random-init control's sentences, with its seeds): the
    claim's statistic minus the null's, each reduced as the claim reduces, on the same unit draws."""
    own = samples.find(metrics, claim.samples if claim.samples is not None else claim.metric)
    other = samples.find(metrics, claim.null["samples"])
    for found in (own, other):
        if isinstance(found, samples.Missing):
            record["note"] = str(found)
            return record
    if own.n_units != other.n_units:
        record["note"] = f"the null has {other.n_units} units, the claim {own.n_units}: not the same units"
        return record
    seeds = other.n_seeds or 1
    if claim.null["kind"] == "control" and seeds < MIN_SEEDS:
        record.update(insufficient=True, note=f"only {seeds} random-init control seed{'s' if seeds > 1 else ''}: "
                                              f"fewer than {MIN_SEEDS}, too few for a null distribution")
        return record
    reduce = reducer
    record.update(value=float(reduce(other.point()[None])[0]),
                  distribution=f"{other.n_seeds} seeds, unit by unit" if other.n_seeds else "one run, unit by unit")
    drawn = resample.resample_difference(own, other, reduce, resamples, rng)
    if drawn.method is None:
        record["note"] = f"only {drawn.n_units} units: too few for the difference's interval"
        return record
    if other.n_seeds:
        seeds = reduce(other.per_seed())
        spread = float(np.std(seeds, ddof=1)) if len(seeds) > 1 else 0.0
        record.update(seed_values=[float(x) for x in seeds], effect_size=drawn.point / spread if spread > 0 else None)
    return _difference(record, drawn.point, drawn.draws, m, drawn)


def _difference(record, point: float, draws: np.ndarray, m: int, found: resample.Resampled | None = None):
    found = found or resample.Resampled(point, draws, len(draws), "percentile")
    if found.method is None:
        found = resample.Resampled(point, draws, len(draws), "percentile")
    a, b = found.interval(resample.LEVEL), found.interval(1 - ALPHA / m)
    record.update(difference=[a.low, a.high], adjusted_difference=[b.low, b.high], difference_value=point)
    return record
