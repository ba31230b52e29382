"""Queries, keys and values in one product (core.fused_qkv): bitwise the same forward pass as
BERT's own, and BERT's own path whenever a gradient is recorded."""

import copy

import pytest
import torch
from transformers.models.bert import modeling_bert

from embedding_geometry.core import fused_qkv

TEXTS = ["the cat sat on the mat", "a dog", "attention heads look at the separator more than at words"]


def _forward(loaded, fused: bool):
    model = copy.deepcopy(loaded.model)
    for module in model.modules():  # back to BERT's own class, or fused
        if isinstance(module, modeling_bert.BertSelfAttention):
            module.__class__ = fused_qkv.FusedBertSelfAttention if fused else modeling_bert.BertSelfAttention
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch, output_hidden_states=True, output_attentions=True)


def test_loaded_bert_models_are_fused(tiny_bert):
    kinds = {type(m) for m in tiny_bert.model.modules() if isinstance(m, modeling_bert.BertSelfAttention)}
    assert kinds == {fused_qkv.FusedBertSelfAttention}


def test_the_fused_forward_is_bitwise_bert_s_own(tiny_bert):
    own, fused = _forward(tiny_bert, fused=False), _forward(tiny_bert, fused=True)
    assert len(own.hidden_states) == len(fused.hidden_states) > 1
    for a, b in zip(own.hidden_states + own.attentions, fused.hidden_states + fused.attentions):
        assert torch.equal(a, b)  # the same bits, padding and mask included


def test_training_takes_bert_s_own_path(tiny_bert, monkeypatch):
    model = copy.deepcopy(tiny_bert.model).train()
    assert isinstance(model.encoder.layer[0].attention.self, fused_qkv.FusedBertSelfAttention)  # deepcopy keeps it
    calls = []
    own = modeling_bert.BertSelfAttention.forward
    monkeypatch.setattr(modeling_bert.BertSelfAttention, "forward",
                        lambda self, *a, **k: calls.append(1) or own(self, *a, **k))
    batch = tiny_bert.tokenizer(TEXTS, padding=True, return_tensors="pt")
    model(**batch).last_hidden_state.sum().backward()
    assert len(calls) == model.config.num_hidden_layers  # every block, through BERT's forward
    assert model.encoder.layer[0].attention.self.query.weight.grad is not None
    calls.clear()
    with torch.no_grad():
        model.eval()(**batch)
    assert calls == []  # no gradient: the one product


def test_a_hook_on_a_projection_still_sees_its_call(tiny_bert):
    attention = tiny_bert.model.encoder.layer[0].attention.self
    seen = []
    handle = attention.value.register_forward_hook(lambda module, args, out: seen.append(out.shape))
    try:
        batch = tiny_bert.tokenizer(TEXTS, padding=True, return_tensors="pt")
        with torch.inference_mode():
            tiny_bert.model(**batch)
    finally:
        handle.remove()
    assert len(seen) == 1 and seen[0][-1] == tiny_bert.model.config.hidden_size


def test_other_modules_are_left_alone():
    layer = torch.nn.Sequential(torch.nn.Linear(4, 4))
    assert fused_qkv.fuse_qkv(layer) is layer and type(layer[0]) is torch.nn.Linear


@pytest.mark.slow
def test_the_embedded_model_is_bitwise_unchanged(embedded):
    own, fused = _forward(embedded, fused=False), _forward(embedded, fused=True)
    assert all(torch.equal(a, b) for a, b in zip(own.hidden_states + own.attentions,
                                                 fused.hidden_states + fused.attentions))
