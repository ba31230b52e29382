"""One batch of chapter 4's streaming pass reduced to statistics (the book's Methods page, section
``methods-heads``): B texts of T tokens captured on a model of L blocks with H heads become a
:class:`~embedding_geometry.studies.context_stats.ContextStats` of counts and sums, and a few
numbers per text (:data:`~embedding_geometry.studies.context_stats.TEXT_ROWS`).

The heavy steps run as matrix products: a pair mask [B, H, P] times per-pair features
[B, P, 4] (one, distance, same sentence, repeat) gives every per-head count and sum at once, and
a mask times the pairs' incidence [P, T] gives each position's number of high pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core import corpora
from ..core.windows import Window
from .context_attention import attention_pairs, cosine_pairs, overlap_rows, pair_sample
from .context_matrices import (attention_received, boundary_hits, context_similarity, distinct_counts,
                               expected_distinct, pair_values, quantile_mask, random_focus_counts, relative_mask,
                               upper_pairs)
from .context_stats import TEXT_ROWS, TOKEN_KINDS, ContextStats, Settings


@dataclass(frozen=True)
class TextBatch:
    """The token metadata of B windows: ids, sentence ids and separators [B, T], pieces, and each
    window's corpus topic [B] (:func:`~embedding_geometry.core.corpora.topic_of`; None: unknown)."""

    input_ids: np.ndarray
    sentence_ids: np.ndarray
    separators: np.ndarray
    tokens: list[list[str]]
    topics: np.ndarray | None = None

    @classmethod
    def of(cls, batch: Sequence[Window]) -> TextBatch:
        return cls(input_ids=np.stack([w.input_ids for w in batch]),
                   sentence_ids=np.stack([w.sentence_ids for w in batch]),
                   separators=np.stack([w.separators for w in batch]),
                   tokens=[w.tokens for w in batch], topics=np.array([corpora.topic_of(w.text) for w in batch]))

    def kinds(self) -> np.ndarray:
        """int64 [B, T]: each token's index in TOKEN_KINDS."""
        special = self.sentence_ids < 0
        first = np.zeros_like(special)
        first[:, 0] = special[:, 0]
        return np.select([first, special & self.separators, self.separators], [0, 1, 2], default=3)

    def common_tokens(self, min_count: int) -> np.ndarray:
        """bool [B, T]: word tokens whose id occurs at least ``min_count`` times in their text."""
        ids = self.input_ids
        occurrences = (ids[:, :, None] == ids[:, None, :]).sum(axis=-1)
        return (occurrences >= min_count) & (self.sentence_ids >= 0)


def batch_statistics(head_outs: Sequence[np.ndarray], patterns: Sequence[np.ndarray],
                     batch: TextBatch, settings: Settings, first: int = 0) -> ContextStats:
    """The statistics of one batch. head_outs: L × [B, T, H, d_head] (``blocks.{l}.attn.head_out``);
    patterns: L × [B, H, T, T] (``blocks.{l}.attn.pattern``); ``first``: the index of the batch's
    first text in the stream (text i draws its random-positions null from the generator seeded by
    (``settings.seed``, i), so the totals do not depend on how the texts are batched)."""
    n_texts, n_tokens, n_heads, _ = np.shape(head_outs[0])
    n_layers, n_thresholds = len(head_outs), len(settings.sensitivity_thresholds)
    text = _TextContext.of(batch, settings.common_min_count)
    stats = ContextStats.empty(n_layers, n_heads, n_tokens, n_thresholds)
    stats.texts, stats.tokens, stats.separators = n_texts, n_texts * n_tokens, int(text.separators.sum())
    stats.all_pairs = n_texts * len(text.distance)
    stats.all_same_sentence, stats.all_repeats = int(text.same.sum()), int(text.repeat.sum())
    sizes = {"B": n_texts, "L": n_layers, "K": n_thresholds, "H": n_heads}
    rows = {name: np.zeros([sizes[a] for a in axes.split()], _row_dtype(name)) for name, (axes, _) in TEXT_ROWS.items()}
    rows["focus_null"][:] = expected_distinct(np.ones(n_tokens), n_heads)
    rows["focus_ids_null"][:] = [expected_distinct(np.unique(row, return_counts=True)[1], n_heads)
                                 for row in batch.input_ids]
    rows["separators"][:] = text.separators.sum(axis=(1, 2))
    rows["same_sentence_pairs"][:] = text.same.sum(axis=(1, 2))
    rows["boundaries"][:] = text.boundaries.sum(axis=1)
    rows["word_tokens"][:] = (batch.sentence_ids >= 0).sum(axis=1)
    rows["topic"][:] = -1 if batch.topics is None else batch.topics
    sample = pair_sample(len(text.distance), settings.seed)  # the pairs of the rank correlation
    for l, (out, pattern) in enumerate(zip(head_outs, patterns)):
        out = np.swapaxes(out, 1, 2)  # [B, H, T, d_head]
        values = pair_values(context_similarity(out))  # [B, H, P]
        high = quantile_mask(values, settings.q)
        _pair_statistics(stats, rows, l, values, high, text, settings)
        _attention_statistics(stats, rows, l, attention_received(pattern), text, settings)
        for name, other in (("attention", attention_pairs(pattern)), ("cosine", cosine_pairs(values, out))):
            for key, row in overlap_rows(values, high, other, settings.q, sample, name).items():
                rows[key][:, l] = row
    _focus_null(stats, batch, settings, first)
    stats.per_text.extend(rows)
    return stats


