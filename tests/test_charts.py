"""Charts: the offline renderer, the bundle, and the per-layer overlay helper."""

import ast
import json
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from embedding_geometry.book import charts
from embedding_geometry.book.claims.ledger import lookup
from embedding_geometry.chapters.ch01_layers import charts as layer_charts
from embedding_geometry.chapters.ch02_attractor import charts as attractor
from embedding_geometry.chapters.ch03_cone import charts as cone
from embedding_geometry.core import activations

CDN = re.compile(r"cdn\.jsdelivr|unpkg\.com|cdnjs", re.I)


def test_rendered_html_calls_the_bundle_and_has_no_cdn():
    charts.use_theme()
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    bundle = chart._repr_mimebundle_()
    html = (bundle[0] if isinstance(bundle, tuple) else bundle)["text/html"]
    assert 'window.egChart("eg-chart-' in html  # _static/charts.js lays it out and draws it with the bundle
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
    published = charts.per_layer_frame({"within": np.linspace(0, 1, 25), "baseline": np.zeros(25)}, "theirs")
    spec = charts.layer_chart(run, "cosine", published).to_dict()
    assert len(spec["layer"]) == 2
    colour, dash = (spec["layer"][0]["encoding"][c]["scale"] for c in ("color", "strokeDash"))
    assert colour["domain"] == ["within", "within — published (theirs)", "baseline — published (theirs)"]
    assert colour["range"] == [charts.CATEGORY_COLORS[0], *charts.PUBLISHED_GREYS[:2]]  # a grey per published curve
    assert dash["range"] == [[1, 0], *charts.PUBLISHED_DASHES[:2]]  # ours solid, each published curve its own dash
    assert spec["layer"][1]["encoding"]["color"]["scale"] == colour  # one scale, so one legend names every line
    assert spec["layer"][1]["encoding"]["x"]["field"] == "relative_depth"
    assert "layer" not in charts.layer_chart(run, "cosine").to_dict()


def test_five_published_curves_each_have_their_own_grey_and_dash():
    """Chapter 1 overlays five published dimensions: no two of them may be drawn alike."""
    lines = charts.published_encoding([f"dim {d} — published" for d in range(5)])
    colour, dash = (lines[channel].to_dict()["scale"]["range"] for channel in ("color", "strokeDash"))
    styles = list(zip(colour, map(tuple, dash)))
    assert len(set(styles)) == 5 and len({dash for _, dash in styles}) == 5


def test_token_heatmap_has_a_depth_slider():
    frame = pd.DataFrame({"sentence": ["a"] * 4, "position": [0, 1, 0, 1], "token": ["x", "y", "x", "y"],
                          "kind": ["word"] * 4, "depth": [0, 0, 1, 1], "norm": [1.0, 2.0, 3.0, 4.0]})
    spec = charts.token_heatmap(frame, "norm", 1).to_dict()
    (param,) = spec["params"]
    assert param["bind"] == {"input": "range", "min": 0, "max": 1, "step": 1, "name": "depth "}
    assert json.dumps(spec).count('"depth"') >= 1


def test_matrix_frame_marks_missing_cells_and_heatmap_keeps_order():
    frame = charts.matrix_frame({"b": {"b": 1.0, "a": None}, "a": {"b": None, "a": 0.25}})
    assert frame["row"].tolist() == ["b", "b", "a", "a"]
    assert frame["label"].tolist() == ["1.000", "not comparable", "not comparable", "0.250"]
    assert frame["value"].isna().tolist() == [False, True, True, False]
    spec = charts.matrix_heatmap(frame, "axes", "|cos|").to_dict()
    assert spec["layer"][0]["encoding"]["y"]["sort"] == ["b", "a"]
    assert "isValid" in json.dumps(spec["layer"][0]["encoding"]["color"])
    short = charts.matrix_frame({"org/model-a": {"org/model-a": -0.5}}, digits=2, short_names=True)
    assert short.iloc[0][["row", "column", "label"]].tolist() == ["model-a", "model-a", "-0.50"]
    diverging = charts.matrix_heatmap(short, domain=(-1, 1), diverging=True).to_dict()
    scale = diverging["layer"][0]["encoding"]["color"]["condition"]["scale"]
    assert scale["domainMid"] == 0 and scale["domain"] == [-1, 1] and "clamp" not in scale
    wide = charts.matrix_frame({"a": {"a": -3.24, "b": 0.5}}, digits=2)
    scale = charts.matrix_heatmap(wide, domain=(-1, 1), diverging=True).to_dict()["layer"][0]["encoding"]["color"]
    assert scale["condition"]["scale"]["domain"] == [-3.24, 3.24]  # the scale covers its data, centred on 0
    assert charts.covering((0, 1), pd.Series([0.2, None, 1.5])) == (0.0, 1.5)


