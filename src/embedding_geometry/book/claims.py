"""Published claims as data, their verdicts on this run, and the results JSON.

Each chapter keeps its ledger in ``data/claims/<slug>.yaml``::

    claims:
      - id: short-kebab-id
        statement: what the text says, in its words
        source: seed file and section
        metric: key path into the chapter's metrics ("pair_cosine.hard")
        reduce: how the metric becomes one number (see REDUCERS; default "value")
        published: {value: 0.88, model: mixedbread-ai/mxbai-embed-large-v1}   # optional
        tolerance: 0.01          # |this run − published| allowed for a numeric match
        shape: {test: peaks_inside, args: {}, statement: model-agnostic form of the claim}
        measured_on: org/model   # optional: the metric names another model's run (e.g. a per-model key)
    errata:
      - id, statement, prose_value, data_value, evidence

A **numeric** verdict is given only when this run's model is the published model; a **shape**
verdict (a test that makes sense on any model) is given whenever the claim has one.
"""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from .. import __version__
from ..core import paths

Series = np.ndarray


# --------------------------------------------------------------------------- reducing a metric

def _argmax_relative(x: Series) -> float:
    return float(np.argmax(x) / (len(x) - 1))


REDUCERS: dict[str, Callable[[Any], float]] = {
    "value": float,
    "first": lambda x: float(x[0]),
    "last": lambda x: float(x[-1]),
    "max": lambda x: float(np.max(x)),
    "min": lambda x: float(np.min(x)),
    "mean": lambda x: float(np.mean(x)),
    "argmax": lambda x: float(np.argmax(x)),
    "argmax_relative": _argmax_relative,
    "penultimate": lambda x: float(x[-2]),
}


def reduce_metric(value: Any, how: str = "value") -> float:
    """One number from a metric: a REDUCERS name, ``at_relative:r`` for the value at the depth
    nearest relative depth r of a per-depth series, or ``last_over:r`` for the final value
    divided by that value (how many times the series grows after relative depth r)."""
    if how.startswith(("at_relative:", "last_over:")):
        series = np.asarray(value, dtype=float)
        at = float(series[round(float(how.split(":", 1)[1]) * (len(series) - 1))])
        return at if how.startswith("at_relative:") else float(series[-1]) / at
    if how not in REDUCERS:
        raise ValueError(f"reduce must be one of {sorted(REDUCERS)}, 'at_relative:r' or 'last_over:r'; got {how!r}")
    return REDUCERS[how](np.asarray(value, dtype=float) if how != "value" else value)


def lookup(metrics: Mapping[str, Any], path: str) -> Any:
    """``metrics["a"]["b"]`` for the path ``"a.b"``."""
    value: Any = metrics
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"metric '{path}' is not in this chapter's metrics (missing '{part}')")
        value = value[part]
    return value


# --------------------------------------------------------------------------- shape tests

def _peaks_inside(x: Series) -> bool:
    return 0 < int(np.argmax(x)) < len(x) - 1


def _dips_inside(x: Series) -> bool:
    """Some step inside the network goes down: x_l < x_{l−1} for some 0 < l < L."""
    return bool(np.any(np.diff(x)[:-1] < 0))


SHAPES: dict[str, Callable[..., bool]] = {
    "below": lambda v, bound: v < bound,
    "above": lambda v, bound: v > bound,
    "between": lambda v, low, high: low <= v <= high,
    "peaks_inside": lambda x: _peaks_inside(np.asarray(x, float)),
    "dips_inside": lambda x: _dips_inside(np.asarray(x, float)),
    "rises": lambda x: float(np.asarray(x, float)[-1]) > float(np.asarray(x, float)[0]),
    "falls": lambda x: float(np.asarray(x, float)[-1]) < float(np.asarray(x, float)[0]),
}
"""Shape tests. Scalar tests (below, above, between) see the reduced value; series tests
(peaks_inside, dips_inside, rises, falls) see the whole metric."""

SERIES_SHAPES = {"peaks_inside", "dips_inside", "rises", "falls"}


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


@dataclass(frozen=True)
class Ledger:
    chapter: str
    claims: list[Claim]
    errata: list[Mapping[str, Any]] = field(default_factory=list)


def load(slug: str, folder: str | Path | None = None) -> Ledger:
    """Read ``data/claims/<slug>.yaml`` (from the package, or from ``folder``)."""
    path = Path(folder) / f"{slug}.yaml" if folder else resources.files("embedding_geometry") / "data" / "claims" / f"{slug}.yaml"
    data = yaml.safe_load(path.read_text())
    return Ledger(chapter=slug, claims=[Claim(**item) for item in data.get("claims", [])],
                  errata=list(data.get("errata", [])))


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    measured: float | None  # None: the metric could not be measured on this model
    model: str
    numeric: str | None  # "reproduced", "not reproduced", or None (another model)
    shape: str | None  # "holds", "does not hold", "not measured", or None (no shape test)

    @property
    def summary(self) -> str:
        return verdict_text(self.numeric, self.shape)


