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
written once; a model's shards merged into its results), :mod:`.executors` (in-process or Ray).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from . import executors, plan, shards
from .. import parameters, rules
from ...core import paths
from ...core.errors import BookError
from .shards import AtlasError, read

__all__ = ["AtlasError", "executors", "plan", "read", "run", "shards"]


def run(chosen: plan.Plan, executor: str | object = "inprocess", workers: int | None = None) -> Path:
    """Measure every shard of ``chosen`` that is not yet written (``executor``: "inprocess",
    "ray", or an executor object), then merge each model's shards into its results file; returns
    the results folder."""
    started = time.time()
    if isinstance(executor, str):
        if executor not in executors.EXECUTORS:
            raise AtlasError(f"--executor expects one of {', '.join(executors.EXECUTORS)}; got {executor!r}")
        executor = executors.EXECUTORS[executor](workers=workers) if executor == "ray" else executors.InProcess()
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
