"""Batched forward passes, the activations they produce, and a content-keyed disk cache.

What one forward pass can capture, and under which names, is :mod:`.capture`. ``extract`` turns a list of texts
into an :class:`Activations` record: hidden states of every depth for every real token (padding dropped), with the
token metadata the measurements need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .. import __version__
from . import clock, disk_cache, float_path
from .architectures import SpecialTokens
from .capture import run_with_cache
from .errors import ParameterError
from .models import LoadedModel
from .passes import BATCH_TOKENS, batches, padded
from .models import sentence_transformer_embeddings
from .geometry import unit_rows
from .geometry import per_text


# --------------------------------------------------------------------------- the record

@dataclass
class Activations(SpecialTokens):
    """Every real token of N texts, concatenated in text order (padding dropped).

    hidden        float32 [L + 1, n_tokens, D]  depth 0 = embedding output, depth l = block l
    offsets       int64   [N + 1]               text i owns rows offsets[i] : offsets[i + 1]
    input_ids     int64   [n_tokens]
    tokens        list[str], n_tokens           tokenizer pieces ("##ing", "[CLS]")
    special_mask  bool    [n_tokens]            tokens the tokenizer adds: [CLS], [SEP], <s>, </s>, BOS, EOS
    word_mask     bool    [n_tokens]            real tokens that are not special (book/methods.md, Conventions); every
                                                token, for a tokenizer that adds none
    word_ids      int64   [n_tokens]            index of the word a piece belongs to, -1 if special
    attentions    list of N float32 [L, H, T_i, T_i], or None when not requested; [len(attention_layers),
                                                H, T_i, T_i] when only some blocks' maps were kept
    attention_layers                            the 0-based blocks whose maps ``attentions`` holds, in
                                                order; None: every block
    after_attention  float32 [L, n_tokens, D]   entry l: the stream between block l's (0-based) attention
                                                and feed-forward sublayers, ``blocks.{l}.resid_mid``
                                                (post-norm families), or None when not requested
    family, has_cls, has_sep                    the model's architecture family and whether its first
                                                (last) token is a [CLS] ([SEP]) that metrics may read
    """

    texts: list[str]
    hidden: np.ndarray
    offsets: np.ndarray
    input_ids: np.ndarray
    tokens: list[str]
    special_mask: np.ndarray
    word_mask: np.ndarray
    word_ids: np.ndarray
    attentions: list[np.ndarray] | None = None
    key: str = field(default="", repr=False)
    family: str = "BERT"
    has_cls: bool = True
    has_sep: bool = True
    attention_layers: tuple[int, ...] | None = None
    after_attention: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_texts(self) -> int:
        return len(self.texts)

    @property
    def n_layers(self) -> int:
        """L: the number of blocks; depths run 0..L."""
        return self.hidden.shape[0] - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def rows(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def text_index(self) -> np.ndarray:
        """int64 [n_tokens]: which text each token row belongs to."""
        return np.repeat(np.arange(self.n_texts), self.lengths)

    def attention_mask(self) -> np.ndarray:
        """int64 [N, T_max]: the tokenizer's mask had the texts been padded together."""
        return (np.arange(self.lengths.max())[None, :] < self.lengths[:, None]).astype(np.int64)

    def token_states(self, depth: int, i: int, tokens: str = "word") -> np.ndarray:
        """[T_i or W_i, D]: the states of text i at ``depth``, all tokens or word tokens only."""
        rows = self.hidden[depth, self.rows(i)]
        return rows if tokens == "all" else rows[self.word_mask[self.rows(i)]]

    def mean_pool(self, tokens: str = "all") -> np.ndarray:
        """float64 [L + 1, N, D]: m_l(s) = mean of the text's tokens at every depth
        (``tokens="all"``, what sentence-transformers computes) or w_l(s) (``"word"``)."""
        keep = np.ones(len(self.tokens), bool) if tokens == "all" else self.word_mask
        summed = np.add.reduceat(np.where(keep[None, :, None], self.hidden, 0.0), self.offsets[:-1], axis=1)
        counts = np.add.reduceat(keep.astype(np.float64), self.offsets[:-1])
        return summed / counts[None, :, None]

    def cls(self) -> np.ndarray:
        """float32 [L + 1, N, D]: c_l(s), the state of each text's [CLS] (first) token;
        :class:`NotApplicableError` for an architecture without [CLS] (decoder-only models)."""
        self.require("[CLS]", "the [CLS] state")
        return self.hidden[:, self.offsets[:-1]]

    def word_states(self) -> list[np.ndarray]:
        """N stacks [L + 1, W_i, D]: each text's word-token states at every depth (book/methods.md, Conventions)."""
        return per_text(self.hidden, self.offsets, self.word_mask)

    def word_tokens(self, i: int | None = None) -> list[str]:
        """The word-token pieces of text i, or of every text in order when i is None."""
        rows = slice(None) if i is None else self.rows(i)
        return [token for token, word in zip(self.tokens[rows], self.word_mask[rows]) if word]


