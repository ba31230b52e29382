"""One run of one chapter notebook: parameters in, results JSON out.

A chapter notebook opens its run with one call and closes it with one call::

    ch = Chapter.open("01_layer_by_layer", globals())   # validate, seed, theme, start the clock
    acts = ch.extract(ch.params["sentences"])              # forward passes of ch.model, cached
    ch.add_metrics(layer_by_layer.collapse(acts))          # a study module computes the numbers
    ch.report("within-end", "gap-end")                     # the claims they decide, in words
    ...
    ch.finish()                                            # every verdict, the results JSON

Between the two, ``ch.params`` holds the validated parameters (the one way a chapter reads
them), ``ch.add_metrics`` collects the chapter's metrics dict (the one way it records them; its
schema is documented in the study module that computes it), ``ch.inputs`` every text the
chapter used. Every number the page states is the output of the cell that computes it: a
claim's verdict in words (:meth:`Chapter.report`), a labelled table, or a chart — so the
notebook reads the same in plain Jupyter as in the built book. :meth:`Chapter.compared` is the
one loop over the main model, the comparison models of the ``models`` parameter and their
random-init controls (``control_seeds`` of each); :meth:`Chapter.judge_model` adds another
model's metrics, judged with the same ledger.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import torch
from IPython.display import HTML, Markdown, display, update_display
from myst_nb import glue as myst_glue

from . import charts, claims, dashboard, pages, parameters, reproducibility, results, rules
from .claims import judge, words
from ..core import activations, models, paths
from ..core.errors import BookError


@dataclass
class Chapter:
    """The state of one chapter run (see the module docstring)."""

    slug: str
    params: dict[str, Any]
    started: float = field(default_factory=time.time)
    inputs: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    ran: dict[str, dict[str, Any]] = field(default_factory=dict)  # every model run: id → ModelInfo dict
    other_models: dict[str, dict[str, Any]] = field(default_factory=dict)  # model id → its metrics
    judged: list[str] = field(default_factory=list)  # the other models judged with the ledger (judge_model)
    _not_measured: dict[str, str] = field(default_factory=dict, repr=False)  # model → why some claims are not
    _verdicts: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)  # (claim, model) → Verdict
    _decided: dict[tuple[str, str], Any] | None = field(default=None, repr=False)  # (claim, model) → decided verdict
    _shown: list[tuple[str, Any]] = field(default_factory=list, repr=False)  # (display id, make) of verdict outputs
    _homes: dict[str, Any] = field(default_factory=dict, repr=False)  # home chapter → its results, read once

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
        chapter.check_models()
        if "model" in chapter.params:
            parameters.check_needs(rules.needs_for(slug), chapter.params, parameters.ModelView(lambda: chapter.model))
        if "seed" in chapter.params:
            seed_everything(chapter.params["seed"])
        charts.use_theme()
        return chapter

    # ------------------------------------------------------------------ models and activations

    def check_models(self) -> None:
        """Every model the parameters name beside the main one (``models``, ``finetune_model``,
        ``reranker``) is available and loadable as far as its config tells
        (:func:`models.check_available`), so that a missing one is refused as the chapter opens,
        not after the models before it have run."""
        trust = self.params.get("trust_remote_code", False)
        for name in ("models", "finetune_model", "reranker"):
            value = self.params.get(name)
            for model_id in [value] if isinstance(value, str) else value or []:
                models.check_available(model_id, trust, architecture=name != "reranker")

    @cached_property
    def model(self) -> models.LoadedModel:
        """The chapter's main model (parameter ``model``), loaded once."""
        return self._load(self.params["model"])

    def _load(self, name: str) -> models.LoadedModel:
        return self._ran(models.load(name, self.params.get("device", "auto"),
                                     self.params.get("trust_remote_code", False)))

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
                yield from self.controls(loaded)

    def controls(self, model: models.LoadedModel | None = None) -> Iterator[models.LoadedModel]:
        """The random-init controls of ``model`` (default: the main model), one per seed ``seed``,
        ``seed`` + 1, … (``control_seeds`` of them): their spread is the null distribution a
        trained model's measurement is compared with."""
        first = self.params.get("seed", 0)
        for seed in range(first, first + self.params.get("control_seeds", 1)):
            yield self._ran(models.random_control(model or self.model, seed))

    # ------------------------------------------------------------------ prose and results

    def add_metrics(self, part: Mapping[str, Any], model: str | None = None) -> None:
        """``metrics.update(part)``, except that the ``per_unit`` values of ``part`` (what a
        metric averages: per sentence, pair or query, keyed by the metric's path) join
        ``metrics["per_unit"]`` instead of replacing it. With ``model`` (another model's id),
        ``part`` joins that model's metrics instead, judged with :meth:`judge_model`."""
        main = model is None or model == self.model.info.id
        target = self.metrics if main else self.other_models.setdefault(model, {})
        part = dict(part)
        if "per_unit" in part:
            target.setdefault("per_unit", {}).update(part.pop("per_unit"))
        target.update(part)

    def glue(self, **values: Any) -> None:
        """Glue each value under its name for the page's ``{glue:text}`` references. A NumPy
        scalar is glued as the Python number it holds, so that a format such as
        ``{glue:text}`name:.3f``` applies to it."""
        for name, value in values.items():
            myst_glue(name, value.item() if isinstance(value, np.generic) else value, display=False)

    def record_models(self, infos: Any) -> None:
        """Record models another run measured (``ModelInfo``s: an atlas's, whose results the
        chapter reads) among the models of this run's results, with their weights' SHA-256."""
        for info in infos:
            self.ran.setdefault(info.id, info.to_dict())

    def judge_model(self, model: str, metrics: Mapping[str, Any] | None = None,
                    not_measured: str | None = None) -> None:
        """Judge the chapter's ledger on another model too (a second encoder measured the same
        way): ``metrics``, or what :meth:`add_metrics` records for it, before or after this call.
        Its verdicts join the claims table, the dashboard and the results JSON (its metrics under
        ``other_models``). With ``not_measured`` (why), the chapter measures that model for some
        claims only: a claim whose metric its metrics lack is *not measured* on it, for that reason."""
        if metrics is not None:
            self.other_models[model] = dict(metrics)
        self.other_models.setdefault(model, {})
        self.judged = [*dict.fromkeys([*self.judged, model])]
        if not_measured:
            self._not_measured[model] = not_measured

    @cached_property
    def ledger(self) -> claims.Ledger:
        """The chapter's claims ledger (its chapter package's ``ledger.yaml``)."""
        return claims.load(self.slug)

    def verdict(self, claim_id: str, model: str | None = None) -> claims.Verdict:
        """The verdict of one claim of the ledger on ``model`` (default: the main model): its test
        and p on the metrics recorded so far (bootstrap seeded by ``seed`` and the claim's id), and,
        once :meth:`finish` has adjusted the chapter's p-values, its outcome."""
        model = model or self.model.info.id
        if self._decided is not None:
            return self._decided[claim_id, model]
        if (claim_id, model) not in self._verdicts:
            found = [c for c in self.ledger.claims if c.id == claim_id]
            if not found:
                raise KeyError(f"claim {claim_id!r} is not in {self.slug}.yaml")
            metrics = self.metrics if model == self.model.info.id else self.other_models[model]
            if model in self._not_measured:
                metrics = _with_none(metrics, found[0].metric, self._not_measured[model])
            home = self._home_record(found[0], found[0].measured_on or model)  # its verdict is its home's:
            judged = claims.judge_claim(found[0], metrics, model, seed=self.params.get("seed", 0),
                                        test=home is None)  # measured here, not tested twice
            controlled = self.params.get("random_control", True)
            self._verdicts[claim_id, model] = judge.at_home(judged if controlled else uncontrolled(judged), home)
        return self._verdicts[claim_id, model]

    def report(self, *claim_ids: str) -> None:
        """The claims ``claim_ids`` in words, on every model judged so far (:func:`words.report`): a
        cell's output, right under the measurement that decides them. Their verdict words appear
        once :meth:`finish` has adjusted the chapter's p-values (the output is updated in place)."""
        self._show(lambda: words.report(self._chosen(claim_ids)))

    def show(self, render, *args: Any) -> None:
        """``render(verdicts, *args)`` (Markdown) on every verdict of the ledger — each claim's metric
        must be recorded by now — shown as :meth:`report` shows its claims and updated likewise."""
        self._show(lambda: render(self.verdicts(), *args))

    def _show(self, make) -> None:
        display_id = f"verdicts-{len(self._shown)}"
        self._shown.append((display_id, make))
        display(Markdown(make()), display_id=display_id)

    def _chosen(self, claim_ids) -> list[claims.Verdict]:
        return [self.verdict(c, m) for c in claim_ids for m in self._models_of(c)]

    def verdicts(self) -> list[claims.Verdict]:
        """Every claim of the ledger on every model judged (the main model first)."""
        return [self.verdict(c, m) for c, m in self._keys()]

    def _keys(self) -> list[tuple[str, str]]:
        """(claim, model) of every verdict of the ledger, the main model first."""
        return [(c.id, m) for m in [self.model.info.id, *self.judged] for c in self.ledger.claims
                if m in self._models_of(c.id)]

    def _models_of(self, claim_id: str) -> list[str]:
        """The models a claim is judged on: the main model, then every model of :meth:`judge_model`
        — except for a claim ``measured_on`` a named model, which the main model's metrics hold
        (a row of a table of models): it is judged once."""
        named = any(c.id == claim_id and c.measured_on for c in self.ledger.claims)
        return [self.model.info.id] if named else [self.model.info.id, *self.judged]

    FINDINGS = "findings"
    """The display id of the chapter's "What we found" box (:meth:`findings`)."""

    def findings(self):
        """The "What we found" box near the top of the chapter: a placeholder until
        :meth:`finish` judges the ledger and updates it in place (a display with an id: Jupyter
        and the executed notebook both show the box where this cell is)."""
        display(Markdown("*The findings appear here once the chapter's last cell has run.*"), display_id=self.FINDINGS)

    KEY_FIGURE = "key-figure"
    """The display id of the chapter's key figure, under its findings (:meth:`key_figure`)."""

    def key_figure(self, chart: Any = None):
        """The chapter's one key figure, shown under "What we found". Called with no chart near the
        top, a placeholder; called with the chart in the section that draws it, the placeholder is
        replaced in place, the chart is glued as ``key_figure`` (the landing page shows chapter 1's)
        and the section says where the chart went."""
        if chart is None:
            display(Markdown("*The key figure appears here once its section has run.*"), display_id=self.KEY_FIGURE)
            return None
        update_display(chart, display_id=self.KEY_FIGURE)
        self.glue(key_figure=chart)  # for the landing page  # HTML below: the heading's anchor is the page's
        return HTML('<p><em>This chart is the chapter\'s key figure: it is shown <a href="#what-we-found">under '
                    "what we found</a>.</em></p>")

    def finish(self, verdicts: bool = True):
        """Close the run: judge the chapter's ledger against ``metrics`` (and every model of
        :meth:`judge_model`), fill the findings box (:meth:`findings`), and write
        ``build/results/<slug>.json`` atomically. Returns the claims table (each row with its
        anchor ``claim-<id>``, the dashboard's link target), or None without verdicts."""
        found = (self.verdicts() if self._decided is not None else self.decide()) if verdicts else []
        model = self.model.info.to_dict() if "model" in self.params else {}
        others = {m: {k: v for k, v in found.items() if k != "per_unit"} for m, found in self.other_models.items()}
        metrics = {**self.metrics, "other_models": others} if others else self.metrics
        results.write_results(self.slug, model=model, params=self.params, inputs=self.inputs, metrics=metrics,
                              claims=found, models=list(self.ran.values()),
                              device=str(self.model.device) if model else "none", started=self.started)
        if not verdicts:
            return None
        update_display(Markdown(words.findings(found)), display_id=self.FINDINGS)
        for display_id, make in self._shown:
            update_display(Markdown(make()), display_id=display_id)
        return pages.claims_table(found)

    def decide(self) -> list[claims.Verdict]:
        """Every verdict, its p-values adjusted for the number of claims (:func:`claims.decide`),
        fragile where a perturbed float path changed it (book.reproducibility). Every metric must
        be recorded by now: :meth:`finish` calls it, unless a cell that needs the final verdicts
        (a table of them) already did."""
        keys = self._keys()
        found = [self.verdict(*key) for key in keys]
        flips = {(v.claim.id, v.model): f for v in found
                 if (f := reproducibility.flipped(self.slug, v.claim.id, v.model))}
        decided = claims.decide(found, claims.family_size(), flips)  # a claim at home elsewhere: its home's
        self._decided = dict(zip(keys, decided))
        return decided

    def _home_record(self, claim: claims.Claim, model: str) -> dict[str, Any] | None:
        """The decided record of ``claim`` on ``model`` in its home chapter's results of this build,
        when the claim's home is a chapter the build runs before this one; else None."""
        if not claim.home or claim.home > self.slug:  # a home the build runs later (or alongside, as
            return None  # chapter 7) is not read: the verdict would depend on the timing
        if claim.home not in self._homes:
            try:  # where a chapter's results land once its run succeeded, not this run's staging folder
                self._homes[claim.home] = results.read(paths.built_results_dir() / f"{claim.home}.json")
            except BookError:
                self._homes[claim.home] = None
        if (document := self._homes[claim.home]) is None:
            return None
        return next((r for r in dashboard.records(document) if r.get("id") == claim.id and r.get("model") == model),
                    None)

    def summary(self):
        """The chapter's summary in words (:func:`words.chapter_summary`): the tally, and every
        claim that is not a judged pass."""
        return Markdown(words.chapter_summary(self.verdicts()))


