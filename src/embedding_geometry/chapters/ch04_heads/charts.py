"""Chapter 4's charts: per-head grids and block lines, the context-similarity matrix explorer,
and the charts of several models side by side (per-block series on relative depth, summed
matrices, per-head distance histograms, head classes, a null's draws). Each takes a frame of
:mod:`.frames`, or the models' metrics (model id → metrics) and makes the frames itself."""

from __future__ import annotations

import json
from collections.abc import Mapping

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.theme import PUBLISHED_COLOR
from .frames import sensitivity_frame, unique_focus_frame


def block_lines(frame: pd.DataFrame, y_title: str, title: str = "", chance: float | None = None,
                color: str = "series") -> alt.LayerChart | alt.Chart:
    """Per-block series (``layer`` 1..L on x, ``value`` on y, one line per ``color``); an optional
    grey dashed rule marks the chance level."""
    blocks = int(frame["layer"].max())
    x = alt.X("layer:Q", title="block l", scale=alt.Scale(domain=[1, blocks]),
              axis=alt.Axis(values=list(range(1, blocks + 1)), format="d"))  # one tick per block, however narrow
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title), color=alt.Color(f"{color}:N", title=None),
        tooltip=[alt.Tooltip(f"{color}:N", title=color), alt.Tooltip("layer:Q", title="block"),
                 alt.Tooltip("value:Q", title=y_title, format=".3f")])
    if chance is None:
        return lines.properties(title=title)
    level = pd.DataFrame({"value": [chance], "label": [f"chance {chance:.3g}"]})
    rule = alt.Chart(level).mark_rule(color=PUBLISHED_COLOR, strokeDash=[5, 4]).encode(
        y="value:Q", tooltip=[alt.Tooltip("label:N", title="random pair")])
    return alt.layer(rule, lines).properties(title=title)


def head_grid(frame: pd.DataFrame, title: str = "") -> alt.Chart:
    """One cell per (layer, head), coloured by its class, its numbers on hover or tap (``frame`` is
    ``context_similarity.head_table``)."""
    classes = alt.Scale(domain=["repetition", "common-token", "other"], range=["#1f5fa8", "#d2691e", "#d9d9d9"])
    shares = {"repeat_share": "high pairs joining a repeated token",
              "common_focus_share": "texts with a common focus token",
              "same_sentence_fraction": "high pairs inside one sentence"}
    return alt.Chart(frame).mark_rect(stroke="white").encode(
        x=alt.X("head:O", title="head h"), y=alt.Y("layer:O", title="block l"),
        color=alt.Color("class:N", title=None, scale=classes),
        tooltip=[alt.Tooltip("layer:O", title="block"), alt.Tooltip("head:O", title="head"),
                 alt.Tooltip("class:N", title="class"),
                 *[alt.Tooltip(f"{field}:Q", title=title, format=".2f") for field, title in shares.items()],
                 alt.Tooltip("mean_pair_distance:Q", title="mean distance of high pairs", format=".1f"),
                 alt.Tooltip("top_focus:N", title="most frequent focus tokens (share of texts)")],
    ).properties(title=title, width=alt.Step(32), height=alt.Step(26))


def distance_lines(frame: pd.DataFrame, title: str = "") -> alt.Chart:
    """Share of high pairs at each distance, one line per layer; the ``chance`` rows grey and dashed."""
    layers = [x for x in dict.fromkeys(frame["layer"]) if x != "chance"]
    colours = alt.Scale(domain=layers + ["chance"],
                        range=["#1f5fa8", "#d2691e", "#2e8b57", "#8b3a8b"][:len(layers)] + [PUBLISHED_COLOR])
    return alt.Chart(frame).mark_line().encode(
        x=alt.X("distance:Q", title="distance |i − j| (tokens)"), y=alt.Y("share:Q", title="share of high pairs"),
        color=alt.Color("layer:N", title=None, sort=layers + ["chance"], scale=colours),
        strokeDash=alt.condition(alt.datum.layer == "chance", alt.value([5, 4]), alt.value([1, 0])),
        tooltip=[alt.Tooltip("layer:N", title="block"), alt.Tooltip("distance:Q", title="distance |i − j|"),
                 alt.Tooltip("share:Q", title="share of high pairs", format=".4f")],
    ).properties(title=title)


