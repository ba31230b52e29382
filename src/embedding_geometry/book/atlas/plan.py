"""What an atlas run measures: its models (each trained model, then the random-init controls of
each), its text sets (``studies.across_models.text_sets``: chapter 8's, with the corpus its
parameter ``corpus`` names), how every set is cut into shards, and the folder its results go to.

A plan is read from chapter 8's parameters — the notebook's defaults, overridden by a profile's
``common`` and ``chapters.08_across_models`` values (:func:`from_profile`), each checked by the
chapter's rules — so that chapter 8 run on a profile and the atlas run on the same profile
measure the same models on the same texts, and the chapter can read the atlas's results
(parameter ``atlas_results``). A shard is a run of consecutive units of one set on one model:
``shard_texts`` units (None: the whole set), measured a forward pass at a time
(``shards.measure``), so a shard's memory does not grow with its size; its file holds the
accumulator, whose seeded sample (``sample_size`` units of [L + 1, D] vectors) is what makes a
shard file large, so shards of a few thousand texts keep a large corpus's shard files few. The
head pass (windows) runs on the trained models only: its claims' nulls are exact (chance,
uniform attention), and chapter 4 does not run it on controls either.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import rules
from ...core import paths
from ...studies import across_models
from ...studies.depth_statistics import TextSet

SLUG = "08_across_models"
"""The chapter whose parameters an atlas run takes."""


@dataclass(frozen=True)
class ModelSpec:
    """A model to measure: a hub id, local directory or embedded name, or the random-init control
    of one with ``control_seed`` (``core.models.random_control``)."""

    id: str
    control_seed: int | None = None

    @property
    def key(self) -> str:
        """A file name for its results: the id with every run of other characters than letters,
        digits, ``.`` and ``-`` made ``_``, and ``--control-<seed>`` for a control."""
        name = re.sub(r"[^A-Za-z0-9.-]+", "_", self.id).strip("_")
        return name + ("" if self.control_seed is None else f"--control-{self.control_seed}")


@dataclass(frozen=True)
class Shard:
    """Units ``start`` … ``stop`` − 1 of text set ``set`` on ``model``."""

    model: ModelSpec
    set: str
    start: int
    stop: int

    @property
    def name(self) -> str:
        return f"{self.set}-{self.start:09d}-{self.stop:09d}"


@dataclass(frozen=True)
class Plan:
    """An atlas run (module docstring); ``params`` are the chapter parameters it was made from."""

    models: tuple[ModelSpec, ...]
    sets: tuple[TextSet, ...]
    out: Path
    shard_units: int | None = None
    device: str = "auto"
    batch_size: int = 32
    trust_remote_code: bool = False
    cache: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """SHA-256 of what decides the shards' contents: the models, every text set (its texts
        and settings), the shard size and the package that measures them (code and data: shards
        of other code may hold other statistics). A results folder holds the shards of one
        fingerprint."""
        what = {"models": [[m.id, m.control_seed] for m in self.models], "shard_units": self.shard_units,
                "trust_remote_code": self.trust_remote_code, "sets": [repr(s) for s in self.sets],
                "package": paths.package_hash()}
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    def text_set(self, name: str) -> TextSet:
        return next(s for s in self.sets if s.name == name)

    def shards(self, model: ModelSpec | None = None) -> list[Shard]:
        """Every shard of ``model`` (default: of every model), model by model, set by set."""
        found = []
        for spec in [model] if model else self.models:
            for text_set in self.sets:
                if text_set.kind == "windows" and spec.control_seed is not None:
                    continue  # the head pass runs on trained models only (chapter 4's claims have exact nulls)
                size = self.shard_units or text_set.n_units
                found += [Shard(spec, text_set.name, start, min(start + size, text_set.n_units))
                          for start in range(0, text_set.n_units, size)]
        return found


def model_specs(params: Mapping[str, Any]) -> tuple[ModelSpec, ...]:
    """The trained models (``model``, then ``models`` without repeats), then, with
    ``random_control``, ``control_seeds`` random-init controls of each, seeds ``seed``, ``seed`` + 1, …"""
    trained = list(dict.fromkeys([params["model"], *params.get("models", [])]))
    specs = [ModelSpec(name) for name in trained]
    if params.get("random_control"):
        seeds = range(params["seed"], params["seed"] + params["control_seeds"])
        specs += [ModelSpec(name, seed) for name in trained for seed in seeds]
    return tuple(specs)


def from_parameters(params: Mapping[str, Any], out: str | Path) -> Plan:
    """The plan of chapter 8's (checked) parameters, its results under ``out``."""
    return Plan(models=model_specs(params), sets=across_models.text_sets(params), out=Path(out),
                shard_units=params.get("shard_texts"), device=params["device"], batch_size=params["batch_size"],
                trust_remote_code=params["trust_remote_code"], params=dict(params))


def chapter_parameters(profile: str, root: Path) -> dict[str, Any]:
    """Chapter 8's parameters on ``profile`` (a name under ``root/params`` or a path): the
    notebook's defaults, then the profile's values, each checked by the chapter's rules (one-line
    :class:`~embedding_geometry.book.rules.ProfileError` or ParameterError)."""
    chosen = rules.load(profile, root, rules.slugs(root))
    defaults = rules.notebook_defaults(root / "notebooks" / f"{SLUG}.ipynb")
    return {**defaults, **rules.chapter_parameters(SLUG, chosen, defaults)}
