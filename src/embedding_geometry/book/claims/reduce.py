"""How a metric becomes the one number a claim is about, on relative depth, and the shape tests.

A series has one entry per depth l = 0 … L (``series: depths``) or per block l = 1 … L
(``blocks``); entry i sits at relative depth r_i = i / L (or (i + 1) / L), so "the last tenth of
the network" means the same on 6 and on 24 blocks (``core.relative_depth``). Every reducer works
on the **last axis**, so the same code reduces the run's series and B resampled rows of it.

Reducers: ``value``; ``first``, ``last``, ``penultimate``; ``max``, ``min``, ``mean``; ``argmax``
(``argmin``), the depth l of the largest (smallest) entry, and ``argmax_relative`` l / L;
``at_relative:r``, x at the depth nearest r · L (ties deeper); ``last_over:r``, x_L ÷ x at r;
``last_fraction:f``, Σ_{r_i > 1 − f} x_i ÷ Σ x_i; ``final_step_share``, (x_{L−1} − x_L) ÷
(max x − x_L), 0 when the last entry is the peak; ``second_rise``, the series statistic below;
``plateau:a-b``, (max − min of x for r in [a, b]) ÷ ((r_last − r_first)(max − min of x)), below 1
when the stretch is flatter than the curve's average slope.

Shape tests: ``above`` / ``below`` a bound, ``between`` low and high; the series tests hold when
their statistic s(x) > bound (default 0), the entries it picks picked again on every resample:
``peaks_inside`` max_{0<l<L} x_l − max(x_0, x_L); ``dips_inside`` the largest inside fall;
``second_rise`` max_t min(max_{i<t} x_i − x_t, max_{k>t} x_k − x_t), a trough with a higher point
on each side; ``two_dips`` the weaker of two such troughs either side of a shared split p;
``rises`` x_L − x_0; ``falls`` x_0 − x_L. ``location {window: [a, b], at: max | min | trough}``: the
re-found peak's relative depth lies inside exactly that window (:mod:`.pvalues`); with ``among: [c, d]``
the peak is sought only among the depths in [c, d] (a dip the text places after one stretch and
before another); ``at: trough`` seeks the lowest of the troughs (:func:`located`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ...core.relative_depth import depth_count, in_tail, index_at, positions, window


def entry_text(i: int, n: int, series: str = "depths") -> str:
    """Every depth the book names, written one way: entry i of n as "depth 2 of 6 (l/L = 0.33)"; a
    block's entry is named by the depth it writes, "block 2 of 6 (l/L = 0.33)"."""
    L, l = depth_count(n, series), int(i) + (series == "blocks")
    return f"{'depth' if series == 'depths' else 'block'} {l} of {L} (l/L = {l / L:.2f})"


# --------------------------------------------------------------------------- the reducers

def _arg(find, x: np.ndarray, series: str) -> np.ndarray:
    return find(x, axis=-1) + (series == "blocks")


def _plateau(x: np.ndarray, w: tuple[float, float], series: str) -> np.ndarray:
    inside = window(w, x.shape[-1], series)
    r = positions(x.shape[-1], series)[inside]
    return np.ptp(x[..., inside], axis=-1) / ((r[-1] - r[0]) * np.ptp(x, axis=-1))


def too_narrow(how: str, n: int, series: str = "depths") -> str | None:
    """Why a window reducer has nothing to measure on a series of n entries, or None."""
    name, arg = parse(how)
    if name == "plateau" and window(arg, n, series).sum() < 2:
        return (f"the window l/L in [{arg[0]:.3g}, {arg[1]:.3g}] holds {window(arg, n, series).sum()} of the "
                f"{depth_count(n, series)}-block model's depths: a plateau needs two")
    return None


def _final_step_share(x: np.ndarray, series: str) -> np.ndarray:
    fall = np.max(x, axis=-1) - x[..., -1]
    step = x[..., -2] - x[..., -1]
    return np.where(fall > 0, step / np.where(fall > 0, fall, 1.0), 0.0)


NAMED: dict[str, Callable[[np.ndarray, str], np.ndarray]] = {
    "first": lambda x, s: x[..., 0],
    "last": lambda x, s: x[..., -1],
    "penultimate": lambda x, s: x[..., -2],
    "max": lambda x, s: np.max(x, axis=-1),
    "min": lambda x, s: np.min(x, axis=-1),
    "mean": lambda x, s: np.mean(x, axis=-1),
    "argmax": lambda x, s: _arg(np.argmax, x, s),
    "argmin": lambda x, s: _arg(np.argmin, x, s),
    "argmax_relative": lambda x, s: _arg(np.argmax, x, s) / depth_count(x.shape[-1], s),
    "argmin_relative": lambda x, s: _arg(np.argmin, x, s) / depth_count(x.shape[-1], s),
    "final_step_share": _final_step_share,
    "second_rise": lambda x, s: statistic("second_rise", x),
    "two_dips": lambda x, s: statistic("two_dips", x),
}

