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
    segmentation[l]            = Σ h / Σ k: of the k word tokens that receive most attention
                                 (a_j averaged over the heads), the share that end a sentence

A *separator* is the closing [SEP] or the final ``.``, ``!`` or ``?`` of a whole sentence
(:class:`~embedding_geometry.core.windows.Window`); special tokens belong to no sentence.

Everything is a count or a sum, so one batch's statistics fold into running totals
(:class:`ContextStats` supports ``+``): :func:`measure` folds the batches that
:func:`embedding_geometry.core.streaming.stream` captures (:func:`run` streams one model's
texts), and its memory does not grow with the number of texts beyond a few numbers per text,
kept for the claims' intervals. :func:`metrics` turns the totals into the metrics dict (its keys
are listed there); :func:`head_table` sorts the heads into classes by the chapter's stated rule.

**Per-unit values** (``per_unit``; the unit is a text, for the claims' bootstrap intervals).
Each pooled ratio above is Σ_texts numerator / Σ_texts denominator, so it is the ratio of the
means of two per-text arrays [n_texts, L], and a resample of texts recomputes it exactly;
``unique_focus_fraction`` is the plain mean of its per-text values. The nulls that depend on
the texts (uniform attention, a random pair, a random ranking) are per-text arrays too, compared
text by text. Two statistics are no function of per-text means — the number of blocks with both
kinds of head, and the largest last/first distance ratio over the sensitivity thresholds — so
the study draws their resamples itself (:data:`RESAMPLES` resamples of the texts, the selection
of the worst threshold made again in each).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core import streaming, windows
from ..core.errors import ParameterError
from ..core.models import LoadedModel
from ..core.streaming import Captured
from ..core.windows import TextRecord, Window
from . import head_cache
from .context_attention import overlap_metrics, pair_sample
from .context_batch import TextBatch, batch_statistics
from .context_heads import (HEAD_CLASSES, both_kinds_draws, class_counts, class_totals, classify, head_stability,
                            head_table)
from .context_matrices import attention_received, context_similarity
from .context_stats import (NULL_DRAWS, RESAMPLES, TEXT_ROWS, TOKEN_KINDS, ContextStats, Settings, TextRows,
                            text_resamples)

__all__ = ["HEAD_CLASSES", "NULL_DRAWS", "RESAMPLES", "TEXT_ROWS", "TOKEN_KINDS", "ContextStats", "Example",
           "Measurement", "Settings", "TextBatch", "TextRows", "batch_statistics", "block_means",
           "class_counts", "class_totals", "classify", "head_stability", "head_table", "head_tables",
           "last_over_first", "measure", "metrics", "pair_metrics", "recorded", "run", "summed_blocks"]

SUMMED_SIDE = 32
"""The summed matrices are recorded as means over square blocks, this many per side (4 tokens
each at T = 128)."""

NO_ENDS = ("no text ends a sentence among its word tokens (texts of text_length tokens): there is no sentence end "
           "for the most-attended tokens to find")
"""Why the segmentation is not measured (``not_measured``), when no window holds a sentence end."""


# --------------------------------------------------------------------------- the fold over batches

@dataclass(frozen=True)
class Example:
    """The first text, kept whole for the figures and the chapter's worked example: the head
    outputs O [L, T, H, d_head], S_{l,h} [L, H, T, T] and a_j [L, H, T]."""

    window: Window
    head_out: np.ndarray
    similarity: np.ndarray
    received: np.ndarray

    @classmethod
    def of(cls, captured: Captured) -> Example:
        """The first window of a captured batch."""
        return cls(window=captured.windows[0], head_out=np.stack([o[0] for o in captured.head_out]),
                   similarity=np.stack([context_similarity(o[0].swapaxes(0, 1)) for o in captured.head_out]
                                       ).astype(np.float32),
                   received=np.stack([attention_received(m[0]) for m in captured.pattern]).astype(np.float32))


@dataclass(frozen=True)
class Measurement:
    """One model's pass: the totals, what the texts were, the first text whole, and the seconds
    the pass took (forward passes and statistics)."""

    stats: ContextStats
    texts: TextRecord
    example: Example
    seconds: float = 0.0


def measure(batches: Iterable[Captured], settings: Settings, loaded: LoadedModel | None = None) -> Measurement:
    """Fold the batches: each is reduced to :class:`ContextStats`, added to the running totals
    in place and dropped before the next is captured, so that two batches' matrices are never
    held at once. Only the first text's matrices are kept (for the figures). With ``loaded``
    (the model the batches came from), each batch's statistics are also stored in the head cache
    (:mod:`.head_cache`), for the chapters that stream the same windows."""
    record, stats, example, start = TextRecord(), None, None, time.perf_counter()
    for captured in batches:
        part = batch_statistics(captured.head_out, captured.pattern, TextBatch.of(captured.windows), settings,
                                first=record.count)
        if loaded is not None:
            head_cache.store(loaded, captured.windows, settings, record.count, part)
        for window in captured.windows:
            record.add(window)
        if stats is None:
            stats = part
        else:
            stats += part
        example = example or Example.of(captured)
        del captured, part  # else the loop holds them while the stream captures the next batch
    if stats is None:
        raise ParameterError("n_texts", "at least 1 text", 0)
    return Measurement(stats=stats, texts=record, example=example, seconds=time.perf_counter() - start)


def texts_of(loaded: LoadedModel, params: Mapping) -> Iterator[Window]:
    """The chapter's texts as ``loaded``'s tokenizer cuts them: the first ``n_texts`` windows of
    ``text_length`` tokens of the ``texts`` source, read from its start with ``seed``."""
    return windows.from_source(loaded.tokenizer, params["texts"], params["n_texts"], params["text_length"],
                               params["seed"])


def run(loaded: LoadedModel, params: Mapping) -> Measurement:
    """The chapter's pass on one model: :func:`texts_of` streamed through it in batches of
    ``batch_size`` (:func:`embedding_geometry.core.streaming.stream`) and folded by
    :func:`measure` with the settings among ``params``, each batch's statistics kept in the head
    cache (chapter 8's head pass reads them)."""
    texts = texts_of(loaded, params)
    batches = streaming.stream(loaded, texts, params["batch_size"], total=params["n_texts"])
    return measure(batches, Settings.from_parameters(params), loaded)


# --------------------------------------------------------------------------- metrics

def metrics(stats: ContextStats, settings: Settings) -> dict:
    """The chapter's metrics (the Methods page's keys; per-block lists have L entries, index 0 is block 1):

    layers, n_texts                  1 … L, and the number of texts
    mean_pair_distance               [L] and ``_chance``, (T + 1) / 3 for a uniformly drawn pair of P
    same_sentence_fraction           [L], ``same_sentence_chance`` and ``same_sentence_lift`` [L] (their ratio)
    distance_histogram               [L, T − 1] high pairs at d = 1 … T − 1; ``head_distance_histogram``
                                     [L, H, T − 1] the same per head
    summed_similarity                {blocks: the first, middle and last block (numbered from 1),
                                     matrices [3, s, s]: the mean over texts and heads of S / max |S| at
                                     those blocks, as means over square blocks of tokens (s =
                                     :data:`SUMMED_SIDE`; :func:`summed_blocks`)}
    unique_focus_tokens              {histogram [L, H + 1], mean [L]}; ``unique_focus_fraction`` = mean / H
    unique_focus_fraction_null       the random-positions null: E[distinct positions] / H if each head's
                                     focus were a uniformly random position, T (1 − (1 − 1/T)^H) / H,
                                     and ``_null_draws`` [D]: the statistic (mean over texts and blocks)
                                     on D draws of such random foci for these texts
    unique_focus_ids_fraction        [L] the same count of distinct *token ids* at the focus positions / H,
                                     with ``_null`` (from each text's id counts) and ``_null_draws`` [D]
    separator_attention              [L]; ``separator_share``: separators among all tokens (the
                                     uniform-attention null: every a_j = 1, so every token is attended)
    segmentation                     {r_precision [L]: Σ h / Σ k, chance: Σ (k² / W) / Σ k, what a random
                                     ranking of the word tokens hits; boundaries_per_text: mean k}
    attended_kinds                   {kind: [L]} shares of the high-attention tokens (TOKEN_KINDS)
    repeat_chance                    share of all pairs that join two equal word tokens
    heads                            {column: [L][H]} of :func:`head_table`
    head_classes                     {class: [L]} heads per class; ``layers_with_both_kinds`` and its
                                     ``_draws`` [R] on resamples of the texts
    head_stability                   :func:`head_stability`: the rule applied to each half of the texts, and
                                     ``focus``: each head's top focus tokens compared across random
                                     subsets of the texts and across two corpus topics
    sensitivity                      per threshold t [K] and block [K, L]: separator_attention (a_j ≥ t),
                                     mean_pair_distance, same_sentence_fraction and
                                     high_pairs_per_matrix (S_ij ≥ t · max S), and
                                     distance_last_over_first [K] (None when a ratio is undefined)
                                     and its largest entry, max_distance_last_over_first (with
                                     ``_draws`` [R], the largest found again in each resample), at
                                     worst_threshold, whose mean_pair_distance row is distance_at_worst [L]
    attention_overlap                {share, chance, rank [L]; head_share, head_rank [L, H]; chance_all,
                                     sampled_pairs}: the high pairs of S against those of the attention
                                     map, per block and head (:mod:`.context_attention`)
    cosine_overlap                   the same for the high pairs of S against those of its cosine form
                                     cos_ij = S_ij / (‖o_i‖ ‖o_j‖)
    per_unit                         per-text values [n_texts, L] (see the module docstring):
                                     high_pairs, mean_pair_distance.distance, same_sentence_fraction.same,
                                     separator_attention.separators and .attended, unique_focus_fraction,
                                     unique_focus_ids_fraction, segmentation.hits and .boundaries, and the
                                     nulls' separator_share.separators and .tokens, same_sentence_chance.same
                                     and .pairs, segmentation.chance_hits
    """
    n_layers, n_heads, _ = stats.shape
    unique_mean = stats.unique_focus @ np.arange(n_heads + 1) / stats.texts
    heads = head_table(stats, settings)
    per_layer = pd.crosstab(heads["layer"], heads["class"]).reindex(columns=HEAD_CLASSES, fill_value=0)
    per_head = {column: heads.pivot(index="layer", columns="head", values=column).to_numpy().tolist()
                for column in ("repeat_share", "common_focus_share", "mean_pair_distance",
                               "same_sentence_fraction", "separator_attention", "class")}
    kinds = stats.attended_kinds / stats.attended_kinds.sum(axis=1, keepdims=True)
    rows, n_pairs = stats.text_rows(), stats.all_pairs // stats.texts
    sampled = len(pair_sample(n_pairs, settings.seed))
    sensitivity, segmentation = _sensitivity(stats, settings), _segmentation(rows)
    return {
        "layers": list(range(1, n_layers + 1)),
        "n_texts": stats.texts,
        **pair_metrics(stats),
        "distance_histogram": stats.distance_counts[:, 1:],
        "head_distance_histogram": stats.head_distance_counts[:, :, 1:],
        "summed_similarity": summed_blocks(stats, SUMMED_SIDE),
        "unique_focus_tokens": {"histogram": stats.unique_focus, "mean": unique_mean},
        "unique_focus_fraction": unique_mean / n_heads,
        "unique_focus_fraction_null": float(rows["focus_null"].mean() / n_heads),
        "unique_focus_fraction_null_draws": stats.focus_null_draws.mean(axis=1) / stats.texts,
        "unique_focus_ids_fraction": rows["distinct_focus_ids"].mean(axis=0) / n_heads,
        "unique_focus_ids_fraction_null": float(rows["focus_ids_null"].mean() / n_heads),
        "unique_focus_ids_fraction_null_draws": stats.focus_ids_null_draws.mean(axis=1) / stats.texts,
        "separator_attention": stats.head_attended_separators.sum(axis=1) / stats.head_attended.sum(axis=1),
        "separator_share": stats.separators / stats.tokens,
        "segmentation": segmentation,
        "attended_kinds": dict(zip(TOKEN_KINDS, kinds.T)),
        "repeat_chance": stats.all_repeats / stats.all_pairs,
        "heads": per_head,
        "head_classes": {c: per_layer[c].tolist() for c in HEAD_CLASSES},
        "layers_with_both_kinds": int(((per_layer["repetition"] > 0) & (per_layer["common-token"] > 0)).sum()),
        "layers_with_both_kinds_draws": both_kinds_draws(rows, stats.texts, settings),
        "head_stability": head_stability(stats, settings),
        "sensitivity": sensitivity,
        **overlap_metrics(rows, rows["head_high_pairs"], n_pairs, sampled, "attention"),
        **overlap_metrics(rows, rows["head_high_pairs"], n_pairs, sampled, "cosine"),
        "per_unit": _per_unit(rows, stats.shape),
        **({} if segmentation["r_precision"] is not None else {"not_measured": {"segmentation.r_precision": NO_ENDS}}),
    }


def pair_metrics(stats: ContextStats) -> dict:
    """The high pairs' per-block metrics of :func:`metrics`: mean_pair_distance and its chance
    (T + 1) / 3, same_sentence_fraction, same_sentence_chance and same_sentence_lift."""
    n_tokens = stats.shape[2]
    pairs = stats.head_pairs.sum(axis=1)
    d = np.arange(1, n_tokens)
    chance_counts = n_tokens - d  # pairs of P at distance d
    same = stats.head_same_sentence.sum(axis=1) / pairs
    same_chance = stats.all_same_sentence / stats.all_pairs
    return {"mean_pair_distance": stats.head_distance.sum(axis=1) / pairs,
            "mean_pair_distance_chance": float(d @ chance_counts / chance_counts.sum()),
            "same_sentence_fraction": same, "same_sentence_chance": same_chance,
            "same_sentence_lift": same / same_chance if same_chance > 0 else None}


def _per_unit(rows: dict[str, np.ndarray], shape: tuple[int, int, int]) -> dict[str, np.ndarray]:
    """The per-text values behind the claims' metrics and their nulls (module docstring); a
    per-text number the same in every block is repeated over the L blocks."""
    n_layers, n_heads, n_tokens = shape
    every = _over_blocks(n_layers)
    boundaries = rows["boundaries"].astype(np.float64)
    chance_hits = np.divide(boundaries ** 2, rows["word_tokens"], out=np.zeros_like(boundaries),
                            where=rows["word_tokens"] > 0)
    return {"high_pairs": rows["high_pairs"], "mean_pair_distance.distance": rows["pair_distance"],
            "same_sentence_fraction.same": rows["same_sentence"],
            "separator_attention.separators": rows["attended_separators"],
            "separator_attention.attended": rows["attended"],
            "unique_focus_fraction": rows["distinct_focus"] / n_heads,
            "unique_focus_ids_fraction": rows["distinct_focus_ids"] / n_heads,
            "segmentation.hits": rows["segment_hits"], "segmentation.boundaries": every(boundaries),
            "segmentation.chance_hits": every(chance_hits),
            "separator_share.separators": every(rows["separators"]),
            "separator_share.tokens": every(np.full(len(boundaries), n_tokens)),
            "same_sentence_chance.same": every(rows["same_sentence_pairs"]),
            "same_sentence_chance.pairs": every(np.full(len(boundaries), n_tokens * (n_tokens - 1) // 2))}


def _over_blocks(n_layers: int):
    """[n] → [n, L], float64: a per-text number repeated over the blocks."""
    def repeat(x) -> np.ndarray:
        return np.repeat(np.asarray(x, dtype=np.float64)[:, None], n_layers, axis=1)
    return repeat


def _segmentation(rows: dict[str, np.ndarray]) -> dict:
    """R-precision per block, Σ h / Σ k, and its chance level Σ (k² / W) / Σ k (module docstring
    of :mod:`.context_matrices`); None where no text has a sentence end."""
    k, words = rows["boundaries"].astype(np.float64), rows["word_tokens"]
    total = k.sum()
    chance = float(np.sum(np.divide(k ** 2, words, out=np.zeros_like(k), where=words > 0)) / total) if total else None
    return {"r_precision": rows["segment_hits"].sum(axis=0) / total if total else None, "chance": chance,
            "boundaries_per_text": float(k.mean())}


def summed_blocks(stats: ContextStats, size: int) -> dict:
    """The mean over texts and heads of S / max |S| at the first, middle (⌈L / 2⌉) and last block,
    as [3, s, s] means over square blocks of b = ⌈T / size⌉ tokens (s = ⌈T / b⌉; the diagonal
    counts as 0)."""
    n_layers, n_heads, n_tokens = stats.shape
    blocks = sorted({1, (n_layers + 1) // 2, n_layers})
    i, j = np.triu_indices(n_tokens, k=1)
    matrices = []
    for l in blocks:
        full = np.zeros((n_tokens, n_tokens))
        full[i, j] = full[j, i] = stats.summed_similarity[l - 1] / (stats.texts * n_heads)
        matrices.append(block_means(full, size))
    return {"blocks": blocks, "matrices": np.stack(matrices)}


def block_means(matrix: np.ndarray, size: int) -> np.ndarray:
    """Mean over square blocks of b = ⌈T / size⌉ tokens: [T, T] → [⌈T / b⌉, ⌈T / b⌉]."""
    n = matrix.shape[-1]
    block = -(-n // size)
    starts = np.arange(0, n, block)
    widths = np.diff(np.append(starts, n))
    sums = np.add.reduceat(np.add.reduceat(matrix, starts, axis=-1), starts, axis=-2)
    return sums / np.outer(widths, widths)


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
        "max_distance_last_over_first_draws": _worst_ratio_draws(stats, settings.seed) if ratios else None,
        "worst_threshold": None if worst is None else settings.sensitivity_thresholds[worst],
        "distance_at_worst": None if worst is None else distance[worst],
    }


def _worst_ratio_draws(stats: ContextStats, seed: int) -> np.ndarray:
    """max over thresholds t of x_L / x_1 (x the mean distance of the pairs S_ij ≥ t · max S) on
    resamples of the texts, the worst threshold found again in each; resamples where a ratio is
    undefined are left out."""
    rows = stats.text_rows()
    distance, pairs = rows["sensitivity_distance"], rows["sensitivity_pairs"]  # [n, K, L]
    n, shape = len(distance), distance.shape[1:]
    draws = []
    for w in text_resamples(n, seed):
        x = (w @ distance.reshape(n, -1)) / (w @ pairs.reshape(n, -1))  # [b, K·L] (0 / 0: nan)
        x = x.reshape(-1, *shape)
        draws.append(np.max(x[..., -1] / x[..., 0], axis=-1))
    found = np.concatenate(draws)
    return found[np.isfinite(found)]


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


# --------------------------------------------------------------------------- what the chapter shows

def head_tables(runs: Mapping[str, Measurement], settings: Settings) -> pd.DataFrame:
    """:func:`head_table` of every model's pass (id → :class:`Measurement`), with a ``model``
    column (the id's last part)."""
    return pd.concat([head_table(r.stats, settings).assign(model=name.rsplit("/", 1)[-1]) for name, r in runs.items()],
                     ignore_index=True)



def recorded(m: Mapping) -> dict:
    """A second model's metrics as the results JSON records them beside the main model's: without
    the per-text values and the resample draws, at any depth (its verdicts record their intervals)."""
    return {key: recorded(value) if isinstance(value, Mapping) else value for key, value in m.items()
            if key != "per_unit" and not key.endswith("_draws")}
