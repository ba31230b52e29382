"""Bootstrap intervals over a claim's sampling unit.

**The per-unit contract.** A chapter that wants an interval on a metric stores, next to it, the
values of every sampling unit (sentence, pair, query, text, document, token, dimension, topic,
dilution key, compound or training seed)::

    metrics["per_unit"]["<metric key>"] = array of shape [n_units, …]

whose mean over axis 0 *is* the metric (for ``separability_ratio``: between / within, the
numerator and the denominator are stored per unit, and the metric is the ratio of their means).
The ledger names the array with ``samples`` (see :mod:`embedding_geometry.book.claims`). A
difference of two such statistics on the same units (``{minuend: …, subtrahend: …}``, e.g. two
models' separability ratios on the same sentences) is resampled with the same draws for both.

**The bootstrap.** Draw B sets of n_units rows with replacement (seeded), recompute the mean —
or the ratio of means — of each set, reduce it as the claim does, and take the 2.5th and 97.5th
percentiles of the B reduced values: the 95 % percentile interval. It is vectorised: a resample is
a row of counts c_b (how often each unit was drawn), its mean is (c_b / n) · X, so B resamples
are one matrix product, taken in chunks that keep the count matrix near 32 MiB.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

UNITS = ("sentences", "pairs", "queries", "texts", "documents", "tokens", "dimensions", "topics", "keys",
         "compounds", "seeds")
RESAMPLES = 2000
LEVEL = 0.95
_CHUNK_CELLS = 2 ** 22  # resamples × units per chunk: 4 M counts, 32 MiB as float64


@dataclass(frozen=True)
class Samples:
    """Per-unit values: ``numerator`` [n_units, …] and, for a ratio of means, ``denominator``."""

    numerator: np.ndarray
    denominator: np.ndarray | None = None
    source: str = ""
    minus: "Samples | None" = None  # a statistic on the same units, subtracted (paired draws)

    @property
    def n_units(self) -> int:
        return int(self.numerator.shape[0])

    @property
    def rest(self) -> tuple[int, ...]:
        """The shape of one unit's value (``()`` for a number, ``(L + 1,)`` for a series)."""
        return tuple(self.numerator.shape[1:])

    def statistic(self, weights: np.ndarray) -> np.ndarray:
        """Σ_u w_bu x_u for each row b of ``weights`` [B, n_units] (rows sum to 1): the
        resampled means, or the ratio of the resampled numerator and denominator means."""
        value = weights @ self.numerator.reshape(self.n_units, -1)
        if self.denominator is not None:
            value = value / (weights @ self.denominator.reshape(self.n_units, -1))
        value = value.reshape((weights.shape[0], *self.rest))
        return value if self.minus is None else value - self.minus.statistic(weights)

    def full(self) -> np.ndarray:
        """The statistic on every unit once (what the metric must equal)."""
        return self.statistic(np.full((1, self.n_units), 1.0 / self.n_units))[0]


def _array(metrics: Mapping[str, Any], spec: Any) -> tuple[np.ndarray | None, str]:
    """The array ``spec`` names: a key of ``metrics["per_unit"]`` (flat, or a dotted path in it),
    or ``{path: "a.b"}``, a key path from the top of ``metrics``."""
    if isinstance(spec, Mapping):
        where, path, value = "metrics", str(spec["path"]), metrics
    else:
        where, path, value = "metrics['per_unit']", str(spec), metrics.get("per_unit")
        if isinstance(value, Mapping) and path in value:
            return _numeric(value[path]), f"{where}['{path}']"
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None, f"{where} has no '{path}'"
        value = value[part]
    return _numeric(value), f"{where} path '{path}'"


