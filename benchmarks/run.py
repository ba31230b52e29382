"""``make bench``: the book's performance figures, each a ratio measured within one run.

    roofline          achieved FLOP/s of activations.extract ÷ torch.mm's peak at the model's GEMM
                      shapes (roofline.py), each run against the better of the peaks measured
                      just before and after it; the median of 5 runs: MiniLM ≥ 0.7, MPNet ≥ 0.8;
                      the share of the passes' positions that are real tokens             ≥ 0.95
    extraction        tokens/s of activations.extract (all depths, masks, no cache) ÷ those of a
                      bare model(**batch) over the same passes (activations.batches), best of 5
                      each                                                                ≥ 0.95
    peer              tokens/s of activations.extract (every depth) ÷ those of
                      sentence_transformers' SentenceTransformer.encode (final embeddings, its
                      default batches) on the same texts and device, best of 5 each       ≥ 1.0
    cache             first extraction (computes, stores) ÷ second (loads), both models    ≥ 20
    batching          a per-sentence loop (the posts' style) ÷ extract, MiniLM       information
    memory            chapter 4's streaming pass (attention_memory.py): peak RSS, largest ÷
                      smallest number of texts (200 and 800; MPNet 64 and 320)          ≤ 1.10
    paper scale       the same pass at the paper's 20,000 texts of 128 tokens: hours at the
                      measured texts/s, and the projected peak RSS (the largest measured peak
                      plus what the pass keeps per text, times the texts to come) ÷ the
                      smallest measured peak                                              ≤ 1.10
    build             cold book build of the default profile (empty cache, venv set-up
                      excluded): seconds, the book's time budget                        ≤ 600;
                      cold book build (empty cache) ÷ (its model calls — forward passes and
                      training steps — + its site build)                                  ≤ 3;
                      per chapter, process start → first model use                      ≤ 2 s;
                      warm build (nothing changed: every chapter skipped) ÷ cold          < 0.15
    mpnet build       the cold build on params/mpnet.yaml: seconds                   information;
                      ÷ (its model calls + site)                                          ≤ 3
    atlas             the atlas (atlas_scale.py): chapter 1's statistics streamed, peak RSS at
                      2,000 ÷ 200 texts                                                   ≤ 1.10;
                      the atlas on a running local Ray instance ÷ in process, same work
                      (the instance's start timed apart)                                  ≤ 1.30;
                      the posts' models at 20,000 texts on 1, 8 and 64 GPUs (hours,
                      projected from the measured per-text cost, assumptions stated)     information
    bench             this run's own seconds (without skipped sections and the MPNet build;
                      a run of the MPNet build alone keeps the last figure)               ≤ 900

Prints a table and writes ``build/bench.json`` (read by the book's Performance page): the raw
measurements by section and ``figures``, one record per figure with its value, target and met
flag (``performance.figure``). Skipped sections keep their last measured figures.

    .venv/bin/python benchmarks/run.py --skip mpnet_build          # what `make bench` runs
    .venv/bin/python benchmarks/run.py --skip roofline cache batching memory atlas build   # the MPNet build only
    # a quick check:
    .venv/bin/python benchmarks/run.py --texts 64 --mpnet-texts 32 --skip build mpnet_build memory atlas
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))  # roofline.py beside this file
SECTIONS = ("roofline", "cache", "batching", "memory", "atlas", "build", "mpnet_build")
MODELS = {"minilm": "MiniLM", "mpnet": "MPNet"}
ROOFLINE_TARGETS = {"minilm": 0.7, "mpnet": 0.8}
COMMAND = ".venv/bin/python benchmarks/run.py"


# --------------------------------------------------------------------------- extraction

def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _sentences(n: int) -> list[str]:
    from embedding_geometry.core import corpora

    sentences = list(corpora.corpus()["sentence"])
    return (sentences * (n // len(sentences) + 1))[:n]


def roofline(loaded, texts: list[str], batch_tokens: int, runs: int = 5) -> tuple[dict, dict, dict]:
    """``runs`` runs of a bare forward over extract's own batches and of extract (no cache), with
    the matmul peak measured before each run and after the last. A run's roofline is extract's
    FLOP/s ÷ the better of the peaks measured just before and just after it: the machine's
    speed drifts by a fifth over tens of seconds when it is shared, and a peak taken at another
    moment would compare two speeds. Reported: the median over runs. The extraction overhead
    is bare ÷ extract, each its best time (neither disturbed); the peer's, sentence-transformers'
    ``encode`` ÷ extract, likewise (:func:`peer`), its runs after the others: interleaved, each
    ``encode`` left the next extract run 0.2 s slower on MiniLM (fresh memory touched slowly, an
    earlier full garbage collection), which no extract run then escaped (2026-11-29)."""
    import roofline as rl
    import torch

    from embedding_geometry.core import activations

    encoded = loaded.tokenizer(texts, truncation=True, max_length=loaded.info.max_seq_length)["input_ids"]
    lengths = [len(x) for x in encoded]
    passes = activations.batches(lengths, batch_tokens)
    batches = [activations.padded([encoded[i] for i in chunk], loaded) for chunk in passes]
    flops, real_share = rl.extraction_flops(lengths, loaded.model.config, passes)

    def bare():
        with torch.inference_mode():
            for batch in batches:
                loaded.model(**batch, output_hidden_states=True)

    def ours():
        activations.extract(loaded, texts, batch_tokens=batch_tokens, cache=False, progress=False)

    bare(), ours()  # warm-up
    peaks, t_bare, t_ours = [], [], []
    for _ in range(runs):
        peaks.append(rl.matmul_peak(loaded.model.config))
        t_bare.append(_timed(bare))
        t_ours.append(_timed(ours))
    peaks.append(rl.matmul_peak(loaded.model.config))
    encode = peer(loaded, texts)
    encode()  # warm-up; the peer's runs come after ours, whose next run they slow by a sixth (MiniLM)
    t_peer = [_timed(encode) for _ in range(runs)]
    around = [max(p["peak_gflops"] for p in pair) for pair in zip(peaks, peaks[1:])]
    achieved = [flops / t / 1e9 for t in t_ours]
    ratios = [a / p for a, p in zip(achieved, around)]
    tokens = sum(len(x) for x in encoded)
    common = {"model": loaded.info.id, "texts": len(texts), "tokens": tokens, "batch_tokens": batch_tokens,
              "passes": len(passes), "runs": runs}
    best = max(peaks, key=lambda p: p["peak_gflops"])
    return ({**common, "gflop": round(flops / 1e9, 2), "real_token_share": round(real_share, 3),
             "achieved_gflops": [round(a, 1) for a in achieved], "peak_samples": [p["peak_gflops"] for p in peaks],
             "peak_gflops": [round(p, 1) for p in around], "peak_shapes": best["shapes"],
             "ratios": [round(r, 3) for r in ratios], "ratio": round(statistics.median(ratios), 3),
             "time_split": rl.time_split(ours, flops, best["peak_gflops"])},
            {**common, "bare_tokens_per_s": round(tokens / min(t_bare)),
             "extract_tokens_per_s": round(tokens / min(t_ours)),
             "ratio": round(min(t_bare) / min(t_ours), 3)},
            {**common, "encode_tokens_per_s": round(tokens / min(t_peer)),
             "extract_tokens_per_s": round(tokens / min(t_ours)), "ratio": round(min(t_peer) / min(t_ours), 3)})


def peer(loaded, texts: list[str]):
    """The library's way to the same texts' embeddings: sentence-transformers' pipeline for the
    model (its own modules: Transformer, Pooling, Normalize) on the same device, ``encode`` with
    its defaults (32 texts a batch, sorted by length). Final embeddings only, against the book's
    every depth. Returns the call to time."""
    from embedding_geometry.core import models

    pipeline = models.sentence_transformer(loaded)
    if pipeline is None:
        raise SystemExit(f"the peer needs a sentence-transformers model; {loaded.info.id} has no modules.json")
    return lambda: pipeline.encode(texts, convert_to_numpy=True, show_progress_bar=False)


def batching(loaded, texts: list[str], batch_tokens: int) -> dict:
    """extract against a per-sentence loop: one tokenizer call and one forward per sentence."""
    import torch

    from embedding_geometry.core import activations

    def loop():
        with torch.inference_mode():
            for text in texts:
                encoding = loaded.tokenizer(text, return_tensors="pt")
                output = loaded.model(**encoding, output_hidden_states=True)
                [h[0].numpy() for h in output.hidden_states]

    t_loop = _timed(loop)
    t_ours = _timed(lambda: activations.extract(loaded, texts, batch_tokens=batch_tokens, cache=False, progress=False))
    return {"model": loaded.info.id, "texts": len(texts), "loop_s": round(t_loop, 2), "extract_s": round(t_ours, 2),
            "gain": round(t_loop / t_ours, 2)}


def cache(loaded, texts: list[str], batch_tokens: int) -> dict:
    """First extraction (computes and stores) against the second (loads)."""
    from embedding_geometry.core import activations

    folder = tempfile.mkdtemp(prefix="eg-bench-cache-")
    try:
        def run():
            return activations.extract(loaded, texts, batch_tokens=batch_tokens, cache_dir=folder, progress=False)
        t_first, t_second = _timed(run), _timed(run)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"model": loaded.info.id, "texts": len(texts), "first_s": round(t_first, 2), "second_s": round(t_second, 3),
            "speedup": round(t_first / t_second, 1)}


# --------------------------------------------------------------------------- chapter 4 at scale

def memory(model: str, sizes: list[int]) -> dict:
    """Chapter 4's streaming pass at each size, one fresh process each (attention_memory.py),
    with the projection to the paper's 20,000 texts."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "attention_memory.py"), "--model", model,
                           "--sizes", *map(str, sizes)], capture_output=True, text=True)
    if not done.stdout.strip():
        raise SystemExit(f"attention_memory.py failed for {model}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- the atlas at scale

def atlas(sizes: list[int], workers: int) -> dict:
    """atlas_scale.py in a fresh process: streamed memory, Ray ÷ in process, the GPU projection."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "atlas_scale.py"), "--sizes", *map(str, sizes),
                           "--workers", str(workers)], capture_output=True, text=True)
    if not done.stdout.strip():
        raise SystemExit(f"atlas_scale.py failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def atlas_figures(r: dict) -> list[dict]:
    from embedding_geometry.book.performance import figure

    runs = ", ".join(f"{x['n_texts']:,} texts: {x['peak_rss_mib']:,} MiB" for x in r["memory"]["runs"])
    o, p = r["overhead"], r["projection"]
    out = [figure("atlas", "atlas, chapter 1's statistics streamed: peak RSS, largest ÷ smallest", r["memory"]["ratio"],
                  "≤", 1.10, runs),
           figure("atlas", f"atlas on a local Ray instance ÷ in process ({o['workers']} workers)",
                  o["ratio"], "≤", 1.30,
                  f"{o['ray']} s vs {o['inprocess']} s, {o['texts']} corpus texts in {o['shards']} shards; "
                  f"the instance's start apart: {o.get('ray_start', 'not timed')} s")]
    for model, hours in p["hours"].items():
        out.append(figure("atlas", f"projected hours, {model.rsplit('/', 1)[-1]}, {p['texts']:,} texts × {p['tokens']}",
                          hours["1 GPU"], None, None,
                          f"{hours['8 GPU']} h on 8 GPUs, {hours['64 GPU']} h on 64; assumed "
                          f"{p['assumed']['gpu_effective_tflops']} TFLOP/s per GPU, 2 × parameters FLOPs per token, "
                          f"{p['statistics_s_per_text']} s of statistics per text (measured), Ray ×{p['ray_ratio']}"))
    return out


# --------------------------------------------------------------------------- the build

def build(profile: str = "default", warm: bool = True) -> dict:
    """A cold build of the whole book on ``profile`` (a copy of its sources, an empty activation
    cache), split per chapter into model calls, analysis and fixed overhead (book/build's lines,
    each chapter's ``environment.timing``); then, with ``warm``, the same build again."""
    from embedding_geometry.book.build import copy_sources

    workdir, commit, began = Path(tempfile.mkdtemp(prefix="eg-bench-book-")), _commit(), _now()
    try:
        copy_sources(ROOT, workdir)
        env = {**os.environ, "EMBEDDING_GEOMETRY_CACHE": str(workdir / "cache")}
        command = [sys.executable, "-m", "embedding_geometry", "build", "--root", str(workdir), "--profile", profile]
        cold_s, output = _build_once(command, env)
        report = {"profile": profile, "commit": commit, "measured_at": began, "cold_s": round(cold_s, 1),
                  **build_breakdown(output, workdir / "build" / "results", cold_s)}
        if warm:
            warm_s, output = _build_once(command, env)
            skipped = re.findall(r"^\s*(ran|skipped)\s+(\S+)", output, flags=re.M)
            report.update(warm_s=round(warm_s, 1), warm_fraction=round(warm_s / cold_s, 3),
                          warm_skipped_every_chapter=bool(skipped) and all(s == "skipped" for s, _ in skipped))
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _commit() -> str:
    """The checkout's commit (with ``+`` when it has uncommitted changes): what a build measured."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head, dirty = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain", "--untracked-files=no")
    return head + ("+" if dirty else "") if head else "unknown"


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def _build_once(command: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"book build failed during the benchmark:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def build_breakdown(output: str, results: Path, cold_s: float) -> dict:
    """Per chapter (from the build's ``ran <slug> <s> s`` lines and each results JSON's
    ``environment.timing``): wall seconds, seconds in model calls (``forward_s``: forward passes
    and training steps; those of a chapter's worker pool are its workers' model-call seconds over
    their number, ``core.clock.add_pool_calls``), fixed overhead (process start → first model use, or → the chapter's
    open for a page that calls none, plus papermill's launch and shutdown around the kernel) and
    analysis (the rest); the site build's seconds; the build process's own seconds (cold less the
    site and the chapters run one after another: a chapter run ``alongside`` the others overlaps
    them, and waiting for it counts here); and the ratio cold ÷ (Σ model calls + site)."""
    chapters = {}
    for slug, wall, note in re.findall(r"^\s*ran\s+(\S+)\s+([\d.]+) s(.*)$", output, flags=re.M):
        timing = json.loads((results / f"{slug}.json").read_text())["environment"]["timing"]
        to_first = timing["process_to_first_model_use_s"]
        start_up = to_first if to_first is not None else timing["process_to_open_s"]
        wall = float(wall)
        fixed = start_up + max(0.0, wall - timing["process_seconds"])
        chapters[slug] = {"wall_s": wall, "forward_s": round(timing["forward_seconds"], 2), "fixed_s": round(fixed, 2),
                          "analysis_s": round(wall - fixed - timing["forward_seconds"], 2),
                          "to_first_model_use_s": round(start_up, 2), "model_used": to_first is not None,
                          "cpu_to_first_model_use_s": timing["cpu_to_first_model_use_s"],
                          "torch_threads": timing.get("torch_threads"), "alongside": "alongside" in note}
    site = re.search(r"^\s*site\s+jupyter-book build\s+([\d.]+) s", output, flags=re.M)
    site_s = float(site.group(1)) if site else 0.0
    forward = sum(c["forward_s"] for c in chapters.values())
    worst = max(chapters, key=lambda s: chapters[s]["to_first_model_use_s"])
    return {"chapters": chapters, "site_s": site_s, "forward_s": round(forward, 1),
            "build_process_s": round(cold_s - site_s - sum(c["wall_s"] for c in chapters.values()
                                                           if not c["alongside"]), 1),
            "overhead_ratio": round(cold_s / (forward + site_s), 2),
            "slowest_start": worst, "max_to_first_model_use_s": chapters[worst]["to_first_model_use_s"]}


def imports() -> dict:
    """What a chapter kernel imports before its first model use (book/jupyter_kernels.PRELOAD and the
    package), timed in a fresh process: the start-up cost that forked kernels pay once per build."""
    code = ("import time; w, c = time.perf_counter(), time.process_time(); "
            "from embedding_geometry.book import jupyter_kernels; jupyter_kernels._preload(); "
            "print(time.perf_counter() - w, time.process_time() - c)")
    wall, cpu = map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout.split())
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


# --------------------------------------------------------------------------- figures

def figures(results: dict) -> list[dict]:
    """One record per figure (``performance.figure``): value, target, met, detail, and its section."""
    from embedding_geometry.book.performance import figure

    out = []
    for name, label in MODELS.items():
        if r := results.get("roofline", {}).get(name):
            out.append(figure("roofline", f"roofline ratio, {label} (achieved ÷ peak FLOP/s)", r["ratio"], "≥",
                              ROOFLINE_TARGETS[name],
                              f"median of {', '.join(map(str, r['ratios']))}; {r['gflop']} GFLOP over {r['texts']} "
                              f"texts ({_passes(r)}) at {statistics.median(r['achieved_gflops'])} GFLOP/s; peak "
                              f"{statistics.median(r['peak_gflops'])} GFLOP/s, each run's the better of the "
                              f"measurements just before and after it"))
            out.append(figure("roofline", f"real tokens ÷ positions computed, {label}", r["real_token_share"], "≥",
                              0.95, f"{r['tokens']:,} tokens of {r['texts']} texts, {_passes(r)}"))
            if split := r.get("time_split"):
                others = ", ".join(f"{op.removeprefix('aten::')} {share:.0%}" for op, share in split["others"].items())
                out.append(figure("roofline", f"time in matrix products, {label} (share of one profiled pass)",
                                  split["gemm_share"], None, None,
                                  f"at {split['gemm_efficiency']} of the peak inside them; the most of the rest: "
                                  f"{others}"))
        if r := results.get("extraction", {}).get(name):
            out.append(figure("roofline", f"extraction ÷ bare forward, {label} (tokens/s)", r["ratio"], "≥", 0.95,
                              f"{r['extract_tokens_per_s']:,} vs {r['bare_tokens_per_s']:,} tokens/s, {r['texts']} "
                              f"texts, the best of {r.get('runs', 3)} runs each"))
        if r := results.get("peer", {}).get(name):
            out.append(figure("roofline", f"extraction, every depth ÷ SentenceTransformer.encode, {label} (tokens/s)",
                              r["ratio"], "≥", 1.0,
                              f"{r['extract_tokens_per_s']:,} vs {r['encode_tokens_per_s']:,} tokens/s, {r['texts']} "
                              f"texts, the best of {r['runs']} runs each; encode: final embeddings, its default "
                              f"batches"))
        if r := results.get("cache", {}).get(name):
            out.append(figure("cache", f"cache speed-up, {label} (first ÷ second extraction)", r["speedup"], "≥", 20,
                              f"{r['first_s']} s vs {r['second_s']} s, {r['texts']} texts"))
    if r := results.get("batching"):
        out.append(figure("batching", "batching gain, MiniLM (per-sentence loop ÷ extract)", r["gain"], None, None,
                          f"{r['loop_s']} s vs {r['extract_s']} s, {r['texts']} sentences"))
    for name, label in MODELS.items():
        if r := results.get("memory", {}).get(name):
            peaks = ", ".join(f"{x['n_texts']:,} texts: {x['peak_rss_mib']:,} MiB" for x in r["runs"])
            out.append(figure("memory", f"chapter 4 peak RSS, {label} (largest ÷ smallest)", r["ratio"], "≤", 1.10,
                              peaks))
            p = r["projected"]
            out.append(figure("memory", f"paper scale, {label}: projected peak RSS ÷ smallest measured", p["ratio"],
                              "≤", 1.10, f"{p['n_texts']:,} texts of {r['text_length']} tokens: "
                              f"{p['peak_rss_mib']:,} MiB ({p['kept_kib_per_text']} KiB kept per text), "
                              f"{p['hours']} h at {p['texts_per_s']} texts/s"))
    if r := results.get("atlas"):
        out += atlas_figures(r)
    out += budget_figures(results)
    for section, label in (("build", ""), ("mpnet_build", " (params/mpnet.yaml)")):
        if r := results.get(section):
            out.append(figure(section, f"cold build ÷ (model calls + site build){label}", r["overhead_ratio"], "≤", 3,
                              f"profile {r['profile']}: {r['cold_s']} s cold; {r['forward_s']} s in model calls, "
                              f"{r['site_s']} s site{_when(r)}"))
            out.append(figure(section, f"process start → first model use, slowest chapter{label} (s)",
                              r["max_to_first_model_use_s"], "≤", 2, r["slowest_start"]))
    if (r := results.get("build")) and "warm_fraction" in r:
        skipped = "yes" if r["warm_skipped_every_chapter"] else "no"
        out.append(figure("build", "warm ÷ cold book build", r["warm_fraction"], "<", 0.15,
                          f"{r['warm_s']} s warm; every chapter skipped: {skipped}",
                          met=r["warm_fraction"] < 0.15 and r["warm_skipped_every_chapter"]))
    return out


def budget_figures(results: dict) -> list[dict]:
    """The cold builds' seconds: the default profile's against the book's time budget
    (``clock.BUILD_BUDGET_S``; another profile's is information), the MPNet profile's as
    information, each with its date and commit."""
    from embedding_geometry.book.performance import figure
    from embedding_geometry.core.clock import BUILD_BUDGET_S

    out = []
    if r := results.get("build"):
        default = r["profile"] == "default"
        out.append(figure("build", f"cold build, profile {r['profile']} (s), against the "
                          f"{BUILD_BUDGET_S // 60}-minute budget" if default else
                          f"cold build, profile {r['profile']} (s)", r["cold_s"], "≤" if default else None,
                          BUILD_BUDGET_S if default else None, f"venv set-up excluded{_when(r)}"))
    if r := results.get("mpnet_build"):
        out.append(figure("mpnet_build", "cold build, params/mpnet.yaml (s)", r["cold_s"], None, None,
                          f"venv set-up excluded{_when(r)}"))
    return out


def kept_sections(skip: list[str]) -> set[str]:
    """The sections whose figures a run keeps from the last one: those it skips, and the bench's
    own time when it measures nothing but the MPNet build."""
    return set(skip) | ({"bench"} if set(SECTIONS) - {"mpnet_build"} <= set(skip) else set())


def ordered(found: list[dict]) -> list[dict]:
    """Figures in the order of the sections (SECTIONS, then the bench's own time), each section's
    in the order given: kept figures of a skipped section sit where a measured one would."""
    rank = {section: i for i, section in enumerate((*SECTIONS, "bench"))}
    return sorted(found, key=lambda f: rank.get(f["section"], len(rank)))


def _passes(r: dict) -> str:
    """How a roofline run was batched: its passes, and their limit (the text count of older runs)."""
    if "batch_tokens" in r:
        return f"{r['passes']} passes of ≤ {r['batch_tokens']:,} positions"
    return f"batches of {r['batch_size']} texts"


def _when(report: dict) -> str:
    return f"; measured {report['measured_at']} at {report['commit']}" if "commit" in report else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], choices=SECTIONS,
                        help="sections not to measure now (their last measured figures are kept)")
    parser.add_argument("--texts", type=int, default=600, help="corpus sentences for MiniLM's extraction figures")
    parser.add_argument("--mpnet-texts", type=int, default=200, help="corpus sentences for MPNet's (~8× the FLOPs)")
    parser.add_argument("--batch-tokens", type=int, default=None,
                        help="positions per forward pass at most in the extraction figures (default: extract's)")
    parser.add_argument("--batching-texts", type=int, default=200, help="sentences for the per-sentence loop")
    parser.add_argument("--memory-sizes", type=int, nargs=2, default=[200, 800], help="chapter 4 texts, MiniLM")
    parser.add_argument("--mpnet-memory-sizes", type=int, nargs=2, default=[64, 320],
                        help="chapter 4 texts, MPNet (each at least two batches: one batch alone peaks lower)")
    parser.add_argument("--atlas-sizes", type=int, nargs=2, default=[200, 2000], help="texts streamed, atlas memory")
    parser.add_argument("--atlas-workers", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--build-profile", default="default", help="the profile of the timed cold and warm builds")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    began = time.perf_counter()
    import torch

    from embedding_geometry.book import performance
    from embedding_geometry.book.chapter import seed_everything
    from embedding_geometry.core import activations, models

    batch_tokens = args.batch_tokens or activations.BATCH_TOKENS
    out = ROOT / "build" / "bench.json"
    previous = json.loads(out.read_text()) if out.is_file() else {}
    kept = {"roofline": ["roofline", "extraction", "peer"], "mpnet_build": ["mpnet_build"]}
    results: dict = {key: previous[key] for name in args.skip for key in kept.get(name, [name]) if key in previous}
    results.update({"tests": previous["tests"]} if "tests" in previous else {})  # make test-times' section
    for name, n_texts in (("minilm", args.texts), ("mpnet", args.mpnet_texts)):
        steps = [s for s in ("roofline", "cache", "batching")
                 if s not in args.skip and (s != "batching" or name == "minilm")]
        if not steps:
            continue
        seed_everything(0)
        loaded, texts = models.load(name, device="cpu"), _sentences(n_texts)
        for section in steps:
            print(f"measuring {section}, {name} …", flush=True)
            if section == "roofline":
                for key, found in zip(("roofline", "extraction", "peer"), roofline(loaded, texts, batch_tokens)):
                    results.setdefault(key, {})[name] = found
            elif section == "cache":
                results.setdefault("cache", {})[name] = cache(loaded, texts, batch_tokens)
            else:
                results["batching"] = batching(loaded, _sentences(args.batching_texts), batch_tokens)
    if "memory" not in args.skip:
        for name, sizes in (("minilm", args.memory_sizes), ("mpnet", args.mpnet_memory_sizes)):
            print(f"measuring memory, {name} …", flush=True)
            results.setdefault("memory", {})[name] = memory(name, sizes)
    if "atlas" not in args.skip:
        print("measuring atlas (memory, Ray overhead, projection) …", flush=True)
        results["atlas"] = atlas(args.atlas_sizes, args.atlas_workers)
    if "build" not in args.skip:
        print("measuring build (cold, then warm) …", flush=True)
        results["build"] = {**build(args.build_profile), "imports": imports()}
    seconds = time.perf_counter() - began  # the default sections' time: the MPNet build is opt-in and long
    if "mpnet_build" not in args.skip:
        print("measuring mpnet_build (cold) …", flush=True)
        results["mpnet_build"] = build("mpnet", warm=False)
    skipped = kept_sections(args.skip)
    kept = [f for f in previous.get("figures", []) if f["section"] in skipped]
    results["figures"] = ordered(kept + [f for f in figures(results) if f["section"] not in skipped])
    if "bench" not in skipped:
        results["figures"].append(performance.figure("bench", "this benchmark's own time (s)", round(seconds), "≤", 900,
                                               f"skipped: {', '.join(args.skip) or 'nothing'}; the MPNet build, "
                                               f"when measured, is not counted"))
    results["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "torch_threads": torch.get_num_threads(),
                          "python": platform.python_version(), "torch": torch.__version__,
                          "measured_at": _now(), "commit": _commit(),
                          "command": " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(performance.performance_table(results).to_string(index=False))
    print(f"written: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
