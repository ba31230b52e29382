"""Per-batch statistics of chapter 4's study and their running totals (Methods page, section
``methods-heads``).

One batch of B texts of T tokens, captured on a model of L blocks with H heads
(:class:`~embedding_geometry.core.streaming.Captured`), becomes a :class:`ContextStats` of
counts and sums: high pairs of every S_{l,h} (:mod:`~embedding_geometry.studies.context_matrices`),
their distances (per head), how many lie in one sentence or join a repeated token, focus tokens
and draws of their random-positions null, the tokens with high attention a_j ≥ τ, the sentence
ends that attention finds, the summed scaled matrices S / max |S|, and the same counts at every
threshold of the sensitivity check. Statistics add (``+``), so a stream of batches folds into
totals of fixed size, plus, for the claims' bootstrap intervals over texts, a few numbers per
text and block (:data:`TEXT_ROWS`; int32 counts, int64 distance sums): (6 H + 9 + 4 K) · L + 7
numbers, about 5 kB per text of BERT-12 at K = 5, 100 MB for the paper's 20,000 texts, beside a
few hundred MB for the model and one batch's captured attention.

The heavy steps run as matrix products: a pair mask [B, H, P] times per-pair
features [B, P, 4] (one, distance, same sentence, repeat) gives every per-head count and sum at
once, and a mask times the pairs' incidence [P, T] gives each position's number of high pairs.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from ..core.windows import Window
from .context_matrices import (
    attention_received,
    boundary_hits,
    context_similarity,
    distinct_counts,
    expected_distinct,
    pair_values,
    quantile_mask,
    random_focus_counts,
    relative_mask,
    upper_pairs,
)

TOKEN_KINDS = ("[CLS]", "[SEP]", "sentence end", "other")
"""Kinds of token, for what high-attention tokens are: the opening special token, the closing
[SEP], the final . ! ? of a whole sentence, anything else."""

TEXT_ROWS = {
    "high_pairs": ("B L", "high pairs of the text, summed over the heads"),
    "pair_distance": ("B L", "Σ d over those pairs"),
    "same_sentence": ("B L", "… of them inside one sentence"),
    "attended": ("B L", "tokens with a_j ≥ τ, summed over the heads"),
    "attended_separators": ("B L", "… that are separators"),
    "distinct_focus": ("B L", "distinct focus positions among the H heads"),
    "distinct_focus_ids": ("B L", "distinct token ids at those positions"),
    "segment_hits": ("B L", "sentence ends among the k word tokens that receive most attention (head mean)"),
    "focus_null": ("B", "E[distinct positions] if each head's focus were a uniformly random position"),
    "focus_ids_null": ("B", "E[distinct token ids] likewise (expected_distinct of the text's id counts)"),
    "separators": ("B", "separator tokens of the text ([SEP] and sentence-final . ! ?)"),
    "same_sentence_pairs": ("B", "pairs of P inside one sentence"),
    "boundaries": ("B", "k: sentence ends (the final . ! ? of its whole sentences)"),
    "word_tokens": ("B", "W: word tokens (not special)"),
    "sensitivity_attended": ("B K L", "tokens with a_j ≥ t at each threshold t"),
    "sensitivity_attended_separators": ("B K L", "… that are separators"),
    "sensitivity_pairs": ("B K L", "pairs with S_ij ≥ t · max S"),
    "sensitivity_distance": ("B K L", "Σ d over those pairs"),
    "head_high_pairs": ("B L H", "high pairs of each head"),
    "head_pair_distance": ("B L H", "Σ d over them"),
    "head_repeats": ("B L H", "… joining two occurrences of one word token"),
    "head_common_focus": ("B L H", "1 when the head's focus is a common token"),
    "head_attended": ("B L H", "tokens with a_j ≥ τ"),
    "head_attended_separators": ("B L H", "… that are separators"),
}
"""The per-text rows a batch keeps for the claims' intervals (each row: one text)."""

