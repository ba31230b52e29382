"""Where a chapter's time goes: seconds in model calls, and how long its process took to put its model to first use.

:func:`core.capture.run_with_cache <embedding_geometry.core.capture.run_with_cache>` — the one
forward path of ``activations.extract`` and of the streaming capture — runs every forward pass
inside :func:`model_call`, which adds its wall seconds to this process's total and stamps the
first use; so do the sentence-transformers cross-check and the studies' training steps (their
forward and backward passes). Activations read back from the cache instead of computed are a use
too (:func:`model_used`): the chapter's work has begun. A chapter's results JSON records
:func:`timing` (``environment.timing``), from which ``make bench`` splits each chapter's wall
time into

    fixed overhead   process start → first model use (interpreter, imports, model load)
    forward          the seconds inside model calls (forward passes, training steps)
    analysis         the rest: studies, charts, verdicts, writing the results

Times are wall seconds (``time.time``/``time.perf_counter``); ``cpu_*`` are this process's CPU
seconds (``time.process_time``), which a loaded machine inflates less.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

BUILD_BUDGET_S = 600
"""The book's time budget: a cold ``make book`` of the default profile, the venv set-up
excluded, on the quiet 2-core machine, in seconds (10 minutes)."""

_totals = {"seconds": 0.0, "calls": 0}
_first: dict[str, float] = {}  # wall and CPU time at the first model use of this process


def model_used() -> None:
    """Stamp the first use of a model in this process (a forward pass, or activations read
    from the cache in its stead); later calls change nothing."""
    if not _first:
        _first.update(wall=time.time(), cpu=time.process_time())


@contextmanager
def model_call() -> Iterator[None]:
    """Time the model call made inside the ``with`` block (see the module docstring)."""
    model_used()
    start = time.perf_counter()
    try:
        yield
    finally:
        _totals["seconds"] += time.perf_counter() - start
        _totals["calls"] += 1


def model_seconds() -> tuple[float, int]:
    """This process's model-call totals so far: wall seconds and calls."""
    return _totals["seconds"], _totals["calls"]


def add_pool_calls(seconds: float, calls: int, workers: int) -> None:
    """Count the model calls a pool of ``workers`` processes made side by side for this one (each
    worker has a clock of its own): ``seconds``, the sum of their model-call seconds, over
    ``workers`` (the pool's wall time in model calls while its workers are busy together), and
    their ``calls``. It stamps no first use: that is this process's own."""
    _totals["seconds"] += seconds / workers
    _totals["calls"] += calls


def process_started() -> float:
    """When this process started (a ``time.time()`` stamp; for a notebook, the kernel's start).
    On Linux its age is read from ``/proc`` (start and uptime both in ticks since boot, 10 ms);
    elsewhere from psutil, whose boot time is rounded to the second."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: start time since boot
            age = float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError):
        import psutil

        return psutil.Process().create_time()


def timing(opened: float | None = None) -> dict[str, Any]:
    """This process's model-call totals, the seconds from its start to its first model use
    (None when it made none) and to ``opened`` (a ``time.time()`` stamp: the chapter's open),
    and torch's intra-op threads (None when torch was never imported)."""
    started = process_started()
    first = _first.get("wall")
    return {
        "forward_seconds": round(_totals["seconds"], 3),
        "forward_calls": _totals["calls"],
        "process_to_first_model_use_s": None if first is None else round(first - started, 3),
        "cpu_to_first_model_use_s": None if first is None else round(_first["cpu"], 3),
        "process_to_open_s": None if opened is None else round(opened - started, 3),
        "process_seconds": round(time.time() - started, 3),
        "cpu_seconds": round(time.process_time(), 3),
        "torch_threads": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None,
    }
