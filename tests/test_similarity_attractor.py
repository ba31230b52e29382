"""Chapter 2: its study functions on hand-computed synthetic pairs, the truncation reading against
a truncated copy of a tiny model, its ledger evaluated on synthetic metrics (every judged claim
gets an interval, location windows from the post, homes and headlines fixed before any run), its
coverage table, then the chapter end to end on the tiny model (the results contract of
book/methods.md, The similarity attractor; a reader's pair; a second model judged)."""

import copy

import nbformat
import numpy as np
import pytest
import yaml

from conftest import ROOT, tiny_parameters
from embedding_geometry.book import claims
from embedding_geometry.book.claims import reduce as reducers
from embedding_geometry.core import activations, corpora, models
from embedding_geometry.studies import similarity_attractor as study
from embedding_geometry.studies import surface_form
from test_layer_by_layer import assert_intervals_and_nulls, assert_verdicts_explained, chapter_results, record

SLUG = "02_similarity_attractor"
MINE = tiny_parameters()[SLUG]["pairs"]
slow = pytest.mark.slow
E1, E2, DIAGONAL = [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]


# --------------------------------------------------------------------------- the study on synthetic pairs

def test_pair_similarity_of_mean_pools_and_cls():
    # depth 0: equal [CLS], word tokens e1 vs e2; depth 1: [CLS] e1 vs e2, word tokens both e1
    pair = record([[E1], [E1]], [[E2], [E1]], cls=[[E1, E1], [E1, E2]])
    m = study.pair_similarity({"p": pair})
    np.testing.assert_allclose(m["cls_cosine"]["p"], [1.0, 0.0], atol=1e-12)
    # mean pools: depth 0 (1, 0) vs (1/2, 1/2) → 1/√2; depth 1 (1, 0) vs (1/2, 1/2) → 1/√2
    np.testing.assert_allclose(m["pair_cosine"]["p"], [1 / np.sqrt(2), 1 / np.sqrt(2)])


def test_attractor_peaks_and_the_hard_easy_gap():
    cosines = {"hard": np.array([0.9, 0.95, 0.8]), "medium": np.array([0.5, 0.7, 0.7]),
               "easy": np.array([0.1, 0.6, 0.2])}
    m = study.attractor(cosines)
    assert m["attractor_peak_depth"] == {"hard": 1, "medium": 1, "easy": 1}  # the first of a tie
    assert m["attractor_peak_relative_depth"] == {"hard": 0.5, "medium": 0.5, "easy": 0.5}
    np.testing.assert_allclose(m["hard_easy_gap"], [0.8, 0.35, 0.6])
    summary = m["hard_easy_gap_summary"]
    assert summary["easy_peak_depth"] == 1 and summary["at_easy_peak"] == pytest.approx(0.35)
    assert (summary["first"], summary["last"]) == (pytest.approx(0.8), pytest.approx(0.6))
    assert summary["narrowing"] == pytest.approx(0.35 / 0.8)
    assert study.peak_depths({"flat": [1, 1, 1], "late": [0, 1, 2]}) == {"flat": 0, "late": 2}


def test_middle_index_reads_a_relative_depth_as_the_claims_engine_does():
    assert [study.middle_index(L) for L in (1, 5, 6, 12, 24)] == [1, 3, 3, 6, 12]  # a tie goes deeper
    assert [study.middle_index(L, study.KEPT) for L in (6, 12, 24)] == [5, 10, 19]  # the truncation's depth kept


def test_maxsim_profile_labels_repeats_and_marks_shared_tokens():
    # a = (the: e1, cat: e2, the: diagonal), b = (the: e1, dog: diagonal), one depth
    pair = record([[E1, E2, DIAGONAL]], [[E1, DIAGONAL]], tokens=[["the", "cat", "the"], ["the", "dog"]])
    m = study.maxsim_profile(pair, words=("cat", "bird"))
    r = 1 / np.sqrt(2)
    assert list(m["maxsim"]) == ["the", "cat", "the₂"]
    np.testing.assert_allclose([m["maxsim"][t][0] for t in m["maxsim"]], [1.0, r, 1.0])
    np.testing.assert_allclose(m["maxsim_mean"], [(2 + r) / 3])
    np.testing.assert_allclose(m["maxsim_spread"], [1 - r])
    np.testing.assert_allclose(m["per_unit"]["maxsim_mean"], [[1.0], [r], [1.0]])
    assert m["maxsim_shared"] == {"first_min": pytest.approx(1.0), "last_min": pytest.approx(1.0),
                                  "last_max": pytest.approx(1.0)}
    assert m["maxsim_final_range"] == {"min": pytest.approx(r), "max": pytest.approx(1.0)}
    assert m["maxsim_discriminative"]["bird"] is None
    np.testing.assert_allclose(m["maxsim_discriminative"]["cat"], [r])


