"""One forward pass with named captures (TransformerLens style), on every supported architecture.

For a model of L blocks, H heads of width d_head, hidden width D, and a batch of B texts padded
(on the right) to T tokens:

    embed                       [B, T, D]          hidden_states[0]: embedding output
    blocks.{l}.resid_post       [B, T, D]          hidden_states[l + 1]: output of block l (0-based);
                                                   for pre-norm families, depth L is after the final norm
    blocks.{l}.attn.pattern     [B, H, T, T]       attention probabilities of block l (causal families:
                                                   zero above the diagonal)
    blocks.{l}.attn.head_out    [B, T, H, d_head]  per-head attention output of block l: the input of
                                                   the attention output projection (forward pre-hook)
    blocks.{l}.resid_mid        [B, T, D]          the stream between block l's two sublayers: in a
                                                   post-norm block LN₁(x + O(head_out)), x the block's
                                                   input, the output of the norm that closes its
                                                   attention sublayer (forward hook; post-norm families)

Where each site is in each family is :mod:`.architectures`' table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import torch

from . import architectures, clock
from .errors import ParameterError

NameFilter = str | Sequence[str] | Callable[[str], bool]
SITES = ("resid_mid", "resid_post", "attn.pattern", "attn.head_out")


def all_names(n_layers: int) -> list[str]:
    """Every name a model of ``n_layers`` blocks can capture, in depth order."""
    return ["embed"] + [f"blocks.{l}.{site}" for l in range(n_layers) for site in SITES]


def run_with_cache(model: torch.nn.Module, batch: dict, names: NameFilter) -> tuple[object, dict[str, torch.Tensor]]:
    """One forward pass of ``batch``; return ``(output, cache)`` where ``cache`` maps each
    requested name (see the module docstring) to a detached CPU tensor. Hooks are removed in
    ``finally``, whatever happens during the pass; the pass is timed (:func:`.clock.model_call`).
    Head outputs and the stream between the sublayers need a model of a family in
    :mod:`.architectures`' table (else a one-line :class:`ParameterError`; the latter a post-norm
    family, else :class:`~.errors.NotApplicableError`)."""
    n_layers = model.config.num_hidden_layers
    wanted = _matcher(names)
    requested = [name for name in all_names(n_layers) if wanted(name)]
    cache: dict[str, torch.Tensor] = {}
    handles = [_hook_head_out(site, name, model.config.num_attention_heads, cache)
               for name, site in _sites(model, requested, "attn.head_out")]
    handles += [_hook_output(site, name, cache) for name, site in _sites(model, requested, "resid_mid")]
    try:
        with torch.inference_mode(), clock.model_call():
            output = model(
                **batch,
                output_hidden_states=any(n == "embed" or n.endswith("resid_post") for n in requested),
                output_attentions=any(n.endswith("attn.pattern") for n in requested),
            )
    finally:
        for handle in handles:
            handle.remove()
    if getattr(output, "hidden_states", None) is not None and len(output.hidden_states) != n_layers + 1:
        raise ParameterError("model", f"a model that returns L + 1 = {n_layers + 1} hidden states",
                             f"{len(output.hidden_states)} from {type(model).__name__}")
    for name in requested:
        if name == "embed":
            cache[name] = output.hidden_states[0].detach().cpu()
        elif name.endswith("resid_post"):
            cache[name] = output.hidden_states[_layer(name) + 1].detach().cpu()
        elif name.endswith("attn.pattern"):
            cache[name] = output.attentions[_layer(name)].detach().cpu()
    return output, cache


def _sites(model: torch.nn.Module, requested: list[str], kind: str) -> list[tuple[str, torch.nn.Module]]:
    """(name, module to hook) for each requested ``blocks.{l}.<kind>``: ``attn.head_out``, the
    block's attention output projection; ``resid_mid``, the norm that closes its attention sublayer."""
    layers = [_layer(name) for name in requested if name.endswith(kind)]
    if not layers:
        return []
    family = architectures.family_of(model)
    site_of = family.head_out_of if kind == "attn.head_out" else family.attention_norm_of
    blocks = family.blocks_of(model)
    return [(f"blocks.{l}.{kind}", site_of(blocks[l])) for l in layers]


def _hook_output(site: torch.nn.Module, name: str, cache: dict) -> torch.utils.hooks.RemovableHandle:
    def hook(module, args, output):
        cache[name] = output.detach().cpu()
    return site.register_forward_hook(hook)


def _hook_head_out(site: torch.nn.Module, name: str, heads: int, cache: dict) -> torch.utils.hooks.RemovableHandle:
    def hook(module, args):
        context = args[0]  # [B, T, H · d_head], the heads' outputs side by side
        cache[name] = context.detach().reshape(*context.shape[:2], heads, -1).cpu()
    return site.register_forward_pre_hook(hook)


def _matcher(names: NameFilter) -> Callable[[str], bool]:
    if callable(names):
        return names
    chosen = {names} if isinstance(names, str) else set(names)
    return chosen.__contains__


def _layer(name: str) -> int:
    return int(re.match(r"blocks\.(\d+)\.", name).group(1))
