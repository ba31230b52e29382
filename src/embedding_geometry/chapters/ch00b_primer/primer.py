"""The primer's constructions: toy arrays small enough to read, and the page's metrics.

Each toy mirrors a measurement the chapters make on real hidden states (``geometry``,
``anisotropy``); the primer shows it first on vectors a reader can see, then on the model.

    residual_stream(T, D, L, s, seed)  h_0 ~ N(0, I_D) per token, h_l = h_{l−1} + Δ_l, Δ_l ~ N(0, s² I_D)
                                       → [L + 1, T, D], shaped like a model's hidden states
    similarity(A, B, mode)[l]          mean: cos((1/n_a) Σ_i a_{l,i}, (1/n_b) Σ_j b_{l,j});  cls: cos(a_{l,0}, b_{l,0});
                                       maxsim: (1/n_a) Σ_i max_j cos(a_{l,i}, b_{l,j})     (one direction, A → B)
                                       A: [L + 1, n_a, D], B: [L + 1, n_b, D] → [L + 1]
    cosine_to_depth0(H)[l, t]          cos(h_{l,t}, h_{0,t}): how far each token has turned
                                       H: [L + 1, n, D] → [L + 1, n]
    pair_cosines(P, names)[a · b][l]   cos(P_l[a], P_l[b]) for every unordered pair of texts   P: [L + 1, N, D]
    toy_similarities(pair)             the same three for two toy sentences of 2-D tokens (first token = CLS)
    pair_similarities(record)          the three similarities of a two-text ``activations.Activations``: mean
                                       and CLS over all tokens (book/methods.md, Conventions), MaxSim over word
                                       tokens (chapter 2)
    angle_frame(θs, lengths)           u = (1, 0), v = ‖v‖ (cos θ, sin θ) with u · v and cos(u, v)
    elongated_cloud(n, e, seed)        n centred points in 2-D whose covariance is exactly diag(1 + e, 1)
    stretch(X, φ, ε)                   X (I + ε u uᵀ), u = (cos φ, sin φ): each point moves by at most ε‖x‖
    refit_projection(S)                every depth of S projected on a 2-D PCA fitted on that depth alone
    refit_artefact(X, φs, ε)           per φ: the mean step mean_i ‖x'_i − x_i‖ of the points from X to
                                       stretch(X, φ, ε), and ``geometry.pca_steps`` of [X, X'] with fixed
                                       and with refitted axes
    toy_cone(n, offset, seed)          x_i = z_i + offset · (1, 1)/√2, z_i ~ N(0, I_2)        → [n, 2]
    partly_centred(X, α)               X − α x̄,  x̄ = (1/n) Σ_i x_i
    centering_curve(X, αs)             [anisotropy(X − α x̄) for α in αs] (mean pairwise cosine, i ≠ j)
    centred_anisotropy(P, α)[l]        anisotropy(P_l − α P̄_l), each depth centred on its own mean   P: [L + 1, N, D]

The page's numbers come from two functions: ``measure`` (the metrics dict of the results JSON,
its schema in its docstring) and ``exercise_answers`` (the answers to the page's exercises).
The charts that draw these constructions are in :mod:`.charts`, beside this module.

Nothing here mutates its inputs; a zero vector raises (a cosine needs a direction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ...core import geometry
from ...core.corpora import REFERENCE_SENTENCES
from ...studies import anisotropy

if TYPE_CHECKING:
    from ...core.activations import Activations

SimilarityMode = Literal["mean", "cls", "maxsim"]
SIMILARITY_MODES = ("mean", "cls", "maxsim")
SIMILARITY_LABELS = {"mean": "mean pool", "cls": "CLS", "maxsim": "MaxSim (word tokens)"}
"""How the page names each similarity."""
TOY_PAIR: dict[str, tuple[list[str], list[list[float]]]] = {
    "A": (["[CLS]", "cats", "purr"], [[1.0, 0.3], [0.2, 1.0], [0.9, -0.5]]),
    "B": (["[CLS]", "kittens", "sleep", "soundly"], [[1.0, 0.1], [0.3, 0.9], [-0.6, 0.5], [-0.3, -0.9]]),
}
"""Two toy "sentences" of 2-D token states (the first token plays [CLS]) for the pooling section."""
HARD_PAIR = [REFERENCE_SENTENCES["surged"], REFERENCE_SENTENCES["plunged"]]
"""The page's pair when the ``pair`` parameter is None: opposite in meaning, nearly equal in words."""
EASY_PAIR = [REFERENCE_SENTENCES["fox"], REFERENCE_SENTENCES["rag"]]
"""Two unrelated sentences (the third exercise)."""
ANGLES = tuple(range(0, 181, 15))
"""The angles θ (degrees) of the cosine section."""
DIRECTIONS = np.arange(0, 181, 5)
"""The stretch directions φ (degrees) of the PCA section."""
UNIT_STEPS = np.round(np.linspace(0, 1, 21), 2)
"""0, 0.05, …, 1: the centering strengths α, and the relative depths r of the depth slider."""
CLOUD_POINTS, CONE_POINTS = 12, 20
"""Points of the toy cloud (PCA section) and of the toy cone (anisotropy section)."""


