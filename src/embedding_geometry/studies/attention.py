"""Attention-head context similarity (METHODS.md §4, after Halevi et al., arXiv 2512.21956).

For one text of exactly T tokens and a model of L blocks with H heads of width d_head:

    O_{l,h}     = A_{l,h} V_{l,h}                      [T, d_head]  head output: the input of the
                                                                    attention output projection (hook)
    S_{l,h}     = O Oᵀ, diagonal set to 0              [T, T]       context similarity matrix
    P           = {(i, j) : i < j}                     T(T − 1)/2 off-diagonal pairs (S is symmetric)
    θ_q         = q-quantile of {S_ij : (i, j) ∈ P}    linear interpolation (numpy's default)
    high pairs  = {(i, j) ∈ P : S_ij ≥ θ_q}            about (1 − q)·|P| pairs per matrix
    d(i, j)     = j − i                                distance of a pair, 1 … T − 1
    focus       = argmax_t #{high pairs with endpoint t}   a token position (lowest on ties)
    a_j         = c_j / max_k c_k,  c_j = Σ_i A_ij     attention received by token j, max 1   [T]

Per block l, pooled over its H heads and all texts (counts are summed first, then divided):

    mean_pair_distance[l]      = Σ d(i, j) / #high pairs
    same_sentence_fraction[l]  = #high pairs whose tokens lie in one sentence / #high pairs
    unique_focus_tokens[l]     = histogram over texts of #distinct focus positions among the H heads
    separator_attention[l]     = #{j : a_j ≥ τ, j a separator} / #{j : a_j ≥ τ}

A *separator* is the closing [SEP] or the final ``.``, ``!`` or ``?`` of a whole sentence;
special tokens belong to no sentence. For the threshold-sensitivity check, a second high-pair
rule keeps the pairs with S_ij ≥ t · max_P S (t in 0.1 … 0.5), beside the quantile rule.

Everything is a count or a sum, so one batch's statistics fold into running totals
(:class:`ContextStats` supports ``+``): memory does not grow with the number of texts.
Texts are built by :func:`windows` from whole sentences (see there for the one cut sentence)
of the source :func:`sentence_stream` names.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from ..core import corpora
from ..book import parameters
from ..core.errors import ParameterError

SENTENCE_END = (".", "!", "?")
HEAD_CLASSES = ("repetition", "common-token", "other")
TOKEN_KINDS = ("[CLS]", "[SEP]", "sentence end", "other")
"""Kinds of token, for what high-attention tokens are: the opening special token, the closing
[SEP], the final . ! ? of a whole sentence, anything else."""
FIRST_TEXTS = 20  # how many texts the results record verbatim (all are hashed)


# --------------------------------------------------------------------------- texts of T tokens

@dataclass(frozen=True)
class Window:
    """One text of exactly T tokens made of consecutive sentences.

    text            what the model reads (the last sentence possibly cut, see :func:`windows`)
    input_ids       int64 [T]  [CLS] … [SEP], no padding
    tokens          T tokenizer pieces
    sentence_ids    int64 [T]  sentence index of each token, −1 for special tokens
    separators      bool  [T]  [SEP] and the sentence-final . ! ? of whole sentences
    whole_sentences how many of its sentences are complete
    """

    text: str
    input_ids: np.ndarray
    tokens: list[str]
    sentence_ids: np.ndarray
    separators: np.ndarray
    whole_sentences: int


def windows(tokenizer, sentences: Iterable[str], n_texts: int, length: int = 128) -> Iterator[Window]:
    """``n_texts`` texts of exactly ``length`` tokens (T, [CLS] and [SEP] included).

    Sentences are taken in order and joined with a space until the text reaches T tokens. All
    of a text's sentences are whole except, usually, the last one, which is cut at the T-th token
    (no padding, so every position is a real token); the next text starts with the next sentence.
    Blank sentences are skipped. Raises ParameterError when ``sentences`` run out.
    """
    parameters.integer(4)("text_length", length)
    stream = (s.strip() for s in sentences if s.strip())
    for made in range(n_texts):
        chosen: list[str] = []
        while True:
            sentence = next(stream, None)
            if sentence is None:
                raise ParameterError("n_texts", f"at most {made} texts of {length} tokens from these sentences",
                                     n_texts)
            chosen.append(sentence)
            encoding = tokenizer(" ".join(chosen), truncation=True, max_length=length,
                                 return_offsets_mapping=True, return_special_tokens_mask=True)
            if len(encoding["input_ids"]) == length:
                break
        yield _window(tokenizer, chosen, encoding)


def _window(tokenizer, chosen: list[str], encoding) -> Window:
    joined = " ".join(chosen)
    starts = np.cumsum([0] + [len(s) + 1 for s in chosen[:-1]])
    special = np.asarray(encoding["special_tokens_mask"], bool)
    offsets = np.asarray(encoding["offset_mapping"])
    sentence_ids = np.where(special, -1, np.searchsorted(starts, offsets[:, 0], side="right") - 1)
    end = int(offsets[~special][-1, 1])
    whole = len(chosen) - (end < len(joined))
    ids = np.asarray(encoding["input_ids"], np.int64)
    last_of_sentence = np.append(sentence_ids[1:] != sentence_ids[:-1], True) & (sentence_ids >= 0)
    pieces = np.array([joined[a:b] for a, b in offsets], dtype=object)
    final_stop = last_of_sentence & (sentence_ids < whole) & np.isin(pieces, SENTENCE_END)
    return Window(text=joined[:end], input_ids=ids, tokens=tokenizer.convert_ids_to_tokens(ids.tolist()),
                  sentence_ids=sentence_ids.astype(np.int64),
                  separators=final_stop | (ids == tokenizer.sep_token_id), whole_sentences=whole)


def cycled(sentences: Sequence[str], seed: int = 0) -> Iterator[str]:
    """The sentences in their order, then again in a new seeded random order, and so on: a
    source for more texts than one pass over a small corpus gives."""
    sentences = list(sentences)
    if not sentences:
        raise ParameterError("sentences", "a non-empty list of sentences", sentences)
    yield from sentences
    rng = np.random.default_rng(seed)
    while True:
        yield from (sentences[i] for i in rng.permutation(len(sentences)))


def sentence_stream(texts: str, seed: int = 0) -> Iterator[str]:
    """The sentences the chapter's ``texts`` parameter names, from the start: ``"corpus"``, the
    book's corpus :func:`cycled` with ``seed``; ``"wikitext"``, :func:`wikitext_sentences`.
    Every call starts a new stream, so two calls give the same texts through :func:`windows`."""
    if PARAMETER_RULES["texts"]("texts", texts) == "corpus":
        return cycled(corpora.corpus()["sentence"], seed)
    return wikitext_sentences()


def wikitext_sentences(data_files: str | Path | None = None,
                       name: str = "Salesforce/wikitext", config: str = "wikitext-103-raw-v1") -> Iterator[str]:
    """Sentences of WikiText-103 (raw), streamed with ``datasets`` (needs the Hugging Face hub),
    or of a local text file in the same one-paragraph-per-line format (``data_files``).
    Headings (`` = Title = ``) and blank lines are skipped; paragraphs are split after a
    space-separated ``.``, ``!`` or ``?`` (WikiText's tokenisation keeps "U.S." whole)."""
    from datasets import load_dataset

    try:
        rows = (load_dataset(name, config, split="train", streaming=True) if data_files is None
                else load_dataset("text", data_files=str(data_files), split="train", streaming=True))
        for row in rows:
            yield from split_wikitext(row["text"])
    except (ConnectionError, OSError) as error:
        raise ParameterError("texts", f"'corpus' offline ({name} could not be read: {type(error).__name__})",
                             "wikitext") from error


def split_wikitext(line: str) -> list[str]:
    """The sentences of one WikiText line, with its ``@-@``-style number joiners undone."""
    line = line.strip()
    if not line or line.startswith("="):
        return []
    line = re.sub(r" @([-,.])@ ", r"\1", line)
    return [s for s in re.split(r"(?<= [.!?]) +", line) if s.strip()]


@dataclass
class TextRecord:
    """What the results record about the texts: the first ones verbatim, a SHA-256 of all
    (each text's UTF-8 bytes followed by a newline, in order), and counts."""

    first: list[str] = field(default_factory=list)
    count: int = 0
    whole_sentences: int = 0
    digest: object = field(default_factory=hashlib.sha256, repr=False)

    def add(self, window: Window) -> None:
        if len(self.first) < FIRST_TEXTS:
            self.first.append(window.text)
        self.count += 1
        self.whole_sentences += window.whole_sentences
        self.digest.update(window.text.encode() + b"\n")

    def to_dict(self) -> dict:
        return {"first": self.first, "count": self.count, "sha256": self.digest.hexdigest(),
                "whole_sentences_per_text": self.whole_sentences / max(self.count, 1)}


# --------------------------------------------------------------------------- matrices and pairs

def context_similarity(head_out: np.ndarray) -> np.ndarray:
    """S = O Oᵀ with its diagonal set to 0, for every leading index.
    head_out: [..., T, d_head] → [..., T, T] (float64; the input is not modified)."""
    import torch  # its batched float64 matmul is several times faster than numpy's

    o = torch.as_tensor(np.asarray(head_out, dtype=np.float64))
    if o.ndim < 2 or o.shape[-2] < 2:
        raise ValueError(f"a context similarity matrix needs at least 2 tokens; got shape {tuple(o.shape)}")
    s = (o @ o.transpose(-1, -2)).numpy()
    s[..., np.arange(o.shape[-2]), np.arange(o.shape[-2])] = 0.0
    return s


def upper_pairs(n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs P = {(i, j) : i < j} of T tokens, row by row: (i [P], j [P])."""
    return np.triu_indices(n_tokens, k=1)


def high_pairs(similarity: np.ndarray, q: float) -> np.ndarray:
    """bool [..., P]: the pairs of P (in :func:`upper_pairs` order) with S_ij ≥ θ_q, the
    q-quantile of that matrix's off-diagonal entries. A matrix that is all zero (a zero head
    output) has no similarity structure: ValueError."""
    _unit_interval("q", q)
    return _quantile_mask(_pair_values(similarity), q)


def relative_high_pairs(similarity: np.ndarray, t: float) -> np.ndarray:
    """bool [..., P]: the pairs with S_ij ≥ t · max_P S and S_ij > 0 (the sensitivity rule)."""
    _unit_interval("t", t)
    return _relative_mask(_pair_values(similarity), t)


def _quantile_mask(values: np.ndarray, q: float) -> np.ndarray:
    if np.any(np.all(values == 0, axis=-1)):
        raise ValueError("a context similarity matrix is all zero (zero head output): no high pairs")
    return values >= np.quantile(values, q, axis=-1, keepdims=True)


def _relative_mask(values: np.ndarray, t: float) -> np.ndarray:
    return (values >= t * values.max(axis=-1, keepdims=True)) & (values > 0)


def _pair_values(similarity: np.ndarray) -> np.ndarray:
    s = np.asarray(similarity, dtype=np.float64)
    i, j = upper_pairs(s.shape[-1])
    return s[..., i, j]


def focus_positions(mask: np.ndarray, n_tokens: int) -> np.ndarray:
    """int64 [...]: the position that is an endpoint of the most high pairs (lowest on ties).
    mask: bool [..., P] from :func:`high_pairs`."""
    return np.argmax(endpoint_counts(mask, n_tokens), axis=-1)


def endpoint_counts(mask: np.ndarray, n_tokens: int) -> np.ndarray:
    """int64 [..., T]: for each position, how many of the marked pairs it is an endpoint of."""
    mask = np.asarray(mask, bool)
    i, j = upper_pairs(n_tokens)
    rows, p = np.nonzero(mask.reshape(-1, len(i)))
    n_rows = int(np.prod(mask.shape[:-1], dtype=np.int64))
    counts = (np.bincount(rows * n_tokens + i[p], minlength=n_rows * n_tokens)
              + np.bincount(rows * n_tokens + j[p], minlength=n_rows * n_tokens))
    return counts.reshape(mask.shape[:-1] + (n_tokens,))


def attention_received(pattern: np.ndarray) -> np.ndarray:
    """a_j = c_j / max_k c_k with c_j = Σ_i A_ij, the column sums of each attention map.
    pattern: [..., T, T] (rows: queries, summing to 1) → [..., T], max 1."""
    c = np.asarray(pattern, dtype=np.float64).sum(axis=-2)
    top = c.max(axis=-1, keepdims=True)
    if np.any(top <= 0):
        raise ValueError("an attention map receives no attention at all (all zero)")
    return c / top


_unit_interval = parameters.number(0, 1)
"""A number in [0, 1], else ParameterError naming the parameter."""


# --------------------------------------------------------------------------- settings

def _numbers_in_unit_interval(name: str, value) -> list[float]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(name, "a non-empty list of numbers in [0, 1]", value)
    return [_unit_interval(name, v) for v in value]


PARAMETER_RULES = {
    "texts": parameters.one_of("corpus", "wikitext"),
    "text_length": parameters.integer(4, 8192),
    "q": _unit_interval,
    "attention_threshold": _unit_interval,
    "sensitivity_thresholds": _numbers_in_unit_interval,
    "common_min_count": parameters.integer(2),
    "repeat_share_threshold": _unit_interval,
    "common_focus_threshold": _unit_interval,
    "matrix_size": parameters.integer(2, 512),
}
"""The chapter's own parameters, for ``parameters.validate`` (shared ones are in ``parameters.RULES``)."""


@dataclass(frozen=True)
class Settings:
    """The chapter's thresholds; each is a notebook parameter and is checked on construction.

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

    def __post_init__(self) -> None:
        for f in fields(self):
            checked = PARAMETER_RULES[f.name](f.name, getattr(self, f.name))
            object.__setattr__(self, f.name, tuple(checked) if isinstance(checked, list) else checked)

    @classmethod
    def from_parameters(cls, values: dict) -> Settings:
        """The settings among a chapter's validated parameters."""
        return cls(**{f.name: values[f.name] for f in fields(cls)})

    def to_dict(self) -> dict:
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}


