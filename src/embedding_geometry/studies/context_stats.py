"""Per-batch statistics of chapter 4's study and their running totals (Methods page, section
``methods-heads``).

One batch of B texts of T tokens, captured on a model of L blocks with H heads
(:class:`~embedding_geometry.core.streaming.Captured`), becomes a :class:`ContextStats` of
counts and sums: high pairs of every S_{l,h} (:mod:`~embedding_geometry.studies.context_matrices`),
their distances, how many lie in one sentence or join a repeated token, focus tokens, and the
tokens with high attention a_j ≥ τ, with the same counts at every threshold of the sensitivity
check. Statistics add (``+``), so a stream of batches folds into totals of fixed size, plus, for
the claims' bootstrap intervals over texts, (7 + 4K) · L + 2 numbers per text (:data:`TEXT_ROWS`;
int32 counts, int64 distance sums): 20,000 texts of BERT-12 at K = 5 hold about 32 MB, beside a
few hundred MB for the model and one batch's captured attention.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from ..core.windows import Window
from .context_matrices import (attention_received, context_similarity, expected_distinct, focus_positions,
                               pair_values, quantile_mask, relative_mask, upper_pairs)

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
    "focus_null": ("B", "E[distinct positions] if each head's focus were a uniformly random position"),
    "focus_ids_null": ("B", "E[distinct token ids] likewise (expected_distinct of the text's id counts)"),
    "sensitivity_attended": ("B K L", "tokens with a_j ≥ t at each threshold t"),
    "sensitivity_attended_separators": ("B K L", "… that are separators"),
    "sensitivity_pairs": ("B K L", "pairs with S_ij ≥ t · max S"),
    "sensitivity_distance": ("B K L", "Σ d over those pairs"),
}
"""The per-text rows a batch keeps for the claims' intervals (each row: one text)."""


