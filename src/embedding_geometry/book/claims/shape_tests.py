"""Shape tests: the model-agnostic form of a claim, and the statistic each one tests.

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

**The location test** (``location {window: [a, b], at: max | min}``) sees where the series peaks
(or bottoms out), on relative depth r = l / L, found again in each resample. It holds when the
re-found peak lies inside the window the claim states — exactly that window, no padding — on
all but a share of the resamples small enough to decide (claims.pvalues).

How a statistic is tested against its threshold is claims.pvalues' and claims.judge's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

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
