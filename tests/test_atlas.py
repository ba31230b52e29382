"""The atlas run (book.atlas): one results file per model with its weights' hash, shards written
once, an interrupted run resumed, one-line errors; and on a local Ray instance (slow, marked
``ray``): a worker killed mid-shard leaves exactly one copy of each shard's contribution and the
in-process results, and the command with ``--executor ray`` writes the in-process results files."""

from __future__ import annotations

import builtins

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from embedding_geometry.book import atlas
from embedding_geometry.book.atlas import plan, shards
from embedding_geometry.core import paths

PARAMS = {"model": None, "models": [], "random_control": True, "control_seeds": 2, "corpus": None,
          "corpus_column": "text", "corpus_texts": 24, "head_texts": 3, "head_length": 24, "device": "cpu",
          "batch_size": 8, "seed": 0, "trust_remote_code": False, "sample_size": 10, "shard_texts": 9,
          "atlas_results": None}


def tiny_plan(model_dir: Path, out: Path, **changes) -> plan.Plan:
    return plan.from_parameters({**PARAMS, "model": str(model_dir), **changes}, out)


def shard_files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in (out / "shards").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def measured(tiny_bert_dir, tmp_path_factory):
    """The tiny plan measured in process: (plan, results by model id)."""
    chosen = tiny_plan(tiny_bert_dir, tmp_path_factory.mktemp("atlas") / "inprocess")
    return chosen, atlas.read(atlas.run(chosen))


def test_one_results_file_per_model_with_its_weights_hash(measured):
    chosen, found = measured
    assert len(found) == 3 and sorted(p.name for p in chosen.out.glob("*.json")) == sorted(
        [f"{m.key}.json" for m in chosen.models] + ["plan.json"])
    trained, *controls = found.values()
    assert trained["model"]["source"] == "local" and len(trained["model"]["sha256"]) == 64
    assert [c["model"]["source"] for c in controls] == ["control", "control"]
    assert trained["shards"]["corpus"] == 3 and trained["inputs"]["twins"]["units"] == 12
    assert set(trained["metrics"]) == {"sentences", "twins", "easy_pairs", "corpus", "heads"}
    assert "heads" not in controls[0]["metrics"]  # the head pass runs on trained models only


def test_a_rerun_measures_nothing_and_a_lost_shard_is_measured_again(measured):
    chosen, found = measured
    before = shard_files(chosen.out)
    seen = []
    atlas.run(chosen, atlas.InProcess(lambda p, s: seen.append(s) or shards.measure(p, s)))
    assert seen == [] and shard_files(chosen.out) == before
    lost = chosen.shards()[4]
    shards.shard_path(chosen, lost).unlink()
    atlas.run(chosen, atlas.InProcess(lambda p, s: seen.append(s) or shards.measure(p, s)))
    assert seen == [lost] and shard_files(chosen.out) == before
    assert_same_within(atlas.read(chosen.out)[chosen.models[0].id]["metrics"], found[chosen.models[0].id]["metrics"])


def test_a_shard_is_written_once_and_a_dead_writers_partial_file_is_removed(measured, tmp_path):
    chosen, _ = measured
    shard = chosen.shards()[0]
    part = shards._read_part(shards.shard_path(chosen, shard))
    target = tmp_path / "x.joblib"
    assert shards.write_once(target, part) and not shards.write_once(target, part)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = shards.shard_path(chosen, shard).parent / f"{paths.PARTIAL}{dead.stdout.strip()}-abc.joblib"
    leftover.write_bytes(b"cut short")
    assert shards.remove_partial(chosen) == [leftover] and not leftover.exists()


def test_another_plan_in_the_same_folder_is_refused_in_one_line(measured, tiny_bert_dir):
    chosen, _ = measured
    with pytest.raises(atlas.AtlasError, match="holds the shards of another atlas run"):
        atlas.run(tiny_plan(tiny_bert_dir, chosen.out, sample_size=11))


def test_shards_of_other_code_are_refused_too(measured, tiny_bert_dir, monkeypatch):
    """A folder measured by another version of the package (its statistics may hold other keys)
    is not combined with this one's: chapter 8's in-build folder is named by the fingerprint."""
    chosen, _ = measured
    before = chosen.fingerprint()
    monkeypatch.setattr(paths, "package_hash", lambda: "another package")
    assert tiny_plan(tiny_bert_dir, chosen.out).fingerprint() != before
    with pytest.raises(atlas.AtlasError, match="holds the shards of another atlas run"):
        atlas.run(tiny_plan(tiny_bert_dir, chosen.out))


def test_sharding_does_not_change_the_results(measured, tiny_bert_dir, tmp_path):
    chosen, found = measured
    other = atlas.read(atlas.run(tiny_plan(tiny_bert_dir, tmp_path / "whole", shard_texts=None, random_control=False)))
    model = chosen.models[0].id
    assert_same_within(other[model]["metrics"], found[model]["metrics"])


