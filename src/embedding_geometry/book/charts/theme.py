"""The book's chart theme and offline renderer.

Altair's default HTML loads Vega from a CDN, which fails offline. The book instead ships one
JavaScript bundle (``vl_convert.javascript_bundle()``, wrapped in an IIFE so its top-level names
do not clash with Sphinx's global ``_``) in ``_static/``, and the ``book`` renderer emits HTML
that hands the spec to ``_static/charts.js``: it lays the chart out for the width of its column
(never drawn wide and scaled down), keeps every text at ``MIN_FONT`` px or more, and offers the
chart's data for download. Div ids come from the spec's hash, so an unchanged chart gets the
same id on every rerun.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import altair as alt
import pandas as pd

from .. import tables
from ...core import models



BUNDLE_NAME = "vega-bundle.js"


RENDERER = "book"


THEME = "book"


PUBLISHED_COLOR = "#9a9a9a"
"""The grey of a published reference that stands alone (a rule, a band, a single curve)."""


PUBLISHED_GREYS = ["#4a4a4a", "#8c8c8c", "#262626", "#b0b0b0", "#6e6e6e"]
PUBLISHED_DASHES = [[6, 3], [2, 2], [10, 3, 2, 3], [14, 4], [10, 2, 2, 2, 2, 2]]
"""Published curves, in order: each its own grey and dash, so that up to five of them drawn
together (chapter 1's five most discriminative dimensions) can be told apart, and from this
run's solid lines."""


_ids: Counter[str] = Counter()


def short_name(name: str) -> str:
    """A legend's name for a series: a model id or path without its organisation or folders
    ("sentence-transformers/all-MiniLM-L6-v2" → "all-MiniLM-L6-v2"); other names as they are.
    Tooltips keep the full name."""
    name = str(name)
    return name.rstrip("/").rsplit("/", 1)[-1] if "/" in name and " " not in name.strip() else name


def short_model(model: str) -> str:
    """A model id without its organisation, and a control's "[random-init control, seed s]" as
    "· control s": "all-MiniLM-L6-v2 · control 0"."""
    if control := models.control_of(model):
        return f"{short_model(control[0])} · control {control[1]}"
    return model.rsplit("/", 1)[-1]


MODEL_DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]
"""Each model's dash pattern, in order (the main model solid), where a chart tells models apart by dash."""


def published_label(series: str, model: str) -> str:
    """A published curve's legend name: "within-sentence — published (mxbai-embed-large-v1)",
    the model left out where the series already names it."""
    short = short_name(model)
    return f"{short_name(series)} — published" + ("" if short in str(series) else f" ({short})")


MIN_FONT = 11
"""The smallest text a chart draws, in px (``_static/charts.js`` raises any smaller size to it)."""


CATEGORY_COLORS = ["#1f5fa8", "#d2691e", "#2e8b57", "#8b3a8b", "#b8860b", "#4682b4"]
"""The theme's colours for categories (models, series), in the order a chart assigns them; a chart
that colours its marks by hand takes them from here so that they match its neighbours."""


def published_encoding(published: Sequence[str], ours: Sequence[str] = (), colours: Sequence[str] | None = None,
                       field: str = "label", legend: alt.Legend | None = None) -> dict[str, alt.Color | alt.StrokeDash]:
    """Colour and dash encodings of a chart's lines keyed by ``field``: this run's series ``ours``
    solid in ``colours`` (the theme's :data:`CATEGORY_COLORS` by default), then each published
    curve (``published``, named by :func:`published_label`) its own grey and dash from
    :data:`PUBLISHED_GREYS` and :data:`PUBLISHED_DASHES`, all in one legend. Every layer (and
    panel) of a chart takes the same encodings, so that their scales merge."""
    ours, published = list(dict.fromkeys(ours)), list(dict.fromkeys(published))
    domain = ours + published
    colours = list(colours or CATEGORY_COLORS)
    shades = [colours[i % len(colours)] for i in range(len(ours))]
    shades += [PUBLISHED_GREYS[i % len(PUBLISHED_GREYS)] for i in range(len(published))]
    dashes = [[1, 0]] * len(ours) + [PUBLISHED_DASHES[i % len(PUBLISHED_DASHES)] for i in range(len(published))]
    legend = legend or alt.Legend(orient="bottom", direction="vertical", symbolType="stroke", symbolSize=300,
                                  symbolStrokeWidth=2)
    return {"color": alt.Color(f"{field}:N", title=None, sort=domain, legend=legend,
                               scale=alt.Scale(domain=domain, range=shades)),
            "strokeDash": alt.StrokeDash(f"{field}:N", title=None, sort=domain, legend=legend,
                                         scale=alt.Scale(domain=domain, range=dashes))}


def published_lines(published: pd.DataFrame, x: alt.X) -> alt.Chart:
    """The curves of a ``charts.published_frame`` thin on ``x``, each named by :func:`published_label`
    in its own grey and dash (:func:`published_encoding`). To draw it under this run's lines that
    colour and dash other fields, layer it first and resolve ``color`` and ``strokeDash``
    independently: two legends, the published one apart."""
    named = published.assign(label=[published_label(s, m) for s, m in zip(published["series"], published["model"])])
    return alt.Chart(named).mark_line(strokeWidth=1.5).encode(
        x=x, y="value:Q", tooltip=["label:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")],
        **published_encoding(named["label"]))


def _theme() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "view": {"continuousWidth": 560, "continuousHeight": 300, "stroke": None},
            "font": "system-ui, -apple-system, Segoe UI, sans-serif",
            "axis": {"labelFontSize": 12, "titleFontSize": 13, "grid": True, "gridOpacity": 0.4},
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom", "labelLimit": 480},
            "header": {"labelFontSize": 12, "titleFontSize": 13},
            "text": {"fontSize": 12},
            "title": {"fontSize": 15, "anchor": "start", "subtitleFontSize": 12},
            "range": {"category": CATEGORY_COLORS},
            "line": {"strokeWidth": 2.5},
        }
    }


def chart_html(spec: Mapping) -> str:
    """HTML for one chart: a div and a script handing the spec to ``window.egChart``
    (``_static/charts.js``), which lays it out for the column's width, draws it with the bundle's
    ``vegaEmbed`` and offers its data for download. The script waits for the page's scripts
    (the bundle may load deferred); outside the book (no bundle), the div says what is missing."""
    text = json.dumps(_compact(spec), sort_keys=True)
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    _ids[digest] += 1
    div = f"eg-chart-{digest}" + (f"-{_ids[digest]}" if _ids[digest] > 1 else "")
    return f"""<div id="{div}" class="eg-chart"></div>
<script type="text/javascript">
(function () {{
  var spec = {text};
  function show() {{
    if (window.egChart && window.vegaEmbed) {{ window.egChart("{div}", spec); }}
    else {{ document.getElementById("{div}").textContent =
      "This chart needs the book's {BUNDLE_NAME} and charts.js."; }}
  }}
  if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", show); }} else {{ show(); }}
}})();
</script>"""


SIGNIFICANT = 6
"""Significant digits a chart's data keeps (the results JSON keeps every digit)."""


def _compact(spec: Mapping) -> dict:
    """``spec`` with the numbers of its data rounded to :data:`SIGNIFICANT` digits: the page
    carries less, and what a reader can see or download of a chart changes in the 7th digit."""
    def rounded(value):
        if isinstance(value, float):
            return float(f"{value:.{SIGNIFICANT}g}")
        if isinstance(value, list):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return value

    spec = dict(spec)
    if "datasets" in spec:
        spec["datasets"] = rounded(spec["datasets"])
    return spec


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
    tables.register()


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