# --------------------------------------------------------------------------- hidden states and pooling

def residual_stream(n_tokens: int, width: int, n_layers: int, scale: float = 0.5, seed: int = 0) -> np.ndarray:
    """A toy stack of hidden states: each token starts at a random h_0 and every block adds a
    small random update Δ_l (the residual connection). → [L + 1, T, D]"""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=(1, n_tokens, width))
    updates = rng.normal(scale=scale, size=(n_layers, n_tokens, width))
    return np.cumsum(np.concatenate([start, updates]), axis=0)


def similarity(a: np.ndarray, b: np.ndarray, mode: SimilarityMode = "mean") -> np.ndarray:
    """The similarity of two texts at every depth: the cosine of the means of their tokens
    (mean pools) or of their first tokens (CLS), or MaxSim — for each token of a, its best
    cosine with a token of b, averaged over the tokens of a.
    a: [L + 1, n_a, D], b: [L + 1, n_b, D] → [L + 1]"""
    if mode not in SIMILARITY_MODES:
        raise ValueError(f"mode must be one of {SIMILARITY_MODES}; got {mode!r}")
    if mode == "maxsim":
        return geometry.maxsim(a, b).mean(axis=1)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if mode == "cls":
        return geometry.pair_cosine(a[..., 0, :], b[..., 0, :])
    return geometry.pair_cosine(a.mean(axis=-2), b.mean(axis=-2))


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


def pair_similarities(record: Activations) -> dict[str, np.ndarray]:
    """The similarity of the two texts of ``record`` at every depth, three ways: cosine of the
    mean pools and of the CLS states (all tokens, book/methods.md, Conventions) and MaxSim of the first text's
    word tokens against the second's (chapter 2). → {mode: [L + 1]}"""
    if record.n_texts != 2:
        raise ValueError(f"pair_similarities needs exactly 2 texts; got {record.n_texts}")
    every = np.ones(len(record.tokens), bool)
    a, b = geometry.per_text(record.hidden, record.offsets, every)
    wa, wb = record.word_states()
    return {"mean": similarity(a, b, "mean"), "cls": similarity(a, b, "cls"), "maxsim": similarity(wa, wb, "maxsim")}


def toy_similarities(
        pair: Mapping[str, tuple[Sequence[str], Sequence[Sequence[float]]]] = TOY_PAIR) -> dict[str, float]:
    """``pair_similarities`` for two toy sentences of one depth: mean and CLS over all their
    tokens, MaxSim over the tokens after the first (the word tokens)."""
    a, b = (np.asarray(states, dtype=np.float64)[None] for _, states in pair.values())
    return {"mean": float(similarity(a, b, "mean")[0]), "cls": float(similarity(a, b, "cls")[0]),
            "maxsim": float(similarity(a[:, 1:], b[:, 1:], "maxsim")[0])}


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


# --------------------------------------------------------------------------- the page's numbers

