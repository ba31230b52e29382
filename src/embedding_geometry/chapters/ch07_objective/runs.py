"""Chapter 7's runs: every copy of both arms trained and measured, in parallel processes.

An **arm** (:class:`Arm`) is one question asked with paired seeds:

* ``scratch``: a small encoder (:func:`.synthetic_task.encoder`, its initial weights drawn
  from the seed) trained on the synthetic retrieval task; its ``before`` is its own random start;
* ``finetune``: a pre-trained encoder fine-tuned on the book's pairs; its ``before`` is the
  backbone itself, the same for every seed. With ``hard_negatives``, each seed also trains the
  copy of :mod:`.hard_negatives` (the mean-pool loss with a twin of every positive in its batch).

For every seed of an arm, one **copy** per trained variant (:func:`run_copy`) starts from the
seed's start, trains with :func:`.training.train`, and is measured on held-out texts: the
geometry (:func:`.measures.sentence_measures`; on the fine-tuning arm the pair sets and
the hard set's queries, :func:`.hard_negatives.hard_set_measures`), held-out retrieval with both
scores (each held-out query against the pool of held-out documents), the one-topic sentences of
the exercise, and the final mean pools of the held-out texts (for the cone axis). Three quarters
of the way through its steps (:func:`snapshot_step`) the copy is measured once more, on the
sentences and the hard set only: the ``snapshot`` that tells whether its geometry had settled
(:mod:`.results`). A copy's record holds numbers only, so that it can come back from a
worker process; the trained weights are dropped once measured.

**One thread per copy.** Every copy trains and is measured on one CPU thread, so that its numbers
do not depend on how many cores the machine has, and ``workers`` copies run side by side
(joblib's process pool): on two cores, two copies at a time. The records do not depend on
``workers``.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ...core import activations, clock, models, ranking
from ...core.models import LoadedModel
from ...studies import layer_by_layer
from . import hard_negatives, measures, synthetic_task, training


@dataclass(frozen=True)
class Arm:
    """One arm: its ``name``, how its start is made (``model``: a model id for a fine-tuning arm,
    None for the small encoder of ``task`` and ``shape``), the training ``settings``, the
    ``train`` and ``held_out`` pairs (query, document), recall's ``k``, the geometry ``texts``
    (``sentences``; the pair sets, the hard set and ``one_topic`` where measured), whether it
    trains the ``hard_negatives`` copy, and the extraction's ``batch_size`` and ``device``."""

    name: str
    settings: training.Settings
    train: tuple[tuple[str, str], ...]
    held_out: tuple[tuple[str, str], ...]
    texts: Mapping[str, Any]
    k: int = 1
    model: str | None = None
    trust_remote_code: bool = False
    task: synthetic_task.Task | None = None
    shape: synthetic_task.Shape | None = None
    batch_size: int = 32
    device: str = "cpu"
    pair_sets: tuple[str, ...] = field(default=())
    hard_negatives: bool = False

    @property
    def trained(self) -> tuple[str, ...]:
        """The variants each seed trains: one copy per objective, and the hard-negative copy."""
        return training.OBJECTIVES + ((hard_negatives.VARIANT,) if self.hard_negatives else ())

    @property
    def chance(self) -> float:
        """Recall@k of a random ranking: k / |pool| (one relevant document per query)."""
        return min(1.0, self.k / len(self.held_out))


GEOMETRY_TEXTS = 48
"""Held-out documents of the synthetic task on which the small encoder's geometry is measured."""


def scratch_arm(task: synthetic_task.Task, shape: synthetic_task.Shape, settings: training.Settings,
                k: int = 1) -> Arm:
    """The controlled arm: the task's training and held-out pairs, its first
    :data:`GEOMETRY_TEXTS` held-out documents as the sentences measured."""
    made = synthetic_task.texts(task)
    documents = [d for _, d in made["held_out"][:GEOMETRY_TEXTS]]
    return Arm("scratch", settings, tuple(made["train"]), tuple(made["held_out"]), {"sentences": documents}, k=k,
               task=task, shape=shape)


def finetune_arm(model: str, settings: training.Settings, texts: Mapping[str, Any], held_out_pairs: int, k: int = 1,
                 device: str = "auto", batch_size: int = 32, trust_remote_code: bool = False,
                 with_hard_negatives: bool = True) -> Arm:
    """The fine-tuning arm: the book's pairs less ``held_out_pairs`` held out
    (:func:`.training.split_pairs`), measured on ``texts`` (:func:`.measures.texts`),
    with the hard-negative copy unless ``with_hard_negatives`` is False."""
    train, held_out = training.split_pairs(training.training_pairs(), held_out_pairs)
    return Arm("finetune", settings, tuple(train), tuple(held_out), dict(texts), k=k, model=model,
               trust_remote_code=trust_remote_code, device=device, batch_size=batch_size,
               pair_sets=measures.PAIR_SETS, hard_negatives=with_hard_negatives)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one CPU thread inside the block (the number of threads is restored after)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=2)
def _pretrained(model: str, device: str, trust_remote_code: bool) -> LoadedModel:
    return models.load(model, device, trust_remote_code)


def start(arm: Arm, seed: int) -> LoadedModel:
    """The start of ``arm``'s copies of ``seed``: the backbone, or a small encoder drawn from the seed."""
    if arm.model is not None:
        return _pretrained(arm.model, arm.device, arm.trust_remote_code)
    words = synthetic_task.vocabulary(arm.task)
    return synthetic_task.encoder(words, arm.shape, seed)


