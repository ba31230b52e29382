"""Context similarity (METHODS.md §4): matrices and pair statistics on hand-made head outputs,
hook capture against a manual recomputation, streaming against all-at-once, the texts."""

import hashlib
import json
from collections import Counter
from dataclasses import fields
from itertools import islice

import numpy as np
import pytest
import torch

from embedding_geometry.core import activations
from embedding_geometry.studies import attention
from embedding_geometry.core.errors import ParameterError

SENTENCES = [
    "The cat sat on the mat.",
    "A dog barked at the cat!",
    "Birds sing in the morning.",
    "Is the garden green?",
    "The mat was red.",
    "Rain fell all night long.",
]


# --------------------------------------------------------------------------- matrices and pairs

def test_context_similarity_is_o_ot_with_zero_diagonal():
    o = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])
    s = attention.context_similarity(o)
    np.testing.assert_array_equal(s, [[0, 2, 0], [2, 0, 0], [0, 0, 0]])
    assert o[0, 0] == 1.0  # input untouched
    batch = attention.context_similarity(np.stack([o, 2 * o]))
    np.testing.assert_array_equal(batch[1], 4 * s)


def test_one_token_and_zero_outputs_are_errors_not_nan():
    with pytest.raises(ValueError, match="at least 2 tokens"):
        attention.context_similarity(np.ones((1, 4)))
    with pytest.raises(ValueError, match="all zero"):
        attention.high_pairs(attention.context_similarity(np.zeros((5, 3))), 0.99)
    with pytest.raises(ValueError, match="no attention"):
        attention.attention_received(np.zeros((3, 3)))


def test_high_pairs_are_the_entries_at_or_above_the_quantile():
    s = np.zeros((4, 4))
    for (i, j), v in {(0, 1): 1, (0, 2): 5, (0, 3): 2, (1, 2): 4, (1, 3): 3, (2, 3): 6}.items():
        s[i, j] = s[j, i] = v
    assert attention.upper_pairs(4)[0].tolist() == [0, 0, 0, 1, 1, 2]
    # values in pair order: 1 5 2 4 3 6; the 0.5-quantile is 3.5
    assert attention.high_pairs(s, 0.5).tolist() == [False, True, False, True, False, True]
    assert attention.high_pairs(s, 0.99).tolist() == [False, False, False, False, False, True]
    assert attention.high_pairs(s, 0.0).all()
    # relative rule: S ≥ t · max S (max 6)
    assert attention.relative_high_pairs(s, 0.5).tolist() == [False, True, False, True, True, True]
    with pytest.raises(ParameterError, match="parameter 'q' expects a number in \\[0, 1\\]; got 99"):
        attention.high_pairs(s, 99)


def test_ties_are_all_high_and_identical_tokens_tie():
    o = np.ones((5, 2))  # five identical token outputs: every pair has S = 2
    assert attention.high_pairs(attention.context_similarity(o), 0.99).all()


def test_focus_is_the_endpoint_of_most_high_pairs_lowest_on_ties():
    i, j = attention.upper_pairs(5)
    star = (i == 2) | (j == 2)  # every pair touching token 2
    assert attention.focus_positions(star, 5) == 2
    assert attention.endpoint_counts(star, 5).tolist() == [1, 1, 4, 1, 1]
    single = (i == 1) & (j == 3)
    assert attention.focus_positions(single, 5) == 1  # 1 and 3 tie
    both = np.stack([star, single])
    assert attention.focus_positions(both, 5).tolist() == [2, 1]


def test_attention_received_is_column_sums_scaled_to_max_one():
    a = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.5, 0.25, 0.25]])
    np.testing.assert_allclose(attention.attention_received(a), [1.0, 0.375, 0.125])


# --------------------------------------------------------------------------- pair statistics

def _hand_batch():
    """One text, T = 5: [CLS] a b a [SEP], tokens 1..3 in sentence 0; one block, one head."""
    batch = attention.TextBatch(input_ids=np.array([[101, 7, 8, 7, 102]]),
                                sentence_ids=np.array([[-1, 0, 0, 0, -1]]),
                                separators=np.array([[False, False, False, False, True]]),
                                tokens=[["[CLS]", "a", "b", "a", "[SEP]"]])
    # outputs: tokens 1 and 3 equal (S = 9), everything else orthogonal-ish and small
    o = np.array([[0.1, 0, 0], [3, 0, 0], [0, 1, 0], [3, 0, 0], [0, 0, 0.5]])
    head_out = o[None, :, None, :]  # [B, T, H, d]
    pattern = np.zeros((1, 1, 5, 5))
    pattern[..., 4] = 1.0  # every query attends to [SEP]
    return batch, head_out, pattern


