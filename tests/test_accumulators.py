"""The atlas's accumulators: one pass equals the chapters' study functions on the same texts, and
the merge of any sharding, in any order, equals one pass (hypothesis over shard boundaries)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from fuzz_values import FUZZ, budget
from synthetic_records import record

from embedding_geometry.core import geometry, streaming, windows
from embedding_geometry.studies import accumulators as acc
from embedding_geometry.studies import depth_statistics as stats
from embedding_geometry.studies import anisotropy, layer_by_layer, pool_dimensions

DEPTHS, WIDTH = 4, 5


def states(n_texts: int, seed: int = 0) -> list[np.ndarray]:
    """Per text [L + 1, T_i, D] random states, T_i = 4 … 7 ([CLS], 2 … 5 word tokens, [SEP])."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(DEPTHS, int(rng.integers(4, 8)), WIDTH)) + 0.5 for _ in range(n_texts)]


def text_pass(stacks: list[np.ndarray], cuts: list[int], order: list[int] | None = None,
              sample_size: int = 6) -> stats.TextStatistics:
    """TextStatistics of the texts cut at ``cuts`` into shards, merged in ``order``."""
    bounds = [0, *sorted(cuts), len(stacks)]
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        part = stats.TextStatistics(sample_size=sample_size, seed=3)
        part.update(record(stacks[a:b]), range(a, b))
        parts.append(part)
    return acc.merged(parts[i] for i in (order or range(len(parts))))


def assert_same(found, expected, path: str = "") -> None:
    """Equal trees of metrics: mappings key by key, numbers and arrays to float rounding."""
    if isinstance(expected, Mapping):
        assert set(found) == set(expected), path
        for key in expected:
            assert_same(found[key], expected[key], f"{path}.{key}")
    elif expected is None:
        assert found is None, path
    else:
        np.testing.assert_allclose(np.asarray(found, float), np.asarray(expected, float), rtol=1e-9, atol=1e-12,
                                   err_msg=path)


@st.composite
def shardings(draw, n: int):
    """Cut points of n units into shards, and an order to merge the shards in."""
    cuts = draw(st.lists(st.integers(1, n - 1), unique=True, max_size=n - 1))
    return cuts, draw(st.permutations(range(len(cuts) + 1)))


N = 11


@settings(parent=FUZZ, max_examples=budget(40))
@given(shardings(N))
def test_text_statistics_merged_over_any_sharding_equal_one_pass(sharding):
    stacks = states(N)
    cuts, order = sharding
    assert_same(text_pass(stacks, cuts, order).result(), text_pass(stacks, []).result())


@settings(parent=FUZZ, max_examples=budget(40))
@given(shardings(N))
def test_tuple_statistics_merged_over_any_sharding_equal_one_pass(sharding):
    stacks = states(3 * N, seed=1)
    cuts, order = sharding
    bounds, parts = [0, *sorted(cuts), N], []
    for a, b in zip(bounds, bounds[1:]):
        part = stats.TupleStatistics(names=("negation", "role_reversal"))
        part.update(record(stacks[3 * a:3 * b]), range(a, b))
        parts.append(part)
    single = stats.TupleStatistics(names=("negation", "role_reversal"))
    single.update(record(stacks), range(N))
    assert_same(acc.merged(parts[i] for i in order).result(), single.result())


@settings(parent=FUZZ, max_examples=budget(60))
@given(st.lists(st.integers(1, 29), unique=True, max_size=6))
def test_moments_merged_at_any_boundaries_equal_the_moments_of_all_rows(cuts):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 3)), rng.normal(size=(30, 3)) * 4 + 2
    bounds = [0, *sorted(cuts), 30]
    total = acc.merged(acc.Moments.of(x[a:b], y[a:b]) for a, b in zip(bounds, bounds[1:]))
    np.testing.assert_allclose(total.correlation(), [np.corrcoef(x[:, d], y[:, d])[0, 1] for d in range(3)], rtol=1e-12)


