"""Altair charts for the book, rendered offline.

Altair's default HTML loads Vega from a CDN, which fails offline. The book instead ships one
JavaScript bundle (``vl_convert.javascript_bundle()``, wrapped in an IIFE so its top-level names
do not clash with Sphinx's global ``_``) in ``_static/``, and the ``book`` renderer emits HTML
that calls ``vegaEmbed`` from that bundle. Div ids come from the spec's hash, so an unchanged
chart gets the same id on every rerun.

Chart helpers take tidy DataFrames and return an ``alt.Chart``; per-layer charts put depth on
the x-axis as relative depth r = l / L whenever a published curve is overlaid.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

BUNDLE_NAME = "vega-bundle.js"
RENDERER = "book"
THEME = "book"
PUBLISHED_COLOR = "#9a9a9a"
_ids: Counter[str] = Counter()


# --------------------------------------------------------------------------- theme and renderer

def _theme() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "view": {"continuousWidth": 560, "continuousHeight": 300, "stroke": None},
            "font": "system-ui, -apple-system, Segoe UI, sans-serif",
            "axis": {"labelFontSize": 12, "titleFontSize": 13, "grid": True, "gridOpacity": 0.4},
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom", "labelLimit": 480},
            "title": {"fontSize": 15, "anchor": "start"},
            "range": {"category": ["#1f5fa8", "#d2691e", "#2e8b57", "#8b3a8b", "#b8860b", "#4682b4"]},
            "line": {"strokeWidth": 2.5},
        }
    }


def chart_html(spec: Mapping) -> str:
    """HTML for one chart: a div and a script calling the bundle's ``vegaEmbed``."""
    text = json.dumps(spec, sort_keys=True)
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    _ids[digest] += 1
    div = f"eg-chart-{digest}" + (f"-{_ids[digest]}" if _ids[digest] > 1 else "")
    return f"""<div id="{div}" class="eg-chart"></div>
<script type="text/javascript">
(function () {{
  var spec = {text};
  function show() {{
    window.vegaEmbed("#{div}", spec, {{actions: false, renderer: "svg"}})
      .catch(function (error) {{ document.getElementById("{div}").textContent = "Chart error: " + error; }});
  }}
  if (window.vegaEmbed) {{ show(); }}
  else {{ window.addEventListener("load", function () {{
    if (window.vegaEmbed) {{ show(); }}
    else {{ document.getElementById("{div}").textContent = "This chart needs the book's {BUNDLE_NAME}."; }}
  }}); }}
}})();
</script>"""


def _render(spec: Mapping, **_: object) -> dict[str, str]:
    return {"text/html": chart_html(spec)}


def use_theme() -> None:
    """Enable the book's chart theme, its offline renderer and its table display options
    (call once at the top of a notebook)."""
    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, _render)
    if THEME not in alt.theme.names():
        alt.theme.register(THEME, enable=False)(_theme)
    alt.renderers.enable(RENDERER)
    alt.theme.enable(THEME)
    alt.data_transformers.enable("default", max_rows=20_000)
    pd.set_option("display.max_colwidth", 120)
    pd.set_option("display.precision", 4)


def write_bundle(static_dir: str | Path) -> Path:
    """Write the Vega/Vega-Lite/vega-embed bundle into ``static_dir``, wrapped in an IIFE,
    unless an up-to-date copy is already there."""
    import vl_convert

    header = f"/* vl-convert {vl_convert.__version__}: vega-embed bundle for offline charts */\n"
    path = Path(static_dir) / BUNDLE_NAME
    if path.is_file() and path.read_text().startswith(header):
        return path
    body = vl_convert.javascript_bundle("window.vegaEmbed = vegaEmbed;")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "(function () {\n" + body + "\n})();\n")
    return path


# --------------------------------------------------------------------------- tidy frames

