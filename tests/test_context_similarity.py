"""Chapter 4's study (studies.context_matrices, context_stats, context_similarity) and its own
package's exercises and budget (chapters.ch04_heads): matrices and pair statistics on hand-made
head outputs, streaming against all-at-once, the metrics dict and its schema, head classes, and
the chapter end to end on the tiny model."""

import ast
import json
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from embedding_geometry.book import rules
from embedding_geometry.chapters.ch04_heads import exercises as cx
from embedding_geometry.core import corpora
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.core.streaming import Captured
from embedding_geometry.core.windows import Window
from embedding_geometry.studies import context_matrices as cm
from embedding_geometry.studies import context_heads
from embedding_geometry.studies import context_similarity as cs

SLUG = "04_attention_context_similarity"
ROOT_NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / f"{SLUG}.ipynb"


# --------------------------------------------------------------------------- matrices and pairs

def test_context_similarity_is_o_ot_with_zero_diagonal():
    o = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])
    s = cm.context_similarity(o)
    np.testing.assert_array_equal(s, [[0, 2, 0], [2, 0, 0], [0, 0, 0]])
    assert o[0, 0] == 1.0  # input untouched
    batch = cm.context_similarity(np.stack([o, 2 * o]))
    np.testing.assert_array_equal(batch[1], 4 * s)


def test_one_token_and_zero_outputs_are_errors_not_nan():
    with pytest.raises(ValueError, match="at least 2 tokens"):
        cm.context_similarity(np.ones((1, 4)))
    with pytest.raises(ValueError, match="all zero"):
        cm.quantile_mask(cm.pair_values(cm.context_similarity(np.zeros((5, 3)))), 0.99)
    with pytest.raises(ValueError, match="no attention"):
        cm.attention_received(np.zeros((3, 3)))


def test_high_pairs_are_the_entries_at_or_above_the_quantile():
    s = np.zeros((4, 4))
    for (i, j), v in {(0, 1): 1, (0, 2): 5, (0, 3): 2, (1, 2): 4, (1, 3): 3, (2, 3): 6}.items():
        s[i, j] = s[j, i] = v
    assert cm.upper_pairs(4)[0].tolist() == [0, 0, 0, 1, 1, 2]
    # values in pair order: 1 5 2 4 3 6; the 0.5-quantile is 3.5
    values = cm.pair_values(s)
    assert cm.quantile_mask(values, 0.5).tolist() == [False, True, False, True, False, True]
    assert cm.quantile_mask(values, 0.99).tolist() == [False, False, False, False, False, True]
    assert cm.quantile_mask(values, 0.0).all()
    # relative rule: S ≥ t · max S (max 6)
    assert cm.relative_mask(values, 0.5).tolist() == [False, True, False, True, True, True]


def test_ties_are_all_high_and_identical_tokens_tie():
    o = np.ones((5, 2))  # five identical token outputs: every pair has S = 2
    assert cm.quantile_mask(cm.pair_values(cm.context_similarity(o)), 0.99).all()


def test_expected_distinct_is_the_random_positions_null():
    """Σ_v [1 − (1 − c_v / T)^k], against enumerating every way k heads can pick positions."""
    import itertools

    values = ["a", "a", "b", "c"]  # T = 4 positions, value "a" at two of them
    for k in (1, 2, 3):
        picks = list(itertools.product(range(4), repeat=k))
        exact = np.mean([len({values[p] for p in pick}) for pick in picks])
        assert cm.expected_distinct([2, 1, 1], k) == pytest.approx(exact)
        assert cm.expected_distinct(np.ones(4), k) == pytest.approx(np.mean([len(set(p)) for p in picks]))
    assert cm.expected_distinct([2, 1, 1], 2) == pytest.approx(1.625)  # 0.75 + 2 × 0.4375 by hand
    assert cm.expected_distinct(np.ones(128), 12) == pytest.approx(128 * (1 - (127 / 128) ** 12))  # ≈ 11.50
    assert 11.49 < cm.expected_distinct(np.ones(128), 12) < 11.51


def test_attention_received_is_column_sums_scaled_to_max_one():
    a = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.5, 0.25, 0.25]])
    np.testing.assert_allclose(cm.attention_received(a), [1.0, 0.375, 0.125])


