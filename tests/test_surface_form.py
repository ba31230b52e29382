"""Chapter 2's surface-form study (studies.surface_form) on hand cases and synthetic pools with
known answers: the Jaccard overlap, Spearman's ρ over pairs against scipy, a resample's weighted
ρ against its pairs written out, and a peak margin that is positive when the pools encode shared
words inside the network and negative when they do so at depth 0."""

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from embedding_geometry.studies import surface_form as sf
from embedding_geometry.studies.anisotropy import cosine_kernel

VOCABULARY = ["red", "blue", "green", "cat", "dog", "bird"]
TEXTS = [" ".join(words).capitalize() for words in combinations(VOCABULARY, 3)]  # 20 texts of 3 distinct words


def bag_of_words(texts):
    """[N, V]: each text's word indicator: its cosine with another's is |A ∩ B| / 3 for 3-word sets,
    an increasing function of the Jaccard overlap |A ∩ B| / (6 − |A ∩ B|)."""
    return np.array([[word in sf.word_sets([t])[0] for word in VOCABULARY] for t in texts], dtype=float)


def pools_with_words_at(depth, layers=3, seed=0):
    noise = np.random.default_rng(seed).normal(size=(layers + 1, len(TEXTS), len(VOCABULARY))) + 0.5
    noise[depth] = bag_of_words(TEXTS)
    return noise


def test_jaccard_of_lowercase_word_sets():
    assert sf.word_sets(["The cat, the HAT."]) == [{"the", "cat", "hat"}]
    j = sf.jaccard_matrix(["The cat sat", "the cat ran", "A dog"])
    np.testing.assert_allclose(j, [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="at least one word"):
        sf.jaccard_matrix(["a cat", "..."])


def test_point_correlation_is_spearman_over_the_pairs():
    rng = np.random.default_rng(1)
    texts = sf.corpus_texts(24)
    pools = rng.normal(size=(4, 24, 5)) + [1.0, 0, 0, 0, 0]
    rho = sf.surface_form(pools, texts, resamples=10)["surface_form"]["spearman"]
    upper = np.triu_indices(24, k=1)
    kernel, overlap = cosine_kernel(pools), sf.jaccard_matrix(texts)
    expected = [stats.spearmanr(kernel[:, :, d][upper], overlap[upper]).statistic for d in range(4)]
    np.testing.assert_allclose(rho, expected, atol=1e-12)


def test_a_resample_weighs_the_pairs_of_the_sentences_drawn():
    rng = np.random.default_rng(2)
    pools = rng.normal(size=(3, 6, 4))
    x, y = sf.pair_ranks(cosine_kernel(pools)), sf.pair_ranks(sf.jaccard_matrix(TEXTS[:6]))
    drawn = [0, 0, 2, 3, 3, 5]  # counts 2, 0, 1, 2, 0, 1: a sentence drawn twice is not paired with itself
    pairs = [(s, t) for s, t in combinations(drawn, 2) if s != t]
    expected = [stats.pearsonr([x[s, t, d] for s, t in pairs], [y[s, t] for s, t in pairs]).statistic
                for d in range(3)]
    counts = np.bincount(drawn, minlength=6)[None].astype(float)
    np.testing.assert_allclose(sf.weighted_correlation(x, y, counts)[0], expected, atol=1e-12)


def test_shared_words_encoded_inside_the_network_peak_inside_and_at_depth_zero_do_not():
    inside = sf.surface_form(pools_with_words_at(1), TEXTS, resamples=200)["surface_form"]
    assert inside["spearman"][1] == pytest.approx(1.0) and inside["peak_depth"] == 1
    assert inside["peak_relative_depth"] == pytest.approx(1 / 3) and inside["peak_margin"] > 0
    assert len(inside["peak_margin_draws"]) == 200 and np.all(inside["peak_margin_draws"] > 0)
    first = sf.surface_form(pools_with_words_at(0), TEXTS, resamples=200)["surface_form"]
    assert first["peak_depth"] == 0 and first["peak_margin"] < 0 and np.all(first["peak_margin_draws"] < 0)
    assert (inside["n_sentences"], inside["n_pairs"]) == (20, 190)
    overlaps = sf.jaccard_matrix(TEXTS)[np.triu_indices(20, k=1)]
    assert inside["overlap_mean"] == pytest.approx(overlaps.mean()) and inside["overlap_zero_share"] == pytest.approx(
        np.mean(overlaps == 0))


def test_resamples_are_seeded_and_bad_shapes_are_refused():
    pools = pools_with_words_at(2)
    a, b = (sf.surface_form(pools, TEXTS, resamples=50, seed=s)["surface_form"]["peak_margin_draws"] for s in (3, 3))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="pools"):
        sf.surface_form(pools[:, :5], TEXTS)
    with pytest.raises(ValueError, match="pools"):
        sf.surface_form(pools[:2], TEXTS)


def test_peak_margin_of_a_series():
    np.testing.assert_allclose(sf.peak_margin(np.array([[0.1, 0.5, 0.3, 0.2], [0.6, 0.5, 0.3, 0.2]])), [0.3, -0.1])
