"""Charts over depth and over tokens: per-layer lines with published overlays, bars, histograms,
heatmaps and the depth-slider animations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from .theme import CATEGORY_COLORS, PUBLISHED_COLOR, published_encoding, published_label, short_name


def depth_slider(n_layers: int, name: str = "depth", value: int | None = None) -> alt.Parameter:
    """A range input 0..L that selects one depth."""
    return alt.param(name=name, value=n_layers if value is None else value,
                     bind=alt.binding_range(min=0, max=n_layers, step=1, name=f"{name} "))


def layer_chart(run: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None,
                title: str = "", y_zero: bool = True,
                lines: Mapping[str, Any] | None = None) -> alt.LayerChart | alt.Chart:
    """This run's per-depth curves (from ``per_layer_frame``), solid in the theme's colours, over
    published curves drawn thin underneath on relative depth, each its own grey and dash, one
    legend naming all; ``lines``: the colour and dash encodings on ``label`` to use instead
    (``published_encoding``, shared by the panels of one chart). The x-axis is relative depth
    r = l / L. ``y_zero=False`` lets the y-axis start near the data instead of at 0."""
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    run = run.assign(label=[short_name(s) for s in run["series"]])
    theirs = pd.DataFrame() if published is None else published.assign(
        label=[published_label(s, m) for s, m in zip(published["series"], published["model"])])
    lines = lines or published_encoding(theirs.get("label", ()), ours=run["label"])
    ours = alt.Chart(run).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)), tooltip=tooltip, **lines)
    if theirs.empty:
        return ours.properties(title=title)
    return alt.layer(alt.Chart(theirs).mark_line(strokeWidth=1.5).encode(x=x, y="value:Q", tooltip=tooltip, **lines),
                     ours).properties(title=title)


def token_heatmap(frame: pd.DataFrame, value: str, n_layers: int, title: str = "",
                  value_title: str | None = None) -> alt.Chart:
    """Tokens (x: position, y: text) coloured by ``value`` at the depth a slider selects.
    ``frame`` is ``activations.token_frame(record, values, value)`` plus a ``sentence`` label.
    The colour scale is fixed over all depths so that colours compare across the slider."""
    slider = depth_slider(n_layers)
    low, high = float(frame[value].min()), float(frame[value].max())
    base = alt.Chart(frame).transform_filter(alt.datum.depth == slider).encode(
        x=alt.X("position:O", title="token position"), y=alt.Y("sentence:N", title=None, sort=None))
    cells = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", title=value_title or value,
                        scale=alt.Scale(domain=[low, high], scheme="viridis")),
        tooltip=["sentence:N", "position:Q", "token:N", "kind:N", "depth:Q", alt.Tooltip(f"{value}:Q", format=".3f")])
    labels = base.mark_text(fontSize=9, color="white").encode(text="token:N")
    return alt.layer(cells, labels).add_params(slider).properties(title=title, width=alt.Step(44))


def token_animation(frame: pd.DataFrame, n_layers: int, title: str = "", targets: bool = False,
                    axis_titles: tuple[str, str] = ("PC1", "PC2")) -> alt.LayerChart:
    """Tokens and centroids (from ``token_positions_frame``) at the depth a slider selects, on
    axes fixed over all depths; hover or tap shows the token. With ``targets``, every token's
    final-depth position is drawn faintly underneath at every depth."""
    slider = depth_slider(n_layers, value=0)
    x = alt.X("x:Q", title=axis_titles[0], scale=alt.Scale(domain=_padded(frame["x"]), nice=False))
    y = alt.Y("y:Q", title=axis_titles[1], scale=alt.Scale(domain=_padded(frame["y"]), nice=False))
    encoding = dict(x=x, y=y, shape=alt.Shape("shape:N", scale=None),
                    size=alt.Size("kind:O", scale=alt.Scale(domain=["token", "centroid"], range=[70, 260]),
                                  legend=None))
    tooltip = ["token:N", "sentence:N", "depth:Q", alt.Tooltip("x:Q", format=".2f"), alt.Tooltip("y:Q", format=".2f")]
    now = alt.Chart(frame).transform_filter(alt.datum.depth == slider)
    hollow = alt.datum.shape == "square"  # squares open, as in the posts, so coinciding circles stay visible
    layers = [
        now.transform_filter(~hollow).mark_point(filled=True, opacity=0.85).encode(
            **encoding, color=alt.Color("group:N", title=None), tooltip=tooltip),
        now.transform_filter(hollow).mark_point(filled=False, strokeWidth=2).encode(
            **encoding, color=alt.Color("group:N", title=None), tooltip=tooltip),
    ]
    if targets:  # drawn last so that the legend keeps the bright markers' look
        final = (alt.datum.depth == n_layers) & (alt.datum.kind == "token")
        layers.append(alt.Chart(frame).transform_filter(final).mark_point(filled=True, opacity=0.15).encode(
            **encoding, color=alt.Color("group:N", title=None),
            tooltip=["token:N", "sentence:N", alt.Tooltip("depth:Q", title="target depth")]))
    return alt.layer(*layers).add_params(slider).properties(title=title, width=520, height=420)


def _padded(values: pd.Series, margin: float = 0.05) -> list[float]:
    """[min, max] of ``values`` widened by ``margin`` of their range on each side."""
    span = float(values.max() - values.min()) or 1.0
    return [float(values.min()) - margin * span, float(values.max()) + margin * span]


def value_bars(frame: pd.DataFrame, value: str, label: str, x_title: str, title: str = "",
               band: tuple[float, float, str] | None = None) -> alt.LayerChart | alt.Chart:
    """One horizontal bar per row (``label`` on y, ``value`` on x), in the frame's order; an
    optional grey ``band`` (low, high, caption) marks a published range."""
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{value}:Q", title=x_title),
        y=alt.Y(f"{label}:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
        tooltip=[f"{label}:N", alt.Tooltip(f"{value}:Q", format=".4f")])
    if band is None:
        return bars.properties(title=title, width=300)
    low, high, caption = band
    shade = alt.Chart(pd.DataFrame({"low": [low], "high": [high], "caption": [caption]})).mark_rect(opacity=0.6).encode(
        x="low:Q", x2="high:Q", tooltip=["caption:N"],
        color=alt.Color("caption:N", title=None, scale=alt.Scale(range=[PUBLISHED_COLOR]),
                        legend=alt.Legend(symbolType="square", orient="bottom")))
    return alt.layer(bars, shade).properties(title=title, width=300)


def depth_heatmap(frame: pd.DataFrame, value: str, title: str = "", value_title: str | None = None) -> alt.LayerChart:
    """A (row × depth) heatmap: ``frame`` has columns ``row`` (in display order), ``depth`` and
    ``value``; each cell is labelled with its value."""
    base = alt.Chart(frame).encode(x=alt.X("depth:O", title="depth l"), y=alt.Y("row:N", title=None, sort=None))
    cells = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", title=value_title or value, scale=alt.Scale(scheme="viridis")),
        tooltip=["row:N", "depth:Q", alt.Tooltip(f"{value}:Q", format=".3f")])
    middle = (float(frame[value].min()) + float(frame[value].max())) / 2  # dark text on the light half of viridis
    text = base.mark_text(fontSize=9).encode(
        text=alt.Text(f"{value}:Q", format=".2f"),
        color=alt.condition(f"datum['{value}'] > {middle}", alt.value("black"), alt.value("white")))
    step = max(18, min(34, 640 // frame["depth"].nunique()))
    return alt.layer(cells, text).properties(title=title, width=alt.Step(step), height=alt.Step(22))


def grouped_bars(frame: pd.DataFrame, x: str, y: str, group: str, y_title: str, title: str = "") -> alt.Chart:
    """Bars of ``y`` per ``x`` category (in the frame's order), side by side per ``group``."""
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{x}:N", title=None, sort=None, axis=alt.Axis(labelAngle=-40)),
        xOffset=alt.XOffset(f"{group}:N", sort=None),
        y=alt.Y(f"{y}:Q", title=y_title), color=alt.Color(f"{group}:N", title=group, sort=None),
        tooltip=[f"{x}:N", f"{group}:N", alt.Tooltip(f"{y}:Q", format=".3f")]).properties(title=title, width=560)


