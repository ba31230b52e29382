"""Attention-head context similarity, the study of chapter 4 (the book's Methods page, section
``methods-heads``; after Halevi et al., arXiv 2512.21956): streamed batches of T-token texts in,
the chapter's metrics dict out.

With S, its high pairs, their distance d, the focus position and a_j as in
:mod:`~embedding_geometry.studies.context_matrices`, per block l, pooled over its H heads and
all texts (counts are summed first, then divided):

    mean_pair_distance[l]      = Σ d(i, j) / #high pairs
    same_sentence_fraction[l]  = #high pairs whose tokens lie in one sentence / #high pairs
    unique_focus_tokens[l]     = histogram over texts of #distinct focus positions among the H heads
    separator_attention[l]     = #{j : a_j ≥ τ, j a separator} / #{j : a_j ≥ τ}

A *separator* is the closing [SEP] or the final ``.``, ``!`` or ``?`` of a whole sentence
(:class:`~embedding_geometry.core.windows.Window`); special tokens belong to no sentence.

Everything is a count or a sum, so one batch's statistics fold into running totals
(:class:`ContextStats` supports ``+``): :func:`measure` folds the batches that
:func:`embedding_geometry.core.streaming.stream` captures, and its memory does not grow with the
number of texts beyond a few numbers per text, kept for the claims' intervals. :func:`metrics`
turns the totals into the metrics dict (its keys are listed there); :func:`head_table` sorts the
heads into classes by the chapter's stated rule.

**Per-unit values** (``per_unit``; the unit is a text, for the bootstrap intervals of
``book.intervals``). Each pooled ratio above is Σ_texts numerator / Σ_texts denominator, so it
is the ratio of the means of two per-text arrays [n_texts, L], and a resample of texts recomputes
it exactly; ``unique_focus_fraction`` is the plain mean of its per-text values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..core.errors import ParameterError
from ..core.streaming import Captured
from ..core.windows import TextRecord, Window
from .context_matrices import attention_received, context_similarity
from .context_stats import TEXT_ROWS, TOKEN_KINDS, ContextStats, Settings, TextBatch, TextRows, batch_statistics

__all__ = ["HEAD_CLASSES", "TEXT_ROWS", "TOKEN_KINDS", "ContextStats", "Example", "Measurement", "Settings", "TextBatch",
           "TextRows", "at_attention_threshold", "at_quantiles", "batch_statistics", "class_totals", "head_table",
           "last_over_first", "measure", "metrics"]

HEAD_CLASSES = ("repetition", "common-token", "other")


# --------------------------------------------------------------------------- the fold over batches

@dataclass(frozen=True)
class Example:
    """The first text, kept whole for the figures: S_{l,h} [L, H, T, T] and a_j [L, H, T]."""

    window: Window
    similarity: np.ndarray
    received: np.ndarray

    @classmethod
    def of(cls, captured: Captured) -> Example:
        """The first window of a captured batch."""
        return cls(window=captured.windows[0],
                   similarity=np.stack([context_similarity(o[0].swapaxes(0, 1)) for o in captured.head_out]
                                       ).astype(np.float32),
                   received=np.stack([attention_received(m[0]) for m in captured.pattern]).astype(np.float32))


@dataclass(frozen=True)
class Measurement:
    stats: ContextStats
    texts: TextRecord
    example: Example


def measure(batches: Iterable[Captured], settings: Settings) -> Measurement:
    """Fold the batches: each is reduced to :class:`ContextStats`, added to the running totals
    in place and dropped before the next is captured, so that two batches' matrices are never
    held at once. Only the first text's matrices are kept (for the figures)."""
    record, stats, example = TextRecord(), None, None
    for captured in batches:
        for window in captured.windows:
            record.add(window)
        part = batch_statistics(captured.head_out, captured.pattern, TextBatch.of(captured.windows), settings)
        if stats is None:
            stats = part
        else:
            stats += part
        example = example or Example.of(captured)
        del captured, part  # else the loop holds them while the stream captures the next batch
    if stats is None:
        raise ParameterError("n_texts", "at least 1 text", 0)
    return Measurement(stats=stats, texts=record, example=example)