def test_pair_statistics_on_a_hand_made_text():
    batch, head_out, pattern = _hand_batch()
    settings = attention.Settings(q=0.9, common_min_count=2, sensitivity_thresholds=[0.1, 0.5])
    stats = attention.batch_statistics([head_out], [pattern], batch, settings)
    # S pairs (i<j): only (1,3) = 9 and (0,1)=(0,3)=0.3 are non-zero; 0.9-quantile of 10 values
    # [0.3, 0, 0.3, 0, 0, 9, 0, 0, 0, 0] is 1.17, so the one high pair is (1, 3)
    assert stats.head_pairs.tolist() == [[1]]
    assert stats.head_distance.tolist() == [[2]]
    assert stats.distance_counts.tolist() == [[0, 0, 1, 0, 0]]
    assert stats.head_same_sentence.tolist() == [[1]] and stats.head_repeats.tolist() == [[1]]
    assert stats.focus_tokens[0][0] == Counter({"a": 1})  # positions 1 and 3 tie: the first
    assert stats.head_common_focus.tolist() == [[1]]  # "a" occurs twice ≥ common_min_count
    assert stats.unique_focus.tolist() == [[0, 1]]
    # chance: 10 pairs, 3 inside the sentence, 1 repeat; 1 separator of 5 tokens
    assert (stats.all_pairs, stats.all_same_sentence, stats.all_repeats) == (10, 3, 1)
    assert (stats.tokens, stats.separators) == (5, 1)
    # attention: only [SEP] receives any, and it is a separator
    assert stats.head_attended.tolist() == [[1]] and stats.head_attended_separators.tolist() == [[1]]
    assert stats.attended_kinds.tolist() == [[0, 1, 0, 0]]
    # relative rule: t = 0.1 → S ≥ 0.9: the pair (1, 3); t = 0.5 the same
    assert stats.sensitivity_pairs.tolist() == [[1], [1]]
    assert stats.sensitivity_distance.tolist() == [[2], [2]]


def test_metrics_divide_pooled_counts():
    batch, head_out, pattern = _hand_batch()
    settings = attention.Settings(q=0.9, common_min_count=2)
    stats = attention.batch_statistics([head_out], [pattern], batch, settings)
    m = attention.metrics(stats, settings)
    assert m["layers"] == [1]
    assert m["mean_pair_distance"].tolist() == [2.0]
    assert m["mean_pair_distance_chance"] == pytest.approx((4 * 1 + 3 * 2 + 2 * 3 + 1 * 4) / 10)  # (T + 1) / 3
    assert m["same_sentence_fraction"].tolist() == [1.0]
    assert m["same_sentence_chance"] == pytest.approx(0.3)
    assert m["separator_attention"].tolist() == [1.0] and m["separator_share"] == pytest.approx(0.2)
    assert m["unique_focus_tokens"]["mean"].tolist() == [1.0] and m["unique_focus_fraction"].tolist() == [1.0]
    assert m["heads"]["class"] == [["repetition"]]
    assert m["head_classes"] == {"repetition": [1], "common-token": [0], "other": [0]}
    assert m["distance_histogram"].tolist() == [[0, 1, 0, 0]]
    json.dumps(attention.metrics(stats, settings), default=lambda x: x.tolist())  # all serialisable


def test_head_classes_follow_the_stated_rule():
    stats = attention.ContextStats.empty(1, 3, 8, 1)
    stats.texts = 10
    stats.head_pairs[:] = 100
    stats.head_repeats[0] = [30, 10, 10]
    stats.head_common_focus[0] = [0, 6, 4]
    stats.head_attended[:] = 1
    settings = attention.Settings(repeat_share_threshold=0.25, common_focus_threshold=0.5)
    table = attention.head_table(stats, settings)
    assert table["class"].tolist() == ["repetition", "common-token", "other"]
    assert table[["layer", "head"]].values.tolist() == [[1, 1], [1, 2], [1, 3]]