def _row_dtype(name: str) -> type:
    """float64 for the nulls and rank correlations; int64 for distance sums (up to H · T² / 2 · T);
    int32 for counts (at most H · T² / 2, below 2³¹ up to H = 32 heads at T = 8,192)."""
    return np.float64 if name.endswith(("null", "rank")) else np.int64 if name.endswith("distance") else np.int32


@dataclass(frozen=True)
class _TextContext:
    """What a batch's pairs and tokens are: pair distance d [P]; same sentence and repeat
    [B, 1, P]; common tokens [B, T]; separators and kinds (TOKEN_KINDS index) [B, 1, T]; word
    tokens and sentence ends [B, T]; the pairs' features [B, P, 4] (1, d, same, repeat) and
    incidence [P, T] (1 where the position is an endpoint of the pair) for the matrix products."""

    batch: TextBatch
    distance: np.ndarray
    same: np.ndarray
    repeat: np.ndarray
    common: np.ndarray
    separators: np.ndarray
    kinds: np.ndarray
    words: np.ndarray
    boundaries: np.ndarray
    features: np.ndarray
    incidence: np.ndarray

    @classmethod
    def of(cls, batch: TextBatch, common_min_count: int) -> _TextContext:
        n_tokens = batch.input_ids.shape[1]
        i, j = upper_pairs(n_tokens)
        sid, ids = batch.sentence_ids, batch.input_ids
        same = (sid[:, i] == sid[:, j]) & (sid[:, i] >= 0)
        repeat = (ids[:, i] == ids[:, j]) & (sid[:, i] >= 0) & (sid[:, j] >= 0)
        distance = j - i
        features = np.stack(np.broadcast_arrays(np.ones_like(distance), distance, same, repeat), axis=-1)
        incidence = np.zeros((len(i), n_tokens), np.float32)
        incidence[np.arange(len(i)), i] = incidence[np.arange(len(i)), j] = 1.0
        words = sid >= 0
        return cls(batch=batch, distance=distance, same=same[:, None], repeat=repeat[:, None],
                   common=batch.common_tokens(common_min_count), separators=batch.separators[:, None],
                   kinds=batch.kinds()[:, None], words=words, boundaries=batch.separators & words,
                   features=features.astype(_exact_dtype(n_tokens)), incidence=incidence)


def _exact_dtype(n_tokens: int) -> type:
    """float32 when every sum of pair features is an integer below 2²⁴ (Σ_{i<j} (j − i) = (T³ − T) / 6,
    so T ≤ 464), where float32 adds integers exactly; else float64."""
    return np.float32 if (n_tokens ** 3 - n_tokens) // 6 < 2 ** 24 else np.float64


def _pair_sums(mask: np.ndarray, text: _TextContext) -> np.ndarray:
    """int64 [B, H, 4]: for each text and head, the marked pairs' count, Σ d, and how many lie
    in one sentence or join a repeat: mask [B, H, P] times the features [B, P, 4], a matrix
    product that adds integers exactly (:func:`_exact_dtype`)."""
    return np.matmul(mask.astype(text.features.dtype), text.features).round().astype(np.int64)


