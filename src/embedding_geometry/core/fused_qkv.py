"""Queries, keys and values in one matrix product: the same numbers, sooner.

A BERT block's self-attention projects its input X [B, T, d] three times,

    Q = X W_Qᵀ + b_Q,    K = X W_Kᵀ + b_K,    V = X W_Vᵀ + b_V,

three matrix products of width d. Stacked, [Q K V] = X [W_Q; W_K; W_V]ᵀ + [b_Q; b_K; b_V] is one
product of width 3d. Each output element is still the dot product of one row of X with one row
of one W, over the same d terms, so on the pinned torch's CPU BLAS the result is the same to the
bit (``tests/test_fused_qkv.py`` checks hidden states and attention maps), while the wider
product keeps the cores busier: a MiniLM forward pass takes about 8 % less time
(``make bench``, the roofline section).

:func:`fuse_qkv` gives each ``BertSelfAttention`` of a model the class
:class:`FusedBertSelfAttention`, whose forward takes the one product when no gradient is being
recorded (extraction runs under ``torch.inference_mode``) and no hook watches one of the three
projections; otherwise BERT's own forward, so that training (chapter 7) runs exactly as before
and a hook on ``value`` still sees its call. Other architectures keep their modules.
"""

from __future__ import annotations

import torch
from transformers.models.bert import modeling_bert

__all__ = ["FusedBertSelfAttention", "fuse_qkv"]


class FusedBertSelfAttention(modeling_bert.BertSelfAttention):
    """BERT's self-attention with Q, K and V from one product when no gradient is recorded."""

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                past_key_values=None, **kwargs) -> tuple[torch.Tensor, torch.Tensor | None]:
        if torch.is_grad_enabled() or past_key_values is not None or self._watched():
            return super().forward(hidden_states, attention_mask, past_key_values, **kwargs)
        input_shape = hidden_states.shape[:-1]
        weight = torch.cat([self.query.weight, self.key.weight, self.value.weight])
        bias = torch.cat([self.query.bias, self.key.bias, self.value.bias])
        projected = torch.nn.functional.linear(hidden_states, weight, bias)
        query, key, value = (part.view(*input_shape, -1, self.attention_head_size).transpose(1, 2)
                             for part in projected.split(self.all_head_size, dim=-1))
        attention = modeling_bert.ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, modeling_bert.eager_attention_forward)
        output, weights = attention(self, query, key, value, attention_mask,
                                    dropout=0.0 if not self.training else self.dropout.p,
                                    scaling=self.scaling, **kwargs)
        return output.reshape(*input_shape, -1).contiguous(), weights

    def _watched(self) -> bool:
        """Whether a hook watches the query, key or value projection (it must see its call)."""
        return any(m._forward_hooks or m._forward_pre_hooks for m in (self.query, self.key, self.value))


def fuse_qkv(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with each of its ``BertSelfAttention`` modules made a
    :class:`FusedBertSelfAttention` (in place: same weights, same hooks); returns ``model``."""
    for module in model.modules():
        if type(module) is modeling_bert.BertSelfAttention:
            module.__class__ = FusedBertSelfAttention
    return model
