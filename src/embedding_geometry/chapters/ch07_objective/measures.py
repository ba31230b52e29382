"""Chapter 7, *One backbone, two losses*: the geometry each training objective leaves, per depth,
compared over paired seeds.

:mod:`.runs` trains and measures every copy, :mod:`.results` keeps the copies
that learned and settled; this module holds the measures of one model and the comparison of the
copies. Every measure is one chapters 1–3 define, computed by
their study functions (defined on the Methods page), on texts held out from training:

==========================  =========================================================  ===========
measure [L + 1]             definition                                                 unit
==========================  =========================================================  ===========
intra_sentence_cosine       mean_s mean_{i≠j∈s} cos(h_i, h_j), word tokens               sentences
cross_sentence_baseline     mean_{s<t} mean_{i∈s, j∈t} cos(h_i, h_j)                     sentences
collapse_gap                intra − baseline                                             sentences
separability_ratio          B / W (between-sentence spread over within-sentence scatter)  sentences (ratio)
cls_mean_alignment          mean_s cos(c_l(s), w_l(s))                                   sentences
anisotropy                  mean_{s≠t} cos(m_l(s), m_l(t))                               sentences
<pairs>_mean_pool           mean over pairs of cos(m_l(a), m_l(b))                       pairs
<pairs>_maxsim              mean over pairs of mean_{i∈a} max_{j∈b} cos(h_i, h_j)         pairs
==========================  =========================================================  ===========

with <pairs> one of ``hard`` (each document of chapter 1's hard retrieval set with its negation or
role-reversal twin, the ``hard_twin`` parameter), ``easy`` (consecutive relevant documents of the
easy set: different topics) and ``other_twin`` (the hard set's other twin); the pair sets are
measured on the fine-tuned copies only (the small encoder knows only its task's words), as are
the hard set's query measures (:func:`.hard_negatives.hard_set_measures`).

**The comparison** (:func:`compare`) of a pair of copies (a, b) — the mean-pool copy and the MaxSim
copy; the hard-negative copy and the in-batch one — over the S seeds kept
(:mod:`.results`: no statistic uses a copy that did not learn) and the U units. Every
measure is an array values[variant][s, u, l]; the copies of one seed share their start and
batches, so differences are taken seed by seed and unit by unit:

    difference[s, u, l] = a[s, u, l] − b[s, u, l]
    change[o][s, u, l]  = o[s, u, l] − before[s, u, l]         (o: a or b)

Each statistic (the mean over seeds and units; the ratio of the means of B and W for the
separability ratio) gets its draws and 95 % interval over seeds *and* units from
:func:`core.hierarchical.hierarchical_interval` (crossed: the same units on every copy; Student's
t at the seed level), and each final-depth difference the exact sign-flip test over its per-seed
values. The draws of the judged statistics go to the claims engine, which reads its 95 % and
multiplicity-adjusted intervals from them (``samples: {draws, n_units}``). **Reach**
(:func:`reach`): at depth l the difference is *visible* when |d_l| exceeds n_l, the half-width of
its own 95 % interval; counting back from depth L, the run of depths where it is visible gives
the share of the L + 1 depths, whose interval comes from the same draws. The claims judge it as
**visibility** (:func:`visibility`): the weakest depth's |d_l| / n_l over a span of depths, the
weakest depth found again in each draw. **Peak margin** (:func:`peak_statistic`): how far the
MaxSim copy's mean curve peaks strictly inside, the peak found again in each draw.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from ...core import corpora, geometry, hierarchical
from ...core.activations import Activations
from ...studies import layer_by_layer
from ...studies.anisotropy import cone_formation
from . import hard_negatives, training

Curves = dict[str, np.ndarray]
Measured = tuple[Curves, Curves]  # (curves, per-unit values)
PAIR_SETS = ("hard", "easy", "other_twin")
TWINS = ("negation", "role_reversal")
VARIANTS = ("before", *training.OBJECTIVES)
RATIO = "separability_ratio"
SENTENCE_MEASURES = ("intra_sentence_cosine", "cross_sentence_baseline", "collapse_gap", RATIO, "cls_mean_alignment",
                     "anisotropy")
PAIR_MEASURES = tuple(f"{p}_{s}" for p in PAIR_SETS for s in training.OBJECTIVES)


def texts(sentences: Sequence[str] | None = None, hard_twin: str = "negation") -> dict[str, Any]:
    """Every text the fine-tuned copies are measured on: the sentence set (chapter 1's when
    None), the pairs of each pair set as [a, b] lists, the hard set's queries and pool
    (:func:`.hard_negatives.hard_set`) and the exercise's one-topic sentences."""
    hard, easy = corpora.load_yaml("retrieval_hard.yaml")["items"], corpora.retrieval_set("easy")
    other = TWINS[1 - TWINS.index(hard_twin)]
    relevant = [easy["pool"][i] for i in easy["relevant"]]
    return {"sentences": list(sentences or corpora.layer_by_layer_sentences()),
            "hard": [[item["relevant"], item[hard_twin]] for item in hard],
            "other_twin": [[item["relevant"], item[other]] for item in hard],
            "easy": [list(pair) for pair in pairwise(relevant)], **hard_negatives.hard_set(hard_twin),
            "one_topic": list(layer_by_layer.ONE_TOPIC)}


