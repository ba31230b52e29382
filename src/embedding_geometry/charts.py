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
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom"},
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
                title: str = "") -> alt.LayerChart | alt.Chart:
    """This run's per-depth curves (from ``per_layer_frame``), with published curves drawn as
    thin grey lines underneath on relative depth; the x-axis is relative depth r = l / L."""
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    ours = alt.Chart(run).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title), color=alt.Color("series:N", title=None), tooltip=tooltip)
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