def _pair_statistics(stats: ContextStats, rows: dict, l: int, values: np.ndarray, high: np.ndarray,
                     text: _TextContext, settings: Settings) -> None:
    """Block l's high pairs (``high``: top quantile q; and S_ij ≥ t · max S at each t), focus
    tokens and summed scaled matrix."""
    n_texts, n_heads, _ = values.shape
    sums = _pair_sums(high, text)  # [B, H, 4]: pairs, Σ d, same, repeats
    for name, c in (("head_high_pairs", 0), ("head_pair_distance", 1), ("head_repeats", 3)):
        rows[name][:, l] = sums[..., c]
    for name, c in (("high_pairs", 0), ("pair_distance", 1), ("same_sentence", 2)):
        rows[name][:, l] = sums[..., c].sum(axis=1)
    stats.head_pairs[l], stats.head_distance[l] = sums[..., 0].sum(axis=0), sums[..., 1].sum(axis=0)
    stats.head_same_sentence[l], stats.head_repeats[l] = sums[..., 2].sum(axis=0), sums[..., 3].sum(axis=0)
    per_head = high.sum(axis=0)  # [H, P]: in how many texts each pair is high
    stats.head_distance_counts[l] = [np.bincount(text.distance, weights=row, minlength=stats.shape[2]).round()
                                     for row in per_head]
    top = np.abs(values).max(axis=-1, keepdims=True)
    stats.summed_similarity[l] = (values / np.where(top > 0, top, 1.0)).sum(axis=(0, 1), dtype=np.float64)
    flat = high.reshape(-1, high.shape[-1]).astype(np.float32)  # 2-D: numpy's stacked matmul skips BLAS
    endpoints = (flat @ text.incidence).reshape(n_texts, n_heads, -1)  # [B, H, T]: exact counts (at most T − 1)
    focus = np.argmax(endpoints, axis=-1)  # the lowest position on ties
    common = np.take_along_axis(text.common, focus, axis=1)  # [B, H]
    rows["head_common_focus"][:, l] = common
    rows["head_focus_id"][:, l] = focus_ids = np.take_along_axis(text.batch.input_ids, focus, axis=1)
    stats.head_common_focus[l] = common.sum(axis=0)
    rows["distinct_focus"][:, l] = distinct_counts(focus)
    rows["distinct_focus_ids"][:, l] = distinct_counts(focus_ids)
    stats.unique_focus[l] = np.bincount(rows["distinct_focus"][:, l], minlength=n_heads + 1)
    for tokens, ids, at in zip(text.batch.tokens, focus_ids.tolist(), focus.tolist()):
        stats.focus_pieces.update(zip(ids, (tokens[i] for i in at)))
    for k, t in enumerate(settings.sensitivity_thresholds):
        relative = _pair_sums(relative_mask(values, t), text).sum(axis=1)  # [B, 4]
        rows["sensitivity_pairs"][:, k, l], rows["sensitivity_distance"][:, k, l] = relative[:, 0], relative[:, 1]
        stats.sensitivity_same_sentence[k, l] = relative[:, 2].sum()
    stats.sensitivity_pairs[:, l] = rows["sensitivity_pairs"][:, :, l].sum(axis=0)
    stats.sensitivity_distance[:, l] = rows["sensitivity_distance"][:, :, l].sum(axis=0)


def _attention_statistics(stats: ContextStats, rows: dict, l: int, received: np.ndarray, text: _TextContext,
                          settings: Settings) -> None:
    """Block l's high-attention tokens (a_j ≥ τ, and a_j ≥ t at each t) and the sentence ends
    among the word tokens that receive most attention; received: [B, H, T]."""
    seps, kinds = text.separators, text.kinds
    attended = received >= settings.attention_threshold
    rows["head_attended"][:, l] = attended.sum(axis=2)
    rows["head_attended_separators"][:, l] = (attended & seps).sum(axis=2)
    rows["attended"][:, l] = rows["head_attended"][:, l].sum(axis=1)
    rows["attended_separators"][:, l] = rows["head_attended_separators"][:, l].sum(axis=1)
    stats.head_attended[l] = rows["head_attended"][:, l].sum(axis=0)
    stats.head_attended_separators[l] = rows["head_attended_separators"][:, l].sum(axis=0)
    stats.attended_kinds[l] = np.bincount(np.broadcast_to(kinds, attended.shape)[attended], minlength=len(TOKEN_KINDS))
    rows["segment_hits"][:, l] = boundary_hits(received.mean(axis=1), text.boundaries, text.words)
    for k, t in enumerate(settings.sensitivity_thresholds):
        rows["sensitivity_attended"][:, k, l] = (received >= t).sum(axis=(1, 2))
        rows["sensitivity_attended_separators"][:, k, l] = ((received >= t) & seps).sum(axis=(1, 2))
    stats.sensitivity_attended[:, l] = rows["sensitivity_attended"][:, :, l].sum(axis=0)
    stats.sensitivity_attended_separators[:, l] = rows["sensitivity_attended_separators"][:, :, l].sum(axis=0)


def _focus_null(stats: ContextStats, batch: TextBatch, settings: Settings, first: int) -> None:
    """D draws of the random-positions null on every text of the batch, each text from its own
    generator seeded by (``settings.seed``, its index in the stream)."""
    n_draws, n_layers = stats.focus_null_draws.shape
    n_heads = stats.shape[1]
    for b, ids in enumerate(batch.input_ids):
        rng = np.random.default_rng([settings.seed, first + b])
        positions, token_ids = random_focus_counts(ids, n_heads, (n_draws, n_layers), rng)
        stats.focus_null_draws += positions / n_heads
        stats.focus_ids_null_draws += token_ids / n_heads
