"""Chapter 7's parameters: the rule each must satisfy alone (:data:`RULES`; the registry adds the rules
every measuring chapter shares, ``book.rules.MODEL``) and what the chapter's computations need of
them together (:data:`NEEDS`). The book's registry, :mod:`embedding_geometry.book.rules`, takes both; a need
imports the chapter's torch modules only when it is checked (the site build and the CLI read the rules
without a model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...book import parameters as p
from ...book.rules import words
from ...core.errors import ParameterError

STEPS_AT_LEAST = 6
"""Chapter 7's fewest steps: a copy's levelling compares tenths of 2 steps or more (training.levelled)."""

CHAPTER = "07_training_objective"
"""The chapter these rules are for (its notebook's name)."""

RULES: dict[str, p.Rule] = {
    "workers": p.integer(1, 64),
    "warmup": p.number(0.0, 0.5), "temperature": p.number(1e-3, 10.0), "max_length": p.integer(4, 8192),
    "scratch_seeds": p.integer(2, 20), "scratch_steps": p.integer(STEPS_AT_LEAST, 1_000_000),
    "scratch_pairs_per_batch": p.integer(2, 512), "finetune_pairs_per_batch": p.integer(2, 512),
    "scratch_learning_rate": p.number(1e-8, 1.0), "scratch_layers": p.integer(2, 24),
    "scratch_width": p.integer(8, 1024), "concepts": p.integer(8, 256), "task_pairs": p.integer(16, 1_000_000),
    "task_held_out": p.integer(4, 10_000),
    "finetune_seeds": p.integer(2, 20), "finetune_steps": p.integer(STEPS_AT_LEAST, 1_000_000),
    "finetune_learning_rate": p.number(1e-8, 1.0), "held_out_pairs": p.integer(4, 300),
    "recall_k": p.integer(1, 100), "sentences": p.optional(p.text_list(3)),
    "hard_twin": p.one_of("negation", "role_reversal"), "hard_negatives": p.boolean,
}
"""Each of the chapter's own parameters and its rule (the book's registry adds ``MODEL``'s)."""


def _refusal(call) -> tuple[Any, str] | None:
    """The value and message of the ParameterError that ``call()`` raises, or None."""
    try:
        call()
    except ParameterError as error:
        return error.got, error.expected
    return None


def _scratch_task(values: Mapping[str, Any]):
    from . import synthetic_task  # loads torch: the site build and the CLI read these rules without a model

    return synthetic_task.Task(concepts=values["concepts"], train_pairs=values["task_pairs"],
                               held_out=values["task_held_out"], seed=values["seed"])


@p.need("concepts", "a synthetic task the corpus can make: at most half its content words as concepts, and "
        "task_pairs plus task_held_out distinct documents of them")
def _task_within_corpus(values):
    from . import synthetic_task  # loads torch (as above)

    return _refusal(lambda: synthetic_task.texts(_scratch_task(values)))


@p.need("scratch_width", "a width the small encoder's attention heads divide")
def _width_fits_heads(values):
    from . import synthetic_task  # loads torch (as above)

    return _refusal(lambda: synthetic_task.Shape(layers=values["scratch_layers"], width=values["scratch_width"]))


@p.need("held_out_pairs", "a split of the book's training pairs that holds out that many pairs sharing no text")
def _split_holds_out(values):
    from . import training  # loads torch (as above)

    return _refusal(lambda: training.split_pairs(training.training_pairs(), values["held_out_pairs"]))


EPOCHS_CHECKED = 3
"""Batches are checked over the first epochs of every seed (a batch that cannot be filled shows there)."""


def _fills_batches(pairs, size: int, steps: int, seeds: range) -> tuple[Any, str] | None:
    """Whether every seed's first :data:`EPOCHS_CHECKED` epochs of ``size``-pair batches fill."""
    from . import training  # loads torch (as above)

    checked = min(steps, EPOCHS_CHECKED * max(1, len(pairs) // max(size, 1)))
    for s in seeds:
        if found := _refusal(lambda s=s: training.batches(pairs, size, checked, s)):
            return found
    return None


@p.need("scratch_pairs_per_batch", "batches the synthetic task's training pairs fill without a text twice")
def _scratch_batches_fill(values):
    from . import synthetic_task  # loads torch (as above)

    try:
        train = synthetic_task.texts(_scratch_task(values))["train"]
    except ValueError:
        return None  # the task's own need says why
    seeds = range(values["seed"], values["seed"] + values["scratch_seeds"])
    return _fills_batches(train, values["scratch_pairs_per_batch"], values["scratch_steps"], seeds)


@p.need("finetune_pairs_per_batch", "batches the book's training pairs (less those held out) fill without a "
        "text twice")
def _finetune_batches_fill(values):
    from . import training  # loads torch (as above)

    try:
        train, _ = training.split_pairs(training.training_pairs(), values["held_out_pairs"])
    except ValueError:
        return None  # held_out_pairs's own need says why
    seeds = range(values["seed"], values["seed"] + values["finetune_seeds"])
    return _fills_batches(train, values["finetune_pairs_per_batch"], values["finetune_steps"], seeds)


NEEDS: tuple[p.Need, ...] = (_task_within_corpus, _width_fits_heads, _split_holds_out, _scratch_batches_fill,
                             _finetune_batches_fill,
                             words("sentences", 2, "within-sentence cosines pair two tokens of a text"))
"""What the chapter's computations need of its values together."""
