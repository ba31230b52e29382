"""Two training objectives on one encoder: in-batch contrastive loss on mean pools, or on MaxSim.

Chapter 7 trains two copies of the same starting model on the same pairs, in the same batch
order, with the same steps, schedule and seed; only the score that the loss compares differs.
For a batch of B pairs (q_i, d_i), each text's final-depth states h_t (every real token:
attention mask = 1, the tokens a sentence-transformers mean pool averages and ColBERT matches),

    mean pool   s(q, d) = cos(m(q), m(d)),  m(x) = (1 / |x|) Σ_{t∈x} h_t
    MaxSim      s(q, d) = (1 / |q|) Σ_{t∈q} max_{u∈d} cos(h_t, h_u)      (ColBERT late interaction,
                                                                         averaged over q's tokens)

and both losses are InfoNCE with temperature τ, the cross-entropy of finding d_i among the
batch's documents,

    L = −(1/B) Σ_i log softmax_j (s(q_i, d_j) / τ)_i.

Both scores lie in [−1, 1], so one τ serves both. There is no projection head: the loss acts
on the encoder's last hidden states, the states the chapter measures.

**The schedule.** AdamW, its learning rate η_k at step k = 0 … K − 1 rising linearly over the
first W = ⌈w K⌉ steps (warm-up fraction w) and falling linearly to 0 at K:
η_k = η (k + 1) / W for k < W, η (K − k) / (K − W) after; the gradient norm is clipped.

**A forward pass with gradients lives here.** The book's rule puts every forward call in
``core.activations`` (under ``torch.inference_mode``); training needs autograd, so
:func:`train` runs its own forward passes. That is the one allowed exception. Every
*measurement* of a trained copy still goes through ``core.activations.extract``; the copy's
``info.sha256`` hashes its trained weights (``core.models.state_sha256``), so the activation cache never
mistakes it for its start.

**Determinism and pairing.** For a given seed a run is a pure function of its inputs on one
machine and thread count: ``torch.manual_seed(seed)`` fixes dropout, a NumPy generator seeded with
``seed`` fixes the batch order (:func:`batches`), and deterministic algorithms are switched on
while it trains. The two losses of one seed therefore see the same start, the same batches and
the same dropout draws: they are *paired*.

**Pairs of the fine-tuning arm** are ``data/objective_pairs.yaml`` (:func:`training_pairs`; how
they were built is in the file's header), less a held-out split (:func:`split_pairs`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from ...core import architectures, clock, corpora
from ...core.errors import ParameterError
from ...core.models import LoadedModel, state_sha256

PAIRS_FILE = "objective_pairs.yaml"
OBJECTIVES = ("mean_pool", "maxsim")
"""The two losses, by the score they compare."""


@dataclass(frozen=True)
class Settings:
    """What both copies share: steps, pairs per batch, AdamW's peak learning rate, warm-up
    fraction and weight decay, InfoNCE's temperature τ, the tokens kept per text, and the
    gradient-norm clip."""

    steps: int = 32
    pairs_per_batch: int = 16
    learning_rate: float = 2e-5
    warmup: float = 0.1
    temperature: float = 0.05
    max_length: int = 32
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0


def training_pairs() -> list[tuple[str, str]]:
    """The training pairs (query or sentence, its positive), in file order."""
    data = corpora.load_yaml(PAIRS_FILE)
    return [(pair[0], pair[1]) for group in ("queries", "neighbours") for pair in data[group]]


SPLIT_SEED = 7
"""The seed of the held-out split: one split for every training seed, so that seeds stay paired."""


def split_pairs(pairs: Sequence[tuple[str, str]], n_held_out: int,
                seed: int = SPLIT_SEED) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(training pairs, held-out pairs): ``n_held_out`` pairs drawn in a seeded order, none
    sharing a text with another held-out pair (each held-out anchor has one positive among the
    held-out positives), and the training pairs that share no text with any held-out pair."""
    if not 2 <= n_held_out < len(pairs) // 2:
        raise ParameterError("held_out_pairs", f"an integer in [2, {len(pairs) // 2})", n_held_out)
    held, used = [], set()
    for i in np.random.default_rng(seed).permutation(len(pairs)):
        if len(held) < n_held_out and used.isdisjoint(pairs[i]):
            held.append(pairs[i])
            used.update(pairs[i])
    if len(held) < n_held_out:
        raise ParameterError("held_out_pairs", f"at most the {len(held)} pairs that share no text", n_held_out)
    return [p for p in pairs if used.isdisjoint(p)], held


# --------------------------------------------------------------------------- scores and loss

def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """m(x): the mean of each text's real tokens. states [B, T, D], mask [B, T] → [B, D]."""
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(dim=1) / weights.sum(dim=1)


def mean_pool_scores(q: torch.Tensor, q_mask: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor) -> torch.Tensor:
    """s_ij = cos(m(q_i), m(d_j)) → [B_q, B_d]."""
    a = torch.nn.functional.normalize(mean_pool(q, q_mask), dim=-1)
    b = torch.nn.functional.normalize(mean_pool(d, d_mask), dim=-1)
    return a @ b.T


