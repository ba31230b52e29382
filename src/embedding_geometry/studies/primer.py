"""The primer's constructions: toy arrays small enough to read, and the charts that let a reader move them.

Each toy mirrors a measurement the chapters make on real hidden states (``geometry``,
``anisotropy``); the primer shows it first on vectors a reader can see, then on the model.

    residual_stream(T, D, L, s, seed)  h_0 ~ N(0, I_D) per token, h_l = h_{l−1} + Δ_l, Δ_l ~ N(0, s² I_D)
                                       → [L + 1, T, D], shaped like a model's hidden states
    pool(S, mode)                      mean: (1/n) Σ_i S[..., i, :];  cls: S[..., 0, :]      S: [..., n, D] → [..., D]
    similarity(A, B, mode)[l]          mean, cls: cos(pool(A_l), pool(B_l));
                                       maxsim: (1/n_a) Σ_i max_j cos(a_{l,i}, b_{l,j})     (one direction, A → B)
                                       A: [L + 1, n_a, D], B: [L + 1, n_b, D] → [L + 1]
    cosine_to_depth0(H)[l, t]          cos(h_{l,t}, h_{0,t}): how far each token has turned   H: [L + 1, n, D] → [L + 1, n]
    pair_cosines(P, names)[a · b][l]   cos(P_l[a], P_l[b]) for every unordered pair of texts   P: [L + 1, N, D]
    toy_similarities(pair)             the same three for two toy sentences of 2-D tokens (first token = CLS)
    pair_similarities(record)          the three similarities of a two-text ``activations.Activations``: mean
                                       and CLS over all tokens (METHODS.md §0), MaxSim over word tokens (§2)
    elongated_cloud(n, e, seed)        n centred points in 2-D whose covariance is exactly diag(1 + e, 1)
    stretch(X, φ, ε)                   X (I + ε u uᵀ), u = (cos φ, sin φ): each point moves by at most ε‖x‖
    refit_artefact(X, φs, ε)           per φ: the mean step mean_i ‖x'_i − x_i‖ of the points from X to
                                       stretch(X, φ, ε), and ``geometry.pca_steps`` of [X, X'] with fixed
                                       and with refitted axes
    toy_cone(n, offset, seed)          x_i = z_i + offset · (1, 1)/√2, z_i ~ N(0, I_2)        → [n, 2]
    partly_centred(X, α)               X − α x̄,  x̄ = (1/n) Σ_i x_i
    centering_curve(X, αs)              [anisotropy(X − α x̄) for α in αs] (mean pairwise cosine, i ≠ j)
    centred_anisotropy(P, α)[l]        anisotropy(P_l − α P̄_l), each depth centred on its own mean   P: [L + 1, N, D]
    depth_grid(Ls, rs)                 per model of L blocks, its depths l = 0..L at r = l / L, and
                                       for each slider value r whether l is the depth nearest r

Nothing here mutates its inputs; a zero vector raises (a cosine needs a direction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

import altair as alt
import numpy as np
import pandas as pd

from . import anisotropy
from ..book import charts
from ..core import geometry
from ..core.errors import ParameterError

PoolMode = Literal["mean", "cls"]
POOL_MODES = ("mean", "cls")
SimilarityMode = Literal["mean", "cls", "maxsim"]
SIMILARITY_MODES = ("mean", "cls", "maxsim")
TOY_PAIR: dict[str, tuple[list[str], list[list[float]]]] = {
    "A": (["[CLS]", "cats", "purr"], [[1.0, 0.3], [0.2, 1.0], [0.9, -0.5]]),
    "B": (["[CLS]", "kittens", "sleep", "soundly"], [[1.0, 0.1], [0.3, 0.9], [-0.6, 0.5], [-0.3, -0.9]]),
}
"""Two toy "sentences" of 2-D token states (the first token plays [CLS]) for the pooling section."""
VIEWS = {"fixed": "fixed axes (one PCA, fitted at depth 0)", "refit": "refitted axes (a new PCA per depth)"}


# --------------------------------------------------------------------------- hidden states and pooling

def residual_stream(n_tokens: int, width: int, n_layers: int, scale: float = 0.5, seed: int = 0) -> np.ndarray:
    """A toy stack of hidden states: each token starts at a random h_0 and every block adds a
    small random update Δ_l (the residual connection). → [L + 1, T, D]"""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=(1, n_tokens, width))
    updates = rng.normal(scale=scale, size=(n_layers, n_tokens, width))
    return np.cumsum(np.concatenate([start, updates]), axis=0)


def pool(states: np.ndarray, mode: PoolMode = "mean") -> np.ndarray:
    """One vector per text from its token states [..., n, D]: the mean of the tokens, or the
    first token (CLS). → [..., D]"""
    if mode not in POOL_MODES:
        raise ValueError(f"mode must be one of {POOL_MODES}; got {mode!r}")
    states = np.asarray(states, dtype=np.float64)
    return states.mean(axis=-2) if mode == "mean" else states[..., 0, :]


def similarity(a: np.ndarray, b: np.ndarray, mode: SimilarityMode = "mean") -> np.ndarray:
    """The similarity of two texts at every depth: the cosine of their mean pools or CLS
    states, or MaxSim — for each token of a, its best cosine with a token of b, averaged over
    the tokens of a. a: [L + 1, n_a, D], b: [L + 1, n_b, D] → [L + 1]"""
    if mode not in SIMILARITY_MODES:
        raise ValueError(f"mode must be one of {SIMILARITY_MODES}; got {mode!r}")
    if mode == "maxsim":
        return geometry.maxsim(a, b).mean(axis=1)
    return geometry.pair_cosine(pool(a, mode), pool(b, mode))


def cosine_to_depth0(states: np.ndarray) -> np.ndarray:
    """cos(h_{l,t}, h_{0,t}) for every depth l and token t. states: [L + 1, n, D] → [L + 1, n]"""
    states = np.asarray(states, dtype=np.float64)
    return geometry.pair_cosine(states, states[:1])


def states_table(states: np.ndarray, tokens: Sequence[str]) -> pd.DataFrame:
    """A small stack [L + 1, T, D] as a table: one row per (depth, token), one column per dimension."""
    states = np.asarray(states, dtype=np.float64)
    index = pd.MultiIndex.from_product([range(states.shape[0]), list(tokens)], names=["depth", "token"])
    return pd.DataFrame(states.reshape(-1, states.shape[-1]), index=index,
                        columns=[f"d{i}" for i in range(states.shape[-1])]).round(2)


def pair_cosines(pools: np.ndarray, names: Sequence[str]) -> dict[str, np.ndarray]:
    """cos(P_l[a], P_l[b]) at every depth for every unordered pair (a, b) of the N texts, keyed
    "a · b". pools: [L + 1, N, D] → {pair: [L + 1]}"""
    pools = np.asarray(pools, dtype=np.float64)
    return {f"{names[a]} · {names[b]}": geometry.pair_cosine(pools[:, a], pools[:, b])
            for a, b in combinations(range(len(names)), 2)}


def rows_frame(series: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Per-depth series as the long frame (row, depth, value) of ``charts.depth_heatmap``."""
    return pd.DataFrame([{"row": name, "depth": depth, "value": round(float(v), 4)}
                         for name, values in series.items() for depth, v in enumerate(values)])