@dataclass(frozen=True)
class Settings:
    """The chapter's thresholds, each a notebook parameter (validated by the chapter's rule table).

    q                       quantile that makes a pair "high" (METHODS.md §4: 0.99)
    attention_threshold     τ: a_j ≥ τ makes token j "high attention" (the paper: 0.3)
    sensitivity_thresholds  the τ and t values of the sensitivity check (0.1 … 0.5)
    common_min_count        a word token is *common* when its id occurs at least this often in its text
    repeat_share_threshold  a head whose high pairs are repeats at least this often is repetition-detecting
    common_focus_threshold  … else common-token when its focus is a common token in at least this share of texts
    """

    q: float = 0.99
    attention_threshold: float = 0.3
    sensitivity_thresholds: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5)
    common_min_count: int = 3
    repeat_share_threshold: float = 0.25
    common_focus_threshold: float = 0.5

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
    """Running totals over texts (L blocks, H heads, T tokens, K sensitivity thresholds).

    texts, tokens, separators                 counts of texts, tokens, separator tokens
    all_pairs, all_same_sentence, all_repeats  chance levels: every pair of P, those inside one
                                               sentence, those joining two equal word tokens
    distance_counts            [L, T]   high pairs at distance d (column d; column 0 stays 0)
    head_pairs                 [L, H]   high pairs
    head_distance              [L, H]   Σ d over high pairs
    head_same_sentence         [L, H]   high pairs inside one sentence
    head_repeats               [L, H]   high pairs joining two occurrences of one word token
    head_common_focus          [L, H]   texts whose focus is a common token
    head_attended              [L, H]   tokens with a_j ≥ τ
    head_attended_separators   [L, H]   … that are separators
    unique_focus               [L, H+1] texts with k distinct focus positions over the heads
    attended_kinds             [L, 4]   tokens with a_j ≥ τ by kind (TOKEN_KINDS), all heads
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
    distance_counts: np.ndarray
    head_pairs: np.ndarray
    head_distance: np.ndarray
    head_same_sentence: np.ndarray
    head_repeats: np.ndarray
    head_common_focus: np.ndarray
    head_attended: np.ndarray
    head_attended_separators: np.ndarray
    unique_focus: np.ndarray
    attended_kinds: np.ndarray
    sensitivity_attended: np.ndarray
    sensitivity_attended_separators: np.ndarray
    sensitivity_pairs: np.ndarray
    sensitivity_distance: np.ndarray
    sensitivity_same_sentence: np.ndarray
    focus_tokens: list[list[Counter]]
    per_text: TextRows

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, n_tokens: int, n_thresholds: int) -> ContextStats:
        heads, sensitivity = (n_layers, n_heads), (n_thresholds, n_layers)
        zeros = lambda shape: np.zeros(shape, np.int64)  # noqa: E731
        return cls(
            texts=0, tokens=0, separators=0, all_pairs=0, all_same_sentence=0, all_repeats=0,
            distance_counts=zeros((n_layers, n_tokens)), head_pairs=zeros(heads), head_distance=zeros(heads),
            head_same_sentence=zeros(heads), head_repeats=zeros(heads), head_common_focus=zeros(heads),
            head_attended=zeros(heads), head_attended_separators=zeros(heads),
            unique_focus=zeros((n_layers, n_heads + 1)), attended_kinds=zeros((n_layers, len(TOKEN_KINDS))),
            sensitivity_attended=zeros(sensitivity),
            sensitivity_attended_separators=zeros(sensitivity), sensitivity_pairs=zeros(sensitivity),
            sensitivity_distance=zeros(sensitivity), sensitivity_same_sentence=zeros(sensitivity),
            focus_tokens=[[Counter() for _ in range(n_heads)] for _ in range(n_layers)], per_text=TextRows())

    @property
    def shape(self) -> tuple[int, int, int]:
        """(L, H, T)."""
        return self.head_pairs.shape + (self.distance_counts.shape[1],)

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
        if self.shape != other.shape or self.sensitivity_pairs.shape != other.sensitivity_pairs.shape:
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
        total = ContextStats.empty(*self.shape, self.sensitivity_pairs.shape[0])
        total += self
        total += other
        return total


def batch_statistics(head_outs: Sequence[np.ndarray], patterns: Sequence[np.ndarray],
                     batch: TextBatch, settings: Settings) -> ContextStats:
    """The statistics of one batch. head_outs: L × [B, T, H, d_head] (``blocks.{l}.attn.head_out``);
    patterns: L × [B, H, T, T] (``blocks.{l}.attn.pattern``)."""
    n_texts, n_tokens, n_heads, _ = np.shape(head_outs[0])
    n_layers, n_thresholds = len(head_outs), len(settings.sensitivity_thresholds)
    text = _TextContext.of(batch, settings.common_min_count)
    stats = ContextStats.empty(n_layers, n_heads, n_tokens, n_thresholds)
    stats.texts, stats.tokens, stats.separators = n_texts, n_texts * n_tokens, int(text.separators.sum())
    stats.all_pairs = n_texts * len(text.distance)
    stats.all_same_sentence, stats.all_repeats = int(text.same.sum()), int(text.repeat.sum())
    sizes = {"B": n_texts, "L": n_layers, "K": n_thresholds}
    rows = {name: np.zeros([sizes[a] for a in axes.split()], _row_dtype(name)) for name, (axes, _) in TEXT_ROWS.items()}
    rows["focus_null"][:] = expected_distinct(np.ones(n_tokens), n_heads)
    rows["focus_ids_null"][:] = [expected_distinct(np.unique(row, return_counts=True)[1], n_heads)
                                 for row in batch.input_ids]
    for l, (out, pattern) in enumerate(zip(head_outs, patterns)):
        values = pair_values(context_similarity(np.swapaxes(out, 1, 2)))  # [B, H, P]
        _pair_statistics(stats, rows, l, values, text, settings)
        _attention_statistics(stats, rows, l, attention_received(pattern), text, settings)
    stats.per_text.extend(rows)
    return stats


def _row_dtype(name: str) -> type:
    """float64 for the nulls; int64 for distance sums (up to H · T² / 2 · T); int32 for counts
    (at most H · T² / 2, below 2³¹ up to H = 32 heads at T = 8,192)."""
    return np.float64 if name.endswith("null") else np.int64 if name.endswith("distance") else np.int32


@dataclass(frozen=True)
class _TextContext:
    """What a batch's pairs and tokens are: pair distance d [P]; same sentence and repeat
    [B, 1, P]; common tokens [B, T]; separators and kinds (TOKEN_KINDS index) [B, 1, T]."""

    batch: TextBatch
    distance: np.ndarray
    same: np.ndarray
    repeat: np.ndarray
    common: np.ndarray
    separators: np.ndarray
    kinds: np.ndarray

    @classmethod
    def of(cls, batch: TextBatch, common_min_count: int) -> _TextContext:
        i, j = upper_pairs(batch.input_ids.shape[1])
        sid, ids = batch.sentence_ids, batch.input_ids
        return cls(batch=batch, distance=j - i, same=((sid[:, i] == sid[:, j]) & (sid[:, i] >= 0))[:, None],
                   repeat=((ids[:, i] == ids[:, j]) & (sid[:, i] >= 0) & (sid[:, j] >= 0))[:, None],
                   common=batch.common_tokens(common_min_count), separators=batch.separators[:, None],
                   kinds=batch.kinds()[:, None])


def _pair_statistics(stats: ContextStats, rows: dict, l: int, values: np.ndarray, text: _TextContext,
                     settings: Settings) -> None:
    """Block l's high pairs (top quantile q, and S_ij ≥ t · max S at each t) and focus tokens."""
    n_texts, n_heads, _ = values.shape
    n_tokens = stats.shape[2]
    high = quantile_mask(values, settings.q)
    distance, inside = high * text.distance, high & text.same  # [B, H, P]
    stats.distance_counts[l] = np.bincount(np.broadcast_to(text.distance, high.shape)[high], minlength=n_tokens)
    for name, per_pair in (("high_pairs", high), ("pair_distance", distance), ("same_sentence", inside)):
        rows[name][:, l] = per_pair.sum(axis=(1, 2))
    stats.head_pairs[l], stats.head_distance[l] = high.sum(axis=(0, 2)), distance.sum(axis=(0, 2))
    stats.head_same_sentence[l] = inside.sum(axis=(0, 2))
    stats.head_repeats[l] = (high & text.repeat).sum(axis=(0, 2))
    focus = focus_positions(high, n_tokens)  # [B, H]
    stats.head_common_focus[l] = np.take_along_axis(text.common, focus, axis=1).sum(axis=0)
    rows["distinct_focus"][:, l] = [len(set(row)) for row in focus.tolist()]
    focus_ids = np.take_along_axis(text.batch.input_ids, focus, axis=1)
    rows["distinct_focus_ids"][:, l] = [len(set(row)) for row in focus_ids.tolist()]
    stats.unique_focus[l] = np.bincount(rows["distinct_focus"][:, l], minlength=n_heads + 1)
    for h in range(n_heads):
        stats.focus_tokens[l][h].update(text.batch.tokens[b][focus[b, h]] for b in range(n_texts))
    for k, t in enumerate(settings.sensitivity_thresholds):
        relative = relative_mask(values, t)
        rows["sensitivity_pairs"][:, k, l] = relative.sum(axis=(1, 2))
        rows["sensitivity_distance"][:, k, l] = (relative * text.distance).sum(axis=(1, 2))
        stats.sensitivity_same_sentence[k, l] = (relative & text.same).sum()
    stats.sensitivity_pairs[:, l] = rows["sensitivity_pairs"][:, :, l].sum(axis=0)
    stats.sensitivity_distance[:, l] = rows["sensitivity_distance"][:, :, l].sum(axis=0)