def maxsim_scores(q: torch.Tensor, q_mask: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor) -> torch.Tensor:
    """s_ij = mean over the real tokens t of q_i of max over the real tokens u of d_j of
    cos(h_t, h_u) → [B_q, B_d]."""
    a = torch.nn.functional.normalize(q, dim=-1)
    b = torch.nn.functional.normalize(d, dim=-1)
    sims = torch.einsum("itk,juk->ijtu", a, b)  # [B_q, B_d, T_q, T_d]
    sims = sims.masked_fill(~d_mask.bool()[None, :, None, :], float("-inf"))
    best = sims.max(dim=-1).values  # [B_q, B_d, T_q]
    keep = q_mask.to(best.dtype)[:, None, :]
    return (best * keep).sum(dim=-1) / keep.sum(dim=-1)


SCORES: dict[str, Callable[..., torch.Tensor]] = {"mean_pool": mean_pool_scores, "maxsim": maxsim_scores}


def info_nce(scores: torch.Tensor, temperature: float) -> torch.Tensor:
    """−(1/B) Σ_i log softmax_j (scores_ij / τ)_i: the positive of row i is column i."""
    return torch.nn.functional.cross_entropy(scores / temperature, torch.arange(len(scores), device=scores.device))


# --------------------------------------------------------------------------- training

def batches(pairs: Sequence[tuple[str, str]], size: int, steps: int, seed: int) -> list[list[int]]:
    """``steps`` batches of ``size`` pair indices: the pairs in a seeded random order, epoch
    after epoch. A pair that shares a text with the batch being filled waits for the next batch
    (a text twice in one batch would be its own in-batch negative)."""
    if size > len(pairs):
        raise ParameterError("pairs_per_batch", f"at most the {len(pairs)} training pairs", size)
    rng = np.random.default_rng(seed)
    out, batch, seen, waiting = [], [], set(), []
    while len(out) < steps:
        queue, waiting, filled = waiting + rng.permutation(len(pairs)).tolist(), [], len(out)
        for i in queue:
            if not seen.isdisjoint(pairs[i]) or len(out) == steps:
                waiting.append(i)
                continue
            batch.append(i)
            seen.update(pairs[i])
            if len(batch) == size:
                out.append(batch)
                batch, seen = [], set()
        if len(out) == filled and len(queue) > 2 * len(pairs):
            raise ParameterError("pairs_per_batch", f"at most as many pairs as share no text ({len(batch)} found)",
                                 size)
    return out


LEVEL_TOLERANCE = 0.05
"""The share of a copy's whole fall in loss that its last tenth of steps may still fall by."""


