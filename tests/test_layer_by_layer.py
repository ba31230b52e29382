"""Chapter 1: its study functions on hand-computed synthetic activations, its ledger evaluated on
synthetic metrics of a model and its random-init controls (every judged claim gets an interval,
every control null is a distribution over seeds), then the chapter alone end to end on the tiny
model beside the embedded MiniLM (the results contract of book/methods.md, Layer by layer)."""

import itertools
import json

import nbformat
import numpy as np
import pytest

from embedding_geometry.book import claims
from embedding_geometry.book.claims import judge, samples, words
from embedding_geometry.core import activations, corpora, geometry, models
from embedding_geometry.core.activations import Activations
from embedding_geometry.core.models import ModelInfo
from embedding_geometry.studies import layer_by_layer as study
from embedding_geometry.studies import layer_runs, pca_views, pool_dimensions, sublayers
from verdict_checks import page_outputs, unnamed

SLUG = "01_layer_by_layer"
slow = pytest.mark.slow


# --------------------------------------------------------------------------- synthetic activations

def record(*texts, cls=None, tokens=None) -> Activations:
    """Activations whose text i has the word tokens ``texts[i]`` ([L + 1, n_i, D], nested lists);
    with ``cls`` ([L + 1, N, D]) each text starts with a [CLS] token holding ``cls[:, i]``.
    ``tokens`` names the word tokens (default w0, w1, …)."""
    stacks = [np.asarray(t, dtype=float) for t in texts]
    words = tokens or [[f"w{j}" for j in range(s.shape[1])] for s in stacks]
    lead = [] if cls is None else ["[CLS]"]
    if cls is not None:
        stacks = [np.concatenate([np.asarray(cls, dtype=float)[:, [i]], s], axis=1) for i, s in enumerate(stacks)]
    special = np.array([t == "[CLS]" for ws in words for t in lead + list(ws)])
    lengths = [s.shape[1] for s in stacks]
    return Activations(
        texts=[" ".join(ws) for ws in words], hidden=np.concatenate(stacks, axis=1).astype(np.float32),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), input_ids=np.arange(sum(lengths)),
        tokens=[t for ws in words for t in lead + list(ws)], special_mask=special, word_mask=~special,
        word_ids=np.array([w for ws in words for w in [-1] * len(lead) + list(range(len(ws)))], dtype=np.int64))


E1, E2 = [1.0, 0.0], [0.0, 1.0]


def test_word_states_and_word_tokens_skip_special_tokens():
    acts = record([[E1, E2]], [[E2]], cls=[[E1, E1]], tokens=[["a", "b"], ["c"]])
    assert [s.shape for s in acts.word_states()] == [(1, 2, 2), (1, 1, 2)]
    np.testing.assert_array_equal(acts.word_states()[1][0], [E2])
    assert acts.word_tokens() == ["a", "b", "c"] and acts.word_tokens(1) == ["c"]
    assert activations.unique_labels(["the", "cat", "the", "the"]) == ["the", "cat", "the₂", "the₃"]


def test_collapse_against_hand_values_and_its_pairwise_kernel():
    # depth 0: a = (e1, e2) orthogonal, b = (e1, e1) and c = (e2, e2) identical: within = (0 + 1 + 1) / 3;
    # token pairs across texts: a·b = a·c = 1/2, b·c = 0, so the baseline is 1/3.
    # depth 1: every token is e1, so within = baseline = 1 and the gap closes
    acts = record([[E1, E2], [E1, E1]], [[E1, E1], [E1, E1]], [[E2, E2], [E1, E1]])
    m = study.collapse(acts)
    np.testing.assert_allclose(m["intra_sentence_cosine"], [2 / 3, 1.0])
    np.testing.assert_allclose(m["cross_sentence_baseline"], [1 / 3, 1.0])
    np.testing.assert_allclose(m["collapse_gap"], [1 / 3, 0.0], atol=1e-12)
    np.testing.assert_allclose(m["per_unit"]["intra_sentence_cosine"], [[0, 1], [1, 1], [1, 1]], atol=1e-12)
    kernel = m["per_unit"]["cross_sentence_baseline.pairs"]  # K_st: the mean cosine of a token of s and one of t
    np.testing.assert_allclose(kernel[..., 0], [[0, 0.5, 0.5], [0.5, 0, 0], [0.5, 0, 0]], atol=1e-12)
    np.testing.assert_allclose(samples.Units(kernel, pairwise=True).point(), m["cross_sentence_baseline"])
    stacks = acts.word_states()  # the baseline by its definition: the mean over pairs of texts of all their cosines
    by_definition = [np.mean([geometry.cosine_matrix(stacks[s][l], stacks[t][l]).mean()
                              for s, t in itertools.combinations(range(len(stacks)), 2)]) for l in range(2)]
    np.testing.assert_allclose(m["cross_sentence_baseline"], by_definition)
    np.testing.assert_allclose(m["intra_sentence_cosine"], geometry.intra_sentence_cosine(acts.word_states()))


def test_token_norms_and_their_range_over_depths():
    # text a: norms 1 then 3 (range 3); text b: norms 2 then 2 (range 1)
    acts = record([[E1, E2], [[3.0, 0.0], [0.0, 3.0]]], [[[2.0, 0.0]], [[0.0, 2.0]]])
    m = study.token_norms(acts)
    np.testing.assert_allclose(m["token_norm"], [1.5, 2.5])
    assert m["token_norm_range"] == pytest.approx(2.0)
    np.testing.assert_allclose(m["per_unit"]["token_norm_range"], [3.0, 1.0])


def test_coherence_is_the_within_sentence_cosine_of_the_updates():
    # text a: both tokens move by +e1 (coherent, 1); text b: by +e1 and −e1 (opposed, −1)
    acts = record([[E2, [0.0, 2.0]], [[1.0, 1.0], [1.0, 2.0]]], [[E2, [0.0, 2.0]], [[1.0, 1.0], [-1.0, 2.0]]])
    m = study.coherence(acts)
    np.testing.assert_allclose(m["per_unit"]["update_coherence"], [[1.0], [-1.0]])
    np.testing.assert_allclose(m["update_coherence"], [0.0], atol=1e-12)


