"""Chapter 2: its study functions on hand-computed synthetic pairs, its ledger evaluated on
synthetic metrics (every judged claim gets an interval), then the chapter end to end on the tiny
model (the results contract of book/methods.md, The similarity attractor; a reader's pair)."""

import numpy as np
import pytest

from conftest import TINY_CHAPTER_PARAMS
from embedding_geometry.book import claims
from embedding_geometry.core import activations, corpora, models
from embedding_geometry.studies import similarity_attractor as study
from test_layer_by_layer import assert_intervals_and_nulls, assert_verdicts_explained, chapter_results, record

SLUG = "02_similarity_attractor"
MINE = TINY_CHAPTER_PARAMS[SLUG]["pairs"]
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
    cosines = {"hard": np.array([0.9, 0.95, 0.8]), "medium": np.array([0.5, 0.7, 0.7]), "easy": np.array([0.1, 0.6, 0.2])}
    m = study.attractor(cosines)
    assert m["attractor_peak_depth"] == {"hard": 1, "medium": 1, "easy": 1}  # the first of a tie
    assert m["attractor_peak_relative_depth"] == {"hard": 0.5, "medium": 0.5, "easy": 0.5}
    np.testing.assert_allclose(m["hard_easy_gap"], [0.8, 0.35, 0.6])
    summary = m["hard_easy_gap_summary"]
    assert summary["easy_peak_depth"] == 1 and summary["at_easy_peak"] == pytest.approx(0.35)
    assert (summary["first"], summary["last"]) == (pytest.approx(0.8), pytest.approx(0.6))
    assert summary["narrowing"] == pytest.approx(0.35 / 0.8)
    assert study.peak_depths({"flat": [1, 1, 1], "late": [0, 1, 2]}) == {"flat": 0, "late": 2}


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
    assert m["maxsim_shared"] == {"first_min": pytest.approx(1.0), "last_min": pytest.approx(1.0), "last_max": pytest.approx(1.0)}
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


def test_split_maxsim_separates_shared_and_discriminative_tokens():
    # a = (the: e1, up: e2), b = (the: e1, down: diagonal): "the" is shared (MaxSim 1), "up" is not (1/√2)
    pair = record([[E1, E2]], [[E1, DIAGONAL]], tokens=[["the", "up"], ["the", "down"]])
    shared, discriminative = study.split_maxsim(pair)
    np.testing.assert_allclose(shared, [1.0])
    np.testing.assert_allclose(discriminative, [1 / np.sqrt(2)])
    with pytest.raises(ValueError, match="shared and discriminative"):
        study.split_maxsim(record([[E1]], [[E1]], tokens=[["same"], ["same"]]))


def test_pair_sets_per_pair_units_and_their_means():
    # one depth, a [CLS] of e1 in every text. Hard pair 0: (the e1, up e2) vs (the e1, down diagonal);
    # hard pair 1: (the e1, up e1) vs (the e2, down e2). Easy pairs: e1 vs e2, e1 vs e1.
    names = [["the", "up"], ["the", "down"]] * 2
    hard = record([[E1, E2]], [[E1, DIAGONAL]], [[E1, E1]], [[E2, E2]], tokens=names, cls=[[E1] * 4])
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
    assert sets["n_pairs"] == 2
    for key in ("hard", "easy", "gap", "maxsim_shared", "maxsim_discriminative", "maxsim_gap", "cls_minus_mean_pool"):
        np.testing.assert_allclose(per_pair[f"pair_sets.{key}"].mean(axis=0), sets[key])
    np.testing.assert_allclose(sets["gap_relative"], [1.0])  # one depth: the gap over itself
    gap, first = per_pair["pair_sets.gap"], per_pair["pair_sets.gap_first"]
    np.testing.assert_allclose(gap.mean(axis=0) / first.mean(axis=0), sets["gap_relative"])
    with pytest.raises(ValueError, match="as many pairs"):
        study.pair_sets(hard, record([[E1]], [[E2]], cls=[[E1] * 2]))


def test_control_is_the_sets_mean_cosine_or_none():
    assert study.control() == {"control": None}
    hard, easy = record([[E1]], [[E2]], [[E1]], [[E1]]), record([[E1]], [[E1]], [[E2]], [[E2]])
    found = study.control(hard, easy)["control"]["pair_sets"]
    np.testing.assert_allclose(found["hard"], [0.5], atol=1e-12)
    np.testing.assert_allclose(found["easy"], [1.0])


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
    assert final["b_to_a"] == {"up": pytest.approx(1.0), "now": pytest.approx(1.0), "not": pytest.approx(0.0, abs=1e-12)}