def per_layer_frame(series: Mapping[str, Sequence[float]], model: str) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model) from per-depth arrays of L + 1."""
    frames = []
    for name, values in series.items():
        values = np.asarray(values, dtype=float)
        depth = np.arange(len(values))
        frames.append(pd.DataFrame({"depth": depth, "relative_depth": depth / (len(values) - 1),
                                    "value": values, "series": name, "model": model}))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- charts

def depth_slider(n_layers: int, name: str = "depth", value: int | None = None) -> alt.Parameter:
    """A range input 0..L that selects one depth."""
    return alt.param(name=name, value=n_layers if value is None else value,
                     bind=alt.binding_range(min=0, max=n_layers, step=1, name=f"{name} "))


def layer_chart(run: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None,
                title: str = "", y_zero: bool = True) -> alt.LayerChart | alt.Chart:
    """This run's per-depth curves (from ``per_layer_frame``), with published curves drawn as
    thin grey lines underneath on relative depth; the x-axis is relative depth r = l / L.
    ``y_zero=False`` lets the y-axis start near the data instead of at 0."""
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    ours = alt.Chart(run).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)),
        color=alt.Color("series:N", title=None, sort=None), tooltip=tooltip)
    if published is None or published.empty:
        return ours.properties(title=title)
    labelled = published.assign(label=published["series"] + " — published (" + published["model"] + ")")
    theirs = alt.Chart(labelled).mark_line(strokeWidth=1.2, color=PUBLISHED_COLOR).encode(
        x=x, y="value:Q", detail="label:N", strokeDash=alt.StrokeDash("label:N", title=None), tooltip=tooltip)
    return alt.layer(theirs, ours).resolve_scale(strokeDash="independent").properties(title=title)


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
        color=alt.Color(f"{value}:Q", title=value_title or value, scale=alt.Scale(domain=[low, high], scheme="viridis")),
        tooltip=["sentence:N", "position:Q", "token:N", "kind:N", "depth:Q", alt.Tooltip(f"{value}:Q", format=".3f")])
    labels = base.mark_text(fontSize=9, color="white").encode(text="token:N")
    return alt.layer(cells, labels).add_params(slider).properties(title=title, width=alt.Step(44))


# --------------------------------------------------------------------------- chapters 1 and 2: frames

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


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Token labels made unique by a subscript on repeats: the, stock, …, the₂ (the posts' style)."""
    seen: Counter[str] = Counter()
    labels = []
    for token in tokens:
        seen[token] += 1
        labels.append(token if seen[token] == 1 else token + str(seen[token]).translate(_SUBSCRIPTS))
    return labels


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


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


# --------------------------------------------------------------------------- chapters 1 and 2: charts

def token_animation(frame: pd.DataFrame, n_layers: int, title: str = "", targets: bool = False,
                    axis_titles: tuple[str, str] = ("PC1", "PC2")) -> alt.LayerChart:
    """Tokens and centroids (from ``token_positions_frame``) at the depth a slider selects, on
    axes fixed over all depths; hover shows the token. With ``targets``, every token's
    final-depth position is drawn faintly underneath at every depth."""
    slider = depth_slider(n_layers, value=0)
    x = alt.X("x:Q", title=axis_titles[0], scale=alt.Scale(domain=_padded(frame["x"]), nice=False))
    y = alt.Y("y:Q", title=axis_titles[1], scale=alt.Scale(domain=_padded(frame["y"]), nice=False))
    encoding = dict(x=x, y=y, shape=alt.Shape("shape:N", scale=None),
                    size=alt.Size("kind:N", scale=alt.Scale(domain=["token", "centroid"], range=[70, 260]), legend=None))
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


