"""``make bench`` and what it reads: FLOPs from a config, the projection to paper scale, the cold
build's split into forward, analysis and fixed overhead, the model-call clock, and chapter
kernels forked from a warm server."""

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import nbformat
import papermill
import pytest

import attention_memory  # benchmarks/ (on the path: pyproject's pythonpath)
import roofline
import run as bench

from embedding_geometry.book import jupyter_kernels
from embedding_geometry.core import clock

CONFIG = SimpleNamespace(hidden_size=4, intermediate_size=8, num_hidden_layers=2)


def test_flops_of_a_hand_computed_config():
    # per token and block at T = 5: 8·4² + 4·4·8 + 4·5·4 = 128 + 128 + 80 = 336
    assert roofline.block_flops_per_token(CONFIG, 5) == 336
    assert roofline.batch_flops(CONFIG, batch=3, length=5) == 3 * 5 * 2 * 336
    # texts of 2, 5, 3 tokens in passes [5, 3] padded to 5, then [2]
    flops, real = roofline.extraction_flops([2, 5, 3], CONFIG, [[1, 2], [0]])
    assert flops == 2 * 5 * 2 * 336 + 1 * 2 * 2 * (128 + 128 + 4 * 2 * 4)
    assert real == pytest.approx(10 / 12)
    no_ffn_width = SimpleNamespace(hidden_size=4, num_hidden_layers=1)  # f defaults to 4d
    assert roofline.block_flops_per_token(no_ffn_width, 1) == 8 * 16 + 4 * 4 * 16 + 4 * 4


def test_matmul_peak_reports_each_shape():
    peak = roofline.matmul_peak(CONFIG, rows=64, repeats=2)
    assert set(peak["shapes"]) == {"64x4x4", "64x4x8", "64x8x4"}
    assert peak["peak_gflops"] == max(peak["shapes"].values()) > 0


def test_roofline_runs_on_the_tiny_model(tiny_bert):
    r, e, p = bench.roofline(tiny_bert, ["the cat sat on the mat", "a dog barked", "one"] * 3, batch_tokens=24,
                             runs=2)
    assert "the best of 2 runs each" in next(f["detail"] for f in bench.figures({"extraction": {"minilm": e}}))
    assert r["passes"] == 3 and r["real_token_share"] == 1.0  # 3 × 8, 3 × 5, 3 × 3 tokens: each length a pass
    shown = {f["figure"]: f for f in bench.figures({"roofline": {"mpnet": r}, "peer": {"mpnet": p}})}
    assert shown["real tokens ÷ positions computed, MPNet"]["target"] == 0.95
    assert shown["roofline ratio, MPNet (achieved ÷ peak FLOP/s)"]["target"] == 0.8
    assert p["ratio"] > 0 and p["encode_tokens_per_s"] > 0 and p["tokens"] == e["tokens"]
    assert len(r["peak_samples"]) == 3 and len(r["peak_gflops"]) == len(r["ratios"]) == len(r["achieved_gflops"]) == 2
    assert r["peak_gflops"] == [max(r["peak_samples"][:2]), max(r["peak_samples"][1:])]  # each run: before or after
    for ratio, achieved, peak in zip(r["ratios"], r["achieved_gflops"], r["peak_gflops"]):
        assert abs(ratio * peak - achieved) <= 0.05 + 0.0005 * peak + 1e-9  # within the roundings of the three
    assert abs(r["ratio"] - sum(r["ratios"]) / 2) <= 1e-3  # the median of two runs
    assert 0 <= r["time_split"]["gemm_share"] <= 1 and r["texts"] == e["texts"] == 9
    assert e["ratio"] > 0 and e["bare_tokens_per_s"] > 0


