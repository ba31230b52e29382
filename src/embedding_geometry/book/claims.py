"""Published claims as data, their verdicts on this run, and the results JSON.

Each chapter keeps its ledger in ``data/claims/<slug>.yaml``::

    claims:
      - id: short-kebab-id
        statement: what the text says, in its words
        source: seed file and section
        metric: key path into the chapter's metrics ("pair_cosine.hard")
        reduce: how the metric becomes one number (book.reducers; default "value")
        series: depths            # or blocks: what the metric's last axis runs over (book.reducers)
        published: {value: 0.88, model: mixedbread-ai/mxbai-embed-large-v1}   # optional
        tolerance: 0.01           # |this run − published| allowed for a numeric match
        shape: {test: above, args: {bound: 0.5}, statement: model-agnostic form of the claim}
        measured_on: org/model    # the metric is another model's run (a per-model key)
        # --- the interval (book.intervals)
        unit: sentences           # pairs | queries | texts | documents | tokens | dimensions | topics
        samples: <key>            # metrics["per_unit"][<key>], [n_units, …], mean over axis 0 =
                                  # the metric; default: the claim's metric key. Or {path: a.b}
                                  # (a key path from the top of metrics), or [numerator, denominator]
                                  # for a ratio of means (each a key or {path: …}); {minuend, subtrahend}
                                  # for a difference on the same units; {interval, n_units} (paths) for
                                  # a statistic the chapter bootstrapped itself (no mean of its units).
        null: {kind: control, metric: <key>}   # or {kind: chance, value: 0.25}; kinds: NULL_KINDS
        # --- how strict
        fraction: 0.5             # the bound is this share of the published magnitude (above:
        fraction_reason: "…"      # f · published; below: published / f); the table marks it
        # --- claims that get no counted verdict
        by_construction: "<why it holds on every model>"   # shown, not counted
        description: "<why there is no model-agnostic test>"   # with no shape test
        not_measured: "<why, when the metric is None>"      # optional; else the chapter's
                                                            # metrics["not_measured"][<metric>]
        headline: true            # a candidate for the chapter's "What this run found" box
    errata:
      - id, statement, prose_value, data_value, evidence

**Verdicts** (one per claim; VERDICT_MEANINGS says each once). A claim with a shape test gets
``holds`` / ``does not hold`` / ``inconclusive`` from its 95 % bootstrap interval against the
test's bound and its null (book.shapes); without a declared ``unit`` (or without the per-unit
samples) the value alone is judged and the verdict says ``(no interval)``. ``by construction``
and ``description`` claims are shown but not counted; a metric that is None is ``not measured``,
with the reason. Separately, a **numeric** verdict (reproduced / not reproduced within
``tolerance``) is given only when this run's model is the published model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from . import intervals, reducers, reproducibility, shapes
from ..core.errors import BookError
# Re-exported, so that a chapter needs only ``claims`` (verdict words, prose, reducers, shapes, results).
from .claim_text import (BY_CONSTRUCTION, COUNTED, DESCRIPTION, FAILS, HOLDS, INCONCLUSIVE,  # noqa: F401
                         NO_INTERVAL, NOT_MEASURED, VERDICT_MEANINGS, VERDICTS, _fmt, chapter_summary, findings,
                         glued_text, markdown_values, prose_values, row, sentence, summary_omissions, tally,
                         verdict_legend, verdict_of, verdict_text)
from .reducers import REDUCERS, reduce_metric  # noqa: F401
from .results import environment, to_jsonable, write_results  # noqa: F401
from .shapes import SERIES_SHAPES, SHAPES  # noqa: F401


NULL_KINDS = {"control": "random-init control", "chance": "chance", "permuted_labels": "permuted labels",
              "uniform_attention": "uniform attention", "random_positions": "random positions",
              "seeds": "two seeds of one loss"}


class LedgerError(BookError, ValueError):
    """A claims ledger entry is malformed."""


# --------------------------------------------------------------------------- the ledger

@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    source: str
    metric: str
    reduce: str = "value"
    published: Mapping[str, Any] | None = None
    tolerance: float | None = None
    shape: Mapping[str, Any] | None = None
    measured_on: str | None = None  # the model the metric is measured on, when not the chapter's model
    series: str = "depths"
    unit: str | None = None
    samples: Any = None
    null: Mapping[str, Any] | None = None
    fraction: float | None = None
    fraction_reason: str | None = None
    by_construction: str | None = None
    description: str | None = None
    not_measured: str | None = None
    headline: bool = False

    def __post_init__(self) -> None:
        try:
            reducers.parse(self.reduce)
        except ValueError as error:
            self._refuse(str(error))
        self._check_kinds()
        self._check_shape()

    def _refuse(self, message: str) -> None:
        raise LedgerError(f"claim '{self.id}': {message}")

    def _check_kinds(self) -> None:
        if self.series not in reducers.SERIES_KINDS:
            self._refuse(f"series must be one of {reducers.SERIES_KINDS}; got {self.series!r}")
        if self.unit is not None and self.unit not in intervals.UNITS:
            self._refuse(f"unit must be one of {intervals.UNITS}; got {self.unit!r}")
        if self.samples is not None and self.unit is None:
            self._refuse("samples needs a unit (what one row of the samples is)")
        if isinstance(self.samples, Mapping) and "interval" in self.samples and (self.shape or {}).get("test") in SERIES_SHAPES:
            self._refuse("a stored interval judges one number; a series test needs per-unit samples")
        if self.null is not None:
            if self.null.get("kind") not in NULL_KINDS or ("metric" in self.null) == ("value" in self.null):
                self._refuse(f"null needs kind (one of {sorted(NULL_KINDS)}) and either metric or value; got {dict(self.null)}")
        for name in ("by_construction", "description", "not_measured", "fraction_reason"):
            if getattr(self, name) is not None and not str(getattr(self, name)).strip():
                self._refuse(f"{name} must say why")

    def _check_shape(self) -> None:
        if self.shape is None:
            if self.fraction is not None:
                self._refuse("fraction needs a shape test")
            return
        test, args = self.shape.get("test"), self.shape.get("args", {})
        if test not in shapes.SHAPES:
            self._refuse(f"shape test must be one of {sorted(shapes.SHAPES)}; got {test!r}")
        if self.description is not None:
            self._refuse("a claim with a shape test is not a description")
        if self.fraction is not None:
            if not 0 < float(self.fraction) <= 1 or not self.fraction_reason:
                self._refuse("fraction must be in (0, 1] and come with fraction_reason")
            if test not in ("above", "below") or "bound" in args or not self.published:
                self._refuse("fraction derives the bound of an above/below test from the published value; "
                             "give no args.bound")
        elif test in ("above", "below") and "bound" not in args:
            self._refuse(f"shape test '{test}' needs args.bound (or a fraction of the published value)")
        elif test == "between" and not {"low", "high"} <= set(args):
            self._refuse("shape test 'between' needs args.low and args.high")

    @property
    def test(self) -> tuple[str, dict[str, Any]] | None:
        """(test, args) with the bound a ``fraction`` derives: above f · published, below
        published / f."""
        if not self.shape:
            return None
        test, args = self.shape["test"], dict(self.shape.get("args", {}))
        if self.fraction is not None:
            magnitude = float(self.published["value"])
            args["bound"] = self.fraction * magnitude if test == "above" else magnitude / self.fraction
        return test, args


@dataclass(frozen=True)
class Ledger:
    chapter: str
    claims: list[Claim]
    errata: list[Mapping[str, Any]] = field(default_factory=list)


def load(slug: str, folder: str | Path | None = None) -> Ledger:
    """Read ``data/claims/<slug>.yaml`` (from the package, or from ``folder``)."""
    path = Path(folder) / f"{slug}.yaml" if folder else resources.files("embedding_geometry") / "data" / "claims" / f"{slug}.yaml"
    data = yaml.safe_load(path.read_text())
    items = [{"null" if key is None else key: value for key, value in item.items()}  # YAML reads `null:` as None
             for item in data.get("claims", [])]
    for item in items:
        unknown = sorted(set(item) - set(Claim.__dataclass_fields__))
        if unknown:
            raise LedgerError(f"claim '{item.get('id')}' in {slug}.yaml has unknown fields {unknown}")
    return Ledger(chapter=slug, claims=[Claim(**item) for item in items], errata=list(data.get("errata", [])))


def lookup(metrics: Mapping[str, Any], path: str) -> Any:
    """``metrics["a"]["b"]`` for the path ``"a.b"``."""
    value: Any = metrics
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"metric '{path}' is not in this chapter's metrics (missing '{part}')")
        value = value[part]
    return value


# --------------------------------------------------------------------------- verdicts

@dataclass(frozen=True)
class Verdict:
    claim: Claim
    measured: float | None  # None: the metric could not be measured on this model
    model: str
    numeric: str | None  # "reproduced", "not reproduced", or None (another model)
    shape: str | None  # the shape test on the measured value alone: "holds", "does not hold", "not measured"
    verdict: str | None = None  # one of VERDICTS
    interval: tuple[float, float] | None = None  # 95 % bootstrap interval of ``measured``
    interval_note: str | None = None  # why there is no interval
    n_units: int | None = None
    null: Mapping[str, Any] | None = None  # {kind, label, metric, value, note}
    statistic: Mapping[str, Any] | None = None  # series tests: {name, value, interval, support}
    depth: str | None = None  # the depth a positional reducer landed on
    reason: str | None = None  # by construction / not measured / description: why
    margin: float | None = None  # how far the judged interval is from changing the verdict (shapes.margin)
    deviation: float | None = None  # the float noise the statistic may take on another machine
    fragile: str | None = None  # why float noise could flip the verdict, or None

    @property
    def label(self) -> str:
        """The verdict, one of VERDICTS."""
        return verdict_text(None, self.shape, self.verdict, self.measured is not None)

    @property
    def summary(self) -> str:
        """The verdict, and the numeric verdict where there is one."""
        return verdict_text(self.numeric, self.shape, self.verdict, self.measured is not None)

    def record(self) -> dict[str, Any]:
        """The verdict as a plain dict for the results JSON (what ``claim_text`` reads)."""
        c, test = self.claim, self.claim.test
        return {
            "id": c.id, "statement": c.statement, "source": c.source, "metric": c.metric, "reduce": c.reduce,
            "series": c.series, "published": dict(c.published) if c.published else None, "tolerance": c.tolerance,
            "measured": self.measured, "model": self.model, "numeric_verdict": self.numeric,
            "shape": dict(c.shape) if c.shape else None, "shape_verdict": self.shape,
            "test": shapes.threshold_text(*test) if test else None, "verdict": self.label,
            "reason": self.reason, "depth": self.depth, "unit": c.unit, "n_units": self.n_units,
            "interval": list(self.interval) if self.interval else None, "interval_note": self.interval_note,
            "statistic": _listed(self.statistic), "null": dict(self.null) if self.null else None,
            "fraction": c.fraction, "fraction_reason": c.fraction_reason, "headline": c.headline,
            "counted": self.label in COUNTED, "margin": self.margin, "float_deviation": self.deviation,
            "fragile": self.fragile,
        }


def evaluate(ledger: Ledger, metrics: Mapping[str, Any], model: str, *, seed: int = 0,
             resamples: int = intervals.RESAMPLES) -> list[Verdict]:
    """Verdicts for every claim of ``ledger`` against this run's ``metrics`` on ``model``; the
    bootstrap draws ``resamples`` resamples from a generator seeded by (``seed``, claim id)."""
    return [_stability(ledger.chapter, _verdict(claim, metrics, model, seed, resamples), metrics)
            for claim in ledger.claims]


def _stability(chapter: str, verdict: Verdict, metrics: Mapping[str, Any]) -> Verdict:
    """``verdict`` with its float deviation, and marked fragile when its margin is smaller than
    that deviation or a perturbed float path gave it another verdict (book.reproducibility)."""
    if verdict.margin is None:
        return verdict
    deviation = reproducibility.claim_deviation(chapter, verdict.claim.metric, lookup(metrics, verdict.claim.metric),
                                                verdict.record())
    reasons = []
    if verdict.margin < deviation:
        reasons.append(f"its margin {_fmt(verdict.margin)} is within the float noise of its statistic ({_fmt(deviation)})")
    if flips := reproducibility.flipped(chapter, verdict.claim.id, verdict.model):
        reasons.append(f"its verdict changed on a perturbed float path ({', '.join(flips)})")
    return replace(verdict, deviation=deviation, fragile="; ".join(reasons) or None)


def _verdict(claim: Claim, metrics: Mapping[str, Any], model: str, seed: int, resamples: int) -> Verdict:
    model = claim.measured_on or model
    raw = lookup(metrics, claim.metric)
    null = _null(claim, metrics)
    if raw is None:
        return Verdict(claim=claim, measured=None, model=model, numeric=None, null=null,
                       shape=NOT_MEASURED if claim.shape else None, verdict=NOT_MEASURED,
                       reason=_absence(claim, metrics))
    measured = reduce_metric(raw, claim.reduce, claim.series)
    numeric = None
    if claim.published and claim.published.get("model") == model and claim.tolerance is not None:
        close = abs(measured - float(claim.published["value"])) <= claim.tolerance
        numeric = "reproduced" if close else "not reproduced"
    found = dict(claim=claim, measured=measured, model=model, numeric=numeric, null=null,
                 depth=reducers.where(claim.reduce, raw, claim.series))
    if isinstance(claim.samples, Mapping) and "interval" in claim.samples:
        resampled, found["interval"], found["n_units"], found["interval_note"] = None, *_stored_interval(claim, metrics)
    else:
        resampled, found["n_units"], found["interval_note"] = _resample(claim, metrics, measured, seed, resamples)
    if resampled is not None:
        found["interval"] = intervals.percentile_interval(_reduced(claim, resampled))
    if claim.test is None:
        verdict = BY_CONSTRUCTION if claim.by_construction else DESCRIPTION
        return Verdict(**found, shape=None, verdict=verdict, reason=claim.by_construction or claim.description)
    test, args = claim.test
    point = float(shapes.statistic(test, raw)) if test in SERIES_SHAPES else measured
    judged_on = found.get("interval")
    if test in SERIES_SHAPES:
        found["statistic"], judged_on = _series_statistic(test, args, raw, point, resampled, null)
    shape = shapes.judge(test, args, (point, point))
    null_value = null.get("value") if null else None
    if claim.by_construction:
        verdict, found["reason"] = BY_CONSTRUCTION, claim.by_construction
    elif judged_on is None:
        verdict = shapes.judge(test, args, (point, point), null_value) + NO_INTERVAL
        found["margin"] = shapes.margin(test, args, (point, point), null_value)
    else:
        verdict = shapes.judge(test, args, judged_on, null_value)
        found["margin"] = shapes.margin(test, args, judged_on, null_value)
    return Verdict(**found, shape=shape, verdict=verdict)


def _resample(claim: Claim, metrics: Mapping[str, Any], measured: float, seed: int,
              resamples: int) -> tuple[np.ndarray | None, int | None, str | None]:
    """(resampled statistic [B, …], n_units, None), or (None, None, why there is no interval).
    Raises LedgerError when the samples do not reproduce the measured value (the contract)."""
    if claim.unit is None:
        return None, None, "no sampling unit declared"
    samples = intervals.find_samples(metrics, claim.samples if claim.samples is not None else claim.metric)
    if isinstance(samples, str):
        return None, None, samples
    if samples.rest == () and (claim.reduce not in reducers.SCALAR_SAFE or (claim.test and claim.test[0] in SERIES_SHAPES)):
        raise LedgerError(f"claim '{claim.id}': per-unit samples are numbers, but reduce '{claim.reduce}' "
                          f"or the shape test needs a series")
    full = float(_reduced(claim, samples.full()[None])[0])
    if not math.isclose(full, measured, rel_tol=1e-4, abs_tol=1e-6):
        raise LedgerError(f"claim '{claim.id}': {samples.source} gives {full:.6g} after reduce "
                          f"'{claim.reduce}', but the metric gives {measured:.6g}; the per-unit samples "
                          f"must average over axis 0 to the metric")
    rng = intervals.generator(seed, claim.id)
    return intervals.resampled(samples, resamples, rng), samples.n_units, None


def _stored_interval(claim: Claim, metrics: Mapping[str, Any]) -> tuple[tuple[float, float] | None, int | None, str | None]:
    """(interval, n_units, None) from the paths of ``samples: {interval, n_units}``, or
    (None, None, why) when the chapter stored none."""
    try:
        low, high = (float(x) for x in lookup(metrics, claim.samples["interval"]))
        return (low, high), int(lookup(metrics, claim.samples["n_units"])) if "n_units" in claim.samples else None, None
    except (KeyError, TypeError, ValueError):
        return None, None, f"no stored interval at '{claim.samples['interval']}'"


def _reduced(claim: Claim, stats: np.ndarray) -> np.ndarray:
    """The claim's reduce applied to each row of ``stats`` [B, …] → [B]."""
    if stats.ndim == 1:
        return stats
    return reducers.reduce_array(stats, claim.reduce, claim.series).reshape(len(stats))