# --------------------------------------------------------------------------- streaming statistics

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
            focus_tokens=[[Counter() for _ in range(n_heads)] for _ in range(n_layers)])

    @property
    def shape(self) -> tuple[int, int, int]:
        """(L, H, T)."""
        return self.head_pairs.shape + (self.distance_counts.shape[1],)

    def __add__(self, other: ContextStats) -> ContextStats:
        """The totals of both (new object; neither operand changes)."""
        if self.shape != other.shape or self.sensitivity_pairs.shape != other.sensitivity_pairs.shape:
            raise ValueError(f"cannot add statistics of shapes {self.shape} and {other.shape}")
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name)
                  for f in fields(self) if f.name != "focus_tokens"}
        focus = [[a + b for a, b in zip(row_a, row_b)] for row_a, row_b in zip(self.focus_tokens, other.focus_tokens)]
        return ContextStats(**summed, focus_tokens=focus)


def batch_statistics(head_outs: Sequence[np.ndarray], patterns: Sequence[np.ndarray],
                     batch: TextBatch, settings: Settings) -> ContextStats:
    """The statistics of one batch. head_outs: L × [B, T, H, d_head] (``blocks.{l}.attn.head_out``);
    patterns: L × [B, H, T, T] (``blocks.{l}.attn.pattern``)."""
    n_texts, n_tokens, n_heads, _ = np.shape(head_outs[0])
    i, j = upper_pairs(n_tokens)
    distance = j - i
    sid, ids, seps = batch.sentence_ids, batch.input_ids, batch.separators[:, None]
    same = ((sid[:, i] == sid[:, j]) & (sid[:, i] >= 0))[:, None]  # [B, 1, P]
    repeat = ((ids[:, i] == ids[:, j]) & (sid[:, i] >= 0) & (sid[:, j] >= 0))[:, None]
    common = batch.common_tokens(settings.common_min_count)
    kinds = batch.kinds()[:, None]  # [B, 1, T]
    stats = ContextStats.empty(len(head_outs), n_heads, n_tokens, len(settings.sensitivity_thresholds))
    stats.texts, stats.tokens, stats.separators = n_texts, n_texts * n_tokens, int(seps.sum())
    stats.all_pairs, stats.all_same_sentence, stats.all_repeats = n_texts * len(i), int(same.sum()), int(repeat.sum())
    for l, (out, pattern) in enumerate(zip(head_outs, patterns)):
        values = _pair_values(context_similarity(np.swapaxes(out, 1, 2)))  # [B, H, P]
        high = _quantile_mask(values, settings.q)
        stats.distance_counts[l] = np.bincount(np.broadcast_to(distance, high.shape)[high], minlength=n_tokens)
        stats.head_pairs[l] = high.sum(axis=(0, 2))
        stats.head_distance[l] = (high * distance).sum(axis=(0, 2))
        stats.head_same_sentence[l] = (high & same).sum(axis=(0, 2))
        stats.head_repeats[l] = (high & repeat).sum(axis=(0, 2))
        focus = focus_positions(high, n_tokens)  # [B, H]
        stats.head_common_focus[l] = np.take_along_axis(common, focus, axis=1).sum(axis=0)
        stats.unique_focus[l] = np.bincount([len(set(row)) for row in focus.tolist()], minlength=n_heads + 1)
        for h in range(n_heads):
            stats.focus_tokens[l][h].update(batch.tokens[b][focus[b, h]] for b in range(n_texts))
        received = attention_received(pattern)  # [B, H, T]
        attended = received >= settings.attention_threshold
        stats.head_attended[l] = attended.sum(axis=(0, 2))
        stats.head_attended_separators[l] = (attended & seps).sum(axis=(0, 2))
        stats.attended_kinds[l] = np.bincount(np.broadcast_to(kinds, attended.shape)[attended],
                                              minlength=len(TOKEN_KINDS))
        for k, t in enumerate(settings.sensitivity_thresholds):
            stats.sensitivity_attended[k, l] = (received >= t).sum()
            stats.sensitivity_attended_separators[k, l] = ((received >= t) & seps).sum()
            relative = _relative_mask(values, t)
            stats.sensitivity_pairs[k, l] = relative.sum()
            stats.sensitivity_distance[k, l] = (relative * distance).sum()
            stats.sensitivity_same_sentence[k, l] = (relative & same).sum()
    return stats


