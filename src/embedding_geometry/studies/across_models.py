"""Chapter 8, *Across models, on relative depth*: the headline per-depth measurements of chapters
1–4 on several models, one metrics dict per model, so that one claims ledger judges each of them.

Nothing is measured here that another study does not define. This module gathers, per model,
what those studies return, on the very texts their chapters use (so every forward pass is a
cache hit when chapters 1–3 ran first), with their schemas unchanged:

inputs(corpus_texts, seed): the texts
    sentences      chapter 1's varied sentences (``layer_by_layer.inputs``)
    pairs          chapter 2's hard, medium and easy pairs; ``pair_sets`` its hard and easy sets of pairs
    corpus         chapter 3's corpus (all of it, or a seeded sample of ``corpus_texts``)
measure(extract, texts) → (one model's metrics, its corpus mean pools [L + 1, N, D]):
    layer_by_layer.collapse         intra_sentence_cosine, cross_sentence_baseline, collapse_gap [L + 1]
    layer_by_layer.separability     separability_ratio [L + 1]
    layer_by_layer.cls_alignment    cls_mean_alignment, pc1_mean_alignment [L + 1]
    similarity_attractor.pair_similarity   pair_cosine {hard, medium, easy}, cls_cosine {…} [L + 1]
    similarity_attractor.pair_sets         pair_sets {hard, easy, gap, gap_relative, …}
    anisotropy.cone_formation       anisotropy, anisotropy_rise [L + 1], final_step_share, anisotropy_peak_depth
    per_unit                        every study's per-unit values, merged (book.intervals)
head_pass(model, n_texts, length, seed, batch_size) → chapter 4's measures of one model
    (``context_similarity.metrics`` on ``n_texts`` windows of ``length`` tokens of the corpus, chapter
    4's default thresholds), of which it keeps: separator_attention, mean_pair_distance,
    same_sentence_fraction [L] (per block), separator_share, same_sentence_chance, head_grid
    {mean_pair_distance, separator_attention: [L][H]} and their per-text values
no_head_pass(reason): the same keys as None, with ``not_measured`` saying why
heads(model, params): head_pass on a trained model with the chapter's head_texts, head_length, seed
    and batch_size; no_head_pass on a random-init control
with_controls(by_model, control_of): each trained model's metrics gain ``control``, its random-init
    control's collapse_gap, separability_ratio, pair_sets {hard, easy} and anisotropy: the
    ledger's nulls
without_units(by_model): the metrics without ``per_unit`` (what the results JSON keeps per model)
without_controls(by_model, control_of): the trained models' metrics alone, as without controls
sample_anisotropy(pools, sample, corpus, extract): anisotropy per depth of a sample of the corpus
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..core import corpora, streaming, windows
from ..core.activations import Activations
from ..core.models import LoadedModel
from . import (
    anisotropy,
    cone_exercises,
    context_similarity,
    layer_by_layer,
    similarity_attractor,
)

Metrics = dict[str, Any]
Extract = Callable[[list[str]], Activations]

HEAD_KEYS = ("separator_attention", "separator_share", "mean_pair_distance", "same_sentence_fraction",
             "same_sentence_chance", "head_grid")
HEAD_UNITS = ("separator_attention.separators", "separator_attention.attended", "mean_pair_distance.distance",
              "high_pairs", "same_sentence_fraction.same")
CONTROL_KEYS = ("collapse_gap", "separability_ratio", "anisotropy")


def inputs(corpus_texts: int | None = None, seed: int = 0) -> dict[str, Any]:
    """Every text the chapter measures, taken where chapters 1–3 take theirs."""
    attractor = similarity_attractor.inputs()
    return {"sentences": layer_by_layer.inputs()["sentences"], "pairs": attractor["pairs"],
            "pair_sets": attractor["pair_sets"],
            "corpus": corpora.load_corpus("project", corpus_texts, seed)["sentence"].tolist()}


def merged(*parts: Mapping[str, Any]) -> Metrics:
    """The union of study results, their ``per_unit`` values joined rather than replaced."""
    found: Metrics = {"per_unit": {}}
    for part in parts:
        part = dict(part)
        found["per_unit"].update(part.pop("per_unit", {}))
        found.update(part)
    return found


def measure(extract: Extract, texts: Mapping[str, Any]) -> tuple[Metrics, np.ndarray]:
    """One model's metrics (module docstring) and the mean pools of the corpus; ``extract`` runs
    the model on a list of texts (each list as its chapter passes it, so that the cache hits)."""
    sentences = extract(texts["sentences"])
    pairs = {name: extract(pair) for name, pair in texts["pairs"].items()}
    hard, easy = (extract(texts["pair_sets"][name]) for name in ("hard", "easy"))
    pools = extract(texts["corpus"]).mean_pool("all")
    return merged(layer_by_layer.collapse(sentences), layer_by_layer.separability(sentences),
                  layer_by_layer.cls_alignment(sentences), similarity_attractor.pair_similarity(pairs),
                  similarity_attractor.pair_sets(hard, easy), anisotropy.cone_formation(pools)), pools


def head_pass(model: LoadedModel, n_texts: int, length: int, seed: int, batch_size: int) -> Metrics:
    """Chapter 4's streaming pass on ``n_texts`` texts of ``length`` tokens of the corpus, reduced
    to the measures the chapter compares (module docstring)."""
    settings = context_similarity.Settings()
    texts = windows.from_source(model.tokenizer, "corpus", n_texts, length, seed)
    run = context_similarity.measure(streaming.stream(model, texts, batch_size, total=n_texts), settings)
    found = context_similarity.metrics(run.stats, settings)
    grid = {key: found["heads"][key] for key in ("mean_pair_distance", "separator_attention")}
    return {**{key: found[key] for key in HEAD_KEYS if key != "head_grid"}, "head_grid": grid,
            "per_unit": {key: found["per_unit"][key] for key in HEAD_UNITS}}


def no_head_pass(reason: str) -> Metrics:
    """The head measures of a model the head pass did not run on: None, and why."""
    return {**dict.fromkeys(HEAD_KEYS), "not_measured": dict.fromkeys(
        ("separator_attention", "mean_pair_distance", "same_sentence_fraction"), reason)}


def heads(model: LoadedModel, params: Mapping[str, Any]) -> Metrics:
    """:func:`head_pass` of a trained model with the chapter's ``head_texts``, ``head_length``,
    ``seed`` and ``batch_size``; a random-init control gets :func:`no_head_pass`."""
    if model.info.source == "control":
        return no_head_pass("the head pass runs on the trained models only")
    return head_pass(model, params["head_texts"], params["head_length"], params["seed"], params["batch_size"])


def with_controls(by_model: Mapping[str, Metrics], control_of: Mapping[str, str]) -> dict[str, Metrics]:
    """``by_model`` with, for each trained model that has a control (``control_of``: control id →
    trained id), ``control``: the control's series that the ledger's nulls name."""
    found = {name: dict(metrics) for name, metrics in by_model.items()}
    for control, trained in control_of.items():
        series = by_model[control]
        found[trained]["control"] = {**{key: series[key] for key in CONTROL_KEYS},
                                     "pair_sets": {name: series["pair_sets"][name] for name in ("hard", "easy")}}
    return found


def without_units(by_model: Mapping[str, Metrics]) -> dict[str, Metrics]:
    """Every model's metrics without their per-unit values."""
    return {name: {key: value for key, value in metrics.items() if key != "per_unit"}
            for name, metrics in by_model.items()}


def without_controls(by_model: Mapping[str, Metrics], control_of: Mapping[str, str]) -> dict[str, Metrics]:
    """The trained models' metrics without their controls' series: what the chapter measures when
    ``random_control`` is false (``control_of``: control id → trained id)."""
    return {name: {key: value for key, value in metrics.items() if key != "control"}
            for name, metrics in by_model.items() if name not in control_of}


def sample_anisotropy(pools: np.ndarray, sample: Sequence[str], corpus: Sequence[str], extract: Extract) -> Metrics:
    """Anisotropy per depth of the texts ``sample`` (columns of the corpus's ``pools`` where it can),
    the depth of its peak, and its largest |difference| from the whole corpus's curve."""
    series = anisotropy.anisotropy_per_depth(cone_exercises.sample_pools(sample, corpus, pools, extract))
    full = anisotropy.anisotropy_per_depth(pools)
    return {"anisotropy": series, "peak_depth": int(np.argmax(series)), "full_peak_depth": int(np.argmax(full)),
            "max_difference": float(np.abs(series - full).max())}
