"""Chapter 1's charts: the same per-depth measurement of every model run, side by side on relative
depth r = l / L, over the post's published curves.

A measurement's series (within-sentence, baseline, …) are told apart by colour and the models by
dash (solid for the first, the main model); with one series, colour tells the models apart.
Published curves are thin underneath, each its own grey and dash, named in the legend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import layer_chart, token_animation
from ...book.charts.frames import (binned_frame, per_layer_frame, published_binned_frame, published_frame, step_frame,
                                   token_positions_frame)
from ...book.charts.theme import MODEL_DASHES, PUBLISHED_COLOR, published_lines
from ...book.claims.ledger import lookup

__all__ = ["compare_chart", "models_binned_frame", "models_series_frame", "binned_lines",
           "layer_chart", "token_animation", "per_layer_frame", "published_frame", "published_binned_frame",
           "token_positions_frame"]
"""The chapter's charts, and the shared ones its notebook shows from here too (the last six)."""

def models_series_frame(measured: Mapping[str, Mapping[str, Any]], series: Mapping[str, str],
                        blocks: bool = False) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model) of the metrics at the key paths
    ``series`` (legend name → key path) of every model in ``measured`` (label → metrics dict);
    ``blocks`` for series over blocks 1..L. A metric that is None on a model, or under a None (the
    controls of a run without them), is left out."""
    frames = [(step_frame if blocks else per_layer_frame)({name: values}, model)
              for model, metrics in measured.items() for name, key in series.items()
              if (values := lookup(metrics, key)) is not None]
    return pd.concat(frames, ignore_index=True)


def compare_chart(frame: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None, title: str = "",
                  y_zero: bool = True, zero_rule: bool = False) -> alt.LayerChart | alt.Chart:
    """The frame of :func:`models_series_frame` on relative depth: colour per series, dash per
    model (colour per model when there is one series); ``published`` curves
    (``charts.published_frame``) thin underneath, each its own grey and dash; ``zero_rule`` draws y = 0."""
    models, names = list(dict.fromkeys(frame["model"])), list(dict.fromkeys(frame["series"]))
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=260, symbolType="stroke",
                        symbolStrokeWidth=2.5)
    if len(names) == 1:
        encoding = {"color": alt.Color("model:N", title=None, sort=models, legend=legend)}
    else:
        encoding = {"color": alt.Color("series:N", title=None, sort=names, legend=legend),
                    "strokeDash": alt.StrokeDash("model:N", title=None, sort=models, legend=legend,
                                                 scale=alt.Scale(domain=models, range=MODEL_DASHES[:len(models)]))}
    ours = alt.Chart(frame).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=x, y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)), tooltip=tooltip, **encoding)
    layers = []
    if published is not None and not published.empty:
        layers.append(published_lines(published, x))
    if zero_rule:
        layers.append(alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color=PUBLISHED_COLOR).encode(y="y:Q"))
    chart = alt.layer(*layers, ours) if layers else ours
    if layers:
        chart = chart.resolve_scale(color="independent", strokeDash="independent")
    return chart.properties(title=title)


def models_binned_frame(values: Mapping[str, Sequence[float]], edges: Sequence[float]) -> pd.DataFrame:
    """:func:`binned_frame` of each model's values (label → values) over the same ``edges``."""
    return pd.concat([binned_frame(np.asarray(v, dtype=float), edges, model, model) for model, v in values.items()],
                     ignore_index=True)


def binned_lines(frame: pd.DataFrame, x_title: str, published: pd.DataFrame | None = None,
                 title: str = "") -> alt.LayerChart | alt.Chart:
    """Histograms (fraction per bin) of every model as lines through the bin centres, a published
    histogram (``charts.published_binned_frame``) grey underneath."""
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=260)
    ours = alt.Chart(frame).mark_line(point=True, interpolate="step-after").encode(
        x=alt.X("bin_start:Q", title=x_title), y=alt.Y("fraction:Q", title="fraction of dimensions"),
        color=alt.Color("model:N", title=None, sort=list(dict.fromkeys(frame["model"])), legend=legend),
        tooltip=["model:N", alt.Tooltip("centre:Q", format=".3f"), "count:Q", alt.Tooltip("fraction:Q", format=".3f")])
    if published is None or published.empty:
        return ours.properties(title=title)
    named = published.assign(label="published (" + published["model"].str.split("/").str[-1] + ")",
                             bin_start=published["centre"] - (published["centre"].diff().median() / 2))
    theirs = alt.Chart(named).mark_line(interpolate="step-after", strokeWidth=1.2, color=PUBLISHED_COLOR).encode(
        x="bin_start:Q", y="fraction:Q", opacity=alt.Opacity("label:O", title=None, legend=legend,
                                                             scale=alt.Scale(range=[0.9])),
        tooltip=["label:N", alt.Tooltip("centre:Q", format=".3f"), "count:Q"])
    return alt.layer(theirs, ours).resolve_scale(opacity="independent").properties(title=title)
