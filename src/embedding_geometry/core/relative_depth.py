"""Relative depth: one convention for the studies and the claims engine, so that "the last tenth
of the network" means the same on 6 and on 24 blocks.

A series has one entry per depth l = 0 … L (``series="depths"``) or per block l = 1 … L
(``"blocks"``); entry i sits at relative depth r_i = i / L (or (i + 1) / L). A relative depth
that lands exactly on a boundary counts as on it (a slack of :data:`SLACK`).
"""

from __future__ import annotations

import math

import numpy as np

SERIES_KINDS = ("depths", "blocks")
SLACK = 1e-9


def depth_count(n: int, series: str = "depths") -> int:
    """L, the number of blocks, of a series with n entries."""
    return n - 1 if series == "depths" else n


def positions(n: int, series: str = "depths") -> np.ndarray:
    """Relative depth r_i of each of the n entries."""
    L = depth_count(n, series)
    return np.arange(n) / L if series == "depths" else np.arange(1, n + 1) / L


def index_at(r: float, n: int, series: str = "depths") -> int:
    """The entry at the depth nearest r · L (a tie goes to the deeper depth)."""
    L = depth_count(n, series)
    depth = math.floor(r * L + 0.5 + SLACK)
    return min(max(depth if series == "depths" else depth - 1, 0), n - 1)


def in_tail(f: float, n: int, series: str = "depths") -> np.ndarray:
    """Which of the n entries lie in the last ``f`` of the network, r_i > 1 − f → [n] bool (f = 2/24:
    the last two of 24 blocks, the last one of 6 or 12)."""
    return positions(n, series) > 1 - f + SLACK


def window(w: tuple[float, float], n: int, series: str = "depths") -> np.ndarray:
    """Which of the n entries lie in the relative-depth window w = (a, b), ends included."""
    r = positions(n, series)
    return (r >= w[0] - SLACK) & (r <= w[1] + SLACK)