# --------------------------------------------------------------------------- the streaming pass

@dataclass(frozen=True)
class Example:
    """The first text, kept whole for the figures: S_{l,h} [L, H, T, T] and a_j [L, H, T]."""

    window: Window
    similarity: np.ndarray
    received: np.ndarray


@dataclass(frozen=True)
class Measurement:
    stats: ContextStats
    texts: TextRecord
    example: Example


def head_names(n_layers: int) -> list[str]:
    """What one forward pass captures: every block's head outputs and attention maps."""
    return ([f"blocks.{l}.attn.head_out" for l in range(n_layers)]
            + [f"blocks.{l}.attn.pattern" for l in range(n_layers)])


def measure(loaded, texts: Iterable[Window], settings: Settings, batch_size: int = 32,
            total: int | None = None, progress: bool = False) -> Measurement:
    """One streaming pass: each batch of ``batch_size`` windows is run once with hooks
    (``activations.run_with_cache``), reduced to :class:`ContextStats`, added to the running
    totals and dropped. Only the first text's matrices are kept (for the figures)."""
    from tqdm.auto import tqdm

    limit = max_text_length(loaded.model.config)
    record, stats, example = TextRecord(), None, None
    source = iter(texts)
    with tqdm(total=total, desc="texts", disable=not progress, leave=False) as bar:
        while batch := list(_take(source, batch_size)):
            if len(batch[0].input_ids) > limit:
                raise ParameterError("text_length", f"an integer ≤ {limit} (this model's positions)",
                                     len(batch[0].input_ids))
            for window in batch:
                record.add(window)
            outs, maps = _capture(loaded, batch)
            part = batch_statistics(outs, maps, TextBatch.of(batch), settings)
            stats = part if stats is None else stats + part
            example = example or Example(
                window=batch[0],
                similarity=np.stack([context_similarity(o[0].swapaxes(0, 1)) for o in outs]).astype(np.float32),
                received=np.stack([attention_received(m[0]) for m in maps]).astype(np.float32))
            bar.update(len(batch))
    if stats is None:
        raise ParameterError("n_texts", "at least 1 text", 0)
    return Measurement(stats=stats, texts=record, example=example)


