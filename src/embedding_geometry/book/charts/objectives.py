"""Chapter 7's charts: every model of the controlled experiment on relative depth, with 95 %
bands, the posts' curves in grey underneath, and the difference between the two losses against
the seed-to-seed null."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...core import corpora
from ..claims.reduce import depth_text
from .depth import layer_chart
from .frames import per_layer_frame, published_frame

__all__ = [
    "OBJECTIVE_LABELS",
    "START_LABELS",
    "dense_colbert_endpoints",
    "fingerprint_reach_table",
    "fingerprint_reach_text",
    "objective_chart",
    "objective_difference_chart",
    "objective_final_table",
    "objective_final_values",
    "objective_published",
    "training_loss_frame",
]

OBJECTIVE_LABELS = {"before": "before training", "mean_pool": "mean-pool loss", "maxsim": "MaxSim loss"}
START_LABELS = {"pretrained": "from the pre-trained backbone", "random_init": "from a random-init copy"}
PUBLISHED_CURVES: dict[str, tuple[str, str, Sequence[str] | None]] = {
    # measure: (chapter whose data/published file holds it, figure, series; None = every series)
    "intra_sentence_cosine": ("01_layer_by_layer", "dense_vs_colbert", None),
    "cross_sentence_baseline": ("01_layer_by_layer", "token_similarity", ["cross-sentence baseline"]),
    "separability_ratio": ("01_layer_by_layer", "separability", None),
    "cls_mean_alignment": ("01_layer_by_layer", "cls_alignment", ["CLS vs mean"]),
    "anisotropy": ("03_inside_the_cone", "anisotropy", None),
    "hard_mean_pool": ("02_similarity_attractor", "pair_cosine", ["hard"]),
    "easy_mean_pool": ("02_similarity_attractor", "pair_cosine", ["easy"]),
    "hard_maxsim": ("02_similarity_attractor", "maxsim_mean", None),
}
"""The posts' curve drawn under each measure (mxbai-embed-large-v1; jina-colbert-v2 where the
post has one)."""


def objective_published(measure: str) -> pd.DataFrame | None:
    """The posts' curves for ``measure`` as a long frame on relative depth, or None."""
    if measure not in PUBLISHED_CURVES:
        return None
    chapter, figure, names = PUBLISHED_CURVES[measure]
    return published_frame(corpora.published(chapter)[figure], names)


def _band(values: Any) -> pd.DataFrame | None:
    if values is None:
        return None
    low, high = np.asarray(values, dtype=float)
    depth = np.arange(len(low))
    return pd.DataFrame({"relative_depth": depth / (len(low) - 1), "low": low, "high": high})


def _with_band(chart: alt.Chart | alt.LayerChart, bands: Mapping[str, Any], colours: Mapping[str, str]) -> alt.LayerChart:
    layers = [alt.Chart(frame.assign(series=name)).mark_area(opacity=0.18, color=colours[name]).encode(
        x="relative_depth:Q", y="low:Q", y2="high:Q") for name, values in bands.items()
              if (frame := _band(values)) is not None]
    return alt.layer(*layers, chart)


def objective_chart(blocks: Mapping[str, Mapping], measure: str, y_title: str,
                   intervals: Mapping[str, Any] | None = None, title: str = "") -> alt.HConcatChart:
    """One panel per start: the seed-mean curve of ``measure`` before training and after each
    loss, 95 % bands from ``intervals`` (keyed ``<start>.mean.<variant>.<measure>``), the posts'
    curves in grey."""
    palette = {"before": "#9a9a9a", "mean_pool": "#1f5fa8", "maxsim": "#d2691e"}
    panels = []
    for start, block in blocks.items():
        series = {OBJECTIVE_LABELS[v]: block["mean"][v][measure] for v in OBJECTIVE_LABELS}
        chart = layer_chart(per_layer_frame(series, START_LABELS[start]), y_title, objective_published(measure),
                            title=START_LABELS[start], y_zero=False)
        bands = {OBJECTIVE_LABELS[v]: (intervals or {}).get(f"{start}.mean.{v}.{measure}") for v in ("mean_pool", "maxsim")}
        panels.append(_with_band(chart, bands, {OBJECTIVE_LABELS[v]: palette[v] for v in palette}))
    return alt.hconcat(*panels).properties(title=title)


def objective_difference_chart(blocks: Mapping[str, Mapping], measure: str, intervals: Mapping[str, Any], y_title: str,
                     title: str = "") -> alt.LayerChart:
    """Per start, mean-pool copy minus MaxSim copy at every depth with its 95 % band (from
    ``intervals``, keyed ``<start>.difference.<measure>``), and the seed null ±n_l as a grey zone:
    where the band leaves the zone, the loss shows."""
    rows, zone = [], []
    for start, block in blocks.items():
        diff, null = np.asarray(block["difference"][measure]), np.asarray(block["seed_null"][measure])
        low, high = np.asarray(intervals[f"{start}.difference.{measure}"], dtype=float)
        depth = np.arange(len(diff)) / (len(diff) - 1)
        rows.append(pd.DataFrame({"relative_depth": depth, "value": diff, "low": low, "high": high,
                                  "start": START_LABELS[start]}))
        zone.append(pd.DataFrame({"relative_depth": depth, "low": -null, "high": null, "start": START_LABELS[start]}))
    frame, zone = pd.concat(rows), pd.concat(zone)
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    null = alt.Chart(zone).mark_area(opacity=0.25, color="#9a9a9a").encode(x=x, y="low:Q", y2="high:Q", detail="start:N")
    band = alt.Chart(frame).mark_area(opacity=0.2).encode(x=x, y="low:Q", y2="high:Q", color=alt.Color("start:N", title=None))
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=y_title), color="start:N",
        tooltip=["start:N", alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("low:Q", format=".4f"),
                 alt.Tooltip("high:Q", format=".4f")])
    return alt.layer(null, band, line).properties(title=title)