def layer_heatmap(frame: pd.DataFrame, x: str, value: str, x_title: str, title: str = "",
                  value_title: str | None = None) -> alt.LayerChart:
    """A layer × ``x`` heatmap of ``value``, each cell labelled."""
    base = alt.Chart(frame).encode(x=alt.X(f"{x}:O", title=x_title), y=alt.Y("layer:O", title="block l"))
    cells = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", title=value_title or value, scale=alt.Scale(scheme="blues")),
        tooltip=[alt.Tooltip("layer:O", title="block"), alt.Tooltip(f"{x}:O", title=x_title),
                 alt.Tooltip(f"{value}:Q", title=f"{value} of {value_title or value}", format=".3f")])
    dark = float(frame[value].max()) / 2
    text = base.mark_text(fontSize=9).encode(
        text=alt.Text(f"{value}:Q", format=".2f"),
        color=alt.condition(f"datum.{value} > {dark}", alt.value("white"), alt.value("black")))
    return alt.layer(cells, text).properties(title=title, width=alt.Step(36), height=alt.Step(24))


def sensitivity_chart(frame: pd.DataFrame, titles: Mapping[str, str], title: str = "") -> alt.HConcatChart:
    """One panel per ``measure`` (its y title from ``titles``): value per layer, one line per threshold."""
    panels = [block_lines(frame[frame["measure"] == name], y_title, color="threshold").properties(width=150, height=180)
              for name, y_title in titles.items()]
    return alt.hconcat(*panels).properties(title=title)


def context_matrix_explorer(frames: Mapping[str, pd.DataFrame], n_layers: int, n_heads: int,
                            threshold: float, levels: str, title: str = "") -> alt.VConcatChart:
    """One text's context similarity matrix S for the (layer, head) two sliders pick, sentence
    starts as grey rules, above the attention a_j each token receives from that head.

    ``frames`` is ``frames.example_frames``: each matrix travels as a string of one
    ``levels`` character per block of b × b tokens, decoded in the browser (level k ↦
    2k / (len(levels) − 1) − 1), so that every head fits on the page."""
    layer = alt.param(name="layer", value=n_layers, bind=alt.binding_range(min=1, max=n_layers, step=1, name="layer "))
    head = alt.param(name="head", value=1, bind=alt.binding_range(min=1, max=n_heads, step=1, name="head "))
    chosen = (alt.datum.layer == layer) & (alt.datum.head == head)
    matrices, tokens = frames["matrices"], frames["tokens"]
    b, side, n = int(matrices["block"].iloc[0]), int(matrices["side"].iloc[0]), len(tokens)
    positions = alt.Scale(domain=[0, n], nice=False)
    cells = (alt.Chart(matrices).transform_filter(chosen)
             .transform_calculate(code="split(datum.cells, '')").transform_flatten(["code"])
             .transform_window(k="row_number()")
             .transform_calculate(i=f"floor((datum.k - 1) / {side}) * {b}", j=f"((datum.k - 1) % {side}) * {b}",
                                  value=f"indexof('{levels}', datum.code) * 2 / {len(levels) - 1} - 1")
             .transform_calculate(i2=f"datum.i + {b}", j2=f"datum.j + {b}")
             .mark_rect().encode(
                 x=alt.X("j:Q", title="token position j", scale=positions), x2="j2:Q",
                 y=alt.Y("i:Q", title="token position i", scale=alt.Scale(domain=[0, n], nice=False, reverse=True)),
                 y2="i2:Q", tooltip=[alt.Tooltip("i:Q", title="token i (block start)"),
                                     alt.Tooltip("j:Q", title="token j (block start)"),
                                     alt.Tooltip("value:Q", title="S / max |S|", format=".2f")],
                 color=alt.Color("value:Q", title="S / max |S|",
                                 scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True))))
    bounds = alt.Chart(frames["bounds"]).mark_rule(color="#555555", strokeWidth=0.8)
    matrix = alt.layer(cells, bounds.encode(x="position:Q"), bounds.encode(y="position:Q")).properties(
        width=430, height=430, title=title)
    separator = alt.Scale(domain=[True, False], range=["#d2691e", "#1f5fa8"])
    received = (alt.Chart(frames["received"]).transform_filter(chosen).transform_flatten(["a"])
                .transform_window(k="row_number()").transform_calculate(position="datum.k - 1")
                .transform_lookup(lookup="position", from_=alt.LookupData(tokens, "position", ["token", "separator"]))
                .mark_bar().encode(
                    x=alt.X("position:Q", title="token position j", scale=positions),
                    y=alt.Y("a:Q", title="attention received"),
                    color=alt.Color("separator:N", title="separator", scale=separator),
                    tooltip=[alt.Tooltip("position:Q", title="position j"), alt.Tooltip("token:N", title="token"),
                             alt.Tooltip("separator:N", title="separator"),
                             alt.Tooltip("a:Q", title="attention received", format=".2f")]))
    tau = alt.Chart(pd.DataFrame({"a": [threshold]})).mark_rule(color=PUBLISHED_COLOR,
                                                                strokeDash=[5, 4]).encode(y="a:Q")
    return alt.vconcat(matrix, alt.layer(received, tau).properties(width=430, height=110)).add_params(layer, head)