def _series_statistic(test: str, args: Mapping[str, Any], series: Any, point: float, resampled: np.ndarray | None,
                      null: Mapping[str, Any] | None) -> tuple[dict[str, Any], tuple[float, float] | None]:
    """A series test's statistic with its interval, and the share of resamples that clear the
    threshold (the bound, or the null when stricter)."""
    record: dict[str, Any] = {"name": shapes.STATISTICS[test][0], "value": point, "interval": None, "support": None}
    if resampled is not None:
        values = shapes.statistic(test, resampled, shapes.locate(test, series))
        null_value = (null or {}).get("value")
        threshold = max(float(args.get("bound", 0.0)), -math.inf if null_value is None else null_value)
        record["interval"] = intervals.percentile_interval(values)
        record["support"] = float(np.mean(values > threshold))
    return record, record["interval"]


def _null(claim: Claim, metrics: Mapping[str, Any]) -> dict[str, Any] | None:
    """The claim's null on this run: a given value, or the named metric reduced as the claim's
    own value is (a series test's null is the test's statistic on the null's series)."""
    if not claim.null:
        return None
    kind = claim.null["kind"]
    record = {"kind": kind, "label": NULL_KINDS[kind], "metric": claim.null.get("metric"), "value": None, "note": None}
    if "value" in claim.null:
        record["value"] = float(claim.null["value"])
        return record
    try:
        raw = lookup(metrics, claim.null["metric"])
    except KeyError:
        raw = None
    if raw is None:
        record["note"] = f"not measured on this run ('{claim.null['metric']}')"
    elif np.ndim(raw) == 0:
        record["value"] = float(raw)
    elif claim.test and claim.test[0] in SERIES_SHAPES:
        record["value"] = float(shapes.statistic(claim.test[0], raw))
    else:
        record["value"] = reduce_metric(raw, claim.reduce, claim.series)
    return record


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


# --------------------------------------------------------------------------- tables and records

def records(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as plain dicts for the results JSON (:meth:`Verdict.record`)."""
    return [v.record() for v in verdicts]


def _listed(statistic: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if statistic is None:
        return None
    interval = statistic.get("interval")
    return {**statistic, "interval": list(interval) if interval else None}


def errata_table(ledger: Ledger) -> pd.DataFrame:
    """The post's internal inconsistencies: what the prose says, what its own data says."""
    columns = ["statement", "prose_value", "data_value", "evidence"]
    return pd.DataFrame([{k: e.get(k) for k in columns} for e in ledger.errata], columns=columns)


def table(verdicts: list[Verdict]) -> pd.DataFrame:
    """The chapter's closing table: claim · published (model) · this run (model) · 95 % interval ·
    null · test · verdict · numeric (see :func:`claim_text.row`)."""
    return pd.DataFrame([row(r) for r in records(verdicts)])
