"""Chapter 3 (Inside the Cone) end to end on the tiny 3-block, 40-wide BERT, through the built book.

The results JSON must hold every number the chapter shows, and an independent recomputation
from its recorded inputs must give the same numbers. Every claim has an interval (or says why
not) and its declared null, each per-unit array averages to its metric, and the page's summary
names every claim whose verdict is not "holds".
"""

import json
import re

import numpy as np
import pytest

from conftest import TINY_CHAPTER_PARAMS
from embedding_geometry.book import claims
from embedding_geometry.core import activations, corpora, geometry
from test_layer_by_layer import assert_verdicts_explained

pytestmark = pytest.mark.slow
SLUG = "03_inside_the_cone"
PER_DEPTH = ("anisotropy", "token_anisotropy", "anisotropy_gap", "topic_mean_cosine_offdiag",
             "topic_centering_removal_offdiag", "corpus_mean_removal")


@pytest.fixture(scope="module")
def document(built_book):
    root, result = built_book
    path = root / "build" / "results" / f"{SLUG}.json"
    assert path.is_file(), result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(path.read_text())


def test_per_depth_series_have_one_entry_per_depth(document):
    metrics, layers = document["metrics"], document["model"]["layers"]
    for key in PER_DEPTH:
        assert len(metrics[key]) == layers + 1, key
    np.testing.assert_allclose(metrics["anisotropy_gap"],
                               np.subtract(metrics["anisotropy"], metrics["token_anisotropy"]), atol=1e-12)
    assert all(-1 <= v <= 1 for v in metrics["anisotropy"] + metrics["token_anisotropy"])


def test_inputs_are_the_corpus_sample_recorded_verbatim(document):
    inputs, params = document["inputs"], TINY_CHAPTER_PARAMS[SLUG]
    sample = corpora.load_corpus("project", params["n_texts"], seed=0)
    assert inputs["corpus"] == "project"
    assert inputs["sentences"] == sample["sentence"].tolist() and inputs["topics"] == sample["topic"].tolist()
    rows = np.asarray(inputs["token_sample"])
    assert len(rows) == params["token_sample"] and np.all(np.diff(rows) > 0)
    assert len(inputs["models"]) == 2 and "random-init control" in inputs["models"][1]


def test_numbers_recompute_from_the_recorded_inputs(document, tiny_bert):
    inputs, metrics = document["inputs"], document["metrics"]
    record = activations.extract(tiny_bert, inputs["sentences"], batch_size=5, cache=False, progress=False)
    pools = record.mean_pool("all")
    for depth in (0, record.n_layers):
        assert metrics["anisotropy"][depth] == pytest.approx(geometry.mean_pairwise_cosine(pools[depth]), abs=1e-5)
        tokens = record.hidden[depth, inputs["token_sample"]]
        assert metrics["token_anisotropy"][depth] == pytest.approx(geometry.mean_pairwise_cosine(tokens), abs=1e-5)
    assert record.word_mask[inputs["token_sample"]].all()
    final = pools[-1]
    axis = np.asarray(metrics["cone_axis"])
    centred = final - final.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    assert abs(axis @ vt[0]) == pytest.approx(1.0, abs=1e-5)
    scores = centred @ axis
    assert [e["sentence"] for e in metrics["cone_extremes"]["high"]] == \
        [inputs["sentences"][i] for i in np.argsort(-scores)[:5]]
    mean = final.mean(axis=0)
    np.testing.assert_allclose(metrics["mean_direction"], mean / np.linalg.norm(mean), atol=1e-6)
    assert metrics["cone_axis_vs_mean_direction"] == pytest.approx(float(axis @ mean / np.linalg.norm(mean)), abs=1e-5)


def test_per_unit_values_average_to_their_metrics(document):
    metrics, layers = document["metrics"], document["model"]["layers"]
    units, n = metrics["per_unit"], len(document["inputs"]["sentences"])
    for key in ("anisotropy", "anisotropy_rise", "anisotropy_gap", "token_anisotropy.by_sentence"):
        assert np.shape(units[key]) == (n, layers + 1), key
    assert np.shape(units["token_anisotropy"]) == (len(document["inputs"]["token_sample"]), layers + 1)
    pairs = {"anisotropy": "anisotropy", "anisotropy_rise": "anisotropy_rise", "anisotropy_gap": "anisotropy_gap",
             "token_anisotropy": "token_anisotropy", "token_anisotropy.by_sentence": "token_anisotropy",
             "cone_axis_length_spearman": "cone_axis_length_spearman",
             "topic_centering_removal_offdiag": "topic_centering_removal_offdiag"}
    for key, metric in pairs.items():
        np.testing.assert_allclose(np.mean(units[key], axis=0), metrics[metric], atol=1e-9, err_msg=key)
    ratio = np.mean(units["cone_axis_topic_eta2.between"]) / np.mean(units["cone_axis_topic_eta2.total"])
    assert ratio == pytest.approx(metrics["cone_axis_topic_eta2"])
    assert np.mean(units["random_control.anisotropy_excess"]) == pytest.approx(metrics["random_control"]["anisotropy_excess"])