def test_time_split_finds_the_matrix_products():
    import torch

    x, w = torch.randn(256, 64), torch.randn(64, 64)

    def work():
        return [torch.nn.functional.gelu(x @ w) for _ in range(20)]

    split = roofline.time_split(work, flops=20 * 2 * 256 * 64 * 64, peak_gflops=1.0)
    assert 0 < split["gemm_share"] < 1 and split["gemm_efficiency"] > 0
    assert "aten::gelu" in split["others"] and not set(split["others"]) & set(roofline.GEMM_OPS)
    assert all(0 <= share < 1 for share in split["others"].values())
    idle = roofline.time_split(lambda: torch.nn.functional.gelu(x), flops=0, peak_gflops=1.0)
    assert idle["gemm_share"] == 0 and idle["gemm_efficiency"] is None


def test_projection_to_paper_scale():
    runs = [{"n_texts": 200, "peak_rss_mib": 500.0, "seconds": 10.0, "kept_mib": 1.0, "block_mib": 0.5},
            {"n_texts": 2000, "peak_rss_mib": 503.0, "seconds": 100.0, "kept_mib": 10.0, "block_mib": 0.5}]
    p = attention_memory.projection(runs, 20_000)
    # 5 KiB kept per text: 503 + 9 / 1800 · 18,000 + 0.5 = 593.5 (the peaks' own 3 MiB step is not extrapolated)
    assert p["peak_rss_mib"] == pytest.approx(593.5) and p["kept_kib_per_text"] == pytest.approx(5.12)
    assert p["ratio"] == pytest.approx(593.5 / 500, abs=1e-3)
    assert p["texts_per_s"] == 20.0 and p["hours"] == pytest.approx(20_000 / 20 / 3600, abs=0.01)
    shrinking = attention_memory.projection([{**r, "kept_mib": 10.0 - r["n_texts"] / 1000} for r in runs], 20_000)
    assert shrinking["peak_rss_mib"] == 503.5  # a falling line is not extrapolated below what was measured


def test_a_run_keeps_the_figures_of_what_it_skips():
    assert bench.kept_sections(["mpnet_build"]) == {"mpnet_build"}  # make bench: its own time is measured
    # the MPNet build alone: the bench time stays
    assert bench.kept_sections(["roofline", "cache", "batching", "memory", "atlas", "build"]) == {
        "roofline", "cache", "batching", "memory", "atlas", "build", "bench"}
    assert bench.kept_sections([]) == set()


def test_kept_figures_sit_with_their_section():
    def fig(section, name):
        return {"section": section, "figure": name}

    found = bench.ordered([fig("mpnet_build", "kept"), fig("bench", "time"), fig("roofline", "a"), fig("cache", "c"),
                           fig("roofline", "b")])
    assert [f["figure"] for f in found] == ["a", "b", "c", "kept", "time"]


def test_build_breakdown_splits_each_chapter(tmp_path):
    output = ("     ran  01_a      20.0 s  \n     ran  98_b       2.0 s  \n skipped  02_c       0.0 s  \n"
              "     ran  07_d      25.0 s  alongside the others\n"
              "    site  jupyter-book build                         30.0 s\n")
    def timing(first, forward, open_s, process):
        return {
            "environment": {"timing": {"process_to_first_model_use_s": first, "forward_seconds": forward,
                                       "process_to_open_s": open_s, "process_seconds": process,
                                       "cpu_to_first_model_use_s": first and first / 2, "torch_threads": 2}}}
    (tmp_path / "01_a.json").write_text(json.dumps(timing(1.5, 12.0, 0.5, 19.0)))
    (tmp_path / "98_b.json").write_text(json.dumps(timing(None, 0.0, 0.8, 1.0)))
    (tmp_path / "07_d.json").write_text(json.dumps(timing(None, 0.0, 0.5, 24.0)))
    report = bench.build_breakdown(output, tmp_path, cold_s=60.0)
    assert report["chapters"]["07_d"]["alongside"] and not report["chapters"]["01_a"]["alongside"]
    a, b = report["chapters"]["01_a"], report["chapters"]["98_b"]
    assert (a["fixed_s"], a["forward_s"], a["analysis_s"]) == (2.5, 12.0, 5.5)  # 1.5 to the first call + 1.0 papermill
    assert (b["fixed_s"], b["analysis_s"], b["model_used"]) == (1.8, 0.2, False)  # 0.8 to the open + 1.0
    assert report["site_s"] == 30.0 and report["forward_s"] == 12.0 and report["build_process_s"] == 8.0
    assert report["overhead_ratio"] == round(60 / 42, 2)
    assert report["slowest_start"] == "01_a" and report["max_to_first_model_use_s"] == 1.5


