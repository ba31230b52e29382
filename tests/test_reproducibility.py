"""The float path, its perturbations, and the reproducibility contract's families, deviations,
tolerances and fragile verdicts."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from embedding_geometry.book import claims, reproducibility
from embedding_geometry.core import activations, float_path, models
from embedding_geometry.core.errors import ParameterError

import float_paths


# --------------------------------------------------------------------------- the float path

def test_a_float_path_spec_reads_back_as_written():
    path = float_path.parse("threads=1, onednn=off,batch_size=7")
    assert path == float_path.FloatPath(threads=1, onednn=False, batch_size=7)
    assert float_path.parse(path.spec) == path and float_path.parse("") == float_path.FloatPath()
    assert float_path.FloatPath().spec == "" and path.forward_batch(32) == 7
    assert float_path.FloatPath().forward_batch(32) == 32


def test_another_cpus_instruction_set_is_set_for_the_processes_a_build_starts(tmp_path):
    path = float_path.parse("isa=avx2")
    assert path.spec == "isa=avx2" and float_path.environment(float_path.FloatPath()) == {}
    assert float_path.environment(path) == {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                                            "DNNL_MAX_CPU_ISA": "AVX2"}
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"  # what a chapter's kernel would run
    env = {**os.environ, float_path.VARIABLE: "isa=avx2"}
    child = subprocess.run([sys.executable, "-c", "import os, subprocess, sys; from embedding_geometry.core import "
                            "float_path; os.environ.update(float_path.environment()); "
                            f"print(subprocess.run([sys.executable, '-c', {probe!r}], capture_output=True, "
                            "text=True).stdout)"], capture_output=True, text=True, env=env, timeout=120)
    assert child.stdout.strip() in ("AVX2", "DEFAULT"), child.stdout + child.stderr  # never wider than asked


@pytest.mark.parametrize("bad", ["threads=0", "threads=x", "onednn=on", "attention=unfused", "speed=fast",
                                 "isa=sse"])
def test_a_bad_float_path_item_is_one_line_naming_the_variable(bad):
    with pytest.raises(ParameterError, match="EMBEDDING_GEOMETRY_FLOAT_PATH") as caught:
        float_path.parse(bad)
    assert "\n" not in str(caught.value) and repr(bad) in str(caught.value)


def test_a_perturbed_path_keys_the_cache_apart(tiny_bert_dir, monkeypatch):
    plain = models.load(str(tiny_bert_dir), device="cpu")
    key = activations.cache_key(plain, ["a b"], 16, False)
    monkeypatch.setenv(float_path.VARIABLE, "batch_size=1")
    threads = torch.get_num_threads()
    perturbed = models.load(str(tiny_bert_dir), device="cpu")
    assert torch.get_num_threads() == threads  # a default field leaves torch's own setting alone
    assert activations.cache_key(perturbed, ["a b"], 16, False) != key


def test_a_perturbed_path_gives_the_same_states_to_float_noise(tiny_bert_dir, monkeypatch, tmp_path):
    texts = ["the cat sat on the mat", "a dog", "birds sing at dawn in the tall old trees"]
    plain = activations.extract(models.load(str(tiny_bert_dir), device="cpu"), texts, cache=False, progress=False)
    monkeypatch.setenv(float_path.VARIABLE, "batch_size=1,onednn=off")
    try:
        other = activations.extract(models.load(str(tiny_bert_dir), device="cpu"), texts, cache=False, progress=False)
    finally:
        torch.backends.mkldnn.enabled = True
    scale = np.abs(plain.hidden).max()
    assert np.abs(other.hidden - plain.hidden).max() <= 1e-5 * scale  # another batch: other padding, other shapes


# --------------------------------------------------------------------------- families and tolerances

def test_each_number_gets_the_scale_and_total_of_its_list():
    found = {path: (value, scale, total) for path, value, scale, total in reproducibility.leaves(
        {"curve": [0.5, -2.0], "n": 3, "name": "x", "grid": [[1, 3], [2]]})}
    assert found["curve[0]"] == (0.5, 2.0, 2.5) and found["n"] == (3, 3, 3) and found["name"] == ("x", None, None)
    assert found["grid[0][1]"] == (3, 3, 4) and found["grid[1][0]"] == (2, 2, 2)


def test_a_family_comes_from_the_table_first_then_from_the_type():
    assert reproducibility.family("00_the_model", "exercises.batch_size_1_max_abs_diff", 1e-6) == "noise"
    assert reproducibility.family("01_layer_by_layer", "collapse_gap[3]", 0.3) == "float"
    assert reproducibility.family("04_attention_context_similarity", "distance_histogram[1][11]", 1398) == "count"
    assert reproducibility.family("00_the_model", "exercises.long_word_pieces", "[CLS] · p") == "exact"
    assert reproducibility.family("01_layer_by_layer", "recall_at_k.hard[2]", 0.5) == "share"


def test_what_gradient_training_computes_is_its_own_family():
    assert reproducibility.family("07_training_objective", "objectives.scratch.losses[3]", 2.1) == "trained"
    assert reproducibility.family("07_training_objective", "per_unit.finetune.within", 0.4) == "trained"
    assert reproducibility.family("07_training_objective", "objectives.scratch.steps", 150) == "count"
    assert reproducibility.family("06_search_in_practice", "finetune.working.loss_change", -0.3) == "trained"
    assert reproducibility.family("06_search_in_practice", "quantization.int8.recall", 0.9) == "float"
    assert reproducibility.family("06_search_in_practice", "finetune.texts_per_second", 9.0) == "timing"
    seconds = "objectives.scratch.cpu_seconds.maxsim.seed_4"  # a copy's training time
    assert reproducibility.family("07_training_objective", seconds, 20.3) == "timing"


def test_each_family_measures_a_deviation_its_own_way():
    assert reproducibility.deviation("float", 0.5, 0.5001, 2.0, 2.5) == pytest.approx(5e-5)  # of the list's scale
    assert reproducibility.deviation("count", 1398, 1397, 1398, 4096) == pytest.approx(1 / 4096)  # of the total
    assert reproducibility.deviation("share", 0.5, 0.5833, 1.0, 1.0) == pytest.approx(0.0833)
    assert reproducibility.deviation("noise", 1.65e-6, 3.87e-6, None, None) == pytest.approx(math.log10(3.87 / 1.65))
    assert reproducibility.deviation("exact", "a", "b", None, None) == math.inf
    assert reproducibility.deviation("float", 0.5, None, 0.5, 0.5) == math.inf


def test_tolerances_are_the_margin_times_the_worst_deviation_rounded_up_to_1_2_or_5():
    measured = {"a": {"largest": {"float": {"max": 3e-7}, "count": {"max": 2.4e-4}, "trained": {"max": 0.032}}},
                "b": {"largest": {"float": {"max": 2e-6}, "noise": {"max": 0.3}}}}
    tolerance = float_paths.derive(measured)
    assert tolerance["float"] == pytest.approx(2e-5) and tolerance["count"] == pytest.approx(5e-3)
    assert tolerance["trained"] == pytest.approx(0.5)  # 0.32 up to 0.5
    assert [float_paths.round_up(x) for x in (0.019, 0.02, 0.021, 1.0, 7e-6)] == pytest.approx(
        [0.02, 0.02, 0.05, 1.0, 1e-5])
    assert tolerance["noise"] == 2.0  # log10 ratio 0.3, plus log10 of the margin (1), rounded up
    assert tolerance["share"] == 0.0 and tolerance["exact"] == 0.0
    assert float_paths.derive({})["float"] == reproducibility.FLOORS["float"]


def test_measure_finds_every_deviation_and_every_changed_verdict(tmp_path):
    def write(folder, curve, verdict, fragile=None):
        folder.mkdir(parents=True)
        (folder / "c.json").write_text(json.dumps({"metrics": {"curve": curve, "per_unit": {"curve": [[9.0]]}},
                                                   "claims": [{"id": "k", "model": "m", "verdict": verdict,
                                                               "fragile": fragile}]}))
        return folder

    folders = {"default": write(tmp_path / "d", [1.0, 2.0], "holds"),
               "p": write(tmp_path / "p", [1.0, 2.0 + 2e-6], "inconclusive", fragile="margin 0")}
    measured = float_paths.measure(folders, {"default": "", "p": "threads=1"})
    assert measured["perturbations"]["p"]["largest"]["float"]["max"] == pytest.approx(1e-6)
    assert measured["perturbations"]["p"]["largest"]["float"]["where"] == "c:curve[1]"
    assert measured["verdict_changes"]["p"] == [{"chapter": "c", "claim": "k@m", "default": "holds",
                                                 "perturbed": "inconclusive", "fragile_by_margin": True}]
    assert measured["tolerances"]["float"] == pytest.approx(1e-5) and measured["perturbations"]["p"]["golden"] == []


# --------------------------------------------------------------------------- fragile verdicts

def _ledger(bound: float) -> claims.Ledger:
    claim = claims.Claim(id="c", statement="s", source="x", metric="curve", reduce="last", unit="sentences",
                         shape={"test": "above", "args": {"bound": bound}}, no_null="size")
    return claims.Ledger(chapter="t", claims=[claim])


def _metrics(rng) -> dict:
    per_unit = 0.5 + 0.01 * rng.standard_normal((20, 3))
    return {"curve": per_unit.mean(axis=0), "per_unit": {"curve": per_unit}}


def test_a_verdict_whose_p_is_within_twice_its_monte_carlo_error_of_the_threshold_is_fragile():
    claim = _ledger(0.0).claims[0]
    near = claims.Verdict(claim, "m", measured=0.5, p_holds=0.0025, p_fails=0.99, mc_error=0.0005)
    far = claims.Verdict(claim, "m", measured=0.5, p_holds=0.0001, p_fails=0.99, mc_error=1e-6)
    (decided,) = claims.decide([near], family=10)  # adjusted p = 2 · 0.0025 · 10 = 0.05, ± 0.01
    assert decided.outcome == "holds" and "Monte Carlo error" in decided.fragile
    (robust,) = claims.decide([far], family=10)
    assert robust.outcome == "holds" and robust.fragile is None


def test_a_claim_whose_verdict_changed_on_a_perturbed_path_is_marked_fragile(tmp_path, monkeypatch):
    figures = {"tolerances": {}, "verdict_changes": {"threads_1": [{"chapter": "t", "claim": "c@m"}]}}
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(figures))
    monkeypatch.setattr(reproducibility, "FIGURES", path)
    flips = {("c", "m"): reproducibility.flipped("t", "c", "m")}
    m = claims.family_size()
    verdict = claims.evaluate(_ledger(0.0), _metrics(np.random.default_rng(1)), "m", flips=flips, family=m)[0]
    assert verdict.fragile == "its verdict changed on a perturbed float path (threads_1)"
    assert claims.evaluate(_ledger(0.0), _metrics(np.random.default_rng(1)), "m", family=m)[0].fragile is None


# --------------------------------------------------------------------------- the tiny book on a perturbed path

@pytest.mark.slow
def test_a_perturbed_float_path_keeps_every_verdict_of_the_tiny_book_or_marks_it_fragile(built_book, tiny_bert_dir,
                                                                                        tmp_path, monkeypatch):
    from conftest import copy_book, run_build, tiny_profile
    from test_unchanged_metrics import PERTURBED, verdict_changes

    root, built = built_book
    assert built.returncode == 0, built.stdout[-2000:]
    monkeypatch.setenv(float_path.VARIABLE, PERTURBED)
    other = copy_book(tmp_path / "perturbed")
    result = run_build(other, "--profile", str(tiny_profile(other, tiny_bert_dir)), "--no-site")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    changed, compared = [], 0
    for path in sorted((root / "build" / "results").glob("0*.json")):
        reference = reproducibility.claim_records(json.loads(path.read_text()))
        perturbed = reproducibility.claim_records(json.loads((other / "build" / "results" / path.name).read_text()))
        compared += len(reference)
        changed += [f"{path.stem}: {change}" for change in verdict_changes(reference, perturbed)]
    assert compared > 100 and not changed, changed


def test_a_speed_is_the_machines_and_a_head_histogram_is_a_count():
    speed = "isotropy_by_model.m.texts_per_second"
    assert reproducibility.family("05_embeddings_without_tears", speed, 57.8) == "timing"
    assert reproducibility.deviation("timing", 57.8, 29.4, 57.8, 57.8) == 0.0
    path = "by_model.m.heads.head_distance_histogram[11][7][0]"
    assert reproducibility.family("08_across_models", path, 244.0) == "count"
    assert reproducibility.deviation("count", 244.0, 243.0, 244.0, 1000.0) == pytest.approx(1e-3)


def test_a_lone_cosine_and_a_value_beside_its_interval_are_compared_on_their_scale():
    tree = {"anisotropy_centred": 2.5e-5, "loss": 2.5e-5, "d": {"value": 1e-6, "interval": [-4e-4, 5e-4]}}
    scales = {path: scale for path, _, scale, _ in reproducibility.leaves(tree)}
    assert scales["anisotropy_centred"] == 1.0 and scales["loss"] == 2.5e-5  # a cosine's scale is 1
    assert scales["d.value"] == pytest.approx(9e-4)  # the interval's width
    assert reproducibility.deviation("float", 2.5e-5, 1.8e-4, scales["anisotropy_centred"], None) < 2e-4


def test_a_depth_index_moves_in_steps_and_its_tolerance_is_the_largest_step():
    assert reproducibility.family("07_training_objective", "objectives.x.reach.a.depth_interval[0]", 2) == "depth"
    assert reproducibility.deviation("depth", 2, 3, 2, 2) == 1
    assert float_paths.derive({"p": {"largest": {"depth": {"max": 1}}}})["depth"] == 1.0


def test_figures_of_another_cpu_are_carried_and_those_of_this_one_replaced():
    from float_paths import carried

    previous = {"run": {"machine": "CPU A", "date": "2026-11-27"}, "verdict_changes": {"perturbed": []},
                "perturbations": {"perturbed": {"spec": "threads=1", "largest": {"float": {"max": 0.002}}}}}
    found = carried(previous, "CPU B")
    assert list(found["perturbations"]) == ["perturbed on CPU A"]
    assert found["perturbations"]["perturbed on CPU A"]["spec"] == "threads=1 (CPU A, 2026-11-27)"
    assert carried(previous, "CPU A")["perturbations"] == {}
    again = {"run": {"machine": "CPU B", "date": "2026-11-28"}, "verdict_changes": found["verdict_changes"],
             "perturbations": found["perturbations"]}
    assert carried(again, "CPU B") == found  # carried once, under its own name
