"""Streaming capture (core.streaming): hooks against a manual recomputation from Q, K and V, batches
of the requested size, and the model's position limit."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from embedding_geometry.core import activations, streaming, windows
from embedding_geometry.core.errors import ParameterError

SENTENCES = ["The cat sat on the mat.", "A dog barked at the cat!", "Birds sing in the morning.",
             "Is the garden green?", "The mat was red.", "Rain fell all night long."]


def _texts(tiny_bert, n, length):
    return windows.windows(tiny_bert.tokenizer, windows.cycled(SENTENCES), n, length)


def _manual_head(model, hidden, layer, head):
    """softmax(Q Kᵀ / √d) V for one head, from the block's own Q/K/V weights."""
    attn = model.encoder.layer[layer].attention.self
    d = model.config.hidden_size // model.config.num_attention_heads
    cols = slice(head * d, (head + 1) * d)
    q, k, v = (torch.nn.functional.linear(hidden, m.weight[cols], m.bias[cols])
               for m in (attn.query, attn.key, attn.value))
    probs = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1)
    return probs @ v, probs


def test_hook_capture_equals_a_manual_recomputation_from_qkv(tiny_bert):
    model = tiny_bert.model
    made = list(_texts(tiny_bert, 2, 20))
    ids = torch.as_tensor(np.stack([w.input_ids for w in made]))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    n_layers = tiny_bert.info.layers
    names = streaming.head_names(n_layers) + [f"blocks.{l}.resid_post" for l in range(n_layers)]
    _, cache = activations.run_with_cache(model, batch, names)
    with torch.inference_mode():
        embedded = model(**batch, output_hidden_states=True).hidden_states[0]
    for layer, head in [(0, 0), (n_layers - 1, tiny_bert.info.heads - 1)]:
        block_input = embedded if layer == 0 else cache[f"blocks.{layer - 1}.resid_post"]
        with torch.inference_mode():
            manual, probs = _manual_head(model, block_input, layer, head)
        captured = cache[f"blocks.{layer}.attn.head_out"][:, :, head]
        assert captured.shape == (2, 20, tiny_bert.info.hidden // tiny_bert.info.heads)
        torch.testing.assert_close(captured, manual, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(cache[f"blocks.{layer}.attn.pattern"][:, head], probs, atol=1e-6, rtol=1e-5)


def test_capture_returns_every_block_as_float32_arrays(tiny_bert):
    made = list(_texts(tiny_bert, 3, 16))
    got = streaming.capture(tiny_bert, made)
    L, H, D = tiny_bert.info.layers, tiny_bert.info.heads, tiny_bert.info.hidden
    assert got.windows == made and len(got.head_out) == len(got.pattern) == L
    assert all(o.shape == (3, 16, H, D // H) and o.dtype == np.float32 for o in got.head_out)
    assert all(p.shape == (3, H, 16, 16) for p in got.pattern)
    np.testing.assert_allclose(got.pattern[0].sum(-1), 1.0, atol=1e-5)  # rows are distributions


def test_stream_yields_batches_of_batch_size_in_order(tiny_bert):
    made = list(_texts(tiny_bert, 5, 16))
    batches = list(streaming.stream(tiny_bert, iter(made), batch_size=2))
    assert [len(b.windows) for b in batches] == [2, 2, 1]
    assert [w.text for b in batches for w in b.windows] == [w.text for w in made]
    whole = streaming.capture(tiny_bert, made)
    np.testing.assert_allclose(np.concatenate([b.head_out[1] for b in batches]), whole.head_out[1], atol=1e-5)
    assert list(streaming.stream(tiny_bert, [], batch_size=2)) == []


def test_texts_longer_than_the_models_positions_are_refused(tiny_bert):
    limit = streaming.max_text_length(tiny_bert.model.config)
    assert limit == 160  # tiny BERT: max_position_embeddings
    too_long = windows.windows(tiny_bert.tokenizer, windows.cycled(SENTENCES), 1, limit + 1)
    with pytest.raises(ParameterError, match=f"'text_length' expects an integer ≤ {limit}"):
        next(streaming.stream(tiny_bert, too_long))


def test_roberta_positions_start_after_the_padding_index():
    roberta = SimpleNamespace(model_type="xlm-roberta", max_position_embeddings=514, pad_token_id=1)
    bert = SimpleNamespace(model_type="bert", max_position_embeddings=512, pad_token_id=0)
    assert streaming.max_text_length(roberta) == 512 and streaming.max_text_length(bert) == 512
