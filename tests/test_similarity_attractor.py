"""Chapter 2 end to end on the tiny model: the results contract of METHODS.md §2, a reader's pair."""

import json

import numpy as np
import pytest

from conftest import TINY_CHAPTER_PARAMS
from embedding_geometry.core import activations, corpora, models
from embedding_geometry.book import charts, claims

pytestmark = pytest.mark.slow
SLUG = "02_similarity_attractor"
MINE = TINY_CHAPTER_PARAMS[SLUG]["pairs"]


@pytest.fixture(scope="module")
def results(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())


def test_pairs_are_recorded_and_a_readers_pair_is_covered(results):
    L = results["model"]["layers"]
    pairs, m = results["inputs"]["pairs"], results["metrics"]
    assert pairs == {**corpora.attractor_pairs(), **MINE}
    assert list(pairs)[:3] == ["hard", "medium", "easy"]
    for name in pairs:
        assert len(m["pair_cosine"][name]) == len(m["cls_cosine"][name]) == L + 1
        assert m["attractor_peak_depth"][name] == int(np.argmax(m["pair_cosine"][name]))
        assert m["attractor_peak_relative_depth"][name] == pytest.approx(m["attractor_peak_depth"][name] / L)


def test_hard_easy_gap_and_its_summary(results):
    m = results["metrics"]
    gap = np.subtract(m["pair_cosine"]["hard"], m["pair_cosine"]["easy"])
    np.testing.assert_allclose(m["hard_easy_gap"], gap)
    summary = m["hard_easy_gap_summary"]
    assert summary["easy_peak_depth"] == m["attractor_peak_depth"]["easy"]
    assert summary["at_easy_peak"] == pytest.approx(gap[summary["easy_peak_depth"]])
    assert summary["narrowing"] == pytest.approx(summary["at_easy_peak"] / gap[0])


def test_maxsim_rows_are_the_hard_pair_tokens(results, tiny_bert_dir):
    L, m = results["model"]["layers"], results["metrics"]
    loaded = models.load(str(tiny_bert_dir), device="cpu")
    record = activations.extract(loaded, results["inputs"]["maxsim_pair"], cache=False, progress=False)
    words_a = [t for t, w in zip(record.tokens[record.rows(0)], record.word_mask[record.rows(0)]) if w]
    assert list(m["maxsim"]) == charts.unique_labels(words_a) and "the₂" in m["maxsim"]
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


def test_final_depth_scores_and_cls(results):
    m = results["metrics"]
    final = m["final_depth_scores"]
    assert final == {"mean pool": m["pair_cosine"]["hard"][-1], "CLS": m["cls_cosine"]["hard"][-1],
                     "mean MaxSim": m["maxsim_mean"][-1]}
    assert m["final_depth_differences"]["cls_minus_mean_pool"] == pytest.approx(final["CLS"] - final["mean pool"])
    assert m["cls_cosine"]["hard"][0] == pytest.approx(1.0)  # both [CLS] states are the same embedding at depth 0


def test_claims_cover_the_ledger(results):
    ledger = claims.load(SLUG)
    assert [c["id"] for c in results["claims"]] == [c.id for c in ledger.claims]
    assert all(c["numeric_verdict"] is None for c in results["claims"])  # the tiny model is no published model
    assert all(c["measured"] is not None for c in results["claims"])


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
    assert list(negation["b_to_a"]) == charts.unique_labels(words_b)