def test_category_strip_orders_categories_by_median():
    frame = pd.DataFrame({"score": [1.0, 2.0, -1.0], "topic": ["x", "x", "y"], "sentence": ["s", "t", "u"]})
    spec = charts.category_strip(frame, "score", "topic", "PC1 score", tooltip=["sentence:N"]).to_dict()
    assert spec["mark"]["type"] == "tick"
    assert spec["encoding"]["y"]["sort"] == {"field": "score", "op": "median", "order": "descending"}


# --------------------------------------------------------------------------- chapters 1 and 2 helpers

class _Record:
    """The few fields of activations.Activations that token_positions_frame reads."""
    n_texts = 2
    tokens = ["[CLS]", "a", "b", "[SEP]", "[CLS]", "c", "[SEP]"]
    word_mask = np.array([False, True, True, False, False, True, False])

    def text_index(self):
        return np.array([0, 0, 0, 0, 1, 1, 1])


def test_step_and_published_frames_use_relative_depth():
    steps = charts.step_frame({"fixed": [1.0, 2.0, 3.0]}, "ours")
    assert steps["depth"].tolist() == [1, 2, 3] and steps["relative_depth"].tolist() == [1 / 3, 2 / 3, 1]
    figure = {"model": "m", "layers": 4, "x": [0, 2, 4], "series": {"a": [1, 2, 3], "b": [4, 5, 6]},
              "models": {"b": "other"}}
    frame = charts.published_frame(figure, names=["b"], scale=0.5)
    assert frame["relative_depth"].tolist() == [0, 0.5, 1] and frame["value"].tolist() == [2, 2.5, 3]
    assert set(frame["model"]) == {"other"}


def test_unique_labels_and_token_positions_with_centroids():
    assert activations.unique_labels(["the", "cat", "the", "the"]) == ["the", "cat", "the₂", "the₃"]
    coords = np.array([[[0, 0], [2, 2], [5, 5]], [[1, 1], [3, 3], [6, 6]]], float)  # 2 depths, 3 word tokens
    frame = charts.token_positions_frame(_Record(), coords, ["A", "B"], shapes=["circle", "square"])
    assert len(frame) == 2 * (3 + 2)
    centroid = frame[(frame.kind == "centroid") & (frame.sentence == "A") & (frame.depth == 1)]
    assert centroid[["x", "y"]].values.tolist() == [[2, 2]] and centroid["shape"].item() == "diamond"
    assert frame[(frame.kind == "token") & (frame.sentence == "B")]["shape"].unique().tolist() == ["square"]


def test_token_animation_has_a_slider_fixed_axes_and_targets():
    coords = np.array([[[0, 0], [2, 2], [5, 5]], [[1, 1], [3, 3], [6, 6]]], float)
    frame = charts.token_positions_frame(_Record(), coords, ["A", "B"])
    spec = charts.token_animation(frame, 1, targets=True).to_dict()
    (param,) = spec["params"]
    assert param["bind"]["max"] == 1 and param["value"] == 0
    assert len(spec["layer"]) == 3  # filled markers, open squares, faint targets
    assert spec["layer"][2]["mark"]["opacity"] < 0.5
    x_domain = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    assert x_domain[0] < 0 and x_domain[1] > 6  # padded, fixed over all depths


