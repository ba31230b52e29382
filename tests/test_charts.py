"""Charts: the offline renderer, the bundle, and the per-layer overlay helper."""

import json
import re

import altair as alt
import numpy as np
import pandas as pd

from embedding_geometry import charts

CDN = re.compile(r"cdn\.jsdelivr|unpkg\.com|cdnjs", re.I)


def test_rendered_html_calls_the_bundle_and_has_no_cdn():
    charts.use_theme()
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    bundle = chart._repr_mimebundle_()
    html = (bundle[0] if isinstance(bundle, tuple) else bundle)["text/html"]
    assert "window.vegaEmbed(" in html
    assert not CDN.search(html)
    assert "<script src" not in html


def test_div_ids_are_stable_for_the_same_spec():
    spec = {"mark": "point", "data": {"values": [{"a": 1}]}}
    first = re.search(r'id="(eg-chart-[0-9a-f]+)', charts.chart_html(spec)).group(1)
    second = re.search(r'id="(eg-chart-[0-9a-f-]+)', charts.chart_html(spec)).group(1)
    assert first.startswith("eg-chart-") and second == first + "-2"  # same spec twice on a page
    other = re.search(r'id="(eg-chart-[0-9a-f]+)', charts.chart_html({"mark": "bar"})).group(1)
    assert other != first


def test_bundle_is_wrapped_and_written_once(tmp_path):
    path = charts.write_bundle(tmp_path)
    text = path.read_text()
    assert text.splitlines()[1] == "(function () {" and text.rstrip().endswith("})();")
    assert "window.vegaEmbed=" in text.replace(" ", "")
    stamp = path.stat().st_mtime_ns
    charts.write_bundle(tmp_path)
    assert path.stat().st_mtime_ns == stamp


def test_per_layer_frame_and_overlay():
    run = charts.per_layer_frame({"within": np.linspace(0, 1, 4)}, "ours")
    assert run["relative_depth"].tolist() == [0, 1 / 3, 2 / 3, 1]
    assert set(run.columns) == {"depth", "relative_depth", "value", "series", "model"}
    published = charts.per_layer_frame({"within": np.linspace(0, 1, 25)}, "theirs")
    spec = charts.layer_chart(run, "cosine", published).to_dict()
    assert len(spec["layer"]) == 2
    grey = spec["layer"][0]
    assert grey["mark"]["color"] == charts.PUBLISHED_COLOR  # published curve underneath
    assert spec["layer"][1]["encoding"]["x"]["field"] == "relative_depth"
    assert "layer" not in charts.layer_chart(run, "cosine").to_dict()


def test_token_heatmap_has_a_depth_slider():
    frame = pd.DataFrame({"sentence": ["a"] * 4, "position": [0, 1, 0, 1], "token": ["x", "y", "x", "y"],
                          "kind": ["word"] * 4, "depth": [0, 0, 1, 1], "norm": [1.0, 2.0, 3.0, 4.0]})
    spec = charts.token_heatmap(frame, "norm", 1).to_dict()
    (param,) = spec["params"]
    assert param["bind"] == {"input": "range", "min": 0, "max": 1, "step": 1, "name": "depth "}
    assert json.dumps(spec).count('"depth"') >= 1
