"""Chapter 8's charts: one per-depth measurement on every model compared, on relative depth, over
the published curves, and the per-head grids of the head pass.

Each model's line is coloured by the trained model it belongs to and dashed when it is that
model's random-init control, so a model and its control read as one pair; published curves are
thin and grey, as in every chapter. Colour and dash share one legend, which names every line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ..claims import lookup
from .frames import per_layer_frame, published_frame
from .theme import CATEGORY_COLORS, PUBLISHED_COLOR, published_label

__all__ = ["head_grid_frame", "head_grids", "models_chart", "models_figure", "models_frame", "published_gap"]

KINDS = {"trained": "trained", "control": "random-init control"}
PICK_ABOVE = 3
"""Above this many trained models a chart draws one (with its controls) at a time, chosen in a
model picker under the chart: more lines than that do not read on a phone."""
PUBLISHED_DASHES = [[1, 0], [2, 2], [8, 3, 2, 3]]
"""Dash patterns of the published curves, in order (all thin and grey)."""


def models_frame(by_model: Mapping[str, Mapping[str, Any]], key: str,
                 models: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model, family, kind) of the metric at key
    path ``key`` on every model (``models``: the roster of ``book.model_verdicts``; ``family`` is
    the trained model a control copies). Models where the metric is None are left out."""
    frames = []
    for model, metrics in by_model.items():
        values, role = lookup(metrics, key), models[model]
        if values is not None:
            family = models.get(role["control_of"], role)["label"]
            frames.append(per_layer_frame({role["label"]: values}, model).assign(family=family,
                                                                                 kind=KINDS[role["kind"]]))
    return pd.concat(frames, ignore_index=True)


def published_gap(figure: Mapping[str, Any], minuend: str = "within-sentence",
                  subtrahend: str = "cross-sentence baseline", name: str = "gap") -> dict[str, Any]:
    """A published figure with one series: the difference of two of its series."""
    series = figure["series"]
    return {**figure, "series": {name: list(np.subtract(series[minuend], series[subtrahend]))}}


def models_chart(run: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None, title: str = "",
                 y_zero: bool = True) -> alt.LayerChart | alt.Chart:
    """The frame of :func:`models_frame` on relative depth: a colour per trained model, its
    control dashed in the same colour; published curves (``charts.published_frame``) thin and
    grey underneath. One legend names every line."""
    theirs = pd.DataFrame() if published is None else published.assign(
        series=[published_label(s, m) for s, m in zip(published["series"], published["model"])])
    palette = CATEGORY_COLORS
    families = list(dict.fromkeys(run["family"]))
    lines = run.drop_duplicates("series")
    domain = list(lines["series"]) + list(dict.fromkeys(theirs["series"])) if len(theirs) else list(lines["series"])
    colours = [palette[families.index(f) % len(palette)] for f in lines["family"]]
    dashes = [[6, 3] if kind == KINDS["control"] else [1, 0] for kind in lines["kind"]]
    n_published = len(domain) - len(lines)
    legend = alt.Legend(symbolType="stroke", symbolStrokeWidth=2.5, symbolSize=300, columns=1)
    colour = alt.Color("series:N", title=None, legend=legend,
                       scale=alt.Scale(domain=domain, range=colours + [PUBLISHED_COLOR] * n_published))
    grey_dashes = [PUBLISHED_DASHES[i % len(PUBLISHED_DASHES)] for i in range(n_published)]
    dash = alt.StrokeDash("series:N", title=None, legend=legend,
                          scale=alt.Scale(domain=domain, range=dashes + grey_dashes))
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    ours = alt.Chart(run).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)), color=colour, strokeDash=dash,
        tooltip=tooltip)
    if len(families) > PICK_ABOVE:  # many models: one trained model and its controls at a time, picked
        pick = alt.param(name="model", value=families[0], bind=alt.binding_select(options=families, name="model "))
        ours = ours.add_params(pick).transform_filter(alt.datum.family == pick)
    if not n_published:
        return ours.properties(title=title)
    grey = alt.Chart(theirs).mark_line(strokeWidth=1.2).encode(x=x, y="value:Q", color=colour, strokeDash=dash,
                                                               tooltip=tooltip)
    return alt.layer(grey, ours).properties(title=title)


def models_figure(by_model: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]], key: str,
                  y_title: str, published: Mapping[str, Any] | None = None, names: Sequence[str] | None = None,
                  title: str = "", y_zero: bool = True) -> alt.LayerChart | alt.Chart:
    """:func:`models_chart` of the metric at key path ``key`` on every model, over the series
    ``names`` (default: all) of the transcribed published figure ``published``."""
    theirs = None if published is None else published_frame(published, names)
    return models_chart(models_frame(by_model, key, models), y_title, theirs, title, y_zero)


def head_grid_frame(grids: Mapping[str, Mapping[str, Sequence[Sequence[float]]]]) -> pd.DataFrame:
    """Long frame (model, measure, block, head, value) of per-head grids [L][H] by model and measure."""
    rows = [{"model": model, "measure": measure, "block": l + 1, "head": h + 1, "value": value}
            for model, measures in grids.items() for measure, grid in measures.items()
            for l, row in enumerate(grid) for h, value in enumerate(row)]
    return pd.DataFrame(rows)


def head_grids(frame: pd.DataFrame, titles: Mapping[str, str], title: str = "") -> alt.VConcatChart:
    """One block × head heatmap per measure (colour scale ``titles[measure]``) and model, one
    under the other, each cell labelled with its value."""
    rows = []
    for measure, legend in titles.items():
        panels = []
        for model, part in frame[frame["measure"] == measure].groupby("model", sort=False):
            base = alt.Chart(part, title=model).encode(x=alt.X("head:O", title="head h"),
                                                       y=alt.Y("block:O", title="block l"))
            cells = base.mark_rect().encode(color=alt.Color("value:Q", title=legend, scale=alt.Scale(scheme="blues")),
                                            tooltip=["block:O", "head:O",
                                                     alt.Tooltip("value:Q", title=legend, format=".3f")])
            text = base.mark_text(fontSize=8).encode(
                text=alt.Text("value:Q", format=".2~g"),
                color=alt.condition(f"datum.value > {float(part['value'].max()) / 2}",
                                    alt.value("white"), alt.value("black")))
            panels.append(alt.layer(cells, text).properties(width=alt.Step(26), height=alt.Step(20)))
        rows += panels  # one panel a row: a 12 × 12 grid fits a phone's column
    return alt.vconcat(*rows).resolve_scale(color="independent").properties(title=title)
