"""Chapter 1 end to end on the tiny model: the results contract of METHODS.md §1."""

import json

import numpy as np
import pytest

from embedding_geometry.core import activations, corpora, models
from embedding_geometry.book import claims

pytestmark = pytest.mark.slow
SLUG = "01_layer_by_layer"
PER_DEPTH = ["intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap", "separability_ratio",
             "cls_mean_alignment", "pc1_mean_alignment"]
PER_STEP = ["pca_step_fixed", "pca_step_refit", "peak_write_hist"]


@pytest.fixture(scope="module")
def results(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())


def test_series_have_one_entry_per_depth_or_step(results):
    L, D = results["model"]["layers"], results["model"]["hidden"]
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
    assert len(m["meanpool_first_last_cosine"]) == len(results["inputs"]["sentences"])


def test_dimension_metrics_cover_every_dimension(results):
    L, D = results["model"]["layers"], results["model"]["hidden"]
    m = results["metrics"]
    assert sum(m["peak_write_hist"]) == D and len(m["peak_write_depth"]) == D
    assert set(m["peak_write_depth"]) <= set(range(1, L + 1))
    assert m["peak_write_last_two"] == pytest.approx(sum(m["peak_write_hist"][-2:]) / D)
    corr = m["dim_corr_first_last"]
    assert len(corr["r"]) == D and corr["n_above"] == sum(r > 0.7 for r in corr["r"])
    top = m["top_discriminative_dims"]
    assert len(top["dims"]) == 5 and np.asarray(top["difference"]).shape == (5, L + 1)
    assert top["half_value_relative_depth"] == pytest.approx(np.asarray(top["half_value_depth"]) / L)
    for name, bounds in m["slice_bounds"].items():  # the tiny model is narrower than most slices
        assert (bounds is None) == (m["slice_cosine"][name] is None)
        assert bounds is None or bounds[1] <= D


def test_derived_metrics_are_consistent(results):
    m = results["metrics"]
    np.testing.assert_allclose(m["collapse_gap"], np.subtract(m["intra_sentence_cosine"], m["cross_sentence_baseline"]))
    assert m["pca_step_ratio"] == pytest.approx(np.mean(m["pca_step_refit"]) / np.mean(m["pca_step_fixed"]))


def test_within_sentence_cosine_matches_a_direct_computation(results, tiny_bert_dir, tmp_path):
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


def test_inputs_are_recorded_verbatim(results):
    inputs = results["inputs"]
    reference = corpora.REFERENCE_SENTENCES
    assert inputs["sentences"] == corpora.layer_by_layer_sentences()
    assert inputs["hard_pair"] == inputs["negation_pair"] == [reference["surged"], reference["plunged"]]
    assert inputs["role_reversal_pair"] == [reference["acquirer"], reference["acquired"]]
    assert inputs["easy_set"] == corpora.retrieval_set("easy") and inputs["hard_set"] == corpora.retrieval_set("hard")
    for name in ("easy_set", "hard_set"):
        assert len(inputs[name]["queries"]) >= 10 and not set(inputs[name]["queries"]) & set(inputs[name]["pool"])


def test_claims_cover_the_ledger_and_published_models_not_run_are_not_measured(results):
    ledger = claims.load(SLUG)
    assert [c["id"] for c in results["claims"]] == [c.id for c in ledger.claims]
    assert all(c["numeric_verdict"] is None for c in results["claims"])  # the tiny model is no published model
    colbert = [c for c in results["claims"] if c["id"].startswith("colbert")]
    assert colbert and all(c["measured"] is None for c in colbert)
    by_model = results["metrics"]["intra_sentence_cosine_by_model"]
    assert by_model["jinaai/jina-colbert-v2"] is None and by_model["mixedbread-ai/mxbai-embed-large-v1"] is None
    embedded = by_model[models.EMBEDDED_ID]  # the default `models`: another model, of another depth
    assert embedded is not None and len(embedded) != len(results["metrics"]["intra_sentence_cosine"])


def test_exercise_answers_are_computed(results):
    """The exercises' answers: the one-topic set's collapse, easy Recall@1 and hard Recall@3 per depth."""
    L, m, inputs = results["model"]["layers"], results["metrics"], results["inputs"]
    ex = m["exercises"]
    topic = ex["one_topic"]
    assert len(inputs["exercise_one_topic"]) >= 3 and inputs["exercise_one_topic"] != inputs["sentences"]
    assert all(len(topic[key]) == L + 1 for key in ("intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap"))
    np.testing.assert_allclose(topic["collapse_gap"], np.subtract(topic["intra_sentence_cosine"], topic["cross_sentence_baseline"]))
    easy_1, hard_3 = np.asarray(ex["easy_recall_at_1"]), np.asarray(ex["hard_recall_at_3"])
    assert easy_1.shape == hard_3.shape == (L + 1,) and ((0 <= easy_1) & (easy_1 <= 1)).all()
    # recall can only grow with k: the chapter's run used easy k = 3 and hard k = 1
    assert m["recall_k"] == {"easy": 3, "hard": 1}
    assert (easy_1 <= np.asarray(m["recall_at_k"]["easy"])).all() and (hard_3 >= np.asarray(m["recall_at_k"]["hard"])).all()