# --------------------------------------------------------------------------- extraction

def extract(
    loaded: LoadedModel,
    texts: Sequence[str],
    max_length: int | None = None,
    batch_size: int | None = None,
    attentions: bool = False,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    source: str = "texts",
    attention_layers: Sequence[int] | None = None,
    after_attention: bool = False,
    batch_tokens: int = BATCH_TOKENS,
) -> Activations:
    """Hidden states of every depth (and optionally attention maps) for ``texts``.

    Texts are tokenized once, truncated to ``max_length`` (default: the model's
    ``max_seq_length``), sorted by length and cut into forward passes of at most ``batch_tokens``
    positions (padding included) and at most ``batch_size`` texts (None: no limit) so that
    padding is minimal (:func:`batches`), run under ``torch.inference_mode``, and written in
    input order into one preallocated array per kind of state. With ``cache``,
    the result is stored under a key of (model weights, texts, max length, attentions, package
    version) and a second call loads it; a damaged cache file is detected and recomputed.
    ``source`` names the parameter the texts came from, for error messages.
    ``attention_layers`` (with ``attentions``) keeps only those blocks' maps, e.g. ``(-1,)`` for
    the last block's: a negative index counts from the last block; the cache key includes it.
    ``after_attention`` also keeps, from the same pass, the stream between each block's two
    sublayers (``blocks.{l}.resid_mid``, post-norm families): a companion cache entry under its
    own key (:func:`cache_key` with ``after_attention``), beside the record's, so that a call
    without it reads the same record as before.
    """
    if isinstance(texts, str):
        raise ParameterError(source, "a list of texts, not one string", texts)
    texts = list(texts)
    if not texts:
        raise ParameterError(source, "a non-empty list of texts", texts)
    for text in texts:
        if not isinstance(text, str) or _unencodable(text):
            raise ParameterError(source, "a list of strings of valid Unicode (no lone surrogates)", text)
    max_length = max_length or loaded.info.max_seq_length
    layers = _attention_layers(attention_layers, attentions, loaded.model.config.num_hidden_layers)
    key = cache_key(loaded, texts, max_length, attentions, layers)
    mid_key = cache_key(loaded, texts, max_length, attentions, layers, after_attention=True) if after_attention else ""
    if cache and (hit := _read(cache_dir, key, mid_key)) is not None:
        clock.model_used()
        return hit
    record = _forward(loaded, texts, max_length, (batch_size, batch_tokens), attentions, progress, source, layers,
                      after_attention)
    record.key = key
    if cache:
        disk_cache.store(disk_cache.entry(cache_dir, key), replace(record, after_attention=None))
        if after_attention:
            disk_cache.store(disk_cache.entry(cache_dir, mid_key), AfterAttention(mid_key, record.after_attention))
    return record


@dataclass
class AfterAttention:
    """The companion cache entry of a record extracted with ``after_attention``: its states
    between the sublayers, [L, n_tokens, D], under their own key."""

    key: str
    states: np.ndarray


def _read(folder: str | Path | None, key: str, mid_key: str) -> Activations | None:
    """The cached record of ``key``, with the states of the companion entry ``mid_key`` when one
    is asked for (``""``: none); None when either is missing."""
    record = disk_cache.load(disk_cache.entry(folder, key), key, Activations, "activation cache")
    if record is None or not mid_key:
        return record
    mid = disk_cache.load(disk_cache.entry(folder, mid_key), mid_key, AfterAttention, "activation cache")
    return None if mid is None else replace(record, after_attention=mid.states)


def cache_key(loaded: LoadedModel, texts: Sequence[str], max_length: int, attentions: bool,
              attention_layers: tuple[int, ...] | None = None, after_attention: bool = False) -> str:
    """Content key: what the activations depend on, hashed with joblib (the kept attention
    layers only when not all are kept, the float path only when perturbed, and the companion
    entry's mark only for it, so that the keys of full records on the book's own path stay as
    they were)."""
    identity = disk_cache.model_identity(loaded.info)
    kept = [] if attention_layers is None else [list(attention_layers)]
    perturbed = [spec] if (spec := float_path.current().spec) else []
    mid = ["blocks.resid_mid"] if after_attention else []
    return joblib.hash([identity, list(texts), int(max_length), bool(attentions), __version__, *kept, *perturbed,
                        *mid])


