"""The chapter run object: one validation, one loop over models, one results JSON."""

from __future__ import annotations

import json

import pytest

from embedding_geometry.book import claims
from embedding_geometry.book.chapter import NO_CONTROLS, Chapter, uncontrolled
from embedding_geometry.core.errors import ParameterError


def cone_parameters(model: str, **overrides) -> dict:
    values = dict(model=model, models=[], random_control=True, control_seeds=1, device="cpu", batch_size=4, seed=0,
                  trust_remote_code=False, corpus="project", n_texts=None, token_set="word",
                  k_extremes=1, k_vocab=1)
    return {**values, **overrides}


def test_open_validates_against_the_rule_table(tiny_bert_dir):
    with pytest.raises(ParameterError, match="parameter 'batch_size' expects an integer in \\[1, 4096\\]"):
        Chapter.open("03_inside_the_cone", cone_parameters(str(tiny_bert_dir), batch_size=0))
    with pytest.raises(KeyError, match="declares no value"):
        Chapter.open("03_inside_the_cone", {"model": str(tiny_bert_dir)})


def test_results_record_every_model_the_run_used(tiny_bert_dir, tmp_path, monkeypatch):
    """The main model, each compared model and each random-init control, with their weights'
    hashes (a control's is the hash of its initialised weights, not its base model's)."""
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path))
    monkeypatch.setenv("EMBEDDING_GEOMETRY_CACHE", str(tmp_path / "cache"))
    ch = Chapter.open("03_inside_the_cone", cone_parameters(str(tiny_bert_dir)))
    compared = list(ch.compared())
    for model in compared:
        ch.extract(["a cat sat on the mat", "the dog ran"], model=model)
    ch.finish(verdicts=False)
    document = json.loads((tmp_path / "03_inside_the_cone.json").read_text())
    ran = {m["id"]: m["sha256"] for m in document["models"]}
    assert list(ran) == [m.info.id for m in compared] and len(ran) == 2
    assert ran[compared[0].info.id] == document["model"]["sha256"]
    assert all(len(sha) == 64 for sha in ran.values()) and len(set(ran.values())) == 2


def test_without_controls_a_claim_against_a_control_null_is_not_tested_never_judged_on_its_shape_alone():
    ledger = {c.id: c for c in claims.load("01_layer_by_layer").claims}
    against_controls, own_curve = ledger["within-training"], ledger["within-end"]
    assert against_controls.null["kind"] == "control" and not own_curve.null
    judged = claims.Verdict(against_controls, "m", measured=0.5, p_holds=0.001, p_fails=0.9, outcome="holds")
    found = uncontrolled(judged)
    assert (found.status, found.reason, found.outcome, found.p) == ("descriptive", NO_CONTROLS, None, None)
    assert found.record()["verdict"] == "not tested" and not found.counted
    kept = claims.Verdict(own_curve, "m", measured=0.5, p_holds=0.001, p_fails=0.9, outcome="holds")
    assert uncontrolled(kept).outcome == "holds"
    not_measured = claims.Verdict(against_controls, "m", status="not measured", reason="why")
    assert uncontrolled(not_measured) is not_measured