def test_figures_carry_targets_and_met_flags():
    results = {"roofline": {"minilm": {"ratio": 0.65, "ratios": [0.6, 0.65, 0.7], "gflop": 10.0, "texts": 8,
                                       "tokens": 80, "batch_tokens": 64, "passes": 3, "real_token_share": 0.9,
                                       "achieved_gflops": [90, 100, 110],
                                       "peak_samples": [150, 140, 145, 150], "peak_gflops": [150, 145, 150],
                                       "time_split": {"gemm_share": 0.78, "gemm_efficiency": 0.87,
                                                      "others": {"aten::copy_": 0.07, "aten::gelu": 0.05}}}},
               "build": {"profile": "default", "overhead_ratio": 2.5, "cold_s": 100.0, "forward_s": 30.0,
                         "site_s": 10.0, "max_to_first_model_use_s": 1.2, "slowest_start": "01_a",
                         "warm_fraction": 0.1, "warm_s": 10.0, "warm_skipped_every_chapter": False}}
    found = bench.figures(results)
    def got(start):
        return next(f for f in found if f["figure"].startswith(start))
    assert got("roofline ratio, MiniLM")["met"] is False and got("roofline ratio, MiniLM")["target"] == 0.7
    assert got("roofline ratio, MiniLM")["detail"].endswith(
        "at 100 GFLOP/s; peak 150 GFLOP/s, each run's the better of the measurements just before and after it")
    real = got("real tokens ÷ positions computed, MiniLM")
    assert (real["met"], real["detail"]) == (False, "80 tokens of 8 texts, 3 passes of ≤ 64 positions")
    assert got("cold build ÷ (model calls + site build)")["met"] is True
    assert got("process start → first model use")["met"] is True
    assert got("warm ÷ cold book build")["met"] is False  # under target, but a chapter ran again
    split = got("time in matrix products, MiniLM")
    assert split["met"] is None and split["value"] == 0.78 and "0.87 of the peak" in split["detail"]
    assert split["detail"].endswith("copy_ 7%, gelu 5%")
    assert {f["section"] for f in found} == {"roofline", "build"}
    budget = got("cold build, profile default (s), against the 10-minute budget")
    assert (budget["value"], budget["sense"], budget["target"], budget["met"]) == (100.0, "≤", 600, True)


def test_the_cold_builds_against_the_budget_and_the_mpnet_build_as_information():
    slow = {"profile": "default", "cold_s": 640.5, "measured_at": "2026-01-02 03:04:05 UTC", "commit": "abc1234"}
    other = {**slow, "profile": "params/mine.yaml", "cold_s": 90.0}
    mpnet = {"profile": "mpnet", "cold_s": 2400.0, "measured_at": "2026-01-03 00:00:00 UTC", "commit": "def5678"}
    (budget, mpnet_time) = bench.budget_figures({"build": slow, "mpnet_build": mpnet})
    assert budget["met"] is False and budget["target"] == 600 and budget["value"] == 640.5
    assert budget["detail"] == "venv set-up excluded; measured 2026-01-02 03:04:05 UTC at abc1234"
    assert mpnet_time["section"] == "mpnet_build" and mpnet_time["met"] is None and mpnet_time["value"] == 2400.0
    assert "2026-01-03" in mpnet_time["detail"] and "def5678" in mpnet_time["detail"]
    (elsewhere,) = bench.budget_figures({"build": other})
    assert elsewhere["met"] is None and elsewhere["figure"] == "cold build, profile params/mine.yaml (s)"
    assert bench.budget_figures({}) == []


