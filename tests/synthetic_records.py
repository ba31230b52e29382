"""Hand-made activation records for the practice chapters' study tests: states, word ids and
attention maps chosen so that the expected metrics can be computed by hand."""

from __future__ import annotations

import numpy as np

from embedding_geometry.core.activations import Activations


def record(states, word_ids=None, attentions=None, texts=None) -> Activations:
    """Activations of N texts from their states (per text [L + 1, T_i, D] or [T_i, D] for one
    depth); ``word_ids`` per text (default: [CLS] and [SEP] around words 0, 1, …), ``attentions``
    per text [L, H, T_i, T_i] (or [H, T_i, T_i] for one layer)."""
    stacks = [np.asarray(s, dtype=np.float32) for s in states]
    stacks = [s[None] if s.ndim == 2 else s for s in stacks]
    lengths = [s.shape[1] for s in stacks]
    ids = word_ids or [[-1, *range(n - 2), -1] for n in lengths]
    flat_ids = np.concatenate([np.asarray(w, dtype=np.int64) for w in ids])
    special = flat_ids < 0
    maps = None if attentions is None else [np.asarray(a, dtype=np.float32)[None] if np.ndim(a) == 3
                                            else np.asarray(a, dtype=np.float32) for a in attentions]
    return Activations(
        texts=list(texts or [f"text {i}" for i in range(len(stacks))]), hidden=np.concatenate(stacks, axis=1),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), input_ids=np.arange(sum(lengths)),
        tokens=["[CLS]" if s else "w" for s in special], special_mask=special, word_mask=~special,
        word_ids=flat_ids, attentions=maps)


def uniform_maps(n_tokens: int, heads: int = 2) -> np.ndarray:
    """One layer's attention maps in which every query attends uniformly: [heads, T, T]."""
    return np.full((heads, n_tokens, n_tokens), 1.0 / n_tokens)


def cls_maps(cls_row, heads: int = 2) -> np.ndarray:
    """One layer's maps whose [CLS] query row is ``cls_row`` in every head (other rows uniform)."""
    cls_row = np.asarray(cls_row, dtype=float)
    maps = uniform_maps(len(cls_row), heads)
    maps[:, 0, :] = cls_row
    return maps
