"""Chapter 1's models: every encoder of the chapter and its random-init controls run on the
chapter's texts (:class:`Run`, :func:`run_all`), and the tables that name them.

A trained model runs every text set of :data:`TRAINED_TEXTS`, its sentences' pass keeping the
stream between each block's two sublayers too (:mod:`.sublayers`: the same cached pass, whose
record other chapters read as it was); a random-init control runs :data:`CONTROL_TEXTS`, what
its nulls need. ``layer_by_layer.measure`` turns one model's run and
its controls' runs into that model's metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import architectures
from ..core.activations import Activations
from ..core.models import LoadedModel, ModelInfo

if TYPE_CHECKING:  # annotations only
    import pandas as pd

Metrics = dict[str, Any]
Extract = Callable[..., Activations]

TRAINED_TEXTS = ("sentences", "twins", "easy_queries", "easy_pool", "hard_queries", "hard_pool",
                 "negation_pair", "role_reversal_pair", "final_view", "token_pair_alone", "exercise_one_topic")
"""The text sets every trained model runs."""
CONTROL_TEXTS = ("sentences", "negation_twins")
"""The text sets a random-init control runs: what its nulls need."""


@dataclass
class Run:
    """One model's activations of every text set, by name (:data:`TRAINED_TEXTS`); a trained
    model's sentences hold their states between each block's sublayers (``after_attention``)."""

    info: ModelInfo
    acts: dict[str, Activations]

    @property
    def control(self) -> bool:
        return self.info.source == "control"


def texts_of(inputs: Mapping[str, Any], control: bool = False) -> dict[str, list[str]]:
    """The text sets a model runs, by name: a trained model :data:`TRAINED_TEXTS`, a random-init
    control :data:`CONTROL_TEXTS`."""
    found = {"sentences": inputs["sentences"], "twins": inputs["twins"], "negation_twins": inputs["negation_twins"],
             "easy_queries": inputs["easy_set"]["queries"], "easy_pool": inputs["easy_set"]["pool"],
             "hard_queries": inputs["hard_set"]["queries"], "hard_pool": inputs["hard_set"]["pool"],
             "negation_pair": inputs["negation_pair"], "role_reversal_pair": inputs["role_reversal_pair"],
             "final_view": inputs["hard_pair"] + inputs["easy_pair"], "token_pair_alone": inputs["token_pair_alone"],
             "exercise_one_topic": inputs["exercise_one_topic"]}
    return {name: found[name] for name in (CONTROL_TEXTS if control else TRAINED_TEXTS)}


SOURCES = {"easy_queries": "easy_set", "easy_pool": "easy_set", "hard_queries": "hard_set", "hard_pool": "hard_set",
           "exercise_one_topic": "sentences", "final_view": "texts", "negation_pair": "texts",
           "role_reversal_pair": "texts", "token_pair_alone": "texts"}
"""The parameter each text set comes from, for error messages."""


def run_all(extract: Extract, loaded_models: Iterable[LoadedModel], inputs: Mapping[str, Any]) -> dict[str, Run]:
    """Every model's :class:`Run`, by model id, in the order given: ``extract(texts, model,
    source=…)`` (the chapter's cached forward pass) on each text set of :func:`texts_of`; a
    trained post-norm model's sentences with ``after_attention`` (in the same pass: the sublayer
    split of :mod:`.sublayers`; a pre-norm model is not split)."""
    runs = {}
    for loaded in loaded_models:
        control = loaded.info.source == "control"
        split = not control and architectures.family_of(loaded.model).attention_norm is not None
        acts = {name: extract(texts, loaded, source=SOURCES.get(name, name),
                              **({"after_attention": True} if name == "sentences" and split else {}))
                for name, texts in texts_of(inputs, control).items()}
        runs[loaded.info.id] = Run(loaded.info, acts)
    return runs


def trained(runs: Mapping[str, Run]) -> list[str]:
    """The ids of the trained models run, in order (the main model first)."""
    return [name for name, run in runs.items() if not run.control]


def controls_of(runs: Mapping[str, Run], model: str) -> list[Run]:
    """The random-init controls of ``model`` among ``runs`` (their ids begin with the model's)."""
    return [run for name, run in runs.items() if run.control and name.startswith(f"{model} [")]


def label(info: ModelInfo) -> str:
    """A model's name in the charts and tables: "all-MiniLM-L6-v2 (6 blocks)"."""
    return f"{info.id.rsplit('/', 1)[-1]} ({info.layers} blocks)"


def labelled(runs: Mapping[str, Run], metrics: Mapping[str, Metrics]) -> dict[str, Metrics]:
    """The metrics of every trained model, by :func:`label`, in the order they ran."""
    return {label(runs[name].info): metrics[name] for name in trained(runs) if name in metrics}


def dip_table(measured: Mapping[str, Metrics]) -> "pd.DataFrame":
    """Per model, the block where the within-sentence cosine falls most (or, where it never falls,
    rises least) and what each sublayer changes there (:func:`.sublayers.dip`), with the number of
    content and function word tokens."""
    import pandas as pd

    rows = []
    for name, metrics in measured.items():
        found, block = metrics["dip"], metrics["dip"]["steepest_fall_block"]
        rows.append({"model": name, "block of the least change": f"{block} of {len(metrics['update_coherence'])}",
                     "change in within-sentence cosine there": metrics["intra_sentence_cosine"][block]
                     - metrics["intra_sentence_cosine"][block - 1],
                     "across attention": _at(found["attention_change"], block - 1),
                     "across feed-forward": _at(found["feed_forward_change"], block - 1),
                     "content word tokens": found["word_class_counts"]["content"],
                     "function word tokens": found["word_class_counts"]["function"]})
    return pd.DataFrame(rows).round(4).fillna("—")


def _at(series, i: int):
    return None if series is None else float(series[i])