def line_chart(frame: pd.DataFrame, x: str, y: str, color: str, x_title: str, y_title: str, title: str = "",
               dash: str | None = None, greyed: Sequence[str] = ()) -> alt.Chart:
    """Lines of ``y`` against ``x``, one per ``color`` value (frame order), optionally dashed by
    ``dash``; series named in ``greyed`` (published or assumed curves) are drawn thin and grey."""
    order = list(dict.fromkeys(frame[color]))
    palette = CATEGORY_COLORS
    colours, k = [], 0
    for name in order:
        if name in greyed:
            colours.append(PUBLISHED_COLOR)
        else:
            colours.append(palette[k % len(palette)])
            k += 1
    encoding = dict(
        x=alt.X(f"{x}:Q", title=x_title), y=alt.Y(f"{y}:Q", title=y_title),
        color=alt.Color(f"{color}:N", title=None, sort=order, scale=alt.Scale(domain=order, range=colours)),
        tooltip=[f"{color}:N", alt.Tooltip(f"{x}:Q"), alt.Tooltip(f"{y}:Q", format=".4f")])
    if dash is not None:
        encoding["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
        encoding["tooltip"].insert(1, f"{dash}:N")
    return alt.Chart(frame).mark_line(point=len(frame) <= 200).encode(**encoding).properties(title=title)


def scatter_chart(frame: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, title: str = "",
                  color: str | None = None, tooltip: Sequence[str] = ()) -> alt.Chart:
    """One point per row: ``y`` against ``x``, optionally coloured by ``color``."""
    encoding = dict(x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False)),
                    y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(zero=False)),
                    tooltip=[*tooltip, alt.Tooltip(f"{x}:Q", format=".3g"), alt.Tooltip(f"{y}:Q", format=".3g")])
    if color is not None:
        encoding["color"] = alt.Color(f"{color}:N", title=None)
    return alt.Chart(frame).mark_circle(size=28, opacity=0.55).encode(**encoding).properties(title=title)