NULL_DRAWS = 1000
"""D: draws of the random-positions null (each a choice of focus for every head, block and text)."""


@dataclass(frozen=True)
class Settings:
    """The chapter's thresholds, each a notebook parameter (validated by the chapter's rule table).

    q                       quantile that makes a pair "high" (the Methods page: 0.99)
    attention_threshold     τ: a_j ≥ τ makes token j "high attention" (the paper: 0.3)
    sensitivity_thresholds  the τ and t values of the sensitivity check (0.1 … 0.5)
    common_min_count        a word token is *common* when its id occurs at least this often in its text
    repeat_share_threshold  a head whose high pairs are repeats at least this often is repetition-detecting
    common_focus_threshold  … else common-token when its focus is a common token in at least this share of texts
    seed                    seeds the draws of the random-positions null (each text its own stream) and
                            the resamples of texts the study draws itself
    """

    q: float = 0.99
    attention_threshold: float = 0.3
    sensitivity_thresholds: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5)
    common_min_count: int = 3
    repeat_share_threshold: float = 0.25
    common_focus_threshold: float = 0.5
    seed: int = 0

    @classmethod
    def from_parameters(cls, values: dict) -> Settings:
        """The settings among a chapter's (already validated) parameters; lists become tuples."""
        picked = {f.name: values[f.name] for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in picked.items()})

    def to_dict(self) -> dict:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}


# --------------------------------------------------------------------------- one batch

@dataclass(frozen=True)
class TextBatch:
    """The token metadata of B windows: ids, sentence ids and separators [B, T], pieces."""

    input_ids: np.ndarray
    sentence_ids: np.ndarray
    separators: np.ndarray
    tokens: list[list[str]]

    @classmethod
    def of(cls, batch: Sequence[Window]) -> TextBatch:
        return cls(input_ids=np.stack([w.input_ids for w in batch]),
                   sentence_ids=np.stack([w.sentence_ids for w in batch]),
                   separators=np.stack([w.separators for w in batch]),
                   tokens=[w.tokens for w in batch])

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


@dataclass
class TextRows:
    """The per-text rows (TEXT_ROWS) of every text so far, in text order. They live in blocks of
    ``block`` texts, one array per row name and block, filled in turn: a few large allocations
    (one small array per batch would pin heap pages between the batches' temporaries) that are
    never copied as a stream grows, so the rows take at most one block more than their size."""

    block: int = 1024
    blocks: list[dict[str, np.ndarray]] = field(default_factory=list)
    count: int = 0

    def extend(self, rows: dict[str, np.ndarray] | TextRows) -> None:
        """Append the rows of more texts (a dict of [B, …] arrays, or another TextRows)."""
        rows = rows.arrays() if isinstance(rows, TextRows) else rows
        n, done = len(next(iter(rows.values()), ())), 0
        while done < n:
            if self.count == len(self.blocks) * self.block:
                self.blocks.append({name: np.empty((self.block, *row.shape[1:]), row.dtype)
                                    for name, row in rows.items()})
            at = self.count - (len(self.blocks) - 1) * self.block
            take = min(n - done, self.block - at)
            for name, row in rows.items():
                self.blocks[-1][name][at:at + take] = row[done:done + take]
            done, self.count = done + take, self.count + take

    def arrays(self) -> dict[str, np.ndarray]:
        """{name: [count, …]}: the rows so far, one array per name (the blocks joined)."""
        if not self.blocks:
            return {}
        used = [min(self.block, self.count - i * self.block) for i in range(len(self.blocks))]
        return {name: np.concatenate([b[name][:u] for b, u in zip(self.blocks, used)]) for name in self.blocks[0]}

    def bytes_per_text(self) -> int:
        """The bytes of one text's rows."""
        return sum(a[0].nbytes for a in self.blocks[0].values()) if self.blocks else 0


