"""Shape tests, the model-agnostic form of a claim, and how an interval is judged by one.

**Scalar tests** see the claim's reduced value v:

* ``above {bound}``: v > bound;  ``below {bound}``: v < bound;
* ``between {low, high}``: low ≤ v ≤ high (an equivalence claim: "about zero").

**Series tests** see the whole per-depth series x = (x_0, …, x_L) through a statistic s(x),
larger when the shape is stronger, and hold when s(x) > bound (``args: {bound: b}``, default 0).
Where the statistic picks entries (the peak, the trough), it picks them again on every
bootstrap resample: the selection is part of the statistic, so its interval carries the
uncertainty of *where* as well as of *how much*:

* ``peaks_inside``: s = max_{0<l<L} x_l − max(x_0, x_L), the margin of the inside peak;
* ``dips_inside``: s = max_{0<l<L} (x_{l−1} − x_l), the largest fall at a step inside the network;
* ``second_rise``: s = max_{0<t<L} min(max_{i<t} x_i − x_t, max_{k>t} x_k − x_t): a trough with a
  higher point before it *and* after it, scored by the smaller of the fall into it and the rise
  out of it;
* ``rises``: s = x_L − x_0;  ``falls``: s = x_0 − x_L.

**The location test** (``location {window: [a, b], at: max | min}``; the judge adds ``L``) sees where the series
peaks (or bottoms out), on relative depth r = l / L, found again in each resample. A depth is
known only to the resolution of one depth, so depth l stands for the cell
[r − 1/2L, r + 1/2L], and the interval of the location is the cells from the lowest to the
highest depth of the central resamples: never of zero width. It holds when every depth of that
interval has its cell meet the window, does not hold when none does, and is inconclusive
otherwise.

**Judging an interval** [lo, hi] (of v or s) against the test's threshold t:

* ``holds`` when the interval clears t (lo > t for above and series tests, hi < t for below);
* ``does not hold`` when it lies entirely on the wrong side (hi ≤ t; lo ≥ t);
* ``inconclusive`` when it straddles t.

``between`` holds when [lo, hi] ⊂ [low, high], and does not hold when the two are disjoint.
A null is judged separately (book/claims/judge.py): the claim's statistic minus the null's,
which must clear 0.

**The margin** of a verdict is how far the interval would have to move for the verdict to
change: the smallest distance between an end of [lo, hi] and a threshold the verdict depends on,
min |e − t| over e ∈ {lo, hi}. A verdict whose margin is smaller than the float noise of its
statistic is *fragile* (:mod:`embedding_geometry.book.reproducibility`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE)


def _peak_margin(x: np.ndarray) -> np.ndarray:
    return np.max(x[..., 1:-1], axis=-1) - np.maximum(x[..., 0], x[..., -1])


def _inside_fall(x: np.ndarray) -> np.ndarray:
    return np.max(x[..., :-2] - x[..., 1:-1], axis=-1)


def _second_rise(x: np.ndarray) -> np.ndarray:
    before = np.maximum.accumulate(x, axis=-1)[..., :-2]  # max_{i<t} x_i for t = 1 … L−1
    after = np.flip(np.maximum.accumulate(np.flip(x, axis=-1), axis=-1), axis=-1)[..., 2:]  # max_{k>t} x_k
    inside = x[..., 1:-1]
    return np.max(np.minimum(before - inside, after - inside), axis=-1)


STATISTICS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "peaks_inside": ("peak margin", _peak_margin),
    "dips_inside": ("largest inside fall", _inside_fall),
    "second_rise": ("second rise", _second_rise),
    "rises": ("last − first", lambda x: x[..., -1] - x[..., 0]),
    "falls": ("first − last", lambda x: x[..., 0] - x[..., -1]),
}
"""Series tests: name → (what the statistic is called, s on the last axis of [..., L + 1])."""

SERIES_SHAPES = set(STATISTICS)
SCALAR_SHAPES = {"above", "below", "between"}
LOCATION = "location"
SHAPES = SCALAR_SHAPES | SERIES_SHAPES | {LOCATION}


def statistic(test: str, series: Any) -> np.ndarray:
    """s of a series test on ``series`` [..., L + 1] (one series, or B resampled rows: each row
    picks its own entries)."""
    x = np.asarray(series, dtype=float)
    if x.shape[-1] < 3:
        raise ValueError(f"shape test '{test}' needs a series of at least 3 depths; got shape {x.shape}")
    return STATISTICS[test][1](x)


def location(series: Any, at: str = "max", blocks: bool = False) -> np.ndarray:
    """r = l / L of the largest (``at="max"``) or smallest entry of each row of [..., n]
    (entries are depths 0 … L, or blocks 1 … L with ``blocks``)."""
    x = np.asarray(series, dtype=float)
    index = np.argmax(x, axis=-1) if at == "max" else np.argmin(x, axis=-1)
    L = x.shape[-1] if blocks else x.shape[-1] - 1
    return (index + blocks) / L


def location_interval(draws: np.ndarray, L: int, level: float) -> tuple[float, float]:
    """The cells [r_lo − 1/2L, r_hi + 1/2L] of the central ``level`` of the location draws."""
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(draws, [tail, 100 - tail], method="inverted_cdf")
    return float(lo) - 0.5 / L, float(hi) + 0.5 / L


def judge(test: str, args: Mapping[str, Any], interval: tuple[float, float]) -> str:
    """holds / does not hold / inconclusive for ``interval`` (see the module docstring)."""
    lo, hi = interval
    if test == LOCATION:  # [lo, hi] are padded cells: depth r_lo = lo + c … r_hi = hi − c, c = 1/2L
        (a, b), c = args["window"], 0.5 / float(args["L"])
        if hi <= a or lo >= b:
            return FAILS
        return HOLDS if lo + 2 * c > a and hi - 2 * c < b else INCONCLUSIVE
    if test == "between":
        low, high = float(args["low"]), float(args["high"])
        if hi < low or lo > high:
            return FAILS
        return HOLDS if low <= lo and hi <= high else INCONCLUSIVE
    bound = float(args.get("bound", 0.0))
    if test == "below":
        return HOLDS if hi < bound else FAILS if lo >= bound else INCONCLUSIVE
    return HOLDS if lo > bound else FAILS if hi <= bound else INCONCLUSIVE


def thresholds(test: str, args: Mapping[str, Any]) -> list[float]:
    """The thresholds a verdict of ``test`` depends on."""
    if test == LOCATION:
        return [float(x) for x in args["window"]]
    if test == "between":
        return [float(args["low"]), float(args["high"])]
    return [float(args.get("bound", 0.0))]


def margin(test: str, args: Mapping[str, Any], interval: tuple[float, float]) -> float:
    """min |e − t| over the interval's ends e and the thresholds t (module docstring)."""
    return min(abs(end - t) for end in interval for t in thresholds(test, args))


def threshold_text(test: str, args: Mapping[str, Any]) -> str:
    """The test as a condition: "> 0.5", "< 0.1", "in [0.25, 0.75]", "peak margin > 0",
    "peak at l/L in [0.42, 0.58]"."""
    if test == LOCATION:
        a, b = args["window"]
        return f"{'peak' if args.get('at', 'max') == 'max' else 'trough'} at l/L in [{_num(a)}, {_num(b)}]"
    if test == "between":
        return f"in [{_num(args['low'])}, {_num(args['high'])}]"
    sign = "<" if test == "below" else ">"
    name = f"{STATISTICS[test][0]} " if test in STATISTICS else ""
    return f"{name}{sign} {_num(args.get('bound', 0))}"


def _num(x: Any) -> str:
    return f"{float(x):.6g}"
