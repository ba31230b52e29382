"""The primer's interactive charts, each with the frame it draws (:mod:`.primer` builds the toys): a
slider per chart shows what a static figure cannot.

- ``angle_chart``: u and v at an angle and length (cosine ignores length, the dot product does not);
- ``pair_scatter``: two toy sentences' tokens, CLS tokens and mean pools;
- ``artefact_chart``: a tiny move seen through fixed and through refitted PCA axes;
- ``centering_chart``: a toy cone and its mean cosine as α times the mean is subtracted;
- ``depth_chart``: the same relative depth l / L in models of different depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from ...book.charts.depth import depth_heatmap, layer_chart, token_heatmap
from ...book.charts.frames import per_layer_frame, published_frame, rows_frame, step_frame
from ...book.charts.theme import PUBLISHED_COLOR
from ...core import geometry
from ...studies import anisotropy
from .primer import TOY_PAIR, partly_centred, refit_projection, stretch

__all__ = ["VIEWS", "toy_pair_frame", "artefact_frames", "centering_frames", "depth_grid",
           "angle_chart", "pair_scatter", "artefact_chart", "centering_chart", "depth_chart",
           "depth_heatmap", "layer_chart", "token_heatmap", "per_layer_frame", "published_frame", "rows_frame",
           "step_frame"]
"""The primer's charts, and the shared ones its notebook shows from here too (the last seven)."""

VIEWS = {"fixed": "fixed axes (one PCA, fitted at depth 0)", "refit": "refitted axes (a new PCA per depth)"}


# --------------------------------------------------------------------------- frames

def toy_pair_frame(pair: Mapping[str, tuple[Sequence[str], Sequence[Sequence[float]]]] = TOY_PAIR) -> pd.DataFrame:
    """The toy sentences' tokens and each sentence's mean pool as one frame (sentence, token,
    kind, x, y); the first token of each sentence is its CLS."""
    rows = []
    for name, (tokens, states) in pair.items():
        states = np.asarray(states, dtype=np.float64)
        rows += [{"sentence": name, "token": t, "kind": "CLS" if i == 0 else "token", "x": x, "y": y}
                 for i, (t, (x, y)) in enumerate(zip(tokens, states))]
        x, y = states.mean(axis=0)
        rows.append({"sentence": name, "token": f"mean of {name}", "kind": "mean pool", "x": x, "y": y})
    return pd.DataFrame(rows).round(3)


def artefact_frames(points: np.ndarray, steps: Mapping[str, np.ndarray], amount: float) -> dict[str, pd.DataFrame]:
    """What the artefact chart draws, for the directions φ of ``steps`` (``primer.refit_artefact``
    of ``points`` and ``amount``): ``points`` — per φ, view and point its 2-D position at depth 0
    (x0, y0) and depth 1 (x1, y1); ``steps`` — the mean step per φ and view."""
    rows = []
    for phi in steps["angle"]:
        states = np.stack([points, stretch(points, phi, amount)])
        for view, coords in (("fixed", geometry.pca_projection(states, 0)[0]), ("refit", refit_projection(states))):
            rows += [{"angle": float(phi), "view": VIEWS[view], "point": i, "x0": x0, "y0": y0, "x1": x1, "y1": y1}
                     for i, ((x0, y0), (x1, y1)) in enumerate(zip(coords[0], coords[1]))]
    step_rows = [{"angle": phi, "view": VIEWS[view], "step": steps[view][i]}
                 for view in VIEWS for i, phi in enumerate(steps["angle"])]
    return {"points": pd.DataFrame(rows).round(3), "steps": pd.DataFrame(step_rows).round(4)}


def centering_frames(toy: np.ndarray, curves: Mapping[str, Sequence[float]],
                     alphas: Sequence[float]) -> dict[str, pd.DataFrame]:
    """What the centering chart draws: ``points`` — the toy vectors at every α; ``curves`` —
    mean cosine against α, one series per entry of ``curves``."""
    points = pd.DataFrame([{"alpha": float(a), "point": i, "x": x, "y": y}
                           for a in alphas for i, (x, y) in enumerate(partly_centred(toy, a))])
    lines = pd.DataFrame([{"alpha": float(a), "series": name, "mean_cosine": float(v)}
                          for name, values in curves.items() for a, v in zip(alphas, values)])
    return {"points": points.round(3), "curves": lines.round(4)}



def depth_grid(models: Mapping[str, int], relative: Sequence[float]) -> pd.DataFrame:
    """For each model (name → number of blocks L) its depths l = 0..L at r = l / L and, for each
    slider value r, whether l is the depth nearest r (``anisotropy.nearest_depth``)."""
    rows = []
    for r in relative:
        for name, n_layers in models.items():
            nearest = anisotropy.nearest_depth(r, n_layers)
            rows += [{"r": round(float(r), 3), "model": name, "layers": n_layers, "depth": l,
                      "relative_depth": round(l / n_layers, 4), "nearest": l == nearest}
                     for l in range(n_layers + 1)]
    return pd.DataFrame(rows)



# --------------------------------------------------------------------------- charts