MERGES = settings(parent=FUZZ, max_examples=budget(25))
"""Derandomised, small budgets: the shardings are drawn the same way on every run."""


@MERGES
@given(st.integers(1, 60), st.integers(0, 2**32 - 1), shardings(60))
def test_a_sample_merged_over_any_sharding_is_the_bottom_k_of_every_unit(size, seed, sharding):
    """Bottom-K by a seeded hash: whatever the cuts and the merge order, the K units of smallest
    key over all units, each with its own payload."""
    cuts, order = sharding
    bounds, units = [0, *sorted(cuts), 60], np.arange(60)
    parts = []
    for a, b in zip(bounds, bounds[1:]):
        part = acc.Sample(size, seed)
        for first in range(a, b, 7):  # batches within a shard, as a shard is streamed
            chunk = units[first:min(first + 7, b)]
            part.add(chunk, value=chunk * 10.0)
        parts.append(part)
    found, payload = acc.merged(parts[i] for i in order).arrays()
    expected = np.sort(units[np.argsort(acc.unit_keys(seed, units))[:size]])
    assert list(found) == list(expected) and list(payload["value"]) == list(expected * 10.0)


@pytest.fixture(scope="module")
def head_windows(tiny_bert):
    """Six windows of 24 tokens, each captured alone: what any sharding's batches are made of."""
    cut = list(windows.from_source(tiny_bert.tokenizer, "corpus", 6, 24, 0))
    return [next(streaming.stream(tiny_bert, [w], 1)) for w in cut]


def head_pass(captured: list, cuts: list[int], order: list[int]) -> stats.HeadStatistics:
    """HeadStatistics of the windows cut at ``cuts`` into shards, each streamed window by window,
    merged in ``order``."""
    bounds, parts = [0, *sorted(cuts), len(captured)], []
    for a, b in zip(bounds, bounds[1:]):
        part = stats.HeadStatistics()
        for i in range(a, b):
            part.update(captured[i], range(i, i + 1))
        parts.append(part)
    return acc.merged(parts[i] for i in order)


@MERGES
@given(shardings(6))
def test_head_statistics_merged_over_any_sharding_equal_one_pass(head_windows, sharding):
    cuts, order = sharding
    found, expected = head_pass(head_windows, cuts, order).result(), head_pass(head_windows, [], [0]).result()
    for key in ("mean_pair_distance", "separator_attention", "separator_share", "same_sentence_fraction"):
        np.testing.assert_allclose(np.asarray(found[key], float), np.asarray(expected[key], float), rtol=1e-9,
                                   atol=1e-12, err_msg=key)


def test_the_sample_is_the_k_units_of_smallest_seeded_hash_whatever_the_shards():
    units = np.arange(40)
    expected = np.sort(units[np.argsort(acc.unit_keys(3, units))[:6]])
    stacks = states(40)
    for cuts in ([], [7], [1, 2, 3, 30]):
        assert list(text_pass(stacks, cuts).sample.arrays()[0]) == list(expected)
    other = acc.Sample(6, seed=4)
    other.add(units)
    assert list(other.arrays()[0]) != list(expected)  # another seed, another sample