def _with_none(metrics: dict[str, Any], path: str, reason: str) -> dict[str, Any]:
    """``metrics`` with ``path`` ("a.b") set to None and ``not_measured[path]`` to ``reason`` when
    the path is missing (the nested mappings on the way copied, never changed in place)."""
    try:
        claims.lookup(metrics, path)
        return metrics
    except KeyError:
        pass
    out = dict(metrics)
    node, parts = out, path.split(".")
    for part in parts[:-1]:
        node[part] = dict(node[part]) if isinstance(node.get(part), Mapping) else {}
        node = node[part]
    node[parts[-1]] = None
    out["not_measured"] = {**out.get("not_measured", {}), path: reason}
    return out


NO_CONTROLS = "its null is the random-init controls, and this run made none (random_control is false)"


def uncontrolled(verdict: claims.Verdict) -> claims.Verdict:
    """``verdict`` as a run without random-init controls gives it: a claim tested against a control
    null is *not tested* (:data:`NO_CONTROLS`), as with too few seeds, never decided on its shape
    test alone; any other verdict as it is."""
    against_controls = (verdict.claim.null or {}).get("kind") == "control"
    if verdict.status in (judge.NOT_MEASURED, judge.BY_CONSTRUCTION) or not against_controls:
        return verdict
    return replace(verdict, status=judge.DESCRIPTIVE, reason=NO_CONTROLS, null=None, p_holds=None, p_fails=None,
                   outcome=None, se=None, mc_error=0.0)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
