"""Queries, keys and values in one product (core.fused_qkv): bitwise the same forward pass as
BERT's (MPNet's) own, and the model's own path whenever a gradient is recorded."""

import copy

import pytest
import torch
from transformers.models.bert import modeling_bert

import tiny_models
from embedding_geometry.core import fused_qkv, models

TEXTS = ["the cat sat on the mat", "a dog", "attention heads look at the separator more than at words"]


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory):
    return models.load(str(tiny_models.tiny_family("mpnet", tmp_path_factory.mktemp("mpnet"))), device="cpu")


def _forward(loaded, fused: bool):
    model = copy.deepcopy(loaded.model)
    for module in model.modules():  # back to the model's own class, or fused
        for own, fast in fused_qkv.FUSED.items():
            if isinstance(module, own):
                module.__class__ = fast if fused else own
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch, output_hidden_states=True, output_attentions=True)


def _equal(own, fused) -> bool:
    assert len(own.hidden_states) == len(fused.hidden_states) > 1
    return all(torch.equal(a, b) for a, b in zip(own.hidden_states + own.attentions,
                                                 fused.hidden_states + fused.attentions))


def test_loaded_bert_models_are_fused(tiny_bert):
    kinds = {type(m) for m in tiny_bert.model.modules() if isinstance(m, modeling_bert.BertSelfAttention)}
    assert kinds == {fused_qkv.FusedBertSelfAttention}


def test_the_fused_forward_is_bitwise_bert_s_own(tiny_bert):
    assert _equal(_forward(tiny_bert, fused=False), _forward(tiny_bert, fused=True))  # padding and mask included


def test_the_fused_forward_is_bitwise_mpnet_s_own(tiny_mpnet):
    kinds = {type(m) for m in tiny_mpnet.model.modules() if isinstance(m, fused_qkv.FusedMPNetSelfAttention)}
    assert kinds == {fused_qkv.FusedMPNetSelfAttention}
    assert _equal(_forward(tiny_mpnet, fused=False), _forward(tiny_mpnet, fused=True))


def test_the_stacked_weights_follow_an_update_in_place(tiny_bert):
    model = copy.deepcopy(tiny_bert.model)
    attention = model.encoder.layer[0].attention.self
    batch = tiny_bert.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        before = model(**batch).last_hidden_state
        kept = attention._stacked()[0]
        assert attention._stacked()[0] is kept  # built once
    with torch.no_grad():
        attention.value.weight.mul_(2.0)  # as an optimiser's step would: same storage, new version
    with torch.inference_mode():
        fused = model(**batch).last_hidden_state
        assert attention._stacked()[0] is not kept
    attention.__class__ = modeling_bert.BertSelfAttention
    with torch.inference_mode():
        own = model(**batch).last_hidden_state
    assert torch.equal(fused, own) and not torch.equal(fused, before)


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
    assert _equal(_forward(embedded, fused=False), _forward(embedded, fused=True))


@pytest.mark.slow
def test_the_embedded_mpnet_is_bitwise_unchanged():
    mpnet = models.load("mpnet", device="cpu")
    assert _equal(_forward(mpnet, fused=False), _forward(mpnet, fused=True))