# --------------------------------------------------------------------------- one model

def sentence_measures(acts: Activations) -> Measured:
    """The sentence measures of the table on one record: (curves, per-unit values), the ratio's
    per-unit values as ``separability_ratio.between`` and ``.within``. The pairwise measures (the
    cross-sentence baseline, the anisotropy) get per-sentence values by :func:`projection`."""
    curves, units = {}, {}
    parts = (layer_by_layer.collapse(acts), layer_by_layer.cls_alignment(acts), cone_formation(acts.mean_pool("all")))
    for part in parts:
        found = part.pop("per_unit", {})
        units.update({k: v for k, v in found.items() if k in SENTENCE_MEASURES})
        units.update({k.removesuffix(".pairs"): projection(v) for k, v in found.items()
                      if k.removesuffix(".pairs") == "cross_sentence_baseline"})
        curves.update({k: v for k, v in part.items() if k in SENTENCE_MEASURES})
    units["anisotropy"] = projection(units["anisotropy"], rows=True)
    units["collapse_gap"] = units["intra_sentence_cosine"] - units["cross_sentence_baseline"]
    units.update({f"{RATIO}.{key}": value for key, value in layer_by_layer.separability_units(acts).items()})
    curves[RATIO] = geometry.parts_ratio(units[f"{RATIO}.between"], units[f"{RATIO}.within"])
    return curves, units


def projection(kernel: np.ndarray, rows: bool = False) -> np.ndarray:
    """Per-unit values of a pairwise statistic θ = mean_{s≠t} K_st [N, N, …] (diagonal zeroed)
    whose mean is θ and whose resampling gives θ's standard error: the Hájek projection
    2 r_s − θ, with r_s = mean_{t≠s} K_st the unit's row mean (``rows``: given the row means
    [N, …] instead). Row means alone as units would give half the standard error (the influence
    of a unit on a U-statistic of order 2 is twice its row's deviation); the projection is right
    to first order, as the plug-in terms of B are (:func:`.layer_by_layer.separability_units`)."""
    n = kernel.shape[0]
    row = kernel if rows else kernel.sum(axis=1) / (n - 1)
    return 2 * row - row.mean(axis=0)


def pair_scores(acts: Activations) -> tuple[np.ndarray, np.ndarray]:
    """Texts laid out a_0, b_0, a_1, b_1, …: per pair and depth, the mean-pool cosine and the
    mean MaxSim a → b over word tokens, each [n_pairs, L + 1]."""
    pools = acts.mean_pool("all")
    stacks = acts.word_states()
    maxsim = [geometry.maxsim(a, b).mean(axis=1) for a, b in zip(stacks[0::2], stacks[1::2])]
    return geometry.pair_cosine(pools[:, 0::2], pools[:, 1::2]).T, np.stack(maxsim)


def pair_measures(acts: Activations, name: str) -> Measured:
    """``<name>_mean_pool`` and ``<name>_maxsim`` of a record of pairs laid out a_0, b_0, …"""
    units = dict(zip((f"{name}_mean_pool", f"{name}_maxsim"), pair_scores(acts)))
    return {key: value.mean(axis=0) for key, value in units.items()}, units


# --------------------------------------------------------------------------- seeds and copies

def ratio_statistic(means: np.ndarray) -> np.ndarray:
    """B / W from the means [B, …, 2] of B and W over seeds and units: the ratio of the means."""
    return means[..., 0] / means[..., 1]


def ratio_difference(means: np.ndarray) -> np.ndarray:
    """B_a / W_a − B_b / W_b from the means [B, …, 4] of (B_a, W_a, B_b, W_b)."""
    return ratio_statistic(means[..., :2]) - ratio_statistic(means[..., 2:])


def peak_statistic(means: np.ndarray) -> np.ndarray:
    """The peak margin of mean curves [B, L + 1]: with p_b the inside depth of row b's highest
    point, min(x_p − x_0, x_p − x_L) — the peak found again in every row (every draw)."""
    rows = np.arange(len(means))
    p = 1 + np.argmax(means[:, 1:-1], axis=1)
    return np.minimum(means[rows, p] - means[:, 0], means[rows, p] - means[:, -1])


