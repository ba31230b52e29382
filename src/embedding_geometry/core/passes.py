"""Forward passes by a token budget: which texts go through the model together, and their inputs.

Texts are sorted by length and cut into passes of at most a number of positions (padding
included), so that the padding a pass computes stays small (:func:`batches`); :func:`padded` makes
one pass's inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .models import LoadedModel

BATCH_TOKENS = 2048
"""Positions (padding included) a forward pass holds at most, by default: on a CPU, matrix
products of 2,048 rows run near their peak, and a pass's states stay a few hundred MiB."""

PASS_TOKENS = 32
"""What a forward pass costs beyond its positions, in positions: its fixed work (Python, the
hooks) and the slower matrix products of a short pass. It prices a cut of :func:`batches`."""


def batches(lengths: Sequence[int], max_tokens: int = BATCH_TOKENS, max_texts: int | None = None) -> list[np.ndarray]:
    """The forward passes of texts of ``lengths`` tokens: index arrays into ``lengths``.

    The texts are sorted by length, longest first (ties in input order), and cut into runs. A
    pass of n texts padded to its longest, T tokens, computes n·T positions; each holds at most
    ``max_tokens`` of them (a longer text goes alone) and at most ``max_texts`` texts. Among
    those cuts, the one of least cost Σ (n·T + PASS_TOKENS) over the passes, found exactly by
    dynamic programming over the sorted lengths s: cost(i) = min_k (k·s_i + PASS_TOKENS +
    cost(i + k)), the least cost of the texts from i on. (No batching beats the best cut into
    runs: filling the pass of the longest text with the next longest leaves its cost as it is
    and raises no other pass's longest.) Padding falls as the texts grow in number: few texts
    of many lengths leave a choice between padding and passes that ``PASS_TOKENS`` settles.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    ordered, n = lengths[order], len(lengths)
    cost, step = np.zeros(n + 1), np.ones(n, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        most = max(1, min(max_tokens // ordered[i], n - i, max_texts or n))
        candidates = np.arange(1, most + 1) * ordered[i] + PASS_TOKENS + cost[i + 1:i + most + 1]
        step[i] = np.argmin(candidates) + 1
        cost[i] = candidates[step[i] - 1]
    cuts = [0]
    while cuts[-1] < n:
        cuts.append(cuts[-1] + step[cuts[-1]])
    return [order[a:b] for a, b in zip(cuts, cuts[1:])]


def padded(ids: Sequence[np.ndarray], loaded: LoadedModel) -> dict[str, torch.Tensor]:
    """One forward pass's inputs: ``ids`` padded on the right with the tokenizer's padding id to the
    longest, and the attention mask (1 on real tokens), int64 [n, T] each, on the model's device."""
    lengths = np.array([len(x) for x in ids])
    mask = np.arange(lengths.max())[None, :] < lengths[:, None]
    tokens = np.full(mask.shape, loaded.tokenizer.pad_token_id, dtype=np.int64)
    tokens[mask] = np.concatenate(ids)
    return {"input_ids": torch.from_numpy(tokens).to(loaded.device),
            "attention_mask": torch.from_numpy(mask.astype(np.int64)).to(loaded.device)}