def test_inputs_add_the_readers_pairs_and_a_named_pair_replaces_the_posts():
    default = study.inputs()
    assert list(default["pairs"]) == ["hard", "medium", "easy"] and default["maxsim_pair"] == default["pairs"]["hard"]
    mine = study.inputs({"hard": ["a b", "b a"], "mine": ["c", "d"]})
    assert mine["pairs"]["hard"] == ["a b", "b a"] == mine["maxsim_pair"] and "mine" in mine["pairs"]
    sets = mine["pair_sets"]
    assert sets == default["pair_sets"] and len(sets["hard"]) == len(sets["easy"]) and len(sets["hard"]) % 2 == 0
    pool = corpora.retrieval_set("hard")["pool"]
    assert sets["hard"][:2] == pool[:2] and sets["easy"][:2] == corpora.layer_by_layer_sentences()[:2]
    assert mine["animation"] == ["a b", "b a"] + default["pairs"]["easy"]
    assert mine["exercise_pairs"]["paraphrase"] == [corpora.REFERENCE_SENTENCES["surged"], study.PARAPHRASE]


# --------------------------------------------------------------------------- the ledger on synthetic metrics

def synthetic_metrics(seed: int = 0) -> dict:
    """Every metric chapter 2's ledger reads, computed by the study on random pairs, as the
    notebook assembles them (``ch.add_metrics``: per_unit merged)."""
    rng = np.random.default_rng(seed)
    random = lambda n, tokens: record(*rng.normal(size=(n, 4, len(tokens[0]), 6)), cls=rng.normal(size=(4, n, 6)),
                                      tokens=tokens * (n // len(tokens)))
    post = random(2, [["the", "surged", "cut"], ["the", "plunged", "raised"]])
    twins = random(6, [["the", "up"], ["the", "down"]])
    metrics: dict = {"per_unit": {}}
    easy = random(2, [["a"], ["b"]])
    for part in (study.pair_similarity({"hard": post, "medium": easy, "easy": easy}), study.maxsim_profile(post),
                 study.pair_sets(twins, random(6, [["a"], ["b"]])), study.control(twins, twins)):
        metrics["per_unit"].update(part.pop("per_unit", {}))
        metrics.update(part)
    metrics.update(study.attractor(metrics["pair_cosine"]))
    final = study.final_depth(metrics)
    metrics["per_unit"].update(final.pop("per_unit"))
    return {**metrics, **final}


def test_every_judged_claim_of_the_ledger_gets_an_interval_and_its_null():
    assert_intervals_and_nulls(SLUG, synthetic_metrics())


def test_claims_about_one_pair_are_descriptions_or_by_construction():
    """A claim on the post's single pairs has no sampling unit: it is shown, not judged."""
    for claim in claims.load(SLUG).claims:
        single = claim.metric.split(".")[0] in ("pair_cosine", "cls_cosine", "hard_easy_gap", "maxsim_shared",
                                                 "maxsim_discriminative", "maxsim_spread", "maxsim_final_range")
        if single:
            assert claim.description or claim.by_construction, claim.id


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
def test_claims_cover_the_ledger(results):
    ledger = claims.load(SLUG)
    assert [c["id"] for c in results["claims"]] == [c.id for c in ledger.claims]
    assert all(c["numeric_verdict"] is None for c in results["claims"])  # the tiny model is no published model
    assert all(c["measured"] is not None for c in results["claims"])


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
    record = activations.extract(models.load(str(tiny_bert_dir), device="cpu"), pairs["reversal"], cache=False, progress=False)
    a, b = (record.token_states(L, i, "all").astype(np.float64).mean(axis=0) for i in (0, 1))
    assert ex["reversal_cosine"][L] == pytest.approx(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), abs=1e-5)
    negation = ex["negation_maxsim_final"]
    assert negation["a_to_b_min"] <= negation["a_to_b_mean"] <= 1 + 1e-6
    record = activations.extract(models.load(str(tiny_bert_dir), device="cpu"), pairs["negation"], cache=False, progress=False)
    words_b = [t for t, w in zip(record.tokens[record.rows(1)], record.word_mask[record.rows(1)]) if w]
    assert list(negation["b_to_a"]) == activations.unique_labels(words_b)
