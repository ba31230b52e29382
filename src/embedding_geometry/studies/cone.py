"""Chapter 3's run ("Inside the Cone"): its sentences, every model's forward pass, and every
measurement of the chapter on each trained model, with its random-init controls.

    chapter_corpus(name, n, seed)   n sentences of a corpus, the same number from every topic
    run_models(encoders, extract, texts)  → {trained model id: Run (its record, its controls' pools)}
    measure_all(runs, …)            → {trained model id: metrics}, each the union of

      studies.anisotropy   cone_formation (pairs), control_formation, pooling_gap  Experiments 1, 2
      studies.cone_axis    cone_axis_reading, vocab_on_cone_axis, rotation,        Experiments 3, 4
                           axis_comparison (every model run, the same for all)
      studies.centering    topic_measurements                                      the centering test
                           shared_direction       how much of a pair's cosine is the shared direction
      layers               L, the model's blocks

    without_units(found)            every model's metrics without their per-unit samples
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core import corpora
from ..core.geometry import label_rows, principal_axis
from . import centering
from .anisotropy import cone_formation, control_formation, pooling_gap
from .cone_axis import axis_comparison, cone_axis_reading, rotation, vocabulary_on_axis, word_counts

if TYPE_CHECKING:
    from ..core.models import LoadedModel, ModelInfo


# --------------------------------------------------------------------------- the chapter's sentences

def chapter_corpus(name: str = "project", n: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The chapter's sentences: all of corpus ``name`` when ``n`` is None, else ``n`` of them
    spread evenly over its topics — each topic's rows shuffled with a generator seeded by
    ``seed``, then taken in turn from each topic — kept in corpus order. A corpus with one topic
    gives a seeded uniform sample."""
    frame = corpora.load_corpus(name)
    if n is None or n >= len(frame):
        return frame
    rng = np.random.default_rng(seed)
    order = [rng.permutation(rows) for rows in label_rows(frame["topic"].tolist()).values()]
    turns = sorted(((rank, k, row) for k, rows in enumerate(order) for rank, row in enumerate(rows)))
    keep = sorted(row for _, _, row in turns[:n])
    return frame.iloc[keep].reset_index(drop=True)


@dataclass
class Run:
    """One trained model's forward pass over the chapter's sentences (``acts``), and the mean
    pools [L + 1, N, D] of its random-init controls on the same sentences, by control id."""

    model: LoadedModel
    acts: Any
    controls: dict[str, np.ndarray]

    @cached_property
    def pools(self) -> np.ndarray:
        """[L + 1, N, D]: the model's mean pools."""
        return self.acts.mean_pool("all")


def run_models(encoders: Iterable[LoadedModel], extract: Callable[..., Any], texts: list[str]) -> dict[str, Run]:
    """Run every model of ``encoders`` (trained models, then random-init controls, as
    ``Chapter.compared`` yields them) on ``texts`` with ``extract(texts, model, source=...)``:
    one :class:`Run` per trained model, with its controls' mean pools."""
    runs: dict[str, Run] = {}
    for encoder in encoders:
        record = extract(texts, encoder, source="corpus")
        if encoder.info.source == "control":
            runs[control_of(encoder.info, runs)].controls[encoder.info.id] = record.mean_pool("all")
        else:
            runs[encoder.info.id] = Run(encoder, record, {})
    return runs


def control_of(info: ModelInfo, trained: Iterable[str]) -> str:
    """The trained model whose random-init control ``info`` is (its id begins the control's)."""
    found = [name for name in trained if info.id.startswith(f"{name} [")]
    if not found:
        raise ValueError(f"{info.id!r} is not the control of any model run before it")
    return found[0]


# --------------------------------------------------------------------------- every measurement, every model

def measure(run: Run, topics: Sequence[str], sentences: Sequence[str], params: Mapping[str, Any],
            published: Mapping[str, Any], axes: Mapping[str, np.ndarray] | None = None) -> dict:
    """Every measurement of the chapter on one trained model's :class:`Run` (module docstring):
    ``params`` gives ``token_set``, ``k_extremes``, ``k_vocab`` and ``seed``; ``published`` the
    post's transcribed data (its common words and its L0 tokens); ``axes`` the cone axes of the
    model and its controls by id, when already computed."""
    pools, seed, controls = run.pools, params["seed"], list(run.controls.values())
    name = run.model.info.id
    axes = axes or {key: principal_axis(final) for key, final in [(name, pools[-1])] +
                    [(key, c[-1]) for key, c in run.controls.items()]}
    found: dict[str, Any] = {"layers": run.acts.n_layers, "per_unit": {}}
    parts = [cone_formation(pools, "pairs"), control_formation(pools, controls),
             pooling_gap(pools, run.acts, params["token_set"]),
             cone_axis_reading(pools[-1], topics, word_counts(run.acts), sentences, params["k_extremes"], seed,
                               axis=axes[name]),
             centering.topic_measurements(pools, topics, seed=seed), centering.shared_direction(pools, topics)]
    for part in parts:
        found["per_unit"].update(part.pop("per_unit", {}))
        if "not_measured" in part:
            found.setdefault("not_measured", {}).update(part.pop("not_measured"))
        found.update(part)
    vocab = published["vocab_on_cone_axis"]
    found["vocab_on_cone_axis"] = vocabulary_on_axis(run.model, found["cone_axis"], params["k_vocab"],
                                                     vocab["common_words"], vocab["top_tokens_as_listed"])
    found["rotation"] = rotation(pools[-1], [c[-1] for c in controls], [axes[key] for key in [name, *run.controls]])
    return found


def measure_all(runs: Mapping[str, Run], topics: Sequence[str], sentences: Sequence[str],
                params: Mapping[str, Any], published: Mapping[str, Any]) -> dict[str, dict]:
    """:func:`measure` of every trained model of ``runs``, each with the comparison of every
    model's cone axis that the post made (:func:`axis_comparison`, the same for all): a metrics
    dict per trained model, by id. Each cone axis is computed once."""
    finals = {name: run.pools[-1] for name, run in runs.items()}
    finals.update({name: pools[-1] for run in runs.values() for name, pools in run.controls.items()})
    axes = {name: principal_axis(final) for name, final in finals.items()}
    shared = axis_comparison(finals, published["cone_axis_cosine"], axes)
    found = {}
    for name, run in runs.items():
        metrics = measure(run, topics, sentences, params, published, axes)
        metrics.update({key: value for key, value in shared.items() if key != "per_unit"})
        metrics["per_unit"].update(shared["per_unit"])
        found[name] = metrics
    return found


def without_units(found: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every model's metrics without their per-unit samples (what the results JSON keeps of a
    model the chapter judges besides its main one)."""
    return {name: {key: value for key, value in metrics.items() if key != "per_unit"}
            for name, metrics in found.items()}