def assert_same_within(found, expected, path=""):
    """Metrics equal within float rounding of forward passes batched differently."""
    if isinstance(expected, dict):
        for key in expected:
            assert_same_within(found[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, (np.ndarray, list, float, int)) and not isinstance(expected, bool):
        try:
            expected = np.asarray(expected, float)
        except ValueError:  # labels (a head's class): equal
            assert found == expected, path
            return
        np.testing.assert_allclose(np.asarray(found, float), expected, rtol=1e-4, atol=1e-5, err_msg=path)


def test_a_corpus_file_streams_a_batch_at_a_time_to_the_results_of_the_same_texts(measured, tiny_bert_dir, tmp_path,
                                                                                  monkeypatch):
    chosen, found = measured
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(chosen.text_set("corpus").texts) + "\n", encoding="utf-8")  # blank lines skipped
    passes, extract = [], shards.activations.extract
    monkeypatch.setattr(shards.activations, "extract", lambda loaded, texts, **kw: passes.append(
        (kw["source"], len(texts), kw["cache"])) or extract(loaded, texts, **kw))
    from_file = tiny_plan(tiny_bert_dir, tmp_path / "file", corpus=str(corpus), corpus_texts=None,
                          random_control=False, shard_texts=10)
    model = chosen.models[0].id
    result = atlas.read(atlas.run(from_file))[model]
    assert result["shards"]["corpus"] == 3 and result["inputs"]["corpus"]["units"] == 24
    streamed = [(n, cached) for name, n, cached in passes if name == "corpus"]
    assert streamed == [(8, False), (2, False)] * 2 + [(4, False)]  # shards of 10, batches of 8, nothing cached
    assert_same_within(result["metrics"]["corpus"], found[model]["metrics"]["corpus"])


CLI = [sys.executable, "-m", "embedding_geometry", "atlas", "--root", str(ROOT)]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def command(tiny_bert_dir, tmp_path_factory):
    """The tiny profile run by the command in process: (profile, environment, results folder)."""
    folder = tmp_path_factory.mktemp("command")
    profile = folder / "tiny.yaml"
    profile.write_text(json.dumps({"common": {"model": str(tiny_bert_dir), "device": "cpu", "batch_size": 8},
                                   "chapters": {"08_across_models": {k: v for k, v in PARAMS.items()
                                                                     if k not in ("model", "atlas_results")}}}))
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **OFFLINE,
           "EMBEDDING_GEOMETRY_CACHE": str(folder / "cache")}
    done = subprocess.run([*CLI, "--profile", str(profile), "--out", str(folder / "out")], capture_output=True,
                          text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return profile, env, folder / "out"


def test_the_command_runs_a_profile_and_reports_a_bad_one_in_one_line(command, tmp_path):
    profile, env, out = command
    assert len(list(out.glob("*--control-*.json"))) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("chapters: {08_across_models: {sample_size: 1}}")
    failed = subprocess.run([*CLI, "--profile", str(bad), "--out", str(tmp_path / "out")], capture_output=True,
                            text=True, env=env, timeout=300)
    assert failed.returncode == 1 and "sample_size" in failed.stderr and len(failed.stderr.strip().splitlines()) == 1
    missing = tmp_path / "missing.yaml"
    missing.write_text(json.dumps({"chapters": {"08_across_models": {"corpus": str(tmp_path / "nowhere.txt")}}}))
    failed = subprocess.run([*CLI, "--profile", str(missing), "--out", str(tmp_path / "out")], capture_output=True,
                            text=True, env=env, timeout=300)
    assert failed.returncode == 1 and failed.stderr.strip().endswith("(no such file)")
    assert len(failed.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()  # before any model ran


def test_reading_a_folder_without_results_is_one_line(tmp_path):
    with pytest.raises(atlas.AtlasError, match="holds no results"):
        atlas.read(tmp_path)


# --------------------------------------------------------------------------- Ray (a local instance)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    interpreters_print = builtins.print
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TQDM_PATCH_PRINT", "0")  # as the Ray executor sets it (book.atlas)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}})
        yield ray
        ray.shutdown()
    assert builtins.print is interpreters_print, "Ray replaced builtins.print (later tests pickle it)"


@pytest.mark.slow
@pytest.mark.ray
def test_a_ray_worker_killed_mid_shard_leaves_exactly_one_copy_of_each_shard(measured, local_ray, tiny_bert_dir,
                                                                             tmp_path):
    chosen, found = measured
    crashed = tmp_path / "crashed"
    faulty = tiny_plan(tiny_bert_dir, tmp_path / "faulty")
    victim = faulty.shards()[1]

    def work(p, shard):  # the victim's first attempt starts writing, then its worker dies
        if shard == victim and not crashed.exists():
            crashed.write_text("")
            path = shards.shard_path(p, shard)
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.parent / f"{paths.PARTIAL}{os.getpid()}-x.joblib").write_bytes(b"half a shard")
            os._exit(1)
        return shards.measure(p, shard)

    atlas.run(faulty, atlas.RayExecutor(work=work))
    assert crashed.exists()  # the fault happened, and Ray retried the shard
    assert shard_files(faulty.out) == shard_files(chosen.out)  # one file per shard, nothing partial
    for model in found:  # a unit counted twice would raise in the merge
        assert_same_within(atlas.read(faulty.out)[model]["metrics"], found[model]["metrics"])


@pytest.mark.slow
@pytest.mark.ray
def test_the_command_with_executor_ray_on_two_local_workers_writes_the_in_process_results(command, tmp_path):
    """``python -m embedding_geometry atlas --executor ray`` as a user runs it, offline: a local Ray
    instance of 2 workers that the command starts and stops, the results files of the in-process run."""
    pytest.importorskip("ray")
    profile, env, in_process = command
    done = subprocess.run([*CLI, "--profile", str(profile), "--out", str(tmp_path / "ray"), "--executor", "ray",
                           "--workers", "2"], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "(ray)" in done.stdout and sorted(p.name for p in (tmp_path / "ray").glob("*.json")) == sorted(
        p.name for p in in_process.glob("*.json"))
    on_ray, here = atlas.read(tmp_path / "ray"), atlas.read(in_process)
    assert list(on_ray) == list(here)
    for model in here:
        assert on_ray[model]["model"]["sha256"] == here[model]["model"]["sha256"]
        assert on_ray[model]["shards"] == here[model]["shards"]
        assert_same_within(on_ray[model]["metrics"], here[model]["metrics"])
