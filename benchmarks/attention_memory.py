"""Peak memory of chapter 4's streaming pass at several numbers of texts.

Each size runs in a fresh Python process, so that one run's peak cannot hide another's: the
child loads the model, streams ``n`` texts of T tokens through ``core.streaming.stream`` into
``studies.context_similarity.measure`` and reports
its peak resident set size (``ru_maxrss``). Statistics are folded into running totals batch by
batch, so the peaks should match; the script exits with status 1 when the largest peak exceeds
the smallest by more than ``--max-ratio`` (default 1.10).

    .venv/bin/python benchmarks/attention_memory.py                       # MiniLM, 200 and 2,000 texts
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


def child(model: str, n_texts: int, length: int, batch_size: int) -> dict:
    from embedding_geometry.core import models, streaming, windows
    from embedding_geometry.studies import context_similarity

    loaded = models.load(model, device="cpu")
    texts = windows.from_source(loaded.tokenizer, "corpus", n_texts, length, seed=0)
    start = time.time()
    run = context_similarity.measure(streaming.stream(loaded, texts, batch_size), context_similarity.Settings())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"n_texts": run.stats.texts, "peak_rss_mib": round(peak_kib / 1024, 1),
            "seconds": round(time.time() - start, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--length", type=int, default=128, help="T, tokens per text")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-ratio", type=float, default=1.10)
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
        print(f"{n:>7} texts  peak RSS {rows[-1]['peak_rss_mib']:8.1f} MiB  ({rows[-1]['seconds']} s)", flush=True)
    peaks = [r["peak_rss_mib"] for r in rows]
    ratio = max(peaks) / min(peaks)
    print(json.dumps({"model": args.model, "text_length": args.length, "runs": rows, "ratio": round(ratio, 3)}))
    return 0 if ratio <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