def _attention_statistics(stats: ContextStats, rows: dict, l: int, received: np.ndarray, text: _TextContext,
                          settings: Settings) -> None:
    """Block l's high-attention tokens (a_j ≥ τ, and a_j ≥ t at each t); received: [B, H, T]."""
    seps, kinds = text.separators, text.kinds
    attended = received >= settings.attention_threshold
    rows["attended"][:, l] = attended.sum(axis=(1, 2))
    rows["attended_separators"][:, l] = (attended & seps).sum(axis=(1, 2))
    stats.head_attended[l] = attended.sum(axis=(0, 2))
    stats.head_attended_separators[l] = (attended & seps).sum(axis=(0, 2))
    stats.attended_kinds[l] = np.bincount(np.broadcast_to(kinds, attended.shape)[attended], minlength=len(TOKEN_KINDS))
    for k, t in enumerate(settings.sensitivity_thresholds):
        rows["sensitivity_attended"][:, k, l] = (received >= t).sum(axis=(1, 2))
        rows["sensitivity_attended_separators"][:, k, l] = ((received >= t) & seps).sum(axis=(1, 2))
    stats.sensitivity_attended[:, l] = rows["sensitivity_attended"][:, :, l].sum(axis=0)
    stats.sensitivity_attended_separators[:, l] = rows["sensitivity_attended_separators"][:, :, l].sum(axis=0)