def test_maxsim_shared_is_none_without_a_shared_word():
    pair = record([[E1]], [[E2]], tokens=[["up"], ["down"]])
    assert study.maxsim_profile(pair)["maxsim_shared"] == {"first_min": None, "last_min": None, "last_max": None}


def test_final_depth_scores_and_differences():
    metrics = {"pair_cosine": {"hard": [0.5, 0.8]}, "cls_cosine": {"hard": [1.0, 0.9]}, "maxsim_mean": [0.7, 0.82],
               "per_unit": {"maxsim_mean": [[0.6, 0.74], [0.8, 0.9]]}}
    m = study.final_depth(metrics)
    assert m["final_depth_scores"] == {"mean pool": 0.8, "CLS": 0.9, "mean MaxSim": 0.82}
    assert m["final_depth_differences"]["cls_minus_mean_pool"] == pytest.approx(0.1)
    assert m["final_depth_differences"]["maxsim_minus_mean_pool"] == pytest.approx(0.02)
    per_token = m["per_unit"]["final_depth_differences.maxsim_minus_mean_pool"]  # each token's final MaxSim − 0.8
    np.testing.assert_allclose(per_token, [-0.06, 0.1])
    assert per_token.mean() == pytest.approx(m["final_depth_differences"]["maxsim_minus_mean_pool"])


def test_maxsim_rows_separate_shared_and_discriminative_tokens():
    # a = (the: e1, up: e2), b = (the: e1, down: diagonal): "the" is shared (MaxSim 1), "up" is not (1/√2)
    pair = record([[E1, E2]], [[E1, DIAGONAL]], tokens=[["the", "up"], ["the", "down"]])
    every, shared, discriminative = study.maxsim_rows(pair).values()
    np.testing.assert_allclose(shared, [[1.0]])
    np.testing.assert_allclose(discriminative, [[1 / np.sqrt(2)]])
    np.testing.assert_allclose(every, [[(1 + 1 / np.sqrt(2)) / 2]])
    with pytest.raises(ValueError, match="shared and discriminative"):
        study.maxsim_rows(record([[E1]], [[E1]], tokens=[["same"], ["same"]]))


def two_hard_pairs(depths: int = 1):
    """Hard pair 0: (the e1, up e2) vs (the e1, down diagonal); hard pair 1: (the e1, up e1) vs
    (the e2, down e2); a [CLS] of e1 in every text; the same states at every depth."""
    names = [["the", "up"], ["the", "down"]] * 2
    texts = [[[E1, E2]] * depths, [[E1, DIAGONAL]] * depths, [[E1, E1]] * depths, [[E2, E2]] * depths]
    return record(*texts, tokens=names, cls=[[E1] * 4] * depths)