PARAMETRISED: dict[str, Callable[[np.ndarray, float, str], np.ndarray]] = {
    "at_relative": lambda x, r, s: x[..., index_at(r, x.shape[-1], s)],
    "last_over": lambda x, r, s: x[..., -1] / x[..., index_at(r, x.shape[-1], s)],
    "last_fraction": lambda x, f, s: x[..., in_tail(f, x.shape[-1], s)].sum(axis=-1) / x.sum(axis=-1),
    "plateau": _plateau,
}

LINEAR = {"value", "first", "last", "penultimate", "mean", "at_relative"}
"""Reducers that commute with a mean over units (a fixed entry, or the average of the entries):
the reduced mean is the mean of the reduced units, so a studentized interval applies."""


def is_linear(how: str) -> bool:
    """Whether ``how`` is one of :data:`LINEAR` (module docstring)."""
    return parse(how)[0] in LINEAR


def parse(how: str) -> tuple[str, Any]:
    """``"at_relative:0.25"`` → ``("at_relative", 0.25)``; ``"plateau:10/24-14/24"`` → ``("plateau",
    (0.4167, 0.5833))`` (ends as decimals or fractions); a named reducer → ``(name, None)``.
    Raises ValueError for anything else."""
    name, _, arg = how.partition(":")
    if arg and name == "plateau":
        a, _, b = arg.partition("-")
        try:
            w = (float(Fraction(a)), float(Fraction(b)))
        except (ValueError, ZeroDivisionError):
            w = (1.0, 0.0)
        if not 0 <= w[0] < w[1] <= 1:
            raise ValueError(f"reduce '{how}': the window must be a-b with 0 ≤ a < b ≤ 1")
        return name, w
    if arg and name in PARAMETRISED:
        value = float(arg)
        if name == "last_fraction" and not 0 < value <= 1:
            raise ValueError(f"reduce '{how}': the fraction must be in (0, 1]")
        return name, value
    if not arg and (name in NAMED or name == "value"):
        return name, None
    options = sorted([*NAMED, "value"]) + [f"{p}:x" for p in PARAMETRISED]
    raise ValueError(f"reduce must be one of {options}; got {how!r}")


def reduce_array(x: Any, how: str = "value", series: str = "depths") -> np.ndarray:
    """Reduce the last axis of ``x`` with ``how`` (``value`` returns ``x`` unchanged)."""
    name, arg = parse(how)
    x = np.asarray(x, dtype=float)
    if name == "value":
        return x
    return NAMED[name](x, series) if arg is None else PARAMETRISED[name](x, arg, series)


def reduce_metric(value: Any, how: str = "value", series: str = "depths") -> float:
    """One number from a metric (see the module docstring for ``how``)."""
    return float(value) if how == "value" else float(reduce_array(value, how, series))


def where(how: str, value: Any, series: str = "depths") -> str | None:
    """The depth (or depths) a positional reducer landed on, in :func:`entry_text`'s words;
    None for reducers that name no depth."""
    name, arg = parse(how)
    if name == "value" or np.ndim(value) != 1:
        return None
    x = np.asarray(value, dtype=float)
    n = len(x)
    fixed = {"first": 0, "last": n - 1, "penultimate": n - 2}
    if name in fixed:
        return entry_text(fixed[name], n, series)
    if name.startswith(("max", "argmax", "min", "argmin")):  # max, argmax, argmax_relative; min, …
        return entry_text(int(np.argmax(x) if "max" in name else np.argmin(x)), n, series)
    if name == "final_step_share":
        return (f"{entry_text(n - 2, n, series)} → {entry_text(n - 1, n, series)}, "
                f"of the fall from {entry_text(int(np.argmax(x)), n, series)}")
    if name == "second_rise" and n >= 3:
        return f"the trough at {entry_text(1 + int(np.argmax(_troughs(x))), n, series)}"
    if name == "two_dips" and n >= 5:
        p = 2 + int(np.argmax([min(_second_rise(x[: p + 1]), _second_rise(x[p:])) for p in range(2, n - 2)]))
        first, second = 1 + int(np.argmax(_troughs(x[: p + 1]))), p + 1 + int(np.argmax(_troughs(x[p:])))
        return f"the troughs at {entry_text(first, n, series)} and {entry_text(second, n, series)}"
    if name in ("at_relative", "last_over"):
        at = entry_text(index_at(arg, n, series), n, series)
        return at if name == "at_relative" else f"last ÷ {at}"
    if name == "last_fraction":
        tail = np.flatnonzero(in_tail(arg, n, series))
        return f"the last {len(tail)} of {n} entries: from {entry_text(tail[0], n, series)}"
    if name == "plateau" and not too_narrow(how, n, series):
        inside = np.flatnonzero(window(arg, n, series))
        return f"{entry_text(inside[0], n, series)} to {entry_text(inside[-1], n, series)}"
    return None