def _attention_layers(requested: Sequence[int] | None, attentions: bool, n_layers: int) -> tuple[int, ...] | None:
    """``requested`` blocks as sorted 0-based indices (negative ones count from the last), or None
    for every block; a one-line ParameterError for an index outside the model or without attentions."""
    if requested is None:
        return None
    chosen = list(requested)
    if not attentions or not chosen or any(isinstance(l, bool) or not isinstance(l, (int, np.integer))
                                           or not -n_layers <= l < n_layers for l in chosen):
        raise ParameterError("attention_layers", f"with attentions=True, block indices in [-{n_layers}, {n_layers})",
                             requested)
    return tuple(sorted({int(l) % n_layers for l in chosen}))


def tokenize(tokenizer, texts: Sequence[str], max_length: int):
    """What ``extract`` reads of ``texts`` before any forward pass: the tokenizer's encoding
    (truncated to ``max_length``), each text's token ids int64 [T_i], and its special-token mask
    bool [T_i] (book/methods.md, Conventions: the tokens the tokenizer adds, and [CLS], [SEP],
    <s>, </s> or padding wherever a text spells one out)."""
    encoding = tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)
    ids = [np.asarray(x, np.int64) for x in encoding["input_ids"]]
    structural = _structural_ids(tokenizer)
    special = [np.asarray(m, bool) | np.isin(x, structural) for m, x in zip(encoding["special_tokens_mask"], ids)]
    return encoding, ids, special


def word_token_counts(tokenizer, texts: Sequence[str], max_length: int) -> list[int]:
    """W_i: the word tokens each text keeps once tokenized and truncated, as :func:`extract` reads it."""
    return [int((~mask).sum()) for mask in tokenize(tokenizer, texts, max_length)[2]]


def _forward(loaded, texts, max_length, limits, attentions, progress, source, layers=None,
             after_attention=False) -> Activations:
    """The record of ``texts``: ``limits`` is (texts, positions) at most per forward pass (see
    :func:`batches`; a perturbed float path may set the texts'); each pass's states are copied
    once, text by text, into the record's arrays."""
    encoding, ids, special = tokenize(loaded.tokenizer, texts, max_length)
    for text, mask in zip(texts, special):
        if mask.all():
            raise ParameterError(source, "texts that each contain at least one word token", text)
    lengths = np.array([len(x) for x in ids])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_layers, width = loaded.model.config.num_hidden_layers, loaded.model.config.hidden_size
    kept = range(n_layers) if layers is None else layers
    names = ["embed"] + [f"blocks.{l}.resid_post" for l in range(n_layers)]
    middle = [f"blocks.{l}.resid_mid" for l in range(n_layers)] if after_attention else []
    hidden = _fresh((n_layers + 1, offsets[-1], width))
    mids = _fresh((n_layers, offsets[-1], width)) if after_attention else None
    maps: list[np.ndarray | None] = [None] * len(texts)
    patterns = [f"blocks.{l}.attn.pattern" for l in kept] if attentions else []
    with tqdm(total=len(texts), desc="forward", disable=not progress, leave=False) as bar:
        for chunk in batches(lengths, limits[1], float_path.current().forward_batch(limits[0])):
            batch = padded([ids[i] for i in chunk], loaded)
            captured = run_with_cache(loaded.model, batch, names + middle + patterns)[1]
            _write(hidden, [captured[n] for n in names], chunk, offsets)
            if middle:
                _write(mids, [captured[n] for n in middle], chunk, offsets)
            for row, i in enumerate(chunk if attentions else []):
                n = lengths[i]
                maps[i] = torch.stack([captured[name][row, :, :n, :n] for name in patterns]).float().numpy()
            bar.update(len(chunk))
            del captured  # freed before the next pass allocates its own (held, MPNet's passes ran 8 % slower)
    special_flat = np.concatenate(special)
    flat_ids = np.concatenate(ids)
    return Activations(
        texts=texts,
        hidden=hidden,
        offsets=offsets,
        input_ids=flat_ids,
        tokens=loaded.tokenizer.convert_ids_to_tokens(flat_ids.tolist()),
        special_mask=special_flat,
        word_mask=~special_flat,
        word_ids=np.where(special_flat, -1, np.concatenate([[-1 if w is None else w for w in encoding.word_ids(i)]
                                                             for i in range(len(texts))])).astype(np.int64),
        attentions=maps if attentions else None,
        family=loaded.info.family,
        has_cls=loaded.info.has_cls,
        has_sep=loaded.info.has_sep,
        attention_layers=layers if attentions else None,
        after_attention=mids,
    )