def pair_similarities(record) -> dict[str, np.ndarray]:
    """The similarity of the two texts of ``record`` (an ``activations.Activations``) at every
    depth, three ways: cosine of the mean pools and of the CLS states (all tokens, METHODS.md
    §0) and MaxSim of the first text's word tokens against the second's (§2). → {mode: [L + 1]}"""
    if record.n_texts != 2:
        raise ValueError(f"pair_similarities needs exactly 2 texts; got {record.n_texts}")
    every = np.ones(len(record.tokens), bool)
    a, b = geometry.per_text(record.hidden, record.offsets, every)
    wa, wb = geometry.per_text(record.hidden, record.offsets, record.word_mask)
    return {"mean": similarity(a, b, "mean"), "cls": similarity(a, b, "cls"), "maxsim": similarity(wa, wb, "maxsim")}


def toy_similarities(pair: Mapping[str, tuple[Sequence[str], Sequence[Sequence[float]]]] = TOY_PAIR) -> dict[str, float]:
    """``pair_similarities`` for two toy sentences of one depth: mean and CLS over all their
    tokens, MaxSim over the tokens after the first (the word tokens)."""
    a, b = (np.asarray(states, dtype=np.float64)[None] for _, states in pair.values())
    return {"mean": float(similarity(a, b, "mean")[0]), "cls": float(similarity(a, b, "cls")[0]),
            "maxsim": float(similarity(a[:, 1:], b[:, 1:], "maxsim")[0])}