def at_quantiles(batches: Sequence[Captured], settings: Settings, qs: Iterable[float]) -> dict[float, dict]:
    """:func:`metrics` of the same batches with each q of ``qs`` as the high-pair quantile (the
    sensitivity check at τ only, as it does not depend on q)."""
    chosen = {q: replace(settings, q=q, sensitivity_thresholds=(settings.attention_threshold,)) for q in qs}
    return {q: metrics(measure(batches, s).stats, s) for q, s in chosen.items()}


# --------------------------------------------------------------------------- metrics

def metrics(stats: ContextStats, settings: Settings) -> dict:
    """The chapter's metrics (the Methods page's keys; per-block lists have L entries, index 0 is block 1):

    layers, n_texts                  1 … L, and the number of texts
    mean_pair_distance               [L] and ``_chance``, (T + 1) / 3 for a uniformly drawn pair of P
    same_sentence_fraction           [L], ``same_sentence_chance`` and ``same_sentence_lift`` [L] (their ratio)
    distance_histogram               [L, T − 1] high pairs at d = 1 … T − 1
    unique_focus_tokens              {histogram [L, H + 1], mean [L]}; ``unique_focus_fraction`` = mean / H
    unique_focus_fraction_null       the random-positions null: E[distinct positions] / H if each head's
                                     focus were a uniformly random position, T (1 − (1 − 1/T)^H) / H
    unique_focus_ids_fraction        [L] the same count of distinct *token ids* at the focus positions / H,
                                     and ``_null``: E[distinct ids] / H from each text's id counts
    separator_attention              [L]; ``separator_share``: separators among all tokens (the
                                     uniform-attention null: every a_j = 1, so every token is attended)
    attended_kinds                   {kind: [L]} shares of the high-attention tokens (TOKEN_KINDS)
    repeat_chance                    share of all pairs that join two equal word tokens
    heads                            {column: [L][H]} of :func:`head_table`
    head_classes                     {class: [L]} heads per class; ``layers_with_both_kinds``
    sensitivity                      per threshold t [K] and block [K, L]: separator_attention (a_j ≥ t),
                                     mean_pair_distance, same_sentence_fraction and
                                     high_pairs_per_matrix (S_ij ≥ t · max S), and
                                     distance_last_over_first [K] (None when a ratio is undefined)
                                     and its largest entry, max_distance_last_over_first, at
                                     worst_threshold, whose mean_pair_distance row is distance_at_worst [L]
    per_unit                         per-text values [n_texts, L] (see the module docstring):
                                     high_pairs, mean_pair_distance.distance, same_sentence_fraction.same,
                                     separator_attention.separators and .attended, unique_focus_fraction,
                                     unique_focus_ids_fraction, sensitivity.distance_at_worst.distance
                                     and .pairs
    """
    n_layers, n_heads, n_tokens = stats.shape
    pairs = stats.head_pairs.sum(axis=1)
    d = np.arange(1, n_tokens)
    chance_counts = n_tokens - d  # pairs of P at distance d
    unique_mean = stats.unique_focus @ np.arange(n_heads + 1) / stats.texts
    same = stats.head_same_sentence.sum(axis=1) / pairs
    same_chance = stats.all_same_sentence / stats.all_pairs
    heads = head_table(stats, settings)
    per_layer = pd.crosstab(heads["layer"], heads["class"]).reindex(columns=HEAD_CLASSES, fill_value=0)
    per_head = {column: heads.pivot(index="layer", columns="head", values=column).to_numpy().tolist()
                for column in ("repeat_share", "common_focus_share", "mean_pair_distance",
                               "same_sentence_fraction", "separator_attention", "class")}
    kinds = stats.attended_kinds / stats.attended_kinds.sum(axis=1, keepdims=True)
    rows = stats.text_rows()
    sensitivity = _sensitivity(stats, settings)
    return {
        "layers": list(range(1, n_layers + 1)),
        "n_texts": stats.texts,
        "mean_pair_distance": stats.head_distance.sum(axis=1) / pairs,
        "mean_pair_distance_chance": float(d @ chance_counts / chance_counts.sum()),
        "same_sentence_fraction": same,
        "same_sentence_chance": same_chance,
        "same_sentence_lift": same / same_chance if same_chance > 0 else None,
        "distance_histogram": stats.distance_counts[:, 1:],
        "unique_focus_tokens": {"histogram": stats.unique_focus, "mean": unique_mean},
        "unique_focus_fraction": unique_mean / n_heads,
        "unique_focus_fraction_null": float(rows["focus_null"].mean() / n_heads),
        "unique_focus_ids_fraction": rows["distinct_focus_ids"].mean(axis=0) / n_heads,
        "unique_focus_ids_fraction_null": float(rows["focus_ids_null"].mean() / n_heads),
        "separator_attention": stats.head_attended_separators.sum(axis=1) / stats.head_attended.sum(axis=1),
        "separator_share": stats.separators / stats.tokens,
        "attended_kinds": dict(zip(TOKEN_KINDS, kinds.T)),
        "repeat_chance": stats.all_repeats / stats.all_pairs,
        "heads": per_head,
        "head_classes": {c: per_layer[c].tolist() for c in HEAD_CLASSES},
        "layers_with_both_kinds": int(((per_layer["repetition"] > 0) & (per_layer["common-token"] > 0)).sum()),
        "sensitivity": sensitivity,
        "per_unit": _per_unit(rows, n_heads, _worst(sensitivity["mean_pair_distance"])),
    }