def test_settings_are_checked_and_name_the_parameter():
    with pytest.raises(ParameterError, match="'attention_threshold' expects a number in \\[0, 1\\]; got 1.5"):
        attention.Settings(attention_threshold=1.5)
    with pytest.raises(ParameterError, match="'sensitivity_thresholds'"):
        attention.Settings(sensitivity_thresholds=[0.1, -0.2])
    with pytest.raises(ParameterError, match="'sensitivity_thresholds'"):
        attention.Settings(sensitivity_thresholds=[])
    with pytest.raises(ParameterError, match="'common_min_count' expects an integer ≥ 2"):
        attention.Settings(common_min_count=1)
    assert attention.Settings(sensitivity_thresholds=[0.1, 1]).sensitivity_thresholds == (0.1, 1.0)


# --------------------------------------------------------------------------- streaming

def _random_batch(rng, n_texts, n_tokens=10, n_heads=3, n_layers=2, width=4):
    ids = rng.integers(5, 9, size=(n_texts, n_tokens))
    ids[:, 0], ids[:, -1] = 101, 102
    sentence_ids = np.repeat(np.arange(n_tokens) * 3 // n_tokens, 1)[None].repeat(n_texts, 0)
    sentence_ids[:, [0, -1]] = -1
    separators = np.zeros((n_texts, n_tokens), bool)
    separators[:, [4, -1]] = True
    batch = attention.TextBatch(ids, sentence_ids, separators, [[f"t{t}" for t in row] for row in ids])
    outs = [rng.normal(size=(n_texts, n_tokens, n_heads, width)) for _ in range(n_layers)]
    maps = [rng.dirichlet(np.ones(n_tokens), size=(n_texts, n_heads, n_tokens)) for _ in range(n_layers)]
    return batch, outs, maps


def _part(batch, outs, maps, rows, settings):
    sub = attention.TextBatch(batch.input_ids[rows], batch.sentence_ids[rows], batch.separators[rows],
                              [batch.tokens[r] for r in rows])
    return attention.batch_statistics([o[rows] for o in outs], [m[rows] for m in maps], sub, settings)


def _assert_same_stats(a, b):
    for f in fields(attention.ContextStats):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "focus_tokens":
            assert x == y, f.name
        else:
            np.testing.assert_array_equal(x, y, err_msg=f.name)


def test_streaming_aggregates_equal_the_all_at_once_result():
    rng = np.random.default_rng(0)
    batch, outs, maps = _random_batch(rng, n_texts=7)
    settings = attention.Settings(q=0.8, common_min_count=2)
    whole = _part(batch, outs, maps, np.arange(7), settings)
    for splits in ([1, 3, 7], [2, 4, 6, 7], list(range(1, 8))):
        starts = [0] + splits[:-1]
        parts = [_part(batch, outs, maps, np.arange(a, b), settings) for a, b in zip(starts, splits)]
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        _assert_same_stats(total, whole)
    assert whole.texts == 7 and whole.head_pairs.sum() > 0
    m = attention.metrics(whole, settings)
    assert m["unique_focus_tokens"]["histogram"].sum(axis=1).tolist() == [7, 7]


def test_adding_statistics_leaves_both_operands_unchanged():
    rng = np.random.default_rng(1)
    batch, outs, maps = _random_batch(rng, n_texts=2)
    settings = attention.Settings()
    a, b = _part(batch, outs, maps, [0], settings), _part(batch, outs, maps, [1], settings)
    before = a.head_pairs.copy(), Counter(a.focus_tokens[0][0])
    _ = a + b
    np.testing.assert_array_equal(a.head_pairs, before[0])
    assert a.focus_tokens[0][0] == before[1]
    with pytest.raises(ValueError, match="cannot add"):
        a + attention.ContextStats.empty(1, 3, 10, 5)


# --------------------------------------------------------------------------- texts of T tokens

def test_windows_are_exactly_t_tokens_of_whole_sentences(tiny_bert):
    tokenizer = tiny_bert.tokenizer
    made = list(attention.windows(tokenizer, SENTENCES, n_texts=2, length=16))
    for w in made:
        assert len(w.input_ids) == 16 and w.tokens[0] == "[CLS]" and w.tokens[-1] == "[SEP]"
        assert tokenizer(w.text)["input_ids"] == w.input_ids.tolist()  # the text is what the model read
        ids = w.sentence_ids[1:-1]
        assert (np.diff(ids) >= 0).all() and ids[0] == 0 and w.sentence_ids[0] == w.sentence_ids[-1] == -1
    first, second = made
    # "the cat sat on the mat ." is 7 pieces, "a dog barked at the cat !" 7 more: 16 with [CLS] [SEP]
    assert first.text == "The cat sat on the mat. A dog barked at the cat!" and first.whole_sentences == 2
    assert np.flatnonzero(first.separators).tolist() == [7, 14, 15]
    # the next text starts with the next sentence; its last sentence is cut
    assert second.text.startswith("Birds sing in the morning. Is the garden green?")
    assert second.whole_sentences == 2 and not second.text.endswith("The mat was red.")
    assert second.separators[-1] and second.separators.sum() == 3


def test_windows_run_out_skip_blanks_and_check_length(tiny_bert):
    with pytest.raises(ParameterError, match="'n_texts' expects at most 1 texts of 16 tokens"):
        list(attention.windows(tiny_bert.tokenizer, SENTENCES[:3], n_texts=2, length=16))
    spaced = [SENTENCES[0], "  ", "", SENTENCES[1]]
    (w,) = attention.windows(tiny_bert.tokenizer, spaced, n_texts=1, length=16)
    assert w.text == "The cat sat on the mat. A dog barked at the cat!"
    with pytest.raises(ParameterError, match="'text_length' expects an integer ≥ 4"):
        list(attention.windows(tiny_bert.tokenizer, SENTENCES, n_texts=1, length=2))


def test_cycled_repeats_in_new_seeded_orders():
    stream = attention.cycled(["a", "b", "c"], seed=3)
    first = [next(stream) for _ in range(9)]
    assert first[:3] == ["a", "b", "c"] and sorted(first[3:6]) == sorted(first[6:9]) == ["a", "b", "c"]
    again = attention.cycled(["a", "b", "c"], seed=3)
    assert [next(again) for _ in range(9)] == first
    with pytest.raises(ParameterError, match="'sentences'"):
        next(attention.cycled([]))


def test_sentence_stream_names_the_source_and_restarts_on_every_call():
    from embedding_geometry.core import corpora

    first = attention.sentence_stream("corpus", seed=0)
    sentences = corpora.corpus()["sentence"].tolist()
    assert [next(first) for _ in range(3)] == sentences[:3]
    n = len(sentences) + 5  # past the first pass: into the seeded shuffled order
    again = attention.sentence_stream("corpus", seed=0)
    assert list(islice(again, n)) == list(islice(attention.cycled(sentences, seed=0), n))
    with pytest.raises(ParameterError, match="'texts' expects one of 'corpus', 'wikitext'"):
        attention.sentence_stream("books")


WIKITEXT = """ = Valkyria Chronicles III = 

 Senjō no Valkyria 3 is a tactical role @-@ playing video game . It was released in 2011 in Japan !
 The game 's budget was 1 @,@ 000 @.@ 5 million yen . Is it a sequel ? Yes .

 = = Gameplay = = 

 The player controls a squad of U.S. soldiers on a map .
"""


def test_wikitext_code_path_on_a_local_file(tmp_path, tiny_bert):
    path = tmp_path / "wiki.txt"
    path.write_text(WIKITEXT)
    sentences = list(attention.wikitext_sentences(data_files=path))
    assert sentences == [
        "Senjō no Valkyria 3 is a tactical role-playing video game .",
        "It was released in 2011 in Japan !",
        "The game 's budget was 1,000.5 million yen .",
        "Is it a sequel ?",
        "Yes .",
        "The player controls a squad of U.S. soldiers on a map .",
    ]
    (w,) = attention.windows(tiny_bert.tokenizer, attention.wikitext_sentences(data_files=path), 1, length=24)
    assert len(w.input_ids) == 24 and w.text.startswith("Senjō no Valkyria")
    assert attention.split_wikitext(" = = Heading = = ") == []


def test_text_record_keeps_the_first_texts_and_hashes_all(tiny_bert):
    made = list(attention.windows(tiny_bert.tokenizer, attention.cycled(SENTENCES), 25, length=12))
    record = attention.TextRecord()
    for w in made:
        record.add(w)
    summary = record.to_dict()
    assert summary["count"] == 25 and summary["first"] == [w.text for w in made[:20]]
    assert summary["sha256"] == hashlib.sha256("".join(w.text + "\n" for w in made).encode()).hexdigest()


# --------------------------------------------------------------------------- hooks on a real model

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
    windows = list(attention.windows(tiny_bert.tokenizer, attention.cycled(SENTENCES), 2, length=20))
    ids = torch.as_tensor(np.stack([w.input_ids for w in windows]))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    n_layers = tiny_bert.info.layers
    names = attention.head_names(n_layers) + [f"blocks.{l}.resid_post" for l in range(n_layers)]
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


def test_measure_streams_batches_and_keeps_one_example(tiny_bert):
    settings = attention.Settings()
    texts = lambda: attention.windows(tiny_bert.tokenizer, attention.cycled(SENTENCES), 5, length=16)  # noqa: E731
    run = attention.measure(tiny_bert, texts(), settings, batch_size=2)
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    assert run.stats.shape == (L, H, 16) and run.stats.texts == 5 and run.texts.count == 5
    assert run.example.similarity.shape == (L, H, 16, 16) and run.example.received.shape == (L, H, 16)
    assert (run.stats.unique_focus.sum(axis=1) == 5).all()
    once = attention.measure(tiny_bert, texts(), settings, batch_size=5)
    np.testing.assert_array_equal(once.stats.head_attended, run.stats.head_attended)
    assert once.texts.to_dict() == run.texts.to_dict()


# --------------------------------------------------------------------------- figures

def test_levels_encode_values_in_one_character_each():
    values = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
    text = attention.encode_levels(values)
    assert len(text) == 6 and text[0] == "0" and text[-2:] == "__"
    np.testing.assert_allclose(attention.decode_levels(text), np.clip(values, -1, 1), atol=1 / 63)


def test_block_means_average_square_blocks():
    m = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_allclose(attention.block_means(m, 2), [[2.5, 4.5], [10.5, 12.5]])
    assert attention.block_means(np.ones((5, 5)), 2).shape == (2, 2)  # blocks of 3, then 2
    np.testing.assert_allclose(attention.block_means(np.ones((5, 5)), 2), 1.0)


def test_example_frames_and_charts_are_valid_and_light(tiny_bert):
    from embedding_geometry.book import charts

    settings = attention.Settings()
    texts = attention.windows(tiny_bert.tokenizer, attention.cycled(SENTENCES), 3, length=32)
    run = attention.measure(tiny_bert, texts, settings, batch_size=2)
    frames = attention.example_frames(run.example, size=16)
    L, H = tiny_bert.info.layers, tiny_bert.info.heads
    assert len(frames["matrices"]) == L * H and frames["matrices"]["side"].iloc[0] == 16
    assert all(len(c) == 16 * 16 for c in frames["matrices"]["cells"])  # blocks of 2 tokens
    first = attention.decode_levels(frames["matrices"]["cells"].iloc[0]).reshape(16, 16)
    expected = attention.block_means(run.example.similarity[0, 0], 16)
    np.testing.assert_allclose(first, expected / np.abs(expected).max(), atol=1 / 63)
    assert frames["bounds"]["position"].tolist()[0] == 1  # the first sentence starts after [CLS]
    spec = charts.context_matrix_explorer(frames, L, H, 0.3, attention.LEVELS).to_dict()
    params = {p["name"]: p for p in spec["params"]}
    assert params["layer"]["bind"]["max"] == L and params["head"]["bind"]["max"] == H
    assert len(json.dumps(spec)) < 60_000
    m = attention.metrics(run.stats, settings)
    for chart in (charts.layer_shares(attention.kinds_frame(m), "kind"),
                  charts.head_grid(attention.head_table(run.stats, settings)),
                  charts.distance_lines(attention.distance_frame(m, [1, L])),
                  charts.block_lines(attention.layer_frame({"run": m["mean_pair_distance"]}), "d", chance=10.0),
                  charts.layer_heatmap(attention.unique_focus_frame(m), "distinct", "share", "distinct"),
                  charts.sensitivity_chart(attention.sensitivity_frame(m), {"mean_pair_distance": "d"})):
        chart.to_dict()  # validates against the Vega-Lite schema
    with pytest.raises(ParameterError, match="'matrix_size'"):
        attention.example_frames(run.example, size=1)


# --------------------------------------------------------------------------- memory and the chapter

@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_number_of_texts(tiny_bert_dir):
    """benchmarks/attention_memory.py on the tiny model: 10× the texts, the same peak RSS."""
    import subprocess
    import sys

    from conftest import ROOT

    script = ROOT / "benchmarks" / "attention_memory.py"
    done = subprocess.run([sys.executable, str(script), "--model", str(tiny_bert_dir), "--sizes", "16", "160",
                           "--length", "64", "--batch-size", "8"], capture_output=True, text=True, timeout=900)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["n_texts"] for r in report["runs"]] == [16, 160]
    assert done.returncode == 0 and report["ratio"] <= 1.10, done.stdout + done.stderr