def toy_pair_frame(pair: Mapping[str, tuple[Sequence[str], Sequence[Sequence[float]]]] = TOY_PAIR) -> pd.DataFrame:
    """The toy sentences' tokens and each sentence's mean pool as one frame (sentence, token,
    kind, x, y); the first token of each sentence is its CLS."""
    rows = []
    for name, (tokens, states) in pair.items():
        states = np.asarray(states, dtype=np.float64)
        rows += [{"sentence": name, "token": t, "kind": "CLS" if i == 0 else "token", "x": x, "y": y}
                 for i, (t, (x, y)) in enumerate(zip(tokens, states))]
        x, y = pool(states, "mean")
        rows.append({"sentence": name, "token": f"mean of {name}", "kind": "mean pool", "x": x, "y": y})
    return pd.DataFrame(rows).round(3)


def angle_frame(angles: Sequence[float], lengths: Sequence[float]) -> pd.DataFrame:
    """Two 2-D vectors per (angle θ in degrees, length ‖v‖): u = (1, 0) and v = ‖v‖ (cos θ, sin θ),
    with their dot product and cosine (one row per vector, the numbers repeated on both rows)."""
    rows = []
    for theta in angles:
        for length in lengths:
            v = length * np.array([np.cos(np.radians(theta)), np.sin(np.radians(theta))])
            u = np.array([1.0, 0.0])
            common = {"angle": float(theta), "length": float(length), "dot": round(float(u @ v), 3),
                      "cosine": round(geometry.cosine(u, v), 3)}
            rows += [{**common, "vector": "u", "x": 1.0, "y": 0.0},
                     {**common, "vector": "v", "x": round(float(v[0]), 3), "y": round(float(v[1]), 3)}]
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- PCA: fixed vs refitted axes

def elongated_cloud(n: int, elongation: float, seed: int = 0) -> np.ndarray:
    """n centred 2-D points whose sample covariance is exactly diag(1 + e, 1): their first
    principal axis is x, and the variances along x and y differ by e. → [n, 2]"""
    if n < 3:
        raise ValueError(f"an elongated cloud needs at least 3 points; got {n}")
    if elongation <= 0:
        raise ValueError(f"elongation must be > 0 (at 0 the principal axes are undefined); got {elongation}")
    z = np.random.default_rng(seed).normal(size=(n, 2))
    z -= z.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(z, rowvar=False))
    white = z @ vectors @ np.diag(values ** -0.5) @ vectors.T  # sample covariance exactly I
    return white * np.sqrt([1 + elongation, 1.0])


def stretch(points: np.ndarray, degrees: float, amount: float) -> np.ndarray:
    """The points stretched by a factor 1 + ε along the direction at ``degrees``:
    X (I + ε u uᵀ), u = (cos φ, sin φ). A small ε moves every point only a little. → [n, 2]"""
    u = np.array([np.cos(np.radians(degrees)), np.sin(np.radians(degrees))])
    return np.asarray(points, dtype=np.float64) @ (np.eye(2) + amount * np.outer(u, u))


def refit_projection(states: np.ndarray) -> np.ndarray:
    """Every depth projected with a 2-D PCA fitted on that depth alone (the refitted view of
    ``geometry.pca_steps``). states: [L + 1, n, D] → [L + 1, n, 2]"""
    return np.stack([geometry.pca_projection(layer[None], 0)[0][0] for layer in np.asarray(states)])