@dataclass
class ContextStats:
    """Running totals over texts (L blocks, H heads, T tokens, P = T(T − 1)/2 pairs, K
    sensitivity thresholds, D draws of the random-positions null).

    texts, tokens, separators                 counts of texts, tokens, separator tokens
    all_pairs, all_same_sentence, all_repeats  chance levels: every pair of P, those inside one
                                               sentence, those joining two equal word tokens
    head_distance_counts       [L, H, T] high pairs at distance d (column d; column 0 stays 0)
    head_pairs                 [L, H]   high pairs
    head_distance              [L, H]   Σ d over high pairs
    head_same_sentence         [L, H]   high pairs inside one sentence
    head_repeats               [L, H]   high pairs joining two occurrences of one word token
    head_common_focus          [L, H]   texts whose focus is a common token
    head_attended              [L, H]   tokens with a_j ≥ τ
    head_attended_separators   [L, H]   … that are separators
    unique_focus               [L, H+1] texts with k distinct focus positions over the heads
    attended_kinds             [L, 4]   tokens with a_j ≥ τ by kind (TOKEN_KINDS), all heads
    summed_similarity          [L, P]   Σ over texts and heads of S_ij / max_P |S| (float64)
    focus_null_draws           [D, L]   Σ over texts of (#distinct positions) / H when every head's
                                        focus is a uniformly random position, draw by draw (float64)
    focus_ids_null_draws       [D, L]   the same for distinct token ids
    sensitivity_*              [K, L]   the same counts for a_j ≥ t and for S_ij ≥ t · max S
    focus_tokens               L × H Counters of focus pieces (bounded by the vocabulary)
    per_text                   TEXT_ROWS of every text, in text order (:class:`TextRows`)
    """

    texts: int
    tokens: int
    separators: int
    all_pairs: int
    all_same_sentence: int
    all_repeats: int
    head_distance_counts: np.ndarray
    head_pairs: np.ndarray
    head_distance: np.ndarray
    head_same_sentence: np.ndarray
    head_repeats: np.ndarray
    head_common_focus: np.ndarray
    head_attended: np.ndarray
    head_attended_separators: np.ndarray
    unique_focus: np.ndarray
    attended_kinds: np.ndarray
    summed_similarity: np.ndarray
    focus_null_draws: np.ndarray
    focus_ids_null_draws: np.ndarray
    sensitivity_attended: np.ndarray
    sensitivity_attended_separators: np.ndarray
    sensitivity_pairs: np.ndarray
    sensitivity_distance: np.ndarray
    sensitivity_same_sentence: np.ndarray
    focus_tokens: list[list[Counter]]
    per_text: TextRows

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, n_tokens: int, n_thresholds: int,
              n_draws: int = NULL_DRAWS) -> ContextStats:
        heads, sensitivity, draws = (n_layers, n_heads), (n_thresholds, n_layers), (n_draws, n_layers)
        counts = {name: np.zeros(heads, np.int64) for name in (
            "head_pairs", "head_distance", "head_same_sentence", "head_repeats", "head_common_focus",
            "head_attended", "head_attended_separators")}
        counts |= {name: np.zeros(sensitivity, np.int64) for name in (
            "sensitivity_attended", "sensitivity_attended_separators", "sensitivity_pairs", "sensitivity_distance",
            "sensitivity_same_sentence")}
        return cls(
            texts=0, tokens=0, separators=0, all_pairs=0, all_same_sentence=0, all_repeats=0,
            head_distance_counts=np.zeros((n_layers, n_heads, n_tokens), np.int64),
            unique_focus=np.zeros((n_layers, n_heads + 1), np.int64),
            attended_kinds=np.zeros((n_layers, len(TOKEN_KINDS)), np.int64),
            summed_similarity=np.zeros((n_layers, n_tokens * (n_tokens - 1) // 2)),
            focus_null_draws=np.zeros(draws), focus_ids_null_draws=np.zeros(draws),
            focus_tokens=[[Counter() for _ in range(n_heads)] for _ in range(n_layers)], per_text=TextRows(),
            **counts)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(L, H, T)."""
        return self.head_distance_counts.shape

    @property
    def distance_counts(self) -> np.ndarray:
        """[L, T]: high pairs at distance d, all heads."""
        return self.head_distance_counts.sum(axis=1)

    @property
    def nbytes(self) -> int:
        """Bytes of what the totals keep: their arrays, the per-text rows at their size (their
        blocks hold at most one block more) and the focus counters (each Counter's table and
        keys, and its counts above 256, which Python does not share)."""
        arrays = sum(v.nbytes for f in fields(self) if isinstance(v := getattr(self, f.name), np.ndarray))
        counters = sum(sys.getsizeof(c) + sum(sys.getsizeof(k) + (sys.getsizeof(v) if v > 256 else 0)
                                              for k, v in c.items())
                       for row in self.focus_tokens for c in row)
        return arrays + self.per_text.count * self.per_text.bytes_per_text() + counters

    def text_rows(self) -> dict[str, np.ndarray]:
        """The per-text rows of every text so far: {name: [n_texts, …]} (TEXT_ROWS)."""
        return self.per_text.arrays()

    def __iadd__(self, other: ContextStats) -> ContextStats:
        """Add other's totals to these and append its per-text rows, in place (other is unchanged):
        how a stream folds its batches."""
        if (self.shape, self.sensitivity_pairs.shape, self.focus_null_draws.shape) != (
                other.shape, other.sensitivity_pairs.shape, other.focus_null_draws.shape):
            raise ValueError(f"cannot add statistics of shapes {self.shape} and {other.shape}")
        for f in fields(self):
            if f.name not in ("focus_tokens", "per_text"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        for mine, theirs in zip(self.focus_tokens, other.focus_tokens):
            for counter, more in zip(mine, theirs):
                counter.update(more)
        self.per_text.extend(other.per_text)
        return self

    def __add__(self, other: ContextStats) -> ContextStats:
        """The totals of both, and the per-text rows of self followed by other's (a new object;
        neither operand changes)."""
        total = ContextStats.empty(*self.shape, self.sensitivity_pairs.shape[0], self.focus_null_draws.shape[0])
        total += self
        total += other
        return total


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
    for l, (out, pattern) in enumerate(zip(head_outs, patterns)):
        values = pair_values(context_similarity(np.swapaxes(out, 1, 2)))  # [B, H, P]
        _pair_statistics(stats, rows, l, values, text, settings)
        _attention_statistics(stats, rows, l, attention_received(pattern), text, settings)
    _focus_null(stats, batch, settings, first)
    stats.per_text.extend(rows)
    return stats


def _row_dtype(name: str) -> type:
    """float64 for the nulls; int64 for distance sums (up to H · T² / 2 · T); int32 for counts
    (at most H · T² / 2, below 2³¹ up to H = 32 heads at T = 8,192)."""
    return np.float64 if name.endswith("null") else np.int64 if name.endswith("distance") else np.int32


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


def _pair_statistics(stats: ContextStats, rows: dict, l: int, values: np.ndarray, text: _TextContext,
                     settings: Settings) -> None:
    """Block l's high pairs (top quantile q, and S_ij ≥ t · max S at each t), focus tokens and
    summed scaled matrix."""
    n_texts, n_heads, _ = values.shape
    high = quantile_mask(values, settings.q)
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
    stats.head_common_focus[l] = common.sum(axis=0)
    rows["distinct_focus"][:, l] = distinct_counts(focus)
    rows["distinct_focus_ids"][:, l] = distinct_counts(np.take_along_axis(text.batch.input_ids, focus, axis=1))
    stats.unique_focus[l] = np.bincount(rows["distinct_focus"][:, l], minlength=n_heads + 1)
    for h in range(n_heads):
        stats.focus_tokens[l][h].update(text.batch.tokens[b][focus[b, h]] for b in range(n_texts))
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