def test_rows_frame_keeps_row_order():
    frame = charts.rows_frame({"b": [0.1, 0.2], "a": [0.3, 0.4]}, "m")
    assert frame["row"].tolist() == ["b", "b", "a", "a"] and frame["depth"].tolist() == [0, 1, 0, 1]
    assert frame["m"].tolist() == [0.1, 0.2, 0.3, 0.4]


def test_binned_frames():
    run = charts.binned_frame([-0.9, 0.1, 0.2, 0.95], np.linspace(-1, 1, 5), "ours", "m")
    assert run["count"].tolist() == [1, 0, 2, 1] and run["fraction"].sum() == pytest.approx(1)
    theirs = charts.published_binned_frame({"model": "p", "bin_centres": [-0.5, 0.5], "counts": [1, 3]}, "r")
    assert theirs["fraction"].tolist() == [0.25, 0.75]


def test_bars_and_heatmap_charts():
    bars = charts.value_bars(pd.DataFrame({"s": ["a", "b"], "v": [0.1, 0.2]}), "v", "s", "cos", band=(0, 0.05, "p"))
    assert bars.to_dict()["layer"][1]["mark"]["type"] == "rect"
    heat = charts.depth_heatmap(pd.DataFrame({"row": ["a", "a"], "depth": [0, 1], "m": [0.2, 0.9]}), "m").to_dict()
    assert heat["layer"][0]["encoding"]["y"]["sort"] is None
    grouped = charts.grouped_bars(pd.DataFrame({"t": ["a", "a"], "g": ["L0", "L1"], "v": [1, 2]}),
                                  "t", "v", "g", "v").to_dict()
    assert grouped["encoding"]["xOffset"]["field"] == "g"


def test_a_series_under_a_measurement_the_run_did_not_make_is_left_out():
    """Without random-init controls ``control`` is None: chapter 1's chart draws the trained curve alone,
    chapter 3's a frame with no rows when nothing is left; a misspelt path is still a KeyError."""
    metrics = {"curve": [0.1, 0.5, 0.9], "control": None, "topics": {"removal": None}}
    assert lookup(metrics, "control.curve") is None and lookup(metrics, "curve")[-1] == 0.9
    with pytest.raises(KeyError, match="missing 'curv'"):
        lookup(metrics, "curv")
    frame = layer_charts.models_series_frame({"tiny": metrics},
                                             {"trained": "curve", "random-init control": "control.curve"})
    assert set(frame["series"]) == {"trained"} and len(frame) == 3
    empty = cone.cone_frame({"org/tiny": metrics}, {"R": "topics.removal", "control": "control.curve"})
    assert empty.empty and {"relative_depth", "value", "model", "kind"} <= set(empty.columns)
    cone.cone_lines(empty, "R").to_dict()



@pytest.mark.parametrize("draw", [attractor.model_lines, layer_charts.compare_chart])
def test_published_curves_under_models_each_get_their_own_grey_and_dash(draw):
    """Chapters 1 and 2 draw the post's curves as chapter 0 does: a grey and a dash each, named."""
    run = pd.concat([charts.per_layer_frame({name: np.linspace(0, 1, 4)}, model)
                     for name in ("hard", "easy") for model in ("org/ours", "other")], ignore_index=True)
    published = charts.per_layer_frame({"hard": np.linspace(1, 0, 7), "easy": np.zeros(7)}, "org/theirs")
    theirs, ours = draw(run, "cosine", published).to_dict()["layer"]
    colour, dash = (theirs["encoding"][c]["scale"] for c in ("color", "strokeDash"))
    assert colour["domain"] == ["hard — published (theirs)", "easy — published (theirs)"]
    assert colour["range"] == charts.PUBLISHED_GREYS[:2] and dash["range"] == charts.PUBLISHED_DASHES[:2]
    assert "color" not in theirs["mark"]  # no one grey for all
    assert ours["encoding"]["color"]["field"] == "series" and ours["encoding"]["strokeDash"]["field"] == "model"
    assert "layer" not in draw(run, "cosine").to_dict()


