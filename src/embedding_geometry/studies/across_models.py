"""Chapter 8, *Across models, on relative depth*: the per-depth measurements of chapters 1–4 on
every model an atlas run measured (``book.atlas``), one metrics dict per model, so that one claims
ledger judges each of them.

The texts are those of the chapters the claims come from (:func:`text_sets`), each measured by a
mergeable accumulator (``studies.accumulators``) — so a run on MiniLM and MPNet here, and a run
on fifty models and a corpus of any size on a cluster, give results of the same form:

=============  ===========  ===========================================================================
set            units        what it measures (keys of its metrics)
=============  ===========  ===========================================================================
``sentences``  sentences    chapter 1's varied sentences: within-sentence cosine, cross-sentence
                            baseline, separability, CLS and PC1 alignment, token norms, coherence
                            of updates, peak writes, the depth-0 ↔ final correlation of each dimension
``twins``      documents    chapter 1's hard set: each document with its negation and its role
                            reversal (``negation``, ``role_reversal``, ``cls.*``, ``maxsim*``)
``easy_pairs`` pairs        chapter 2's easy pairs: chapter 1's sentences paired in order (``easy``)
``corpus``     sentences    chapter 3's sentences (``corpus_texts`` of its corpus, spread over the
                            topics as chapter 3 takes them), or the texts of the corpus the parameter
                            ``corpus`` names (the first ``corpus_texts``; ``core.text_sources``): the
                            same statistics as ``sentences``; the claims read its anisotropy
``heads``      windows      chapter 4's head pass on ``head_texts`` windows of ``head_length`` tokens,
                            cut from chapter 4's corpus or from ``corpus``'s texts, cycled
=============  ===========  ===========================================================================

The other sets are the claims' own texts, whatever the corpus: a claim about negation needs its
negations.

:func:`model_metrics` flattens one model's results into the dict the ledger reads: each set's
metrics under its name (``sentences.intra_sentence_cosine``), its per-unit values under
``per_unit["<set>.<key>"]``, and ``pair_sets``, chapter 2's hard-versus-easy statistics paired
unit by unit (the hard pairs are the twins' document and negation, pair i of each set one
unit of the gap). :func:`with_controls` gives each trained model its controls' per-unit values,
seed by seed, under ``per_unit["control.<key>"]`` [S, n, …]: the ledger's nulls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import corpora, registry, text_sources
from ..core.models import ModelInfo
from . import cone, layer_by_layer, similarity_attractor
from .accumulators import SAMPLE_SIZE
from .depth_statistics import TextSet

if TYPE_CHECKING:
    import pandas as pd

Metrics = dict[str, Any]


def text_sets(params: Mapping[str, Any]) -> tuple[TextSet, ...]:
    """The chapter's text sets (module docstring) from its parameters ``corpus``,
    ``corpus_column``, ``corpus_texts``, ``head_texts``, ``head_length``, ``sample_size`` and
    ``seed``; the book's own texts are the lists their chapters pass to the model."""
    seed, size = params.get("seed", 0), params.get("sample_size", SAMPLE_SIZE)
    twins = corpora.retrieval_set("hard")["pool"]
    easy = similarity_attractor.pair_set_texts()["easy"]
    source = text_sources.of_parameters(params)
    corpus = () if source else tuple(cone.chapter_corpus("project", params.get("corpus_texts"), seed)["sentence"])
    return (TextSet("sentences", "texts", tuple(layer_by_layer.inputs()["sentences"]), seed=seed, sample_size=size),
            TextSet("twins", "tuples", tuple(twins), names=("negation", "role_reversal"), maxsim=True),
            TextSet("easy_pairs", "tuples", tuple(easy), names=("easy",)),
            TextSet("corpus", "texts", corpus, seed=seed, sample_size=size, corpus=source),
            TextSet("heads", "windows", source="corpus", windows=params.get("head_texts", 32),
                    length=params.get("head_length", 128), seed=seed, corpus=source))



def pair_sets(twins: Mapping[str, Any], easy: Mapping[str, Any]) -> Metrics:
    """Chapter 2's statistics of the hard pairs (each document and its negation) against the easy
    pairs, per pair [n, L + 1] (pair i of each set one unit): the mean-pool cosines ``hard`` and
    ``easy``, their difference ``gap`` and its depth-0 value ``gap_first`` (``gap_relative`` is
    the ratio of their means), the hard pairs' MaxSim of shared and of discriminative tokens and
    their difference ``maxsim_gap``, CLS and mean MaxSim minus mean-pool cosine, ``hard_rise``,
    the hard cosine minus its depth-0 value, and ``reversal_minus_negation``, each document's
    cosine with its role reversal minus that with its negation (chapter 1)."""
    t, hard = twins["per_unit"], twins["per_unit"]["negation"]
    units = {**similarity_attractor.gap_units(hard, easy["per_unit"]["easy"], t["maxsim_shared"],
                                              t["maxsim_discriminative"]),
             "maxsim_minus_mean_pool": t["maxsim"] - hard, "hard_rise": hard - hard[:, :1],
             "reversal_minus_negation": t["role_reversal"] - hard}
    if "cls.negation" in t:
        units["cls_minus_mean_pool"] = t["cls.negation"] - hard
    return {**similarity_attractor.gap_means(units), "per_unit": units}