# --------------------------------------------------------------------------- chapter 4, models side by side

PANEL = 150
"""Width and height of one small-multiple panel (three fit a 688 px column)."""


def depth_lines(frame: pd.DataFrame, y_title: str, title: str = "") -> alt.LayerChart | alt.Chart:
    """Per-block series of several models (``frames.depth_frame``) on relative depth l / L, one
    colour per model; a ``chance`` column is drawn as a dashed line in the model's colour."""
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    colour = alt.Color("model:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=200))
    tooltip = [alt.Tooltip("model:N"), alt.Tooltip("block:Q", title="block l"),
               alt.Tooltip("value:Q", title=y_title, format=".3f")]
    lines = alt.Chart(frame).mark_line(point=True).encode(x=x, y=alt.Y("value:Q", title=y_title), color=colour,
                                                         tooltip=tooltip)
    if "chance" not in frame:
        return lines.properties(title=title, width="container")
    chance = alt.Chart(frame).mark_line(strokeDash=[5, 4], opacity=0.8).encode(
        x=x, y="chance:Q", color=colour, tooltip=[alt.Tooltip("model:N"), alt.Tooltip("chance:Q", format=".3f")])
    return alt.layer(chance, lines).properties(title=title, width="container")


def kinds_by_model_chart(frame: pd.DataFrame, title: str = "", y_title: str = "share") -> alt.FacetChart:
    """Stacked bars of ``share`` per block, one segment per kind (``frames.kinds_by_model``), one
    row per model, each with its own blocks. ``y_title`` is written once, beside all the rows (a
    title per row would be taller than its row and run into the next one's)."""
    order = list(dict.fromkeys(frame["kind"]))
    return alt.Chart(frame).transform_calculate(rank=f"indexof({json.dumps(order)}, datum.kind)").mark_bar().encode(
        x=alt.X("layer:O", title="block l"), y=alt.Y("share:Q", title=None, stack="zero"),
        color=alt.Color("kind:N", title=None, sort=order, legend=alt.Legend(orient="bottom")),
        order=alt.Order("rank:Q"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("layer:O", title="block"), alt.Tooltip("kind:N"),
                 alt.Tooltip("share:Q", title=y_title, format=".3f")],
    ).properties(width=alt.Step(24), height=120).facet(row=alt.Row("model:N", title=y_title)).resolve_scale(
        x="independent").properties(title=title)


def summed_matrices(frame: pd.DataFrame, levels: str, title: str = "") -> alt.FacetChart:
    """The summed context similarity matrices of ``frames.summed_frame``, one small panel per model
    and block (three to a row), each scaled to its largest |value| and decoded in the browser as in
    :func:`context_matrix_explorer`."""
    side = int(frame["side"].iloc[0])
    cells = (alt.Chart(frame).transform_calculate(code="split(datum.cells, '')").transform_flatten(["code"])
             .transform_window(k="row_number()", groupby=["panel"])
             .transform_calculate(i=f"floor((datum.k - 1) / {side})", j=f"(datum.k - 1) % {side}",
                                  value=f"indexof('{levels}', datum.code) * 2 / {len(levels) - 1} - 1")
             .mark_rect().encode(
                 x=alt.X("j:O", title=None, axis=None), y=alt.Y("i:O", title=None, axis=None),
                 color=alt.Color("value:Q", title="mean S / max |S|",
                                 scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True),
                                 legend=alt.Legend(orient="bottom")),
                 tooltip=[alt.Tooltip("panel:N"), alt.Tooltip("i:O", title="row block i"),
                          alt.Tooltip("j:O", title="column block j"), alt.Tooltip("value:Q", format=".2f")])
             .properties(width=PANEL, height=PANEL))
    return cells.facet(facet=alt.Facet("panel:N", title=None, sort=list(frame["panel"])), columns=3).properties(
        title=title)