def test_a_models_random_init_controls_show_as_one_row_their_mean_over_seeds():
    from embedding_geometry.chapters.ch05_without_tears.charts import with_controls_averaged

    rows = {"org/m": {"score": 0.5, "warns": True, "recall_at_10": 0.9},
            "org/m [random-init control, seed 0]": {"score": 0.2, "warns": False, "recall_at_10": None},
            "org/m [random-init control, seed 1]": {"score": 0.4, "warns": True, "recall_at_10": None}}
    found = with_controls_averaged(rows)
    assert list(found) == ["org/m", "org/m · controls (mean of 2 seeds)"] and found["org/m"] == rows["org/m"]
    assert found["org/m · controls (mean of 2 seeds)"] == {"score": pytest.approx(0.3), "warns": "1 of 2",
                                                            "recall_at_10": None}


def test_a_cell_lists_up_to_three_values_and_summarises_more():
    assert cone._listed([0.5, 0.25]) == "0.500, 0.250" and cone._listed(None) == "—" and cone._listed([]) == "—"
    assert cone._listed([0.1, 0.2, 0.3, 0.6]) == "0.300 (0.100–0.600, 4 values)"


def test_a_model_is_named_without_its_organisation_and_a_control_by_its_seed():
    from embedding_geometry.core import models

    assert charts.short_model("sentence-transformers/all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    control = models.control_name("sentence-transformers/all-mpnet-base-v2", 3)
    assert charts.short_model(control) == "all-mpnet-base-v2 · control 3"
    assert charts.short_model("local-model") == "local-model"


RAW_MATHS = re.compile(r"[A-Za-zΔρτ)]_[A-Za-z0-9{(]|\\[A-Za-z]+|\$")
"""LaTeX a chart would print as typed: a subscript ``a_j``, a command ``\\tau``, a ``$``."""


def _chart_strings(tree: ast.AST, in_charts_module: bool) -> list[str]:
    """The strings a chart prints, from Python source: every ``title=`` keyword given as a string
    (in a chart module, where every call builds a chart), and in a notebook the arguments of a
    ``charts.*`` call that are titles (a ``*title`` keyword, or a positional string with a space:
    a field name has none)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        is_chart = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id == "charts"
        for keyword in node.keywords:
            if (in_charts_module or is_chart) and (keyword.arg or "").endswith("title") \
                    and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                found.append(keyword.value.value)
        if is_chart:
            found += [arg.value for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and " " in arg.value]
    return found


def test_no_chart_title_or_axis_prints_raw_maths():
    """A chart's title, axis, legend or tooltip title is plain text (issue 39 item 5): ``a_j`` or
    ``\\tau`` would be printed as typed, so they are written in words or Unicode (``τ``, ``ρ``)."""
    root = Path(__file__).resolve().parents[1]
    modules = [*(root / "src/embedding_geometry/book/charts").glob("*.py"),
               *(root / "src/embedding_geometry/chapters").glob("*/charts.py")]
    raw = [(path.name, text) for path in modules
           for text in _chart_strings(ast.parse(path.read_text()), True) if RAW_MATHS.search(text)]
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "\n".join(line for line in "".join(cell["source"]).splitlines()
                                   if not line.lstrip().startswith(("%", "!")))
                raw += [(path.name, text) for text in _chart_strings(ast.parse(source), False)
                        if RAW_MATHS.search(text)]
    assert not raw, raw
    assert RAW_MATHS.search("attention received a_j") and RAW_MATHS.search("mean cos(Δ_i, Δ_j)")
    assert not RAW_MATHS.search("separator share (attention ≥ τ)") and not RAW_MATHS.search("relative depth l / L")
