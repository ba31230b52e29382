"""Chapter 7's runs: every copy of both arms trained and measured, in parallel processes.

An **arm** (:class:`Arm`) is one question asked with paired seeds:

* ``scratch``: a small encoder (:func:`.synthetic_retrieval.encoder`, its initial weights drawn
  from the seed) trained on the synthetic retrieval task; its ``before`` is its own random start;
* ``finetune``: a pre-trained encoder fine-tuned on the book's pairs; its ``before`` is the
  backbone itself, the same for every seed.

For every seed of an arm, one **copy** per objective (:func:`run_copy`) starts from the seed's
start, trains with :func:`.objectives.train`, and is measured on held-out texts: the geometry
(:func:`.objective_geometry.sentence_measures`, and the pair sets on the fine-tuning arm),
held-out retrieval with both scores (each held-out query against the pool of held-out
documents), the one-topic sentences of the exercise, and the final mean pools of the held-out
texts (for the cone axis). A copy's record holds numbers only, so that it can come back from a
worker process; the trained weights are dropped once measured.

**One thread per copy.** Every copy trains and is measured on one CPU thread, so that its numbers
do not depend on how many cores the machine has, and ``workers`` copies run side by side
(joblib's process pool): on two cores, two copies at a time. The records do not depend on
``workers``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..core import activations, geometry, hierarchical, models
from ..core.models import LoadedModel
from . import layer_by_layer, objective_geometry, objectives, synthetic_retrieval


@dataclass(frozen=True)
class Arm:
    """One arm: its ``name``, how its start is made (``model``: a model id for a fine-tuning arm,
    None for the small encoder of ``task`` and ``shape``), the training ``settings``, the
    ``train`` and ``held_out`` pairs (query, document), recall's ``k``, the geometry ``texts``
    (``sentences``; the pair sets and ``one_topic`` where measured), and the extraction's
    ``batch_size`` and ``device``."""

    name: str
    settings: objectives.Settings
    train: tuple[tuple[str, str], ...]
    held_out: tuple[tuple[str, str], ...]
    texts: Mapping[str, Any]
    k: int = 1
    model: str | None = None
    trust_remote_code: bool = False
    task: synthetic_retrieval.Task | None = None
    shape: synthetic_retrieval.Shape | None = None
    batch_size: int = 32
    device: str = "cpu"
    pair_sets: tuple[str, ...] = field(default=())

    @property
    def chance(self) -> float:
        """Recall@k of a random ranking: k / |pool| (one relevant document per query)."""
        return min(1.0, self.k / len(self.held_out))


GEOMETRY_TEXTS = 48
"""Held-out documents of the synthetic task on which the small encoder's geometry is measured."""


def scratch_arm(task: synthetic_retrieval.Task, shape: synthetic_retrieval.Shape, settings: objectives.Settings,
                k: int = 1) -> Arm:
    """The controlled arm: the task's training and held-out pairs, its first
    :data:`GEOMETRY_TEXTS` held-out documents as the sentences measured."""
    made = synthetic_retrieval.texts(task)
    documents = [d for _, d in made["held_out"][:GEOMETRY_TEXTS]]
    return Arm("scratch", settings, tuple(made["train"]), tuple(made["held_out"]), {"sentences": documents}, k=k,
               task=task, shape=shape)


def finetune_arm(model: str, settings: objectives.Settings, texts: Mapping[str, Any], held_out_pairs: int, k: int = 1,
                 device: str = "auto", batch_size: int = 32, trust_remote_code: bool = False) -> Arm:
    """The fine-tuning arm: the book's pairs less ``held_out_pairs`` held out
    (:func:`.objectives.split_pairs`), measured on ``texts`` (:func:`.objective_geometry.texts`)."""
    train, held_out = objectives.split_pairs(objectives.training_pairs(), held_out_pairs)
    return Arm("finetune", settings, tuple(train), tuple(held_out), dict(texts), k=k, model=model,
               trust_remote_code=trust_remote_code, device=device, batch_size=batch_size,
               pair_sets=objective_geometry.PAIR_SETS)


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
    words = synthetic_retrieval.vocabulary(arm.task)
    return synthetic_retrieval.encoder(words, arm.shape, seed)