def _fresh(shape: tuple[int, ...]) -> np.ndarray:
    """Uninitialised float32 from torch's allocator: numpy asks for huge pages at 4 MiB and up, whose first write
    stalls in compaction under THP defrag=madvise (a fresh 125 MB record: 0.29 s, against 0.054 s)."""
    return torch.empty(shape, dtype=torch.float32).numpy()


def _write(out: np.ndarray, states: list[torch.Tensor], chunk: np.ndarray, offsets: np.ndarray) -> None:
    """Copy each text's real rows of ``states`` (one [n, T, D] tensor per depth) into ``out``
    [depths, n_tokens, D] at the text's rows: the one copy the states take."""
    for depth, state in enumerate(states):
        values = state.float().numpy()
        for row, i in enumerate(chunk):
            start, stop = offsets[i], offsets[i + 1]
            out[depth, start:stop] = values[row, :stop - start]


def _structural_ids(tokenizer) -> list[int]:
    """Ids of the tokens the Methods page (Conventions) calls special: [CLS], [SEP], <s>, </s> and padding."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id", "pad_token_id")
    return [i for i in (getattr(tokenizer, name, None) for name in names) if isinstance(i, int)]


def _unencodable(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (no UTF-8 form: no tokenizer can read it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# --------------------------------------------------------------------------- tables

def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Token labels made unique by a subscript on repeats: the, stock, …, the₂ (the posts' style)."""
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        labels.append(token if seen[token] == 1 else token + str(seen[token]).translate(_SUBSCRIPTS))
    return labels


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def token_kinds(record: Activations) -> np.ndarray:
    """str [n_tokens]: the piece itself for special tokens ("[CLS]", "[SEP]"), else "word tokens"."""
    return np.where(record.special_mask, np.asarray(record.tokens, dtype=object), "word tokens")


def token_frame(record: Activations, values: np.ndarray | None = None, name: str = "value",
                labels: list[str] | None = None) -> "pd.DataFrame":
    """One row per token (text, sentence, position, token, word_id, kind); with ``values`` of
    shape [L + 1, n_tokens], one row per token and depth, the value in column ``name``.
    ``sentence`` is ``labels[text]`` (default: the text itself)."""
    starts = np.repeat(record.offsets[:-1], record.lengths)
    frame = pd.DataFrame({
        "text": record.text_index(),
        "sentence": np.asarray(labels or record.texts, dtype=object)[record.text_index()],
        "position": np.arange(len(record.tokens)) - starts,
        "token": record.tokens,
        "word_id": record.word_ids,
        "kind": token_kinds(record),
    })
    if values is None:
        return frame
    depths = [frame.assign(depth=depth, **{name: values[depth]}) for depth in range(len(values))]
    return pd.concat(depths, ignore_index=True)


def tokenization_table(record: Activations) -> "pd.DataFrame":
    """Per text: its pieces, token counts, and the words WordPiece split into several pieces."""
    rows = []
    for i, text in enumerate(record.texts):
        rows_i = record.rows(i)
        pieces = record.tokens[rows_i]
        ids = record.word_ids[rows_i]
        words = ids[ids >= 0]
        split = [" ".join(p for p, w in zip(pieces, ids) if w == word) for word in np.unique(words)
                 if np.sum(words == word) > 1]
        rows.append({"text": text, "pieces": " · ".join(pieces), "tokens": len(pieces),
                     "word tokens": int(record.word_mask[rows_i].sum()), "words": len(np.unique(words)),
                     "split words": ", ".join(split) or "—"})
    return pd.DataFrame(rows)


def check_against_model(loaded: LoadedModel, record: Activations) -> dict[str, float] | None:
    """Compare m_L(s), our final-depth mean pool over all tokens, with the model's own
    (unnormalised) sentence-transformers embedding e(s): max_s,d |m_L(s)_d − e(s)_d| and
    min_s cos(m_L(s), e(s)); per sentence, max_d |m_L(s)_d − e(s)_d| and cos(m_L(s), e(s))
    (``per_sentence``) and their means over sentences. None when the model has no
    sentence-transformers configuration."""
    theirs = sentence_transformer_embeddings(loaded, record.texts)
    if theirs is None:
        return None
    ours = record.mean_pool("all")[-1]
    cosines = np.sum(unit_rows(ours) * unit_rows(theirs), axis=1)
    worst = np.abs(ours - theirs).max(axis=1)
    return {"max_abs_diff": float(worst.max()), "min_cosine": float(cosines.min()),
            "mean_max_abs_diff": float(worst.mean()), "mean_cosine": float(cosines.mean()),
            "per_sentence": {"max_abs_diff": worst, "cosine": cosines}}