def test_one_pass_equals_the_chapters_study_functions():
    stacks = states(9)
    acts = record(stacks)
    found = text_pass(stacks, [], sample_size=9).result()
    collapse, separability = layer_by_layer.collapse(acts), layer_by_layer.separability(acts)
    cls = layer_by_layer.cls_alignment(acts)
    pools = acts.mean_pool("all")
    expected = {"intra_sentence_cosine": collapse["intra_sentence_cosine"],
                "cross_sentence_baseline": collapse["cross_sentence_baseline"],
                "separability_ratio": separability["separability_ratio"],
                "cls_mean_alignment": cls["cls_mean_alignment"], "pc1_mean_alignment": cls["pc1_mean_alignment"],
                "token_norm": layer_by_layer.token_norms(acts)["token_norm"],
                "update_coherence": layer_by_layer.coherence(acts)["update_coherence"],
                "anisotropy": anisotropy.anisotropy_per_depth(pools),
                "token_anisotropy": anisotropy.pooling_gap(pools, acts)["token_anisotropy"]}
    for key, value in expected.items():
        np.testing.assert_allclose(found[key], value, rtol=1e-6, atol=1e-9, err_msg=key)
    # with every text in the sample, the sample's U-statistics are the streamed sums' statistics
    for key in ("cross_sentence_baseline", "separability_ratio", "anisotropy", "token_anisotropy"):
        sampled = found["sampled"].get(key, found["sampled"]["anisotropy"] - found["sampled"]["anisotropy_gap"])
        np.testing.assert_allclose(sampled, found[key], rtol=1e-9, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(found["per_unit"]["sampled.separability_ratio.between_pairs"],
                               separability["per_unit"]["separability_ratio.between_pairs"], rtol=1e-6, atol=1e-9)


def test_the_peak_write_block_is_the_block_of_each_dimensions_largest_summed_update():
    stacks = states(5)
    pools = record(stacks).mean_pool("all")  # [L + 1, N, D]
    writes = np.abs(np.diff(pools, axis=0)).sum(axis=1)  # [L, D]
    found = text_pass(stacks, [2]).result()
    assert list(found["peak_write_depth"]) == list(np.argmax(writes, axis=0) + 1)
    chapter = pool_dimensions.peak_writes(record(stacks), resamples=2)  # chapter 1's, under the same keys
    for key in ("peak_write_depth", "peak_write_hist", "peak_write_share", "peak_write_last_two"):
        np.testing.assert_array_equal(found[key], chapter[key], err_msg=key)


def test_a_shard_merged_twice_is_an_error_not_a_double_count():
    stacks = states(6)
    part = stats.TextStatistics(sample_size=4)
    part.update(record(stacks[:3]), range(3))
    twice = stats.TextStatistics(sample_size=4)
    twice.update(record(stacks[:3]), range(3))
    with pytest.raises(ValueError, match="counted twice"):
        part.merge(twice).result()


def test_head_statistics_of_shards_in_any_order_equal_one_pass(tiny_bert):
    cut = list(windows.from_source(tiny_bert.tokenizer, "corpus", 6, 24, 0))
    one = stats.HeadStatistics()
    start = 0
    for captured in streaming.stream(tiny_bert, cut, 2):
        one.update(captured, range(start, start + len(captured.windows)))
        start += len(captured.windows)
    parts = []
    for a, b in ((0, 2), (2, 5), (5, 6)):
        part = stats.HeadStatistics()
        for captured in streaming.stream(tiny_bert, cut[a:b], 4):
            part.update(captured, range(a, b))
        parts.append(part)
    found, expected = acc.merged([parts[2], parts[0], parts[1]]).result(), one.result()
    for key in ("mean_pair_distance", "separator_attention", "same_sentence_fraction"):
        np.testing.assert_allclose(np.asarray(found[key], float), np.asarray(expected[key], float), rtol=1e-5,
                                   atol=1e-7, err_msg=key)
    with pytest.raises(ValueError, match="counted twice"):
        parts[0].merge(parts[0])


def test_the_first_axis_is_the_top_right_singular_vector_of_each_depth():
    """geometry.first_axes: a known axis (rows spread along e₂ with small noise), and |cos| = 1 with numpy's SVD
    on random rows, at every depth."""
    rng = np.random.default_rng(3)
    spread = np.zeros((2, 6, 8))
    spread[:, :, 2] = rng.normal(size=(2, 6)) * 10
    spread += rng.normal(size=spread.shape) * 1e-3
    spread -= spread.mean(axis=1, keepdims=True)
    assert np.allclose(np.abs(geometry.first_axes(spread)[:, 2]), 1.0, atol=1e-6)
    x = rng.normal(size=(5, 9, 40))
    x -= x.mean(axis=1, keepdims=True)
    svd = np.linalg.svd(x, full_matrices=False)[2][:, 0]
    assert np.allclose(np.abs(np.sum(geometry.first_axes(x) * svd, axis=-1)), 1.0, atol=1e-12)
