"""Shape tests, the model-agnostic form of a claim, and how a 95 % interval is judged by one.

**Scalar tests** see the claim's reduced value v:

* ``above {bound}``: v > bound;  ``below {bound}``: v < bound;
* ``between {low, high}``: low ≤ v ≤ high.

**Series tests** see the whole per-depth series x = (x_0, …, x_L) through a statistic s(x),
larger when the shape is stronger, and hold when s(x) > bound (``args: {bound: b}``, default 0).
Each s is the smallest of a few differences x_a − x_b between entries that the run's own series
picks (the peak, the trough, the rebound); a bootstrap resample measures those same differences:

* ``peaks_inside``: s = max_{0<l<L} x_l − max(x_0, x_L), the margin of the inside peak;
* ``dips_inside``: s = max_{0<l<L} (x_{l−1} − x_l), the largest fall at a step inside the
  network (any decline after an inside peak passes: too loose for a "partial reversal");
* ``second_rise``: s = max_{0<t<L} min(max_{i<t} x_i − x_t, max_{k>t} x_k − x_t): a trough
  with a higher point before it *and* after it, scored by the smaller of the fall into it and
  the rise out of it. A series that only declines after its peak scores ≤ 0, and a rebound of
  0.001 passes only if its interval clears 0 — a real second build;
* ``rises``: s = x_L − x_0;  ``falls``: s = x_0 − x_L.

**Judging an interval** [lo, hi] (of v, or of s for series tests) against the test's threshold
t — the bound, or the null when the null is stricter (``above`` and series tests: t =
max(bound, null); ``below``: t = min(bound, null)):

* ``holds`` when the interval clears t (lo > t for above, hi < t for below);
* ``does not hold`` when it lies entirely on the wrong side (hi ≤ t; lo ≥ t);
* ``inconclusive`` when it straddles t.

``between`` holds when [lo, hi] ⊂ [low, high] and the null (if any) lies outside [lo, hi]; it
does not hold when the two are disjoint. A single value v is judged as the interval [v, v].

**The margin** of a verdict is how far the interval would have to move for the verdict to
change: the smallest distance between an end of [lo, hi] and a threshold the verdict depends on
(t; for ``between``: low, high and the null), min |e − t| over e ∈ {lo, hi}. A verdict whose
margin is smaller than the float noise of its statistic is *fragile*
(:mod:`embedding_geometry.book.reproducibility`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


Pairs = list[tuple[int, int]]


def _peak_pairs(x: np.ndarray) -> Pairs:
    p = 1 + int(np.argmax(x[1:-1]))
    return [(p, 0), (p, len(x) - 1)]


def _dip_pairs(x: np.ndarray) -> Pairs:
    l = 1 + int(np.argmax(-np.diff(x)[:-1]))
    return [(l - 1, l)]


def _second_rise_pairs(x: np.ndarray) -> Pairs:
    before = np.maximum.accumulate(x)[:-2]  # max_{i<t} x_i for t = 1 … L−1
    after = np.flip(np.maximum.accumulate(np.flip(x)))[2:]  # max_{k>t} x_k
    t = 1 + int(np.argmax(np.minimum(before - x[1:-1], after - x[1:-1])))
    return [(int(np.argmax(x[:t])), t), (t + 1 + int(np.argmax(x[t + 1:])), t)]


STATISTICS: dict[str, tuple[str, Callable[[np.ndarray], Pairs]]] = {
    "peaks_inside": ("peak margin", _peak_pairs),
    "dips_inside": ("largest inside fall", _dip_pairs),
    "second_rise": ("second rise", _second_rise_pairs),
    "rises": ("last − first", lambda x: [(len(x) - 1, 0)]),
    "falls": ("first − last", lambda x: [(0, len(x) - 1)]),
}
"""Series tests: name → (what the statistic is called, the entries it compares on a series)."""

SERIES_SHAPES = set(STATISTICS)
SCALAR_SHAPES = {"above", "below", "between"}


def locate(test: str, series: Any) -> Pairs:
    """The pairs (a, b) of entries whose differences x_a − x_b make the statistic, chosen on
    ``series`` (the run's own series)."""
    x = np.asarray(series, dtype=float)
    if x.ndim != 1 or len(x) < 3:
        raise ValueError(f"shape test '{test}' needs one series of at least 3 depths; got shape {x.shape}")
    return STATISTICS[test][1](x)


def statistic(test: str, series: Any, pairs: Pairs | None = None) -> np.ndarray:
    """s = min_j (x_{a_j} − x_{b_j}) over the pairs :func:`locate` finds on ``series`` — or, for
    bootstrap rows [B, n], over the ``pairs`` located on the run's series, so that each resample
    measures the same contrast instead of searching its own noise for the strongest one."""
    x = np.asarray(series, dtype=float)
    pairs = pairs if pairs is not None else locate(test, x)
    return np.min(np.stack([x[..., a] - x[..., b] for a, b in pairs]), axis=0)


def judge(test: str, args: Mapping[str, Any], interval: tuple[float, float], null: float | None = None) -> str:
    """holds / does not hold / inconclusive for ``interval`` (see the module docstring)."""
    lo, hi = interval
    if test == "between":
        low, high = float(args["low"]), float(args["high"])
        if hi < low or lo > high:
            return FAILS
        inside = low <= lo and hi <= high
        return HOLDS if inside and (null is None or not lo <= null <= hi) else INCONCLUSIVE
    bound = float(args.get("bound", 0.0))
    if test == "below":
        t = bound if null is None else min(bound, null)
        return HOLDS if hi < t else FAILS if lo >= t else INCONCLUSIVE
    t = bound if null is None else max(bound, null)
    return HOLDS if lo > t else FAILS if hi <= t else INCONCLUSIVE


def thresholds(test: str, args: Mapping[str, Any], null: float | None = None) -> list[float]:
    """The thresholds a verdict of ``test`` depends on (see :func:`judge`)."""
    if test == "between":
        return [float(args["low"]), float(args["high"])] + ([] if null is None else [float(null)])
    bound = float(args.get("bound", 0.0))
    if null is None:
        return [bound]
    return [min(bound, null) if test == "below" else max(bound, null)]


def margin(test: str, args: Mapping[str, Any], interval: tuple[float, float], null: float | None = None) -> float:
    """min |e − t| over the interval's ends e and the thresholds t (see the module docstring)."""
    return min(abs(end - t) for end in interval for t in thresholds(test, args, null))


def threshold_text(test: str, args: Mapping[str, Any]) -> str:
    """The test as a condition: "> 0.5", "< 0.1", "in [0.25, 0.75]", "peak margin > 0"."""
    if test == "between":
        return f"in [{_num(args['low'])}, {_num(args['high'])}]"
    sign = "<" if test == "below" else ">"
    name = f"{STATISTICS[test][0]} " if test in STATISTICS else ""
    return f"{name}{sign} {_num(args.get('bound', 0))}"


def _num(x: Any) -> str:
    return f"{float(x):.6g}"


def _point(test: str) -> Callable[..., bool]:
    def passes(value: Any, **args: Any) -> bool:
        v = float(statistic(test, value)) if test in STATISTICS else float(value)
        return judge(test, args, (v, v)) == HOLDS
    return passes


SHAPES: dict[str, Callable[..., bool]] = {test: _point(test) for test in [*SCALAR_SHAPES, *STATISTICS]}
"""Every shape test on a single value (scalar tests) or series (series tests), as True/False."""
