"""Queries, keys and values in one matrix product: the same numbers, sooner.

A BERT or MPNet block's self-attention projects its input X [B, T, d] three times,

    Q = X W_Qᵀ + b_Q,    K = X W_Kᵀ + b_K,    V = X W_Vᵀ + b_V,

three matrix products of width d. Stacked, [Q K V] = X [W_Q; W_K; W_V]ᵀ + [b_Q; b_K; b_V] is one
product of width 3d. Each output element is still the dot product of one row of X with one row
of one W, over the same d terms, so on the pinned torch's CPU BLAS the result is the same to the
bit (``tests/test_fused_qkv.py`` checks hidden states and attention maps), while the wider
product keeps the cores busier: a MiniLM forward pass takes about 8 % less time
(``make bench``, the roofline section). The stacked weights are built once and kept while the
three projections' tensors stay the same (the same storage, not updated in place since).

:func:`fuse_qkv` gives each ``BertSelfAttention`` (``MPNetSelfAttention``) of a model the class
:class:`FusedBertSelfAttention` (:class:`FusedMPNetSelfAttention`), whose forward takes the one
product when no gradient is being recorded (extraction runs under ``torch.inference_mode``) and
no hook watches one of the three projections; otherwise the model's own forward, so that
training (chapter 7) runs exactly as before and a hook on a projection still sees its call.
Other architectures keep their modules.
"""

from __future__ import annotations

import math

import torch
from transformers.models.bert import modeling_bert
from transformers.models.mpnet import modeling_mpnet

__all__ = ["FusedBertSelfAttention", "FusedMPNetSelfAttention", "fuse_qkv"]


class _Stacked:
    """The three projections' weights and biases stacked, kept while their tensors are unchanged."""

    def _projections(self) -> tuple[torch.nn.Linear, torch.nn.Linear, torch.nn.Linear]:
        raise NotImplementedError

    def _stacked(self) -> tuple[torch.Tensor, torch.Tensor]:
        """[W_Q; W_K; W_V] [3d, d] and [b_Q; b_K; b_V] [3d], rebuilt when a weight's storage or
        version (an in-place update: an optimiser's step, ``load_state_dict``) has changed."""
        tensors = [t for linear in self._projections() for t in (linear.weight, linear.bias)]
        stamp = tuple((t.data_ptr(), t._version) for t in tensors)
        if getattr(self, "_stack_stamp", None) != stamp:
            with torch.inference_mode(False), torch.no_grad():  # ordinary tensors, usable in any mode
                self._stack = torch.cat(tensors[0::2]), torch.cat(tensors[1::2])
            self._stack_stamp = stamp
        return self._stack

    def _fusable(self) -> bool:
        """No gradient recorded and no hook on a projection (it must see its call)."""
        return not torch.is_grad_enabled() and not any(m._forward_hooks or m._forward_pre_hooks
                                                       for m in self._projections())


class FusedBertSelfAttention(_Stacked, modeling_bert.BertSelfAttention):
    """BERT's self-attention with Q, K and V from one product when no gradient is recorded."""

    def _projections(self):
        return self.query, self.key, self.value

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                past_key_values=None, **kwargs) -> tuple[torch.Tensor, torch.Tensor | None]:
        if past_key_values is not None or not self._fusable():
            return super().forward(hidden_states, attention_mask, past_key_values, **kwargs)
        input_shape = hidden_states.shape[:-1]
        projected = torch.nn.functional.linear(hidden_states, *self._stacked())
        query, key, value = (part.view(*input_shape, -1, self.attention_head_size).transpose(1, 2)
                             for part in projected.split(self.all_head_size, dim=-1))
        attention = modeling_bert.ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, modeling_bert.eager_attention_forward)
        output, weights = attention(self, query, key, value, attention_mask,
                                    dropout=0.0 if not self.training else self.dropout.p,
                                    scaling=self.scaling, **kwargs)
        return output.reshape(*input_shape, -1).contiguous(), weights


class FusedMPNetSelfAttention(_Stacked, modeling_mpnet.MPNetSelfAttention):
    """MPNet's self-attention with Q, K and V from one product when no gradient is recorded
    (the rest of its forward as it is: scores, relative position bias, mask, softmax)."""

    def _projections(self):
        return self.q, self.k, self.v

    def forward(self, hidden_states, attention_mask=None, position_bias=None, output_attentions=False, **kwargs):
        if not self._fusable():
            return super().forward(hidden_states, attention_mask, position_bias, output_attentions, **kwargs)
        input_shape = hidden_states.shape[:-1]
        projected = torch.nn.functional.linear(hidden_states, *self._stacked())
        q, k, v = (part.view(*input_shape, -1, self.attention_head_size).transpose(1, 2)
                   for part in projected.split(self.all_head_size, dim=-1))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if position_bias is not None:
            scores += position_bias
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = self.dropout(torch.nn.functional.softmax(scores, dim=-1))
        c = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        o = self.o(c.view(*c.shape[:-2], self.all_head_size))
        return (o, probs) if output_attentions else (o,)


FUSED = {modeling_bert.BertSelfAttention: FusedBertSelfAttention,
         modeling_mpnet.MPNetSelfAttention: FusedMPNetSelfAttention}
"""Each attention class with a fused forward, and that forward's class."""


def fuse_qkv(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with each of its attention modules of a class in :data:`FUSED` given the fused
    class (in place: same weights, same hooks); returns ``model``."""
    for module in model.modules():
        if type(module) in FUSED:
            module.__class__ = FUSED[type(module)]
    return model
