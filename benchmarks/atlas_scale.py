"""The atlas at scale (issue 31): streamed memory, Ray's overhead, and a projection to GPUs.

    memory      peak RSS of chapter 1's per-depth statistics (``studies.depth_statistics.TextStatistics``)
                streamed over a corpus file of n texts by the atlas (``book.atlas``: parameter
                ``corpus``, shards of ``shard_texts``, a forward pass at a time), in process,
                one fresh process per size, largest ÷ smallest                                ≤ 1.10
    overhead    the same atlas plan on a running local Ray instance (``--workers`` CPUs) ÷ in
                process, activation cache off, each into an empty folder; the instance's start
                is timed apart (paid once per cluster, and not at all where ``RAY_ADDRESS``
                names one), as its share would shrink with the work                          ≤ 1.30
    projection  the posts' models at 20,000 texts of 128 tokens on 1, 8 and 64 GPUs, from the
                measured per-text cost of the statistics here and an assumed GPU forward pass
                (assumptions in ``ASSUMED`` and the output)                                  information

    .venv/bin/python benchmarks/atlas_scale.py                               # what `make bench` runs
    .venv/bin/python benchmarks/atlas_scale.py --sizes 20 40 --overhead-texts 16 --workers 2   # a quick check

Prints one JSON line (``benchmarks/run.py`` reads it). The texts are chapter 3's corpus repeated
to length, one a line, each a distinct unit. Both measurements take chapter 8's parameters from
its notebook's defaults, changed only where stated.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 2 ** 20
PROJECTED_TEXTS, PROJECTED_TOKENS = 20_000, 128
ASSUMED = {
    "gpu_effective_tflops": 100.0,  # an H100's dense bf16 peak is ~990 TFLOP/s; ~10 % reached by encoder inference
    "flops_per_token": "2 × parameters (a forward pass's matrix products; attention at T = 128 adds < 10 %)",
    "statistics": "the accumulators' per-text CPU seconds measured here on MiniLM, × (L + 1) D / (7 · 384), "
                  "one CPU core per GPU",
    "scaling": "shards spread evenly over the GPUs, each model loaded once per GPU (startup left out)",
    "overhead": "the measured Ray ÷ in-process ratio multiplies every per-text cost",
}
POSTS_MODELS = {  # the posts' models (params/published.yaml): parameters, blocks L, width D (their model cards)
    "mixedbread-ai/mxbai-embed-large-v1": (335e6, 24, 1024), "jinaai/jina-colbert-v2": (559e6, 24, 1024),
    "google-bert/bert-base-uncased": (110e6, 12, 768), "sentence-transformers/all-mpnet-base-v2": (109e6, 12, 768),
    "sentence-transformers/all-MiniLM-L6-v2": (22.7e6, 6, 384),
}
MEASURED_SHAPE = (6, 384)
"""L and D of the model whose statistics are measured (MiniLM): their cost scales with (L + 1) · D."""


def texts(n: int) -> list[str]:
    from embedding_geometry.core import corpora

    sentences = list(corpora.corpus()["sentence"])
    return (sentences * (n // len(sentences) + 1))[:n]


def chapter_parameters(**changed) -> dict:
    """Chapter 8's parameters: its notebook's defaults with ``changed``."""
    from embedding_geometry.book import rules

    return {**rules.notebook_defaults(ROOT / "notebooks" / "08_across_models.ipynb"), **changed}


def child(model: str, n_texts: int, batch_size: int) -> dict:
    """Chapter 1's statistics streamed by the atlas over a corpus file of ``n_texts`` texts (its
    corpus set alone, no controls, nothing cached): peak RSS, seconds, and the seconds spent in
    the statistics (``TextStatistics.update``, timed around each call)."""
    from embedding_geometry.book import atlas
    from embedding_geometry.book.atlas import plan
    from embedding_geometry.studies.depth_statistics import TextStatistics

    spent, update = [], TextStatistics.update

    def timed(self, acts, units):
        began = time.perf_counter()
        update(self, acts, units)
        spent.append(time.perf_counter() - began)

    TextStatistics.update = timed
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.txt"
        corpus.write_text("".join(text + "\n" for text in texts(n_texts)), encoding="utf-8")
        params = chapter_parameters(model=model, models=[], random_control=False, corpus=str(corpus),
                                    corpus_texts=None, batch_size=batch_size, device="cpu")
        chosen = plan.from_parameters(params, Path(folder) / "out")
        chosen = dataclasses.replace(chosen, sets=(chosen.text_set("corpus"),), cache=False)
        start = time.perf_counter()
        (name, found), = atlas.read(atlas.run(chosen)).items()
        seconds = time.perf_counter() - start
    return {"n_texts": n_texts, "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "seconds": round(seconds, 2), "statistics_s": round(sum(spent), 2),
            "other_s": round(seconds - sum(spent), 2), "shards": found["shards"]["corpus"], "model": name}


def memory(model: str, sizes: list[int], batch_size: int) -> dict:
    runs = []
    for n in sizes:
        done = subprocess.run([sys.executable, __file__, "--child", str(n), "--model", model, "--batch-size",
                               str(batch_size)], capture_output=True, text=True, check=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                                   "MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "1048576"})
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    peaks = [r["peak_rss_mib"] for r in runs]
    return {"model": runs[0]["model"], "runs": runs, "ratio": round(max(peaks) / min(peaks), 3)}


def overhead(model: str, n_texts: int, workers: int) -> dict:
    """Seconds of one atlas plan (``model`` and a random-init control, chapter 8's sets cut to
    ``n_texts`` corpus sentences and shards of ``n_texts // 4``) in process and on a local Ray
    instance started first (``ray_start``: its own seconds); the executor uses a running instance
    and leaves it running."""
    import ray

    from embedding_geometry.book import atlas
    from embedding_geometry.book.atlas import plan

    params = chapter_parameters(model=model, models=[], random_control=True, control_seeds=1, corpus_texts=n_texts,
                                head_texts=4, head_length=64, device="cpu", batch_size=16, sample_size=64,
                                shard_texts=max(1, n_texts // 4))
    seconds = {}
    with tempfile.TemporaryDirectory() as folder:
        for executor in ("inprocess", "ray_start", "ray"):
            began = time.perf_counter()
            if executor == "ray_start":
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
            else:
                chosen = dataclasses.replace(plan.from_parameters(params, Path(folder) / executor), cache=False)
                atlas.run(chosen, executor, workers=workers)
            seconds[executor] = round(time.perf_counter() - began, 2)
        ray.shutdown()
    return {"texts": n_texts, "workers": workers, "shards": len(chosen.shards()), **seconds,
            "ratio": round(seconds["ray"] / seconds["inprocess"], 3)}


def projection(statistics_s_per_text: float, ray_ratio: float, gpus=(1, 8, 64)) -> dict:
    """Hours for each of the posts' models at PROJECTED_TEXTS texts of PROJECTED_TOKENS tokens
    on ``gpus`` GPUs: (forward FLOPs ÷ assumed GPU FLOP/s + measured statistics seconds scaled
    by (L + 1) D) per text × texts × Ray's overhead ÷ GPUs."""
    flops_per_s = ASSUMED["gpu_effective_tflops"] * 1e12
    rows = {}
    for name, (parameters, layers, width) in POSTS_MODELS.items():
        scale = (layers + 1) * width / ((MEASURED_SHAPE[0] + 1) * MEASURED_SHAPE[1])
        per_text = 2 * parameters * PROJECTED_TOKENS / flops_per_s + statistics_s_per_text * scale
        rows[name] = {f"{g} GPU": round(per_text * PROJECTED_TEXTS * ray_ratio / g / 3600, 4) for g in gpus}
    return {"texts": PROJECTED_TEXTS, "tokens": PROJECTED_TOKENS, "assumed": ASSUMED,
            "statistics_s_per_text": round(statistics_s_per_text, 5), "ray_ratio": ray_ratio, "hours": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sizes", type=int, nargs=2, default=[200, 2000])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--overhead-texts", type=int, default=480)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child is not None:
        print(json.dumps(child(args.model, args.child, args.batch_size)))
        return 0
    found = {"memory": memory(args.model, args.sizes, args.batch_size),
             "overhead": overhead(args.model, args.overhead_texts, args.workers)}
    largest = max(found["memory"]["runs"], key=lambda r: r["n_texts"])
    found["projection"] = projection(largest["statistics_s"] / largest["n_texts"], found["overhead"]["ratio"])
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
