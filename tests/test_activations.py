"""Extraction: shapes, masks, order, the disk cache, hooks, and equality with the model's embedding."""

import numpy as np
import pytest
import torch

from embedding_geometry.core import activations, disk_cache, models, passes, registry
from embedding_geometry.core.errors import ParameterError

TEXTS = ["The quick brown fox jumps over the lazy dog", "Hi", "Its rival acquired the tech giant"]


@pytest.fixture
def record(tiny_bert, tmp_path):
    return activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False, batch_size=2)


def test_shapes_and_offsets(record, tiny_bert):
    L, D = tiny_bert.info.layers, tiny_bert.info.hidden
    n_tokens = record.offsets[-1]
    assert record.hidden.shape == (L + 1, n_tokens, D)
    assert record.hidden.dtype == np.float32
    assert record.n_layers == L and record.n_texts == 3
    assert len(record.tokens) == len(record.input_ids) == len(record.word_ids) == n_tokens
    assert record.lengths.tolist() == [11, 3, 8]  # [CLS] + pieces + [SEP]


def test_masks_mark_special_and_word_tokens(record):
    first = record.rows(1)
    assert record.tokens[first] == ["[CLS]", "hi", "[SEP]"]
    assert record.special_mask[first].tolist() == [True, False, True]
    assert record.word_mask[first].tolist() == [False, True, False]
    assert record.word_ids[first].tolist() == [-1, 0, -1]
    assert (record.word_mask == ~record.special_mask).all()
    mask = record.attention_mask()
    assert mask.shape == (3, 11) and mask.sum(1).tolist() == [11, 3, 8]


def test_length_sorted_batches_return_inputs_in_order(record, tiny_bert, tmp_path):
    for i, text in enumerate(TEXTS):
        alone = activations.extract(tiny_bert, [text], cache=False, progress=False)
        np.testing.assert_allclose(record.hidden[:, record.rows(i)], alone.hidden, atol=1e-5)


def _passes_cost(cut, lengths):
    return sum(len(p) * max(lengths[i] for i in p) + passes.PASS_TOKENS for p in cut)


@pytest.mark.parametrize("max_tokens, max_texts, expected", [
    (100, None, [[1, 3], [0, 2, 4]]),  # 20 + 19 apart from the 5s: 72 + 47 beats one pass of 100 + 32
    (30, None, [[1], [3], [0, 2, 4]]),  # 2 × 20 > 30: the long texts go one by one
    (100, 2, [[1, 3], [0], [2, 4]]),  # a tie with [0, 2], [4]: the shorter pass first
    (4, None, [[1], [3], [0], [2], [4]]),  # each text longer than the budget goes alone
])
def test_batches_cut_length_sorted_runs_under_both_limits(max_tokens, max_texts, expected):
    lengths = [5, 20, 5, 19, 5]
    assert [p.tolist() for p in passes.batches(lengths, max_tokens, max_texts)] == expected


def test_batches_are_the_cheapest_of_all_batchings():
    """Against every partition of up to 7 texts (877 for 7): the cut's cost is the least under the limits."""
    import itertools

    def partitions(items):
        if not items:
            yield []
            return
        for rest in partitions(items[1:]):
            for k in range(len(rest)):
                yield rest[:k] + [[items[0]] + rest[k]] + rest[k + 1:]
            yield [[items[0]]] + rest

    rng = np.random.default_rng(0)
    for n, max_tokens, max_texts in itertools.product((1, 4, 7), (40, 200), (None, 3)):
        lengths = rng.integers(2, 30, n).tolist()
        found = passes.batches(lengths, max_tokens, max_texts)
        assert sorted(i for p in found for i in p) == list(range(n))
        allowed = [p for p in partitions(list(range(n)))
                   if all(len(b) == 1 or (len(b) * max(lengths[i] for i in b) <= max_tokens
                                          and len(b) <= (max_texts or n)) for b in p)]
        assert _passes_cost(found, lengths) == min(_passes_cost(p, lengths) for p in allowed)


def test_padded_is_the_tokenizer_s_own_padding(tiny_bert):
    ids = [np.asarray(x) for x in tiny_bert.tokenizer(TEXTS)["input_ids"]]
    ours = passes.padded(ids, tiny_bert)
    theirs = tiny_bert.tokenizer.pad({"input_ids": ids}, padding_side="right", return_tensors="pt")
    assert set(ours) == {"input_ids", "attention_mask"}
    for name, tensor in ours.items():
        assert torch.equal(tensor, theirs[name])


