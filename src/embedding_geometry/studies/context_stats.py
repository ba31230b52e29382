"""The running totals of chapter 4's study (the book's Methods page, section ``methods-heads``):
its settings, the per-text rows it keeps for the claims' intervals, and resamples of the texts.

One batch of texts becomes a :class:`ContextStats` of counts and sums
(:mod:`~embedding_geometry.studies.context_batch`): high pairs of every S_{l,h}
(:mod:`~embedding_geometry.studies.context_matrices`), their distances (per head), how many lie
in one sentence or join a repeated token, focus tokens and draws of their random-positions
null, the tokens with high attention a_j ≥ τ, the sentence ends that attention finds, the
summed scaled matrices S / max |S|, and the same counts at every threshold of the sensitivity
check. Statistics add (``+``), so a stream of batches folds into totals of fixed size, plus, for
the claims' bootstrap intervals over texts, a few numbers per text and block (:data:`TEXT_ROWS`;
counts, ids and distance sums, float64 rank correlations): (13 H + 8 + 4 K) · L + 7 numbers, the
integers kept in the narrowest type that holds them (:class:`TextRows`), about 5 kB per text of
BERT-12 at K = 5 and T = 128, 100 MB for the paper's 20,000 texts, beside a
few hundred MB for the model and one batch's captured attention. Each block's context similarity
pairs are compared with its attention pairs and with their cosine form too
(:mod:`~embedding_geometry.studies.context_attention`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import numpy as np

from ..core.hierarchical import unit_weights

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
    "topic": ("B", "the corpus topic of the text's first sentence (index into corpora.topics(); −1: none)"),
    "sensitivity_attended": ("B K L", "tokens with a_j ≥ t at each threshold t"),
    "sensitivity_attended_separators": ("B K L", "… that are separators"),
    "sensitivity_pairs": ("B K L", "pairs with S_ij ≥ t · max S"),
    "sensitivity_distance": ("B K L", "Σ d over those pairs"),
    "head_high_pairs": ("B L H", "high pairs of each head"),
    "head_pair_distance": ("B L H", "Σ d over them"),
    "head_repeats": ("B L H", "… joining two occurrences of one word token"),
    "head_common_focus": ("B L H", "1 when the head's focus is a common token"),
    "head_focus_id": ("B L H", "the token id of the head's focus"),
    "head_attended": ("B L H", "tokens with a_j ≥ τ"),
    "head_attended_separators": ("B L H", "… that are separators"),
    "head_attention_high": ("B L H", "pairs whose attention A_ij + A_ji is at or above its q-quantile"),
    "head_attention_overlap": ("B L H", "… that are high pairs of S too"),
    "head_attention_rank": ("B L H", "Spearman's ρ between S_ij and A_ij + A_ji on the sampled pairs"),
    "head_cosine_high": ("B L H", "pairs whose cosine cos_ij = S_ij / (‖o_i‖ ‖o_j‖) is at or above its q-quantile"),
    "head_cosine_overlap": ("B L H", "… that are high pairs of S too"),
    "head_cosine_rank": ("B L H", "Spearman's ρ between S_ij and cos_ij on the sampled pairs"),
}
"""The per-text rows a batch keeps for the claims' intervals (each row: one text)."""

NULL_DRAWS = 1000
"""D: draws of the random-positions null (each a choice of focus for every head, block and text)."""
RESAMPLES = 20_000
"""Resamples of the texts the study draws itself (:func:`text_resamples`; as many as the claims
engine draws: enough for the tails of an interval at the multiplicity-adjusted level)."""


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


