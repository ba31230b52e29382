"""Chapter 5 end to end on the tiny model (through ``built_book``), and its ledger's data."""

import json

import pytest

from embedding_geometry.book import claims
from embedding_geometry.book.chapter import metric_values
from embedding_geometry.core import corpora

SLUG = "05_embeddings_without_tears"


def test_the_ledger_matches_the_transcribed_numbers():
    ledger = claims.load(SLUG)
    published = corpora.published(SLUG)
    by_id = {c.id: c for c in ledger.claims}
    assert len(ledger.claims) >= 35 and len(by_id) == len(ledger.claims)
    names = {"isotropy-bert": "BERT", "isotropy-minilm": "all-MiniLM-L6-v2",
             "isotropy-mpnet": "all-mpnet-base-v2", "isotropy-simcse": "SimCSE"}
    rows = {row["name"]: row for row in published["isotropy_table"]["rows"]}
    for claim_id, name in names.items():
        claim = by_id[claim_id]
        assert claim.published["value"] == rows[name]["score"] and claim.measured_on == rows[name]["model"]
        assert claim.metric == f"isotropy_article_models.{name}"
    table = published["cls_attention_table"]["shares"]
    for claim_id, share in zip(["cls-table-0-10", "cls-table-11-50", "cls-table-51-100", "cls-table-100-plus"], table):
        assert by_id[claim_id].published["value"] == share
    untested = corpora.load_yaml(f"claims/{SLUG}.yaml")["untested"]
    assert all({"statement", "source", "reason"} <= set(item) for item in untested)


def test_metric_values_name_every_number_by_its_path():
    """What ``ch.glue_metrics()`` glues for the prose (``{glue:text}`cone.kappa:.3f```)."""
    metrics = {"cone": {"kappa": 0.5, "simulated": {"alpha_degrees": 60.0}}, "k": [0, 1],
               "rows": [{"a": 1}], "none": None, "per_unit": {"cone.kappa": [0.4, 0.6]}}
    assert metric_values(metrics) == {"cone.kappa": 0.5, "cone.simulated.alpha_degrees": 60.0, "k.0": 0, "k.1": 1,
                                      "none": "not measured"}


@pytest.mark.slow
def test_chapter_results_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    metrics, inputs = document["metrics"], document["inputs"]
    assert document["model"]["layers"] == 3 and document["model"]["hidden"] == 40
    assert len(inputs["corpus"]) == 675 and len(inputs["queries"]["queries"]) >= 40
    assert 0 <= metrics["isotropy_score"] <= 1
    assert metrics["isotropy_reference"]["orthonormal"] == pytest.approx(0.5)
    assert metrics["isotropy_article_models"]["all-MiniLM-L6-v2"] is None  # the tiny model is not in the table
    assert any("random-init control" in m for m in metrics["isotropy_by_model"])
    assert metrics["isotropy_control"]["avg_sim"] is not None
    cone = metrics["cone"]
    assert cone["mean_pairwise_cosine"] == pytest.approx(cone["identity"], abs=1e-9)
    whitened = metrics["whitening"]["held_out"]["whiten"]
    assert abs(whitened["anisotropy"]) < abs(metrics["whitening"]["held_out"]["none"]["anisotropy"])
    dilution = metrics["length_dilution"]
    assert len(dilution["key_first"]["mean"]) == document["params"]["k_max"] + 1 == len(dilution["k"])
    assert dilution["key_first"]["mean"][0] == pytest.approx(1.0) and dilution["key_last"]["cls"][0] == pytest.approx(1.0)
    shares = metrics["cls_attention_by_position"]["shares"]
    assert metrics["cls_attention_by_position"]["n_positions"] > 100
    assert sum(shares.values()) == pytest.approx(1.0)
    assert metrics["subword"]["split_fraction"] == 1.0
    assert set(metrics["pooling_retrieval"]) >= {"mean", "cls", "attention", "subword", "cls_minus_mean"}
    verdicts = {c["id"]: c for c in document["claims"]}
    assert set(verdicts) == {c.id for c in claims.load(SLUG).claims}
    assert verdicts["isotropy-bert"]["shape_verdict"] == "not measured"
    assert all(c["numeric_verdict"] is None for c in document["claims"])  # no published number is on the tiny model
    page = (root / "_build" / "html" / "book" / "chapters" / f"{SLUG}.html").read_text()
    assert "Embeddings without tears, measured" in page and page.count("eg-chart") >= 4


@pytest.mark.slow
def test_exercise_answers_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    exercises, n = document["metrics"]["exercises"], len(document["inputs"]["corpus"])
    fit = exercises["fit_fraction_0.2"]
    assert fit["n_fit"] == round(0.2 * n) == len(document["inputs"]["exercise_fit_rows"])
    assert fit["zero_eigenvalues"] >= 0 and all(0 <= v <= 1 for v in fit["ndcg_at_10"].values())
    cls = exercises["n_positions_128"]
    assert cls["n_positions"] == min(128, document["model"]["max_seq_length"])
    assert sum(cls["shares"]) == pytest.approx(1.0) and sum(cls["uniform"]) == pytest.approx(1.0)
    other = exercises["seed_1"]
    assert other["n_fit"] == document["metrics"]["whitening"]["n_fit"]
    assert document["inputs"]["exercise_seed_1_fit_rows"] != document["inputs"]["fit_rows"]
