"""Chapter 4's comparison of context similarity with attention (studies.context_attention) on
hand cases with known answers: the attention between two tokens both ways, Spearman's ρ on
distinct values, the seeded sample of pairs, a head whose attention ranks its pairs as
its context similarity does (full overlap, ρ = 1) and one that ranks them the other way (no
overlap, ρ = −1), and the pooled per-block and per-head summaries; S against its cosine form
(equal norms: the same pairs; one token of huge norm: its pairs lead S, not the cosine)."""

import numpy as np
import pytest
from scipy import stats

from embedding_geometry.studies import context_attention as ca
from embedding_geometry.studies import context_matrices as cm


def test_attention_pairs_add_both_directions():
    pattern = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(ca.attention_pairs(pattern), [0.7, 1.0, 0.5])  # (0, 1), (0, 2), (1, 2)
    assert ca.attention_pairs(np.stack([pattern] * 2)).shape == (2, 3)


def test_rank_correlation_is_spearman_without_ties():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(3, 50)), rng.normal(size=(3, 50))
    y[0] = x[0] * 2 + 1  # a monotone function: ρ = 1
    expected = [stats.spearmanr(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(ca.rank_correlation(x, y), expected, atol=1e-12)
    assert ca.rank_correlation(x[1], -x[1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="at least 2 pairs"):
        ca.rank_correlation(np.ones(1), np.ones(1))


def test_pair_sample_is_seeded_sorted_and_all_pairs_when_few():
    a, b = ca.pair_sample(8128, seed=3), ca.pair_sample(8128, seed=3)
    np.testing.assert_array_equal(a, b)
    assert len(a) == ca.SAMPLED_PAIRS == len(set(a.tolist())) and np.all(np.diff(a) > 0) and a[-1] < 8128
    assert not np.array_equal(a, ca.pair_sample(8128, seed=4))
    np.testing.assert_array_equal(ca.pair_sample(10, seed=0), np.arange(10))


def patterns_ranking(order: np.ndarray, n_tokens: int) -> np.ndarray:
    """An attention map whose pairs' A_ij + A_ji rank as ``order`` [P] does (A_ij = order / 2 above
    the diagonal, mirrored; rows need not sum to 1 for the ranking)."""
    i, j = cm.upper_pairs(n_tokens)
    pattern = np.zeros((n_tokens, n_tokens))
    pattern[i, j] = pattern[j, i] = order / 2
    return pattern


def test_a_head_attending_as_it_writes_overlaps_fully_and_one_attending_the_other_way_not_at_all():
    n_tokens, q = 8, 0.9
    values = np.arange(28, dtype=float)  # the pairs' S_ij, all distinct
    high = cm.quantile_mask(values, q)  # the top 3 of 28
    same, reverse = patterns_ranking(values + 1, n_tokens), patterns_ranking(28 - values, n_tokens)
    rows = ca.overlap_rows(np.stack([values, values])[None], np.stack([high, high])[None],
                           ca.attention_pairs(np.stack([same, reverse])[None]), q, ca.pair_sample(28, seed=0))
    assert rows["head_attention_high"].tolist() == [[3, 3]] and rows["head_attention_overlap"].tolist() == [[3, 0]]
    np.testing.assert_allclose(rows["head_attention_rank"], [[1.0, -1.0]])


def test_overlap_metrics_pool_counts_per_block_and_head():
    # 2 texts, 1 block, 2 heads; P = 10 pairs; every head has 2 high pairs of S and 1 high attention pair
    rows = {"head_attention_overlap": np.array([[[1, 0]], [[1, 1]]]), "head_attention_high": np.ones((2, 1, 2)),
            "head_attention_rank": np.array([[[0.5, -0.1]], [[0.3, 0.1]]])}
    found = ca.overlap_metrics(rows, np.full((2, 1, 2), 2), n_pairs=10, n_sampled=10)["attention_overlap"]
    np.testing.assert_allclose(found["share"], [3 / 8])
    np.testing.assert_allclose(found["head_share"], [[2 / 4, 1 / 4]])
    np.testing.assert_allclose(found["chance"], [4 / 40]) and found["chance_all"] == pytest.approx(0.1)
    np.testing.assert_allclose(found["head_rank"], [[0.4, 0.0]], atol=1e-12)
    np.testing.assert_allclose(found["rank"], [0.2])
    assert found["sampled_pairs"] == 10


def test_cosine_divides_by_both_norms_and_is_zero_for_a_zero_vector():
    out = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0]])  # norms 5, 1, 0
    values = cm.pair_values(cm.context_similarity(out))  # (0, 1), (0, 2), (1, 2): 3, 0, 0
    np.testing.assert_allclose(ca.cosine_pairs(values, out), [0.6, 0.0, 0.0])


def test_equal_norms_give_the_cosine_the_same_high_pairs_and_a_huge_norm_moves_them():
    rng = np.random.default_rng(0)
    n_tokens, q = 24, 0.95
    out = rng.normal(size=(n_tokens, 8))
    out /= np.linalg.norm(out, axis=-1, keepdims=True) / 2.0  # every norm 2: S = 4 cos
    heavy = out.copy()
    heavy[5] *= 1000.0  # token 5's pairs now lead S whatever their angle
    rows = []
    for o in (out, heavy):
        values = cm.pair_values(cm.context_similarity(o))
        rows.append(ca.overlap_rows(values[None, None], cm.quantile_mask(values, q)[None, None],
                                    ca.cosine_pairs(values, o)[None, None], q, ca.pair_sample(276, seed=0), "cosine"))
    even, skewed = rows
    assert even["head_cosine_overlap"][0, 0] == even["head_cosine_high"][0, 0] > 0
    np.testing.assert_allclose(even["head_cosine_rank"], [[1.0]])
    assert skewed["head_cosine_overlap"][0, 0] < 0.5 * even["head_cosine_overlap"][0, 0]
    assert skewed["head_cosine_rank"][0, 0] < 0.99
