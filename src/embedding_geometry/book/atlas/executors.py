"""Where an atlas run's shards are measured: in this process, or as tasks on a Ray cluster.

``InProcess`` (the default; what chapter 8 and the default build use) measures the pending
shards one after the other, model by model, and writes each as it is done. ``RayExecutor`` makes
every pending (model, shard) a Ray task — with ``num_gpus`` when the plan asks for CUDA — on the
cluster at ``RAY_ADDRESS`` when that is set, else on a local Ray instance it starts (and stops)
with ``workers`` CPUs. A task returns its shard's accumulator to the driver, which writes it once
(``shards.write_once``) as it arrives; Ray retries a task whose worker died (``retries``), and a
retried or duplicated shard finds its file written and is dropped, so no shard counts twice.
Workers need the package installed (a cluster's image) and the models available to them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from . import shards
from .plan import Plan, Shard

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
    """Measure each shard as a Ray task (module docstring)."""

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