def _per_unit(rows: dict[str, np.ndarray], n_heads: int, worst: int | None) -> dict[str, np.ndarray]:
    """The per-text values behind the claims' metrics (module docstring); ``worst``: the index
    of the sensitivity threshold with the largest last / first distance ratio."""
    per_unit = {"high_pairs": rows["high_pairs"], "mean_pair_distance.distance": rows["pair_distance"],
                "same_sentence_fraction.same": rows["same_sentence"],
                "separator_attention.separators": rows["attended_separators"],
                "separator_attention.attended": rows["attended"],
                "unique_focus_fraction": rows["distinct_focus"] / n_heads,
                "unique_focus_ids_fraction": rows["distinct_focus_ids"] / n_heads}
    if worst is not None:
        per_unit.update({"sensitivity.distance_at_worst.distance": rows["sensitivity_distance"][:, worst],
                         "sensitivity.distance_at_worst.pairs": rows["sensitivity_pairs"][:, worst]})
    return per_unit


def _sensitivity(stats: ContextStats, settings: Settings) -> dict:
    n_heads = stats.shape[1]
    distance = _ratios(stats.sensitivity_distance, stats.sensitivity_pairs)
    ratios, worst = last_over_first(distance), _worst(distance)
    return {
        "thresholds": list(settings.sensitivity_thresholds),
        "separator_attention": stats.sensitivity_attended_separators / stats.sensitivity_attended,
        "mean_pair_distance": distance,
        "same_sentence_fraction": _ratios(stats.sensitivity_same_sentence, stats.sensitivity_pairs),
        "high_pairs_per_matrix": stats.sensitivity_pairs / (stats.texts * n_heads),
        "distance_last_over_first": ratios,
        "max_distance_last_over_first": max(ratios) if ratios else None,
        "worst_threshold": None if worst is None else settings.sensitivity_thresholds[worst],
        "distance_at_worst": None if worst is None else distance[worst],
    }