def test_every_claim_has_an_interval_or_a_reason_and_its_null(built_book, document):
    ledger = claims.load(SLUG)
    assert [c["id"] for c in document["claims"]] == [c.id for c in ledger.claims]
    assert_verdicts_explained(built_book, SLUG, document)
    by_id = {c["id"]: c for c in document["claims"]}
    assert by_id["cone-axis-content"]["null"]["label"] == "permuted labels"
    assert by_id["anisotropy-peak"]["statistic"]["interval"] is not None  # the series test's own interval


def test_cone_axis_matrix_compares_the_model_with_its_control(document):
    matrix = document["metrics"]["cone_axis_cosine"]
    model, control = document["inputs"]["models"]
    assert set(matrix) == {model, control}
    assert matrix[model][model] == pytest.approx(1.0) and matrix[control][control] == pytest.approx(1.0)
    assert matrix[model][control] == pytest.approx(matrix[control][model]) and 0 <= matrix[model][control] <= 1
    assert document["metrics"]["cone_axis_family"] == {"within_min": None, "to_outsider_max": None}
    assert set(document["metrics"]["models_final_anisotropy"]) == {model, control}
    summary = document["metrics"]["random_control"]
    assert summary["model"] == control and summary["axis_cosine"] == pytest.approx(matrix[model][control])
    finals = document["metrics"]["models_final_anisotropy"]
    assert summary["anisotropy_excess"] == pytest.approx(finals[control] - finals[model])
    assert len(summary["anisotropy"]) == document["model"]["layers"] + 1
    assert summary["anisotropy"][-1] == pytest.approx(finals[control])


def test_topics_vocabulary_and_claims(document):
    metrics = document["metrics"]
    topics = set(document["inputs"]["topics"])
    assert set(metrics["topic_anisotropy"]) <= topics and len(metrics["topic_anisotropy"]) >= 2
    for row, cells in metrics["topic_centering_removal"].items():
        assert cells[row] == pytest.approx(1.0)
    vocab = metrics["vocab_on_cone_axis"]
    assert len(vocab["top"]) == len(vocab["bottom"]) == 10
    assert [t["projection"] for t in vocab["top"]] == sorted((t["projection"] for t in vocab["top"]), reverse=True)
    assert set(vocab["common_word_ranks"]) == {"the", "a", "is"}
    verdicts = {c["id"]: c for c in document["claims"]}
    assert len(verdicts) == 23
    assert all(c["numeric_verdict"] is None for c in verdicts.values())  # the tiny model is not mxbai
    assert verdicts["cone-axes-fine-tuned-family"]["verdict"] == "not measured"
    assert {c["verdict"] for c in verdicts.values()} <= {"holds", "does not hold", "inconclusive", "not measured",
                                                        "description"}


def test_page_is_built_with_its_charts(built_book):
    root, _ = built_book
    path = root / "_build" / "html" / "book" / "chapters" / f"{SLUG}.html"
    page = path.read_text()
    assert "Inside the Cone" in page and len(set(re.findall(r'id="(eg-chart-[0-9a-f-]+)"', page))) >= 6
    assert "Errata" in page and path.stat().st_size < 5_000_000


def test_exercise_answers_are_recorded_and_recompute(document, tiny_bert):
    """The exercises' answers are in the results, each for its changed parameter value."""
    inputs, metrics, layers = document["inputs"], document["metrics"], document["model"]["layers"]
    exercises = metrics["exercises"]
    assert set(exercises) == {"n_texts_300_anisotropy", "n_texts_300", "token_set_all_token_anisotropy",
                              "token_set_all", "top_topic_at_each_end", "seed_1_control"}
    sample = inputs["exercise_sample"]
    assert sample == corpora.load_corpus("project", 300, seed=0)["sentence"].tolist()
    record = activations.extract(tiny_bert, sample, batch_size=8, cache=False, progress=False)
    pools = record.mean_pool("all")
    assert len(exercises["n_texts_300_anisotropy"]) == layers + 1
    assert exercises["n_texts_300_anisotropy"][-1] == pytest.approx(geometry.mean_pairwise_cosine(pools[-1]), abs=1e-5)
    everything = activations.extract(tiny_bert, inputs["sentences"], batch_size=8, cache=False, progress=False)
    rows = np.asarray(inputs["exercise_token_sample_all"])
    assert everything.special_mask[rows].any()  # the post's token set includes [CLS] and [SEP]
    assert exercises["token_set_all_token_anisotropy"][0] == pytest.approx(
        geometry.mean_pairwise_cosine(everything.hidden[0, rows]), abs=1e-5)
    ends = exercises["top_topic_at_each_end"]
    assert set(ends) == {"k=5", "k=20"} and ends["k=20"]["high"]["sentences"] <= 20
    control = exercises["seed_1_control"]
    assert 0 <= control["axis_cos_with_model"] <= 1 and 0 <= control["axis_cos_with_this_control"] <= 1
    assert -1 <= control["final_anisotropy"] <= 1
    assert np.mean(control["per_unit"]["anisotropy_change"]) == pytest.approx(control["anisotropy_change"])
    assert np.mean(control["per_unit"]["axis_cos_over_chance"]) == pytest.approx(control["axis_cos_over_chance"])
    every = exercises["token_set_all"]
    ratio = np.mean(every["per_unit"]["change"]) / np.mean(every["per_unit"]["gap"])
    assert ratio == pytest.approx(every["signed_change_share"])