@pytest.mark.slow
def test_chapter_results_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / "04_attention_context_similarity.json").read_text())
    m, L, H = document["metrics"], document["model"]["layers"], document["model"]["heads"]
    assert m["layers"] == list(range(1, L + 1)) and m["n_texts"] == 6
    for key in ("mean_pair_distance", "same_sentence_fraction", "separator_attention", "unique_focus_fraction"):
        assert len(m[key]) == L, key
    assert len(m["distance_histogram"]) == L and len(m["distance_histogram"][0]) == 127  # d = 1 … T − 1
    histogram = m["unique_focus_tokens"]["histogram"]
    assert [sum(row) for row in histogram] == [6] * L and len(histogram[0]) == H + 1
    assert all(0 <= x <= 1 for x in m["separator_attention"] + m["same_sentence_fraction"])
    assert 1 <= min(m["mean_pair_distance"]) and max(m["mean_pair_distance"]) <= 127
    assert sum(sum(v) for v in m["head_classes"].values()) == L * H
    texts = document["inputs"]["texts"]
    assert texts["count"] == 6 and len(texts["first"]) == 6 and len(texts["sha256"]) == 64
    assert document["inputs"]["thresholds"]["attention_threshold"] == 0.3
    assert document["inputs"]["thresholds"]["sensitivity_thresholds"] == [0.1, 0.2, 0.3, 0.4, 0.5]
    ids = [c["id"] for c in document["claims"]]
    assert ids == ["separators-in-final-layers", "heads-specialise", "long-to-short-range",
                   "same-sentence-in-final-layers", "unique-focus-tokens"]
    assert all(c["shape_verdict"] in ("holds", "does not hold") for c in document["claims"])
    assert all(c["numeric_verdict"] is None for c in document["claims"])  # not the paper's model
    page = (root / "_build" / "html" / "book" / "chapters" / "04_attention_context_similarity.html").read_text()
    assert '"name": "layer"' in page and '"name": "head"' in page  # the explorer's two sliders