def test_the_budget_table_reads_the_cold_build_or_says_what_stands_in_for_it():
    import pandas as pd

    from embedding_geometry.book import performance

    cold = {"profile": "default", "cold_s": 512.0, "measured_at": "2026-01-02 03:04:05 UTC", "commit": "abc1234"}
    mpnet = {"profile": "mpnet", "cold_s": 2400.0, "measured_at": "2026-01-03 00:00:00 UTC", "commit": "def5678"}
    times = pd.DataFrame({"chapter": ["1 · a", "7 · b"], "seconds": [400.0, 250.5], "last run (UTC)": ["", ""]})
    measured = performance.budget_table({"build": cold, "mpnet_build": mpnet}, times).set_index("build")
    assert measured.loc["cold build, default profile", ["seconds", "budget", "met"]].tolist() == [512.0, "≤ 600 s",
                                                                                                  "yes"]
    assert "2026-01-02 03:04:05 UTC at commit abc1234" in measured.loc["cold build, default profile",
                                                                       "how it was measured"]
    assert measured.loc["cold build, params/mpnet.yaml", ["seconds", "met"]].tolist() == [2400.0, "—"]
    assert "def5678" in measured.loc["cold build, params/mpnet.yaml", "how it was measured"]
    summed = performance.budget_table(None, times).set_index("build")
    row = summed.loc["this build's chapters, summed"]
    assert (row["seconds"], row["met"]) == (650.5, "no") and row["how it was measured"].startswith("not a cold build")
    assert summed.loc["cold build, params/mpnet.yaml", "seconds"] == "not measured"
    assert "BENCH_ARGS" in summed.loc["cold build, params/mpnet.yaml", "how it was measured"]
    other_profile = performance.budget_table({"build": {**cold, "profile": "mine"}}, times)
    assert other_profile["build"].iloc[0] == "this build's chapters, summed"  # the budget is the default profile's
    nothing = performance.budget_table(None, times.iloc[:0]).set_index("build")
    assert nothing.loc["cold build, default profile", ["seconds", "met"]].tolist() == ["not measured", "—"]
    assert "budget" in performance.PerformanceReport(None, times)._repr_html_()


# --------------------------------------------------------------------------- the clock

def test_model_call_clock_accumulates_and_stamps_the_first_call(monkeypatch):
    monkeypatch.setattr(clock, "_totals", {"seconds": 0.0, "calls": 0})
    monkeypatch.setattr(clock, "_first", {})
    assert clock.timing()["process_to_first_model_use_s"] is None
    for _ in range(2):
        with clock.model_call():
            time.sleep(0.01)
    timing = clock.timing(opened=time.time())
    assert timing["forward_calls"] == 2 and timing["forward_seconds"] >= 0.02
    assert 0 < timing["process_to_first_model_use_s"] <= timing["process_seconds"]
    assert timing["process_to_open_s"] >= timing["process_to_first_model_use_s"]


def test_a_pools_model_calls_count_as_its_wall_time_in_them_and_stamp_no_first_use(monkeypatch):
    monkeypatch.setattr(clock, "_totals", {"seconds": 1.0, "calls": 3})
    monkeypatch.setattr(clock, "_first", {})
    clock.add_pool_calls(30.0, 12, workers=2)  # two workers side by side, 15 s each in model calls
    assert clock.model_seconds() == (16.0, 15)
    assert clock.timing()["process_to_first_model_use_s"] is None


def test_a_cache_read_is_a_model_use_but_no_model_call(monkeypatch, tmp_path, tiny_bert_dir):
    from embedding_geometry.core import activations, models

    loaded = models.load(str(tiny_bert_dir))
    activations.extract(loaded, ["a cached sentence"], cache_dir=tmp_path, progress=False)
    monkeypatch.setattr(clock, "_totals", {"seconds": 0.0, "calls": 0})
    monkeypatch.setattr(clock, "_first", {})
    activations.extract(loaded, ["a cached sentence"], cache_dir=tmp_path, progress=False)  # read back
    timing = clock.timing()
    assert timing["forward_calls"] == 0 and timing["process_to_first_model_use_s"] is not None
    first = dict(clock._first)
    clock.model_used()  # later uses change nothing
    assert clock._first == first


def test_process_start_is_read_to_the_tick():
    import psutil

    assert abs(clock.process_started() - psutil.Process().create_time()) < 1.5  # psutil rounds boot time
    assert 0 < time.time() - clock.process_started() < 24 * 3600