def head_distance_chart(frame: pd.DataFrame, title: str = "") -> alt.FacetChart:
    """Each head's high pairs by distance bin (``frames.head_distance_frame``), coloured by their
    lift over a random pair on a log scale (red: more often than chance, blue: less; the scale
    clips at 1/16 and 16): one row per head, one small panel per model and block (three to a row)."""
    order = list(dict.fromkeys(frame.sort_values("order")["distance"]))
    lift = alt.Scale(type="log", scheme="redblue", reverse=True, domain=[1 / 16, 16], domainMid=1, clamp=True)
    return alt.Chart(frame).mark_rect().encode(
        x=alt.X("distance:O", title="distance |i − j|", sort=order, axis=alt.Axis(labelAngle=-60)),
        y=alt.Y("head:O", title="head h"),
        color=alt.condition("isValid(datum.lift) && datum.lift > 0",
                            alt.Color("lift:Q", title="÷ a random pair's share", scale=lift,
                                      legend=alt.Legend(orient="bottom")), alt.value("#eeeeee")),
        tooltip=[alt.Tooltip("panel:N"), alt.Tooltip("head:O"), alt.Tooltip("distance:O"),
                 alt.Tooltip("share:Q", title="share of the head's high pairs", format=".3f"),
                 alt.Tooltip("lift:Q", title="÷ a random pair's share", format=".2f")],
    ).properties(width=PANEL, height=alt.Step(13)).facet(
        facet=alt.Facet("panel:N", title=None, sort=list(dict.fromkeys(frame["panel"]))), columns=3).resolve_scale(
        y="independent").properties(title=title)


def head_class_grids(frame: pd.DataFrame, title: str = "") -> alt.FacetChart:
    """:func:`head_grid` of several models (``frame``: ``context_similarity.head_table`` rows with a
    ``model`` column), one row per model, each with its own blocks."""
    return head_grid(frame).properties(title="").facet(row=alt.Row("model:N", title=None)).resolve_scale(
        y="independent").properties(title=title)


def null_histogram(draws: pd.DataFrame, observed: pd.DataFrame, x_title: str, title: str = "",
                   bins: int = 60) -> alt.VConcatChart:
    """The draws of a null per model (``frames.null_draws_frame``) as a histogram of ``bins`` bins
    (counted here, so that the page carries the counts, not the draws), with the model's own value
    as a rule (orange): how far the run is from what the null gives. One panel per model."""
    panels = []
    for model in dict.fromkeys(draws["model"]):
        mine, value = draws[draws["model"] == model]["value"], observed[observed["model"] == model]
        lo, hi = float(min(mine.min(), value["value"].min())), float(max(mine.max(), value["value"].max()))
        pad = 0.05 * (hi - lo or 1.0)
        counts, edges = np.histogram(mine, bins=bins, range=(lo - pad, hi + pad))
        frame = pd.DataFrame({"start": edges[:-1], "end": edges[1:], "draws": counts})
        scale = alt.Scale(domain=[lo - pad, hi + pad], zero=False, nice=False)
        axis = alt.Axis(labelFlush=True, labelBound=True)  # no tick label past the panel's ends
        bars = alt.Chart(frame[frame["draws"] > 0]).mark_bar(color=PUBLISHED_COLOR).encode(
            x=alt.X("start:Q", scale=scale, title=x_title, axis=axis), x2="end:Q",
            y=alt.Y("draws:Q", title="draws"),
            tooltip=[alt.Tooltip("start:Q", format=".4f"), alt.Tooltip("end:Q", format=".4f"), "draws:Q"])
        rule = alt.Chart(value).mark_rule(color="#d2691e", strokeWidth=2).encode(
            x=alt.X("value:Q", scale=scale, title=x_title, axis=axis),  # the bars' axis
            tooltip=[alt.Tooltip("model:N"), alt.Tooltip("value:Q", title="this run", format=".4f")])
        panels.append(alt.layer(bars, rule).properties(title=model, width=520, height=100))
    return alt.vconcat(*panels).properties(title=title)


def distance_lines_by_model(frame: pd.DataFrame, title: str = "") -> alt.FacetChart:
    """:func:`distance_lines` of several models (``frames.distances_by_model``), one row per model."""
    return distance_lines(frame).properties(title="", width=520, height=130).facet(
        row=alt.Row("model:N", title=None)).properties(title=title)


def sensitivity_by_model(by_model: Mapping[str, Mapping], titles: Mapping[str, str],
                         title: str = "") -> alt.VConcatChart:
    """:func:`sensitivity_chart` of every model (model id → metrics), one row of panels per model."""
    return alt.vconcat(*[sensitivity_chart(sensitivity_frame(m), titles, title=model.rsplit("/", 1)[-1])
                         for model, m in by_model.items()]).properties(title=title)


def unique_focus_heatmaps(by_model: Mapping[str, Mapping], title: str = "") -> alt.VConcatChart:
    """:func:`layer_heatmap` of the distinct-focus histogram (``frames.unique_focus_frame``) of every
    model, one panel per model: the share of texts with k distinct focus positions in each block
    (the paper's Fig. 11)."""
    return alt.vconcat(*[layer_heatmap(unique_focus_frame(m), "distinct", "share",
                                       "distinct focus positions among the heads",
                                       value_title="texts", title=model.rsplit("/", 1)[-1])
                         for model, m in by_model.items()]).properties(title=title)