def test_token_budget_batches_give_each_text_its_own_states(tiny_bert):
    """Per-text states do not depend on the batch beyond float noise: passes of a few texts, padded,
    against each text alone. float32 keeps 2⁻²⁴ ≈ 6e-8 of a value; another batch changes the
    shapes of the matrix products and so the order of their sums, a few units in the last place
    per operation over the blocks: 1e-5 of the largest state bounds that and no real difference
    (a state read at a wrong row, padding leaking into the mask) stays under it."""
    texts = [f"{'very ' * (i % 7)}short text number {i}" for i in range(23)]
    together = activations.extract(tiny_bert, texts, cache=False, progress=False, batch_tokens=64,
                                   attentions=True, after_attention=True)
    cut = passes.batches(together.lengths, 64)
    assert len(cut) > 2 and max(len(p) for p in cut) > 2
    real = together.lengths.sum() / sum(len(p) * together.lengths[p].max() for p in cut)
    assert real < 1  # some padding: the mask is exercised
    alone = activations.extract(tiny_bert, texts, cache=False, progress=False, batch_size=1,
                                attentions=True, after_attention=True)
    scale = np.abs(alone.hidden).max()
    np.testing.assert_allclose(together.hidden, alone.hidden, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(together.after_attention, alone.after_attention, rtol=0, atol=1e-5 * scale)
    for a, b in zip(together.attentions, alone.attentions):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    base = together.hidden.base  # one array of its own (torch's allocation, activations._fresh), not a view
    assert together.hidden.flags.c_contiguous and tuple(base.shape) == together.hidden.shape


def test_mean_pool_word_pool_and_cls(record):
    pools, words, cls = record.mean_pool("all"), record.mean_pool("word"), record.cls()
    for i in range(record.n_texts):
        states = record.hidden[:, record.rows(i)]
        np.testing.assert_allclose(pools[:, i], states.mean(1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(words[:, i], states[:, record.word_mask[record.rows(i)]].mean(1),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(cls[:, i], states[:, 0])


def test_second_call_is_a_cache_hit_without_a_forward_pass(tiny_bert, tmp_path, monkeypatch):
    first = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False)
    def no_forward(*args, **kwargs):
        raise AssertionError("forward pass on a cache hit")
    monkeypatch.setattr(activations, "_forward", no_forward)
    second = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(first.hidden, second.hidden)
    assert second.tokens == first.tokens and second.key == first.key


def test_the_states_between_sublayers_are_a_companion_entry_that_leaves_the_record_shared(tiny_bert, tmp_path,
                                                                                          monkeypatch):
    """One pass with ``after_attention`` stores the record under the key a plain call reads and
    the sublayer states under a key of their own: a plain call afterwards (another chapter on
    the same texts) and a second call with them both read back, with no forward pass."""
    split = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False, after_attention=True)
    L, n, D = tiny_bert.info.layers, split.offsets[-1], tiny_bert.info.hidden
    assert split.after_attention.shape == (L, n, D) and split.after_attention.dtype == np.float32
    plain_key = activations.cache_key(tiny_bert, TEXTS, 128, False)
    mid_key = activations.cache_key(tiny_bert, TEXTS, 128, False, after_attention=True)
    assert split.key == plain_key != mid_key
    assert sorted(p.stem for p in tmp_path.glob("*.joblib")) == sorted([plain_key, mid_key])
    def no_forward(*args, **kwargs):
        raise AssertionError("forward pass on a cache hit")
    monkeypatch.setattr(activations, "_forward", no_forward)
    plain = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False)
    again = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False, after_attention=True)
    assert plain.after_attention is None and plain.key == plain_key
    np.testing.assert_array_equal(plain.hidden, split.hidden)
    np.testing.assert_array_equal(again.after_attention, split.after_attention)
    (tmp_path / f"{mid_key}.joblib").unlink()  # the record alone does not answer a call that needs the states
    with pytest.raises(AssertionError, match="forward pass on a cache hit"):
        activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False, after_attention=True)


def test_cache_key_changes_with_texts_and_max_length(tiny_bert):
    base = activations.cache_key(tiny_bert, TEXTS, 128, False)
    assert activations.cache_key(tiny_bert, TEXTS[:2], 128, False) != base
    assert activations.cache_key(tiny_bert, TEXTS, 64, False) != base
    assert activations.cache_key(tiny_bert, TEXTS, 128, True) != base
    assert activations.cache_key(tiny_bert, list(TEXTS), 128, False) == base


def test_truncated_cache_file_is_detected_and_recomputed(tiny_bert, tmp_path):
    first = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False)
    (entry,) = tmp_path.glob("*.joblib")
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    with pytest.warns(UserWarning, match="unreadable"):
        again = activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(first.hidden, again.hidden)
    assert disk_cache.load(entry, first.key, activations.Activations) is not None  # rewritten whole
    assert not list(tmp_path.glob(".partial-*"))


def test_attention_maps_are_optional_and_ragged(tiny_bert, tmp_path):
    record = activations.extract(tiny_bert, TEXTS, attentions=True, cache_dir=tmp_path, progress=False)
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    for i, n in enumerate(record.lengths):
        assert record.attentions[i].shape == (L, H, n, n)
        np.testing.assert_allclose(record.attentions[i].sum(-1), 1.0, atol=1e-5)
    assert activations.extract(tiny_bert, TEXTS, cache_dir=tmp_path, progress=False).attentions is None


def test_text_without_word_tokens_names_the_parameter(tiny_bert):
    with pytest.raises(ParameterError, match="parameter 'sentences' expects texts that each contain"):
        activations.extract(tiny_bert, ["fine text", ""], cache=False, progress=False, source="sentences")
    with pytest.raises(ParameterError, match="non-empty list"):
        activations.extract(tiny_bert, [], cache=False, progress=False)