HEAD_KEYS = ("separator_attention", "separator_share", "mean_pair_distance", "same_sentence_fraction",
             "same_sentence_chance")
"""The head pass's metrics the ledger reads: None on a model without the pass (a control)."""
NO_HEAD_PASS = "the head pass runs on trained models only (chapter 4's nulls are exact: chance, uniform attention)"


def model_metrics(sets: Mapping[str, Mapping[str, Any]]) -> Metrics:
    """One model's metrics by set (an atlas result's ``metrics``) as the ledger reads them
    (module docstring); without the head pass (a random-init control), its metrics are None and
    ``not_measured`` says why."""
    if "heads" not in sets:
        sets = {**sets, "heads": dict.fromkeys(HEAD_KEYS)}
        return {**model_metrics(sets), "not_measured": {f"heads.{key}": NO_HEAD_PASS for key in HEAD_KEYS}}
    found: Metrics = {"per_unit": {}}
    for name, metrics in {**sets, "pair_sets": pair_sets(sets["twins"], sets["easy_pairs"])}.items():
        metrics = dict(metrics)
        found["per_unit"].update({f"{name}.{key}": value for key, value in metrics.pop("per_unit", {}).items()})
        found[name] = metrics
    return found


def with_controls(by_model: Mapping[str, Metrics], control_of: Mapping[str, str]) -> dict[str, Metrics]:
    """``by_model`` where each trained model with controls (``control_of``: control id → trained
    id) gains ``per_unit["control.<key>"]``: its controls' per-unit values stacked seed by seed
    [S, n, …], for every key they all have with one shape."""
    found = {name: {**metrics, "per_unit": dict(metrics["per_unit"])} for name, metrics in by_model.items()}
    for trained in dict.fromkeys(control_of.values()):
        seeds = [by_model[c]["per_unit"] for c, t in control_of.items() if t == trained]
        shared = [k for k in seeds[0] if all(k in s and np.shape(s[k]) == np.shape(seeds[0][k]) for s in seeds)]
        found[trained]["per_unit"].update({f"control.{key}": np.stack([s[key] for s in seeds]) for key in shared})
    return found


def measured(found: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Metrics], dict[str, ModelInfo]]:
    """An atlas's results (``book.atlas.read``: model id → its results) as the chapter judges
    them: each model's metrics (:func:`model_metrics`), a trained model's with its controls'
    per-unit values (:func:`with_controls`), and each model's :class:`ModelInfo` (with its
    weights' SHA-256), by model id."""
    infos = {name: ModelInfo(**document["model"]) for name, document in found.items()}
    by_model = {name: model_metrics(document["metrics"]) for name, document in found.items()}
    trained = [name for name, info in infos.items() if info.source != "control"]
    control_of = {name: next((t for t in trained if name.startswith(f"{t} [")), None)
                  for name, info in infos.items() if info.source == "control"}
    return with_controls(by_model, {c: t for c, t in control_of.items() if t}), infos


def model_key(found: Mapping[str, Any], name: str) -> str:
    """The id under which ``found`` (model id → results) keeps the model the ``model`` parameter
    names: the name itself, or, for an embedded model's short name (``minilm``), its hub id."""
    if name in found:
        return name
    entry = registry.resolve(name)
    return entry.hub_id if entry else name


def trained_only(by_model: Mapping[str, Metrics], infos: Mapping[str, ModelInfo]) -> dict[str, Metrics]:
    """The trained models' metrics alone, without their controls' per-unit values: the chapter
    as it would read without random-init controls."""
    return {name: {**metrics, "per_unit": {k: v for k, v in metrics["per_unit"].items()
                                           if not k.startswith("control.")}}
            for name, metrics in by_model.items() if infos[name].source != "control"}


def sample_table(by_model: Mapping[str, Metrics], sets: Sequence[str] = ("corpus",),
                 key: str = "anisotropy") -> "pd.DataFrame":
    """Per model (its id without the organisation) and set: ``key`` at its peak depth over every
    unit and over the seeded sample the claims are judged on, their largest difference over
    depths, and the two sizes."""
    import pandas as pd

    rows = []
    for name, metrics in by_model.items():
        for part in sets:
            full, sampled = np.asarray(metrics[part][key]), np.asarray(metrics[part]["sampled"][key])
            rows.append({"model": name.rsplit("/", 1)[-1], "set": part, "units": metrics[part]["n_units"],
                         "sampled units": metrics[part]["sampled"]["n_units"],
                         f"{key}, peak, all units": full.max(), f"{key}, peak, sample": sampled.max(),
                         "largest difference over depths": np.abs(full - sampled).max()})
    return pd.DataFrame(rows).set_index(["model", "set"])


def without_units(by_model: Mapping[str, Metrics]) -> dict[str, Metrics]:
    """Every model's metrics without their per-unit values (what the results JSON keeps per model)."""
    return {name: {key: value for key, value in metrics.items() if key != "per_unit"}
            for name, metrics in by_model.items()}


def head_grids(by_model: Mapping[str, Metrics], models: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-head grids [L][H] of the head pass (mean pair distance and separator share) of
    every trained model, by the model's label."""
    trained = [m for m in by_model if models[m]["kind"] == "trained" and (by_model[m].get("heads") or {}).get("heads")]
    return {models[m]["label"]: {key: by_model[m]["heads"]["heads"][key] for key in ("mean_pair_distance",
                                                                                     "separator_attention")}
            for m in trained}