def levelled(losses: Sequence[float], tolerance: float = LEVEL_TOLERANCE) -> dict[str, Any]:
    """Whether a loss curve has levelled off by its end. With t = max(2, ⌊K / 10⌋) steps per
    tenth and ℓ_first, ℓ_9, ℓ_10 the mean losses over the first, the second-to-last and the last
    tenth: the last tenth's ``fall`` Δ = ℓ_9 − ℓ_10; its ``noise`` n = 2 s √(2 / t), two standard
    errors of a difference of two means of t steps, where s, the batch-to-batch noise of one step's
    loss, is read from the step-to-step changes over the last half of the steps, s = sd(ℓ_{k+1} −
    ℓ_k) / √2 (a slow trend hardly moves it, and half the steps estimate it far better than two
    tenths would); and its ``share`` of the whole fall, r = Δ / (ℓ_first − ℓ_10) (undefined, None,
    when the loss did not fall overall and its last tenth still fell). ``levelled`` when Δ ≤ n (the
    last tenth fell no further than the noise) or r ≤ ``tolerance`` (it fell by at most that share of
    what the copy learned)."""
    values = np.asarray(losses, dtype=float)
    t = max(2, len(values) // 10)
    if len(values) < 3 * t:
        raise ValueError(f"a loss curve needs at least {3 * t} steps to compare its tenths; got {len(values)}")
    first, ninth, last = values[:t].mean(), values[-2 * t:-t].mean(), values[-t:].mean()
    fall, whole = float(ninth - last), float(first - last)
    step_noise = float(np.std(np.diff(values[len(values) // 2:]), ddof=1) / np.sqrt(2))
    noise = 2 * step_noise * float(np.sqrt(2 / t))
    share = fall / whole if whole > 0 else (0.0 if fall <= 0 else None)
    return {"fall": fall, "noise": noise, "step_noise": step_noise, "share": share, "tolerance": tolerance,
            "steps_per_tenth": t, "levelled": bool(fall <= noise or (share is not None and share <= tolerance))}


def _encode(base: LoadedModel, model: torch.nn.Module, texts: list[str], max_length: int):
    batch = base.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    batch = {key: value.to(base.device) for key, value in batch.items()}
    return model(**batch).last_hidden_state, batch["attention_mask"]


def schedule(step: int, steps: int, warmup: float) -> float:
    """η_k / η: linear warm-up over the first W = ⌈warmup · steps⌉ steps, then linear decay to 0."""
    ramp = max(1, math.ceil(warmup * steps))
    return (step + 1) / ramp if step < ramp else (steps - step) / max(1, steps - ramp)


def train(base: LoadedModel, pairs: Sequence[tuple[str, str]], objective: str, settings: Settings, seed: int,
          negatives: Sequence[str | None] | None = None,
          snapshots: Mapping[int, Callable[[LoadedModel], None]] | None = None,
          gradient_norms: list[list[float]] | None = None) -> tuple[LoadedModel, list[float]]:
    """A copy of ``base`` trained with ``objective`` ("mean_pool" or "maxsim") for
    ``settings.steps`` AdamW steps on :func:`schedule`, gradient norm clipped, in train mode
    (dropout on), seeded by ``seed``. With ``negatives`` (one text or None per pair), each batch
    also scores every query against the negatives of its pairs (:func:`hard_negative_scores`).
    ``snapshots`` {step k: f} calls f with the copy as it is after k steps (in eval mode; training
    goes on after). ``gradient_norms``, when given, receives per step the gradient norm of each
    block, before clipping (:func:`block_gradient_norms`). Returns the trained copy (in eval mode,
    its id naming the objective, seed and steps, its sha256 its weights') and the loss of every step."""
    if objective not in SCORES:
        raise ParameterError("objective", f"one of {list(SCORES)}", objective)
    order = batches(pairs, settings.pairs_per_batch, settings.steps, seed)
    name = f"{objective} loss" + ("" if negatives is None else " with hard negatives")
    torch.manual_seed(seed)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    model = copy.deepcopy(base.model).train()
    blocks = architectures.family_of(model).blocks_of(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay,
                                  fused=True)
    rate = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: schedule(k, settings.steps, settings.warmup))
    losses = []
    try:
        for step, batch in enumerate(order, start=1):
            with clock.model_call():  # one training step: forward, backward, update
                scores = _batch_scores(base, model, [pairs[i] for i in batch], objective, settings.max_length,
                                       None if negatives is None else [negatives[i] for i in batch])
                loss = info_nce(scores, settings.temperature)
                optimizer.zero_grad()
                loss.backward()
                if gradient_norms is not None:
                    gradient_norms.append(block_gradient_norms(blocks))
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
                optimizer.step()
                rate.step()
            losses.append(loss.detach().item())
            if step in (snapshots or {}):
                snapshots[step](_trained(base, model, name, seed, step))
                model.train()
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
    return _trained(base, model, name, seed, settings.steps), losses


def block_gradient_norms(blocks: Sequence[torch.nn.Module]) -> list[float]:
    """‖∇_{θ_l} L‖₂ for each block l: the L2 norm of the loss's gradient over all of the block's
    parameters together (the norm of the per-tensor norms), as it is after the backward pass."""
    return [float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in block.parameters()
                                                          if p.grad is not None] or [torch.zeros(())])))
            for block in blocks]


def _batch_scores(base: LoadedModel, model: torch.nn.Module, batch: list[tuple[str, str]], objective: str,
                  max_length: int, negatives: list[str | None] | None) -> torch.Tensor:
    """The batch's scores [B, B] (with ``negatives``: [B, 2B], the negatives' columns after the
    positives', a missing negative's column at −∞)."""
    q, q_mask = _encode(base, model, [a for a, _ in batch], max_length)
    d, d_mask = _encode(base, model, [b for _, b in batch], max_length)
    scores = SCORES[objective](q, q_mask, d, d_mask)
    if negatives is None:
        return scores
    present = [n is not None for n in negatives]
    n, n_mask = _encode(base, model, [t for t in negatives if t is not None], max_length)
    return hard_negative_scores(scores, SCORES[objective](q, q_mask, n, n_mask), present)


def hard_negative_scores(scores: torch.Tensor, negative_scores: torch.Tensor, present: Sequence[bool]) -> torch.Tensor:
    """[B, 2B]: the in-batch ``scores`` [B, B], then one column per pair's negative (the scores of
    the present ones [B, n], a missing one's column −∞, so that its softmax term is 0)."""
    columns = torch.full((len(scores), len(present)), float("-inf"), dtype=scores.dtype, device=scores.device)
    columns[:, torch.tensor(present, dtype=torch.bool)] = negative_scores
    return torch.cat([scores, columns], dim=1)


def _trained(base: LoadedModel, model: torch.nn.Module, loss: str, seed: int, steps: int) -> LoadedModel:
    """``model`` (put in eval mode) as a LoadedModel: ``base``'s tokenizer and description, with an
    id that names the training (``loss``, seed, steps) and the SHA-256 of its weights."""
    info = replace(base.info, id=f"{base.info.id} [trained: {loss}, seed {seed}, {steps} steps]",
                   source="trained", sha256=state_sha256(model), revision=None)
    return LoadedModel(model=model.eval(), tokenizer=base.tokenizer, info=info, device=base.device)
