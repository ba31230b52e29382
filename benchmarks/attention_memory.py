"""Peak memory and throughput of chapter 4's streaming pass at several numbers of texts.

Each size runs in a fresh Python process, so that one run's peak cannot hide another's: the
child loads the model, streams ``n`` texts of T tokens through ``core.streaming.stream`` into
``studies.context_similarity.measure`` and reports its peak resident set size (``ru_maxrss``),
the pass's seconds and what the pass keeps when it ends (``ContextStats.nbytes``: totals,
per-text rows, focus counters). Statistics are folded into running totals batch by batch, so the
peaks should match; the script exits with status 1 when the largest peak exceeds the smallest by
more than ``--max-ratio`` (default 1.10).

From the two largest sizes it projects the run at ``--project`` texts (default: the paper's
20,000). Peak RSS: the largest run's peak plus the growth of what the pass keeps, on the line
through the two runs' kept bytes, plus one spare block of per-text rows. (The two peaks differ
by a few MiB of allocator noise; a line through them would multiply that noise by N / Δn.)
Hours: at the largest run's throughput (texts/s).

    .venv/bin/python benchmarks/attention_memory.py                       # MiniLM, 200 and 2,000 texts
    .venv/bin/python benchmarks/attention_memory.py --model mpnet --sizes 20 200
    .venv/bin/python benchmarks/attention_memory.py --model DIR --sizes 20 200 --length 64
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

PAPER_TEXTS = 20_000
MIB = 2 ** 20


def child(model: str, n_texts: int, length: int, batch_size: int) -> dict:
    from embedding_geometry.core import models, streaming, windows
    from embedding_geometry.studies import context_similarity

    loaded = models.load(model, device="cpu")
    texts = windows.from_source(loaded.tokenizer, "corpus", n_texts, length, seed=0)
    start = time.time()
    run = context_similarity.measure(streaming.stream(loaded, texts, batch_size), context_similarity.Settings())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    rows = run.stats.per_text
    return {"n_texts": run.stats.texts, "peak_rss_mib": round(peak_kib / 1024, 1),
            "seconds": round(time.time() - start, 1), "kept_mib": round(run.stats.nbytes / MIB, 3),
            "block_mib": round(rows.block * rows.bytes_per_text() / MIB, 3), "model": loaded.info.id}


def projection(runs: list[dict], n_texts: int) -> dict:
    """At ``n_texts``: peak RSS = the largest run's peak + (kept₂ − kept₁) / (n₂ − n₁) · (N − n₂)
    + one block of rows, through the two largest runs' kept bytes (never below the largest
    measured peak); its ratio to the smallest measured peak; hours at the largest run's
    throughput."""
    small, large = sorted(runs, key=lambda r: r["n_texts"])[-2:]
    per_text = (large["kept_mib"] - small["kept_mib"]) / (large["n_texts"] - small["n_texts"])
    peak = large["peak_rss_mib"] + max(0.0, per_text * (n_texts - large["n_texts"])) + large["block_mib"]
    texts_per_s = large["n_texts"] / max(large["seconds"], 1e-9)
    return {"n_texts": n_texts, "peak_rss_mib": round(peak, 1), "kept_kib_per_text": round(per_text * 1024, 2),
            "ratio": round(peak / min(r["peak_rss_mib"] for r in runs), 3),
            "texts_per_s": round(texts_per_s, 2), "hours": round(n_texts / texts_per_s / 3600, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm", help="an embedded model's name (minilm, mpnet), hub id or folder")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--length", type=int, default=128, help="T, tokens per text")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-ratio", type=float, default=1.10)
    parser.add_argument("--project", type=int, default=PAPER_TEXTS, help="texts to project peak RSS and hours to")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.model, args.child, args.length, args.batch_size)))
        return 0
    rows = []
    for n in args.sizes:
        command = [sys.executable, __file__, "--child", str(n), "--model", args.model,
                   "--length", str(args.length), "--batch-size", str(args.batch_size)]
        done = subprocess.run(command, capture_output=True, text=True, check=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                                   "MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "1048576"})
        # glibc: few arenas, and arrays above 1 MiB mmapped and returned on free, so the peak
        # measures what the pass holds rather than heap fragmentation from its per-batch temporaries
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{n:>7} texts  peak RSS {rows[-1]['peak_rss_mib']:8.1f} MiB  kept {rows[-1]['kept_mib']:7.3f} MiB  "
              f"({rows[-1]['seconds']} s)", flush=True)
    peaks = [r["peak_rss_mib"] for r in rows]
    ratio = max(peaks) / min(peaks)
    projected = projection(rows, args.project) if len(rows) > 1 else None
    runs = [{k: v for k, v in r.items() if k != "model"} for r in rows]
    print(json.dumps({"model": rows[0]["model"], "text_length": args.length, "batch_size": args.batch_size,
                      "runs": runs, "ratio": round(ratio, 3), "projected": projected}))
    return 0 if ratio <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