def refit_artefact(points: np.ndarray, angles: Sequence[float], amount: float) -> dict[str, np.ndarray]:
    """For each stretch direction φ: how far the points really move from X to stretch(X, φ, ε)
    (``true``: mean_i ‖x'_i − x_i‖), and the mean step ``geometry.pca_steps`` reports for the
    two depths [X, X'] with fixed and with refitted axes."""
    steps = {"angle": np.asarray(angles, dtype=float), "true": [], "fixed": [], "refit": []}
    for phi in angles:
        moved = stretch(points, phi, amount)
        steps["true"].append(np.linalg.norm(moved - points, axis=1).mean())
        for axes in ("fixed", "refit"):
            steps[axes].append(geometry.pca_steps(np.stack([points, moved]), axes)[0])
    return {key: np.asarray(value, dtype=float) for key, value in steps.items()}


def artefact_frames(points: np.ndarray, angles: Sequence[float], amount: float) -> dict[str, pd.DataFrame]:
    """What the artefact chart draws: ``points`` — per φ, view and point its 2-D position at
    depth 0 (x0, y0) and depth 1 (x1, y1); ``steps`` — the mean step per φ and view."""
    rows = []
    for phi in angles:
        states = np.stack([points, stretch(points, phi, amount)])
        for view, coords in (("fixed", geometry.pca_projection(states, 0)[0]), ("refit", refit_projection(states))):
            rows += [{"angle": float(phi), "view": VIEWS[view], "point": i, "x0": x0, "y0": y0, "x1": x1, "y1": y1}
                     for i, ((x0, y0), (x1, y1)) in enumerate(zip(coords[0], coords[1]))]
    steps = refit_artefact(points, angles, amount)
    step_rows = [{"angle": phi, "view": VIEWS[view], "step": steps[view][i]}
                 for view in VIEWS for i, phi in enumerate(steps["angle"])]
    return {"points": pd.DataFrame(rows).round(3), "steps": pd.DataFrame(step_rows).round(4)}


# --------------------------------------------------------------------------- anisotropy and centering

def toy_cone(n: int, offset: float, seed: int = 0) -> np.ndarray:
    """n points of a 2-D standard normal cloud shifted by ``offset`` along the diagonal
    (1, 1)/√2: a shared offset is what makes a set of vectors a cone. → [n, 2]"""
    return np.random.default_rng(seed).normal(size=(n, 2)) + offset * np.array([1.0, 1.0]) / np.sqrt(2)


def partly_centred(x: np.ndarray, alpha: float) -> np.ndarray:
    """X − α x̄: α = 0 leaves the vectors alone, α = 1 subtracts their whole mean."""
    x = np.asarray(x, dtype=np.float64)
    return x - alpha * x.mean(axis=0)


