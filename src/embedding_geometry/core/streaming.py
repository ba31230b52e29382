"""Streaming capture: T-token windows through the model in batches, one forward pass each, with
every block's head outputs and attention maps captured by hooks.

For a batch of B windows and a model of L blocks with H heads of width d_head, one
:class:`Captured` holds, per block l (``activations`` names):

    head_out[l]   [B, T, H, d_head]   ``blocks.{l}.attn.head_out``: the input of the attention
                                      output projection, O_{l,h} = A_{l,h} V_{l,h} per head
    pattern[l]    [B, H, T, T]        ``blocks.{l}.attn.pattern``: the attention maps A_{l,h}

:func:`stream` yields one :class:`Captured` at a time, so a consumer that folds each batch into
running totals and drops it holds a fixed amount of memory for any number of texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from . import float_path
from .activations import run_with_cache
from .errors import ParameterError
from .models import LoadedModel
from .windows import Window


@dataclass(frozen=True)
class Captured:
    """One batch: its windows, and per block its head outputs and attention maps (float32)."""

    windows: list[Window]
    head_out: list[np.ndarray]
    pattern: list[np.ndarray]


def head_names(n_layers: int) -> list[str]:
    """What one forward pass captures: every block's head outputs and attention maps."""
    return ([f"blocks.{l}.attn.head_out" for l in range(n_layers)]
            + [f"blocks.{l}.attn.pattern" for l in range(n_layers)])


def capture(loaded: LoadedModel, batch: Sequence[Window]) -> Captured:
    """One forward pass of windows of equal length T (no padding: every mask entry is 1)."""
    import torch

    n_layers = loaded.model.config.num_hidden_layers
    ids = torch.as_tensor(np.stack([w.input_ids for w in batch]), device=loaded.device)
    _, cache = run_with_cache(loaded.model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                              head_names(n_layers))
    return Captured(windows=list(batch),
                    head_out=[cache[f"blocks.{l}.attn.head_out"].float().numpy() for l in range(n_layers)],
                    pattern=[cache[f"blocks.{l}.attn.pattern"].float().numpy() for l in range(n_layers)])


def stream(loaded: LoadedModel, texts: Iterable[Window], batch_size: int = 32,
           total: int | None = None, progress: bool = False) -> Iterator[Captured]:
    """:func:`capture` of ``texts`` in batches of ``batch_size``, one batch at a time (``total``
    sizes the progress bar; a perturbed float path may set another batch size, :mod:`.float_path`).
    A text longer than the model has positions for: ParameterError."""
    from tqdm.auto import tqdm

    limit = max_text_length(loaded.model.config)
    source, batch_size = iter(texts), float_path.current().forward_batch(batch_size)
    with tqdm(total=total, desc="texts", disable=not progress, leave=False) as bar:
        while batch := list(islice(source, batch_size)):
            if len(batch[0].input_ids) > limit:
                raise ParameterError("text_length", f"an integer ≤ {limit} (this model's positions)",
                                     len(batch[0].input_ids))
            yield capture(loaded, batch)
            bar.update(len(batch))


def max_text_length(config) -> int:
    """The longest input the model has positions for (RoBERTa's start after its padding index)."""
    positions = config.max_position_embeddings
    return positions - (config.pad_token_id + 1) if "roberta" in config.model_type else positions