def measure(model: LoadedModel, arm: Arm) -> dict[str, Any]:
    """Every measurement of one model (module docstring): ``geometry`` (curves, per-unit values),
    ``retrieval`` {score: hits per held-out query}, ``one_topic`` curves and ``pools`` (the
    final-depth mean pools of the held-out queries and documents)."""
    extract = functools.partial(activations.extract, model, batch_size=arm.batch_size, cache=False, progress=False)
    curves, units = objective_geometry.sentence_measures(extract(list(arm.texts["sentences"])))
    for name in arm.pair_sets:
        more = objective_geometry.pair_measures(extract([t for pair in arm.texts[name] for t in pair]), name)
        curves.update(more[0])
        units.update(more[1])
    queries, documents = (extract([pair[i] for pair in arm.held_out]) for i in (0, 1))
    hits = {score: synthetic_retrieval.recall(synthetic_retrieval.scores(queries, documents, score), arm.k)
            for score in objectives.OBJECTIVES}
    found = {"geometry": (curves, units), "retrieval": hits,
             "pools": np.concatenate([queries.mean_pool("all")[-1], documents.mean_pool("all")[-1]])}
    if arm.texts.get("one_topic"):
        topic = layer_by_layer.collapse(extract(list(arm.texts["one_topic"])))
        topic.pop("per_unit")
        found["one_topic"] = topic
    return found


def run_copy(arm: Arm, objective: str | None, seed: int) -> dict[str, Any]:
    """One copy on one thread: the start of ``seed``, trained with ``objective`` (None: the
    start itself, measured as ``before``), measured; its description and losses with it."""
    with one_thread():
        model, losses = start(arm, seed), None
        if objective is not None:
            model, losses = objectives.train(model, list(arm.train), objective, arm.settings, seed)
        return {"arm": arm.name, "variant": objective or "before", "seed": seed, "info": model.info.to_dict(),
                "losses": losses, **measure(model, arm)}


def jobs(arms: Sequence[Arm], seeds: Mapping[str, Sequence[int]]) -> list[tuple[Arm, str | None, int]]:
    """Every copy to run, the long ones first: per arm, each seed's start (once for a fine-tuning
    arm, whose start is the same for every seed) and each objective's copy."""
    found = []
    for arm in arms:
        befores = seeds[arm.name][:1] if arm.model is not None else seeds[arm.name]
        found += [(arm, o, s) for s in seeds[arm.name] for o in objectives.OBJECTIVES]
        found += [(arm, None, s) for s in befores]
    return sorted(found, key=lambda job: job[0].model is None)  # fine-tuning copies first


def run(arms: Sequence[Arm], seeds: Mapping[str, Sequence[int]],
        workers: int = 2) -> dict[str, dict[str, dict[int, Any]]]:
    """Every copy of every arm, ``workers`` at a time: {arm: {variant: {seed: record}}}; a
    fine-tuning arm's one ``before`` record stands under every seed."""
    from joblib import Parallel, delayed

    todo = jobs(arms, seeds)
    records = Parallel(n_jobs=workers, backend="loky")(delayed(run_copy)(*job) for job in todo) if workers > 1 \
        else [run_copy(*job) for job in todo]
    out: dict[str, dict[str, dict[int, Any]]] = {arm.name: {v: {} for v in objective_geometry.VARIANTS} for arm in arms}
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


# --------------------------------------------------------------------------- an arm's results

def retrieval(records: Mapping[str, Mapping[int, Any]], arm: Arm) -> dict[str, dict[str, Any]]:
    """Each copy's held-out recall@k with the score it was trained with, its exact interval and
    whether it beats chance ({objective: {seed: …}}); each start's with both scores ({before:
    {score: {seed: …}}}, one entry for a fine-tuning arm, whose start is the same for every seed)."""
    own = {o: {s: synthetic_retrieval.beats_chance(r["retrieval"][o], arm.chance) for s, r in records[o].items()}
           for o in objectives.OBJECTIVES}
    starts = dict(list(records["before"].items())[:1]) if arm.model is not None else records["before"]
    own["before"] = {score: {s: synthetic_retrieval.beats_chance(r["retrieval"][score], arm.chance)
                             for s, r in starts.items()} for score in objectives.OBJECTIVES}
    return own