def test_quantile_threshold_is_the_type_7_quantile_numpy_computes():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal((6, 200)), rng.integers(0, 4, (6, 200)).astype(float)])  # ties too
    for q in (0.0, 0.3, 0.5, 0.9, 0.99, 1.0):
        expected = np.quantile(values, q, axis=-1, keepdims=True)
        np.testing.assert_allclose(cm.quantile_threshold(values, q), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(cm.quantile_mask(values, q), values >= expected)
    float32 = values.astype(np.float32)  # a model's S: the order statistics of the float32 values
    np.testing.assert_allclose(cm.quantile_threshold(float32, 0.99), np.quantile(float32.astype(float), 0.99, axis=-1,
                                                                                    keepdims=True), rtol=1e-12)


def test_boundary_hits_count_sentence_ends_among_the_k_top_scored_tokens():
    scores = np.array([[9.0, 0.1, 0.8, 0.2, 0.7, 5.0], [9.0, 0.9, 0.1, 0.8, 0.2, 5.0]])
    eligible = np.array([[False, True, True, True, True, False]] * 2)  # [CLS] w w w w [SEP]
    boundaries = np.array([[False, False, True, False, True, False]] * 2)  # k = 2 sentence ends
    # text 0: top 2 word tokens are 2 and 4, both ends; text 1: 1 and 3, neither
    assert cm.boundary_hits(scores, boundaries, eligible).tolist() == [2, 0]
    ties = np.zeros((1, 6))  # all tied: the lowest positions first (1 and 2: one end)
    assert cm.boundary_hits(ties, boundaries[:1], eligible[:1]).tolist() == [1]
    assert cm.boundary_hits(scores[:1], np.zeros((1, 6), bool), eligible[:1]).tolist() == [0]  # no end: k = 0


def test_random_focus_draws_follow_the_exact_distribution():
    """k = 2 heads on T = 4 positions holding ids a a b c: P(one distinct position) = 1/4;
    distinct ids: P(1) = P(both on a) + P(both on b) + P(both on c) = 1/4 + 1/16 + 1/16 = 3/8.
    With 40,000 draws the frequencies lie within 5 standard errors (≤ 0.012)."""
    rng = np.random.default_rng(0)
    positions, ids = cm.random_focus_counts(np.array([7, 7, 8, 9]), 2, (40_000,), rng)
    assert set(positions) <= {1, 2} and set(ids) <= {1, 2}
    assert np.mean(positions == 1) == pytest.approx(0.25, abs=0.012)
    assert np.mean(ids == 1) == pytest.approx(0.375, abs=0.012)
    assert positions.mean() == pytest.approx(cm.expected_distinct(np.ones(4), 2), abs=0.012)
    assert ids.mean() == pytest.approx(cm.expected_distinct([2, 1, 1], 2), abs=0.012)
    assert (ids <= positions).all() and cm.distinct_counts(np.array([[3, 1, 3], [2, 2, 2]])).tolist() == [2, 1]


# --------------------------------------------------------------------------- pair statistics

def _hand_batch():
    """One text, T = 5: [CLS] a b a [SEP], tokens 1..3 in sentence 0; one block, one head."""
    batch = cs.TextBatch(input_ids=np.array([[101, 7, 8, 7, 102]]),
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
    settings = cs.Settings(q=0.9, common_min_count=2, sensitivity_thresholds=[0.1, 0.5])
    stats = cs.batch_statistics([head_out], [pattern], batch, settings)
    # S pairs (i<j): only (1,3) = 9 and (0,1)=(0,3)=0.3 are non-zero; 0.9-quantile of 10 values
    # [0.3, 0, 0.3, 0, 0, 9, 0, 0, 0, 0] is 1.17, so the one high pair is (1, 3)
    assert stats.head_pairs.tolist() == [[1]]
    assert stats.head_distance.tolist() == [[2]]
    assert stats.distance_counts.tolist() == [[0, 0, 1, 0, 0]]
    assert stats.head_same_sentence.tolist() == [[1]] and stats.head_repeats.tolist() == [[1]]
    assert stats.focus_pieces == {batch.input_ids[0, 1]: "a"}  # positions 1 and 3 tie: the first
    assert stats.text_rows()["head_focus_id"].tolist() == [[[batch.input_ids[0, 1]]]]
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
    # the per-text rows of the one text: the same counts, one row per text
    rows = stats.text_rows()
    assert rows["high_pairs"].tolist() == [[1]] and rows["pair_distance"].tolist() == [[2]]
    assert rows["same_sentence"].tolist() == [[1]] and rows["distinct_focus"].tolist() == [[1]]
    assert rows["attended"].tolist() == [[1]] and rows["attended_separators"].tolist() == [[1]]
    assert rows["sensitivity_pairs"].tolist() == [[[1], [1]]] and rows["sensitivity_attended"].tolist() == [[[1], [1]]]
    assert rows["focus_null"][0] == pytest.approx(1.0)  # one head picks one position


def test_the_hand_made_text_keeps_per_head_rows_and_the_scaled_matrix():
    batch, head_out, pattern = _hand_batch()
    settings = cs.Settings(q=0.9, common_min_count=2, sensitivity_thresholds=[0.1, 0.5])
    stats = cs.batch_statistics([head_out], [pattern], batch, settings)
    rows = stats.text_rows()
    assert rows["head_high_pairs"].tolist() == [[[1]]] and rows["head_pair_distance"].tolist() == [[[2]]]
    assert rows["head_repeats"].tolist() == [[[1]]] and rows["head_common_focus"].tolist() == [[[1]]]
    assert rows["head_attended"].tolist() == [[[1]]] and rows["head_attended_separators"].tolist() == [[[1]]]
    assert stats.head_distance_counts.tolist() == [[[0, 0, 1, 0, 0]]]
    # attention both ways: the four pairs with [SEP] get 1, the rest 0; all four are at the 0.9-quantile,
    # and none is the high pair (1, 3) of S
    assert rows["head_attention_high"].tolist() == [[[4]]] and rows["head_attention_overlap"].tolist() == [[[0]]]
    assert (rows["separators"].tolist(), rows["same_sentence_pairs"].tolist()) == ([1], [3])
    assert (rows["boundaries"].tolist(), rows["word_tokens"].tolist()) == ([0], [3])  # no sentence-final stop
    # S / max |S| summed: the pair (1, 3) is 9 / 9, the pairs (0, 1) and (0, 3) 0.3 / 9
    i, j = cm.upper_pairs(5)
    expected = {(1, 3): 1.0, (0, 1): 0.3 / 9, (0, 3): 0.3 / 9}
    np.testing.assert_allclose(stats.summed_similarity[0], [expected.get((a, b), 0.0) for a, b in zip(i, j)],
                               rtol=1e-6)
    summed = cs.summed_blocks(stats, 5)
    assert summed["blocks"] == [1] and summed["matrices"].shape == (1, 5, 5)
    assert summed["matrices"][0, 1, 3] == summed["matrices"][0, 3, 1] == pytest.approx(1.0)
    assert summed["matrices"][0, 2, 2] == 0.0


def test_segmentation_scores_the_most_attended_word_tokens_against_sentence_ends():
    """[CLS] a . b . [SEP]: sentence ends at 2 and 4 (k = 2, W = 4). Every query attends 0.6 to
    position 2, 0.3 to 1 and 0.1 to 4: the top two word tokens are 2 and 1, one hit; a random
    ranking hits k · k / W = 1 on average."""
    batch = cs.TextBatch(input_ids=np.array([[101, 7, 1012, 8, 1012, 102]]),
                         sentence_ids=np.array([[-1, 0, 0, 1, 1, -1]]),
                         separators=np.array([[False, False, True, False, True, True]]),
                         tokens=[["[CLS]", "a", ".", "b", ".", "[SEP]"]])
    pattern = np.zeros((1, 1, 6, 6))
    pattern[..., 2], pattern[..., 1], pattern[..., 4] = 0.6, 0.3, 0.1
    head_out = np.random.default_rng(0).normal(size=(1, 6, 1, 3))
    settings = cs.Settings(q=0.9)
    stats = cs.batch_statistics([head_out], [pattern], batch, settings)
    assert stats.text_rows()["segment_hits"].tolist() == [[1]]
    m = cs.metrics(stats, settings)
    assert m["segmentation"]["r_precision"].tolist() == [0.5] and m["segmentation"]["chance"] == pytest.approx(0.5)
    assert m["segmentation"]["boundaries_per_text"] == 2.0
    assert m["per_unit"]["segmentation.chance_hits"].tolist() == [[1.0]]


def test_segmentation_without_a_sentence_end_is_not_measured_and_says_why():
    """[CLS] a b [SEP]: a window that ends no sentence among its word tokens has nothing for the
    most-attended tokens to find (a short text_length): no R-precision, and the reason its claim reads."""
    batch = cs.TextBatch(input_ids=np.array([[101, 7, 8, 102]]), sentence_ids=np.array([[-1, 0, 0, -1]]),
                         separators=np.array([[False, False, False, True]]), tokens=[["[CLS]", "a", "b", "[SEP]"]])
    pattern = np.full((1, 1, 4, 4), 0.25)
    head_out = np.random.default_rng(0).normal(size=(1, 4, 1, 3))
    settings = cs.Settings(q=0.9)
    m = cs.metrics(cs.batch_statistics([head_out], [pattern], batch, settings), settings)
    assert m["segmentation"]["r_precision"] is None and m["segmentation"]["chance"] is None
    assert m["not_measured"] == {"segmentation.r_precision": cs.NO_ENDS}


def test_two_heads_on_two_occurrences_of_one_token():
    """Two heads whose focus positions differ but hold the same token: 2 distinct positions,
    1 distinct token id; the nulls by hand for T = 5 and H = 2."""
    batch, head_out, pattern = _hand_batch()
    second = np.zeros((1, 5, 1, 3))
    second[0, 3, 0, 0] = second[0, 4, 0, 0] = 2.0  # tokens 3 and 4 equal: focus 3 (lowest of the tie)
    stats = cs.batch_statistics([np.concatenate([head_out, second], axis=2)], [np.repeat(pattern, 2, axis=1)],
                                batch, cs.Settings(q=0.9, common_min_count=2))
    rows = stats.text_rows()
    assert rows["distinct_focus"].tolist() == [[2]] and rows["distinct_focus_ids"].tolist() == [[1]]  # "a" twice
    assert rows["focus_null"][0] == pytest.approx(5 * (1 - 0.8 ** 2))  # 1.8
    assert rows["focus_ids_null"][0] == pytest.approx(3 * (1 - 0.8 ** 2) + (1 - 0.6 ** 2))  # ids 101 7 8 7 102: 1.72
    m = cs.metrics(stats, cs.Settings(q=0.9, common_min_count=2))
    assert m["unique_focus_fraction"].tolist() == [1.0] and m["unique_focus_ids_fraction"].tolist() == [0.5]
    assert m["unique_focus_fraction_null"] == pytest.approx(0.9)
    assert m["unique_focus_ids_fraction_null"] == pytest.approx(0.86)


def test_metrics_divide_pooled_counts():
    batch, head_out, pattern = _hand_batch()
    settings = cs.Settings(q=0.9, common_min_count=2)
    stats = cs.batch_statistics([head_out], [pattern], batch, settings)
    m = cs.metrics(stats, settings)
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
    json.dumps(cs.metrics(stats, settings), default=lambda x: x.tolist())  # all serialisable


def test_head_classes_follow_the_stated_rule():
    stats = cs.ContextStats.empty(1, 3, 8, 1)
    stats.texts = 10
    stats.head_pairs[:] = 100
    stats.head_repeats[0] = [30, 10, 10]
    stats.head_common_focus[0] = [0, 6, 4]
    stats.head_attended[:] = 1
    settings = cs.Settings(repeat_share_threshold=0.25, common_focus_threshold=0.5)
    table = cs.head_table(stats, settings)
    assert table["class"].tolist() == ["repetition", "common-token", "other"]
    assert table[["layer", "head"]].values.tolist() == [[1, 1], [1, 2], [1, 3]]


# --------------------------------------------------------------------------- streaming

def _random_batch(rng, n_texts, n_tokens=10, n_heads=3, n_layers=2, width=4):
    ids = rng.integers(5, 9, size=(n_texts, n_tokens))
    ids[:, 0], ids[:, -1] = 101, 102
    sentence_ids = np.repeat(np.arange(n_tokens) * 3 // n_tokens, 1)[None].repeat(n_texts, 0)
    sentence_ids[:, [0, -1]] = -1
    separators = np.zeros((n_texts, n_tokens), bool)
    separators[:, [4, -1]] = True
    batch = cs.TextBatch(ids, sentence_ids, separators, [[f"t{t}" for t in row] for row in ids])
    outs = [rng.normal(size=(n_texts, n_tokens, n_heads, width)) for _ in range(n_layers)]
    maps = [rng.dirichlet(np.ones(n_tokens), size=(n_texts, n_heads, n_tokens)) for _ in range(n_layers)]
    return batch, outs, maps


def _part(batch, outs, maps, rows, settings):
    sub = cs.TextBatch(batch.input_ids[rows], batch.sentence_ids[rows], batch.separators[rows],
                       [batch.tokens[r] for r in rows], None if batch.topics is None else batch.topics[rows])
    return cs.batch_statistics([o[rows] for o in outs], [m[rows] for m in maps], sub, settings, first=int(rows[0]))


def _assert_same_stats(a, b):
    for f in fields(cs.ContextStats):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "focus_pieces":
            assert x == y, f.name
        elif f.name == "per_text":  # batched differently, the same rows in the same text order
            rows_a, rows_b = a.text_rows(), b.text_rows()
            assert set(rows_a) == set(rows_b) == set(cs.TEXT_ROWS)
            for name in rows_a:
                np.testing.assert_array_equal(rows_a[name], rows_b[name], err_msg=name)
        elif np.asarray(x).dtype.kind == "f":  # sums of floats, added in another order
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=f.name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=f.name)


def test_streaming_aggregates_equal_the_all_at_once_result():
    rng = np.random.default_rng(0)
    batch, outs, maps = _random_batch(rng, n_texts=7)
    settings = cs.Settings(q=0.8, common_min_count=2)
    whole = _part(batch, outs, maps, np.arange(7), settings)
    for splits in ([1, 3, 7], [2, 4, 6, 7], list(range(1, 8))):
        starts = [0] + splits[:-1]
        parts = [_part(batch, outs, maps, np.arange(a, b), settings) for a, b in zip(starts, splits)]
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        _assert_same_stats(total, whole)
    assert whole.texts == 7 and whole.head_pairs.sum() > 0
    m = cs.metrics(whole, settings)
    assert m["unique_focus_tokens"]["histogram"].sum(axis=1).tolist() == [7, 7]


def test_adding_statistics_leaves_both_operands_unchanged():
    rng = np.random.default_rng(1)
    batch, outs, maps = _random_batch(rng, n_texts=2)
    settings = cs.Settings()
    a, b = _part(batch, outs, maps, [0], settings), _part(batch, outs, maps, [1], settings)
    before = a.head_pairs.copy(), dict(a.focus_pieces), a.text_rows()["high_pairs"].copy()
    total = a + b
    np.testing.assert_array_equal(a.head_pairs, before[0])
    assert a.focus_pieces == before[1]
    np.testing.assert_array_equal(a.text_rows()["high_pairs"], before[2])
    assert total.text_rows()["high_pairs"].shape == (2, 2)
    np.testing.assert_array_equal(total.text_rows()["high_pairs"][1], b.text_rows()["high_pairs"][0])
    total += a  # in place: totals grow, rows are appended, the added operand stays as it was
    assert total.texts == 3 and total.text_rows()["high_pairs"].shape == (3, 2) and a.texts == 1
    assert total.focus_pieces == {**before[1], **b.focus_pieces}
    with pytest.raises(ValueError, match="cannot add"):
        a + cs.ContextStats.empty(1, 3, 10, 5)


def test_text_rows_fill_blocks_in_text_order_without_copying():
    rows = cs.TextRows(block=64)
    for start in range(0, 150, 10):  # 15 batches of 10 texts: the 7th crosses into block 2
        rows.extend({"x": np.arange(start, start + 10), "y": np.ones((10, 2, 3), np.int32)})
    assert rows.count == 150 and len(rows.blocks) == 3  # 64 + 64 + 22 of 64
    first = rows.blocks[0]["x"]
    rows.extend({"x": np.arange(150, 200), "y": np.ones((50, 2, 3), np.int32)})  # crosses into block 4
    assert rows.blocks[0]["x"] is first and len(rows.blocks) == 4  # full blocks stay where they are
    np.testing.assert_array_equal(rows.arrays()["x"], np.arange(200))
    assert rows.arrays()["y"].shape == (200, 2, 3) and rows.arrays()["y"].dtype == np.int32
    assert rows.arrays()["x"].dtype == np.arange(1).dtype  # given back in the type it came in
    assert rows.bytes_per_text() == 2 + 6 * 1  # kept narrow: the last block's 192 … 199 in int16, the ones in int8
    assert rows.blocks[0]["x"].dtype == np.int8 and rows.blocks[-1]["x"].dtype == np.int16
    more = cs.TextRows()
    more.extend(rows)
    more.extend({"x": np.array([], int), "y": np.ones((0, 2, 3), np.int32)})  # an empty batch changes nothing
    np.testing.assert_array_equal(more.arrays()["x"], np.arange(200))
    assert cs.TextRows().arrays() == {} and cs.TextRows().bytes_per_text() == 0


def test_nbytes_counts_the_totals_rows_and_counters():
    import sys

    stats = cs.ContextStats.empty(2, 3, 10, 5, n_draws=7)
    arrays = stats.nbytes - sys.getsizeof({})
    # 8-byte numbers: [L, H, T], 7 × [L, H], [L, H+1], [L, 4], [L, P], 2 × [D, L], 5 × [K, L]
    assert arrays == 8 * (2 * 3 * 10 + 7 * 2 * 3 + 2 * 4 + 2 * 4 + 2 * 45 + 2 * 7 * 2 + 5 * 5 * 2)
    stats.per_text.extend({"x": np.zeros(7), "y": np.zeros((7, 2), np.int32)})
    stats.focus_pieces.update({1996: "the"})
    grown = stats.nbytes - arrays - sys.getsizeof(stats.focus_pieces)
    assert grown == 7 * (8 + 2) + sys.getsizeof("the") + sys.getsizeof(1996)  # the zeros kept in int8


# --------------------------------------------------------------------------- the fold over captured batches

def _windows(batch):
    """Window objects for the rows of a TextBatch (text: the pieces joined)."""
    return [Window(text=" ".join(tokens), input_ids=ids, tokens=tokens, sentence_ids=sid, separators=sep,
                   whole_sentences=1)
            for ids, tokens, sid, sep in zip(batch.input_ids, batch.tokens, batch.sentence_ids, batch.separators)]


def _captured(batch, outs, maps, rows):
    return Captured(windows=[_windows(batch)[r] for r in rows], head_out=[o[rows] for o in outs],
                    pattern=[m[rows] for m in maps])


def test_measure_folds_captured_batches_into_the_all_at_once_totals():
    rng = np.random.default_rng(2)
    batch, outs, maps = _random_batch(rng, n_texts=5)
    settings = cs.Settings(q=0.8, common_min_count=2)
    run = cs.measure([_captured(batch, outs, maps, [0, 1, 2]), _captured(batch, outs, maps, [3, 4])], settings)
    _assert_same_stats(run.stats, _part(batch, outs, maps, np.arange(5), settings))
    assert run.texts.count == 5 and run.texts.first == [w.text for w in _windows(batch)]
    assert run.example.window.text == _windows(batch)[0].text
    assert run.example.similarity.shape == (2, 3, 10, 10) and run.example.similarity.dtype == np.float32
    np.testing.assert_allclose(run.example.similarity[1, 2], cm.context_similarity(outs[1][0, :, 2]), rtol=1e-6)
    np.testing.assert_allclose(run.example.received[0], cm.attention_received(maps[0][0]), rtol=1e-6)
    with pytest.raises(ParameterError, match="'n_texts' expects at least 1 text"):
        cs.measure([], settings)


def test_at_quantiles_measure_the_same_batches_at_each_quantile():
    rng = np.random.default_rng(3)
    batch, outs, maps = _random_batch(rng, n_texts=4)
    batches = [_captured(batch, outs, maps, [0, 1]), _captured(batch, outs, maps, [2, 3])]
    settings = cs.Settings(q=0.9, common_min_count=2)
    at_q = cx.at_quantiles(batches, settings, (0.9, 0.5))
    assert list(at_q) == [0.9, 0.5]
    for q, m in at_q.items():
        chosen = cs.Settings(q=q, common_min_count=2, sensitivity_thresholds=(settings.attention_threshold,))
        expected = cs.metrics(_part(batch, outs, maps, np.arange(4), chosen), chosen)
        assert set(m) == {"mean_pair_distance", "mean_pair_distance_chance", "same_sentence_fraction",
                          "same_sentence_chance", "same_sentence_lift"}
        for key in m:
            np.testing.assert_array_equal(m[key], expected[key], err_msg=key)


# --------------------------------------------------------------------------- the metrics dict

METRIC_KEYS = {"layers", "n_texts", "mean_pair_distance", "mean_pair_distance_chance", "same_sentence_fraction",
               "same_sentence_chance", "same_sentence_lift", "distance_histogram", "head_distance_histogram",
               "summed_similarity", "unique_focus_tokens", "unique_focus_fraction", "unique_focus_fraction_null",
               "unique_focus_fraction_null_draws", "unique_focus_ids_fraction", "unique_focus_ids_fraction_null",
               "unique_focus_ids_fraction_null_draws", "separator_attention", "separator_share", "segmentation",
               "attended_kinds", "repeat_chance", "heads", "head_classes", "layers_with_both_kinds",
               "layers_with_both_kinds_draws", "head_stability", "sensitivity", "attention_overlap", "cosine_overlap",
               "per_unit"}
SENSITIVITY_KEYS = {"thresholds", "separator_attention", "mean_pair_distance", "same_sentence_fraction",
                    "high_pairs_per_matrix", "distance_last_over_first", "max_distance_last_over_first",
                    "max_distance_last_over_first_draws", "worst_threshold", "distance_at_worst"}
RATIOS = {"mean_pair_distance": ("mean_pair_distance.distance", "high_pairs"),
          "same_sentence_fraction": ("same_sentence_fraction.same", "high_pairs"),
          "separator_attention": ("separator_attention.separators", "separator_attention.attended"),
          "segmentation.r_precision": ("segmentation.hits", "segmentation.boundaries"),
          "separator_share": ("separator_share.separators", "separator_share.tokens"),
          "same_sentence_chance": ("same_sentence_chance.same", "same_sentence_chance.pairs"),
          "segmentation.chance": ("segmentation.chance_hits", "segmentation.boundaries")}
"""Metrics (and nulls) that are a ratio of two per-text arrays: metric → (numerator, denominator)."""


def test_metrics_schema_and_the_sensitivity_ratios():
    rng = np.random.default_rng(4)
    batch, outs, maps = _random_batch(rng, n_texts=6, n_layers=3)
    settings = cs.Settings(q=0.8, common_min_count=2, sensitivity_thresholds=(0.1, 0.5))
    m = cs.metrics(_part(batch, outs, maps, np.arange(6), settings), settings)
    assert set(m) == METRIC_KEYS and set(m["sensitivity"]) == SENSITIVITY_KEYS
    assert set(m["attended_kinds"]) == set(cs.TOKEN_KINDS) and set(m["head_classes"]) == set(cs.HEAD_CLASSES)
    assert np.shape(m["heads"]["class"]) == (3, 3) and np.shape(m["sensitivity"]["separator_attention"]) == (2, 3)
    rows = m["sensitivity"]["mean_pair_distance"]
    assert m["sensitivity"]["distance_last_over_first"] == pytest.approx([r[-1] / r[0] for r in rows])
    assert m["sensitivity"]["max_distance_last_over_first"] == max(m["sensitivity"]["distance_last_over_first"])
    worst = int(np.argmax(m["sensitivity"]["distance_last_over_first"]))
    assert m["sensitivity"]["worst_threshold"] == (0.1, 0.5)[worst]
    assert m["sensitivity"]["distance_at_worst"] == rows[worst]


def test_per_text_values_average_to_the_metrics():
    """The per-unit contract of book.intervals: each ratio metric is Σ numerator / Σ denominator
    over the texts (the ratio of their means), the focus fractions the mean of theirs."""
    from embedding_geometry.book import claims

    rng = np.random.default_rng(5)
    batch, outs, maps = _random_batch(rng, n_texts=9, n_layers=3)
    settings = cs.Settings(q=0.8, common_min_count=2, sensitivity_thresholds=(0.1, 0.3, 0.5))
    m = cs.metrics(_part(batch, outs, maps, np.arange(9), settings), settings)
    per_unit = m["per_unit"]
    assert all(np.shape(v)[0] == 9 for v in per_unit.values())
    for metric, (numerator, denominator) in RATIOS.items():
        ratio = per_unit[numerator].mean(axis=0) / per_unit[denominator].mean(axis=0)
        np.testing.assert_allclose(ratio, np.broadcast_to(claims.lookup(m, metric), ratio.shape), rtol=1e-12,
                                   err_msg=metric)
    for metric in ("unique_focus_fraction", "unique_focus_ids_fraction"):
        np.testing.assert_allclose(per_unit[metric].mean(axis=0), m[metric], rtol=1e-12, err_msg=metric)
    assert (per_unit["unique_focus_ids_fraction"] <= per_unit["unique_focus_fraction"]).all()  # ids repeat
    assert m["unique_focus_fraction_null"] == pytest.approx(cm.expected_distinct(np.ones(10), 3) / 3)
    assert m["unique_focus_ids_fraction_null"] < m["unique_focus_fraction_null"]  # ids 5…8 repeat in 10 tokens


def test_the_null_draws_centre_on_their_expectation_and_follow_the_seed():
    rng = np.random.default_rng(7)
    batch, outs, maps = _random_batch(rng, n_texts=6, n_layers=2)
    settings = cs.Settings(q=0.8, common_min_count=2)
    m = cs.metrics(_part(batch, outs, maps, np.arange(6), settings), settings)
    draws = m["unique_focus_fraction_null_draws"]
    assert draws.shape == (cs.NULL_DRAWS,) and (0 < draws).all() and (draws <= 1).all()
    # each draw averages 6 texts × 2 blocks of #distinct / 3 among 3 picks of 10 positions
    se = np.sqrt(np.var([len(set(rng.integers(0, 10, 3))) / 3 for _ in range(20_000)]) / 12 / cs.NULL_DRAWS)
    assert abs(draws.mean() - m["unique_focus_fraction_null"]) < 5 * se
    assert m["unique_focus_ids_fraction_null_draws"].mean() < draws.mean()  # ids repeat
    again = cs.metrics(_part(batch, outs, maps, np.arange(6), settings), settings)
    np.testing.assert_array_equal(again["unique_focus_fraction_null_draws"], draws)
    other = cs.Settings(q=0.8, common_min_count=2, seed=1)
    assert not np.array_equal(cs.metrics(_part(batch, outs, maps, np.arange(6), other), other)[
        "unique_focus_fraction_null_draws"], draws)


def test_head_rows_rebuild_the_totals_and_the_head_table():
    rng = np.random.default_rng(8)
    batch, outs, maps = _random_batch(rng, n_texts=5, n_layers=2)
    settings = cs.Settings(q=0.8, common_min_count=2)
    stats = _part(batch, outs, maps, np.arange(5), settings)
    rows = stats.text_rows()
    for row, total in (("head_high_pairs", "head_pairs"), ("head_pair_distance", "head_distance"),
                       ("head_repeats", "head_repeats"), ("head_common_focus", "head_common_focus"),
                       ("head_attended", "head_attended"), ("head_attended_separators", "head_attended_separators")):
        np.testing.assert_array_equal(rows[row].sum(axis=0), getattr(stats, total), err_msg=row)
    np.testing.assert_array_equal(stats.head_distance_counts.sum(axis=-1), stats.head_pairs)
    np.testing.assert_array_equal(stats.distance_counts, stats.head_distance_counts.sum(axis=1))
    m = cs.metrics(stats, settings)
    assert np.shape(m["head_distance_histogram"]) == (2, 3, 9)
    assert cs.class_counts(stats, settings) == cs.class_totals(m)


def test_both_kinds_are_resampled_over_texts_and_the_halves_agree_on_copied_texts():
    """Texts 0-3 copied as texts 4-7: the two halves are the same texts, so the rule sorts every
    head the same way on both; the resampled count of blocks with both kinds brackets the run's."""
    rng = np.random.default_rng(9)
    batch, outs, maps = _random_batch(rng, n_texts=4, n_layers=3)
    copy = np.concatenate([np.arange(4), np.arange(4)])
    batch = cs.TextBatch(batch.input_ids[copy], batch.sentence_ids[copy], batch.separators[copy],
                         [batch.tokens[i] for i in copy], topics=np.repeat([1, 0], 4))
    outs, maps = [o[copy] for o in outs], [m[copy] for m in maps]
    settings = cs.Settings(q=0.8, common_min_count=2, repeat_share_threshold=0.1, common_focus_threshold=0.3)
    m = cs.metrics(_part(batch, outs, maps, np.arange(8), settings), settings)
    stability = m["head_stability"]
    assert stability["texts"] == [4, 4] and stability["agreement"] == 1.0
    topics = stability["focus"]["topics"]  # the two topics hold the same texts: the same focus tokens
    assert topics["names"] == list(corpora.topics()[:2]) and topics["texts"] == [4, 4] and topics["mean"] == 1.0
    assert stability["focus"]["subsets"]["texts"] == [2, 2, 2, 2]
    assert stability["classes"][0] == stability["classes"][1] == m["heads"]["class"]
    assert stability["layers_with_both_kinds"] == [m["layers_with_both_kinds"]] * 2
    assert all(r is None or r == pytest.approx(1.0) for r in stability["rank_correlation"].values())
    draws = m["layers_with_both_kinds_draws"]
    assert len(draws) == cs.RESAMPLES and set(np.unique(draws)) <= set(range(4))
    assert draws.min() <= m["layers_with_both_kinds"] <= draws.max()


def test_a_second_models_record_leaves_out_the_per_text_values_and_draws():
    rng = np.random.default_rng(10)
    batch, outs, maps = _random_batch(rng, n_texts=3)
    settings = cs.Settings(q=0.8, common_min_count=2)
    m = cs.metrics(_part(batch, outs, maps, np.arange(3), settings), settings)
    kept = cs.recorded(m)
    assert "per_unit" not in kept and not [k for k in kept if k.endswith("_draws")]
    assert "max_distance_last_over_first_draws" not in kept["sensitivity"]
    assert kept["sensitivity"]["max_distance_last_over_first"] == m["sensitivity"]["max_distance_last_over_first"]
    assert kept["separator_attention"] is m["separator_attention"] and "sensitivity" in kept


def test_separator_attention_at_another_threshold_comes_from_the_sensitivity_counts():
    rng = np.random.default_rng(6)
    batch, outs, maps = _random_batch(rng, n_texts=5)
    settings = cs.Settings(q=0.8, common_min_count=2, sensitivity_thresholds=(0.1, 0.3))
    stats = _part(batch, outs, maps, np.arange(5), settings)
    m = cs.metrics(stats, settings)
    low = cx.at_attention_threshold(m, stats, 0.1)
    np.testing.assert_array_equal(low["separator_attention"], m["sensitivity"]["separator_attention"][0])
    units = low["per_unit"]
    np.testing.assert_allclose(units["separator_attention.separators"].sum(0)
                               / units["separator_attention.attended"].sum(0),
                               low["separator_attention"])
    assert (units["separator_attention.attended"] >= m["per_unit"]["separator_attention.attended"]).all()  # a lower bar
    at_tau = cx.at_attention_threshold(m, stats, 0.3)  # τ itself: the chapter's own numbers
    np.testing.assert_array_equal(at_tau["separator_attention"], m["separator_attention"])
    assert cx.at_attention_threshold(m, stats, 0.2)["separator_attention"] is None
    assert m["separator_attention"] is not None  # the run's metrics are untouched


def test_last_over_first_by_hand():
    assert cs.last_over_first([[4.0, 3.0, 2.0], [5.0, 1.0, 6.0]]) == [0.5, 1.2]
    assert cs.last_over_first([[4.0, 2.0], [None, 1.0]]) is None  # a layer without pairs
    assert cs.last_over_first([[0.0, 2.0]]) is None


def test_class_totals():
    m = {"head_classes": {"repetition": [1, 2], "common-token": [0, 3], "other": [3, 0]}, "layers_with_both_kinds": 1}
    assert cs.class_totals(m) == {"heads": {"repetition": 3, "common-token": 3, "other": 3},
                                  "layers_with_both_kinds": 1}


def _claim_verdict(claim_id: str, metrics: dict, family: int | None = None):
    from embedding_geometry.book import claims

    (claim,) = [c for c in claims.load(SLUG).claims if c.id == claim_id]
    ledger = claims.Ledger(chapter=SLUG, claims=[claim])
    return claims.evaluate(ledger, metrics, "m", family=family or claims.family_size())[0]


def _texts(first, last, n=40, spread=0.02, seed=0):
    """Per-text [n, 2] values around (first, last), with a little noise."""
    rng = np.random.default_rng(seed)
    return np.column_stack([first + spread * rng.standard_normal(n), last + spread * rng.standard_normal(n)])


def test_the_every_threshold_claim_judges_the_largest_ratio_found_again_in_each_resample():
    """The draws are the study's: below 1 throughout holds; around 1.02 does not; no ratio (a
    block without pairs) is not measured."""
    rng = np.random.default_rng(0)
    for centre, expected in ((0.75, "holds"), (1.02, "does not hold")):
        draws = centre + 0.005 * rng.standard_normal(20_000)
        found = _claim_verdict("long-to-short-range-every-threshold", {
            "n_texts": 40, "sensitivity": {"max_distance_last_over_first": centre,
                                           "max_distance_last_over_first_draws": draws}})
        assert found.verdict == expected and found.statistic["n_units"] == 40
        assert found.statistic["interval"][0] < centre < found.statistic["interval"][1]
    missing = _claim_verdict("long-to-short-range-every-threshold", {
        "n_texts": 40,
        "sensitivity": {"max_distance_last_over_first": None, "max_distance_last_over_first_draws": None}})
    assert missing.status == "not measured" and missing.verdict == "not tested"


def test_the_worst_ratio_is_selected_again_in_each_resample():
    """Two thresholds whose last / first ratios are 0.8 and 0.9 on average: every resample's
    statistic is the larger of its two ratios, so the draws centre on 0.9 and none is below the
    resampled ratio at either threshold (the draws are of the maximum)."""
    rng = np.random.default_rng(1)
    n = 30
    pairs = np.full((n, 2, 2), 100)  # [n, K, L]
    distance = np.stack([np.column_stack([1000 + rng.integers(-50, 50, n), 800 + rng.integers(-50, 50, n)]),
                         np.column_stack([1000 + rng.integers(-50, 50, n), 900 + rng.integers(-50, 50, n)])], axis=1)
    stats = cs.ContextStats.empty(2, 1, 4, 2)
    stats.texts = n
    stats.per_text.extend({"sensitivity_distance": distance, "sensitivity_pairs": pairs})
    draws = cs._worst_ratio_draws(stats, seed=0)
    assert len(draws) == cs.RESAMPLES and np.median(draws) == pytest.approx(0.9, abs=0.01)
    lower = distance[:, 0, 1].sum() / distance[:, 0, 0].sum()
    assert draws.min() > lower  # the 0.8 threshold is never the worst
    np.testing.assert_array_equal(draws, cs._worst_ratio_draws(stats, seed=0))  # seeded


def test_focus_claims_are_judged_against_the_drawn_random_positions_null():
    """0.89 of the heads distinct clears the bound (9 of 12, 0.75) but not the null's draws around
    0.958 (heads that picked at random): does not hold; 0.99 clears both — decided in a family of
    one, since 1,000 draws cannot give a p below 0.001, too large for the book's q / m."""
    rng = np.random.default_rng(2)
    null = 0.958 + 0.002 * rng.standard_normal(1000)
    for share, expected in ((0.89, "does not hold"), (0.99, "holds")):
        values = np.clip(_texts(share, share, spread=0.01), 0, 1)
        found = _claim_verdict("unique-focus-tokens", {"unique_focus_fraction": values.mean(0),
                                                        "unique_focus_fraction_null_draws": null,
                                                        "per_unit": {"unique_focus_fraction": values}}, family=1)
        assert found.verdict == expected and found.null["label"] == "random positions"
        assert found.null["distribution"] == "1000 draws" and found.null["value"] == pytest.approx(null.mean())
        assert found.statistic["interval"][0] <= found.measured <= found.statistic["interval"][1]


def test_same_sentence_separator_and_segmentation_claims_meet_their_nulls_text_by_text():
    pairs = np.full((40, 2), 100.0)
    same = _texts(20, 30, spread=1)  # 0.3 in the last block
    chance_same = _texts(10, 10, spread=1)  # a random pair: 0.1
    metrics = {"same_sentence_fraction": list(same.sum(0) / pairs.sum(0)),
               "per_unit": {"same_sentence_fraction.same": same, "high_pairs": pairs,
                            "same_sentence_chance.same": chance_same, "same_sentence_chance.pairs": pairs}}
    found = _claim_verdict("same-sentence-in-final-layers", metrics)
    assert found.verdict == "holds" and found.null["label"] == "chance"
    assert found.null["value"] == pytest.approx(chance_same[:, 1].mean() / 100)
    assert "unit by unit" in found.null["distribution"]
    at_chance = {**metrics, "per_unit": {**metrics["per_unit"], "same_sentence_chance.same": same}}
    assert _claim_verdict("same-sentence-in-final-layers", at_chance).null["difference"] == [0.0, 0.0]  # no spread
    separators = _texts(60, 8, spread=1)  # 0.08 of the attended tokens in the last block
    share = _texts(8, 8, spread=0.5)  # separators are 0.08 of all tokens
    found = _claim_verdict("separators-in-final-layers", {
        "separator_attention": list(separators.sum(0) / pairs.sum(0)),
        "per_unit": {"separator_attention.separators": separators, "separator_attention.attended": pairs,
                     "separator_share.separators": share, "separator_share.tokens": pairs}})
    assert found.verdict == "does not hold" and found.null["label"] == "uniform attention"
    boundaries, hits, chance = np.full((40, 2), 8.0), _texts(2, 6, spread=0.5), np.full((40, 2), 0.6)
    found = _claim_verdict("separator-segmentation", {
        "segmentation": {"r_precision": list(hits.sum(0) / boundaries.sum(0))},
        "per_unit": {"segmentation.hits": hits, "segmentation.boundaries": boundaries,
                     "segmentation.chance_hits": chance}})
    assert found.verdict == "holds" and found.measured == pytest.approx(hits[:, 1].mean() / 8)
    assert found.null["value"] == pytest.approx(0.075)


def test_heads_specialise_is_shown_not_tested_and_its_shape_reads_the_studys_resamples():
    """A count of blocks above 0 cannot fail and has no null: the packaged claim is shown, not
    tested, with why. Its shape test, were it tested, reads the study's own resamples over texts."""
    from dataclasses import replace

    from embedding_geometry.book import claims

    metrics = {"layers_with_both_kinds": 3, "n_texts": 40, "layers_with_both_kinds_draws": np.full(20_000, 3)}
    shown = _claim_verdict("heads-specialise", metrics)
    assert shown.verdict == "not tested" and not shown.counted and "cannot fail" in shown.reason
    (claim,) = [c for c in claims.load(SLUG).claims if c.id == "heads-specialise"]

    def judged(both, draws):
        ledger = claims.Ledger(chapter=SLUG, claims=[replace(claim, description=None, no_null="size")])
        return claims.evaluate(ledger, {**metrics, "layers_with_both_kinds": both,
                                        "layers_with_both_kinds_draws": draws}, "m", family=claims.family_size())[0]

    rng = np.random.default_rng(3)
    found = judged(3, rng.choice([2, 3, 4], size=20_000))
    assert found.verdict == "holds" and found.statistic["interval"] == [2.0, 4.0]
    assert judged(1, rng.choice([0, 1, 2], size=20_000)).verdict == "inconclusive"
    always = judged(2, np.full(20_000, 2))
    assert always.verdict == "holds" and always.p_holds == pytest.approx(1 / 20_001)


def test_the_ledger_marks_the_papers_findings_as_headlines_and_the_books_checks_as_hypotheses():
    from embedding_geometry.book import claims

    ledger = {c.id: c for c in claims.load(SLUG).claims}
    assert {i for i, c in ledger.items() if c.headline} == {
        "separators-in-final-layers", "heads-specialise", "long-to-short-range", "same-sentence-in-final-layers",
        "unique-focus-tokens"}
    assert {i for i, c in ledger.items() if c.kind == "hypothesis"} == {
        "long-to-short-range-every-threshold", "unique-focus-token-ids"}
    assert all(c.unit == "texts" for c in ledger.values())
    nulls = {i: c.null for i, c in ledger.items() if c.null}
    assert all("metric" not in null and "value" not in null for null in nulls.values())  # distributions or per text
    assert ledger["unique-focus-tokens"].test == ("above", {"bound": 0.75})  # 9 of 12 heads, as its statement says


def test_the_coverage_table_lists_the_seeds_items_with_a_status_and_a_reason():
    import yaml

    from embedding_geometry.book import coverage as coverage_grades

    coverage = yaml.safe_load(coverage_grades.path(SLUG).read_text())
    assert coverage["chapter"] == SLUG and len(coverage["items"]) >= 10
    for item in coverage["items"]:
        assert item["status"] in coverage_grades.STATUSES, item["item"]
        assert item["status"] == "reproduced" or item.get("why"), item["item"]
        assert item["where"], item["item"]
    named = " ".join(item["item"] for item in coverage["items"])
    assert all(f"Fig. {n}" in named or f"Figs. {n}" in named for n in ("7", "11", "12", "A1"))


# --------------------------------------------------------------------------- settings and layering

def test_settings_copy_the_validated_parameters():
    params = {"q": 0.95, "attention_threshold": 0.2, "sensitivity_thresholds": [0.1, 0.2],
              "common_min_count": 4, "repeat_share_threshold": 0.3, "common_focus_threshold": 0.6,
              "model": "ignored", "matrix_size": 64, "seed": 3}
    settings = cs.Settings.from_parameters(params)
    assert settings.sensitivity_thresholds == (0.1, 0.2) and settings.q == 0.95 and settings.seed == 3
    assert settings.to_dict() == {k: params[k] for k in settings.to_dict()}


def test_the_rule_table_checks_every_setting_and_names_the_parameter():
    table = rules.rules_for(SLUG)
    assert {f.name for f in fields(cs.Settings)} <= set(table)
    with pytest.raises(ParameterError, match="'attention_threshold' expects a number in \\[0.0, 1.0\\]; got 1.5"):
        table["attention_threshold"]("attention_threshold", 1.5)
    for bad in ([0.1, -0.2], []):
        with pytest.raises(ParameterError, match="'sensitivity_thresholds'"):
            table["sensitivity_thresholds"]("sensitivity_thresholds", bad)
    with pytest.raises(ParameterError, match="'common_min_count' expects an integer ≥ 2"):
        table["common_min_count"]("common_min_count", 1)
    assert table["sensitivity_thresholds"]("sensitivity_thresholds", [0.1, 1]) == [0.1, 1.0]


def test_the_study_and_its_core_modules_import_no_book_module():
    package = Path(cm.__file__).parents[1]
    for path in [package / "studies" / f"context_{n}.py"
                 for n in ("matrices", "stats", "batch", "heads", "similarity", "attention")] + [
            package / "core" / "windows.py", package / "core" / "streaming.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "book" not in (node.module or "").split("."), f"{path.name} imports {node.module}"


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
    """Both models measured (the tiny model and the embedded MiniLM of its ``models``), each with
    its hash, its texts and a verdict per claim; the second model's metrics recorded beside the
    first's without their per-text values."""
    from embedding_geometry.book import claims

    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / "04_attention_context_similarity.json").read_text())
    m, L, H = document["metrics"], document["model"]["layers"], document["model"]["heads"]
    assert m["layers"] == list(range(1, L + 1)) and m["n_texts"] == 6
    for key in ("mean_pair_distance", "same_sentence_fraction", "separator_attention", "unique_focus_fraction"):
        assert len(m[key]) == L, key
    assert len(m["distance_histogram"]) == L and len(m["distance_histogram"][0]) == 127  # d = 1 … T − 1
    assert np.shape(m["head_distance_histogram"]) == (L, H, 127)
    assert np.shape(m["summed_similarity"]["matrices"]) == (len(m["summed_similarity"]["blocks"]), 32, 32)
    histogram = m["unique_focus_tokens"]["histogram"]
    assert [sum(row) for row in histogram] == [6] * L and len(histogram[0]) == H + 1
    assert all(0 <= x <= 1 for x in m["separator_attention"] + m["same_sentence_fraction"])
    assert 1 <= min(m["mean_pair_distance"]) and max(m["mean_pair_distance"]) <= 127
    assert sum(sum(v) for v in m["head_classes"].values()) == L * H
    assert len(m["unique_focus_fraction_null_draws"]) == cs.NULL_DRAWS
    assert len(m["layers_with_both_kinds_draws"]) == cs.RESAMPLES
    second = "sentence-transformers/all-MiniLM-L6-v2"
    assert set(m["by_model"]) == {second} and "per_unit" not in m["by_model"][second]
    assert len(m["by_model"][second]["mean_pair_distance"]) == 6  # MiniLM's 6 blocks
    models = {row["id"]: row for row in document["models"]}
    assert second in models and document["model"]["id"] in models and all(row["sha256"] for row in models.values())
    texts = document["inputs"]["texts"]
    assert set(texts) == set(models) and all(t["count"] == 6 and len(t["sha256"]) == 64 for t in texts.values())
    assert document["inputs"]["thresholds"]["attention_threshold"] == 0.3
    assert document["inputs"]["thresholds"]["sensitivity_thresholds"] == [0.1, 0.2, 0.3, 0.4, 0.5]
    ledger = [c.id for c in claims.load(SLUG).claims]
    for model in models:
        assert [c["id"] for c in document["claims"] if c["model"] == model] == ledger, model
    ratios = m["sensitivity"]["distance_last_over_first"]
    assert len(ratios) == 5 and all(r > 0 for r in ratios)
    assert m["sensitivity"]["distance_at_worst"][-1] / m["sensitivity"]["distance_at_worst"][0] == max(ratios)
    assert all(np.shape(v) == (6, L) for v in m["per_unit"].values())  # one row per text, one column per block
    assert 0 < m["unique_focus_fraction_null"] <= 1 and 0 < m["unique_focus_ids_fraction_null"] <= 1
    assert all(c["numeric_verdict"] is None for c in document["claims"])  # not the paper's model
    page = (root / "_build" / "html" / "book" / "chapters" / "04_attention_context_similarity.html").read_text()
    assert '"name": "layer"' in page and '"name": "head"' in page  # the explorer's two sliders


@pytest.mark.slow
def test_every_claim_has_an_interval_or_a_reason_and_the_page_lists_the_rest(built_book):
    """Every claim of the executed chapter has an interval over texts (or says why not), a null
    wherever the ledger declares one, and the page lists every claim that is not a pass."""
    from test_layer_by_layer import assert_verdicts_explained, chapter_results

    results = chapter_results(built_book, SLUG)
    assert_verdicts_explained(built_book, SLUG, results)
    for c in results["claims"]:
        assert c["unit"] == "texts" and (c["n_units"] == 6 or c["status"]), c["id"]
    nulls = {(c["id"], c["null"]["kind"], c["null"]["distribution"]) for c in results["claims"] if c["null"]}
    assert {(i, kind) for i, kind, _ in nulls} == {
        ("separators-in-final-layers", "uniform_attention"), ("separator-segmentation", "chance"),
        ("same-sentence-in-final-layers", "chance"), ("unique-focus-tokens", "random_positions"),
        ("unique-focus-token-ids", "random_positions")}
    assert all(d in ("one run, unit by unit", f"{cs.NULL_DRAWS} draws") for _, _, d in nulls)  # no single value


@pytest.mark.slow
def test_the_notebook_reads_in_plain_jupyter(built_book):
    """No glue role, no ``ch.glue`` call and no function or lambda in the notebook; every claim
    is reported in words under its measurement; the executed chapter shows no raw dict and no
    Python repr of a path."""
    root, _ = built_book
    notebook = json.loads((ROOT_NOTEBOOK).read_text())
    sources = ["".join(cell["source"]) for cell in notebook["cells"]]
    code = [src for cell, src in zip(notebook["cells"], sources) if cell["cell_type"] == "code"
            and "parameters" not in cell["metadata"].get("tags", [])]
    assert not any("{glue" in src for src in sources) and not any("ch.glue" in src for src in code)
    assert not any(isinstance(node, (ast.FunctionDef, ast.Lambda)) for src in code for node in ast.walk(ast.parse(src)))
    assert all(len(src.splitlines()) <= 12 for src in code)
    from embedding_geometry.book import claims

    reported = {i for src in code if "ch.report(" in src for i in re.findall(r'"([a-z0-9-]+)"', src)}
    assert reported == {c.id for c in claims.load(SLUG).claims}
    executed = json.loads((root / "book" / "chapters" / f"{SLUG}.ipynb").read_text())
    shown = [text for cell in executed["cells"] for out in cell.get("outputs", [])
             for text in (out.get("data", {}).get("text/plain", ""),) if "text/html" not in out.get("data", {})]
    assert not any("PosixPath" in "".join(t) or "".join(t).lstrip().startswith("{") for t in shown)


@pytest.mark.slow
def test_chapter_exercise_answers_on_the_tiny_model(built_book):
    """Chapter 4's exercise answers: from the streamed totals where they suffice (τ = 0.1 is a
    sensitivity threshold; head classes at another repeat bar), else on the run's first texts."""
    root, _ = built_book
    document = json.loads((root / "build" / "results" / "04_attention_context_similarity.json").read_text())
    m, L, H = document["metrics"], document["model"]["layers"], document["model"]["heads"]
    exercises = m["exercises"]
    low = m["sensitivity"]["thresholds"].index(0.1)
    assert (exercises["attention_threshold_0.1"]["separator_attention_last"]
            == m["sensitivity"]["separator_attention"][low][-1])
    assert exercises["attention_threshold_0.1"]["separator_share"] == m["separator_share"]
    strict = exercises["repeat_share_threshold_0.5"]
    assert sum(strict["heads"].values()) == L * H
    assert strict["heads"]["repetition"] <= sum(m["head_classes"]["repetition"])  # a higher bar keeps fewer
    assert 0 <= strict["layers_with_both_kinds"] <= L
    again = exercises["q_first_texts"]
    assert again["texts"] == 6 and again["q"] == 0.99
    assert again["at_q"]["mean_pair_distance_first"] == pytest.approx(m["mean_pair_distance"][0])  # the same 6 texts
    texts = document["inputs"]["exercise_texts"]
    assert texts == document["inputs"]["texts"][document["model"]["id"]]["first"][:len(texts)] and len(texts) == 6


def test_the_text_budget_is_the_measured_cost_per_text_against_the_chapters_share():
    from types import SimpleNamespace

    from embedding_geometry.chapters.ch04_heads import budget

    def timed(seconds, count):
        return SimpleNamespace(seconds=seconds, texts=SimpleNamespace(count=count))

    # 96 texts in 24 s and 96 s: 0.25 + 1.0 = 1.25 s a text; 10 % of 600 s = 60 s affords ⌊60 / 1.25⌋ = 48
    found = budget.text_budget({"a": timed(24.0, 96), "b": timed(96.0, 96)}, budget_s=600)
    assert found["seconds_per_text"] == 1.25 and found["projected_seconds"] == 1250.0
    assert (found["share_seconds"], found["affordable_texts"], found["within"]) == (60.0, 48, False)
    words = budget.sentence(found)
    assert "1.25 s a text for every model together" in words and "1,000 texts would take 1250 s" in words
    assert "affords about 48 texts" in words and "runs over its share" in words
    cheap = budget.text_budget({"a": timed(3.0, 96)}, budget_s=600)  # 1/32 s a text: 1,920 texts
    assert cheap["affordable_texts"] == 1920 and cheap["within"]
    assert "the book's 1,000 fit" in budget.sentence(cheap) and "one model" in budget.sentence(cheap)
    assert budget.text_budget({"a": timed(0.0, 4)})["affordable_texts"] is None


def test_focus_agreement_is_one_for_the_same_focus_tokens_zero_for_disjoint_ones_against_the_hypergeometric_chance():
    same = np.array([7, 7, 8, 9, 7, 7, 8, 9])[:, None, None]  # two groups of 4 texts, focus tokens {7, 8, 9} in both
    found = context_heads.focus_agreement(same, [np.arange(4), np.arange(4, 8)], k=3)
    assert found["mean"] == 1.0 and found["texts"] == [4, 4]
    assert found["chance_all"] == pytest.approx(1.0)  # 3 of the 3 tokens seen: any draw is all of them
    apart = np.array([1, 1, 2, 3, 4, 4, 5, 6])[:, None, None]  # {1, 2, 3} against {4, 5, 6}
    found = context_heads.focus_agreement(apart, [np.arange(4), np.arange(4, 8)], k=3)
    assert found["mean"] == 0.0 and found["block"].tolist() == [0.0]
    # X of 3 and 3 drawn from 6: P(X = 1, 2, 3) = 9, 9, 1 / 20, so E[X / (6 − X)] = 9/20 · 1/5 + 9/20 · 2/4 + 1/20
    assert found["chance_all"] == pytest.approx(0.365)
    ties = np.array([5, 5, 2, 2, 9, 3, 2, 4])[:, None, None]  # ties go to the lower id: {2} in both groups
    assert context_heads.focus_agreement(ties, [np.arange(4), np.arange(4, 8)], k=1)["mean"] == 1.0


def test_a_window_takes_the_topic_of_the_corpus_sentence_it_starts_with():
    frame = corpora.corpus()
    last = frame.iloc[-1]
    assert corpora.topic_of(last["sentence"] + " " + frame["sentence"][0]) == corpora.topics().index(last["topic"])
    assert corpora.topic_of("No sentence of the corpus begins this text.") == -1
