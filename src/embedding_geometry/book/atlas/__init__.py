"""The atlas: the per-depth statistics of chapters 1–4 (``studies.accumulators``) on a list of
models over any corpus, streamed and sharded, one results file per model; chapter 8 reads them.

    params = plan.chapter_parameters("params/atlas.yaml", root)    # chapter 8's parameters, checked
    folder = run(plan.from_parameters(params, "build/atlas/x"))    # in this process, or executor="ray"
    found = read(folder)                                           # {model id: its results}

From the command line (one line per bad input, as the build)::

    python -m embedding_geometry atlas --profile params/atlas.yaml [--executor ray] [--out DIR]

The corpus is chapter 3's, or any the parameter ``corpus`` names (``core.text_sources``: a file
or a hub dataset, read a run of texts at a time). Before any shard is measured, the driver checks
chapter 8's needs that read a model on each trained model (:func:`check_models`).

Its parts: :mod:`.plan` (models, text sets, shards), :mod:`.shards` (one shard measured and
written once; a model's shards merged into its results); the executors are here.

**Where the shards are measured.** :class:`InProcess` (the default; what chapter 8 and the default
build use) measures the pending shards one after the other, model by model, and writes each as it
is done. :class:`RayExecutor` makes every pending (model, shard) a Ray task — with ``num_gpus``
when the plan asks for CUDA — on the cluster at ``RAY_ADDRESS`` when that is set, else on a local
Ray instance it starts (and stops) with ``workers`` CPUs. A task returns its shard's accumulator
to the driver, which writes it once (``shards.write_once``) as it arrives; Ray retries a task
whose worker died (``retries``), and a retried or duplicated shard finds its file written and is
dropped, so no shard counts twice. Workers need the package installed (a cluster's image) and
the models available to them.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from . import plan, shards
from .. import parameters, rules
from ...core import paths
from ...core.errors import BookError
from .plan import Plan, Shard
from .shards import AtlasError, read

__all__ = ["AtlasError", "EXECUTORS", "InProcess", "RayExecutor", "plan", "read", "run", "shards"]


def run(chosen: plan.Plan, executor: str | object = "inprocess", workers: int | None = None) -> Path:
    """Measure every shard of ``chosen`` that is not yet written (``executor``: "inprocess",
    "ray", or an executor object), then merge each model's shards into its results file; returns
    the results folder."""
    started = time.time()
    if isinstance(executor, str):
        if executor not in EXECUTORS:
            raise AtlasError(f"--executor expects one of {', '.join(EXECUTORS)}; got {executor!r}")
        executor = EXECUTORS[executor](workers=workers) if executor == "ray" else InProcess()
    shards.claim_folder(chosen)
    shards.remove_partial(chosen)
    pending = [s for s in chosen.shards() if not shards.done(chosen, s)]
    check_models(chosen, pending)
    executor.run(chosen, pending)
    shards.remove_partial(chosen)  # what a writer killed mid-shard left
    for model in chosen.models:
        shards.combine(chosen, model, started)
    return chosen.out


def check_models(chosen: plan.Plan, pending: Sequence[plan.Shard]) -> None:
    """Chapter 8's needs that read a model (``book.rules``: the corpus's texts under its
    tokenizer, windows within its positions) on each trained model with a shard pending, loaded
    here before any shard is measured, so that a bad input is one line, not a failed task."""
    for name in dict.fromkeys(shard.model.id for shard in pending):
        spec = plan.ModelSpec(name)
        view = parameters.ModelView(lambda spec=spec: shards.load(spec, chosen.device, chosen.trust_remote_code))
        parameters.check_needs(rules.needs_for(plan.SLUG), chosen.params, view)


def for_chapter(params: dict, folder: str | Path | None = None) -> dict[str, dict]:
    """Chapter 8's models: the atlas results at ``params["atlas_results"]`` when set (another
    run's, of any size), else the chapter's plan measured here, in process, into ``folder``
    (default: ``atlas/<fingerprint>`` under the activation cache, so an unchanged plan is read
    back, not measured again). Results by model id, in the plan's order where it names them."""
    if params.get("atlas_results"):
        return read(params["atlas_results"])
    chosen = plan.from_parameters(params, "")
    out = Path(folder) if folder else paths.cache_dir() / "atlas" / chosen.fingerprint()[:16]
    return read(run(plan.from_parameters(params, out)))


def main(args) -> int:
    """``python -m embedding_geometry atlas`` (see ``__main__``): the profile's chapter 8
    parameters, measured by ``args.executor`` into ``args.out``."""
    params = plan.chapter_parameters(args.profile, args.root)
    out = args.out or args.root / "build" / "atlas" / Path(args.profile).stem
    chosen = plan.from_parameters(params, out)
    print(f"atlas: {len(chosen.models)} models × {len(chosen.sets)} text sets, {len(chosen.shards())} shards "
          f"→ {out} ({args.executor})")
    try:
        folder = run(chosen, args.executor, args.workers)
    except BookError:  # a bad input or a missing shard names itself
        raise
    except Exception as error:  # a bug: one line here, the traceback in the log
        log = out / "atlas.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"parameters: {params}\n\n{traceback.format_exc()}")
        first = (str(error).strip().splitlines() or [""])[0][:200]
        raise AtlasError(f"atlas failed: {type(error).__name__}: {first} — a bug in the book, not in your input; "
                         f"please report it with {log} (the traceback and every parameter)") from error
    for model in chosen.models:
        print(f"  {folder / (model.key + '.json')}")
    return 0


# --------------------------------------------------------------------------- executors

Work = Callable[[Plan, Shard], shards.Part]


class InProcess:
    """Measure each shard here, in order."""

    name = "inprocess"

    def __init__(self, work: Work = shards.measure):
        self.work = work

    def run(self, plan: Plan, pending: Sequence[Shard]) -> None:
        for shard in pending:
            shards.write_once(shards.shard_path(plan, shard), self.work(plan, shard))


class RayExecutor:
    """Measure each shard as a Ray task (the package docstring)."""

    name = "ray"

    def __init__(self, workers: int | None = None, retries: int = 3, gpus_per_task: float = 1.0,
                 work: Work = shards.measure):
        self.workers, self.retries, self.gpus_per_task, self.work = workers, retries, gpus_per_task, work

    def resources(self, plan: Plan) -> dict[str, float]:
        """A task's request: one CPU, and ``gpus_per_task`` GPUs when the plan's device is cuda."""
        return {"num_cpus": 1, "num_gpus": self.gpus_per_task if plan.device == "cuda" else 0}

    def run(self, plan: Plan, pending: Sequence[Shard]) -> None:
        import ray

        # Ray's progress-bar manager replaces builtins.print in the driver unless told not to; the
        # atlas runs inside notebooks and tests, whose print must stay the interpreter's own.
        os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")
        started_here = not ray.is_initialized()
        if started_here:
            address = os.environ.get("RAY_ADDRESS")
            ray.init(address=address or None, num_cpus=None if address else (self.workers or os.cpu_count()),
                     include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            task = ray.remote(self.work).options(max_retries=self.retries, **self.resources(plan))
            running = {task.remote(plan, shard): shard for shard in pending}
            while running:
                finished, _ = ray.wait(list(running), num_returns=1)
                shard = running.pop(finished[0])
                shards.write_once(shards.shard_path(plan, shard), ray.get(finished[0]))
        finally:
            if started_here:
                ray.shutdown()


EXECUTORS = {"inprocess": InProcess, "ray": RayExecutor}