def losses(records: Mapping[str, Mapping[int, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{objective: {seed_<k>: {losses, first, last}}}: every step's loss, and the means over the
    first and the last tenth of the steps."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for objective in objectives.OBJECTIVES:
        for seed, record in records[objective].items():
            values, k = record["losses"], max(1, len(record["losses"]) // 10)
            out.setdefault(objective, {})[f"seed_{seed}"] = {"losses": values, "first": float(np.mean(values[:k])),
                                                             "last": float(np.mean(values[-k:]))}
    return out


def retrieval_match(records: Mapping[str, Mapping[int, Any]], seeds: Sequence[int], seed: int, resamples: int) -> dict:
    """The mean-pool copy's held-out recall minus the MaxSim copy's, each with its own score,
    paired by seed and query, with its draws over seeds and queries and its sign-flip test."""
    values = np.stack([records["mean_pool"][s]["retrieval"]["mean_pool"] - records["maxsim"][s]["retrieval"]["maxsim"]
                       for s in seeds])[..., None]
    found = hierarchical.hierarchical_interval(
        values, seed=objective_geometry.generator(seed, "retrieval_match"), resamples=resamples)
    return objective_geometry.judged(found, values.mean(axis=1)[:, 0])


def cone(records: Mapping[str, Mapping[int, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """The cone of each fine-tuned copy against its backbone's, on the final mean pools P of the
    held-out texts: |cos| between the cone axes (PC1 of the centred pools), cos between the mean
    directions, and the anisotropy of the copy's pools raw, centred on the backbone's mean pool
    (the backbone's centering vector) and centred on its own ({variant: {seed_<k>: …}})."""
    base = records["before"][seeds[0]]["pools"]
    base_axis, base_mean = geometry.principal_axis(base), base.mean(axis=0)
    out: dict[str, Any] = {}
    for variant in objective_geometry.VARIANTS:
        for s in seeds if variant != "before" else seeds[:1]:
            pools = records[variant][s]["pools"]
            out.setdefault(variant, {})[f"seed_{s}"] = {
                "axis_cosine": abs(geometry.cosine(geometry.principal_axis(pools), base_axis)),
                "mean_direction_cosine": geometry.cosine(pools.mean(axis=0), base_mean),
                "anisotropy": geometry.mean_pairwise_cosine(pools),
                "anisotropy_backbone_centred": geometry.mean_pairwise_cosine(pools - base_mean),
                "anisotropy_own_centred": geometry.mean_pairwise_cosine(pools - pools.mean(axis=0))}
    return out


def block(records: Mapping[str, Mapping[int, Any]], arm: Arm, seed: int = 0,
          resamples: int = hierarchical.RESAMPLES) -> dict[str, Any]:
    """One arm's results: the ``settings``, the seeds run and ``kept`` (both copies beat chance),
    the ``excluded`` copies, every copy's ``loss`` and ``retrieval``, the curves of the kept seeds'
    copies and of the starts (``runs``; an excluded copy's geometry is never reported), the
    comparison of :func:`.objective_geometry.compare` over the kept seeds (with
    ``retrieval_match`` and the MaxSim copy's ``peak_margin``; None, with ``not_measured``, when
    fewer than 2 seeds are kept) and, on a fine-tuning arm, the ``cone``."""
    found = retrieval(records, arm)
    kept = objective_geometry.kept_seeds(found)
    excluded = [{"variant": o, "seed": s, **r} for o in objectives.OBJECTIVES for s, r in found[o].items()
                if not r["beats_chance"]]
    distinct = {v: dict(list(by_seed.items())[:1]) if v == "before" and arm.model is not None else
                {s: r for s, r in by_seed.items() if v == "before" or s in kept} for v, by_seed in records.items()}
    out = {"settings": {**vars(arm.settings)}, "seeds": sorted(records["mean_pool"]), "kept": kept,
           "excluded": excluded, "chance": arm.chance, "k": arm.k, "n_train": len(arm.train),
           "n_held_out": len(arm.held_out), "loss": losses(records), "retrieval": found,
           "runs": {v: {f"seed_{s}": r["geometry"][0] for s, r in by_seed.items()} for v, by_seed in distinct.items()}}
    if "one_topic" in next(iter(records["before"].values())):
        out["one_topic"] = {v: {f"seed_{s}": r["one_topic"] for s, r in by_seed.items()}
                            for v, by_seed in distinct.items()}
    if len(kept) < 2:
        out["comparison"] = None
        out["judged"] = judged(None, arm.model is not None)
        out["not_measured"] = (f"{len(kept)} of {len(out['seeds'])} seeds kept: both copies of at least 2 "
                               "must beat chance")
        return out
    keys = objective_geometry.SENTENCE_MEASURES + (objective_geometry.PAIR_MEASURES if arm.pair_sets else ())
    measured = {v: {s: r["geometry"] for s, r in records[v].items()} for v in records}
    out["comparison"] = objective_geometry.compare(measured, kept, keys, seed, resamples)
    final = out["comparison"].pop("judged_final")
    final["retrieval_match"] = retrieval_match(records, kept, seed, resamples)
    within = np.stack([measured["maxsim"][s][1][objective_geometry.FINGERPRINT] for s in kept])
    final["peak_margin"] = objective_geometry.peak_margin(within, seed, f"{arm.name}.peak", resamples)
    out["comparison"]["peak_margin"] = {k: v for k, v in final["peak_margin"].items() if k != "draws"}
    if arm.model is not None:
        out["cone"] = cone(records, kept)
    out["judged"] = judged(final, arm.model is not None)
    return out


JUDGED = {"collapse_difference": ("difference", objective_geometry.FINGERPRINT),
          "separability_difference": ("difference", objective_geometry.RATIO),
          **{f"visibility_{name}": ("visibility", name) for name in objective_geometry.VISIBILITY},
          "peak_margin": ("peak_margin",), "retrieval_match": ("retrieval_match",)}
FINETUNE_JUDGED = {"maxsim_change": ("change", "maxsim", objective_geometry.FINGERPRINT),
                   **{f"{m}_change_{o}": ("change", o, key) for o in objectives.OBJECTIVES
                      for m, key in (("anisotropy", "anisotropy"), ("easy", "easy_mean_pool"))}}


def judged(final: Mapping[str, Any] | None, finetune: bool) -> dict[str, dict[str, Any]]:
    """The statistics the chapter's claims judge, each {value, interval, draws, n_seeds, n_units}
    (None throughout when the arm kept fewer than 2 seeds), picked from ``final`` (the comparison's
    ``judged_final``, with ``retrieval_match`` and ``peak_margin``): the final-depth differences of
    within-sentence cosine and separability, the within-sentence difference's ``visibility`` at the
    final depth, over the back half and at every depth, the MaxSim copy's ``peak_margin``, the
    ``retrieval_match``; on a fine-tuning arm also the final-depth changes (the MaxSim copy's
    within-sentence cosine; each copy's anisotropy and easy-pair cosine)."""
    paths = {**JUDGED, **(FINETUNE_JUDGED if finetune else {})}
    if final is None:
        return {name: {"value": None, "interval": None, "draws": None, "n_seeds": None} for name in paths}
    found = {}
    for name, path in paths.items():
        entry = final
        for part in path:
            entry = entry[part]
        found[name] = {**entry, "draws": recorded(entry["draws"])}
    return found


DRAW_DIGITS = 6
"""Significant digits a judged statistic's draws keep: 20,000 draws of each land in the results JSON,
and six digits move no percentile by more than a millionth of its value."""


def recorded(draws: np.ndarray) -> np.ndarray:
    """``draws`` rounded to :data:`DRAW_DIGITS` significant digits (what the claims engine and the
    results JSON both read)."""
    return np.array([float(f"{x:.{DRAW_DIGITS}g}") for x in np.asarray(draws, dtype=float)])


def not_measured(blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Why each judged statistic of an arm that kept fewer than 2 seeds is None, keyed by the
    claims' metric path (``objectives.<arm>.judged.<name>.value``)."""
    return {f"objectives.{arm}.judged.{name}.value": block["not_measured"]
            for arm, block in blocks.items() if block.get("not_measured") for name in block["judged"]}