def test_run_with_cache_names_shapes_and_hook_removal(tiny_bert):
    batch = tiny_bert.tokenizer(TEXTS, padding=True, return_tensors="pt")
    names = ["embed", "blocks.2.resid_post", "blocks.0.attn.head_out", "blocks.1.attn.pattern"]
    output, cache = activations.run_with_cache(tiny_bert.model, batch, names)
    B, T = batch["input_ids"].shape
    assert set(cache) == set(names)
    assert cache["embed"].shape == (B, T, 40)
    torch.testing.assert_close(cache["blocks.2.resid_post"], output.last_hidden_state)
    assert cache["blocks.0.attn.head_out"].shape == (B, T, 4, 10)
    assert cache["blocks.1.attn.pattern"].shape == (B, 4, T, T)
    assert not cache["embed"].requires_grad
    for block in tiny_bert.model.encoder.layer:
        assert not block.attention.output.dense._forward_pre_hooks


def test_head_out_is_the_input_of_the_output_projection(tiny_bert):
    batch = tiny_bert.tokenizer(TEXTS[:1], return_tensors="pt")
    _, cache = activations.run_with_cache(tiny_bert.model, batch, ["blocks.1.attn.head_out", "blocks.0.resid_post"])
    block = tiny_bert.model.encoder.layer[1]
    heads = cache["blocks.1.attn.head_out"].reshape(1, -1, 40)
    residual = cache["blocks.0.resid_post"]
    with torch.inference_mode():
        projected = block.attention.output.dense(heads)
        expected = block.attention(residual, attention_mask=None)[0]
    torch.testing.assert_close(block.attention.output.LayerNorm(projected + residual), expected, atol=1e-5, rtol=1e-4)


def test_hooks_are_removed_when_the_forward_pass_fails(tiny_bert):
    with pytest.raises(Exception):
        activations.run_with_cache(tiny_bert.model, {"input_ids": torch.tensor([[10**7]])}, ["blocks.0.attn.head_out"])
    assert not tiny_bert.model.encoder.layer[0].attention.output.dense._forward_pre_hooks


def assert_mean_pool_is_sentence_transformers_encode(loaded, name, tmp_path):
    """m_L(s), our final-depth mean pool, equals the model's own unnormalised embedding to 1e-5."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize

    texts = ["The quick brown fox jumps over the lazy dog", "A short one",
             "Retrieval augmented generation improves factual accuracy in language models"]
    record = activations.extract(loaded, texts, cache_dir=tmp_path, progress=False)
    full = SentenceTransformer(str(registry.directory(registry.REGISTRY[name])), device="cpu")
    unnormalised = SentenceTransformer(modules=[m for m in full if not isinstance(m, Normalize)], device="cpu")
    expected = unnormalised.encode(texts, normalize_embeddings=False)
    np.testing.assert_allclose(record.mean_pool("all")[-1], expected, atol=1e-5)
    assert activations.check_against_model(loaded, record)["max_abs_diff"] < 1e-5


def test_embedded_mean_pool_equals_sentence_transformers_encode(embedded, tmp_path):
    assert_mean_pool_is_sentence_transformers_encode(embedded, "minilm", tmp_path)


@pytest.mark.slow
def test_mpnet_mean_pool_equals_sentence_transformers_encode(tmp_path):
    """all-mpnet-base-v2, assembled from its five packages on first use (about 440 MB)."""
    mpnet = models.load("mpnet", device="cpu")
    info = mpnet.info
    assert (info.id, info.source, info.family) == ("sentence-transformers/all-mpnet-base-v2", "embedded", "MPNet")
    assert info.sha256 == "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    assert (info.layers, info.hidden, info.heads, info.pooling, info.max_seq_length) == (12, 768, 12, "mean", 384)
    assert_mean_pool_is_sentence_transformers_encode(mpnet, "mpnet", tmp_path)


def test_token_frame_and_tokenization_table(record):
    values = np.arange(record.hidden.shape[0] * len(record.tokens), dtype=float).reshape(record.hidden.shape[0], -1)
    frame = activations.token_frame(record, values, "v", labels=["a", "b", "c"])
    assert len(frame) == values.size
    assert frame.query("depth == 1 and sentence == 'b'")["token"].tolist() == ["[CLS]", "hi", "[SEP]"]
    table = activations.tokenization_table(record)
    assert table["tokens"].tolist() == [11, 3, 8]
    assert table["word tokens"].tolist() == [9, 1, 6]


def test_unfinished_cache_writes_of_dead_processes_are_removed(tmp_path):
    import os
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f".partial-{dead.pid}-abc.joblib").write_bytes(b"half")
    (tmp_path / f".partial-{os.getpid()}-def.joblib").write_bytes(b"being written")
    (tmp_path / "complete.joblib").write_bytes(b"whole")
    removed = disk_cache.remove_partial_entries(tmp_path)
    assert [p.name for p in removed] == [f".partial-{dead.pid}-abc.joblib"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".partial-{os.getpid()}-def.joblib", "complete.joblib"]
