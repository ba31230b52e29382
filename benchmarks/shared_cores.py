"""Two chapters on one machine's cores: why the build's second process runs nicer, with thread
pools that wait without spinning (``book/schedule.py``: ``SHARED_CORES``, ``ALONGSIDE_NICENESS``).

Two workloads stand for the two sides of a build: ``train``, MiniLM training steps (forward,
backward, AdamW: chapter 7's kind of work), and ``forward``, MPNet forward passes (the chapters in
order). Each runs in a fresh process (thread pools read their settings as they start), alone and
then beside the other, under three settings:

    default     the libraries' own waiting (threads spin after each parallel region)
    passive     ``SHARED_CORES`` in both processes' environment
    build       ``SHARED_CORES``, and ``train`` ``ALONGSIDE_NICENESS`` steps nicer (as a build runs them)

It prints each run's wall seconds; beside the other, each is compared with its time alone. Run it
on a quiet machine: another process's load is what it measures.

    .venv/bin/python benchmarks/shared_cores.py               # 12 steps or passes of 32 texts each
    .venv/bin/python benchmarks/shared_cores.py --steps 24
    .venv/bin/python benchmarks/shared_cores.py --steps 1 --models DIR DIR   # other models (its test: tiny ones)
    .venv/bin/python benchmarks/shared_cores.py --settings build           # one setting (its test: the build's)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from embedding_geometry.book.schedule import ALONGSIDE_NICENESS, SHARED_CORES

MODELS = {"train": "sentence-transformers/all-MiniLM-L6-v2", "forward": "sentence-transformers/all-mpnet-base-v2"}
SETTINGS = ("default", "passive", "build")
TEXTS = [f"sentence {i}: a cat sat on the mat by the river bank and watched the boats go by" for i in range(32)]


def child(kind: str, steps: int, model: str) -> float:
    """Wall seconds of ``steps`` training steps (``train``) or forward passes (``forward``) of ``model``."""
    import torch

    from embedding_geometry.core import models

    torch.manual_seed(0)
    loaded = models.load(model, device="cpu")
    batch = loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    net = loaded.model
    start = time.perf_counter()
    if kind == "train":
        net.train()
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-5)
        for _ in range(steps):
            pooled = net(**batch).last_hidden_state.mean(1)
            loss = (pooled @ pooled.T).logsumexp(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    else:
        with torch.inference_mode():
            for _ in range(steps):
                net(**batch)
    return time.perf_counter() - start


def start(kind: str, steps: int, setting: str, model: str) -> subprocess.Popen:
    env = {**os.environ, **(SHARED_CORES if setting != "default" else {})}
    nice = ALONGSIDE_NICENESS if setting == "build" and kind == "train" else 0
    return subprocess.Popen([sys.executable, __file__, "--child", kind, "--steps", str(steps), "--models", model,
                             model], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)


def seconds(process: subprocess.Popen) -> float:
    out, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"a benchmark process failed (exit code {process.returncode})")
    return float(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12, help="training steps or forward passes per run")
    parser.add_argument("--models", nargs=2, metavar=("TRAIN", "FORWARD"), default=list(MODELS.values()),
                        help="the models of the two workloads (hub ids or local model directories)")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS),
                        help="which of the three settings to run (default: all)")
    parser.add_argument("--child", choices=sorted(MODELS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = dict(zip(MODELS, args.models))
    if args.child:
        print(child(args.child, args.steps, chosen[args.child]))
        return
    print(f"{'setting':<9} {'workload':<8} {'alone s':>8} {'beside s':>9} {'beside ÷ alone':>15}")
    for setting in args.settings:
        alone = {kind: seconds(start(kind, args.steps, setting, chosen[kind])) for kind in MODELS}
        running = {kind: start(kind, args.steps, setting, chosen[kind]) for kind in MODELS}
        beside = {kind: seconds(process) for kind, process in running.items()}
        for kind in MODELS:
            print(f"{setting:<9} {kind:<8} {alone[kind]:8.3g} {beside[kind]:9.3g} {beside[kind] / alone[kind]:15.2f}")


if __name__ == "__main__":
    main()