def _capture(loaded, batch: Sequence[Window]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One forward pass: per block, head outputs [B, T, H, d_head] and attention maps [B, H, T, T]."""
    import torch

    from ..core.activations import run_with_cache

    n_layers = loaded.model.config.num_hidden_layers
    ids = torch.as_tensor(np.stack([w.input_ids for w in batch]), device=loaded.device)
    _, cache = run_with_cache(loaded.model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                              head_names(n_layers))
    return ([cache[f"blocks.{l}.attn.head_out"].float().numpy() for l in range(n_layers)],
            [cache[f"blocks.{l}.attn.pattern"].float().numpy() for l in range(n_layers)])


def max_text_length(config) -> int:
    """The longest input the model has positions for (RoBERTa's start after its padding index)."""
    positions = config.max_position_embeddings
    return positions - (config.pad_token_id + 1) if "roberta" in config.model_type else positions


def _take(source: Iterator, n: int) -> Iterator:
    for _, item in zip(range(n), source):
        yield item


# --------------------------------------------------------------------------- metrics

def metrics(stats: ContextStats, settings: Settings) -> dict:
    """METHODS.md §4 keys (per-block lists have L entries: index 0 is block 1) and the
    chance levels they compare with."""
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
        "separator_attention": stats.head_attended_separators.sum(axis=1) / stats.head_attended.sum(axis=1),
        "separator_share": stats.separators / stats.tokens,
        "attended_kinds": dict(zip(TOKEN_KINDS, kinds.T)),
        "repeat_chance": stats.all_repeats / stats.all_pairs,
        "heads": per_head,
        "head_classes": {c: per_layer[c].tolist() for c in HEAD_CLASSES},
        "layers_with_both_kinds": int(((per_layer["repetition"] > 0) & (per_layer["common-token"] > 0)).sum()),
        "sensitivity": {
            "thresholds": list(settings.sensitivity_thresholds),
            "separator_attention": stats.sensitivity_attended_separators / stats.sensitivity_attended,
            "mean_pair_distance": _ratios(stats.sensitivity_distance, stats.sensitivity_pairs),
            "same_sentence_fraction": _ratios(stats.sensitivity_same_sentence, stats.sensitivity_pairs),
            "high_pairs_per_matrix": stats.sensitivity_pairs / (stats.texts * n_heads),
        },
    }


def _ratios(numerator: np.ndarray, denominator: np.ndarray) -> list:
    """Element-wise ratio as nested lists, None where the denominator is 0 (no pairs at all)."""
    return [[float(a / b) if b else None for a, b in zip(ra, rb)] for ra, rb in zip(numerator, denominator)]


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


# --------------------------------------------------------------------------- tidy frames for charts

def layer_frame(values: dict[str, Sequence[float]]) -> pd.DataFrame:
    """Long frame (layer, value, series) from per-block series of L entries."""
    return pd.concat([pd.DataFrame({"layer": np.arange(1, len(v) + 1), "value": np.asarray(v, float), "series": name})
                      for name, v in values.items()], ignore_index=True)


def kinds_frame(m: dict) -> pd.DataFrame:
    """(layer, kind, share): what the high-attention tokens of each layer are (TOKEN_KINDS)."""
    frame = layer_frame(m["attended_kinds"])
    return frame.rename(columns={"value": "share", "series": "kind"})


def distance_frame(m: dict, layers: Sequence[int]) -> pd.DataFrame:
    """Share of high pairs at each distance d for the given layers (numbered from 1), with the
    chance share (T − d) / |P| of a uniformly drawn pair."""
    counts = np.asarray(m["distance_histogram"], float)
    d = np.arange(1, counts.shape[1] + 1)
    chance = (len(d) + 1 - d) / (len(d) + 1 - d).sum()
    frames = [pd.DataFrame({"distance": d, "share": counts[l - 1] / counts[l - 1].sum(), "layer": f"layer {l}"})
              for l in layers]
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


def decode_levels(text: str) -> np.ndarray:
    """The inverse of :func:`encode_levels` (up to its rounding, ≤ 1/63)."""
    return np.array([LEVELS.index(c) for c in text]) * 2 / (len(LEVELS) - 1) - 1


def block_means(matrix: np.ndarray, size: int) -> np.ndarray:
    """Mean over square blocks of b = ⌈T / size⌉ tokens: [T, T] → [⌈T / b⌉, ⌈T / b⌉]."""
    n = matrix.shape[-1]
    block = -(-n // size)
    starts = np.arange(0, n, block)
    widths = np.diff(np.append(starts, n))
    sums = np.add.reduceat(np.add.reduceat(np.asarray(matrix, float), starts, axis=-1), starts, axis=-2)
    return sums / np.outer(widths, widths)


def example_frames(example: Example, size: int = 64) -> dict[str, pd.DataFrame]:
    """The first text's figures, small enough to ship every head inline:

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