def verdict_text(numeric: str | None, shape: str | None) -> str:
    """One verdict line: "numeric: …; shape: …", or "measured only" when neither applies."""
    parts = [f"numeric: {numeric}" if numeric else None, f"shape: {shape}" if shape else None]
    return "; ".join(p for p in parts if p) or "measured only"


def evaluate(ledger: Ledger, metrics: Mapping[str, Any], model: str) -> list[Verdict]:
    """Verdicts for every claim of ``ledger`` against this run's ``metrics`` on ``model``."""
    return [_verdict(claim, metrics, model) for claim in ledger.claims]


def _verdict(claim: Claim, metrics: Mapping[str, Any], model: str) -> Verdict:
    model = claim.measured_on or model
    raw = lookup(metrics, claim.metric)
    if raw is None:
        return Verdict(claim=claim, measured=None, model=model, numeric=None,
                       shape="not measured" if claim.shape else None)
    measured = reduce_metric(raw, claim.reduce)
    numeric = None
    if claim.published and claim.published.get("model") == model and claim.tolerance is not None:
        close = abs(measured - float(claim.published["value"])) <= claim.tolerance
        numeric = "reproduced" if close else "not reproduced"
    shape = None
    if claim.shape:
        test = claim.shape["test"]
        subject = raw if test in SERIES_SHAPES else measured
        shape = "holds" if SHAPES[test](subject, **claim.shape.get("args", {})) else "does not hold"
    return Verdict(claim=claim, measured=measured, model=model, numeric=numeric, shape=shape)


def table(verdicts: list[Verdict]) -> pd.DataFrame:
    """The chapter's closing table: claim · published (model) · this run (model) · verdict."""
    rows = []
    for v in verdicts:
        pub = v.claim.published
        rows.append({
            "claim": v.claim.statement,
            "published (model)": f"{_fmt(pub['value'])} ({pub['model']})" if pub else "—",
            "this run (model)": f"{_fmt(v.measured) if v.measured is not None else 'not measured'} ({v.model})",
            "verdict": v.summary,
        })
    return pd.DataFrame(rows)


def prose_values(verdicts: list[Verdict]) -> dict[str, str]:
    """Text for a chapter's prose, per claim id (``-`` becomes ``_``): ``run_<id>`` this run's
    value, ``pub_<id>`` the published value, ``shape_<id>`` the shape verdict (to ``glue``)."""
    values = {}
    for v in verdicts:
        key = v.claim.id.replace("-", "_")
        values[f"run_{key}"] = _fmt(v.measured) if v.measured is not None else "not measured"
        values[f"pub_{key}"] = _fmt(v.claim.published["value"]) if v.claim.published else "—"
        values[f"shape_{key}"] = v.shape or "no shape test"
    return values


def errata_table(ledger: Ledger) -> pd.DataFrame:
    """The post's internal inconsistencies: what the prose says, what its own data says."""
    columns = ["statement", "prose_value", "data_value", "evidence"]
    return pd.DataFrame([{k: e.get(k) for k in columns} for e in ledger.errata], columns=columns)


def records(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as plain dicts for the results JSON."""
    return [{
        "id": v.claim.id, "statement": v.claim.statement, "source": v.claim.source,
        "metric": v.claim.metric, "reduce": v.claim.reduce,
        "published": dict(v.claim.published) if v.claim.published else None,
        "measured": v.measured, "model": v.model, "numeric_verdict": v.numeric,
        "shape": dict(v.claim.shape) if v.claim.shape else None, "shape_verdict": v.shape,
    } for v in verdicts]


def _fmt(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


# --------------------------------------------------------------------------- results JSON

def environment(device: str, started: float) -> dict[str, Any]:
    """Versions, device and wall time since ``started`` (a ``time.time()`` stamp)."""
    import torch
    import transformers

    return {
        "python": platform.python_version(), "torch": torch.__version__,
        "transformers": transformers.__version__, "numpy": np.__version__,
        "embedding_geometry": __version__, "platform": platform.platform(),
        "device": str(device), "seconds": round(time.time() - started, 2),
    }


def write_results(chapter: str, *, model: Mapping[str, Any], params: Mapping[str, Any],
                  inputs: Mapping[str, Any], metrics: Mapping[str, Any], claims: list[Verdict],
                  device: str, started: float) -> Path:
    """Write ``<results_dir>/<chapter>.json`` atomically (temporary file, then rename). NaN or
    infinite numbers are refused: a metric that produces one is a bug to fix, not to publish."""
    document = {
        "chapter": chapter, "model": dict(model), "params": dict(params), "inputs": dict(inputs),
        "metrics": dict(metrics), "claims": records(claims), "environment": environment(device, started),
    }
    text = json.dumps(to_jsonable(document), indent=1, allow_nan=False, ensure_ascii=False)
    folder = paths.results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{chapter}-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(tmp, folder / f"{chapter}.json")
    finally:
        Path(tmp).unlink(missing_ok=True)
    return folder / f"{chapter}.json"


def to_jsonable(value: Any, path: str = "") -> Any:
    """numpy arrays and scalars → lists and Python numbers; NaN/inf → ValueError naming the key."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist(), path)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"results value at '{path}' is {value}; results must be finite numbers")
    return value
