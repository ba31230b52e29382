"""Tidy frames for chapter 4's charts of attention heads: per-block series, the distance
histogram, distinct focus tokens, the sensitivity check, and the first text's matrices encoded
small enough to ship every head inline (read by ``matrices.context_matrix_explorer``).

Each takes the chapter's metrics dict (``studies.context_similarity.metrics``) or its
``Measurement.example`` and returns a DataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...core.errors import ParameterError

__all__ = ["LEVELS", "block_means", "decode_levels", "distance_frame", "encode_levels", "example_frames",
           "kinds_frame", "layer_frame", "sensitivity_frame", "unique_focus_frame"]


def layer_frame(values: dict[str, Sequence[float]]) -> pd.DataFrame:
    """Long frame (layer, value, series) from per-block series of L entries."""
    return pd.concat([pd.DataFrame({"layer": np.arange(1, len(v) + 1), "value": np.asarray(v, float), "series": name})
                      for name, v in values.items()], ignore_index=True)


def kinds_frame(m: dict) -> pd.DataFrame:
    """(layer, kind, share): what the high-attention tokens of each layer are (TOKEN_KINDS)."""
    frame = layer_frame(m["attended_kinds"])
    return frame.rename(columns={"value": "share", "series": "kind"})


def distance_frame(m: dict, layers: Sequence[int]) -> pd.DataFrame:
    """Share of high pairs at each distance d for the given blocks (numbered from 1; labelled
    "block l of L"), with the chance share (T − d) / |P| of a uniformly drawn pair."""
    counts = np.asarray(m["distance_histogram"], float)
    d = np.arange(1, counts.shape[1] + 1)
    chance = (len(d) + 1 - d) / (len(d) + 1 - d).sum()
    frames = [pd.DataFrame({"distance": d, "share": counts[l - 1] / counts[l - 1].sum(),
                            "layer": f"block {l} of {len(counts)}"}) for l in layers]
    return pd.concat(frames + [pd.DataFrame({"distance": d, "share": chance, "layer": "chance"})], ignore_index=True)


def unique_focus_frame(m: dict) -> pd.DataFrame:
    """(layer, distinct, share of texts) from the unique-focus histogram; counts no text had are left out."""
    hist = np.asarray(m["unique_focus_tokens"]["histogram"], float)
    layer, k = np.meshgrid(np.arange(1, hist.shape[0] + 1), np.arange(hist.shape[1]), indexing="ij")
    frame = pd.DataFrame({"layer": layer.ravel(), "distinct": k.ravel(),
                          "share": (hist / hist.sum(axis=1, keepdims=True)).ravel().round(4)})
    return frame[frame["share"] > 0].reset_index(drop=True)


def sensitivity_frame(m: dict) -> pd.DataFrame:
    """(threshold, layer, measure, value) for the sensitivity check."""
    s = m["sensitivity"]
    rows = [{"threshold": f"{t:g}", "layer": l + 1, "measure": name, "value": row[l]}
            for name in ("separator_attention", "mean_pair_distance", "same_sentence_fraction")
            for t, row in zip(s["thresholds"], np.asarray(s[name], dtype=object).tolist())
            for l in range(len(row))]
    return pd.DataFrame(rows).dropna()


LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
"""64 symbols: a value in [−1, 1] is stored as one character, level k ↦ 2k / 63 − 1."""


def encode_levels(values: np.ndarray) -> str:
    """Values in [−1, 1] as a string of one LEVELS character each (64 levels)."""
    codes = np.rint((np.clip(np.asarray(values, float).ravel(), -1, 1) + 1) / 2 * (len(LEVELS) - 1)).astype(int)
    return "".join(LEVELS[k] for k in codes)


def decode_levels(text: str) -> np.ndarray:
    """The inverse of :func:`encode_levels` (up to its rounding, ≤ 1/63)."""
    return np.array([LEVELS.index(c) for c in text]) * 2 / (len(LEVELS) - 1) - 1


def block_means(matrix: np.ndarray, size: int) -> np.ndarray:
    """Mean over square blocks of b = ⌈T / size⌉ tokens: [T, T] → [⌈T / b⌉, ⌈T / b⌉]."""
    n = matrix.shape[-1]
    block = -(-n // size)
    starts = np.arange(0, n, block)
    widths = np.diff(np.append(starts, n))
    sums = np.add.reduceat(np.add.reduceat(np.asarray(matrix, float), starts, axis=-1), starts, axis=-2)
    return sums / np.outer(widths, widths)


def example_frames(example, size: int = 64) -> dict[str, pd.DataFrame]:
    """The first text's figures (``example``: window, similarity [L, H, T, T], received [L, H, T]),
    small enough to ship every head inline:

    matrices   one row per (layer, head): ``cells`` = S as ⌈T/b⌉² block means (b = ⌈T / size⌉),
               divided by their largest |value| and encoded with :func:`encode_levels`
    received   one row per (layer, head): ``a`` = a_j for every position, rounded to 2 decimals
    tokens     one row per position: piece, sentence, separator
    bounds     positions where a sentence starts (for rules on the matrix)
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        raise ParameterError("matrix_size", "an integer ≥ 2", size)
    n_layers, n_heads, n_tokens, _ = example.similarity.shape
    block = -(-n_tokens // size)
    rows, received = [], []
    for l in range(n_layers):
        for h in range(n_heads):
            cells = block_means(example.similarity[l, h], size)
            top = np.abs(cells).max()
            rows.append({"layer": l + 1, "head": h + 1, "block": block, "side": len(cells),
                         "cells": encode_levels(cells / top if top > 0 else cells)})
            received.append({"layer": l + 1, "head": h + 1, "a": np.round(example.received[l, h], 2).tolist()})
    w = example.window
    starts = np.flatnonzero((w.sentence_ids >= 0) & (np.append(-2, w.sentence_ids[:-1]) != w.sentence_ids))
    return {"matrices": pd.DataFrame(rows), "received": pd.DataFrame(received),
            "tokens": pd.DataFrame({"position": np.arange(n_tokens), "token": w.tokens,
                                    "sentence": w.sentence_ids, "separator": w.separators}),
            "bounds": pd.DataFrame({"position": starts})}
