"""Chapter 5 end to end on the tiny model (through ``built_book``), and its ledger's data.

Every claim has an interval (or says why not) and its declared null, each claim's per-unit
values average (or, for a ratio, divide) to its metric, and the page's summary names every claim
whose verdict is not "holds".
"""

import json

import numpy as np
import pytest

from embedding_geometry.book import claims
from embedding_geometry.book.claims import samples
from embedding_geometry.book.chapter import metric_values
from embedding_geometry.core import corpora
from test_layer_by_layer import assert_verdicts_explained

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


def assert_per_unit_values_give_the_metrics(slug: str, document: dict) -> None:
    """For every claim with a sampling unit and a measured value: its samples, taken once each,
    give the metric (the contract ``claims.evaluate`` relies on)."""
    for claim in claims.load(slug).claims:
        value = claims.lookup(document["metrics"], claim.metric)
        if claim.unit is None or value is None:
            continue
        found = samples.find(document["metrics"], claim.samples if claim.samples is not None else claim.metric)
        assert not isinstance(found, samples.Missing), f"{claim.id}: {found}"
        assert float(found.point()) == pytest.approx(float(value), rel=1e-6, abs=1e-9), claim.id


def test_the_ledger_declares_units_nulls_and_reasons():
    ledger = {c.id: c for c in claims.load(SLUG).claims}
    assert all(c.unit or c.by_construction or c.description for c in ledger.values())
    assert {c.null["kind"] for c in ledger.values() if c.null} == {"uniform_attention", "chance"}
    assert all(ledger[f"cls-table-{b}"].null["kind"] == "uniform_attention" for b in ("0-10", "11-50", "51-100", "100-plus"))
    retrieval = ["cls-fails-similarity", "subword-pooling-retrieval", "whitening-helps-retrieval",
                 "centering-helps-retrieval", "whitening-any-variant"]
    assert all(ledger[i].unit == "queries" and ledger[i].test[1].get("bound") == 0 for i in retrieval)  # one rule


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
    fair = metrics["whitening_fair"]
    assert fair["n_held_out"] == len(inputs["held_out_rows"]) and fair["n_fit"] == len(inputs["fit_rows"])
    assert fair["fit_per_dim"] == pytest.approx(fair["n_fit"] / 40) and fair["n_queries"] <= len(inputs["queries"]["queries"])
    assert fair["sensitivity"]["whitened"] == pytest.approx(fair["ndcg_at_10"]["whiten"])
    assert len(metrics["per_unit"]["whitening_fair.retrieval_change"]) == fair["n_queries"]
    assert metrics["cls_attention_by_position"]["uniform_early_ratio"] == 1.0
    verdicts = {c["id"]: c for c in document["claims"]}
    assert set(verdicts) == {c.id for c in claims.load(SLUG).claims}
    assert verdicts["isotropy-bert"]["shape_verdict"] == "not measured"
    assert all(c["numeric_verdict"] is None for c in document["claims"])  # no published number is on the tiny model
    assert verdicts["cls-table-51-100"]["null"]["label"] == "uniform attention"
    assert verdicts["subword-pooling-retrieval"]["n_units"] == len(inputs["queries"]["queries"])
    assert verdicts["avg-sim-rule-control"]["measured"] == pytest.approx(metrics["isotropy_control"]["avg_sim"])
    main_control = f"{document['model']['id']} [random-init control, seed {document['params']['seed']}]"
    assert metrics["isotropy_control"]["avg_sim"] == metrics["isotropy_by_model"][main_control]["avg_sim"]
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


@pytest.mark.slow
def test_every_claim_has_an_interval_or_a_reason_and_its_null(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    assert [c["id"] for c in document["claims"]] == [c.id for c in claims.load(SLUG).claims]
    assert_verdicts_explained(built_book, SLUG, document)
    assert_per_unit_values_give_the_metrics(SLUG, document)
    units = document["metrics"]["per_unit"]
    assert np.shape(units["isotropy_reference.orthonormal"]) == (40,)  # the tiny model's 40 basis directions
    assert np.shape(units["length_dilution.attention_gain"]) == (document["params"]["n_keys"],)