@dataclass
class TextRows:
    """The per-text rows (TEXT_ROWS) of every text so far, in text order. They live in blocks of
    ``block`` texts, one array per row name and block, filled in turn: a few large allocations
    (one small array per batch would pin heap pages between the batches' temporaries) that are
    never copied as a stream grows, so the rows take at most one block more than their size.
    A block keeps an integer row in the narrowest integer type that holds the values it has seen
    (:func:`_narrowest`; widened when a text needs more): counts of pairs and tokens fit in two
    bytes at the book's lengths, a third of the four or eight they are made in. :meth:`arrays`
    gives them back in the type they came in, value for value."""

    block: int = 1024
    blocks: list[dict[str, np.ndarray]] = field(default_factory=list)
    count: int = 0
    dtypes: dict[str, np.dtype] = field(default_factory=dict)

    def extend(self, rows: dict[str, np.ndarray] | TextRows) -> None:
        """Append the rows of more texts (a dict of [B, …] arrays, or another TextRows)."""
        rows = rows.arrays() if isinstance(rows, TextRows) else rows
        n, done = len(next(iter(rows.values()), ())), 0
        for name, row in rows.items():
            self.dtypes.setdefault(name, row.dtype)
        while done < n:
            if self.count == len(self.blocks) * self.block:
                self.blocks.append({name: np.empty((self.block, *row.shape[1:]), np.int8 if row.dtype.kind in "iu"
                                                   else row.dtype) for name, row in rows.items()})
            at = self.count - (len(self.blocks) - 1) * self.block
            take = min(n - done, self.block - at)
            block = self.blocks[-1]
            for name, row in rows.items():
                part = row[done:done + take]
                if (wider := _narrowest(part, block[name].dtype)) != block[name].dtype:
                    block[name] = block[name].astype(wider)
                block[name][at:at + take] = part
            done, self.count = done + take, self.count + take

    def arrays(self) -> dict[str, np.ndarray]:
        """{name: [count, …]}: the rows so far, one array per name (the blocks joined), each in the type it came in."""
        if not self.blocks:
            return {}
        used = [min(self.block, self.count - i * self.block) for i in range(len(self.blocks))]
        return {name: np.concatenate([b[name][:u] for b, u in zip(self.blocks, used)]).astype(self.dtypes[name],
                                                                                               copy=False)
                for name in self.blocks[0]}

    def bytes_per_text(self) -> int:
        """The bytes of one text's rows, as the last block keeps them."""
        return sum(a[0].nbytes for a in self.blocks[-1].values()) if self.blocks else 0


def _narrowest(values: np.ndarray, dtype: np.dtype) -> np.dtype:
    """``dtype``, or for integers the narrowest signed integer type that holds both ``values`` and
    ``dtype``'s own range."""
    if dtype.kind not in "iu" or not values.size:
        return dtype
    return np.result_type(dtype, np.min_scalar_type(-abs(int(values.min())) - 1), np.min_scalar_type(
        -abs(int(values.max())) - 1))


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
    focus_pieces               {token id: piece} of every focus token seen (bounded by the vocabulary);
                               which head focused on which, text by text, is the row ``head_focus_id``
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
    focus_pieces: dict[int, str]
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
            focus_pieces={}, per_text=TextRows(),
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
        blocks hold at most one block more) and the focus pieces (the dict's table, its ids above
        256, which Python does not share, and its strings)."""
        arrays = sum(v.nbytes for f in fields(self) if isinstance(v := getattr(self, f.name), np.ndarray))
        pieces = sys.getsizeof(self.focus_pieces) + sum(
            (sys.getsizeof(i) if i > 256 else 0) + sys.getsizeof(p) for i, p in self.focus_pieces.items())
        return arrays + self.per_text.count * self.per_text.bytes_per_text() + pieces

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
            if f.name not in ("focus_pieces", "per_text"):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        self.focus_pieces.update(other.focus_pieces)
        self.per_text.extend(other.per_text)
        return self

    def __add__(self, other: ContextStats) -> ContextStats:
        """The totals of both, and the per-text rows of self followed by other's (a new object;
        neither operand changes)."""
        total = ContextStats.empty(*self.shape, self.sensitivity_pairs.shape[0], self.focus_null_draws.shape[0])
        total += self
        total += other
        return total


def text_resamples(n_texts: int, seed: int, resamples: int = RESAMPLES) -> Iterator[np.ndarray]:
    """Bootstrap weights of the texts, [b, n] per chunk (each row: the counts of n draws with
    replacement, over n; rows sum to 1), ``resamples`` rows in all, from a generator seeded by
    (``seed``, n)."""
    rng = np.random.default_rng([seed, n_texts])
    chunk = max(1, min(resamples, 2 ** 21 // n_texts))
    for start in range(0, resamples, chunk):
        yield unit_weights(rng, min(chunk, resamples - start), n_texts)
