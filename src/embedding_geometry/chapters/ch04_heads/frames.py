"""Tidy frames for chapter 4's charts of attention heads: per-block series, the distance
histogram, distinct focus tokens, the sensitivity check, and the first text's matrices encoded
small enough to ship every head inline (read by ``charts.context_matrix_explorer``); and, for
the models side by side (``by_model``: model id → its metrics), per-block series on relative
depth, the summed matrices of three blocks, per-head distance histograms, the random-positions
null's draws, and the tables of head classes, their stability and the sensitivity ratios.

Each takes the chapter's metrics dict (``studies.context_similarity.metrics``), several models'
metrics, or a ``Measurement.example``, and returns a DataFrame.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...core.errors import ParameterError
from ...studies.context_similarity import block_means

__all__ = [
    "DISTANCE_BINS",
    "LEVELS",
    "block_means",
    "class_table",
    "depth_frame",
    "distance_frame",
    "distances_by_model",
    "encode_levels",
    "example_frames",
    "head_distance_frame",
    "kinds_by_model",
    "kinds_frame",
    "layer_frame",
    "null_draws_frame",
    "overlap_table",
    "ratio_table",
    "sensitivity_frame",
    "stability_table",
    "summed_frame",
    "unique_focus_frame",
]


def layer_frame(values: dict[str, Sequence[float]]) -> pd.DataFrame:
    """Long frame (layer, value, series) from per-block series of L entries."""
    return pd.concat([pd.DataFrame({"layer": np.arange(1, len(v) + 1), "value": np.asarray(v, float), "series": name})
                      for name, v in values.items()], ignore_index=True)


def kinds_frame(m: dict) -> pd.DataFrame:
    """(layer, kind, share): what the high-attention tokens of each layer are (TOKEN_KINDS)."""
    frame = layer_frame(m["attended_kinds"])
    return frame.rename(columns={"value": "share", "series": "kind"})


def distance_frame(m: dict, layers: Sequence[int]) -> pd.DataFrame:
    """Share of high pairs at each distance d for the given blocks (numbered from 1; labelled
    "block l of L"), with the chance share (T − d) / |P| of a uniformly drawn pair."""
    counts = np.asarray(m["distance_histogram"], float)
    d = np.arange(1, counts.shape[1] + 1)
    chance = (len(d) + 1 - d) / (len(d) + 1 - d).sum()
    frames = [pd.DataFrame({"distance": d, "share": counts[l - 1] / counts[l - 1].sum(),
                            "layer": f"block {l} of {len(counts)}"}) for l in layers]
    return pd.concat(frames + [pd.DataFrame({"distance": d, "share": chance, "layer": "chance"})], ignore_index=True)


def unique_focus_frame(m: dict) -> pd.DataFrame:
    """(layer, distinct, share of texts) from the unique-focus histogram; counts no text had are left out."""
    hist = np.asarray(m["unique_focus_tokens"]["histogram"], float)
    layer, k = np.meshgrid(np.arange(1, hist.shape[0] + 1), np.arange(hist.shape[1]), indexing="ij")
    frame = pd.DataFrame({"layer": layer.ravel(), "distinct": k.ravel(),
                          "share": (hist / hist.sum(axis=1, keepdims=True)).ravel().round(4)})
    return frame[frame["share"] > 0].reset_index(drop=True)


def sensitivity_frame(m: dict) -> pd.DataFrame:
    """(threshold, layer, measure, value) for the sensitivity check."""
    s = m["sensitivity"]
    rows = [{"threshold": f"{t:g}", "layer": l + 1, "measure": name, "value": row[l]}
            for name in ("separator_attention", "mean_pair_distance", "same_sentence_fraction")
            for t, row in zip(s["thresholds"], np.asarray(s[name], dtype=object).tolist())
            for l in range(len(row))]
    return pd.DataFrame(rows).dropna()


LEVELS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
"""64 symbols: a value in [−1, 1] is stored as one character, level k ↦ 2k / 63 − 1."""


def encode_levels(values: np.ndarray) -> str:
    """Values in [−1, 1] as a string of one LEVELS character each (64 levels)."""
    codes = np.rint((np.clip(np.asarray(values, float).ravel(), -1, 1) + 1) / 2 * (len(LEVELS) - 1)).astype(int)
    return "".join(LEVELS[k] for k in codes)


def example_frames(example, size: int = 64) -> dict[str, pd.DataFrame]:
    """The first text's figures (``example``: window, similarity [L, H, T, T], received [L, H, T]),
    small enough to ship every head inline:

    matrices   one row per (layer, head): ``cells`` = S as ⌈T/b⌉² block means (b = ⌈T / size⌉),
               divided by their largest |value| and encoded with :func:`encode_levels`
    received   one row per (layer, head): ``a`` = a_j for every position, rounded to 2 decimals
    tokens     one row per position: piece, sentence, separator
    bounds     positions where a sentence starts (for rules on the matrix)
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        raise ParameterError("matrix_size", "an integer ≥ 2", size)
    n_layers, n_heads, n_tokens, _ = example.similarity.shape
    block = -(-n_tokens // size)
    rows, received = [], []
    for l in range(n_layers):
        for h in range(n_heads):
            cells = block_means(example.similarity[l, h], size)
            top = np.abs(cells).max()
            rows.append({"layer": l + 1, "head": h + 1, "block": block, "side": len(cells),
                         "cells": encode_levels(cells / top if top > 0 else cells)})
            received.append({"layer": l + 1, "head": h + 1, "a": np.round(example.received[l, h], 2).tolist()})
    w = example.window
    starts = np.flatnonzero((w.sentence_ids >= 0) & (np.append(-2, w.sentence_ids[:-1]) != w.sentence_ids))
    return {"matrices": pd.DataFrame(rows), "received": pd.DataFrame(received),
            "tokens": pd.DataFrame({"position": np.arange(n_tokens), "token": w.tokens,
                                    "sentence": w.sentence_ids, "separator": w.separators}),
            "bounds": pd.DataFrame({"position": starts})}


# --------------------------------------------------------------------------- models side by side

def _short(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def _at(metrics: Mapping[str, Any], key: str) -> Any:
    for part in key.split("."):
        metrics = metrics[part]
    return metrics


def depth_frame(by_model: Mapping[str, Mapping[str, Any]], key: str, chance: str | None = None) -> pd.DataFrame:
    """(model, block, relative_depth, value[, chance]): the per-block series at key path ``key``
    of every model, block l at l / L; with ``chance``, that model's chance level (a number at key
    path ``chance``) on every row. Models where the series is None are left out (with none left, a
    frame with no rows: a chart of nothing, where the claims say why)."""
    frames = []
    for model, m in by_model.items():
        values = _at(m, key)
        if values is None:
            continue
        values = np.asarray(values, dtype=float)
        blocks = np.arange(1, len(values) + 1)
        frame = pd.DataFrame({"model": _short(model), "block": blocks, "relative_depth": blocks / len(values),
                              "value": values})
        frames.append(frame if chance is None else frame.assign(chance=float(_at(m, chance))))
    if not frames:
        columns = ["model", "block", "relative_depth", "value"]
        return pd.DataFrame(columns=columns if chance is None else [*columns, "chance"])
    return pd.concat(frames, ignore_index=True)


def distances_by_model(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """:func:`distance_frame` of the first, middle and last block of every model, labelled "first
    block", "middle block", "last block" (and "chance"), with a ``model`` column."""
    frames = []
    for model, m in by_model.items():
        n_layers = len(m["layers"])
        blocks = sorted({1, (n_layers + 1) // 2, n_layers})
        names = dict(zip([f"block {b} of {n_layers}" for b in blocks], ["first block", "middle block", "last block"]))
        frame = distance_frame(m, blocks)
        frames.append(frame.assign(layer=frame["layer"].map(names).fillna(frame["layer"]), model=_short(model)))
    return pd.concat(frames, ignore_index=True)


def kinds_by_model(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """(model, layer, share, kind) of :func:`kinds_frame` for every model."""
    return pd.concat([kinds_frame(m).assign(model=_short(model)) for model, m in by_model.items()], ignore_index=True)


def summed_frame(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per model and recorded block of ``summed_similarity``: its panel label ("MiniLM ·
    block 1 of 6"), side s, and ``cells``, the [s, s] mean matrix divided by its largest |value|
    and encoded with :func:`encode_levels` (read by ``charts.summed_matrices``)."""
    rows = []
    for model, m in by_model.items():
        summed, n_layers = m["summed_similarity"], len(m["layers"])
        for block, matrix in zip(summed["blocks"], np.asarray(summed["matrices"], dtype=float)):
            top = np.abs(matrix).max()
            rows.append({"panel": f"{_short(model)} · block {block} of {n_layers}", "side": len(matrix),
                         "cells": encode_levels(matrix / top if top > 0 else matrix)})
    return pd.DataFrame(rows)


DISTANCE_BINS = (1, 2, 3, 5, 9, 17, 33, 65)
"""Lower edges of the distance bins of :func:`head_distance_frame` (powers of two: 1, 2, 3–4, …, 65+)."""


def head_distance_frame(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """(panel, head, distance, order, share, lift): for the first, middle and last block of every
    model, each head's high pairs binned by distance |i − j| (:data:`DISTANCE_BINS`), as the share
    of that head's high pairs, and that share over a random pair's, Σ_{d in bin} (T − d) / |P|
    (the paper's Fig. 7, one row per head; lift 1: as often as chance; None for a head without
    high pairs)."""
    rows = []
    for model, m in by_model.items():
        counts = np.asarray(m["head_distance_histogram"], dtype=float)  # [L, H, T − 1], d = 1 … T − 1
        n_layers, n_heads, n_d = counts.shape
        edges = [e for e in DISTANCE_BINS if e <= n_d] + [n_d + 1]
        labels = [f"{a}" if b - a == 1 else f"{a}–{b - 1}" for a, b in itertools.pairwise(edges)]
        binned = np.add.reduceat(counts, np.asarray(edges[:-1]) - 1, axis=-1)
        totals = binned.sum(axis=-1, keepdims=True)
        shares = np.divide(binned, totals, out=np.zeros_like(binned), where=totals > 0)
        pairs_at = n_d + 1 - np.arange(1, n_d + 1)  # T − d pairs at distance d
        chance = np.add.reduceat(pairs_at, np.asarray(edges[:-1]) - 1) / pairs_at.sum()
        for block in sorted({1, (n_layers + 1) // 2, n_layers}):
            for h in range(n_heads):
                empty = totals[block - 1, h, 0] == 0
                rows += [{"panel": f"{_short(model)} · block {block} of {n_layers}", "head": h + 1, "distance": label,
                          "order": k, "share": float(shares[block - 1, h, k]),
                          "lift": None if empty else float(shares[block - 1, h, k] / chance[k])}
                         for k, label in enumerate(labels)]
    return pd.DataFrame(rows)


def null_draws_frame(by_model: Mapping[str, Mapping[str, Any]], key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The draws of a null (key path ``key + "_null_draws"``) per model, (model, value), and each
    model's own value (the mean over blocks of the series at ``key``), (model, value)."""
    draws = pd.concat([pd.DataFrame({"model": _short(model), "value": np.asarray(_at(m, key + "_null_draws"), float)})
                       for model, m in by_model.items()], ignore_index=True)
    observed = pd.DataFrame({"model": [_short(model) for model in by_model],
                             "value": [float(np.mean(_at(m, key))) for m in by_model.values()]})
    return draws, observed


def class_table(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Heads per class and blocks with both kinds, one row per model."""
    return pd.DataFrame([{"model": _short(model), "blocks": len(m["layers"]),
                          **{f"{c} heads": int(sum(m["head_classes"][c])) for c in m["head_classes"]},
                          "blocks with both kinds": m["layers_with_both_kinds"]}
                         for model, m in by_model.items()]).set_index("model")


def stability_table(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The head rule on two halves of the texts, one row per model: texts per half, the share of
    heads in the same class, Cohen's κ, Spearman's ρ of each per-head measure between the halves,
    and the blocks with both kinds in each half; then the mean Jaccard overlap of the heads' top
    focus tokens across random subsets and across two topics, each with its chance; "—" where
    undefined (the whole row with fewer than 2 texts, which have no halves)."""
    rows = {}
    for model, m in by_model.items():
        found = m["head_stability"] or {"texts": None, "rank_correlation": {}, "layers_with_both_kinds": None}
        focus = {part: (found.get("focus") or {}).get(part) or {} for part in ("subsets", "topics")}
        rho, halves = found["rank_correlation"], [found["texts"], found["layers_with_both_kinds"]]
        texts, both = (None if h is None else " / ".join(map(str, h)) for h in halves)
        rows[_short(model)] = {"texts per half": texts, "same class": found.get("agreement"),
                               "Cohen's κ": found.get("kappa"), "ρ repeat share": rho.get("repeat_share"),
                               "ρ common focus": rho.get("common_focus_share"),
                               "ρ mean distance": rho.get("mean_pair_distance"),
                               "ρ separator share": rho.get("separator_attention"), "blocks with both kinds": both,
                               **{name: value for part, f in focus.items() for name, value in (
                                   (f"focus J, {part}", f.get("mean")), (f"chance, {part}", f.get("chance_all")))}}
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("model").astype(object)
    return frame.where(frame.notna(), "—")


def ratio_table(by_model: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The last block's mean distance over the first block's at each sensitivity threshold t,
    one column per model ("—" where undefined)."""
    columns = {}
    for model, m in by_model.items():
        s = m["sensitivity"]
        ratios = s["distance_last_over_first"] or [None] * len(s["thresholds"])
        columns[_short(model)] = pd.Series(ratios, index=pd.Index(s["thresholds"], name="threshold t"), dtype=object)
    frame = pd.DataFrame(columns)
    return frame.where(frame.notna(), "—")


def overlap_table(by_model: Mapping[str, Mapping[str, Any]], key: str = "attention_overlap") -> pd.DataFrame:
    """Context similarity against attention (``attention_overlap``) or against its cosine form
    (``cosine_overlap``), one row per model and block: the overlap share of the block and its
    lowest and highest head, and the same for Spearman's ρ."""
    frames = {}
    for model, m in by_model.items():
        found = m[key]
        share, rank = np.asarray(found["head_share"], dtype=float), np.asarray(found["head_rank"], dtype=float)
        frames[_short(model)] = pd.DataFrame(
            {"overlap share": found["share"], "lowest head": share.min(axis=1), "highest head": share.max(axis=1),
             "mean ρ": found["rank"], "lowest head ρ": rank.min(axis=1), "highest head ρ": rank.max(axis=1)},
            index=pd.RangeIndex(1, len(share) + 1, name="block"))
    return pd.concat(frames, names=["model"])