@pytest.mark.slow
def test_chapter_exercise_answers_on_the_tiny_model(built_book):
    """Chapter 4's exercise answers: from the streamed totals where they suffice (τ = 0.1 is a
    sensitivity threshold; head classes at another repeat bar), else on the run's first texts."""
    root, _ = built_book
    document = json.loads((root / "build" / "results" / "04_attention_context_similarity.json").read_text())
    m, L, H = document["metrics"], document["model"]["layers"], document["model"]["heads"]
    exercises = m["exercises"]
    low = m["sensitivity"]["thresholds"].index(0.1)
    assert exercises["attention_threshold_0.1_separator_attention"] == m["sensitivity"]["separator_attention"][low]
    strict = exercises["repeat_share_threshold_0.5"]
    assert sum(strict["heads"].values()) == L * H
    assert strict["heads"]["repetition"] <= sum(m["head_classes"]["repetition"])  # a higher bar keeps fewer
    assert 0 <= strict["layers_with_both_kinds"] <= L
    loose = exercises["q_0.95_first_texts"]
    assert set(loose) == {"q=0.99", "q=0.95"}
    assert all(len(v["mean_pair_distance"]) == len(v["same_sentence_lift"]) == L for v in loose.values())
    texts = document["inputs"]["exercise_texts"]
    assert texts == document["inputs"]["texts"]["first"][:len(texts)] and len(texts) == 6  # min(8, n_texts)
