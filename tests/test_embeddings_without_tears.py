"""Chapter 5 end to end on the tiny model (through ``built_book``), and its ledger's data.

Every claim has an interval (or says why not) and its declared null, each claim's per-unit
samples rebuild its metric (pairwise statistics as U-statistics of their kernels, controls with
their seeds), the headlines are the article's, and the page shows every number as a cell's output.
"""

import html
import json
import re

import nbformat
import numpy as np
import pytest
import yaml

from embedding_geometry.book import claims, dashboard, maths
from embedding_geometry.book.claims import samples, words
from embedding_geometry.core import corpora
from verdict_checks import page_outputs, unnamed

SLUG = "05_embeddings_without_tears"
HEADLINES = {"narrow-cone", "length-magnitude", "domain-vocabulary-collapse", "softmax-makes-cone", "cls-early-tokens"}
"""The TL;DR's three problems libraries can't fix and the first two "Scientifically Accurate Truth" claims (see the
ledger's header)."""
PAIRWISE = {
    "narrow-cone",
    "avg-sim-rule",
    "avg-sim-rule-control",
    "softmax-makes-cone",
    "isotropy-minilm",
    "isotropy-mpnet",
    "isotropy-bert",
    "isotropy-simcse",
    "whitening-removes-anisotropy",
    "whitening-own-distribution",
    "cone-expected-cosine",
}
"""Claims about means over pairs of sentences: their samples are kernels, not row means."""


def test_the_ledger_matches_the_transcribed_numbers():
    ledger = claims.load(SLUG)
    published = corpora.published(SLUG)
    by_id = {c.id: c for c in ledger.claims}
    assert len(ledger.claims) >= 35 and len(by_id) == len(ledger.claims)
    names = {
        "isotropy-bert": "BERT",
        "isotropy-minilm": "all-MiniLM-L6-v2",
        "isotropy-mpnet": "all-mpnet-base-v2",
        "isotropy-simcse": "SimCSE",
    }
    rows = {row["name"]: row for row in published["isotropy_table"]["rows"]}
    for claim_id, name in names.items():
        claim = by_id[claim_id]
        assert claim.published["value"] == rows[name]["score"] and claim.measured_on == rows[name]["model"]
        assert claim.metric == f"isotropy_article_models.{name}"
    table = published["cls_attention_table"]["shares"]
    for claim_id, share in zip(["cls-table-0-10", "cls-table-11-50", "cls-table-51-100", "cls-table-100-plus"], table):
        assert by_id[claim_id].published["value"] == share
    for claim_id in ("narrow-cone", "avg-sim-rule", "avg-sim-rule-control"):  # the article's own threshold
        assert by_id[claim_id].published["value"] == published["warning_threshold"]["value"]
        assert by_id[claim_id].bound_source == "fraction" and by_id[claim_id].test[1]["bound"] == 0.6
    untested = yaml.safe_load(claims.ledger.path(SLUG).read_text(encoding="utf-8"))["untested"]
    assert all({"statement", "source", "reason"} <= set(item) for item in untested)


def test_the_headlines_are_the_articles_tldr_and_closing_truths():
    ledger = claims.load(SLUG)
    assert {c.id for c in ledger.claims if c.headline} == HEADLINES


def test_the_ledger_declares_units_nulls_kinds_and_reasons():
    ledger = {c.id: c for c in claims.load(SLUG).claims}
    assert all(c.unit or c.by_construction or c.description for c in ledger.values())
    assert {c.null["kind"] for c in ledger.values() if c.null} == {"uniform_attention", "chance", "control"}
    sides = {b: ledger[f"cls-table-{b}"].null.get("side") for b in ("0-10", "11-50", "51-100", "100-plus")}
    assert sides == {
        "0-10": "above",
        "11-50": "above",
        "51-100": "above",
        "100-plus": "below",
    }  # as the table puts them
    control = ledger["softmax-makes-cone"].null
    assert control["kind"] == "control" and control["samples"] == {"seeds": {"pairwise": "isotropy_control.mean_cos"}}
    assert ledger["avg-sim-rule-control"].samples == {"seeds": {"pairwise": "isotropy_control.avg_sim"}}
    for claim_id in PAIRWISE - {"cone-expected-cosine", "avg-sim-rule-control"}:
        assert set(ledger[claim_id].samples) == {"pairwise"}, claim_id
    retrieval = [
        "cls-fails-similarity",
        "subword-pooling-retrieval",
        "whitening-helps-retrieval",
        "centering-helps-retrieval",
    ]
    assert all(ledger[i].unit == "queries" and ledger[i].test[1].get("bound") == 0 for i in retrieval)  # one rule
    assert ledger["centering-helps-retrieval"].kind == "hypothesis"  # the book's own check, not the article's
    assert "mean pool" in ledger["cls-fails-similarity"].caveat
    assert ledger["cls-early-tokens"].bound_source == "sign" and ledger["cls-early-tokens"].fraction is None


