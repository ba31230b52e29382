"""Chapter 8's charts: one per-depth measurement on every model compared, on relative depth, over
the published curves, and the per-head grids of the head pass; each stays readable at any number
of models.

Up to :data:`PICK_ABOVE` trained models, each model's line is coloured by the trained model it
belongs to and dashed when it is one of that model's random-init controls, so a model and its
controls read as one pair, and one legend names every line. With more, a model picker under the
chart draws one trained model and its controls in colour over every trained model's line in
light grey, and the legend names the roles (the picked model, its controls, every trained model),
not the models: a tooltip names a line. The per-head grids take a picker the same way. Published
curves are thin, each its own grey and dash, as in every chapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.frames import per_layer_frame, published_frame
from ...book.charts.theme import CATEGORY_COLORS, PUBLISHED_DASHES, PUBLISHED_GREYS, published_label
from ...book.claims import lookup

__all__ = ["head_grid_frame", "head_grids", "models_chart", "models_figure", "models_frame", "published_gap"]

KINDS = {"trained": "trained", "control": "random-init control"}
PICK_ABOVE = 3
"""Above this many trained models a chart draws one (with its controls) at a time, chosen in a
model picker under the chart: more coloured lines than that do not read on a phone."""
ROLES = ("the model picked", "its random-init controls", "every trained model")
"""What the legend names when a picker chooses the model (module docstring)."""
CONTEXT_COLOR = "#c8c8c8"
"""Every trained model's line under the picked one."""
SOLID, DASHED = [1, 0], [6, 3]


def models_frame(by_model: Mapping[str, Mapping[str, Any]], key: str,
                 models: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model, family, kind) of the metric at key
    path ``key`` on every model (``models``: the roster of ``model_verdicts``; ``family`` is
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
    """The frame of :func:`models_frame` on relative depth (module docstring): a colour per
    trained model and its controls dashed, or, above :data:`PICK_ABOVE` trained models, the
    picked one over every trained model in grey; published curves (``charts.published_frame``)
    thin underneath, each its own grey and dash. One legend names every line, or every role."""
    theirs = pd.DataFrame() if published is None else published.assign(
        series=[published_label(s, m) for s, m in zip(published["series"], published["model"])])
    families = list(dict.fromkeys(run["family"]))
    picking = len(families) > PICK_ABOVE
    styles = _role_styles() if picking else _line_styles(run, families)
    published_names = list(dict.fromkeys(theirs["series"])) if len(theirs) else []
    styles |= {name: (PUBLISHED_GREYS[i % len(PUBLISHED_GREYS)], PUBLISHED_DASHES[i % len(PUBLISHED_DASHES)])
               for i, name in enumerate(published_names)}
    legend = alt.Legend(symbolType="stroke", symbolStrokeWidth=2.5, symbolSize=300, columns=1)
    colour = alt.Color("line:N", title=None, legend=legend,
                       scale=alt.Scale(domain=list(styles), range=[c for c, _ in styles.values()]))
    dash = alt.StrokeDash("line:N", title=None, legend=legend,
                          scale=alt.Scale(domain=list(styles), range=[d for _, d in styles.values()]))
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero))
    tooltip = ["series:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    layers = []
    if published_names:
        layers.append(alt.Chart(theirs.assign(line=theirs["series"])).mark_line(strokeWidth=1.2).encode(
            x=x, y="value:Q", color=colour, strokeDash=dash, tooltip=tooltip))
    if picking:
        every = run[run["kind"] == KINDS["trained"]].assign(line=ROLES[2])
        layers.append(alt.Chart(every).mark_line(strokeWidth=1, opacity=0.8).encode(
            x=x, y=y, color=colour, strokeDash=dash, detail="model:N", tooltip=tooltip))
        pick = alt.param(name="model", value=families[0], bind=alt.binding_select(options=families, name="model "))
        roles = np.where(run["kind"] == KINDS["control"], ROLES[1], ROLES[0])
        ours = alt.Chart(run.assign(line=roles)).add_params(pick).transform_filter(alt.datum.family == pick)
    else:
        ours = alt.Chart(run.assign(line=run["series"]))
    layers.append(ours.mark_line(point=True).encode(x=x, y=y, color=colour, strokeDash=dash, detail="model:N",
                                                     tooltip=tooltip))
    return (alt.layer(*layers) if len(layers) > 1 else layers[0]).properties(title=title)


def _line_styles(run: pd.DataFrame, families: list[str]) -> dict[str, tuple[str, list[int]]]:
    """(colour, dash) of each series: its trained model's colour, dashed for a control."""
    lines = run.drop_duplicates("series")
    return {series: (CATEGORY_COLORS[families.index(family) % len(CATEGORY_COLORS)],
                     DASHED if kind == KINDS["control"] else SOLID)
            for series, family, kind in zip(lines["series"], lines["family"], lines["kind"])}


def _role_styles() -> dict[str, tuple[str, list[int]]]:
    """(colour, dash) of each role of a picked chart: the picked model and its controls in the
    first colour, every trained model in light grey."""
    first = CATEGORY_COLORS[0]
    return dict(zip(ROLES, [(first, SOLID), (first, DASHED), (CONTEXT_COLOR, SOLID)]))


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
    under the other, each cell labelled with its value; above :data:`PICK_ABOVE` models, one
    heatmap per measure of the model a picker under the grids chooses."""
    frame = frame.assign(light=frame.groupby(["model", "measure"])["value"].transform(lambda v: v > v.max() / 2))
    models = list(dict.fromkeys(frame["model"]))
    if len(models) > PICK_ABOVE:
        pick = alt.param(name="grid_model", value=models[0], bind=alt.binding_select(options=models, name="model "))
        panels = [_heatmap(frame[frame["measure"] == measure], legend, legend, alt.datum.model == pick)
                  for measure, legend in titles.items()]
        return alt.vconcat(*panels).add_params(pick).resolve_scale(color="independent").properties(title=title)
    rows = [_heatmap(part, model, legend) for measure, legend in titles.items()
            for model, part in frame[frame["measure"] == measure].groupby("model", sort=False)]
    return alt.vconcat(*rows).resolve_scale(color="independent").properties(title=title)  # a 12 × 12 grid a row


def _heatmap(part: pd.DataFrame, title: str, legend: str, only: Any = None) -> alt.LayerChart:
    """A block × head heatmap of ``part``, each cell labelled (white on its darker half), of the
    rows ``only`` keeps (a Vega-Lite predicate; None: all)."""
    base = alt.Chart(part, title=title)
    base = base.transform_filter(only) if only is not None else base
    base = base.encode(x=alt.X("head:O", title="head h"), y=alt.Y("block:O", title="block l"))
    cells = base.mark_rect().encode(color=alt.Color("value:Q", title=legend, scale=alt.Scale(scheme="blues")),
                                    tooltip=["model:N", "block:O", "head:O",
                                             alt.Tooltip("value:Q", title=legend, format=".3f")])
    text = base.mark_text(fontSize=8).encode(text=alt.Text("value:Q", format=".2~g"),
                                             color=alt.condition(alt.datum.light, alt.value("white"),
                                                                 alt.value("black")))
    return alt.layer(cells, text).properties(width=alt.Step(26), height=alt.Step(20))
