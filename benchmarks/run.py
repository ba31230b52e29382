"""``make bench``: the book's performance figures, each a ratio measured within one run.

    extraction overhead   tokens/s of activations.extract (all depths, masks, no cache) ÷ tokens/s
                          of a bare model(**batch) over the same length-sorted batches   target ≥ 0.90
    batching gain         activations.extract vs a per-sentence loop (the posts' style)    target ≥ 5×
    cache speed-up        second extraction of the same inputs vs the first               target ≥ 20×
    build                 cold book build (empty cache) and warm (nothing changed);
                          warm skips every chapter and takes < 15 % of cold
    attention memory      peak RSS of chapter 4's streaming pass at 200 and 2,000 texts    ratio ≤ 1.10
                          (benchmarks/attention_memory.py), and its throughput in texts/s

Prints a table and writes ``build/bench.json`` (read by the book's Performance page).

    .venv/bin/python benchmarks/run.py                 # everything (several minutes)
    .venv/bin/python benchmarks/run.py --skip build    # leave out the (slowest) build timing;
                                                       # skipped figures keep their last measured values
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("extraction", "batching", "cache", "build", "memory")


def _best_of(repeats: int, run) -> float:
    """The fastest of ``repeats`` timings of ``run()`` (seconds): the least disturbed by noise."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _sentences(n: int) -> list[str]:
    from embedding_geometry.core import corpora

    sentences = list(corpora.corpus()["sentence"])
    return (sentences * (n // len(sentences) + 1))[:n] if n > len(sentences) else sentences[:n]


def extraction(loaded, texts: list[str], batch_size: int) -> dict:
    """Throughput of extract (no cache) against the bare forward over identical batches."""
    import torch

    from embedding_geometry.core import activations

    encoded = loaded.tokenizer(texts, truncation=True, max_length=loaded.info.max_seq_length)["input_ids"]
    order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
    batches = [loaded.tokenizer.pad({"input_ids": [encoded[i] for i in order[s:s + batch_size]]}, return_tensors="pt")
               for s in range(0, len(texts), batch_size)]
    tokens = sum(len(x) for x in encoded)

    def bare():
        with torch.inference_mode():
            for batch in batches:
                loaded.model(**batch)

    def ours():
        activations.extract(loaded, texts, batch_size=batch_size, cache=False, progress=False)

    bare(), ours()  # warm-up
    t_bare, t_ours = _best_of(3, bare), _best_of(3, ours)
    return {"texts": len(texts), "tokens": tokens, "bare_tokens_per_s": round(tokens / t_bare),
            "extract_tokens_per_s": round(tokens / t_ours), "ratio": round(t_bare / t_ours, 3), "target": 0.90}


def batching(loaded, texts: list[str], batch_size: int) -> dict:
    """extract against a per-sentence loop: one tokenizer call and one forward per sentence."""
    import torch

    from embedding_geometry.core import activations

    def loop():
        with torch.inference_mode():
            for text in texts:
                encoding = loaded.tokenizer(text, return_tensors="pt")
                output = loaded.model(**encoding, output_hidden_states=True)
                [h[0].numpy() for h in output.hidden_states]

    def ours():
        activations.extract(loaded, texts, batch_size=batch_size, cache=False, progress=False)

    t_loop, t_ours = _best_of(1, loop), _best_of(1, ours)
    return {"texts": len(texts), "loop_s": round(t_loop, 2), "extract_s": round(t_ours, 2),
            "gain": round(t_loop / t_ours, 2), "target": 5.0}


def cache(loaded, texts: list[str], batch_size: int) -> dict:
    """First extraction (computes and stores) against the second (loads)."""
    from embedding_geometry.core import activations

    folder = tempfile.mkdtemp(prefix="eg-bench-cache-")
    try:
        run = lambda: activations.extract(loaded, texts, batch_size=batch_size, cache_dir=folder, progress=False)
        t_first, t_second = _best_of(1, run), _best_of(1, run)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"texts": len(texts), "first_s": round(t_first, 2), "second_s": round(t_second, 3),
            "speedup": round(t_first / t_second, 1), "target": 20.0}


def build() -> dict:
    """A cold build of the whole book (a copy of its sources, an empty cache), then a warm one."""
    workdir = Path(tempfile.mkdtemp(prefix="eg-bench-book-"))
    try:
        from embedding_geometry.book.build import copy_sources

        copy_sources(ROOT, workdir)
        env = {**os.environ, "EMBEDDING_GEOMETRY_CACHE": str(workdir / "cache")}
        command = [sys.executable, "-m", "embedding_geometry", "build", "--root", str(workdir)]
        timings, outputs = [], []
        for _ in range(2):
            start = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            timings.append(time.perf_counter() - start)
            outputs.append(done.stdout)
            if done.returncode != 0:
                raise SystemExit(f"book build failed during the benchmark:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        chapters = re.findall(r"^\s*(ran|skipped)\s+(\S+)", outputs[1], flags=re.M)
        return {"cold_s": round(timings[0], 1), "warm_s": round(timings[1], 1),
                "warm_fraction": round(timings[1] / timings[0], 3), "target": 0.15,
                "warm_skipped_every_chapter": bool(chapters) and all(s == "skipped" for s, _ in chapters),
                "chapters": len(chapters)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def memory(sizes=(200, 2000)) -> dict:
    """Chapter 4's streaming pass at each size, one fresh process each (attention_memory.py)."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "attention_memory.py"), "--sizes", *map(str, sizes)],
                          capture_output=True, text=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    largest = max(report["runs"], key=lambda r: r["n_texts"])
    report["texts_per_s"] = round(largest["n_texts"] / largest["seconds"], 1)
    report["target"] = 1.10
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], choices=SECTIONS,
                        help="figures not to measure now (their last measured values are kept)")
    parser.add_argument("--texts", type=int, default=1000, help="corpus sentences for the extraction figures")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    from embedding_geometry.book import build as book_build, pages
    from embedding_geometry.book.chapter import seed_everything
    from embedding_geometry.core import models

    seed_everything(0)
    loaded = models.load(device="cpu")
    texts = _sentences(args.texts)
    out = ROOT / "build" / "bench.json"
    previous = json.loads(out.read_text()) if out.is_file() else {}
    results: dict = {name: previous[name] for name in args.skip if name in previous}  # kept from the last run
    for name, run in (("extraction", lambda: extraction(loaded, texts, args.batch_size)),
                      ("batching", lambda: batching(loaded, texts, args.batch_size)),
                      ("cache", lambda: cache(loaded, texts, args.batch_size)),
                      ("memory", memory), ("build", build)):
        if name not in args.skip:
            print(f"measuring {name} …", flush=True)
            results[name] = run()
    results["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                          "python": platform.python_version(), "torch": torch.__version__, "model": loaded.info.id,
                          "measured_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(pages.performance_table(results).to_string(index=False))
    print(f"written: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
