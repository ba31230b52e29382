"""Chapter 7, *One backbone, two losses*: the geometry each training objective leaves, per depth.

:mod:`.objectives` trains the copies; this module measures every model before and after, and
compares the two objectives. Every measure is one chapter 1 or 2 already defines, computed by
their study functions (METHODS.md §1, §2, §3), on texts held out from training:

==========================  =========================================================  ===========
measure [L + 1]             definition                                                 unit
==========================  =========================================================  ===========
intra_sentence_cosine       mean_s mean_{i≠j∈s} cos(h_i, h_j), word tokens               sentences
cross_sentence_baseline     mean_{s<t} mean_{i∈s, j∈t} cos(h_i, h_j)                     sentence pairs
collapse_gap                intra − baseline                                             (none)
separability_ratio          B / W (between-sentence spread over within-sentence scatter)  sentences (ratio)
cls_mean_alignment          mean_s cos(c_l(s), w_l(s))                                   sentences
anisotropy                  mean_{s≠t} cos(m_l(s), m_l(t))                               sentences
<pairs>_mean_pool           mean over pairs of cos(m_l(a), m_l(b))                       pairs
<pairs>_maxsim              mean over pairs of mean_{i∈a} max_{j∈b} cos(h_i, h_j)         pairs
==========================  =========================================================  ===========

with <pairs> one of ``hard`` (each document of chapter 1's hard retrieval set with its negation or
role-reversal twin, the ``hard_twin`` parameter), ``easy`` (consecutive relevant documents of the
easy set: different topics) and ``other_twin`` (the hard set's other twin).

**Metrics** (:func:`experiment`, one block per start: ``pretrained`` or ``random_init``; variants
are ``before`` and the objectives ``mean_pool`` and ``maxsim``; ``curves`` = {measure: [L + 1]}):

    runs        {variant: {seed_<k>: curves}}           every model measured (before: the start of seed k)
    mean        {variant: curves}                       mean over seeds (separability: ratio of the seed means of B and W)
    difference  curves                                  mean[mean_pool] − mean[maxsim]
    seed_null   curves                                  max over objectives and seed pairs of |curve_a − curve_b|
    change      {objective: curves}                     mean[objective] − mean[before]
    midway      {objective: curves, difference: curves} the seed mean after half the steps; mean_pool − maxsim
    one_topic   {variant: collapse curves}              the exercise's five one-topic sentences
    loss        {objective: {seed_<k>: {losses, first, last}}}
    reach       {measure: {depth, relative_depth, share, present [L + 1], share_interval,
                depth_interval}}                    added by :func:`reaches`
    intervals   (top level) {<start>.<path>.<measure>: [2, L + 1]}  95 % band of every curve with per-unit values

``per_unit`` holds, under ``objectives.<start>.<path>.<measure>``, the [n_units, L + 1] values
whose mean over axis 0 is the curve at that path (``….separability_ratio.between`` and
``.within`` for the ratio, at ``runs`` and ``mean``); once the bands are computed,
:func:`kept_units` trims it to what the ledger reads. The unit values of a seed mean or a
difference are the seed means or differences of each unit's values: the units (sentences,
pairs) are the same in every run, so the interval is over texts, and ``seed_null`` says how much
moves between seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from itertools import combinations, pairwise
from typing import Any

import numpy as np

from ..core import corpora, geometry
from ..core.activations import Activations
from ..core.models import LoadedModel
from . import layer_by_layer, objectives
from .anisotropy import cone_formation

Curves = dict[str, np.ndarray]
Measured = tuple[Curves, Curves]  # (curves, per-unit values)
Extract = Callable[[LoadedModel, list[str]], Activations]
PAIR_SETS = ("hard", "easy", "other_twin")
TWINS = ("negation", "role_reversal")
VARIANTS = ("before", *objectives.OBJECTIVES)
RATIO = "separability_ratio"
MEASURES = ("intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap", "separability_ratio",
            "cls_mean_alignment", "anisotropy", *(f"{p}_{s}" for p in PAIR_SETS for s in ("mean_pool", "maxsim")))
BANDED = ("intra_sentence_cosine", "cross_sentence_baseline", "cls_mean_alignment", "anisotropy",
          *(f"{p}_{s}" for p in PAIR_SETS for s in ("mean_pool", "maxsim")))
"""The measures whose per-unit values are means (a bootstrap interval at every depth)."""


def texts(sentences: Sequence[str] | None = None, hard_twin: str = "negation") -> dict[str, Any]:
    """Every text measured: the sentence set (chapter 1's when None), the pairs of each pair set
    as [a, b] lists, and the exercise's one-topic sentences."""
    hard, easy = corpora.load_yaml("retrieval_hard.yaml")["items"], corpora.retrieval_set("easy")
    other = TWINS[1 - TWINS.index(hard_twin)]
    relevant = [easy["pool"][i] for i in easy["relevant"]]
    return {"sentences": list(sentences or corpora.layer_by_layer_sentences()),
            "hard": [[item["relevant"], item[hard_twin]] for item in hard],
            "other_twin": [[item["relevant"], item[other]] for item in hard],
            "easy": [list(pair) for pair in pairwise(relevant)],
            "one_topic": list(layer_by_layer.ONE_TOPIC)}


# --------------------------------------------------------------------------- one model

def pair_scores(acts: Activations) -> tuple[np.ndarray, np.ndarray]:
    """Texts laid out a_0, b_0, a_1, b_1, …: per pair and depth, the mean-pool cosine and the
    mean MaxSim a → b over word tokens, each [n_pairs, L + 1]."""
    pools = acts.mean_pool("all")
    stacks = acts.word_states()
    maxsim = [geometry.maxsim(a, b).mean(axis=1) for a, b in zip(stacks[0::2], stacks[1::2])]
    return geometry.pair_cosine(pools[:, 0::2], pools[:, 1::2]).T, np.stack(maxsim)


def measure(extract: Extract, model: LoadedModel, inputs: Mapping[str, Any]) -> Measured:
    """Every measure of the table on one model: (curves, per-unit values)."""
    acts = extract(model, inputs["sentences"])
    curves, units = {}, {}
    for part in (layer_by_layer.collapse(acts), layer_by_layer.separability(acts), layer_by_layer.cls_alignment(acts),
                 cone_formation(acts.mean_pool("all"))):
        units.update({key: value for key, value in part.pop("per_unit", {}).items() if key in MEASURES})
        curves.update({key: value for key, value in part.items() if key in MEASURES})
    units.update({f"{RATIO}.{key}": value for key, value in layer_by_layer.separability_units(acts).items()})
    for name in PAIR_SETS:
        pairs = extract(model, [text for pair in inputs[name] for text in pair])
        units[f"{name}_mean_pool"], units[f"{name}_maxsim"] = pair_scores(pairs)
        curves.update({key: units[key].mean(axis=0) for key in (f"{name}_mean_pool", f"{name}_maxsim")})
    return curves, units


def one_topic(extract: Extract, model: LoadedModel, inputs: Mapping[str, Any]) -> Curves:
    """Chapter 1's collapse curves on the exercise's one-topic sentences."""
    found = layer_by_layer.collapse(extract(model, inputs["one_topic"]))
    found.pop("per_unit")
    return found


# --------------------------------------------------------------------------- seeds and objectives

def seed_mean(measured: Sequence[Measured]) -> Measured:
    """The mean over seeds of curves and per-unit values; a ratio is the ratio of its terms' means."""
    units = {key: np.mean([u[key] for _, u in measured], axis=0) for key in measured[0][1]}
    curves = {key: np.mean([c[key] for c, _ in measured], axis=0) for key in measured[0][0]}
    curves[RATIO] = units[f"{RATIO}.between"].mean(axis=0) / units[f"{RATIO}.within"].mean(axis=0)
    return curves, units


def difference(a: Measured, b: Measured) -> Measured:
    """a − b for every curve, and for the per-unit values of every mean (not the ratio's terms)."""
    return _minus(a[0], b[0]), {key: a[1][key] - b[1][key] for key in a[1] if not key.startswith(RATIO)}


def _minus(a: Curves, b: Curves) -> Curves:
    return {key: a[key] - b[key] for key in a}


def seed_null(runs: Mapping[str, Mapping[int, Measured]]) -> Curves:
    """Per measure and depth, the largest |difference| between two seeds of the same objective."""
    pairs = [(by_seed[s][0], by_seed[t][0]) for by_seed in runs.values() for s, t in combinations(sorted(by_seed), 2)]
    return {key: np.max([np.abs(a[key] - b[key]) for a, b in pairs], axis=0) for key in pairs[0][0]}


def experiment(starts: Mapping[int, LoadedModel | Callable[[], LoadedModel]], pairs: Sequence[tuple[str, str]],
               settings: objectives.Settings, extract: Extract, inputs: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """One start (seed → starting model, or a function that makes it when its turn comes, so
    that a random-init copy is built only then): fine-tune each objective from it with its seed,
    measure every model (and each run half-way), and compare (the block of the module docstring,
    with ``per_unit`` under ``<prefix>.<path>.<measure>``)."""
    runs: dict[str, dict[int, Measured]] = {variant: {} for variant in VARIANTS}
    topic: dict[str, list[Curves]] = {variant: [] for variant in VARIANTS}
    midway: dict[str, list[Curves]] = {objective: [] for objective in objectives.OBJECTIVES}
    losses = {}
    for seed, start in starts.items():
        start = start() if callable(start) else start
        runs["before"][seed] = measure(extract, start, inputs)
        topic["before"].append(one_topic(extract, start, inputs))
        for objective in objectives.OBJECTIVES:
            half = lambda model, o=objective: midway[o].append(measure(extract, model, inputs)[0])
            model, losses[objective, seed] = objectives.fine_tune(start, pairs, objective, settings, seed, midway=half)
            runs[objective][seed] = measure(extract, model, inputs)
            topic[objective].append(one_topic(extract, model, inputs))
    mean = {variant: seed_mean(list(by_seed.values())) for variant, by_seed in runs.items()}
    parts = {"runs": {v: {f"seed_{s}": m for s, m in by_seed.items()} for v, by_seed in runs.items()}, "mean": mean,
             "difference": difference(mean["mean_pool"], mean["maxsim"]),
             "change": {o: difference(mean[o], mean["before"]) for o in objectives.OBJECTIVES}}
    block = _split(parts, prefix)
    half = {o: _mean_curves(c) for o, c in midway.items()}
    block.update(seed_null=seed_null({o: runs[o] for o in objectives.OBJECTIVES}),
                 midway={**half, "difference": _minus(half["mean_pool"], half["maxsim"])},
                 one_topic={v: _mean_curves(c) for v, c in topic.items()},
                 loss=objectives.loss_summary(losses))
    return block


def _mean_curves(curves: Sequence[Curves]) -> Curves:
    return {key: np.mean([c[key] for c in curves], axis=0) for key in curves[0]}


def _split(tree: Any, prefix: str) -> dict[str, Any]:
    """Replace every (curves, units) leaf of ``tree`` by its curves, and collect its units in
    ``per_unit`` under ``<prefix>.<path>.<measure>``."""
    per_unit: dict[str, np.ndarray] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, tuple):
            per_unit.update({f"{path}.{key}": value for key, value in node[1].items()})
            return node[0]
        return {key: walk(value, f"{path}.{key}") for key, value in node.items()}

    tree = walk(tree, prefix)
    return {**tree, "per_unit": per_unit}


def run(starts: Mapping[str, Mapping[int, LoadedModel | Callable[[], LoadedModel]]], pairs: Sequence[tuple[str, str]],
        settings: objectives.Settings, extract: Extract, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The whole experiment, every start ({start: {seed: starting model}}) through
    :func:`experiment`: {"objectives": {settings, n_pairs, seeds, <start>: block}, "per_unit": …}."""
    found: dict[str, Any] = {"settings": asdict(settings), "n_pairs": len(pairs),
                             "seeds": sorted({seed for by_seed in starts.values() for seed in by_seed})}
    per_unit: dict[str, np.ndarray] = {}
    for start, models in starts.items():
        found[start] = experiment(models, pairs, settings, extract, inputs, f"objectives.{start}")
        per_unit.update(found[start].pop("per_unit"))
    return {"objectives": found, "per_unit": per_unit}


# --------------------------------------------------------------------------- how far back

def sample_specs(per_unit: Mapping[str, Any], prefix: str = "objectives.") -> dict[str, Any]:
    """Each curve with per-unit values under ``prefix``: its path → the samples spec of
    ``book.intervals.find_samples`` (the key; [between, within] keys for the separability ratio)."""
    specs: dict[str, Any] = {}
    for key in per_unit:
        if key.startswith(prefix) and not key.endswith(f"{RATIO}.within"):
            path = key.removesuffix(".between")
            specs[path] = [f"{path}.between", f"{path}.within"] if key.endswith(f"{RATIO}.between") else key
    return specs


def kept_units(per_unit: Mapping[str, Any]) -> dict[str, Any]:
    """The per-unit values the results JSON keeps once every curve's band is computed: those of
    the seed means, differences and changes (the ledger's samples), without the cross-sentence
    baseline's N(N − 1)/2 sentence pairs; the per-seed runs are summarised by their bands."""
    return {key: value for key, value in per_unit.items()
            if ".runs." not in key and not key.endswith("cross_sentence_baseline")}


def reach(difference: np.ndarray, null: np.ndarray, draws: np.ndarray | None = None, n_units: int | None = None,
          level: float = 0.95) -> dict[str, Any]:
    """How far back a difference is visible. At depth l it is *present* when |d_l| > n_l, the
    seed null there. Counting back from depth L, the run of k depths where it is present gives
    its ``share`` k / (L + 1), the shallowest ``depth`` of the run, L + 1 − k, and its
    ``relative_depth`` l / L (None when k = 0: absent at L). With ``draws`` [B, L + 1], bootstrap
    resamples of d over the units, ``share_interval`` is the central ``level`` percentile
    interval of the B resampled shares (quantiles taken among the resampled counts, so that they
    are whole depths), ``depth_interval`` the depths it spans (None: absent)
    and ``n_units`` the number of units resampled."""
    null = np.asarray(null, dtype=float)
    present = np.abs(np.asarray(difference, dtype=float)) > null
    back, n_layers = _run_back(present), len(present) - 1
    depth = None if back == 0 else n_layers + 1 - back
    out = {"depth": depth, "relative_depth": None if depth is None else depth / n_layers,
           "share": back / (n_layers + 1), "present": present}
    if draws is not None:
        backs = np.array([_run_back(row) for row in np.abs(np.asarray(draws, dtype=float)) > null])
        tail = 100 * (1 - level) / 2
        low, high = np.percentile(backs, [tail, 100 - tail], method="inverted_cdf")  # counts: observed values
        out["share_interval"] = [float(low) / (n_layers + 1), float(high) / (n_layers + 1)]
        out["depth_interval"] = [None if high == 0 else int(n_layers + 1 - high),
                                 None if low == 0 else int(n_layers + 1 - low)]
        out["n_units"] = n_units
    return out


def _run_back(present: np.ndarray) -> int:
    """The length of the run of True at the end of ``present``."""
    return len(present) if present.all() else int(np.argmin(present[::-1]))


def reaches(block: Mapping[str, Any], draws: Mapping[str, tuple[np.ndarray, int]], prefix: str) -> dict[str, dict[str, Any]]:
    """:func:`reach` of every banded measure's difference against the block's seed null, with
    the difference's bootstrap resamples and unit count from ``draws`` (keyed
    ``<prefix>.difference.<measure>``)."""
    return {key: reach(block["difference"][key], block["seed_null"][key], *draws[f"{prefix}.difference.{key}"])
            for key in BANDED}