def depth_bars(run: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None,
               title: str = "") -> alt.LayerChart | alt.Chart:
    """This run's per-depth values as bars on relative depth, a published series (same y) as a
    grey line with points over them, labelled with its model."""
    n = max(int(run["depth"].max()), 1)
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4g")]
    ours = alt.Chart(run).mark_bar(size=max(3, int(360 / n))).encode(
        x=x, y=alt.Y("value:Q", title=y_title), color=alt.Color("series:N", title=None), tooltip=tooltip)
    if published is None or published.empty:
        return ours.properties(title=title)
    labelled = published.assign(label=published["series"] + " — published (" + published["model"] + ")")
    theirs = alt.Chart(labelled).mark_line(point=True, strokeWidth=1.2, color=PUBLISHED_COLOR).encode(
        x=x, y="value:Q", detail="label:N", shape=alt.Shape("label:N", title=None), tooltip=tooltip)
    return alt.layer(ours, theirs).resolve_scale(shape="independent").properties(title=title)


def histogram_chart(run: pd.DataFrame, x_title: str, published: pd.DataFrame | None = None,
                    title: str = "") -> alt.LayerChart | alt.Chart:
    """Histograms from ``binned_frame`` as fractions: this run as bars, a published one as a grey
    line through its bin centres, labelled with its model."""
    ours = alt.Chart(run).mark_bar(opacity=0.85).encode(
        x=alt.X("bin_start:Q", title=x_title, bin="binned"), x2="bin_end:Q",
        y=alt.Y("fraction:Q", title="fraction of dimensions"), color=alt.Color("series:N", title=None),
        tooltip=["series:N", "model:N", alt.Tooltip("centre:Q", format=".3f"), "count:Q", alt.Tooltip("fraction:Q", format=".3f")])
    if published is None or published.empty:
        return ours.properties(title=title)
    labelled = published.assign(label=published["series"] + " — published (" + published["model"] + ")")
    theirs = alt.Chart(labelled).mark_line(point=True, strokeWidth=1.2, color=PUBLISHED_COLOR).encode(
        x="centre:Q", y="fraction:Q", shape=alt.Shape("label:N", title=None),
        tooltip=["label:N", alt.Tooltip("centre:Q", format=".3f"), "count:Q", alt.Tooltip("fraction:Q", format=".3f")])
    return alt.layer(ours, theirs).resolve_scale(shape="independent").properties(title=title)


def value_bars(frame: pd.DataFrame, value: str, label: str, x_title: str, title: str = "",
               band: tuple[float, float, str] | None = None) -> alt.LayerChart | alt.Chart:
    """One horizontal bar per row (``label`` on y, ``value`` on x), in the frame's order; an
    optional grey ``band`` (low, high, caption) marks a published range."""
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X(f"{value}:Q", title=x_title), y=alt.Y(f"{label}:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
        tooltip=[f"{label}:N", alt.Tooltip(f"{value}:Q", format=".4f")])
    if band is None:
        return bars.properties(title=title, width=300)
    low, high, caption = band
    shade = alt.Chart(pd.DataFrame({"low": [low], "high": [high], "caption": [caption]})).mark_rect(
        color=PUBLISHED_COLOR, opacity=0.6).encode(x="low:Q", x2="high:Q", tooltip=["caption:N"])
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
        x=alt.X(f"{x}:N", title=None, sort=None, axis=alt.Axis(labelAngle=-40)), xOffset=alt.XOffset(f"{group}:N", sort=None),
        y=alt.Y(f"{y}:Q", title=y_title), color=alt.Color(f"{group}:N", title=group, sort=None),
        tooltip=[f"{x}:N", f"{group}:N", alt.Tooltip(f"{y}:Q", format=".3f")]).properties(title=title, width=560)


# --------------------------------------------------------------------------- chapter 3

def matrix_frame(matrix: Mapping[str, Mapping[str, float | None]], missing: str = "not comparable",
                 digits: int = 3, short_names: bool = False) -> pd.DataFrame:
    """A nested mapping ``matrix[row][column]`` as a long frame (row, column, value, label) in
    the mapping's order; a None cell has no value and the label ``missing``. With
    ``short_names``, model ids are shortened to their last path component."""
    def name(key: str) -> str:
        return str(key).rsplit("/", 1)[-1] if short_names else str(key)

    rows = [{"row": name(r), "column": name(c), "value": None if v is None else round(float(v), 4),
             "label": missing if v is None else f"{v:.{digits}f}"}
            for r, cells in matrix.items() for c, v in cells.items()]
    return pd.DataFrame(rows, columns=["row", "column", "value", "label"])