def geometry_of(model: LoadedModel, arm: Arm) -> measures.Measured:
    """The geometry of one model: the sentence measures and, where the arm has them, the pair sets'
    and the hard set's (curves, per-unit values)."""
    extract = functools.partial(activations.extract, model, batch_size=arm.batch_size, cache=False, progress=False)
    curves, units = measures.sentence_measures(extract(list(arm.texts["sentences"])))
    parts = [measures.pair_measures(extract([t for pair in arm.texts[name] for t in pair]), name)
             for name in arm.pair_sets]
    if "hard_queries" in arm.texts:
        parts.append(hard_negatives.hard_set_measures(extract(list(arm.texts["hard_queries"])),
                                                      extract(list(arm.texts["hard_pool"]))))
    for more in parts:
        curves.update(more[0])
        units.update(more[1])
    return curves, units


def measure(model: LoadedModel, arm: Arm) -> dict[str, Any]:
    """Every measurement of one model (module docstring): ``geometry`` (curves, per-unit values),
    ``retrieval`` {score: hits per held-out query}, ``one_topic`` curves and ``pools`` (the
    final-depth mean pools of the held-out queries and documents)."""
    extract = functools.partial(activations.extract, model, batch_size=arm.batch_size, cache=False, progress=False)
    queries, documents = (extract([pair[i] for pair in arm.held_out]) for i in (0, 1))
    own = list(range(queries.n_texts))  # query i's document is document i
    hits = {score: ranking.recall_per_query(synthetic_task.scores(queries, documents, score), own, arm.k)
            for score in training.OBJECTIVES}
    found = {"geometry": geometry_of(model, arm), "retrieval": hits,
             "pools": np.concatenate([queries.mean_pool("all")[-1], documents.mean_pool("all")[-1]])}
    if arm.texts.get("one_topic"):
        topic = layer_by_layer.collapse(extract(list(arm.texts["one_topic"])))
        topic.pop("per_unit")
        found["one_topic"] = topic
    return found


def snapshot_step(steps: int) -> int:
    """The step after which a copy is measured a second time: ⌈3 K / 4⌉ of its K steps."""
    return -(-3 * steps // 4)


def run_copy(arm: Arm, variant: str | None, seed: int) -> dict[str, Any]:
    """One copy on one thread: the start of ``seed``, trained as ``variant`` (an objective, or the
    hard-negative copy; None: the start itself, measured as ``before``), measured, with its
    geometry at :func:`snapshot_step` (``snapshot``); its description, losses, each block's
    gradient norm averaged over the steps (``gradient_norms``; None for a start), the CPU seconds it
    took (its worker's, from its start to its last measurement) and its model calls (``[wall
    seconds, calls]``, for the chapter's clock: :func:`run`) with it."""
    started, calls_before = time.process_time(), clock.model_seconds()
    with one_thread():
        model, losses, snapshot, gradients = start(arm, seed), None, {}, []
        if variant is not None:
            hard = variant == hard_negatives.VARIANT
            at = {snapshot_step(arm.settings.steps): lambda copy: snapshot.update(geometry=geometry_of(copy, arm))}
            model, losses = training.train(model, list(arm.train), hard_negatives.BASELINE if hard else variant,
                                             arm.settings, seed, hard_negatives.negatives(arm.train) if hard else None,
                                             snapshots=at, gradient_norms=gradients)
        found = measure(model, arm)
    return {"arm": arm.name, "variant": variant or "before", "seed": seed, "info": model.info.to_dict(),
            "losses": losses, "gradient_norms": np.mean(gradients, axis=0).tolist() if gradients else None,
            "snapshot": snapshot.get("geometry"), **found,
            "cpu_seconds": time.process_time() - started,
            "model_calls": [after - before for after, before in zip(clock.model_seconds(), calls_before)]}


def jobs(arms: Sequence[Arm], seeds: Mapping[str, Sequence[int]]) -> list[tuple[Arm, str | None, int]]:
    """Every copy to run, the long ones first: per arm, each seed's start (once for a fine-tuning
    arm, whose start is the same for every seed) and each trained variant's copy."""
    found = []
    for arm in arms:
        befores = seeds[arm.name][:1] if arm.model is not None else seeds[arm.name]
        found += [(arm, v, s) for s in seeds[arm.name] for v in arm.trained]
        found += [(arm, None, s) for s in befores]
    return sorted(found, key=lambda job: job[0].model is None)  # fine-tuning copies first


def run(arms: Sequence[Arm], seeds: Mapping[str, Sequence[int]],
        workers: int = 2) -> dict[str, dict[str, dict[int, Any]]]:
    """Every copy of every arm, ``workers`` at a time: {arm: {variant: {seed: record}}}; a
    fine-tuning arm's one ``before`` record stands under every seed."""
    from joblib import Parallel, delayed

    todo = jobs(arms, seeds)
    if workers > 1:  # the workers' clocks are their own: their model calls are counted here
        records = Parallel(n_jobs=workers, backend="loky")(delayed(run_copy)(*job) for job in todo)
        clock.add_pool_calls(sum(r["model_calls"][0] for r in records), sum(r["model_calls"][1] for r in records),
                             min(workers, len(todo)))
    else:
        records = [run_copy(*job) for job in todo]
    out: dict[str, dict[str, dict[int, Any]]] = {arm.name: {v: {} for v in ("before", *arm.trained)} for arm in arms}
    for record in records:
        out[record["arm"]][record["variant"]][record["seed"]] = record
    for arm in arms:
        before = out[arm.name]["before"]
        out[arm.name]["before"] = {s: before.get(s, next(iter(before.values()))) for s in seeds[arm.name]}
    return out


def models_run(records: Mapping[str, Mapping[str, Mapping[int, Any]]]) -> dict[str, dict[str, Any]]:
    """Every model :func:`run` trained or measured, by id: its description (for provenance)."""
    return {r["info"]["id"]: r["info"] for arm in records.values() for by_seed in arm.values()
            for r in by_seed.values()}