def assert_coverage_lists_the_seed(slug: str) -> None:
    """The chapter's coverage file (its package's coverage.yaml, ``coverage.path(slug)``): every item has
    a status, a reason when it is not reproduced, and a place that is a heading of the notebook; the
    claims and errata it names are the ledger's, and it names every published claim and every erratum
    of the ledger."""
    import yaml

    from conftest import ROOT

    from embedding_geometry.book.coverage import STATUSES, path

    coverage = yaml.safe_load(path(slug).read_text(encoding="utf-8"))
    assert coverage["seed"].startswith("004") and coverage["chapter"] == slug
    ledger = claims.load(slug)
    ids, errata = {c.id for c in ledger.claims}, {e["id"] for e in ledger.errata}
    cells = nbformat.read(ROOT / "notebooks" / f"{slug}.ipynb", as_version=4).cells
    headings = set(re.findall(r"^#{2,3} .+$", "\n".join(c.source for c in cells if c.cell_type == "markdown"), re.M))
    for item in coverage["items"]:
        assert item["status"] in STATUSES, item["id"]
        assert item["status"] == "reproduced" or item.get("why"), item["id"]
        places = [p.strip() for p in re.findall(r"#{2,3} [^;(]+", item["where"])]
        assert places and set(places) <= headings, (item["id"], places)
        assert set(item.get("claims", [])) <= ids and set(item.get("errata", [])) <= errata, item["id"]
    named = {i for item in coverage["items"] for i in item.get("claims", []) + item.get("errata", [])}
    assert [c.id for c in ledger.claims if c.kind == "published" and c.id not in named] == []
    assert errata - named == set()


def test_the_errata_table_shows_every_erratum_whole():
    from embedding_geometry.book import charts

    ledger = claims.load(SLUG)
    frame = charts.errata_shown(ledger).frame
    assert list(frame.columns) == list(charts.ERRATA_COLUMNS.values()) and len(frame) == len(ledger.errata)
    longest = max((e["evidence"] for e in ledger.errata), key=len)
    assert len(longest) > 50 and html.escape(longest) in charts.errata_shown(ledger)._repr_html_()  # not cut at 50


def test_the_coverage_file_lists_the_seeds_items_with_a_status_and_a_place():
    assert_coverage_lists_the_seed(SLUG)


@pytest.mark.slow
def test_chapter_results_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    metrics, inputs = document["metrics"], document["inputs"]
    assert document["model"]["layers"] == 3 and document["model"]["hidden"] == 40
    assert len(inputs["corpus"]) == 675 and len(inputs["queries"]["queries"]) >= 40
    assert len(inputs["pair_sample"]) == document["params"]["pair_sample"]
    assert 0 <= metrics["isotropy_score"] <= 1
    assert metrics["isotropy_reference"]["orthonormal"] == pytest.approx(0.5)
    assert metrics["isotropy_article_models"]["all-MiniLM-L6-v2"] is None  # the tiny model is not in the table
    controls = [m for m in metrics["isotropy_by_model"] if "random-init control" in m]
    assert len(controls) == document["params"]["control_seeds"] == metrics["isotropy_control"]["seeds"]
    assert metrics["isotropy_control"]["avg_sim"] == pytest.approx(
        np.mean([metrics["isotropy_by_model"][c]["avg_sim"] for c in controls])
    )
    main = metrics["isotropy_by_model"][document["model"]["id"]]
    assert main["texts_per_second"] > 0 and all(
        metrics["isotropy_by_model"][c]["texts_per_second"] is None for c in controls
    )
    cone = metrics["cone"]
    assert cone["mean_pairwise_cosine"] == pytest.approx(cone["identity"], abs=1e-9)
    fair = metrics["whitening_fair"]
    assert abs(fair["held_out"]["whiten"]["anisotropy"]) < abs(fair["held_out"]["none"]["anisotropy"])
    assert fair["n_held_out"] == len(inputs["held_out_rows"]) and fair["n_fit"] == len(inputs["fit_rows"])
    assert fair["fit_per_dim"] == pytest.approx(fair["n_fit"] / 40) and fair["n_queries"] <= len(
        inputs["queries"]["queries"]
    )
    assert fair["sensitivity"]["whitened"] == pytest.approx(fair["ndcg_at_10"]["whiten"])
    assert len(metrics["per_unit"]["whitening_fair.retrieval_change"]) == fair["n_queries"]
    dilution = metrics["length_dilution"]
    assert len(dilution["key_first"]["mean"]) == document["params"]["k_max"] + 1 == len(dilution["k"])
    assert dilution["key_first"]["mean"][0] == pytest.approx(1.0) and dilution["key_last"]["cls"][0] == pytest.approx(
        1.0
    )
    shares = metrics["cls_attention_by_position"]["shares"]
    assert metrics["cls_attention_by_position"]["n_positions"] > 100 and sum(shares.values()) == pytest.approx(1.0)
    assert metrics["subword"]["split_fraction"] == 1.0
    assert set(metrics["pooling_retrieval"]) >= {"mean", "cls", "subword", "cls_minus_mean"}
    verdicts = {c["id"]: c for c in document["claims"]}
    assert set(verdicts) == {c.id for c in claims.load(SLUG).claims}  # the tiny book judges one model
    assert verdicts["isotropy-bert"]["status"] == "not measured"
    assert all(c["numeric_verdict"] is None for c in document["claims"])  # no published number is on the tiny model
    row = verdicts["cls-table-51-100"]  # a row of the table counted once, as cls-power-law: shown, not tested
    assert row["status"] == "descriptive" and "as cls-power-law" in row["reason"] and row["measured"] is not None
    assert verdicts["softmax-makes-cone"]["null"]["distribution"] == "10 seeds, unit by unit"
    assert len(verdicts["softmax-makes-cone"]["null"]["seed_values"]) == 10
    assert verdicts["subword-pooling-retrieval"]["n_units"] == len(inputs["queries"]["queries"])
    assert verdicts["narrow-cone"]["n_units"] == document["params"]["pair_sample"]
    assert verdicts["avg-sim-rule-control"]["measured"] == pytest.approx(metrics["isotropy_control"]["avg_sim"])