def measure(reference: Activations, labels: Sequence[str], pair: Activations, corpus_pools: np.ndarray, *,
            seed: int = 0, centering: float = 1.0, toy_offset: float = 3.0, toy_elongation: float = 0.02,
            toy_stretch: float = 0.05) -> dict[str, Any]:
    """The primer's metrics (``metrics`` of its results JSON) from three forward passes: the
    reference sentences (``reference``, named by ``labels``), the page's pair, and the mean pools
    [L + 1, N, D] of N corpus sentences; the other arguments are the page's parameters.

    token_cosine_to_depth0  [L + 1]   mean over word tokens of cos(h_{l,t}, h_{0,t})
    relative_depth          [L + 1]   l / L
    toy_cosine              {θ: cos(u, v)} for θ in ANGLES, ‖v‖ = 1 (3 decimals, as drawn)
    reference_pair_cosine   {"a · b": [L + 1]}   cosine of the mean pools of each reference pair
    toy_pooling             {mode: float}        ``toy_similarities()``
    pooling_cosine          {mode: [L + 1]}      ``pair_similarities(pair)``
    toy_pca_steps           {angle, true, fixed, refit: [len(DIRECTIONS)]}   ``refit_artefact`` of
                            a toy cloud of CLOUD_POINTS with ``toy_elongation``, moved by ``toy_stretch``
    pca_step_fixed, pca_step_refit  [L]  ``geometry.pca_steps`` of the reference word tokens
    pca_step_ratio          mean(pca_step_refit) / mean(pca_step_fixed)
    anisotropy              [L + 1]   mean pairwise cosine of the corpus mean pools
    anisotropy_centred      [L + 1]   ``centred_anisotropy(corpus_pools, centering)``
    centering_curve         {alpha: UNIT_STEPS, toy, model_peak_depth, model_last_depth}:
                            ``centering_curve`` of the toy cone (``toy_offset``), and of the mean
                            pools at the most anisotropic depth and at the last
    """
    words = np.concatenate(reference.word_states(), axis=1)
    fixed, refit = geometry.pca_steps(words, "fixed"), geometry.pca_steps(words, "refit")
    unit_v = angle_frame(ANGLES, [1.0]).query("vector == 'v'")
    raw = anisotropy.anisotropy_per_depth(corpus_pools)
    peak = int(np.argmax(raw))
    return {
        "token_cosine_to_depth0": cosine_to_depth0(reference.hidden)[:, reference.word_mask].mean(axis=1),
        "relative_depth": geometry.relative_depth(reference.n_layers),
        "toy_cosine": dict(zip(unit_v["angle"], unit_v["cosine"])),
        "reference_pair_cosine": pair_cosines(reference.mean_pool("all"), labels),
        "toy_pooling": toy_similarities(),
        "pooling_cosine": pair_similarities(pair),
        "toy_pca_steps": refit_artefact(elongated_cloud(CLOUD_POINTS, toy_elongation, seed), DIRECTIONS, toy_stretch),
        "pca_step_fixed": fixed, "pca_step_refit": refit, "pca_step_ratio": refit.mean() / fixed.mean(),
        "anisotropy": raw, "anisotropy_centred": centred_anisotropy(corpus_pools, centering),
        "centering_curve": {"alpha": UNIT_STEPS,
                            "toy": centering_curve(toy_cone(CONE_POINTS, toy_offset, seed), UNIT_STEPS),
                            "model_peak_depth": centering_curve(corpus_pools[peak], UNIT_STEPS),
                            "model_last_depth": centering_curve(corpus_pools[-1], UNIT_STEPS)},
    }


def exercise_answers(metrics: Mapping[str, Any], easy: Activations, corpus_pools: np.ndarray, *,
                     seed: int = 0, toy_stretch: float = 0.05) -> dict[str, Any]:
    """The answers to the primer's exercises, each for the parameter value the exercise sets,
    from ``metrics`` (of ``measure``), the forward pass of EASY_PAIR and the corpus mean pools.

    toy_offset_0                  raw anisotropy of the toy cone with toy_offset = 0
    toy_elongation_0.5_refit_max  largest refitted step of a toy cloud with toy_elongation = 0.5
    toy_elongation_0.5_true_max   its largest true step
    easy_pair                     {mode: last-depth similarity of EASY_PAIR}
    hard_minus_easy               {mode: the page pair's last-depth similarity − the easy pair's}
    widest_gap                    the mode whose hard − easy gap is largest
    centering_0.5_last_depth      a = anisotropy of the last depth's pools minus half their mean
    centering_0.5_share_of_fall   (raw − a) / (raw − full): the share of the full-centering fall
    """
    wide = refit_artefact(elongated_cloud(CLOUD_POINTS, 0.5, seed=seed), DIRECTIONS, toy_stretch)
    easy_pair = {mode: values[-1] for mode, values in pair_similarities(easy).items()}
    gaps = {mode: metrics["pooling_cosine"][mode][-1] - value for mode, value in easy_pair.items()}
    raw, full = metrics["centering_curve"]["model_last_depth"][0], metrics["centering_curve"]["model_last_depth"][-1]
    half = centering_curve(corpus_pools[-1], [0.5])[0]
    return {"toy_offset_0": centering_curve(toy_cone(CONE_POINTS, 0.0, seed=seed), [0.0])[0],
            "toy_elongation_0.5_refit_max": wide["refit"].max(), "toy_elongation_0.5_true_max": wide["true"].max(),
            "easy_pair": easy_pair, "hard_minus_easy": gaps, "widest_gap": max(gaps, key=gaps.get),
            "centering_0.5_last_depth": half, "centering_0.5_share_of_fall": (raw - half) / (raw - full)}