def _slider(name: str, low: float, high: float, step: float, value: float, label: str) -> alt.Parameter:
    return alt.param(name=name, value=value, bind=alt.binding_range(min=low, max=high, step=step, name=label))


def _from_origin(chart: alt.Chart) -> alt.Chart:
    """The chart with a field ``origin`` = 0, the start of rules drawn from the origin to (x, y)."""
    return chart.transform_calculate(origin="0")


def angle_chart(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """u and v as arrows from the origin, at the angle and length two sliders pick; the text
    gives u·v (which grows with ‖v‖) and cos(u, v) (which does not)."""
    angles, lengths = sorted(frame["angle"].unique()), sorted(frame["length"].unique())
    angle = _slider("angle", angles[0], angles[-1], angles[1] - angles[0], angles[len(angles) // 3],
                    "angle θ (degrees) ")
    length = _slider("length", lengths[0], lengths[-1], lengths[1] - lengths[0], lengths[0], "length ‖v‖ ")
    now = alt.Chart(frame).transform_filter((alt.datum.angle == angle) & (alt.datum.length == length))
    reach = float(max(lengths)) * 1.1
    x_scale, y_scale = alt.Scale(domain=[-reach, reach]), alt.Scale(domain=[-0.2 * reach, reach])
    x = alt.X("x:Q", title="dimension 1", scale=x_scale)
    y = alt.Y("y:Q", title="dimension 2", scale=y_scale)
    color = alt.Color("vector:N", title=None)
    arrows = _from_origin(now).mark_rule(strokeWidth=3).encode(
        x=alt.X("origin:Q", scale=x_scale, title="dimension 1"),
        y=alt.Y("origin:Q", scale=y_scale, title="dimension 2"),
        x2="x:Q", y2="y:Q", color=color)
    tips = now.mark_point(filled=True, size=90).encode(x=x, y=y, color=color, tooltip=["vector:N", "x:Q", "y:Q"])
    label = now.transform_filter(alt.datum.vector == "v").transform_calculate(
        text="'u·v = ' + format(datum.dot, '.3f') + '    cos(u, v) = ' + format(datum.cosine, '.3f')").mark_text(
        align="left", fontSize=15, fontWeight="bold").encode(x=alt.value(8), y=alt.value(14), text="text:N")
    return alt.layer(arrows, tips, label).add_params(angle, length).properties(title=title, width=420, height=280)


def pair_scatter(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Toy token states (from ``toy_pair_frame``) as labelled points, coloured by sentence;
    CLS tokens are squares and mean pools diamonds, each joined to the origin by a line. Labels
    sit towards the middle (left of points right of 0, and the reverse), a mean pool's below its
    point and the others' above, so that they stay inside the chart and off each other."""
    reach = float(frame[["x", "y"]].abs().max().max()) * 1.25
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    base = alt.Chart(frame).encode(x=alt.X("x:Q", scale=scale, title="dimension 1"),
                                   y=alt.Y("y:Q", scale=scale, title="dimension 2"),
                                   color=alt.Color("sentence:N", title="sentence"))
    shape = alt.Shape("kind:N", title=None, scale=alt.Scale(domain=["token", "CLS", "mean pool"],
                                                           range=["circle", "square", "diamond"]))
    rays = _from_origin(base).mark_rule(opacity=0.5).encode(x="origin:Q", y="origin:Q", x2="x:Q", y2="y:Q")
    points = base.mark_point(filled=True, size=110).encode(shape=shape,
                                                           tooltip=["sentence:N", "token:N", "kind:N", "x:Q", "y:Q"])
    labels = [base.transform_filter(side & place).mark_text(align=align, dx=dx, dy=dy,
                                                            fontSize=12).encode(text="token:N")
              for side, align, dx in ((alt.datum.x >= 0, "right", -9), (alt.datum.x < 0, "left", 9))
              for place, dy in ((alt.datum.kind == "mean pool", 16), (alt.datum.kind != "mean pool", -9))]
    return alt.layer(rays, points, *labels).properties(title=title, width=340, height=340)


def artefact_chart(frames: Mapping[str, pd.DataFrame], title: str = "") -> alt.VConcatChart:
    """Both PCA views of a tiny move (hollow: depth 0, filled: depth 1, a line per point's
    step) at the stretch direction a slider picks, above the mean step against that direction."""
    points, steps = frames["points"], frames["steps"]
    angles = sorted(points["angle"].unique())
    phi = _slider("stretch_direction", angles[0], angles[-1], angles[1] - angles[0], angles[len(angles) // 6],
                  "stretch direction φ (degrees) ")
    reach = float(points[["x0", "y0", "x1", "y1"]].abs().max().max()) * 1.1
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    color = alt.Color("point:N", legend=None, scale=alt.Scale(scheme="tableau20"))
    tooltip = ["point:N", "x0:Q", "y0:Q", "x1:Q", "y1:Q"]

    def panel(view: str) -> alt.LayerChart:
        base = alt.Chart(points).transform_filter((alt.datum.angle == phi) & (alt.datum.view == view))
        return alt.layer(
            base.mark_rule(strokeWidth=1.5, opacity=0.7).encode(
                x=alt.X("x0:Q", scale=scale, title="PC1"), y=alt.Y("y0:Q", scale=scale, title="PC2"),
                x2="x1:Q", y2="y1:Q", color=color),
            base.mark_point(filled=False, size=60).encode(x="x0:Q", y="y0:Q", color=color, tooltip=tooltip),
            base.mark_point(filled=True, size=60).encode(x="x1:Q", y="y1:Q", color=color, tooltip=tooltip),
        ).properties(width=260, height=260, title=view)

    views = alt.hconcat(*(panel(view) for view in VIEWS.values()))
    lines = alt.Chart(steps).mark_line(point=True).encode(
        x=alt.X("angle:Q", title="stretch direction φ (degrees)"), y=alt.Y("step:Q", title="mean step (PCA units)"),
        color=alt.Color("view:N", title=None, sort=list(VIEWS.values())),
        tooltip=["view:N", "angle:Q", alt.Tooltip("step:Q", format=".3f")])
    rule = alt.Chart(steps).transform_filter(alt.datum.angle == phi).mark_rule(
        color=PUBLISHED_COLOR, strokeDash=[5, 4]).encode(x="angle:Q")
    return alt.vconcat(views, alt.layer(lines, rule).properties(width=560, height=180)).add_params(phi).resolve_scale(
        color="independent").properties(title=title)


def centering_chart(frames: Mapping[str, pd.DataFrame], title: str = "") -> alt.HConcatChart:
    """The toy vectors after subtracting α times their mean (left; the cross marks the origin)
    and the mean pairwise cosine against α (right), at the α a slider picks."""
    points, curves = frames["points"], frames["curves"]
    alphas = sorted(points["alpha"].unique())
    alpha = _slider("centering", alphas[0], alphas[-1], round(alphas[1] - alphas[0], 6), alphas[0],
                    "centering strength α ")
    reach = float(points[["x", "y"]].abs().max().max()) * 1.1
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    now = alt.Chart(points).transform_filter(alt.datum.alpha == alpha)
    origin = alt.Chart(pd.DataFrame({"x": [0.0], "y": [0.0]})).mark_point(
        shape="cross", size=300, color="black", filled=True).encode(
        x=alt.X("x:Q", scale=scale, title="dimension 1"), y=alt.Y("y:Q", scale=scale, title="dimension 2"))
    rays = _from_origin(now).mark_rule(opacity=0.35).encode(x="origin:Q", y="origin:Q", x2="x:Q", y2="y:Q")
    dots = now.mark_point(filled=True, size=50).encode(x="x:Q", y="y:Q", tooltip=["point:N", "x:Q", "y:Q"])
    cloud = alt.layer(origin, rays, dots).properties(width=250, height=250)
    lines = alt.Chart(curves).mark_line().encode(
        x=alt.X("alpha:Q", title="centering strength α", axis=alt.Axis(tickCount=5)),
        y=alt.Y("mean_cosine:Q", title="mean pairwise cosine"),
        color=alt.Color("series:N", title=None),
        tooltip=["series:N", "alpha:Q", alt.Tooltip("mean_cosine:Q", format=".3f")])
    marks = alt.Chart(curves).transform_filter(alt.datum.alpha == alpha).mark_point(filled=True, size=90).encode(
        x="alpha:Q", y="mean_cosine:Q", color=alt.Color("series:N", title=None),
        tooltip=["series:N", "alpha:Q", alt.Tooltip("mean_cosine:Q", format=".3f")])
    return alt.hconcat(cloud, alt.layer(lines, marks).properties(width=260, height=250)).add_params(alpha).properties(
        title=title)


def depth_chart(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Each model's depths on the relative-depth axis; a slider picks r and each model's depth
    nearest r is drawn large and labelled."""
    values = sorted(frame["r"].unique())
    r = _slider("relative_depth", values[0], values[-1], round(values[1] - values[0], 6), values[len(values) // 2],
                "relative depth r ")
    now = alt.Chart(frame).transform_filter(alt.datum.r == r)
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("model:N", title=None, sort=None, axis=alt.Axis(labelLimit=320))
    ticks = now.mark_point(filled=True).encode(
        x=x, y=y, size=alt.condition(alt.datum.nearest, alt.value(220), alt.value(25)),
        color=alt.condition(alt.datum.nearest, alt.value("#d2691e"), alt.value(PUBLISHED_COLOR)),
        tooltip=["model:N", "depth:Q", "layers:Q", alt.Tooltip("relative_depth:Q", format=".3f")])
    labels = now.transform_filter(alt.datum.nearest).transform_calculate(
        text="'depth ' + datum.depth + ' of ' + datum.layers").mark_text(dy=-16, fontSize=12).encode(
        x=x, y=y, text="text:N")
    rule = alt.Chart(frame).transform_filter(alt.datum.r == r).mark_rule(
        strokeDash=[5, 4], color="black").encode(x="r:Q")
    return alt.layer(rule, ticks, labels).add_params(r).properties(title=title, width=560, height=alt.Step(60))