def test_final_view_assembles_every_text_at_its_final_position():
    rng = np.random.default_rng(0)
    acts = record(*rng.normal(size=(4, 3, 2, 5)))
    m = pca_views.final_view(acts)
    assert set(m["semantic_assembly"]) == {"surged", "plunged", "fox", "RAG"}
    for series in m["semantic_assembly"].values():
        assert len(series) == 3 and series[-1] == pytest.approx(1.0)
    assert np.shape(m["final_pca_projection"]["coords"]) == (3, 8, 2)


def test_pca_steps_see_a_translation_in_fixed_axes_only():
    # the same three 2-D points, shifted by (3, 4) at depth 1: every token moves 5 units, but a
    # PCA refitted on the (centred) shifted cloud puts every token exactly where it was
    cloud = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    m = pca_views.pca_steps(record([cloud, cloud + [3.0, 4.0]]))
    np.testing.assert_allclose(m["pca_step_fixed"], [5.0], rtol=1e-6)
    np.testing.assert_allclose(m["pca_step_refit"], [0.0], atol=1e-6)
    assert m["pca_step_ratio"] == pytest.approx(0.0, abs=1e-6)


def test_pca_steps_per_sentence_weigh_each_sentence_by_its_tokens():
    # text a: two tokens that move 5 units each; text b: one token that stays put. Mean step over
    # the 3 tokens: 10 / 3. Per sentence: its token sum × N / n = 10 · 2 / 3 and 0, mean 10 / 3.
    a = [[[0.0, 0.0], [1.0, 0.0]], [[3.0, 4.0], [4.0, 4.0]]]
    b = [[[0.0, 2.0]], [[0.0, 2.0]]]
    m = pca_views.pca_steps(record(a, b))
    np.testing.assert_allclose(m["pca_step_fixed"], [10 / 3], rtol=1e-6)
    np.testing.assert_allclose(m["per_unit"]["pca_step_fixed"], [[20 / 3], [0.0]], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(m["per_unit"]["pca_step_fixed"].mean(axis=0), m["pca_step_fixed"])
    refit, fixed = m["per_unit"]["pca_step_ratio.refit"], m["per_unit"]["pca_step_ratio.fixed"]
    assert refit.mean() / fixed.mean() == pytest.approx(m["pca_step_ratio"])


def test_token_pca_fits_at_the_chosen_depth_and_names_the_word_tokens():
    spread_x = [[-1.0, 0.0], [1.0, 0.0]]
    spread_y = [[0.0, -2.0], [0.0, 2.0]]
    acts = record([spread_x, spread_y], cls=[[[5.0, 5.0]], [[5.0, 5.0]]], tokens=[["left", "right"]])
    at_0, at_1 = pca_views.token_pca(acts, fit_depth=0), pca_views.token_pca(acts, fit_depth=1)
    assert at_0["tokens"] == ["left", "right"] and np.shape(at_0["coords"]) == (2, 2, 2)
    np.testing.assert_allclose(at_0["explained_variance_ratio"], [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(np.abs(at_0["coords"][0, :, 0]), [1.0, 1.0])  # PC1 of depth 0 is the x axis
    np.testing.assert_allclose(np.abs(at_1["coords"][1, :, 0]), [2.0, 2.0])  # PC1 of depth 1 is the y axis


def test_travel_per_sentence_and_the_mean_absolute_first_last_cosine():
    tilted = [[0.05, 1.0], [0.05, 1.0]]  # cos with e1: 0.05 / √(1.0025)
    acts = record([[E1, E1], [E2, E2]], [[E1, E2], [E1, E2]], [[E1, E1], tilted])
    m = pool_dimensions.travel(acts)
    first = [0.0, 1.0, 0.05 / np.sqrt(1.0025)]
    np.testing.assert_allclose(m["meanpool_first_last_cosine"], first, atol=1e-12)
    assert m["meanpool_first_last_abs"] == pytest.approx(np.mean(first))
    np.testing.assert_allclose(m["per_unit"]["meanpool_first_last_abs"], first, atol=1e-12)
    np.testing.assert_allclose(m["meanpool_to_final"], [np.mean(first), 1.0])


def test_peak_writes_find_the_block_of_each_dimensions_largest_change():
    # one text, one token, three dims over depths 0..3: dim 0 changes most at 0→1, dims 1 and 2 at 2→3
    acts = record([[[0, 0, 0]], [[5, 1, 0]], [[5, 2, 1]], [[6, 9, 4]]])
    m = pool_dimensions.peak_writes(acts, tail=1 / 3, resamples=10)
    np.testing.assert_array_equal(m["peak_write_depth"], [1, 3, 3])
    np.testing.assert_array_equal(m["peak_write_hist"], [1, 0, 2])
    assert m["peak_write_last_two"] == pytest.approx(2 / 3)  # the last third of three blocks: block 3
    np.testing.assert_allclose(m["peak_write_share"], [1 / 3, 0, 2 / 3])
    np.testing.assert_allclose(m["peak_write_uniform"], [1 / 3] * 3)
    np.testing.assert_allclose(m["resampled"]["peak_write_last_two"], [2 / 3] * 10)  # one sentence: all alike


def test_peak_write_resamples_find_each_dimensions_peak_again():
    # sentence a writes dim 0 late, sentence b writes it early and harder: the mean peaks early;
    # a resample drawing a alone (or a twice) finds the late peak
    a = [[[0.0]], [[0.0]], [[1.0]]]
    b = [[[0.0]], [[3.0]], [[3.0]]]
    m = pool_dimensions.peak_writes(record(a, b), tail=0.5, resamples=2000)
    assert m["peak_write_last_two"] == 0.0 and m["resampled"]["n_sentences"] == 2
    draws = m["resampled"]["peak_write_last_two"]
    assert set(draws) == {0.0, 1.0} and np.mean(draws) == pytest.approx(0.25, abs=0.04)  # a drawn twice: 1/4


def test_peak_writes_tail_is_the_ledgers():
    claim = next(c for c in claims.load(SLUG).claims if c.id == "peak-write-last-two")
    assert claim.reduce == f"last_fraction:{round(pool_dimensions.TAIL, 4)}"


def test_dimension_correlation_over_sentences_rebuilt_from_their_moments():
    # per sentence (one token each): dim 0 at the end is 2·start + 1 (r = 1), dim 1 is −start (r = −1)
    starts = [1.0, 2.0, 4.0]
    acts = record(*[[[[x, x]], [[2 * x + 1, -x]]] for x in starts])
    m = pool_dimensions.dimension_correlation(acts, threshold=0.7)
    corr = m["dim_corr_first_last"]
    np.testing.assert_allclose(corr["r"], [1.0, -1.0])
    assert (corr["n_above"], corr["n_below"], corr["mean"]) == (1, 1, pytest.approx(0.0))
    metrics = {"per_unit": m["per_unit"]}
    rebuilt = samples.find(metrics, {"correlation": {"x": "dim_corr_first_last.x", "y": "dim_corr_first_last.y"}})
    assert rebuilt.point() == pytest.approx(corr["mean"])
    assert rebuilt.values(np.array([[0.5, 0.5, 0.0]]))[0] == pytest.approx(0.0)  # two sentences: r = ±1 again


def test_discriminative_dims_rank_final_differences_and_find_half_values():
    # dims 0..2 differ between the two texts by [0, 0, 4], [0, 0, 0] and [0, 1, 2] over depths 0..2
    a = [[[1, 1, 1]], [[1, 1, 1]], [[1, 1, 1]]]
    b = [[[1, 1, 1]], [[1, 1, 2]], [[5, 1, 3]]]
    top = pool_dimensions.discriminative_dims(record(a, b), k=2)["top_discriminative_dims"]
    np.testing.assert_array_equal(top["dims"], [0, 2])
    np.testing.assert_allclose(top["difference"], [[0, 0, 4], [0, 1, 2]])
    np.testing.assert_array_equal(top["half_value_depth"], [2, 1])
    np.testing.assert_allclose(top["half_value_relative_depth"], [1.0, 0.5])
    assert top["earliest_half_value_relative_depth"] == pytest.approx(0.5)


def test_matryoshka_slices_clip_to_the_width_and_compare_each_slice():
    a, b = np.ones(70), np.ones(70)
    b[64:] = -1  # equal in [0, 64), opposite in [64, 70)
    pair = record([[a]], [[b]])
    m = pool_dimensions.matryoshka(pair, record([[a]], [[b]], [[a]]))
    assert m["slice_bounds"]["0-64"] == (0, 64) and m["slice_bounds"]["64-128"] == (64, 70)
    assert m["slice_bounds"]["128-256"] is None and m["slice_cosine"]["128-256"] is None
    np.testing.assert_allclose(m["slice_cosine"]["0-64"], [1.0])
    np.testing.assert_allclose(m["slice_cosine"]["64-128"], [-1.0])
    # the twin (a, b): 0-64 gives 1, the only other slice −1, so 0-64 is least discriminative by 2;
    # there is no 256-512 slice at D = 70
    np.testing.assert_allclose(m["slice_margin"]["first_least"], [2.0])
    assert m["slice_margin"]["middle_most"] is None and "slice_margin.middle_most" not in m["per_unit"]


def test_matryoshka_margins_order_the_slices_twin_by_twin():
    """Twins of width 600 whose cosine is 1 in every slice but one: the margins are per twin, and
    their mean is the metric a claim resamples."""
    rng = np.random.default_rng(0)
    d = rng.normal(size=600)
    sliced = d.copy()
    sliced[256:512] *= -1  # cos −1 in 256-512, 1 elsewhere: 256-512 most discriminative by 2
    first = d.copy()
    first[64:128] *= -1  # cos −1 in 64-128: 0-64 ties the other slices at 1, so its margin is 0
    twins = record([[d]], [[sliced]], [[d]], [[d]], [[first]], [[d]])
    m = pool_dimensions.matryoshka(record([[d]], [[d]]), twins)
    np.testing.assert_allclose(m["per_unit"]["slice_margin.middle_most"], [[2.0], [-2.0]], atol=1e-6)
    np.testing.assert_allclose(m["per_unit"]["slice_margin.first_least"], [[0.0], [0.0]], atol=1e-6)
    np.testing.assert_allclose(m["slice_margin"]["middle_most"], [0.0], atol=1e-6)


def test_separability_is_between_spread_over_within_scatter_with_b_as_a_pairwise_statistic():
    # 1-D: text a = {0, 2} (centroid 1), text b = {4, 6} (centroid 5); C = 3, B = 4, W = 1
    m = study.separability(record([[[0.0], [2.0]]], [[[4.0], [6.0]]]))
    np.testing.assert_allclose(m["separability_ratio"], [4.0])
    # B = (N − 1)/N · mean_{s≠t} ‖c_s − c_t‖² / 2: the kernel of a pair is 1/2 · 16 / 2 = 4
    np.testing.assert_allclose(m["per_unit"]["separability_ratio.between_pairs"][..., 0], [[0, 4], [4, 0]])
    np.testing.assert_allclose(m["per_unit"]["separability_ratio.within"], [[1.0], [1.0]])
    m = study.separability(record([[[0.0], [2.0]]], [[[4.0], [8.0]]], [[[1.0], [1.0]]]))
    statistic = samples.find(m, {"numerator": {"pairwise": "separability_ratio.between_pairs"},
                                 "denominator": "separability_ratio.within"})
    np.testing.assert_allclose(statistic.point(), m["separability_ratio"])
    between, _ = geometry.separability_parts(record([[[0.0], [2.0]]], [[[4.0], [8.0]]], [[[1.0], [1.0]]]).word_states())
    np.testing.assert_allclose(samples.Units(m["per_unit"]["separability_ratio.between_pairs"], pairwise=True).point(),
                               between.mean(axis=0))


def test_pair_cosine_of_all_tokens_or_word_tokens():
    # [CLS] = e2 in both; the word tokens are e1 and −e1: word means opposite, all-token means orthogonal
    acts = record([[E1]], [[[-1.0, 0.0]]], cls=[[E2, E2]])
    np.testing.assert_allclose(study.pair_cosine(acts, tokens="word"), [-1.0])
    np.testing.assert_allclose(study.pair_cosine(acts, tokens="all"), [0.0], atol=1e-12)


def test_recall_at_k_per_depth_with_per_query_hits():
    # pool: e1, e2, e1+e2. Query 0 = e1 (relevant 0), query 1 = e2 (relevant 2).
    # Depth 0: query 0 ranks doc 0 first; query 1 ranks doc 1 first, doc 2 second.
    # Depth 1: query 1 becomes e1+e2 and ranks doc 2 first.
    queries = record([[E1], [E1]], [[E2], [[1.0, 1.0]]])
    pool = record([[E1], [E1]], [[E2], [E2]], [[[1.0, 1.0]], [[1.0, 1.0]]])
    at_1, hits_1 = study.recall_at_k(queries, pool, [0, 2], k=1)
    at_2, _ = study.recall_at_k(queries, pool, [0, 2], k=2)
    np.testing.assert_allclose(at_1, [0.5, 1.0])
    np.testing.assert_allclose(hits_1, [[1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_allclose(at_2, [1.0, 1.0])
    m = study.recall({"easy": (queries, pool, [0, 2])}, {"easy": 1})
    assert m["recall_k"] == {"easy": 1} and list(m["per_unit"]) == ["recall_at_k.easy"]
    assert m["recall_chance"] == {"easy": pytest.approx(1 / 3)}  # k = 1 of a pool of 3
    np.testing.assert_allclose(m["per_unit"]["recall_at_k.easy"].mean(axis=0), m["recall_at_k"]["easy"])


def test_recall_counts_a_tie_against_the_query():
    queries = record([[E1]])
    pool = record([[E1]], [[[2.0, 0.0]]])  # both documents point along e1: the relevant one ranks 2nd
    np.testing.assert_allclose(study.recall_at_k(queries, pool, [0], k=1)[0], [0.0])


def test_cls_alignment_and_pc1_alignment_per_sentence():
    # text a: [CLS] = its word mean (2, 0), tokens along x, PC1 = x: both alignments 1
    # text b: [CLS] ⟂ its word mean (1, 0), tokens (1, ±1), PC1 = y: both alignments 0
    acts = record([[[1.0, 0.0], [3.0, 0.0]]], [[[1.0, 1.0], [1.0, -1.0]]], cls=[[[2.0, 0.0], E2]])
    m = study.cls_alignment(acts)
    np.testing.assert_allclose(m["cls_mean_alignment"], [0.5])
    np.testing.assert_allclose(m["pc1_mean_alignment"], [0.5])
    np.testing.assert_allclose(m["per_unit"]["cls_mean_alignment"], [[1.0], [0.0]], atol=1e-12)
    np.testing.assert_allclose(m["per_unit"]["pc1_mean_alignment"], [[1.0], [0.0]], atol=1e-12)


def test_by_model_keeps_models_not_run_as_none():
    acts = record([[E1, E2]], [[E1, [1.0, 1.0]]])
    m = study.by_model({"published/not-run": None, "this": acts})
    assert m["intra_sentence_cosine_by_model"]["published/not-run"] is None
    assert m["separability_ratio_by_model"]["published/not-run"] is None
    within = study.collapse(acts)["intra_sentence_cosine"]
    np.testing.assert_allclose(m["intra_sentence_cosine_by_model"]["this"], within)
    assert list(m["per_unit"]) == ["intra_sentence_cosine_by_model.this"]
    np.testing.assert_allclose(m["per_unit"]["intra_sentence_cosine_by_model.this"].mean(axis=0),
                               m["intra_sentence_cosine_by_model"]["this"])


def test_twin_cosine_pairs_each_document_with_its_negation_and_its_reversal():
    # two triplets (document, negation, role reversal), one token each, one depth
    twins = record([[E1]], [[E2]], [[E1]], [[E1]], [[[1.0, 1.0]]], [[[-1.0, 0.0]]])
    m = study.twin_cosine(twins)
    np.testing.assert_allclose(m["per_unit"]["twin_cosine.negation"], [[0.0], [1 / np.sqrt(2)]], atol=1e-12)
    np.testing.assert_allclose(m["per_unit"]["twin_cosine.role_reversal"], [[1.0], [-1.0]])
    np.testing.assert_allclose(m["twin_cosine"]["negation"], [1 / (2 * np.sqrt(2))])
    np.testing.assert_allclose(m["twin_cosine"]["role_reversal"], [0.0], atol=1e-12)
    np.testing.assert_allclose(m["twin_cosine"]["reversal_minus_negation"], [-1 / (2 * np.sqrt(2))])


def test_control_stacks_every_seeds_units_for_the_nulls_or_is_none():
    assert study.control([]) == {"control": None}
    sentences = record([[E1, E2], [E1, E2]], [[E1, E1], [E2, E1]], [[E2, E2], [E1, E2]])
    twins = record([[E1], [E1]], [[E2], [E1]])  # one document and its negation
    found = study.control([(sentences, twins), (sentences, twins)])
    control = found["control"]
    np.testing.assert_allclose(control["collapse_gap"], study.collapse(sentences)["collapse_gap"])
    np.testing.assert_allclose(control["separability_ratio"], study.separability(sentences)["separability_ratio"])
    np.testing.assert_allclose(control["twin_cosine"]["negation"], [0.0, 1.0], atol=1e-12)  # e1 vs e2, then e1 vs e1
    units = found["per_unit"]
    assert units["control.intra_sentence_cosine"].shape == (2, 3, 2)
    assert units["control.cross_sentence_baseline.pairs"].shape == (2, 3, 3, 2)
    assert units["control.twin_cosine.negation"].shape == (2, 1, 2)
    baseline = {"seeds": {"pairwise": "control.cross_sentence_baseline.pairs"}}
    within = {"seeds": "control.intra_sentence_cosine"}
    gap = samples.find({"per_unit": units}, {"minuend": within, "subtrahend": baseline})
    np.testing.assert_allclose(gap.point(), found["control"]["collapse_gap"])


def test_the_controls_negation_twins_are_the_hard_sets_documents_and_negations_in_pairs():
    twins, pairs = study.inputs()["twins"], study.negation_twins()
    assert pairs[0::2] == twins[0::3] and pairs[1::2] == twins[1::3]


def test_word_classes_mark_stop_words_as_function_words_and_leave_punctuation_out():
    acts = record([[E1, E2, E1, E2, E1]], tokens=[["the", "market", "surg", "##ed", "."]])
    acts.word_ids[:] = [0, 1, 2, 2, 3]
    np.testing.assert_array_equal(sublayers.word_classes(acts), ["function", "content", "content", "content", "other"])


def test_dip_splits_each_blocks_change_into_its_sublayers():
    rng = np.random.default_rng(1)
    acts = random_record(rng, 3, n_tokens=4, depths=4, width=6)
    unsplit = sublayers.dip(acts)["dip"]
    assert unsplit["attention_change"] is None and unsplit["feed_forward_change"] is None
    acts.after_attention = rng.normal(size=(3, *acts.hidden.shape[1:]))
    found = sublayers.dip(acts)["dip"]
    within = study.collapse(acts)["intra_sentence_cosine"]
    np.testing.assert_allclose(found["attention_change"] + found["feed_forward_change"], np.diff(within), atol=1e-9)
    assert found["steepest_fall_block"] == int(np.argmin(np.diff(within))) + 1


def _separate_sublayer_pass(loaded, texts):
    """What chapter 1 ran before its sublayer states came from the cached pass: a second forward
    pass capturing the heads' outputs, and a_l = LN₁(h_{l−1} + O(head_out_l)) recomputed from them,
    texts in input order in one batch → (hidden [L + 1, n, D], after attention [L, n, D])."""
    import torch

    from embedding_geometry.core import architectures, capture

    family, L = architectures.family_of(loaded.model), loaded.model.config.num_hidden_layers
    blocks = family.blocks_of(loaded.model)
    names = ["embed"] + [f"blocks.{l}.{site}" for l in range(L) for site in ("resid_post", "attn.head_out")]
    ids = loaded.tokenizer(texts, truncation=True, max_length=loaded.info.max_seq_length)["input_ids"]
    batch = loaded.tokenizer.pad({"input_ids": ids}, padding_side="right", return_tensors="pt")
    _, cache = capture.run_with_cache(loaded.model, dict(batch), names)
    states = [cache["embed"]] + [cache[f"blocks.{l}.resid_post"] for l in range(L)]
    with torch.inference_mode():
        after = [family.attention_norm_of(blocks[l])(states[l] + family.head_out_of(blocks[l])(
            cache[f"blocks.{l}.attn.head_out"].flatten(2))) for l in range(L)]
    states, after = torch.stack(states).float().numpy(), torch.stack(after).float().numpy()
    return tuple(np.concatenate([x[:, row, :len(i)] for row, i in enumerate(ids)], axis=1) for x in (states, after))


def test_the_cached_pass_gives_the_separate_sublayer_pass_bit_for_bit(tiny_bert, tmp_path):
    import torch

    from embedding_geometry.core import architectures

    texts = ["The cat sat on the mat.", "A dog barked", "Its rival acquired the tech giant after a long fight."]
    acts = activations.extract(tiny_bert, texts, cache_dir=tmp_path, progress=False, after_attention=True)
    hidden, after = _separate_sublayer_pass(tiny_bert, texts)
    np.testing.assert_array_equal(acts.hidden, hidden)
    np.testing.assert_array_equal(acts.after_attention, after)
    read_back = activations.extract(tiny_bert, texts, cache_dir=tmp_path, progress=False, after_attention=True)
    np.testing.assert_array_equal(read_back.after_attention, after)
    blocks = architectures.family_of(tiny_bert.model).blocks_of(tiny_bert.model)
    with torch.inference_mode():  # and the feed-forward sublayer takes a_l to h_l
        for l, block in enumerate(blocks):
            a = torch.from_numpy(after[l])[None]
            np.testing.assert_allclose(block.output(block.intermediate(a), a)[0].numpy(), hidden[l + 1], atol=1e-5)


def test_chapter_1_splits_the_trained_models_sentences_in_the_pass_other_chapters_share(tiny_bert, tmp_path):
    """run_all asks for the sublayer states with the sentences of a trained model only, and the
    sentences' plain record (what chapter 8 reads) is then in the cache under its usual key."""
    seen = []
    def extract(texts, model, **options):
        seen.append((model.info.source, texts, options.get("after_attention", False)))
        return activations.extract(model, texts, cache_dir=tmp_path, progress=False, **options)

    texts = study.inputs()
    runs = layer_runs.run_all(extract, [tiny_bert, models.random_control(tiny_bert, 0)], texts)
    split = [(source, t) for source, t, after in seen if after]
    assert split == [(tiny_bert.info.source, texts["sentences"])]
    trained, control = runs.values()
    assert trained.acts["sentences"].after_attention is not None and control.acts["sentences"].after_attention is None
    key = activations.cache_key(tiny_bert, texts["sentences"], tiny_bert.info.max_seq_length, False)
    assert (tmp_path / f"{key}.joblib").is_file()


def test_exercises_answers():
    topic = record([[E1, E2], [E1, E1]], [[E1, E1], [E1, E1]], [[E2, E2], [E1, E1]])
    queries = record([[E1], [E1]], [[E2], [[1.0, 1.0]]])
    pool = record([[E1], [E1]], [[E2], [E2]], [[[1.0, 1.0]], [[1.0, 1.0]]])
    ex = study.exercises(topic, {"easy": (queries, pool, [0, 2]), "hard": (queries, pool, [0, 2])})["exercises"]
    assert "per_unit" not in ex["one_topic"]
    np.testing.assert_allclose(ex["one_topic"]["collapse_gap"], [1 / 3, 0.0], atol=1e-12)
    np.testing.assert_allclose(ex["easy_recall_at_1"], [0.5, 1.0])
    assert ex["easy_recall_at_1_peak_depth"] == 1
    np.testing.assert_allclose(ex["hard_recall_at_3"], [1.0, 1.0])
    assert (ex["hard_recall_at_1"] <= ex["hard_recall_at_3"]).all()


def test_inputs_default_to_the_books_data_and_take_the_readers_sentences():
    default = study.inputs()
    assert default["sentences"] == corpora.layer_by_layer_sentences()
    assert default["easy_set"] == corpora.retrieval_set("easy")
    assert default["exercise_one_topic"] == list(study.ONE_TOPIC)
    mine = study.inputs(sentences=["a b", "c d", "e f"], hard_set={"queries": ["q"], "pool": ["p"], "relevant": [0]})
    assert mine["sentences"] == ["a b", "c d", "e f"] and mine["hard_pair"] == default["hard_pair"]
    assert mine["twins"] == default["twins"] == corpora.retrieval_set("hard")["pool"]  # the book's twins, always
    assert len(mine["twins"]) % 3 == 0


# --------------------------------------------------------------------------- the ledger on synthetic metrics

def random_record(rng, n_texts: int, n_tokens: int = 3, depths: int = 4, width: int = 8) -> Activations:
    """n_texts random texts of n_tokens word tokens after a [CLS], at ``depths`` depths."""
    return record(*rng.normal(size=(n_texts, depths, n_tokens, width)), cls=rng.normal(size=(depths, n_texts, width)))


def model_info(name: str, source: str = "local", layers: int = 3) -> ModelInfo:
    return ModelInfo(id=name, source=source, sha256=None, revision=None, model_type="bert", layers=layers, hidden=8,
                     heads=2, vocab=10, parameters=1, pooling="mean", max_seq_length=32)


SIZES = {"sentences": 6, "twins": 15, "negation_twins": 10, "easy_queries": 5, "easy_pool": 6, "hard_queries": 5,
         "hard_pool": 15, "negation_pair": 2, "role_reversal_pair": 2, "final_view": 4, "token_pair_alone": 2,
         "exercise_one_topic": 3}
"""Text sets of a synthetic run: at least 5 units for every claim's interval (book/claims/pvalues.py)."""


def synthetic_runs(seed: int = 0, seeds: int = 10) -> dict[str, layer_runs.Run]:
    """A trained model "m" and ``seeds`` random-init controls of it, on random activations."""
    rng = np.random.default_rng(seed)
    runs = {"m": layer_runs.Run(model_info("m"),
                                {name: random_record(rng, SIZES[name]) for name in layer_runs.TRAINED_TEXTS})}
    for s in range(seeds):
        name = f"m [random-init control, seed {s}]"
        texts = {n: random_record(rng, SIZES[n]) for n in layer_runs.CONTROL_TEXTS}
        runs[name] = layer_runs.Run(model_info(name, "control"), texts)
    return runs


SYNTHETIC_INPUTS = {"easy_set": {"relevant": [0, 1, 2, 3, 4]}, "hard_set": {"relevant": [0, 3, 6, 9, 12]}}


def synthetic_metrics(seed: int = 0) -> dict:
    """Every metric chapter 1's ledger reads, measured by the study on random activations of a
    model and ten random-init controls, as the notebook records them."""
    return study.measure(synthetic_runs(seed), "m", SYNTHETIC_INPUTS, {"easy": 2, "hard": 1})


def test_measure_runs_every_section_on_one_model_and_its_controls():
    runs = synthetic_runs()
    m = study.measure(runs, "m", SYNTHETIC_INPUTS, {"easy": 2, "hard": 1})
    assert layer_runs.trained(runs) == ["m"] and len(layer_runs.controls_of(runs, "m")) == 10
    assert m["control"]["seeds"] == 10 and m["per_unit"]["control.intra_sentence_cosine"].shape == (10, 6, 4)
    assert m["intra_sentence_cosine_by_model"]["jinaai/jina-colbert-v2"] is None  # the post's models, not run
    for key in ("intra_sentence_cosine", "update_coherence", "token_norm", "semantic_assembly", "dip", "recall_at_k",
                "twin_cosine", "resampled", "exercises"):
        assert key in m, key
    record = study.for_the_record({"m": m})["other_models"]["m"]
    assert "per_unit" not in record and "resampled" not in record and "dip" in record
    measured = layer_runs.labelled(runs, {"m": m})
    assert list(measured) == ["m (3 blocks)"] and len(layer_runs.dip_table(measured)) == 1


def test_every_judged_claim_of_the_ledger_gets_an_interval_and_its_null():
    """The per-unit samples each claim names exist and rebuild its metric (evaluate raises
    otherwise), so every judged claim has an interval, and every declared null a value; the
    random-init nulls are distributions over ten seeds, compared unit by unit."""
    metrics = synthetic_metrics()
    assert_intervals_and_nulls(SLUG, metrics)
    verdicts = claims.evaluate(claims.load(SLUG), metrics, "synthetic", resamples=200, family=claims.family_size())
    found = {r["id"]: r for r in claims.records(verdicts)}
    for claim in claims.load(SLUG).claims:
        if claim.null and claim.null["kind"] == "control":
            assert found[claim.id]["null"]["distribution"] == "10 seeds, unit by unit", claim.id


def assert_intervals_and_nulls(slug: str, metrics: dict) -> None:
    """Every judged claim of ``slug``'s ledger, evaluated on ``metrics``, has an interval, and every
    null the ledger declares has a value."""
    ledger = claims.load(slug)
    found = claims.records(claims.evaluate(ledger, metrics, "synthetic", resamples=200, family=claims.family_size()))
    for claim, result in zip(ledger.claims, found):
        assert result["verdict"] in words.MEANINGS, claim.id
        if result["verdict"] in words.TESTED:
            assert result["interval"] is not None, claim.id
            if claim.null:
                assert result["null"]["value"] is not None, claim.id


def test_claims_without_a_test_say_why():
    for claim in claims.load(SLUG).claims:
        assert claim.shape or claim.description, claim.id
        assert not claim.fraction or claim.fraction_reason, claim.id


# --------------------------------------------------------------------------- the chapter end to end (slow)
PER_DEPTH = ["intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap", "separability_ratio",
             "cls_mean_alignment", "pc1_mean_alignment", "token_norm", "meanpool_to_final"]
PER_STEP = ["pca_step_fixed", "pca_step_refit", "peak_write_hist", "update_coherence"]


def chapter_results(built_book, slug: str) -> dict:
    """The results JSON of chapter ``slug`` in the book built on the tiny model."""
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((root / "build" / "results" / f"{slug}.json").read_text())


@pytest.fixture(scope="module")
def results(built_book):
    return chapter_results(built_book, SLUG)


@slow
def test_series_have_one_entry_per_depth_or_step(results):
    L = results["model"]["layers"]
    m = results["metrics"]
    for key in PER_DEPTH:
        assert len(m[key]) == L + 1, key
    for key in PER_STEP:
        assert len(m[key]) == L, key
    for name in ("easy", "hard"):
        assert len(m["recall_at_k"][name]) == L + 1 and all(0 <= r <= 1 for r in m["recall_at_k"][name])
    for name in ("negation", "role_reversal"):
        assert len(m["pair_cosine"][name]) == L + 1
    assert np.asarray(m["final_pca_projection"]["coords"]).shape == (L + 1, len(m["final_pca_projection"]["tokens"]), 2)
    assert all(len(v) == L + 1 for v in m["semantic_assembly"].values())
    assert len(m["meanpool_first_last_cosine"]) == len(results["inputs"]["sentences"])
    assert all(len(m["dip"][key]) == L for key in ("attention_change", "feed_forward_change"))


@slow
def test_dimension_metrics_cover_every_dimension(results):
    L, D = results["model"]["layers"], results["model"]["hidden"]
    m = results["metrics"]
    assert sum(m["peak_write_hist"]) == D and len(m["peak_write_depth"]) == D
    assert set(m["peak_write_depth"]) <= set(range(1, L + 1))
    late = np.arange(1, L + 1) / L > 1 - pool_dimensions.TAIL + 1e-9
    assert m["peak_write_last_two"] == pytest.approx(np.sum(np.asarray(m["peak_write_hist"])[late]) / D)
    assert len(m["resampled"]["peak_write_last_two"]) == pool_dimensions.RESAMPLES
    corr = m["dim_corr_first_last"]
    assert len(corr["r"]) == D and corr["n_above"] == sum(r > 0.7 for r in corr["r"])
    assert np.shape(m["per_unit"]["dim_corr_first_last.x"]) == (len(results["inputs"]["sentences"]), D)
    top = m["top_discriminative_dims"]
    assert len(top["dims"]) == 5 and np.asarray(top["difference"]).shape == (5, L + 1)
    assert top["half_value_relative_depth"] == pytest.approx(np.asarray(top["half_value_depth"]) / L)
    for name, bounds in m["slice_bounds"].items():  # the tiny model is narrower than most slices
        assert (bounds is None) == (m["slice_cosine"][name] is None)
        assert bounds is None or bounds[1] <= D


@slow
def test_derived_metrics_are_consistent(results):
    m = results["metrics"]
    np.testing.assert_allclose(m["collapse_gap"], np.subtract(m["intra_sentence_cosine"], m["cross_sentence_baseline"]))
    assert m["pca_step_ratio"] == pytest.approx(np.mean(m["pca_step_refit"]) / np.mean(m["pca_step_fixed"]))
    n = len(results["inputs"]["sentences"])
    kernel = np.asarray(m["per_unit"]["cross_sentence_baseline.pairs"])
    np.testing.assert_allclose(kernel.sum(axis=(0, 1)) / (n * (n - 1)), m["cross_sentence_baseline"])


@slow
def test_within_sentence_cosine_matches_a_direct_computation(results, tiny_bert_dir):
    """An independent loop over sentences and token pairs, on freshly extracted states."""
    record = activations.extract(models.load(str(tiny_bert_dir), device="cpu"), results["inputs"]["sentences"],
                                 cache=False, progress=False)
    depth = results["model"]["layers"]
    per_sentence = []
    for i in range(record.n_texts):
        x = record.token_states(depth, i, "word").astype(np.float64)
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        n = len(x)
        per_sentence.append(sum(x[a] @ x[b] for a in range(n) for b in range(n) if a != b) / (n * (n - 1)))
    assert results["metrics"]["intra_sentence_cosine"][depth] == pytest.approx(np.mean(per_sentence), abs=1e-5)


@slow
def test_inputs_are_recorded_verbatim(results):
    inputs = results["inputs"]
    reference = corpora.REFERENCE_SENTENCES
    assert inputs["sentences"] == corpora.layer_by_layer_sentences()
    assert inputs["hard_pair"] == inputs["negation_pair"] == [reference["surged"], reference["plunged"]]
    assert inputs["role_reversal_pair"] == [reference["acquirer"], reference["acquired"]]
    assert inputs["easy_set"] == corpora.retrieval_set("easy") and inputs["hard_set"] == corpora.retrieval_set("hard")
    for name in ("easy_set", "hard_set"):
        assert len(inputs[name]["queries"]) >= 10 and not set(inputs[name]["queries"]) & set(inputs[name]["pool"])


@slow
def test_every_model_is_recorded_and_every_claim_judged_on_each_trained_model(results):
    """Both encoders (the main one and the embedded MiniLM) and control_seeds random-init copies of
    each, every one by its weights; the ledger judged on each trained encoder."""
    seeds, main = results["params"]["control_seeds"], results["model"]["id"]
    ran = {m["id"]: m for m in results["models"]}
    assert main in ran and models.EMBEDDED_ID in ran and len(ran) == 2 + 2 * seeds
    assert all(m["sha256"] and len(m["sha256"]) == 64 for m in ran.values())
    ledger = [c.id for c in claims.load(SLUG).claims]
    for model in (main, models.EMBEDDED_ID):
        judged = [c for c in results["claims"] if c["model"] == model]
        assert [c["id"] for c in judged] == [c for c in ledger if not c.startswith("colbert")], model
    assert results["metrics"]["other_models"][models.EMBEDDED_ID]["intra_sentence_cosine"] is not None


@slow
def test_published_models_not_run_are_not_measured(results):
    assert all(c["numeric_verdict"] is None for c in results["claims"])  # neither model is a published model
    colbert = [c for c in results["claims"] if c["id"].startswith("colbert")]
    assert colbert and all(c["measured"] is None and c["status"] == judge.NOT_MEASURED for c in colbert)
    by_model = results["metrics"]["intra_sentence_cosine_by_model"]
    assert by_model["jinaai/jina-colbert-v2"] is None and by_model["mixedbread-ai/mxbai-embed-large-v1"] is None
    embedded = by_model[models.EMBEDDED_ID]  # another model, of another depth
    assert embedded is not None and len(embedded) != len(results["metrics"]["intra_sentence_cosine"])


def assert_verdicts_explained(built_book, slug: str, results: dict) -> None:
    """Every claim of an executed chapter has an interval or says why not (by construction,
    description, not measured, a test that cannot decide), a null wherever its ledger declares one,
    and the page lists every claim that does not hold or is inconclusive (its claims table)."""
    ledger = {claim.id: claim for claim in claims.load(slug).claims}
    for result in results["claims"]:
        assert result["interval"] is not None or (result["reason"] and result["status"] in (
            judge.BY_CONSTRUCTION, judge.DESCRIPTIVE, judge.NOT_MEASURED, judge.CANNOT_DECIDE)), result["id"]
        if ledger[result["id"]].null and result["measured"] is not None:
            assert result["null"]["value"] is not None, result["id"]
    page = page_outputs(nbformat.read(built_book[0] / "book" / "chapters" / f"{slug}.ipynb", as_version=4))
    assert unnamed(page, results["claims"]) == []


@slow
def test_every_verdict_is_explained(built_book, results):
    assert_verdicts_explained(built_book, SLUG, results)


@slow
def test_the_nulls_are_each_models_random_init_seeds(results):
    """The main model's nulls come from its own controls, one row of units per seed."""
    m, seeds, n = results["metrics"], results["params"]["control_seeds"], len(results["inputs"]["sentences"])
    assert m["control"]["seeds"] == seeds
    assert np.shape(m["per_unit"]["control.intra_sentence_cosine"])[:2] == (seeds, n)
    pairs = m["per_unit"]["control.cross_sentence_baseline.pairs"]  # over results.PER_UNIT_INLINE: by shape
    assert tuple(pairs["shape"] if isinstance(pairs, dict) else np.shape(pairs))[:3] == (seeds, n, n)
    controls = [k for k in m["intra_sentence_cosine_by_model"] if k.startswith(f"{results['model']['id']} [")]
    np.testing.assert_allclose(m["control"]["intra_sentence_cosine"],
                               np.mean([m["intra_sentence_cosine_by_model"][k] for k in controls], axis=0))
    gap = next(c for c in results["claims"] if c["id"] == "gap-end" and c["model"] == results["model"]["id"])
    assert gap["null"]["distribution"] == f"{seeds} seeds, unit by unit" and gap["null"]["difference"]


@slow
def test_the_page_reads_without_the_build(built_book):
    """The executed notebook states its numbers as outputs: no glue role in its sources, no error,
    the key measurement checked by hand, a claim in words under each measurement."""
    notebook = json.loads((built_book[0] / "book" / "chapters" / f"{SLUG}.ipynb").read_text())
    sources = "".join("".join(c["source"]) for c in notebook["cells"])
    assert "{glue" not in sources and "ch.glue" not in sources and "lambda" not in sources and "def " not in sources
    outputs = [o for c in notebook["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    texts = "".join(str(o.get("data", {}).get("text/html", "")) + str(o.get("data", {}).get("text/markdown", ""))
                    for o in outputs)
    assert "within-sentence cosine, first sentence, depth L" in texts and "eg-badge" in texts


@slow
def test_exercise_answers_are_computed(results):
    """The exercises' answers: the one-topic set's collapse, easy Recall@1 and hard Recall@3 per depth."""
    L, m, inputs = results["model"]["layers"], results["metrics"], results["inputs"]
    ex = m["exercises"]
    topic = ex["one_topic"]
    assert len(inputs["exercise_one_topic"]) >= 3 and inputs["exercise_one_topic"] != inputs["sentences"]
    assert all(len(topic[key]) == L + 1 for key in ("intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap"))
    gap = np.subtract(topic["intra_sentence_cosine"], topic["cross_sentence_baseline"])
    np.testing.assert_allclose(topic["collapse_gap"], gap)
    easy_1, hard_3 = np.asarray(ex["easy_recall_at_1"]), np.asarray(ex["hard_recall_at_3"])
    assert easy_1.shape == hard_3.shape == (L + 1,) and ((0 <= easy_1) & (easy_1 <= 1)).all()
    # recall can only grow with k: the chapter's run used easy k = 3 and hard k = 1
    assert m["recall_k"] == {"easy": 3, "hard": 1}
    assert (easy_1 <= np.asarray(m["recall_at_k"]["easy"])).all()
    assert (hard_3 >= np.asarray(m["recall_at_k"]["hard"])).all()
