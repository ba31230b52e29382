"""Chapter 2's charts and tables: every model's per-depth curves on relative depth r = l / L — a
colour per series, a dash per model (a random-init control dashed like its model, lighter), the
published curves thin underneath, each its own grey and dash — and the tables that sum them up.

``by_model`` is the chapter's ``{model id: metrics}`` (studies.similarity_attractor.by_model):
the main model first, then every other trained model of the ``models`` parameter. The book's chart
kinds the notebook shows too (``book.charts``: heatmaps over depth, grouped bars, the token animation
and their frames) are named here for the notebook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import depth_heatmap, grouped_bars, token_animation
from ...book.charts.frames import per_layer_frame, published_frame, rows_frame, token_positions_frame
from ...book.charts.theme import MODEL_DASHES, published_lines, short_model
from ...book.claims import lookup
from ...book.claims.words import number

__all__ = ["final_scores_frame", "model_lines", "series_by_model", "pair_sets_frame", "peak_table", "relative_gap",
           "short_model", "truncation_table",
           "depth_heatmap", "grouped_bars", "token_animation", "published_frame", "rows_frame", "token_positions_frame"]
"""The chapter's charts and tables, and the shared ones its notebook shows from here too (the last six)."""

def series_by_model(by_model: Mapping[str, Mapping[str, Any]], key: str, names: Sequence[str] | None = None,
                 rename: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model) of the metric at key path ``key``
    on every model: a per-depth list (one series named by the key's last part) or a mapping of
    them (``names`` picks series, ``rename`` relabels them)."""
    frames = []
    for model, metrics in by_model.items():
        found = lookup(metrics, key)
        series = found if isinstance(found, Mapping) else {key.rsplit(".", 1)[-1]: found}
        chosen = {(rename or {}).get(name, name): values for name, values in series.items()
                  if values is not None and (names is None or name in names)}
        frames.append(per_layer_frame(chosen, short_model(model)))
    return pd.concat(frames, ignore_index=True)


def pair_sets_frame(by_model: Mapping[str, Mapping[str, Any]], sets: Sequence[str] = ("hard", "easy"),
                    key: str = "{}") -> pd.DataFrame:
    """:func:`series_by_model` of the sets' mean cosine (``pair_sets.<set>``, series "<set> pairs";
    ``key`` names another measure of each set, "{}_centroid_ratio"), with each model's random-init
    controls (their mean over seeds and pairs) as the model "<model> · control" where they have it."""
    frames = []
    for model, metrics in by_model.items():
        name = short_model(model)
        frames.append(per_layer_frame({f"{s} pairs": metrics["pair_sets"][key.format(s)] for s in sets}, name))
        if metrics.get("control") and key == "{}":
            frames.append(per_layer_frame({f"{s} pairs": metrics["control"]["pair_sets"][s] for s in sets},
                                          f"{name} · control"))
    return pd.concat(frames, ignore_index=True)


def model_lines(run: pd.DataFrame, y_title: str, published: pd.DataFrame | None = None, title: str = "",
                y_zero: bool = True, x_title: str = "relative depth l / L") -> alt.LayerChart | alt.Chart:
    """The frame's curves on relative depth, coloured by series and dashed by model (a
    control's line lighter), with published curves (``charts.published_frame``) thin underneath,
    each its own grey and dash (``theme.published_lines``). Short legends: the series, the models
    and the published curves."""
    x = alt.X("relative_depth:Q", title=x_title, scale=alt.Scale(domain=[0, 1]))
    models = list(dict.fromkeys(run["model"]))
    dashes = [MODEL_DASHES[i % len(MODEL_DASHES)] for i in range(len(models))]
    dash = alt.StrokeDash("model:N", title=None, sort=models, scale=alt.Scale(domain=models, range=dashes),
                          legend=alt.Legend(symbolType="stroke", symbolStrokeWidth=2, columns=1))
    tooltip = ["series:N", "model:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")]
    shaded = run.assign(opacity=np.where(run["model"].str.endswith("control"), 0.55, 1.0))
    ours = alt.Chart(shaded).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)),
        color=alt.Color("series:N", title=None, sort=None, legend=alt.Legend(columns=1)),
        strokeDash=dash, opacity=alt.Opacity("opacity:Q", legend=None, scale=None), detail="model:N", tooltip=tooltip)
    if published is None or published.empty:
        return ours.properties(title=title)
    return alt.layer(published_lines(published, x), ours).resolve_scale(
        color="independent", strokeDash="independent").properties(title=title)


def relative_gap(figure: Mapping[str, Any], minuend: str = "hard", subtrahend: str = "easy",
                 name: str = "hard − easy gap over its depth-0 value") -> dict[str, Any]:
    """A published figure with one series: (x − y) / (x₀ − y₀) of two of its series."""
    gap = np.subtract(figure["series"][minuend], figure["series"][subtrahend])
    return {**figure, "series": {name: list(gap / gap[0])}}


def _depth(depth: int, L: int) -> str:
    return f"{depth} of {L} ({depth / L:.2f})"


def peak_table(by_model: Mapping[str, Mapping[str, Any]], published: Mapping[str, Any]) -> pd.DataFrame:
    """Per pair, the depth of its highest mean-pool cosine ("l of L (l/L)") on every model and
    in the post's figure ("—" where a model or the post has no such pair)."""
    rows = {}
    for model, metrics in by_model.items():
        L = len(metrics["pair_cosine"]["hard"]) - 1
        for pair, depth in metrics["attractor_peak_depth"].items():
            rows.setdefault(pair, {})[short_model(model)] = _depth(depth, L)
    theirs, L = published["series"], published["layers"]
    for pair in rows:
        rows[pair][f"published ({short_model(published['model'])})"] = (
            _depth(int(np.argmax(theirs[pair])), L) if pair in theirs else "—")
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("pair").reset_index()


def final_scores_frame(by_model: Mapping[str, Mapping[str, Any]], published: Mapping[str, Any]) -> pd.DataFrame:
    """Long frame (measure, cosine, source) of the hard pair's final-depth scores on every model
    and in the post (``published``: ``{model, values}``)."""
    rows = [{"measure": k, "cosine": v, "source": short_model(model)}
            for model, metrics in by_model.items() for k, v in metrics["final_depth_scores"].items()]
    rows += [{"measure": k, "cosine": v, "source": f"published ({short_model(published['model'])})"}
             for k, v in published["values"].items()]
    return pd.DataFrame(rows)


def truncation_table(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Per model: the blocks a truncation drops and keeps, and the mean hard margin, easy margin
    and Recall@1 at full depth and with those blocks dropped."""
    rows = []
    for model, metrics in by_model.items():
        t = metrics["truncation"]
        L, cut = len(t["recall"]) - 1, t["cut_depth"]
        row = {"model": short_model(model), "blocks dropped": f"{t['blocks_dropped']} of {L}",
               "depth kept": _depth(cut, L)}
        for key, label in (("hard_margin", "hard margin"), ("easy_margin", "easy margin"), ("recall", "Recall@1")):
            row[f"{label}, full"], row[f"{label}, truncated"] = number(float(t[key][L])), number(float(t[key][cut]))
        rows.append(row)
    return pd.DataFrame(rows)