def matrix_heatmap(frame: pd.DataFrame, title: str = "", value_title: str = "value",
                   domain: tuple[float, float] = (0.0, 1.0), diverging: bool = False) -> alt.LayerChart:
    """A square heatmap of ``matrix_frame`` rows, each cell labelled (rows and columns in the
    frame's order). Colours span ``domain`` (values outside are clamped); ``diverging`` uses a
    blue–white–red scale centred on 0 for signed values. Cells without a value are grey."""
    order = list(dict.fromkeys(frame["row"]))
    big = len(order) > 6
    axis = alt.Axis(labelLimit=360)
    base = alt.Chart(frame).encode(x=alt.X("column:N", title=None, sort=order, axis=alt.Axis(labelLimit=360, labelAngle=-40)),
                                   y=alt.Y("row:N", title=None, sort=order, axis=axis))
    scale = alt.Scale(scheme="redblue", reverse=True, domain=list(domain), domainMid=0, clamp=True) if diverging \
        else alt.Scale(scheme="viridis", domain=list(domain), clamp=True)
    cells = base.mark_rect().encode(
        color=alt.condition("isValid(datum.value)", alt.Color("value:Q", title=value_title, scale=scale),
                            alt.value("#dddddd")),
        tooltip=["row:N", "column:N", "label:N"])
    span = max(abs(domain[0]), abs(domain[1]))
    dark = (f"isValid(datum.value) && abs(datum.value) > {0.6 * span}" if diverging
            else f"isValid(datum.value) && datum.value < {domain[0] + 0.5 * (domain[1] - domain[0])}")
    text = base.mark_text(fontSize=9 if big else 12).encode(
        text="label:N", color=alt.condition(dark, alt.value("white"), alt.value("black")))
    return alt.layer(cells, text).properties(
        title=title, width=alt.Step(38 if big else 120), height=alt.Step(24 if big else 40))


def category_strip(frame: pd.DataFrame, value: str, category: str, x_title: str, title: str = "",
                   tooltip: Sequence[str] = ()) -> alt.Chart:
    """One tick per row: ``value`` on x, one line per ``category`` (ordered by median value), to
    show whether a direction separates the categories."""
    return alt.Chart(frame).mark_tick(thickness=2, opacity=0.6).encode(
        x=alt.X(f"{value}:Q", title=x_title),
        y=alt.Y(f"{category}:N", title=None, sort=alt.EncodingSortField(field=value, op="median", order="descending")),
        color=alt.Color(f"{category}:N", legend=None),
        tooltip=[f"{category}:N", *tooltip, alt.Tooltip(f"{value}:Q", format=".3f")],
    ).properties(title=title, width=520)


# --------------------------------------------------------------------------- chapter 4

def block_lines(frame: pd.DataFrame, y_title: str, title: str = "", chance: float | None = None,
                color: str = "series") -> alt.LayerChart | alt.Chart:
    """Per-block series (``layer`` 1..L on x, ``value`` on y, one line per ``color``); an optional
    grey dashed rule marks the chance level."""
    x = alt.X("layer:Q", title="layer l (block)", scale=alt.Scale(domain=[1, int(frame["layer"].max())]),
              axis=alt.Axis(tickMinStep=1, format="d"))
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title), color=alt.Color(f"{color}:N", title=None),
        tooltip=[f"{color}:N", "layer:Q", alt.Tooltip("value:Q", format=".3f")])
    if chance is None:
        return lines.properties(title=title)
    level = pd.DataFrame({"value": [chance], "label": [f"chance {chance:.3g}"]})
    rule = alt.Chart(level).mark_rule(color=PUBLISHED_COLOR, strokeDash=[5, 4]).encode(y="value:Q", tooltip=["label:N"])
    return alt.layer(rule, lines).properties(title=title)


