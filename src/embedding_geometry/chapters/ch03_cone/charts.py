"""Chapter 3's charts: per-depth curves of every trained model the chapter runs (a colour per
model, a dash per kind of curve: the model's own, its random-init controls', token- against
sentence-level), on relative depth, over the post's curve in grey — and its tables. The book's chart
kinds the notebook shows too (``book.charts``: value bars, the model × model heatmap and its frame, a
strip of ticks per category) are named here for the notebook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import value_bars
from ...book.charts.frames import per_layer_frame, published_frame
from ...book.charts.matrices import category_strip, matrix_frame, matrix_heatmap
from ...book.charts.theme import CATEGORY_COLORS, MODEL_DASHES, PUBLISHED_COLOR, short_model
from ...book.claims.ledger import lookup
from ...book.tables import number_text

__all__ = ["centering_across_table", "cone_frame", "cone_lines", "rotation_table", "short_model",
           "value_bars", "matrix_frame", "matrix_heatmap", "category_strip"]
"""The chapter's charts and tables, and the shared ones its notebook shows from here too (the last four)."""

def cone_frame(found: Mapping[str, Mapping[str, Any]], kinds: Mapping[str, str]) -> pd.DataFrame:
    """Long frame (depth, relative_depth, value, series, model, kind) of the per-depth metrics at
    the key paths ``kinds`` ({kind label: key path}) on every trained model of ``found`` (its
    metrics by model id); a metric that is None on a model, or under a None, is left out (with
    none left, the frame has no rows: a chart of nothing, where the claims say why)."""
    frames = []
    for model, metrics in found.items():
        for kind, key in kinds.items():
            values = lookup(metrics, key)
            if values is not None:
                frame = per_layer_frame({f"{short_model(model)} · {kind}": np.asarray(values, dtype=float)}, model)
                frames.append(frame.assign(model=short_model(model), kind=kind))
    if not frames:
        return pd.DataFrame(columns=["depth", "relative_depth", "value", "series", "model", "kind"])
    return pd.concat(frames, ignore_index=True)


def cone_lines(run: pd.DataFrame, y_title: str, published: Mapping[str, Any] | None = None,
               kinds: Mapping[str, str] | None = None, title: str = "", y_zero: bool = True) -> alt.Chart:
    """The frame of :func:`cone_frame` on relative depth: a colour per model, a dash per kind; the
    series of the transcribed published figure ``published`` named in ``kinds`` ({published series:
    kind}) in grey, as the post's model with the dash of that kind."""
    frame = run
    if published is not None:
        kinds = kinds or {}
        theirs = published_frame(published, list(kinds))
        label = f"{short_model(published['model'])} (published)"
        frame = pd.concat([run, theirs.assign(kind=theirs["series"].map(kinds), model=label,
                                              series=label + " · " + theirs["series"])], ignore_index=True)
    palette = CATEGORY_COLORS
    models, kind_names = list(dict.fromkeys(run["model"])), list(dict.fromkeys(frame["kind"]))
    domain = list(dict.fromkeys(frame["model"]))
    colours = palette[:len(models)] + [PUBLISHED_COLOR] * (len(domain) - len(models))
    legend = {"orient": "bottom", "direction": "vertical", "labelLimit": 260}
    return alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=y_zero)),
        color=alt.Color("model:N", title=None, scale=alt.Scale(domain=domain, range=colours),
                        legend=alt.Legend(**legend)),
        strokeDash=alt.StrokeDash("kind:N", title=None,
                                  scale=alt.Scale(domain=kind_names, range=MODEL_DASHES[:len(kind_names)]),
                                  legend=alt.Legend(symbolType="stroke", **legend)),
        detail="series:N", tooltip=["series:N", "depth:Q", alt.Tooltip("value:Q", format=".4f")],
    ).properties(title=title)


LISTED = 3
"""Up to this many values a cell lists them; more (ten controls, 45 pairs of them) are summarised."""


def _listed(values: Any) -> str:
    """Numbers as "0.123, 0.456" (up to :data:`LISTED`), more as their mean and range,
    "0.123 (0.101–0.150, 10 values)"; "—" for None or none."""
    if values is None or len(values) == 0:
        return "—"
    if len(values) <= LISTED:
        return ", ".join(number_text(v, 3) for v in values)
    return (f"{number_text(float(np.mean(values)), 3)} ({number_text(min(values), 3)}–{number_text(max(values), 3)}, "
            f"{len(values)} values)")


def rotation_table(found: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Experiment 4 offline, one column per trained model: |cos| of its cone axis with each
    control's and of the controls' among themselves, random directions' mean and 99 % quantile,
    and the final anisotropy of the model and of each control ("—" without controls; more than
    :data:`LISTED` values as their mean and range)."""
    def column(f: Mapping[str, Any]) -> dict[str, str]:
        r = f["rotation"]
        chance = {key: "—" if r[key] is None else number_text(r[key], 3) for key in ("chance", "chance_q99")}
        return {"|cos| model vs each control": _listed(r["axis_cos"]),
                "|cos| controls among themselves": _listed(r["controls_axis_cos"]),
                "random directions: mean |cos|": chance["chance"],
                "random directions: 99 % quantile": chance["chance_q99"],
                "final anisotropy, model": number_text(f["anisotropy"][-1], 3),
                "final anisotropy, each control": _listed(f["controls"]["final_anisotropy"])}

    return pd.DataFrame({short_model(name): column(f) for name, f in found.items()})


def centering_across_table(found: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Whether one model's centering vector serves another of the same width: per trained model,
    the removal shares of the model centred with each control's mean and of each control
    centred with the model's ("—" without controls)."""
    def column(f: Mapping[str, Any]) -> dict[str, str]:
        shares = f["rotation"]["centering"] or {}
        return {"the model centred with each control's mean": _listed(shares.get("model_by_control")),
                "each control centred with the model's mean": _listed(shares.get("control_by_model"))}

    return pd.DataFrame({short_model(name): column(f) for name, f in found.items()})
