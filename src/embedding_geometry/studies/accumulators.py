"""Per-depth statistics as mergeable accumulators: any corpus streams through a model in constant
memory, and the shards of a corpus merge to the result of one pass over it.

An accumulator sees the *units* of a text set a batch at a time — ``update(acts, units)`` with
the activations of the batch's texts and each unit's index in the set — and keeps sufficient
statistics of fixed size, plus a few numbers per unit for the claims' intervals. ``merge(other)``
adds an accumulator of another shard of the same set; ``result()`` gives the metrics, under the
keys and with the values of the chapters' study functions on the same texts (the tests check
both: merged shards against one pass, and one pass against the study functions).

**Building blocks.**

=============  ==============================================================================
``Rows``       one row per unit (unit index → values), joined on merge; a unit counted twice is
               an error, so a shard merged twice cannot go unnoticed
``Sums``       float64 totals, added on merge (exact up to the order of float additions)
``Moments``    co-moments n, x̄, ȳ, Σ(x − x̄)², Σ(y − ȳ)², Σ(x − x̄)(y − ȳ) per dimension, merged
               with the pairwise formula of Chan, Golub and LeVeque (1979): with δ = x̄_b − x̄_a,
               C = C_a + C_b + δ_x δ_y n_a n_b / n
``Sample``     the K units with the smallest seeded hash h(seed, unit index): a *bottom-K*
               sample, the same units whatever the shards (merging keeps the K smallest of both),
               for the statistics that need pairs of units from different shards
=============  ==============================================================================

The statistics built from them — of texts, of tuples of texts and of windows — are in
:mod:`.depth_statistics`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


Metrics = dict[str, Any]

SAMPLE_SIZE = 128
"""K, the units a bottom-K sample keeps by default: pairwise kernels are K × K per depth."""



# --------------------------------------------------------------------------- building blocks

@dataclass
class Rows:
    """Per-unit rows: for each name, the rows [k, …] of the units seen, joined on merge."""

    units: list[np.ndarray] = field(default_factory=list)
    values: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, units: np.ndarray, **rows: np.ndarray) -> None:
        self.units.append(np.asarray(units, np.int64))
        for name, row in rows.items():
            self.values.setdefault(name, []).append(np.asarray(row, np.float64))

    def merge(self, other: Rows) -> Rows:
        self.units += other.units
        for name, parts in other.values.items():
            self.values.setdefault(name, []).extend(parts)
        return self

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(unit indices in increasing order, {name: rows in that order}); a unit seen twice:
        ValueError."""
        units = np.concatenate(self.units) if self.units else np.zeros(0, np.int64)
        order = np.argsort(units, kind="stable")
        if len(units) and np.any(np.diff(units[order]) == 0):
            twice = int(units[order][np.flatnonzero(np.diff(units[order]) == 0)[0]])
            raise ValueError(f"unit {twice} was counted twice: a shard was merged more than once")
        return units[order], {name: np.concatenate(parts)[order] for name, parts in self.values.items()}


@dataclass
class Sums:
    """Named float64 totals, added on merge."""

    totals: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, **values: np.ndarray) -> None:
        for name, value in values.items():
            value = np.asarray(value, np.float64)
            self.totals[name] = self.totals[name] + value if name in self.totals else value.copy()

    def merge(self, other: Sums) -> Sums:
        self.add(**other.totals)
        return self

    def __getitem__(self, name: str) -> np.ndarray:
        return self.totals[name]


@dataclass
class Moments:
    """Co-moments of x and y per dimension (module docstring), in Chan et al.'s merge."""

    n: float = 0.0
    mean_x: np.ndarray | float = 0.0
    mean_y: np.ndarray | float = 0.0
    cxx: np.ndarray | float = 0.0
    cyy: np.ndarray | float = 0.0
    cxy: np.ndarray | float = 0.0

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray) -> Moments:
        """The co-moments of the rows of x and y ([k, D] each)."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        mx, my = x.mean(axis=0), y.mean(axis=0)
        dx, dy = x - mx, y - my
        return cls(len(x), mx, my, (dx * dx).sum(0), (dy * dy).sum(0), (dx * dy).sum(0))

    def merge(self, other: Moments) -> Moments:
        if other.n == 0:
            return self
        if self.n == 0:
            self.__dict__.update(other.__dict__)
            return self
        n = self.n + other.n
        dx, dy = other.mean_x - self.mean_x, other.mean_y - self.mean_y
        weight = self.n * other.n / n
        self.cxx = self.cxx + other.cxx + dx * dx * weight
        self.cyy = self.cyy + other.cyy + dy * dy * weight
        self.cxy = self.cxy + other.cxy + dx * dy * weight
        self.mean_x = self.mean_x + dx * other.n / n
        self.mean_y = self.mean_y + dy * other.n / n
        self.n = n
        return self

    def correlation(self) -> np.ndarray:
        """Pearson r per dimension, Cxy / √(Cxx Cyy); a dimension constant over the units: ValueError."""
        if np.any(np.asarray(self.cxx) == 0) or np.any(np.asarray(self.cyy) == 0):
            raise ValueError("a dimension is constant over the texts; its correlation is undefined")
        return self.cxy / np.sqrt(self.cxx * self.cyy)


def unit_keys(seed: int, units: np.ndarray) -> np.ndarray:
    """uint64 [k]: a seeded hash of each unit index (SplitMix64 of seed · 2³² + index), what a
    bottom-K sample ranks units by: independent of the order and the shards the units come in."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed) << np.uint64(32)) + np.asarray(units, np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@dataclass
class Sample:
    """A bottom-K sample of units (module docstring): their indices, keys and payload rows."""

    size: int = SAMPLE_SIZE
    seed: int = 0
    rows: Rows = field(default_factory=Rows)
    keys: list[np.ndarray] = field(default_factory=list)

    def add(self, units: np.ndarray, **payload: np.ndarray) -> None:
        self.rows.add(units, **payload)
        self.keys.append(unit_keys(self.seed, units))
        self._trim()

    def merge(self, other: Sample) -> Sample:
        if (other.size, other.seed) != (self.size, self.seed):
            raise ValueError(f"cannot merge samples of (size, seed) {(self.size, self.seed)} and "
                             f"{(other.size, other.seed)}")
        self.rows.merge(other.rows)
        self.keys += other.keys
        self._trim()
        return self

    def _trim(self) -> None:
        """Keep the ``size`` units of smallest key (ties cannot occur: the hash is a bijection)."""
        keys = np.concatenate(self.keys)
        if len(keys) <= self.size:
            return
        keep = np.sort(np.argsort(keys, kind="stable")[:self.size])
        units = np.concatenate(self.rows.units)[keep]
        values = {name: np.concatenate(parts)[keep] for name, parts in self.rows.values.items()}
        self.rows, self.keys = Rows([units], {name: [v] for name, v in values.items()}), [keys[keep]]

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(sampled unit indices in increasing order, {name: their payload rows})."""
        return self.rows.arrays()


class Accumulator:
    """What every accumulator offers (module docstring)."""

    def update(self, batch: Any, units: Sequence[int]) -> None:
        raise NotImplementedError

    def merge(self, other: Accumulator) -> Accumulator:
        raise NotImplementedError

    def result(self) -> Metrics:
        raise NotImplementedError


def merged(parts: Iterable[Accumulator]) -> Accumulator:
    """The first accumulator with every other merged into it, in order."""
    parts = iter(parts)
    total = next(parts)
    for part in parts:
        total.merge(part)
    return total