def training_loss_frame(blocks: Mapping[str, Mapping]) -> pd.DataFrame:
    """The training loss of every run by step: (step, loss, run, start); ``run`` names the
    objective and the seed."""
    rows = [pd.DataFrame({"step": np.arange(1, len(run["losses"]) + 1), "loss": run["losses"],
                          "run": f"{OBJECTIVE_LABELS[objective]}, seed {seed.removeprefix('seed_')}",
                          "start": START_LABELS[start]})
            for start, block in blocks.items() for objective, by_seed in block["loss"].items()
            for seed, run in by_seed.items()]
    return pd.concat(rows, ignore_index=True)


def fingerprint_reach_table(blocks: Mapping[str, Mapping], measures: Mapping[str, str]) -> pd.DataFrame:
    """Per measure (rows, named by ``measures``) and start: the final-depth difference (mean-pool
    copy − MaxSim copy), the seed null there, and how far back the difference clears the null
    (the shallowest depth of the run, with the depths its 95 % interval spans)."""
    rows = []
    for key, name in measures.items():
        row: dict[str, Any] = {"measure": name}
        for start, block in blocks.items():
            reach = block["reach"][key]
            row[f"final difference ({start})"] = round(float(block["difference"][key][-1]), 4)
            row[f"seed null ({start})"] = round(float(block["seed_null"][key][-1]), 4)
            row[f"present from ({start})"] = fingerprint_reach_text(reach, short=True)
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure")


def _with_interval(value: float, band: Any) -> str:
    """"0.395 [0.360, 0.431]": a value and, when there is one, its 95 % interval."""
    if band is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{band[0]:.3f}, {band[1]:.3f}]"


def objective_final_table(blocks: Mapping[str, Mapping], intervals: Mapping[str, Any], measures: Mapping[str, str]) -> pd.DataFrame:
    """Per measure (rows) and start × variant (columns): the seed-mean value at the final depth
    with its 95 % interval."""
    columns = {}
    for start, block in blocks.items():
        for variant, label in OBJECTIVE_LABELS.items():
            column = {}
            for key, name in measures.items():
                band = intervals.get(f"{start}.mean.{variant}.{key}")
                column[name] = _with_interval(float(block["mean"][variant][key][-1]),
                                              None if band is None else np.asarray(band)[:, -1])
            columns[(START_LABELS[start], label)] = column
    return pd.DataFrame(columns)


def objective_final_values(blocks: Mapping[str, Mapping], intervals: Mapping[str, Any], measure: str) -> dict[str, str]:
    """``final_<start>_<variant>``: the final-depth value of ``measure`` with its interval, for the prose."""
    return {f"final_{start}_{variant}": _with_interval(
                float(block["mean"][variant][measure][-1]),
                None if (band := intervals.get(f"{start}.mean.{variant}.{measure}")) is None else np.asarray(band)[:, -1])
            for start, block in blocks.items() for variant in OBJECTIVE_LABELS}


def fingerprint_reach_text(reach: Mapping[str, Any], short: bool = False) -> str:
    """Where a fingerprint's reach starts, in the book's depth wording (its l/L alone when
    ``short``), then the shallowest and the deepest start within its 95 % interval; or why it
    has none ("none": absent at the final depth)."""
    n_layers = len(reach["present"]) - 1
    depth = reach["depth"]
    if depth is None:
        found = "none" if short else "none (the difference does not clear the seed null even at the final depth)"
    else:
        found = f"{depth / n_layers:.2f}" if short else depth_text(int(depth), n_layers)
    if reach.get("depth_interval") is None:
        return found
    low, high = ("none" if l is None else (f"{l / n_layers:.2f}" if short else f"depth {l} of {n_layers}")
                 for l in reach["depth_interval"])
    if short:
        return f"{found} [{low}, {high}]"
    return f"{found}; 95 % interval: {low}" + ("" if low == high else f" to {high}")


def dense_colbert_endpoints() -> dict[str, str]:
    """The post's dense and ColBERT within-sentence cosines: mxbai's and jina-colbert-v2's final
    values and jina's peak (``pub_mxbai_end``, ``pub_jina_end``, ``pub_jina_peak``)."""
    figure = corpora.published("01_layer_by_layer")["dense_vs_colbert"]
    dense, colbert = (np.asarray(values, dtype=float) for values in figure["series"].values())
    return {"pub_mxbai_end": f"{dense[-1]:.3f}", "pub_jina_end": f"{colbert[-1]:.3f}", "pub_jina_peak": f"{colbert.max():.3f}"}
