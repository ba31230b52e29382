"""Capture on every supported architecture family: a tiny random model of each, built from its
config and saved locally, read through the one table of capture sites (core/architectures.py)."""

import operator

import numpy as np
import pytest
import torch

from embedding_geometry.core import activations, architectures, models
from embedding_geometry.core.errors import NotApplicableError, ParameterError

import tiny_models

TEXTS = ["The quick brown fox jumps over the lazy dog", "Hi there", "Its rival acquired the tech giant"]
FAMILIES = list(tiny_models.FAMILY_CONFIGS)
ENCODERS = ["bert", "xlm-roberta", "mpnet", "distilbert", "modernbert"]
# where each family computes V, the values its heads average (for the check head_out = A V)
VALUES = {"bert": "attention.self.value", "xlm-roberta": "attention.self.value", "mpnet": "attention.attn.v",
          "distilbert": "attention.v_lin", "modernbert": "attn.Wqkv", "qwen2": "self_attn.v_proj",
          "qwen3": "self_attn.v_proj", "llama": "self_attn.v_proj", "mistral": "self_attn.v_proj"}


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request, tmp_path_factory):
    directory = tiny_models.tiny_family(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, models.load(str(directory), device="cpu")


def test_every_family_of_the_table_has_a_tiny_model():
    assert {t for f in architectures.FAMILIES for t in f.model_types} == set(FAMILIES) | {"roberta"}


def test_description_says_family_attention_and_special_tokens(tiny):
    name, loaded = tiny
    info = loaded.info
    assert info.family == architectures.find(loaded.model.config.model_type).name
    assert info.causal == (name not in ENCODERS)
    assert info.has_cls == info.has_sep == (name in ENCODERS)
    assert info.pooling == ("mean" if name in ENCODERS else "lasttoken")
    assert info.to_dict()["has_cls"] == info.has_cls


def test_hidden_states_have_l_plus_one_depths_and_the_last_is_the_output(tiny):
    _, loaded = tiny
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    L = loaded.info.layers
    names = ["embed"] + [f"blocks.{l}.resid_post" for l in range(L)]
    output, cache = activations.run_with_cache(loaded.model, batch, names)
    assert len(output.hidden_states) == L + 1 and set(cache) == set(names)
    torch.testing.assert_close(cache[f"blocks.{L - 1}.resid_post"], output.last_hidden_state)
    record = activations.extract(loaded, TEXTS, cache=False, progress=False)
    assert record.hidden.shape == (L + 1, record.offsets[-1], loaded.info.hidden)


def test_head_outputs_are_the_attention_weighted_values(tiny):
    """blocks.l.attn.head_out[b, t, h] = Σ_s A_h[t, s] V_h[s]: the captured input of the output
    projection is each head's attention pattern applied to its values (grouped-query models
    share each key/value head among H / H_kv heads)."""
    name, loaded = tiny
    model, config = loaded.model, loaded.model.config
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    family = architectures.family_of(model)
    values, handles = {}, []
    for l, block in enumerate(family.blocks_of(model)):
        site = operator.attrgetter(VALUES[name])(block)
        handles.append(site.register_forward_hook(lambda module, args, out, l=l: values.setdefault(l, out.detach())))
    L, H = config.num_hidden_layers, config.num_attention_heads
    try:
        names = [f"blocks.{l}.attn.{site}" for l in range(L) for site in ("head_out", "pattern")]
        _, cache = activations.run_with_cache(model, batch, names)
    finally:
        for handle in handles:
            handle.remove()
    for l in range(L):
        head_out = cache[f"blocks.{l}.attn.head_out"]  # [B, T, H, d]
        B, T, _, d = head_out.shape
        v = values[l].reshape(B, T, 3, -1)[:, :, 2] if name == "modernbert" else values[l]
        v = v.reshape(B, T, -1, d).transpose(1, 2)  # [B, H_kv, T, d]
        v = v.repeat_interleave(H // v.shape[1], dim=1)
        expected = (cache[f"blocks.{l}.attn.pattern"] @ v).transpose(1, 2)
        torch.testing.assert_close(head_out, expected, atol=1e-5, rtol=1e-4)
        projection = family.head_out_of(family.blocks_of(model)[l])
        assert projection.in_features == H * d


def test_the_stream_between_the_sublayers_is_the_attention_norms_output_on_post_norm_families(tiny):
    """blocks.l.resid_mid = LN₁(x_l + O(head_out_l)), x_l the block's input, recomputed from the
    same pass's captures bit for bit; a pre-norm family has no such norm: NotApplicableError."""
    name, loaded = tiny
    model, family = loaded.model, architectures.family_of(loaded.model)
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    L = model.config.num_hidden_layers
    if family.attention_norm is None:
        assert name in ("modernbert", "qwen2", "qwen3", "llama", "mistral")
        with pytest.raises(NotApplicableError, match="post-norm blocks"):
            activations.run_with_cache(model, batch, ["blocks.0.resid_mid"])
        return
    sites = ("resid_mid", "resid_post", "attn.head_out")
    names = ["embed", *(f"blocks.{l}.{site}" for l in range(L) for site in sites)]
    _, cache = activations.run_with_cache(model, batch, names)
    blocks = family.blocks_of(model)
    inputs = [cache["embed"]] + [cache[f"blocks.{l}.resid_post"] for l in range(L - 1)]
    with torch.inference_mode():
        for l, block in enumerate(blocks):
            norm, projection = family.attention_norm_of(block), family.head_out_of(block)
            expected = norm(inputs[l] + projection(cache[f"blocks.{l}.attn.head_out"].flatten(2)))
            assert torch.equal(cache[f"blocks.{l}.resid_mid"], expected), (name, l)


def test_attention_maps_are_distributions_and_causal_where_the_family_is(tiny):
    _, loaded = tiny
    record = activations.extract(loaded, TEXTS, attentions=True, cache=False, progress=False)
    for maps in record.attentions:
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
        above = np.triu(np.ones(maps.shape[-2:], bool), k=1)
        assert (np.abs(maps[..., above]).max() < 1e-7) == loaded.info.causal


def test_batches_equal_texts_alone(tiny):
    """Right padding: a text's states do not depend on the longer texts it is batched with."""
    _, loaded = tiny
    record = activations.extract(loaded, TEXTS, cache=False, progress=False)
    for i, text in enumerate(TEXTS):
        alone = activations.extract(loaded, [text], cache=False, progress=False)
        np.testing.assert_allclose(record.hidden[:, record.rows(i)], alone.hidden, atol=2e-5)


def test_word_mask_without_cls_or_sep(tiny):
    """Word tokens are the tokens the tokenizer did not add, whatever it adds: [CLS] … [SEP],
    <s> … </s>, a leading <s> (Llama), a trailing <|endoftext|> (Qwen3), or nothing (Qwen2)."""
    name, loaded = tiny
    record = activations.extract(loaded, TEXTS, cache=False, progress=False)
    adds = {"qwen2": (0, 0), "qwen3": (0, 1), "llama": (1, 0), "mistral": (1, 0)}.get(name, (1, 1))
    for i in range(record.n_texts):
        mask, ids = record.word_mask[record.rows(i)], record.word_ids[record.rows(i)]
        n_first, n_last = adds
        assert not mask[:n_first].any() and not mask[len(mask) - n_last:].any()
        assert mask[n_first:len(mask) - n_last].all()
        assert (ids[mask] >= 0).all() and (ids[~mask] == -1).all()


def test_cls_is_not_applicable_without_cls(tiny):
    name, loaded = tiny
    record = activations.extract(loaded, TEXTS, cache=False, progress=False)
    if name in ENCODERS:
        np.testing.assert_array_equal(record.cls(), record.hidden[:, record.offsets[:-1]])
        return
    with pytest.raises(NotApplicableError) as error:
        record.cls()
    message = str(error.value)
    assert "\n" not in message and "not applicable to this architecture" in message and "[CLS]" in message
    with pytest.raises(NotApplicableError, match=r"\[SEP\] token"):
        loaded.info.require("[SEP]", "separator attention")


def test_random_control_keeps_the_family_and_hashes_its_weights(tiny):
    _, loaded = tiny
    control = models.random_control(loaded, seed=1)
    assert (control.info.family, control.info.has_cls) == (loaded.info.family, loaded.info.has_cls)
    assert control.info.sha256 != loaded.info.sha256 and len(control.info.sha256) == 64


# --------------------------------------------------------------------------- outside the table

@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from transformers import GPT2Config, GPT2Model

    directory = tmp_path_factory.mktemp("gpt2")
    tokenizer = tiny_models._decoder_tokenizer("none")
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4,
                         n_positions=64)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_unknown_architecture_is_one_line_naming_the_supported_ones(gpt2_dir):
    with pytest.raises(ParameterError) as error:
        models.load(str(gpt2_dir), device="cpu")
    message = str(error.value)
    assert "\n" not in message and "parameter 'model'" in message and "'gpt2'" in message
    for family in architectures.FAMILIES:
        assert family.name in message


def test_unknown_architecture_in_run_with_cache_is_one_line(gpt2_dir):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(gpt2_dir))
    batch = {"input_ids": torch.tensor([[5, 6, 7]])}
    _, cache = activations.run_with_cache(model, batch, ["embed"])  # hidden states need no table row
    assert cache["embed"].shape == (1, 3, 32)
    with pytest.raises(ParameterError, match="supported architecture: BERT"):
        activations.run_with_cache(model, batch, ["blocks.0.attn.head_out"])


def test_a_known_model_type_with_other_modules_is_one_line(tiny_bert):
    family = architectures.find("qwen2")  # a BERT model read through the decoder row
    with pytest.raises(ParameterError, match="standard module 'layers'"):
        family.blocks_of(tiny_bert.model)