# --------------------------------------------------------------------------- forked kernels

def _notebook(path, source):
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(source))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


@pytest.mark.slow
def test_a_forked_kernel_runs_a_notebook_and_a_launcher_without_server_falls_back(tmp_path, monkeypatch):
    source = ("import os, sys, torch\nfrom embedding_geometry.core import clock\n"
              "print(os.getpid(), os.getcwd(), os.environ.get('EG_MARK'), 'torch' in sys.modules)")
    _notebook(tmp_path / "in.ipynb", source)
    monkeypatch.setenv("EG_MARK", "seen")
    def run():
        return papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"), cwd=str(tmp_path),
                                                 kernel_name="python3", progress_bar=False,
                                                 kernel_manager_class=jupyter_kernels.kernel_manager())
    monkeypatch.setenv(jupyter_kernels.ADDRESS, str(tmp_path / "nothing-listens-here"))
    run()  # no server: the launcher execs a plain ipykernel
    plain = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs[0]["text"].split()
    monkeypatch.setattr(jupyter_kernels, "_server", {})
    jupyter_kernels.start_server("v1")
    for version in ("v1", "v2"):  # the same server, then a new one for new code
        jupyter_kernels.start_server(version)
        run()
        forked = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs[0]["text"].split()
        assert forked[1:] == plain[1:] == [str(tmp_path), "seen", "True"]
        assert forked[0] != plain[0]  # a process of its own each time
    jupyter_kernels._stop(jupyter_kernels._server["process"], jupyter_kernels._server["folder"])


@pytest.mark.slow
def test_a_forked_kernel_that_fails_to_start_says_why_in_the_launchers_stderr(tmp_path, monkeypatch):
    """Its connection file is a folder, so the kernel's start raises: the traceback must reach the
    chapter's log (the launcher's stderr), not vanish with the forked process."""
    monkeypatch.setattr(jupyter_kernels, "_server", {})
    jupyter_kernels.start_server("v1")
    try:
        launched = subprocess.run([sys.executable, "-m", jupyter_kernels.__name__, "launch", "-f", str(tmp_path)],
                                  capture_output=True, text=True, timeout=120, cwd=tmp_path)
    finally:
        jupyter_kernels._stop(jupyter_kernels._server["process"], jupyter_kernels._server["folder"])
    assert "kernel server unavailable" not in launched.stderr  # it was forked, not a plain kernel
    assert "Traceback (most recent call last)" in launched.stderr, launched.stderr[-2000:]
    assert f"OSError: Could not find '{tmp_path}'" in launched.stderr


def test_forked_kernels_talk_over_unix_sockets_of_their_own_not_tcp_ports():
    first, second = (jupyter_kernels.kernel_manager()(kernel_name="python3") for _ in range(2))
    assert first.transport == second.transport == "ipc"
    assert first.ip != second.ip and os.path.isabs(first.ip)  # not "kernel-ipc" in the shared working folder


