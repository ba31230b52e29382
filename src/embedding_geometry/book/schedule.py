"""How the build runs its chapters: one after another in this process, and a chapter that declares
``embedding_geometry.alongside: true`` in a second process beside them, ranked lower by the
scheduler, while every kernel's thread pools wait without spinning. Each chapter's outcome is
reported on one line as it ends."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import pickle
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHARED_CORES = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}
"""How idle threads wait while two chapters share the cores: at once, not spinning. By default a
thread pool keeps its threads spinning after each parallel region (torch's OpenMP about 300,000
turns, numpy's OpenBLAS about 2²⁸ cycles), which is free on cores of one's own and steals the
other process's time on shared ones. ``benchmarks/shared_cores.py`` on 2 cores (MiniLM training
steps beside MPNet forward passes; two runs): beside the other, each took 2.3–3.3× its time alone
with spinning threads, 1.4–1.7× with these. Alone, waiting at once is slower (a forward pass 5–25 %),
so it is set only for builds that run a chapter alongside. Neither setting changes any arithmetic.
A value the caller's environment already holds is kept."""

ALONGSIDE_NICENESS = 10
"""How much lower the scheduler ranks a chapter run alongside (``os.nice``): the chapters in
order are the build's longest path, and a chapter alongside has time to spare; it takes the cycles
they leave (Linux gives a process 10 steps nicer about a tenth of a contested core). In the
same benchmark the forward passes then took 1.1–1.35× their time alone, the training 2.0–2.2×."""


@dataclass
class Outcome:
    slug: str
    status: str  # "ran", "skipped", "failed"
    seconds: float
    message: str = ""


def run_chapters(planned: dict[Path, dict[str, Any]], root: Path, force: bool, runner) -> list[Outcome]:
    """Run the ``planned`` chapters in order with ``runner`` (``build.run_chapter``), reporting each. A
    chapter whose notebook declares ``embedding_geometry.alongside: true`` (it shares no forward pass
    with the others through the activation cache: chapter 7 trains and measures its own copies) runs
    in a second process alongside the rest, when there is a rest and that process can import the
    runner by name, ranked lower by the scheduler (:data:`ALONGSIDE_NICENESS`), every kernel's
    threads then waiting without spinning (:data:`SHARED_CORES`); a summary page
    (``depends_on_results``) waits for it."""
    parallel = len(planned) > 1 and _importable(runner)
    alongside = [n for n in planned if metadata(n).get("alongside")] if parallel else []
    with _environment(SHARED_CORES if alongside else {}):
        background = {n: _start_alongside(runner, n, planned[n], root, force) for n in alongside}
        return _run_in_order(planned, alongside, background, root, force, runner)


def _run_in_order(planned, alongside, background, root: Path, force: bool, runner) -> list[Outcome]:
    """The chapters not run alongside, in order, then those that were, reported as each ends."""
    outcomes = []
    try:
        for notebook, params in planned.items():
            if metadata(notebook).get("depends_on_results"):
                outcomes += _finish_alongside(background)
            if notebook not in alongside:
                outcomes.append(runner(notebook, params, root, force))
                report(outcomes[-1])
        return outcomes + _finish_alongside(background)
    finally:
        for process, _ in background.values():
            process.terminate()


@contextlib.contextmanager
def _environment(defaults: dict[str, str]):
    """``os.environ`` with ``defaults`` for the names it lacks (kernels and their server started
    meanwhile inherit them), restored afterwards."""
    added = {name: value for name, value in defaults.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _importable(runner) -> bool:
    """Whether another process can be handed ``runner``: a function it imports by its name."""
    try:
        pickle.dumps(runner)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _start_alongside(runner, notebook: Path, params: dict[str, Any], root: Path, force: bool):
    """A fresh process running ``runner`` on ``notebook``, and the pipe its outcome comes back on."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_run_and_send, args=(sender, runner, notebook, params, root, force))
    process.start()
    sender.close()
    return process, receiver


def _run_and_send(sender, runner, notebook: Path, params: dict[str, Any], root: Path, force: bool) -> None:
    install_sigterm_handler()
    os.nice(ALONGSIDE_NICENESS)  # its kernel server and kernels inherit it
    sender.send(runner(notebook, params, root, force))


def _finish_alongside(background: dict) -> list[Outcome]:
    """Wait for every chapter still running alongside, report each, and forget it."""
    outcomes = []
    for notebook, (process, receiver) in list(background.items()):
        try:
            outcome = receiver.recv()
        except EOFError:  # the process died without a word
            outcome = Outcome(notebook.stem, "failed", 0.0, f"its process ended with exit code {process.exitcode}")
        process.join()
        if outcome.status == "ran":
            outcome.message = "alongside the others"
        report(outcome)
        outcomes.append(outcome)
        del background[notebook]
    return outcomes


def report(outcome: Outcome) -> None:
    print(f"{outcome.status:>8}  {outcome.slug:<40} {outcome.seconds:7.1f} s  {outcome.message}", flush=True)


def metadata(notebook: Path) -> dict[str, Any]:
    """The notebook's ``embedding_geometry`` metadata (what its page reads of the build)."""
    return json.loads(notebook.read_text()).get("metadata", {}).get("embedding_geometry", {})


def install_sigterm_handler() -> None:
    """Turn SIGTERM into SystemExit so that ``finally`` blocks remove temporary files."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