def test_pair_sets_per_pair_units_and_their_means():
    hard = two_hard_pairs()
    easy = record([[E1]], [[E2]], [[E1]], [[E1]], cls=[[E1] * 4])
    m = study.pair_sets(hard, easy)
    sets, per_pair = m["pair_sets"], m["per_unit"]
    # mean pools: pair 0 (2, 1)/3 vs (3, 1)/3 → 7/√50; pair 1 (3, 0)/3 vs (1, 2)/3 → 1/√5
    hard_cosine, easy_cosine = np.array([7 / np.sqrt(50), 1 / np.sqrt(5)]), np.array([1 / np.sqrt(2), 1.0])
    np.testing.assert_allclose(per_pair["pair_sets.hard"][:, 0], hard_cosine)
    np.testing.assert_allclose(per_pair["pair_sets.easy"][:, 0], easy_cosine)
    np.testing.assert_allclose(per_pair["pair_sets.gap"][:, 0], hard_cosine - easy_cosine)
    # MaxSim a → b: "the" finds e1 (1) then only e2 (0); "up" best matches diagonal (1/√2), then e2 (0)
    np.testing.assert_allclose(per_pair["pair_sets.maxsim_shared"][:, 0], [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(per_pair["pair_sets.maxsim_discriminative"][:, 0], [1 / np.sqrt(2), 0.0], atol=1e-12)
    np.testing.assert_allclose(per_pair["pair_sets.cls_minus_mean_pool"], 1 - hard_cosine)  # equal [CLS] states
    # mean MaxSim of a's two tokens minus the mean-pool cosine, at the (only) depth
    np.testing.assert_allclose(per_pair["pair_sets.maxsim_minus_mean_pool"],
                               [(1 + 1 / np.sqrt(2)) / 2 - hard_cosine[0], 0.0 - hard_cosine[1]], atol=1e-12)
    np.testing.assert_allclose(per_pair["pair_sets.hard_middle_rise"], [0.0, 0.0])  # one depth: middle = first
    assert sets["n_pairs"] == 2
    for key in ("hard", "easy", "gap", "maxsim_shared", "maxsim_discriminative", "maxsim_gap", "cls_minus_mean_pool",
                "maxsim_minus_mean_pool", "hard_middle_rise"):
        np.testing.assert_allclose(per_pair[f"pair_sets.{key}"].mean(axis=0), sets[key])
    np.testing.assert_allclose(sets["gap_relative"], [1.0])  # one depth: the gap over itself
    gap, first = per_pair["pair_sets.gap"], per_pair["pair_sets.gap_first"]
    np.testing.assert_allclose(gap.mean(axis=0) / first.mean(axis=0), sets["gap_relative"])
    with pytest.raises(ValueError, match="as many pairs"):
        study.pair_sets(hard, record([[E1]], [[E2]], cls=[[E1] * 2]))


def test_centroid_ratio_is_the_centroids_distance_over_the_tokens_spread():
    # pair 0: a = (e1, e2), centroid (½, ½), each token √½ from it; b = (e1, diagonal), centroid (1, ½),
    # each token ½ from it: ½ / ((√½ + ½) / 2) = 2 (√2 − 1); pair 1: every token on its centroid (no spread)
    ratio = study.centroid_ratio(two_hard_pairs(depths=2))
    np.testing.assert_allclose(ratio[0], [2 * (np.sqrt(2) - 1)] * 2)
    assert np.all(np.isnan(ratio[1]))
    moved = record([[E1, E2], [E1, E2]], [[E1, E2], [E2, E2]], tokens=[["a", "b"], ["a", "c"]])
    np.testing.assert_allclose(study.centroid_ratio(moved)[0], [0.0, np.sqrt(0.5) / (np.sqrt(0.5) / 2)])
    units = study.pair_sets(two_hard_pairs(), record([[E1, E2]], [[E1, E2]], [[E1]], [[E2]]))["per_unit"]
    np.testing.assert_allclose(units["pair_sets.easy_centroid_ratio"][0], [0.0])  # the same two tokens
    a, b = [[E1, E2], [E1, E2], [E1, E2]], [[E1, E2], [E2, E2], [E2, E2]]  # two pairs: the same pair twice
    apart = record(a, b, a, b, tokens=[["a", "b"], ["a", "c"]] * 2)
    change = study.pair_sets(two_hard_pairs(depths=3), apart)["per_unit"]["pair_sets.easy_centroid_middle_change"]
    np.testing.assert_allclose(change, [2.0, 2.0])  # ratio 0 at depth 0, 2 at the middle depth (1 of 2)


def test_hard_middle_rise_is_the_middle_depth_minus_depth_zero():
    # one hard pair over depths 0, 1, 2 (middle depth 1): mean pools e1 vs e2, then e1 vs e1, then e1 vs e2
    hard = record([[E1, E1], [E1, E1], [E1, E1]], [[E2, E2], [E1, E1], [E2, E2]], tokens=[["s", "x"], ["s", "y"]])
    easy = record([[E1]] * 3, [[DIAGONAL]] * 3)
    m = study.pair_sets(hard, easy)
    np.testing.assert_allclose(m["per_unit"]["pair_sets.hard"][0], [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(m["pair_sets"]["hard_middle_rise"], 1.0)


def test_control_stacks_seeds_pair_by_pair_or_is_none():
    assert study.control() == {"control": None}
    seed_0 = (record([[E1]], [[E2]], [[E1]], [[E1]]), record([[E1]], [[E1]], [[E2]], [[E2]]))
    seed_1 = (record([[E1]], [[E1]], [[E1]], [[E1]]), record([[E1]], [[E2]], [[E2]], [[E2]]))
    found = study.control([seed_0, seed_1])
    hard, easy = found["per_unit"]["control.pair_sets.hard"], found["per_unit"]["control.pair_sets.easy"]
    assert hard.shape == easy.shape == (2, 2, 1)  # [seeds, pairs, depths]
    np.testing.assert_allclose(hard[:, :, 0], [[0.0, 1.0], [1.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(found["control"]["pair_sets"]["hard"], [0.75])
    np.testing.assert_allclose(found["control"]["pair_sets"]["easy"], [(1 + 1 + 0 + 1) / 4])
    assert found["control"]["n_seeds"] == 2


def test_truncation_margins_recall_and_losses_by_hand():
    # 2 queries, 2 hard pairs (document, negation), depths 0, 1, 2; kept 0.5 → depth 1 of 2.
    # Depth 2: q0 = e1 matches d0 = e1 (n0 = diagonal); q1 = e2 matches d1 = e2 (n1 = diagonal).
    # Depths 0 and 1: every document and negation is the diagonal, so margins are 0 and ties rank pessimistically.
    q = record([[E1]] * 3, [[E2]] * 3)
    diag = [[DIAGONAL]] * 3
    docs = record([[DIAGONAL], [DIAGONAL], [E1]], diag, [[DIAGONAL], [DIAGONAL], [E2]], diag)
    m = study.truncation(q, docs, kept=0.5)
    t, units = m["truncation"], m["per_unit"]
    r = 1 / np.sqrt(2)
    np.testing.assert_allclose(units["truncation.hard_margin"], [[0, 0, 1 - r], [0, 0, 1 - r]], atol=1e-12)
    np.testing.assert_allclose(units["truncation.easy_margin"], [[0, 0, 1], [0, 0, 1]], atol=1e-12)  # d1 ⟂ q0
    np.testing.assert_allclose(units["truncation.recall"], [[0, 0, 1], [0, 0, 1]])
    assert (t["cut_depth"], t["blocks_dropped"], t["kept"]) == (1, 1, 0.5)
    np.testing.assert_allclose(units["truncation.hard_margin_lost"], [1 - r, 1 - r])
    np.testing.assert_allclose(units["truncation.specific_loss"], [(1 - r) - 1] * 2)
    np.testing.assert_allclose(units["truncation.recall_lost"], [1, 1])
    for key in ("hard_margin", "easy_margin", "recall", "hard_margin_lost", "recall_lost", "specific_loss"):
        np.testing.assert_allclose(units[f"truncation.{key}"].mean(axis=0), t[key])
    with pytest.raises(ValueError, match="one hard pair per query"):
        study.truncation(q, record([[E1]] * 3, [[E2]] * 3))


def test_exercises_answers():
    reversal = record([[E1], [E1]], [[E1], [E2]])  # cosine 1 then 0: peak at depth 0
    paraphrase = record([[E1], [E1]], [[E2], [DIAGONAL]])  # cosine 0 then 1/√2
    negation = record([[E1, E2]], [[E1, E2, [-1.0, 0.0]]], tokens=[["up", "now"], ["up", "now", "not"]])
    ex = study.exercises(reversal, paraphrase, negation, hard_cosine=np.array([0.5, 0.5]))["exercises"]
    np.testing.assert_allclose(ex["reversal_cosine"], [1.0, 0.0], atol=1e-12)
    assert ex["reversal_peak_depth"] == 0 and ex["paraphrase_peak_depth"] == 1
    assert ex["paraphrase_above_hard_depths"] == 1
    final = ex["negation_maxsim_final"]  # a → b finds both words; b → a: "not" (−e1) matches e2 best, at 0
    assert (final["a_to_b_mean"], final["a_to_b_min"]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert final["b_to_a"] == {"up": pytest.approx(1.0), "now": pytest.approx(1.0),
                               "not": pytest.approx(0.0, abs=1e-12)}


def test_inputs_add_the_readers_pairs_and_a_named_pair_replaces_the_posts():
    default = study.inputs()
    assert list(default["pairs"]) == ["hard", "medium", "easy"] and default["maxsim_pair"] == default["pairs"]["hard"]
    mine = study.inputs({"hard": ["a b", "b a"], "mine": ["c", "d"]})
    assert mine["pairs"]["hard"] == ["a b", "b a"] == mine["maxsim_pair"] and "mine" in mine["pairs"]
    sets = mine["pair_sets"]
    assert sets == default["pair_sets"] and len(sets["hard"]) == len(sets["easy"]) and len(sets["hard"]) % 2 == 0
    hard_set = corpora.retrieval_set("hard")
    # hard pair i is item i's document and its negation; query i paraphrases that document
    assert sets["hard"][0::2] == [hard_set["pool"][r] for r in hard_set["relevant"]]
    assert sets["hard"][1::2] == [hard_set["pool"][r + 1] for r in hard_set["relevant"]]
    assert mine["queries"] == hard_set["queries"] and len(mine["queries"]) == len(sets["hard"]) // 2
    assert sets["easy"] == corpora.layer_by_layer_sentences()  # chapter 1's list: its forward pass is shared
    assert mine["animation"] == ["a b", "b a"] + default["pairs"]["easy"]
    assert mine["exercise_pairs"]["paraphrase"] == [corpora.REFERENCE_SENTENCES["surged"], study.PARAPHRASE]


class FakeModel:
    def __init__(self, source):
        self.info = type("Info", (), {"source": source})()


def test_forward_passes_run_the_sets_on_a_control_and_everything_on_a_trained_model():
    calls = []

    def extract(texts, model, source):
        calls.append((tuple(texts), source))
        return len(texts)

    texts = study.inputs()
    control = study.forward_passes(extract, FakeModel("control"), texts)
    assert set(control) == {"hard", "easy"} and control["hard"] == len(texts["pair_sets"]["hard"])
    trained = study.forward_passes(extract, FakeModel("embedded"), texts)
    assert set(trained) == {"hard", "easy", "queries", "pairs", "corpus"}
    assert set(trained["pairs"]) == set(texts["pairs"])
    assert (tuple(texts["queries"]), "queries") in calls and (tuple(texts["pairs"]["hard"]), "pairs") in calls
    assert (tuple(texts["corpus"]), "corpus") in calls and texts["corpus"] == surface_form.corpus_texts()


def synthetic_passes(seed: int, depths: int = 4, n_pairs: int = 6) -> dict:
    """Random records shaped as one model's forward passes: n_pairs hard pairs (a shared and a
    differing word), as many easy pairs, as many queries, the post's pairs and eight corpus texts."""
    rng = np.random.default_rng(seed)

    def random(n, tokens):
        return record(*rng.normal(size=(n, depths, len(tokens[0]), 6)), cls=rng.normal(size=(depths, n, 6)),
                      tokens=tokens * (n // len(tokens)))

    post = {"hard": random(2, [["the", "surged", "cut"], ["the", "plunged", "raised"]]),
            "medium": random(2, [["a"], ["b"]]), "easy": random(2, [["a"], ["b"]])}
    return {"hard": random(2 * n_pairs, [["the", "up"], ["the", "down"]]),
            "easy": random(2 * n_pairs, [["a", "x"], ["b", "y"]]),  # two words: a spread around each centroid
            "queries": random(n_pairs, [["q"]]), "pairs": post,
            "corpus": random(8, [["the", "cat"], ["a", "dog"], ["the", "dog"], ["a", "cat"]])}


def synthetic_metrics(seed: int = 0) -> dict:
    """Every metric chapter 2's ledger reads, from :func:`study.measure` on random records with
    three random controls."""
    return study.measure(synthetic_passes(seed), [synthetic_passes(seed + s + 1) for s in range(3)])


def test_measure_assembles_every_part_and_by_model_groups_controls_by_their_model():
    m = synthetic_metrics()
    for key in ("pair_cosine", "attractor_peak_depth", "maxsim", "final_depth_scores", "pair_sets", "truncation",
                "control", "hard_negative_training", "backbone_attractor", "surface_form"):
        assert key in m, key
    assert m["per_unit"]["control.pair_sets.hard"].shape == (3, 6, 4) and m["control"]["n_seeds"] == 3
    names = ["a", "b", "a [random-init control, seed 0]", "b [random-init control, seed 0]",
             "b [random-init control, seed 1]"]
    passes = {name: synthetic_passes(i) for i, name in enumerate(names)}
    ran = {name: {"source": "control" if "control" in name else "embedded"} for name in passes}
    found = study.by_model(passes, ran)
    assert list(found) == ["a", "b"]
    assert (found["a"]["control"]["n_seeds"], found["b"]["control"]["n_seeds"]) == (1, 2)
    np.testing.assert_allclose(found["b"]["pair_sets"]["hard"], study.measure(passes["b"])["pair_sets"]["hard"])


# --------------------------------------------------------------------------- the truncated model (tiny)

def test_a_model_with_its_last_blocks_dropped_gives_the_mean_pool_of_that_depth(tiny_bert):
    """What the truncation test reads: the model's own sentence embedding (sentence-transformers,
    mean pooling) with its last k blocks removed is the mean pool m_{L − k} of the full model."""
    texts = study.inputs()["pairs"]["hard"]
    full = activations.extract(tiny_bert, texts, cache=False, progress=False)
    L = full.n_layers
    pipeline = models.sentence_transformer(tiny_bert)
    for k in range(1, L + 1):
        truncated = copy.deepcopy(pipeline)
        encoder = truncated[0].auto_model.encoder
        encoder.layer = encoder.layer[:L - k]
        truncated[0].auto_model.config.num_hidden_layers = L - k
        own = truncated.encode(texts, convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False)
        np.testing.assert_allclose(own, full.mean_pool("all")[L - k], rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- the ledger on synthetic metrics

def test_every_judged_claim_of_the_ledger_gets_an_interval_and_its_null():
    assert_intervals_and_nulls(SLUG, synthetic_metrics())


def test_claims_about_one_pair_are_descriptions_or_by_construction():
    """A claim on the post's single pairs has no sampling unit: it is shown, not judged."""
    for claim in claims.load(SLUG).claims:
        single = claim.metric.split(".")[0] in ("pair_cosine", "cls_cosine", "hard_easy_gap", "maxsim_shared",
                                                 "maxsim_discriminative", "maxsim_spread", "maxsim_final_range",
                                                 "maxsim_mean", "hard_easy_gap_relative", "final_depth_differences")
        if single:
            assert claim.description or claim.by_construction, claim.id


def test_the_peak_claims_test_location_in_the_posts_window():
    """A peak at L12–L13 of 24 is a location claim; its window is the post's two depths on relative
    depth, unpadded: [12 / 24, 13 / 24]. The middle depth of 6 and of 12 lies in it; its neighbours
    do not."""
    found = {claim.id: claim for claim in claims.load(SLUG).claims}
    for claim_id in ("hard-pairs-peak", "easy-pairs-peak"):
        test, args = found[claim_id].test
        assert test == reducers.LOCATION and args["at"] == "max"
        np.testing.assert_allclose(args["window"], [12 / 24, 13 / 24], atol=1e-5)
        a, b = args["window"]
        for L, inside, outside in ((6, [3], [2, 4]), (12, [6], [5, 7]), (24, [12, 13], [11, 14])):
            assert all(a - 1e-9 <= depth / L <= b + 1e-9 for depth in inside)
            assert not any(a - 1e-9 <= depth / L <= b + 1e-9 for depth in outside)


def test_control_nulls_are_seed_distributions_compared_pair_by_pair():
    for claim in claims.load(SLUG).claims:
        if claim.null:
            assert claim.null["kind"] == "control" and "seeds" in claim.null["samples"], claim.id


def test_headlines_and_homes_are_fixed_in_the_ledger():
    """Headlines are the post's title, opening and takeaways, chosen before any run; the claims
    seed 001 made first are judged here and counted in chapter 1, and the claim about hard
    negatives, which needs training, lives in chapter 7."""
    ledger = claims.load(SLUG).claims
    assert {c.id for c in ledger if c.headline} == {
        "hard-pairs-peak", "easy-pairs-converge", "gap-pairs-narrowing", "probing-worse-middle",
        "final-blocks-hard-negatives"}
    assert {c.id for c in ledger if c.home} == {"negation-start", "negation-peak", "negation-end",
                                                "negation-twins-peak", "negation-twins-fall"}
    assert {c.home for c in ledger if c.home} == {"01_layer_by_layer"}


def test_a_failing_headline_is_still_a_headline():
    """The findings box shows every headline whatever its verdict: flipping a claim's outcome
    (here by giving the hard pairs a flat, then a late curve) leaves the headline set unchanged."""
    from embedding_geometry.book.claims import words

    ledger = claims.load(SLUG)
    heads = []
    for flat in (False, True):
        metrics = synthetic_metrics()
        if flat:
            units = metrics["per_unit"]["pair_sets.hard"]
            units[:] = np.linspace(0.0, 1.0, units.shape[1])  # a rising curve: peaks at the last depth
            metrics["pair_sets"]["hard"] = units.mean(axis=0)
        found = claims.records(claims.evaluate(ledger, metrics, "synthetic", resamples=5000,
                                               family=claims.family_size()))
        heads.append(([r["id"] for r in words.headlines(found)],
                      {r["id"]: r["verdict"] for r in found}["hard-pairs-peak"]))
    assert heads[0][0] == heads[1][0] and heads[1][1] == "does not hold"


# --------------------------------------------------------------------------- the coverage table

def test_the_coverage_table_lists_every_figure_and_claim_with_a_status_and_a_place():
    from embedding_geometry.book.coverage import STATUSES, path as coverage_path

    path = coverage_path(SLUG)
    coverage = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert coverage["seed"].startswith("000")
    kinds = [item["kind"] for item in coverage["items"]]
    assert kinds.count("figure") == 4  # the post's four rendered charts
    for item in coverage["items"]:
        chapter = item.get("chapter", SLUG)  # an item judged in another chapter names it
        cells = nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4).cells
        assert item["status"] in STATUSES, item
        if item["status"] != "reproduced":
            assert item.get("why"), item
        assert item["where"] in "\n".join(cell.source for cell in cells), item["where"]
        assert set(item.get("claims", [])) <= {c.id for c in claims.load(chapter).claims}, item


# --------------------------------------------------------------------------- the chapter end to end (slow)

@pytest.fixture(scope="module")
def results(built_book):
    return chapter_results(built_book, SLUG)


@slow
def test_pairs_are_recorded_and_a_readers_pair_is_covered(results):
    L = results["model"]["layers"]
    pairs, m = results["inputs"]["pairs"], results["metrics"]
    assert pairs == {**corpora.attractor_pairs(), **MINE}
    assert list(pairs)[:3] == ["hard", "medium", "easy"]
    for name in pairs:
        assert len(m["pair_cosine"][name]) == len(m["cls_cosine"][name]) == L + 1
        assert m["attractor_peak_depth"][name] == int(np.argmax(m["pair_cosine"][name]))
        assert m["attractor_peak_relative_depth"][name] == pytest.approx(m["attractor_peak_depth"][name] / L)


@slow
def test_hard_easy_gap_and_its_summary(results):
    m = results["metrics"]
    gap = np.subtract(m["pair_cosine"]["hard"], m["pair_cosine"]["easy"])
    np.testing.assert_allclose(m["hard_easy_gap"], gap)
    summary = m["hard_easy_gap_summary"]
    assert summary["easy_peak_depth"] == m["attractor_peak_depth"]["easy"]
    assert summary["at_easy_peak"] == pytest.approx(gap[summary["easy_peak_depth"]])
    assert summary["narrowing"] == pytest.approx(summary["at_easy_peak"] / gap[0])


@slow
def test_maxsim_rows_are_the_hard_pair_tokens(results, tiny_bert_dir):
    L, m = results["model"]["layers"], results["metrics"]
    loaded = models.load(str(tiny_bert_dir), device="cpu")
    record = activations.extract(loaded, results["inputs"]["maxsim_pair"], cache=False, progress=False)
    words_a = [t for t, w in zip(record.tokens[record.rows(0)], record.word_mask[record.rows(0)]) if w]
    assert list(m["maxsim"]) == activations.unique_labels(words_a) and "the₂" in m["maxsim"]
    rows = np.array(list(m["maxsim"].values()))
    assert rows.shape == (len(words_a), L + 1)
    np.testing.assert_allclose(m["maxsim_mean"], rows.mean(axis=0))
    np.testing.assert_allclose(m["maxsim_spread"], rows.max(axis=0) - rows.min(axis=0))
    assert m["maxsim_discriminative"]["surged"] == m["maxsim"]["surged"]
    assert m["maxsim_shared"]["first_min"] == pytest.approx(1.0)  # shared tokens are identical at depth 0
    # an independent computation of one row: "surged" against every word token of the other sentence
    a = record.token_states(L, 0, "word")[words_a.index("surged")].astype(np.float64)
    b = record.token_states(L, 1, "word").astype(np.float64)
    best = max(a @ y / (np.linalg.norm(a) * np.linalg.norm(y)) for y in b)
    assert m["maxsim"]["surged"][L] == pytest.approx(best, abs=1e-5)


@slow
def test_final_depth_scores_and_cls(results):
    m = results["metrics"]
    final = m["final_depth_scores"]
    assert final == {"mean pool": m["pair_cosine"]["hard"][-1], "CLS": m["cls_cosine"]["hard"][-1],
                     "mean MaxSim": m["maxsim_mean"][-1]}
    assert m["final_depth_differences"]["cls_minus_mean_pool"] == pytest.approx(final["CLS"] - final["mean pool"])
    assert m["cls_cosine"]["hard"][0] == pytest.approx(1.0)  # both [CLS] states are the same embedding at depth 0


@slow
def test_sets_truncation_and_controls_cover_their_units(results):
    L, m = results["model"]["layers"], results["metrics"]
    n = m["pair_sets"]["n_pairs"]
    assert n == len(results["inputs"]["queries"]) == len(results["inputs"]["pair_sets"]["hard"]) // 2
    assert np.shape(m["per_unit"]["pair_sets.hard"]) == (n, L + 1)
    assert np.shape(m["per_unit"]["truncation.hard_margin"]) == (n, L + 1)
    assert m["truncation"]["cut_depth"] == study.middle_index(L, study.KEPT)
    seeds = results["params"]["control_seeds"]
    assert np.shape(m["per_unit"]["control.pair_sets.hard"]) == (seeds, n, L + 1) and m["control"]["n_seeds"] == seeds


@slow
def test_claims_cover_the_ledger_on_both_models(results):
    ledger = claims.load(SLUG)
    judged = list(dict.fromkeys(c["model"] for c in results["claims"]))
    assert judged == [results["model"]["id"], *results["params"]["models"]]
    for model in judged:
        assert [c["id"] for c in results["claims"] if c["model"] == model] == [c.id for c in ledger.claims]
    assert all(c["numeric_verdict"] is None for c in results["claims"])  # neither model is a published model
    assert {m["id"] for m in results["models"]} >= set(judged)  # every model's hash is recorded


@slow
def test_every_verdict_is_explained(built_book, results):
    assert_verdicts_explained(built_book, SLUG, results)
    assert results["metrics"]["control"] is not None  # random_control is on by default: the nulls exist


@slow
def test_exercise_answers_are_computed(results, tiny_bert_dir):
    """The exercises' answers: a role reversal's and a paraphrase's cosine per depth, MaxSim against a negation."""
    L, m = results["model"]["layers"], results["metrics"]
    ex, pairs = m["exercises"], results["inputs"]["exercise_pairs"]
    reference = corpora.REFERENCE_SENTENCES
    assert pairs["reversal"] == [reference["acquirer"], reference["acquired"]]
    assert pairs["paraphrase"][0] == pairs["negation"][0] == reference["surged"]
    assert len(ex["reversal_cosine"]) == len(ex["paraphrase_cosine"]) == L + 1
    above = np.asarray(ex["paraphrase_cosine"]) > np.asarray(m["pair_cosine"]["hard"])
    assert ex["paraphrase_above_hard_depths"] == int(above.sum())
    # an independent computation: the role reversal's mean pools at the final depth
    tiny = models.load(str(tiny_bert_dir), device="cpu")
    record = activations.extract(tiny, pairs["reversal"], cache=False, progress=False)
    a, b = (record.token_states(L, i, "all").astype(np.float64).mean(axis=0) for i in (0, 1))
    assert ex["reversal_cosine"][L] == pytest.approx(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), abs=1e-5)
    negation = ex["negation_maxsim_final"]
    assert negation["a_to_b_min"] <= negation["a_to_b_mean"] <= 1 + 1e-6
    record = activations.extract(tiny, pairs["negation"], cache=False, progress=False)
    words_b = [t for t, w in zip(record.tokens[record.rows(1)], record.word_mask[record.rows(1)]) if w]
    assert list(negation["b_to_a"]) == activations.unique_labels(words_b)
