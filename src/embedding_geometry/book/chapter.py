"""One run of one chapter notebook: parameters in, results JSON out.

A chapter notebook opens its run with one call and closes it with one call::

    ch = Chapter.open("01_layer_by_layer", globals())   # validate, seed, theme, start the clock
    acts = ch.extract(sentences)                           # forward passes of ch.model, cached
    ch.metrics.update(layer_by_layer.collapse(acts))       # a study module computes the numbers
    ...
    ch.finish()                                            # verdicts, glued prose, results JSON

Between the two, ``ch.metrics`` collects the chapter's metrics dict (its schema is documented
in the study module that computes it), ``ch.inputs`` every text the chapter used, and
``ch.glue`` the values the prose quotes. :meth:`Chapter.compared` is the one loop over the main
model, the comparison models of the ``models`` parameter and the random-init controls.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from . import charts, claims, pages, parameters, rules
from ..core import activations, models


@dataclass
class Chapter:
    """The state of one chapter run (see the module docstring)."""

    slug: str
    params: dict[str, Any]
    started: float = field(default_factory=time.time)
    inputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    ran: dict[str, dict[str, Any]] = field(default_factory=dict)  # every model run: id → ModelInfo dict

    @classmethod
    def open(cls, slug: str, namespace: Mapping[str, Any]) -> "Chapter":
        """Check the parameters the chapter's rule table names (read from ``namespace``, normally
        the notebook's ``globals()``) against their rules and the chapter's needs — those that
        read the model's tokenizer or sizes load the model, and run nothing through it —, seed
        every generator with ``seed``, set the chart theme, and start the clock. A bad value
        raises one-line :class:`~embedding_geometry.core.errors.ParameterError`."""
        table = rules.rules_for(slug)
        missing = [name for name in table if name not in namespace]
        if missing:
            raise KeyError(f"chapter {slug!r} declares no value for {missing} (its parameters cell must)")
        chapter = cls(slug=slug, params=rules.check(slug, {name: namespace[name] for name in table}))
        if "model" in chapter.params:
            parameters.check_needs(rules.needs_for(slug), chapter.params, parameters.ModelView(lambda: chapter.model))
        if "seed" in chapter.params:
            seed_everything(chapter.params["seed"])
        charts.use_theme()
        return chapter

    # ------------------------------------------------------------------ models and activations

    @cached_property
    def model(self) -> models.LoadedModel:
        """The chapter's main model (parameter ``model``), loaded once."""
        return self._load(self.params["model"])

    def _load(self, name: str) -> models.LoadedModel:
        return self._ran(models.load(name, self.params.get("device", "auto"), self.params.get("trust_remote_code", False)))

    def _ran(self, loaded: models.LoadedModel) -> models.LoadedModel:
        """Record ``loaded`` (id, weights' SHA-256, shape) among the models this run used."""
        self.ran.setdefault(loaded.info.id, loaded.info.to_dict())
        return loaded

    def extract(self, texts: list[str], model: models.LoadedModel | None = None, source: str = "texts",
                **options: Any) -> activations.Activations:
        """:func:`activations.extract` of ``texts`` on ``model`` (default: the main model) with
        the chapter's ``batch_size``; ``source`` names the parameter the texts came from."""
        return activations.extract(self._ran(model or self.model), texts, batch_size=self.params.get("batch_size", 32),
                                   source=source, **options)

    def compared(self, main: bool = True) -> Iterator[models.LoadedModel]:
        """The models a comparison runs on, each loaded when its turn comes: the main model
        (unless ``main`` is False), every other model of the ``models`` parameter, then, when
        ``random_control`` is true, a random-init control of each of those trained models (its
        architecture with fresh weights, seeded by ``seed``): what a measurement owes to the
        architecture rather than to training."""
        trained = []
        for name in dict.fromkeys([self.params["model"], *self.params.get("models", [])]):
            loaded = self.model if name == self.params["model"] else self._load(name)
            if name != self.params["model"] or main:
                yield loaded
            trained.append(loaded)
        if self.params.get("random_control"):
            for loaded in trained:
                yield self._ran(models.random_control(loaded, self.params.get("seed", 0)))

    # ------------------------------------------------------------------ prose and results

    def add_metrics(self, part: Mapping[str, Any]) -> None:
        """``metrics.update(part)``, except that the ``per_unit`` values of ``part`` (what a
        metric averages: per sentence, pair or query, keyed by the metric's path) join
        ``metrics["per_unit"]`` instead of replacing it."""
        part = dict(part)
        if "per_unit" in part:
            self.metrics.setdefault("per_unit", {}).update(part.pop("per_unit"))
        self.metrics.update(part)

    def glue(self, **values: Any) -> None:
        """Glue each value under its name for the page's ``{glue:text}`` references. A NumPy
        scalar is glued as the Python number it holds, so that a format such as
        ``{glue:text}`name:.3f``` applies to it."""
        from myst_nb import glue

        for name, value in values.items():
            glue(name, value.item() if isinstance(value, np.generic) else value, display=False)

    def glue_metrics(self) -> None:
        """Glue every value of ``metrics`` under its key path (:func:`metric_values`), so that the
        prose quotes a metric by where the results JSON holds it:
        ``{glue:text}`whitening.retrieval.none.ndcg_at_10:.3f```."""
        self.glue(**metric_values(claims.to_jsonable(self.metrics)))

    def finish(self, verdicts: bool = True, findings: list[str] | None = None) -> Path:
        """Close the run: evaluate the chapter's claims ledger against ``metrics`` (when the
        chapter has one; bootstrap seeded by ``seed``), glue the claims table (each row with its anchor
        ``claim-<id>``, the dashboard's link target) and the errata table, every
        claim's prose values, and the Markdown written from the verdicts (``findings``: the "What
        this run found" box, of the claims named in ``findings`` or the ledger's headline claims;
        ``claims_summary``; ``verdict_legend``; ``sentence_<id>``), and write
        ``build/results/<slug>.json`` atomically. Returns the results path."""
        found = []
        if verdicts:
            ledger = claims.load(self.slug)
            found = claims.evaluate(ledger, self.metrics, self.model.info.id, seed=self.params.get("seed", 0))
            self.glue(**claims.prose_values(found), **claims.markdown_values(found, findings),
                      claims_table=pages.claims_table(found), errata_table=claims.errata_table(ledger),
                      n_errata=len(ledger.errata))
        model = self.model.info.to_dict() if "model" in self.params else {}
        return claims.write_results(self.slug, model=model, params=self.params, inputs=self.inputs,
                                    metrics=self.metrics, claims=found, models=list(self.ran.values()),
                                    device=str(self.model.device) if model else "none", started=self.started)


def metric_values(tree: Any, path: str = "") -> dict[str, Any]:
    """Every number and text of a metrics tree by its key path: mapping keys joined by ".", items
    of a list of numbers by their index ("finetune.article.pair_cosine_before.1"); None becomes
    "not measured". Lists of mappings and the ``per_unit`` samples are left out."""
    if isinstance(tree, Mapping):
        pairs = [(str(key), value) for key, value in tree.items() if key != "per_unit"]
    elif isinstance(tree, list):
        if any(isinstance(value, (Mapping, list)) for value in tree):
            return {}
        pairs = [(str(i), value) for i, value in enumerate(tree)]
    else:
        return {path: "not measured" if tree is None else tree}
    return {key: value for name, item in pairs
            for key, value in metric_values(item, f"{path}.{name}" if path else name).items()}


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