def centering_curve(x: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
    """Mean pairwise cosine (``anisotropy.anisotropy``) of X − α x̄ for every α. → [len(alphas)]"""
    return np.array([anisotropy.anisotropy(partly_centred(x, alpha)) for alpha in alphas])


def centred_anisotropy(pools: np.ndarray, alpha: float) -> np.ndarray:
    """anisotropy(P_l − α P̄_l) at every depth, each depth centred on its own mean.
    pools: [L + 1, N, D] → [L + 1]"""
    return np.array([anisotropy.anisotropy(partly_centred(layer, alpha)) for layer in np.asarray(pools)])


def centering_frames(toy: np.ndarray, curves: Mapping[str, Sequence[float]], alphas: Sequence[float]) -> dict[str, pd.DataFrame]:
    """What the centering chart draws: ``points`` — the toy vectors at every α; ``curves`` —
    mean cosine against α, one series per entry of ``curves``."""
    points = pd.DataFrame([{"alpha": float(a), "point": i, "x": x, "y": y}
                           for a in alphas for i, (x, y) in enumerate(partly_centred(toy, a))])
    lines = pd.DataFrame([{"alpha": float(a), "series": name, "mean_cosine": float(v)}
                          for name, values in curves.items() for a, v in zip(alphas, values)])
    return {"points": points.round(3), "curves": lines.round(4)}


# --------------------------------------------------------------------------- relative depth

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


# --------------------------------------------------------------------------- parameters

def sentence_pair(name: str, value: Any) -> list[str]:
    """Parameter rule: None, or exactly two different non-empty sentences."""
    if value is None:
        return None
    ok = (isinstance(value, (list, tuple)) and len(value) == 2 and len(set(value)) == 2
          and all(isinstance(s, str) and s.strip() for s in value))
    if not ok:
        raise ParameterError(name, "None or a list of two different non-empty sentences", value)
    return list(value)


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
    angle = _slider("angle", angles[0], angles[-1], angles[1] - angles[0], angles[len(angles) // 3], "angle θ (degrees) ")
    length = _slider("length", lengths[0], lengths[-1], lengths[1] - lengths[0], lengths[0], "length ‖v‖ ")
    now = alt.Chart(frame).transform_filter((alt.datum.angle == angle) & (alt.datum.length == length))
    reach = float(max(lengths)) * 1.1
    x_scale, y_scale = alt.Scale(domain=[-reach, reach]), alt.Scale(domain=[-0.2 * reach, reach])
    x = alt.X("x:Q", title="dimension 1", scale=x_scale)
    y = alt.Y("y:Q", title="dimension 2", scale=y_scale)
    color = alt.Color("vector:N", title=None)
    arrows = _from_origin(now).mark_rule(strokeWidth=3).encode(
        x=alt.X("origin:Q", scale=x_scale, title="dimension 1"), y=alt.Y("origin:Q", scale=y_scale, title="dimension 2"),
        x2="x:Q", y2="y:Q", color=color)
    tips = now.mark_point(filled=True, size=90).encode(x=x, y=y, color=color, tooltip=["vector:N", "x:Q", "y:Q"])
    label = now.transform_filter(alt.datum.vector == "v").transform_calculate(
        text="'u·v = ' + format(datum.dot, '.3f') + '    cos(u, v) = ' + format(datum.cosine, '.3f')").mark_text(
        align="left", fontSize=15, fontWeight="bold").encode(x=alt.value(8), y=alt.value(14), text="text:N")
    return alt.layer(arrows, tips, label).add_params(angle, length).properties(title=title, width=420, height=280)


def pair_scatter(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Toy token states (from ``toy_pair_frame``) as labelled points, coloured by sentence;
    CLS tokens are squares and mean pools diamonds, each joined to the origin by a line."""
    reach = float(frame[["x", "y"]].abs().max().max()) * 1.25
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    base = alt.Chart(frame).encode(x=alt.X("x:Q", scale=scale, title="dimension 1"),
                                   y=alt.Y("y:Q", scale=scale, title="dimension 2"),
                                   color=alt.Color("sentence:N", title="sentence"))
    shape = alt.Shape("kind:N", title=None, scale=alt.Scale(domain=["token", "CLS", "mean pool"],
                                                           range=["circle", "square", "diamond"]))
    rays = _from_origin(base).mark_rule(opacity=0.5).encode(x="origin:Q", y="origin:Q", x2="x:Q", y2="y:Q")
    points = base.mark_point(filled=True, size=110).encode(shape=shape, tooltip=["sentence:N", "token:N", "kind:N", "x:Q", "y:Q"])
    labels = base.mark_text(align="left", dx=8, dy=-8, fontSize=12).encode(text="token:N")
    return alt.layer(rays, points, labels).properties(title=title, width=340, height=340)


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
                x=alt.X("x0:Q", scale=scale, title="PC1"), y=alt.Y("y0:Q", scale=scale, title="PC2"), x2="x1:Q", y2="y1:Q", color=color),
            base.mark_point(filled=False, size=60).encode(x="x0:Q", y="y0:Q", color=color, tooltip=tooltip),
            base.mark_point(filled=True, size=60).encode(x="x1:Q", y="y1:Q", color=color, tooltip=tooltip),
        ).properties(width=260, height=260, title=view)

    views = alt.hconcat(*(panel(view) for view in VIEWS.values()))
    lines = alt.Chart(steps).mark_line(point=True).encode(
        x=alt.X("angle:Q", title="stretch direction φ (degrees)"), y=alt.Y("step:Q", title="mean step (PCA units)"),
        color=alt.Color("view:N", title=None, sort=list(VIEWS.values())),
        tooltip=["view:N", "angle:Q", alt.Tooltip("step:Q", format=".3f")])
    rule = alt.Chart(steps).transform_filter(alt.datum.angle == phi).mark_rule(color=charts.PUBLISHED_COLOR, strokeDash=[5, 4]).encode(x="angle:Q")
    return alt.vconcat(views, alt.layer(lines, rule).properties(width=560, height=180)).add_params(phi).resolve_scale(
        color="independent").properties(title=title)


def centering_chart(frames: Mapping[str, pd.DataFrame], title: str = "") -> alt.HConcatChart:
    """The toy vectors after subtracting α times their mean (left; the cross marks the origin)
    and the mean pairwise cosine against α (right), at the α a slider picks."""
    points, curves = frames["points"], frames["curves"]
    alphas = sorted(points["alpha"].unique())
    alpha = _slider("centering", alphas[0], alphas[-1], round(alphas[1] - alphas[0], 6), alphas[0], "centering strength α ")
    reach = float(points[["x", "y"]].abs().max().max()) * 1.1
    scale = alt.Scale(domain=[-reach, reach], nice=False)
    now = alt.Chart(points).transform_filter(alt.datum.alpha == alpha)
    origin = alt.Chart(pd.DataFrame({"x": [0.0], "y": [0.0]})).mark_point(shape="cross", size=300, color="black", filled=True).encode(
        x=alt.X("x:Q", scale=scale, title="dimension 1"), y=alt.Y("y:Q", scale=scale, title="dimension 2"))
    rays = _from_origin(now).mark_rule(opacity=0.35).encode(x="origin:Q", y="origin:Q", x2="x:Q", y2="y:Q")
    dots = now.mark_point(filled=True, size=50).encode(x="x:Q", y="y:Q", tooltip=["point:N", "x:Q", "y:Q"])
    cloud = alt.layer(origin, rays, dots).properties(width=250, height=250)
    lines = alt.Chart(curves).mark_line().encode(
        x=alt.X("alpha:Q", title="centering strength α", axis=alt.Axis(tickCount=5)),
        y=alt.Y("mean_cosine:Q", title="mean pairwise cosine"),
        color=alt.Color("series:N", title=None), tooltip=["series:N", "alpha:Q", alt.Tooltip("mean_cosine:Q", format=".3f")])
    marks = alt.Chart(curves).transform_filter(alt.datum.alpha == alpha).mark_point(filled=True, size=90).encode(
        x="alpha:Q", y="mean_cosine:Q", color=alt.Color("series:N", title=None),
        tooltip=["series:N", "alpha:Q", alt.Tooltip("mean_cosine:Q", format=".3f")])
    return alt.hconcat(cloud, alt.layer(lines, marks).properties(width=260, height=250)).add_params(alpha).properties(title=title)


def depth_chart(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Each model's depths on the relative-depth axis; a slider picks r and each model's depth
    nearest r is drawn large and labelled."""
    values = sorted(frame["r"].unique())
    r = _slider("relative_depth", values[0], values[-1], round(values[1] - values[0], 6), values[len(values) // 2], "relative depth r ")
    now = alt.Chart(frame).transform_filter(alt.datum.r == r)
    x = alt.X("relative_depth:Q", title="relative depth l / L", scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("model:N", title=None, sort=None, axis=alt.Axis(labelLimit=320))
    ticks = now.mark_point(filled=True).encode(
        x=x, y=y, size=alt.condition(alt.datum.nearest, alt.value(220), alt.value(25)),
        color=alt.condition(alt.datum.nearest, alt.value("#d2691e"), alt.value(charts.PUBLISHED_COLOR)),
        tooltip=["model:N", "depth:Q", "layers:Q", alt.Tooltip("relative_depth:Q", format=".3f")])
    labels = now.transform_filter(alt.datum.nearest).transform_calculate(
        text="'depth ' + datum.depth + ' of ' + datum.layers").mark_text(dy=-16, fontSize=12).encode(x=x, y=y, text="text:N")
    rule = alt.Chart(frame).transform_filter(alt.datum.r == r).mark_rule(strokeDash=[5, 4], color="black").encode(x="r:Q")
    return alt.layer(rule, ticks, labels).add_params(r).properties(title=title, width=560, height=alt.Step(60))