def _ratios(numerator: np.ndarray, denominator: np.ndarray) -> list:
    """Element-wise ratio as nested lists, None where the denominator is 0 (no pairs at all)."""
    return [[float(a / b) if b else None for a, b in zip(ra, rb)] for ra, rb in zip(numerator, denominator)]


def _worst(rows: Sequence[Sequence[float | None]]) -> int | None:
    """The row of a [K, L] table whose last / first ratio is largest; None when a ratio or an
    entry of that row is undefined."""
    ratios = last_over_first(rows)
    k = int(np.argmax(ratios)) if ratios else None
    return None if k is None or None in rows[k] else k


def last_over_first(rows: Sequence[Sequence[float | None]]) -> list[float] | None:
    """x_L / x_1 for each row of a [K, L] table: how far a per-block series moved from the first
    block to the last (below 1: it fell). None when any row lacks either end."""
    if any(row[0] is None or row[-1] is None or row[0] == 0 for row in rows):
        return None
    return [float(row[-1] / row[0]) for row in rows]


def at_attention_threshold(m: dict, stats: ContextStats, t: float) -> dict:
    """``m`` with ``separator_attention`` (and its per-text values) at a_j ≥ t instead of τ, from
    the sensitivity check's counts; its separator_attention is None when t is not one of its
    thresholds."""
    thresholds = m["sensitivity"]["thresholds"]
    if t not in thresholds:
        return {**m, "separator_attention": None}
    rows, k = stats.text_rows(), thresholds.index(t)
    separators, attended = rows["sensitivity_attended_separators"][:, k], rows["sensitivity_attended"][:, k]
    return {**m, "separator_attention": separators.sum(axis=0) / attended.sum(axis=0),
            "per_unit": {**m["per_unit"], "separator_attention.separators": separators,
                         "separator_attention.attended": attended}}


# --------------------------------------------------------------------------- head classes

def head_table(stats: ContextStats, settings: Settings) -> pd.DataFrame:
    """One row per head (layer and head numbered from 1) with its shares and its class:

    repetition    repeat_share ≥ repeat_share_threshold: that share of its high pairs join two
                  occurrences of the same word token;
    common-token  otherwise, common_focus_share ≥ common_focus_threshold: in that share of the
                  texts its focus token is a common token (≥ common_min_count occurrences);
    other         neither.
    """
    n_layers, n_heads, _ = stats.shape
    layer, head = np.meshgrid(np.arange(1, n_layers + 1), np.arange(1, n_heads + 1), indexing="ij")
    frame = pd.DataFrame({
        "layer": layer.ravel(), "head": head.ravel(),
        "repeat_share": (stats.head_repeats / stats.head_pairs).ravel(),
        "common_focus_share": (stats.head_common_focus / stats.texts).ravel(),
        "mean_pair_distance": (stats.head_distance / stats.head_pairs).ravel(),
        "same_sentence_fraction": (stats.head_same_sentence / stats.head_pairs).ravel(),
        "separator_attention": (stats.head_attended_separators / stats.head_attended).ravel(),
        "top_focus": [_top_focus(c, stats.texts) for row in stats.focus_tokens for c in row],
    })
    repetition = frame["repeat_share"] >= settings.repeat_share_threshold
    common = frame["common_focus_share"] >= settings.common_focus_threshold
    frame["class"] = np.where(repetition, "repetition", np.where(common, "common-token", "other"))
    return frame


def _top_focus(counts: Counter, n_texts: int, k: int = 3) -> str:
    return ", ".join(f"{token} {count / n_texts:.0%}" for token, count in counts.most_common(k))


def class_totals(m: dict) -> dict:
    """Heads per class over all layers, and the layers that have both a repetition-detecting
    and a common-token head, from a metrics dict."""
    return {"heads": {c: int(sum(m["head_classes"][c])) for c in HEAD_CLASSES},
            "layers_with_both_kinds": m["layers_with_both_kinds"]}
