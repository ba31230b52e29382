"""Tidy DataFrames for the charts: one row per (series, depth) or per token, with relative depth
r = l / L wherever a published curve may be overlaid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd


def per_layer_frame(series: Mapping[str, Sequence[float]], model: str) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model) from per-depth arrays of L + 1."""
    frames = []
    for name, values in series.items():
        values = np.asarray(values, dtype=float)
        depth = np.arange(len(values))
        frames.append(pd.DataFrame({"depth": depth, "relative_depth": depth / (len(values) - 1),
                                    "value": values, "series": name, "model": model}))
    return pd.concat(frames, ignore_index=True)


def step_frame(series: Mapping[str, Sequence[float]], model: str) -> pd.DataFrame:
    """Long frame like ``per_layer_frame`` for series of L entries indexed by the transition's
    destination depth l = 1..L (steps, peak-write counts); relative depth l / L."""
    frames = []
    for name, values in series.items():
        values = np.asarray(values, dtype=float)
        depth = np.arange(1, len(values) + 1)
        frames.append(pd.DataFrame({"depth": depth, "relative_depth": depth / len(values),
                                    "value": values, "series": name, "model": model}))
    return pd.concat(frames, ignore_index=True)


def published_frame(figure: Mapping, names: Sequence[str] | None = None, scale: float = 1.0) -> pd.DataFrame:
    """A transcribed published figure (``{model, layers, x, series}``, see ``data/published/``;
    ``models: {series: model}`` when its series come from different models) as a long frame on
    relative depth x / layers; ``names`` picks series, ``scale`` multiplies values."""
    frames = []
    for name, values in figure["series"].items():
        if names is None or name in names:
            depth = np.asarray(figure["x"], dtype=float)
            model = figure.get("models", {}).get(name) or figure["model"]
            frames.append(pd.DataFrame({"depth": depth, "relative_depth": depth / figure["layers"],
                                        "value": np.asarray(values, dtype=float) * scale,
                                        "series": name, "model": model}))
    return pd.concat(frames, ignore_index=True)


def published_binned_frame(figure: Mapping, series: str) -> pd.DataFrame:
    """A transcribed published histogram (``{model, bin_centres, counts}``) in the columns of
    ``binned_frame`` (centre, count, fraction, series, model)."""
    counts = np.asarray(figure["counts"], dtype=float)
    return pd.DataFrame({"centre": figure["bin_centres"], "count": counts, "fraction": counts / counts.sum(),
                         "series": series, "model": figure["model"]})


def rows_frame(series: Mapping[str, Sequence[float]], value: str = "value") -> pd.DataFrame:
    """Long frame (row, depth, value) from per-depth series keyed by a row label, rows in order."""
    return pd.DataFrame([{"row": row, "depth": depth, value: round(float(v), 4)}
                         for row, values in series.items() for depth, v in enumerate(values)])


def token_positions_frame(record, coords: np.ndarray, labels: Sequence[str],
                          groups: Sequence[str] | None = None, shapes: Sequence[str] | None = None) -> pd.DataFrame:
    """Long frame of 2-D token positions at every depth, plus one centroid row per text and depth.

    ``coords`` [L + 1, n_word, 2] holds the word tokens of ``record`` (an ``activations.Activations``)
    in order; per text, ``labels`` names it, ``groups`` colours it (default: its label) and
    ``shapes`` gives its marker (default circle). The centroid of a text is the mean of its
    word tokens' positions (the position of its word-mean, since the projection is affine)."""
    words = np.flatnonzero(record.word_mask)
    text = record.text_index()[words]
    groups = list(groups or labels)
    shapes = list(shapes or ["circle"] * record.n_texts)
    tokens = np.asarray(record.tokens, dtype=object)[words]
    rows = []
    for depth, points in enumerate(np.asarray(coords)):
        for t in range(record.n_texts):
            mine = text == t
            common = {"depth": depth, "sentence": labels[t], "group": groups[t]}
            rows += [{**common, "x": x, "y": y, "token": token, "shape": shapes[t], "kind": "token"}
                     for (x, y), token in zip(points[mine], tokens[mine])]
            cx, cy = points[mine].mean(axis=0)
            rows.append({**common, "x": cx, "y": cy, "token": f"centroid: {labels[t]}", "shape": "diamond",
                         "kind": "centroid"})
    frame = pd.DataFrame(rows)
    return frame.assign(x=frame["x"].round(3), y=frame["y"].round(3))


def binned_frame(values: Sequence[float], edges: Sequence[float], series: str, model: str) -> pd.DataFrame:
    """A histogram of ``values`` over ``edges`` as (bin_start, bin_end, centre, count, fraction)."""
    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=np.asarray(edges, dtype=float))
    return pd.DataFrame({"bin_start": edges[:-1], "bin_end": edges[1:], "centre": (edges[:-1] + edges[1:]) / 2,
                         "count": counts, "fraction": counts / max(counts.sum(), 1), "series": series, "model": model})