# --------------------------------------------------------------------------- the shape tests

def _troughs(x: np.ndarray) -> np.ndarray:
    """min(max_{i<t} x_i − x_t, max_{k>t} x_k − x_t) for each inside entry t = 1 … L−1."""
    before = np.maximum.accumulate(x, axis=-1)[..., :-2]
    after = np.flip(np.maximum.accumulate(np.flip(x, axis=-1), axis=-1), axis=-1)[..., 2:]
    inside = x[..., 1:-1]
    return np.minimum(before - inside, after - inside)


def _second_rise(x: np.ndarray) -> np.ndarray:
    return np.max(_troughs(x), axis=-1)


def _two_dips(x: np.ndarray) -> np.ndarray:
    """The weaker of two troughs, one before and one after a split entry p, the best split."""
    splits = [np.minimum(_second_rise(x[..., : p + 1]), _second_rise(x[..., p:])) for p in range(2, x.shape[-1] - 2)]
    return np.max(splits, axis=0)


STATISTICS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "peaks_inside": ("peak margin", lambda x: np.max(x[..., 1:-1], axis=-1) - np.maximum(x[..., 0], x[..., -1])),
    "dips_inside": ("largest inside fall", lambda x: np.max(x[..., :-2] - x[..., 1:-1], axis=-1)),
    "second_rise": ("second rise", _second_rise),
    "two_dips": ("weaker of two dips", _two_dips),
    "rises": ("last − first", lambda x: x[..., -1] - x[..., 0]),
    "falls": ("first − last", lambda x: x[..., 0] - x[..., -1]),
}
"""Series tests: name → (what the statistic is called, s on the last axis of [..., L + 1])."""

MIN_ENTRIES = {"two_dips": 5, "rises": 2, "falls": 2}
"""The fewest entries a series test needs where it is not 3 (one inside entry between two ends)."""

SERIES_SHAPES = set(STATISTICS)
SCALAR_SHAPES = {"above", "below", "between"}
LOCATION = "location"
SHAPES = SCALAR_SHAPES | SERIES_SHAPES | {LOCATION}


def statistic(test: str, series: Any) -> np.ndarray:
    """s of a series test on ``series`` [..., L + 1] (one series, or B resampled rows: each row
    picks its own entries)."""
    x, fewest = np.asarray(series, dtype=float), MIN_ENTRIES.get(test, 3)
    if x.shape[-1] < fewest:
        raise ValueError(f"shape test '{test}' needs a series of at least {fewest} depths; got shape {x.shape}")
    return STATISTICS[test][1](x)


AT = {"max": "peak", "min": "lowest point", "trough": "lowest trough"}
"""What a location's ``at`` seeks, in words."""
NO_TROUGH = -1.0
"""What :func:`located` gives for ``at = "trough"`` where no entry is a trough: outside every window."""


def located(x: np.ndarray, at: str, series: str = "depths", among: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The relative depth of the largest (``at = "max"``) or smallest (``"min"``) entry on the last
    axis of ``x``, sought among the entries whose relative depth lies in ``among``; for ``"trough"``,
    the smallest of those entries that are troughs (a higher entry before and after it:
    :func:`_troughs` > 0), or :data:`NO_TROUGH` where none is."""
    x = np.asarray(x, dtype=float)
    inside = window(among, x.shape[-1], series)
    if at == "trough":
        dips = np.zeros(x.shape, dtype=bool)
        dips[..., 1:-1] = _troughs(x) > 0
        keep = inside & dips
        lowest = reduce_array(np.where(keep, x, np.inf), "argmin_relative", series)
        return np.where(keep.any(axis=-1), lowest, NO_TROUGH)
    return reduce_array(np.where(inside, x, -np.inf if at == "max" else np.inf), f"arg{at}_relative", series)


def threshold_text(test: str, args: Mapping[str, Any]) -> str:
    """The test as a condition: "> 0.5", "< 0.1", "in [0.25, 0.75]", "peak margin > 0",
    "peak at l/L in [0.42, 0.58]"."""
    if test == LOCATION:
        a, b = args["window"]
        among = f", sought in [{_num(args['among'][0])}, {_num(args['among'][1])}]" if args.get("among") else ""
        return f"{AT[args.get('at', 'max')]} at l/L in [{_num(a)}, {_num(b)}]{among}"
    if test == "between":
        return f"in [{_num(args['low'])}, {_num(args['high'])}]"
    sign = "<" if test == "below" else ">"
    name = f"{STATISTICS[test][0]} " if test in STATISTICS else ""
    return f"{name}{sign} {_num(args.get('bound', 0))}"


def _num(x: Any) -> str:
    return f"{float(x):.6g}"