@pytest.mark.slow
def test_exercise_answers_on_the_tiny_model(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    metrics, n = document["metrics"], len(document["inputs"]["corpus"])
    fewer = metrics["exercise_fit_fraction"]
    assert fewer["n_fit"] == round(0.2 * n) == len(document["inputs"]["exercise_fit_rows"])
    assert fewer["zero_eigenvalues"] >= 0 and all(0 <= v <= 1 for v in fewer["ndcg_at_10"].values())
    cls = metrics["exercise_n_positions"]
    assert cls["n_positions"] == min(128, document["model"]["max_seq_length"])
    assert sum(cls["shares"]) == pytest.approx(1.0) and sum(cls["uniform"]) == pytest.approx(1.0)
    other = metrics["exercise_seed_1"]
    assert other["n_fit"] == metrics["whitening_fair"]["n_fit"]
    assert document["inputs"]["exercise_seed_1_fit_rows"] != document["inputs"]["fit_rows"]


def assert_per_unit_values_give_the_metrics(slug: str, document: dict) -> None:
    """For every claim with a sampling unit and a measured value: its samples, taken once each,
    give the metric (the contract ``claims.evaluate`` relies on). A per-unit array the results file
    records by its shape only (over ``results.PER_UNIT_INLINE`` values: a kernel over held-out pairs)
    cannot be rebuilt from the file; every other one is checked."""
    units = document["metrics"].get("per_unit", {})
    by_shape = {key for key, value in units.items() if isinstance(value, dict) and "shape" in value}
    checked = 0
    for claim in claims.load(slug).claims:
        value = claims.lookup(document["metrics"], claim.metric)
        spec = json.dumps(claim.samples if claim.samples is not None else claim.metric)
        if claim.unit is None or value is None or any(f'"{key}"' in spec for key in by_shape):
            continue
        checked += 1
        found = samples.find(document["metrics"], claim.samples if claim.samples is not None else claim.metric)
        assert not isinstance(found, samples.Missing), f"{claim.id}: {found}"
        assert float(found.point()) == pytest.approx(float(value), rel=1e-6, abs=1e-7), claim.id
    assert checked >= 5, f"only {checked} claims' samples could be rebuilt from the results file"


def assert_chapter_reads_as_outputs(root, slug: str, document: dict) -> None:
    """The executed notebook: no glue role in its Markdown, no raw value in its outputs, every claim
    that is not a judged pass listed, and each headline claim in words in the findings box."""
    notebook = nbformat.read(root / "book" / "chapters" / f"{slug}.ipynb", as_version=4)
    prose = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "{glue" not in prose
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "lambda" not in code and not re.search(r"^\s*def ", code, re.M)
    assert not re.search(r"ch\.metrics\[[^\]]+\]\s*=", code)  # metrics are read, never written, in a chapter
    shown = page_outputs(notebook)
    for raw in ("NaN", ">nan<", "-0.0000", ">True<", ">False<", "PosixPath"):
        assert raw not in shown, raw
    assert unnamed(shown, document["claims"]) == []
    for claim, records in words.by_claim(words.headlines(dashboard.records(document))).items():
        assert maths.html(words.said(records)) in shown, claim  # the findings box, each claim on every model


@pytest.mark.slow
def test_every_claim_has_an_interval_or_a_reason_its_null_and_its_samples(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    document = json.loads((root / "build" / "results" / f"{SLUG}.json").read_text())
    assert [c["id"] for c in document["claims"]] == [c.id for c in claims.load(SLUG).claims]
    ledger = {c.id: c for c in claims.load(SLUG).claims}
    for record in document["claims"]:
        assert record["interval"] is not None or record["reason"], record["id"]
        if ledger[record["id"]].null and record["measured"] is not None and record["status"] is None:
            assert record["null"]["value"] is not None, record["id"]
    assert_per_unit_values_give_the_metrics(SLUG, document)
    units = document["metrics"]["per_unit"]
    n = document["params"]["pair_sample"]
    assert np.shape(units["isotropy.mean_cos"]) == (n, n)
    assert np.shape(units["isotropy_control.mean_cos"]) == (document["params"]["control_seeds"], n, n)
    assert np.shape(units["length_dilution.attention_gain"]) == (document["params"]["n_keys"],)
    assert_chapter_reads_as_outputs(root, SLUG, document)
