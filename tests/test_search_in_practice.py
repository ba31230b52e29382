"""Chapter 6 end to end on the tiny model (through ``built_book``), and its ledger's data."""

import json

import pytest

from embedding_geometry.book import claims
from embedding_geometry.core import corpora
from embedding_geometry.studies import quantization
from test_embeddings_without_tears import assert_per_unit_values_give_the_metrics
from test_layer_by_layer import assert_verdicts_explained

SLUG = "06_search_in_practice"


def test_the_ledger_matches_the_transcribed_numbers():
    ledger = claims.load(SLUG)
    published = corpora.published(SLUG)
    assert len({c.id for c in ledger.claims}) == len(ledger.claims) >= 14
    defaults = published["quantization"]["pq_code_defaults"]
    ratio = quantization.compression_ratio(quantization.bits_per_vector("pq", 384, defaults["num_subvectors"],
                                                                         defaults["bits_per_subvector"]), 384)
    assert f"{ratio:.0f}× for 384" in next(e for e in ledger.errata if e["id"] == "pq-compression-vs-own-code")["data_value"]
    untested = corpora.load_yaml(f"claims/{SLUG}.yaml")["untested"]
    assert all({"statement", "source", "reason"} <= set(item) for item in untested)


def test_the_ledger_declares_units_nulls_and_reasons():
    ledger = {c.id: c for c in claims.load(SLUG).claims}
    assert all(c.unit or c.by_construction or c.description for c in ledger.values())
    assert ledger["windows-beat-truncation"].unit == "documents"  # a document's sentences are one unit
    assert ledger["quantization-nonuniform"].null["kind"] == "permuted_labels"
    assert ledger["pq-compression"].description and "defaults" not in ledger["pq-compression"].statement
    assert ledger["int8-error"].test == ("below", {"bound": pytest.approx(0.025)})  # ~2 %, loosened by a stated fraction


def test_the_two_ledgers_split_the_articles_claims():
    """Chapters 5 and 6 check one article: no claim or erratum is in both ledgers."""
    five, six = claims.load("05_embeddings_without_tears"), claims.load(SLUG)
    assert not {c.id for c in five.claims} & {c.id for c in six.claims}
    assert not {e["id"] for e in five.errata} & {e["id"] for e in six.errata}


@pytest.mark.slow
def test_chapter_results_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    metrics, inputs = document["metrics"], document["inputs"]
    assert len(inputs["corpus"]) == 675 and len(inputs["long_documents"]) == document["params"]["n_long_docs"]
    assert metrics["finetune"]["article"]["max_weight_change"] == 0.0 and metrics["finetune"]["mnrl"]["difference"] == 0.0
    quant = metrics["quantization"]
    assert quant["int8"]["compression_ratio"] == 4 and quant["binary"]["compression_ratio"] == 32
    assert quant["pq_8x"]["compression_ratio"] == 8 and quant["pq_16x"]["compression_ratio"] == 16
    hybrid = metrics["hybrid_retrieval"]
    assert set(hybrid) >= {"dense", "bm25", "rrf"} and hybrid["rerank_minus_dense"] is None
    assert all(0 <= hybrid[m]["all"]["ndcg_at_10"] <= 1 for m in ("dense", "bm25", "rrf"))
    assert 0 < metrics["long_text"]["coverage"]["truncation"] <= metrics["long_text"]["coverage"]["windows"] <= 1
    verdicts = {c["id"]: c for c in document["claims"]}
    assert set(verdicts) == {c.id for c in claims.load(SLUG).claims}
    assert verdicts["rerank-precision"]["shape_verdict"] == "not measured"
    assert verdicts["contrastive-fix"]["verdict"] == "does not hold" and verdicts["contrastive-fix"]["interval"] == [0.0, 0.0]
    assert verdicts["contrastive-fix"]["n_units"] == len(metrics["finetune"]["seeds"]["seeds"])
    assert verdicts["windows-beat-truncation"]["n_units"] == document["params"]["n_long_docs"]
    assert verdicts["int8-compression"]["verdict"] == "by construction"
    assert_verdicts_explained(built_book, SLUG, document)
    assert_per_unit_values_give_the_metrics(SLUG, document)
    page = (root / "_build" / "html" / "book" / "chapters" / f"{SLUG}.html").read_text()
    assert "Search in practice, measured" in page and page.count("eg-chart") >= 1


@pytest.mark.slow
def test_exercise_answers_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    exercises = document["metrics"]["exercises"]
    windows = exercises["window_128_stride_64"]
    assert 0 <= windows["windows_over_limit_fraction"] <= 1
    assert 0 < windows["coverage"]["truncation"] <= windows["coverage"]["windows"] <= 1
    assert all(0 <= windows["recall_at_1"][m]["all"] <= 1 for m in ("truncation", "windows_max", "windows_mean"))
    assert exercises["long_words_300"]["words_per_doc"] >= 300
    assert exercises["seed_1"]["int8"] == document["metrics"]["quantization"]["int8"]  # int8 draws nothing
