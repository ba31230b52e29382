"""The book's chart theme and offline renderer.

Altair's default HTML loads Vega from a CDN, which fails offline. The book instead ships one
JavaScript bundle (``vl_convert.javascript_bundle()``, wrapped in an IIFE so its top-level names
do not clash with Sphinx's global ``_``) in ``_static/``, and the ``book`` renderer emits HTML
that calls ``vegaEmbed`` from that bundle. Div ids come from the spec's hash, so an unchanged
chart gets the same id on every rerun.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import altair as alt
import pandas as pd



BUNDLE_NAME = "vega-bundle.js"


RENDERER = "book"


THEME = "book"


PUBLISHED_COLOR = "#9a9a9a"


_ids: Counter[str] = Counter()


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
    """HTML for one chart: a div and a script calling the bundle's ``vegaEmbed`` on the spec as
    fitted to the column's width (``_static/charts.js``: ``egFit`` before, ``egShrink`` after)."""
    text = json.dumps(spec, sort_keys=True)
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    _ids[digest] += 1
    div = f"eg-chart-{digest}" + (f"-{_ids[digest]}" if _ids[digest] > 1 else "")
    return f"""<div id="{div}" class="eg-chart"></div>
<script type="text/javascript">
(function () {{
  var spec = {text};
  function show() {{
    var element = document.getElementById("{div}");
    var fitted = window.egFit ? window.egFit(spec, element.clientWidth) : spec;
    window.vegaEmbed(element, fitted, {{actions: false, renderer: "svg"}})
      .then(function () {{ if (window.egShrink) window.egShrink(element); }})
      .catch(function (error) {{ element.textContent = "Chart error: " + error; }});
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