def generator(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by (``seed``, a hash of ``name``): one stream per statistic."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def final_summary(found: hierarchical.Hierarchical, per_seed: np.ndarray | None = None) -> dict[str, Any]:
    """The final-depth value of a statistic, its 95 % interval and the numbers of seeds and
    units; with per-seed values, the exact two-sided sign-flip p-value of their mean."""
    out = {"value": float(np.asarray(found.value).reshape(-1)[-1]),
           "interval": [float(x) for x in np.asarray(found.band).reshape(2, -1)[:, -1]],
           "n_seeds": found.n_seeds, "n_units": found.n_units}
    if per_seed is not None:
        out.update(per_seed=[float(x) for x in per_seed], p_value=hierarchical.sign_flip_test(per_seed))
    return out


def judged(found: hierarchical.Hierarchical, per_seed: np.ndarray | None = None) -> dict[str, Any]:
    """:func:`final_summary` with the final-depth ``draws`` [B] the claims engine reads
    (``samples: {draws, n_units}``)."""
    return {**final_summary(found, per_seed), "draws": np.asarray(found.draws).reshape(len(found.draws), -1)[:, -1]}


def compare(measured: Mapping[str, Mapping[int, Measured]], seeds: Sequence[int], keys: Sequence[str],
            seed: int = 0, resamples: int = hierarchical.RESAMPLES,
            pair: tuple[str, str] = training.OBJECTIVES) -> dict[str, Any]:
    """The comparison block of the module docstring for ``measured`` ({variant: {seed: (curves,
    units)}}) over the kept ``seeds``, for the measures ``keys`` and the ``pair`` of copies (a, b)
    whose difference a − b it takes (the two objectives; the hard-negative copy and the in-batch
    one): ``mean``, ``band``, ``difference``, ``change`` (of a and of b), their bands, the per-seed
    differences, the final-depth summaries (``final``) and the ``reach`` of every difference;
    ``judged_final`` holds the same summaries with their draws (:func:`judged`; {"difference":
    {key: …}, "change": {o: {key: …}}}) and the :func:`visibility` of the :data:`FINGERPRINT`
    difference, for the claims (popped by the caller, which keeps the judged ones: every draw of
    every measure would be too many to record)."""
    stream = "" if tuple(pair) == training.OBJECTIVES else f"{pair[0]}-{pair[1]}."
    block: dict[str, Any] = {"seeds": list(seeds), "pair": list(pair), "mean": {}, "band": {}, "difference": {},
                             "difference_band": {}, "per_seed_difference": {}, "change": {o: {} for o in pair},
                             "change_band": {o: {} for o in pair}, "reach": {},
                             "final": {"difference": {}, "change": {o: {} for o in pair}},
                             "judged_final": {"difference": {}, "change": {o: {} for o in pair}}}
    for key in keys:
        values = {v: unit_values(measured[v], seeds, key) for v in ("before", *pair)}
        statistic = ratio_statistic if key == RATIO else hierarchical.identity
        for variant, array in values.items():
            found = hierarchical.hierarchical_interval(array, statistic, generator(seed, f"{variant}.{key}"), resamples)
            block["mean"].setdefault(variant, {})[key] = found.value
            block["band"].setdefault(variant, {})[key] = found.band
        diff = _paired(values[pair[0]], values[pair[1]], key, generator(seed, f"{stream}difference.{key}"), resamples)
        per_seed = seed_differences(values[pair[0]], values[pair[1]], key)
        block["difference"][key], block["difference_band"][key] = diff.value, diff.band
        block["per_seed_difference"][key] = per_seed
        block["final"]["difference"][key] = final_summary(diff, per_seed[:, -1])
        block["judged_final"]["difference"][key] = judged(diff, per_seed[:, -1])
        block["reach"][key] = reach(diff)
        if key == FINGERPRINT:
            block["judged_final"]["visibility"] = {name: visibility(diff, r) for name, r in VISIBILITY.items()}
        for o in pair:
            change = _paired(values[o], values["before"], key, generator(seed, f"change.{o}.{key}"), resamples)
            per_seed_change = seed_differences(values[o], values["before"], key)[:, -1]
            block["change"][o][key], block["change_band"][o][key] = change.value, change.band
            block["final"]["change"][o][key] = final_summary(change, per_seed_change)
            block["judged_final"]["change"][o][key] = judged(change, per_seed_change)
    return block


def unit_values(by_seed: Mapping[int, Measured], seeds: Sequence[int], key: str) -> np.ndarray:
    """values[s, u, l] (for the ratio: [s, u, l, 2], B and W) over ``seeds``."""
    if key == RATIO:
        return np.stack([np.stack([by_seed[s][1][f"{RATIO}.between"], by_seed[s][1][f"{RATIO}.within"]], axis=-1)
                         for s in seeds])
    return np.stack([by_seed[s][1][key] for s in seeds])


def _paired(a: np.ndarray, b: np.ndarray, key: str, rng: np.random.Generator,
            resamples: int) -> hierarchical.Hierarchical:
    """a − b with its interval over seeds and units (the same draws for both)."""
    if key == RATIO:
        return hierarchical.hierarchical_interval(np.concatenate([a, b], axis=-1), ratio_difference, rng, resamples)
    return hierarchical.hierarchical_interval(a - b, seed=rng, resamples=resamples)


def seed_differences(a: np.ndarray, b: np.ndarray, key: str) -> np.ndarray:
    """[S, L + 1]: each seed's statistic of a minus that of b (values[s, u, l], as :func:`compare`
    takes them): the per-seed differences of the chapter's table."""
    if key == RATIO:
        return np.stack([ratio_difference(np.concatenate([x, y], axis=-1).mean(axis=0)[None])[0] for x, y in zip(a, b)])
    return (a - b).mean(axis=1)


# --------------------------------------------------------------------------- how far back

FINGERPRINT = "intra_sentence_cosine"
"""The measure whose difference the fingerprint claims judge depth by depth."""
VISIBILITY = {"final": 1.0, "back_half": 0.5, "every_depth": 0.0}
"""The depths a visibility statistic spans: those at relative depth l / L ≥ r."""


def reach(found: hierarchical.Hierarchical) -> dict[str, Any]:
    """How far back a difference is visible (module docstring): ``present`` [L + 1] (|d_l| >
    n_l), ``noise`` n_l, ``depth`` (the shallowest depth of the run back from L, None when absent
    at L), ``relative_depth``, ``share`` of the L + 1 depths, and from the draws the 95 %
    ``share_interval`` (whole depths: quantiles among the drawn counts), the ``depth_interval``
    it spans and the ``n_seeds`` and ``n_units`` resampled."""
    noise = found.half_width
    present = np.abs(found.value) > noise
    back, n_layers = _run_back(present), len(present) - 1
    depth = None if back == 0 else n_layers + 1 - back
    backs = runs_back(np.abs(found.draws) > noise)
    low, high = np.percentile(backs, [2.5, 97.5], method="inverted_cdf")
    return {"present": present, "noise": noise, "depth": depth,
            "relative_depth": None if depth is None else depth / n_layers, "share": back / (n_layers + 1),
            "share_interval": [float(low) / (n_layers + 1), float(high) / (n_layers + 1)],
            "depth_interval": [None if high == 0 else int(n_layers + 1 - high),
                               None if low == 0 else int(n_layers + 1 - low)],
            "n_seeds": found.n_seeds, "n_units": found.n_units}


def visibility(found: hierarchical.Hierarchical, r: float) -> dict[str, Any]:
    """The weakest depth's signal over its noise in the span of depths at relative depth ≥ r,
    min_{l/L ≥ r} |d_l| / n_l (above 1: the difference is visible at every depth of the span), on
    the estimate and on each draw (the weakest depth found again in each; n_l held: the noise the
    reach defines), with the numbers of seeds and units."""
    noise = found.half_width
    n_layers = len(noise) - 1
    span = np.arange(n_layers + 1) >= r * n_layers - 1e-9
    scale = np.where(noise[span] > 0, noise[span], np.nan)

    def ratio(d: np.ndarray) -> np.ndarray:
        return np.nanmin(np.abs(d[..., span]) / scale, axis=-1)

    return {"value": float(ratio(found.value)), "draws": ratio(found.draws), "n_seeds": found.n_seeds,
            "n_units": found.n_units}


def _run_back(present: np.ndarray) -> int:
    """The length of the run of True at the end of ``present``."""
    return int(runs_back(present[None])[0])


def runs_back(present: np.ndarray) -> np.ndarray:
    """Per row of ``present`` [B, n], the length of the run of True at its end."""
    backwards = present[:, ::-1]
    return np.where(backwards.all(axis=1), present.shape[1], np.argmin(backwards, axis=1))


def peak_margin(values: np.ndarray, seed: int, name: str, resamples: int = hierarchical.RESAMPLES) -> dict[str, Any]:
    """How far the mean curve of values[s, u, l] peaks strictly inside (:func:`peak_statistic`),
    with its draws over seeds and units — the peak found again in every draw — and the depth of
    the estimate's peak."""
    found = hierarchical.hierarchical_interval(values, peak_statistic, generator(seed, name), resamples)
    curve = values.mean(axis=(0, 1))
    return {**judged(found), "peak_depth": 1 + int(np.argmax(curve[1:-1]))}