def _numeric(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


def find_samples(metrics: Mapping[str, Any], spec: Any) -> Samples | str:
    """The :class:`Samples` that ``spec`` names (a key or ``{path: …}``; a list of two, or
    ``{numerator: …, denominator: …}``, for a ratio of means; ``{minuend: …, subtrahend: …}``,
    each one of those, for a difference on the same units), or a string saying why there are none."""
    if isinstance(spec, Mapping) and "minuend" in spec:
        return _difference(find_samples(metrics, spec["minuend"]), find_samples(metrics, spec["subtrahend"]))
    if isinstance(spec, Mapping) and "numerator" in spec:
        spec = [spec["numerator"], spec["denominator"]]
    parts = spec if isinstance(spec, (list, tuple)) else [spec]
    arrays = []
    for part in parts:
        array, where = _array(metrics, part)
        if array is None:
            return f"no per-unit samples: {where}" if "has no" in where else f"per-unit samples at {where} are not numbers"
        if array.ndim == 0 or array.shape[0] < 2:
            return f"per-unit samples at {where} hold fewer than 2 units"
        arrays.append((array, where))
    if len(arrays) == 2 and arrays[0][0].shape != arrays[1][0].shape:
        return f"numerator {arrays[0][0].shape} and denominator {arrays[1][0].shape} samples differ in shape"
    return Samples(arrays[0][0], arrays[1][0] if len(arrays) == 2 else None, " ÷ ".join(w for _, w in arrays))


def _difference(a: Samples | str, b: Samples | str) -> Samples | str:
    if isinstance(a, str) or isinstance(b, str):
        return a if isinstance(a, str) else b
    if a.minus is not None or b.minus is not None:
        return "a difference of differences is not supported: name two means or ratios of means"
    if (a.n_units, a.rest) != (b.n_units, b.rest):
        return f"minuend {(a.n_units, *a.rest)} and subtrahend {(b.n_units, *b.rest)} samples differ in shape"
    return Samples(a.numerator, a.denominator, f"{a.source} − {b.source}", b)


def generator(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by (``seed``, a hash of ``name``): each claim gets its own stream, and
    adding a claim to a ledger changes no other claim's interval."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def resampled(samples: Samples, resamples: int = RESAMPLES, rng: np.random.Generator | None = None) -> np.ndarray:
    """The statistic on ``resamples`` bootstrap resamples of the units: [resamples, *rest]."""
    rng = rng or np.random.default_rng(0)
    n = samples.n_units
    chunk = max(1, min(resamples, _CHUNK_CELLS // n))
    out = []
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(b, n)) + n * np.arange(b)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=b * n).reshape(b, n)
        out.append(samples.statistic(counts / n))
    return np.concatenate(out)


def _band(draws: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """[2, …]: the central ``level`` percentile interval of every entry of the resampled
    statistic (a whole per-depth curve at once: low row, high row)."""
    tail = 100 * (1 - level) / 2
    return np.nanpercentile(draws, [tail, 100 - tail], axis=0)


@dataclass(frozen=True)
class Bootstrap:
    """One statistic's bootstrap: its 95 % ``band`` [2, …] (low row, high row), the ``draws``
    [B, …] it is taken from, and the ``n_units`` resampled."""

    band: np.ndarray
    draws: np.ndarray
    n_units: int


def bootstraps(metrics: Mapping[str, Any], specs: Mapping[str, Any], seed: int,
               resamples: int = RESAMPLES) -> dict[str, Bootstrap]:
    """Every ``specs`` entry (name → samples spec, see :func:`find_samples`) resampled
    ``resamples`` times from a generator seeded by (``seed``, the name); the draws are kept for a
    statistic that is not a mean of the units (e.g. a count of depths against a null).
    Raises KeyError naming the spec whose samples are missing."""
    found = {}
    for name, spec in specs.items():
        samples = find_samples(metrics, spec)
        if isinstance(samples, str):
            raise KeyError(f"{name}: {samples}")
        draws = resampled(samples, resamples, generator(seed, name))
        found[name] = Bootstrap(_band(draws), draws, samples.n_units)
    return found


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float] | None:
    """The central ``level`` percentile interval of ``values`` (NaN resamples, e.g. a zero
    denominator, are left out); None when every resample is NaN."""
    values = np.asarray(values, dtype=float)
    if np.all(np.isnan(values)):
        return None
    tail = 100 * (1 - level) / 2
    lo, hi = np.nanpercentile(values, [tail, 100 - tail])
    return float(lo), float(hi)