@pytest.mark.slow
def test_every_chapter_of_the_built_book_records_where_its_time_went(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = bench.build_breakdown(result.stdout, root / "build" / "results", cold_s=1e6)
    assert set(report["chapters"]) >= {"00_the_model", "01_layer_by_layer", "98_performance"}
    for slug, chapter in report["chapters"].items():
        assert chapter["wall_s"] >= chapter["forward_s"] >= 0 and chapter["fixed_s"] > 0, slug
    assert all(report["chapters"][slug]["model_used"] for slug in ("00_the_model", "01_layer_by_layer"))
    assert not report["chapters"]["98_performance"]["model_used"]
    assert report["site_s"] > 0


@pytest.mark.slow
def test_the_performance_page_renders_with_and_without_a_bench_file(tmp_path, monkeypatch):
    from conftest import copy_book
    from embedding_geometry.book import performance

    root = copy_book(tmp_path / "book")
    monkeypatch.setenv("EMBEDDING_GEOMETRY_RESULTS", str(tmp_path / "results"))

    def page() -> str:
        papermill.execute_notebook(str(root / "notebooks" / "98_performance.ipynb"), str(tmp_path / "out.ipynb"),
                                   cwd=str(root), kernel_name="python3", progress_bar=False)
        cells = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells
        return "".join(o.get("data", {}).get("text/html", "") for c in cells if c.cell_type == "code"
                       for o in c.outputs)

    without = page()
    assert "<code>make bench</code>" in without and 'data-label="target"' not in without  # no figures table
    assert "The time budget" in without and "make bench skips it by default" in without  # the MPNet build: not measured
    assert 'data-label="metric"' in without  # the reproducibility contract's table needs no bench
    (root / "build").mkdir(exist_ok=True)
    figures = [performance.figure("roofline", "roofline ratio, MiniLM", 0.72, "≥", 0.7, "median of 3")]
    (root / "build" / "bench.json").write_text(json.dumps({"figures": figures, "machine": {"cpus": 2}}))
    with_file = page()
    assert "roofline ratio, MiniLM" in with_file and "<td data-label=\"met\">yes</td>" in with_file
    assert json.loads((tmp_path / "results" / "98_performance.json").read_text())["metrics"]["bench"]["figures"]


def test_the_atlas_projection_scales_with_parameters_texts_and_gpus():
    import atlas_scale

    found = atlas_scale.projection(statistics_s_per_text=0.0, ray_ratio=1.0)
    mxbai = found["hours"]["mixedbread-ai/mxbai-embed-large-v1"]
    # 2 · 335e6 FLOPs · 128 tokens / 1e14 FLOP/s per text, 20,000 texts, in hours
    assert mxbai["1 GPU"] == pytest.approx(round(2 * 335e6 * 128 / 1e14 * 20_000 / 3600, 4))
    assert mxbai["8 GPU"] == pytest.approx(mxbai["1 GPU"] / 8, abs=1e-4)
    slower = atlas_scale.projection(statistics_s_per_text=0.01, ray_ratio=1.3)["hours"]
    assert slower["mixedbread-ai/mxbai-embed-large-v1"]["64 GPU"] > mxbai["64 GPU"]


def test_the_atlas_figures_carry_their_targets():
    result = {"memory": {"ratio": 1.02, "runs": [{"n_texts": 200, "peak_rss_mib": 900.0},
                                                 {"n_texts": 2000, "peak_rss_mib": 918.0}]},
              "overhead": {"ratio": 1.4, "workers": 2, "ray": 14.0, "ray_start": 3.7, "inprocess": 10.0, "shards": 20,
                           "texts": 96},
              "projection": {"texts": 20000, "tokens": 128,
                             "hours": {"org/m": {"1 GPU": 1.0, "8 GPU": 0.125, "64 GPU": 0.02}},
                             "assumed": {"gpu_effective_tflops": 100.0}, "statistics_s_per_text": 0.001,
                             "ray_ratio": 1.4}}
    memory, ray, projected = bench.atlas_figures(result)
    assert memory["met"] and not ray["met"] and projected["met"] is None and "0.125 h on 8 GPUs" in projected["detail"]
    assert "96 corpus texts in 20 shards; the instance's start apart: 3.7 s" in ray["detail"]


@pytest.mark.slow
def test_the_atlas_bench_runs_at_tiny_sizes():
    import atlas_scale

    found = atlas_scale.memory("minilm", [8, 16], batch_size=8)
    assert [r["n_texts"] for r in found["runs"]] == [8, 16] and found["ratio"] >= 1.0


@pytest.mark.slow
def test_the_shared_cores_bench_runs_each_workload_alone_and_beside_the_other(tiny_bert_dir):
    """In the build's setting, which sets both the others' parts (the shared-cores environment, and
    the nicer second process): one child process per run, each paying its imports, so one setting
    instead of three keeps the test to a third of the time."""
    import subprocess
    import sys

    from conftest import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "shared_cores.py"), "--steps", "1", "--models",
                           str(tiny_bert_dir), str(tiny_bert_dir), "--settings", "build"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [("build", k) for k in ("train", "forward")]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)