def layer_shares(frame: pd.DataFrame, color: str, title: str = "", y_title: str = "share") -> alt.Chart:
    """Stacked bars of ``share`` per ``layer``, one segment per ``color`` category (frame order)."""
    order = list(dict.fromkeys(frame[color]))
    return alt.Chart(frame).transform_calculate(rank=f"indexof({json.dumps(order)}, datum['{color}'])").mark_bar().encode(
        x=alt.X("layer:O", title="layer l (block)"), y=alt.Y("share:Q", title=y_title, stack="zero"),
        color=alt.Color(f"{color}:N", title=None, sort=order), order=alt.Order("rank:Q"),
        tooltip=["layer:O", f"{color}:N", alt.Tooltip("share:Q", format=".3f")],
    ).properties(title=title, width=alt.Step(40))


def head_grid(frame: pd.DataFrame, title: str = "") -> alt.Chart:
    """One cell per (layer, head), coloured by its class, its numbers on hover (``frame`` is
    ``attention.head_table``)."""
    classes = alt.Scale(domain=["repetition", "common-token", "other"], range=["#1f5fa8", "#d2691e", "#d9d9d9"])
    shares = ["repeat_share", "common_focus_share", "same_sentence_fraction"]
    return alt.Chart(frame).mark_rect(stroke="white").encode(
        x=alt.X("head:O", title="head h"), y=alt.Y("layer:O", title="layer l (block)"),
        color=alt.Color("class:N", title=None, scale=classes),
        tooltip=["layer:O", "head:O", "class:N", *[alt.Tooltip(f"{s}:Q", format=".2f") for s in shares],
                 alt.Tooltip("mean_pair_distance:Q", format=".1f"), "top_focus:N"],
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
        tooltip=["layer:N", "distance:Q", alt.Tooltip("share:Q", format=".4f")],
    ).properties(title=title)


def layer_heatmap(frame: pd.DataFrame, x: str, value: str, x_title: str, title: str = "",
                  value_title: str | None = None) -> alt.LayerChart:
    """A layer × ``x`` heatmap of ``value``, each cell labelled."""
    base = alt.Chart(frame).encode(x=alt.X(f"{x}:O", title=x_title), y=alt.Y("layer:O", title="layer l (block)"))
    cells = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", title=value_title or value, scale=alt.Scale(scheme="blues")),
        tooltip=["layer:O", f"{x}:O", alt.Tooltip(f"{value}:Q", format=".3f")])
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

    ``frames`` is ``attention.example_frames``: each matrix travels as a string of one
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
                 y2="i2:Q", tooltip=["i:Q", "j:Q", alt.Tooltip("value:Q", format=".2f")],
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
                    y=alt.Y("a:Q", title="attention received a_j"),
                    color=alt.Color("separator:N", title="separator", scale=separator),
                    tooltip=["position:Q", "token:N", "separator:N", alt.Tooltip("a:Q", format=".2f")]))
    tau = alt.Chart(pd.DataFrame({"a": [threshold]})).mark_rule(color=PUBLISHED_COLOR, strokeDash=[5, 4]).encode(y="a:Q")
    return alt.vconcat(matrix, alt.layer(received, tau).properties(width=430, height=110)).add_params(layer, head)


# --------------------------------------------------------------------------- chapter 5

def line_chart(frame: pd.DataFrame, x: str, y: str, color: str, x_title: str, y_title: str, title: str = "",
               dash: str | None = None, greyed: Sequence[str] = ()) -> alt.Chart:
    """Lines of ``y`` against ``x``, one per ``color`` value (frame order), optionally dashed by
    ``dash``; series named in ``greyed`` (published or assumed curves) are drawn thin and grey."""
    order = list(dict.fromkeys(frame[color]))
    palette = _theme()["config"]["range"]["category"]
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
