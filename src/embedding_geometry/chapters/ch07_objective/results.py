"""Chapter 7's results, arm by arm: which copies learned and settled, the comparisons over the kept
seeds, and the statistics its claims judge.

From the records of :func:`.runs.run` (every copy of an arm, by variant and seed),
:func:`block` makes one arm's results:

* **every copy's training**: its loss curve and whether it levelled off
  (:func:`.training.levelled`), and its held-out recall@k with the score it was trained with,
  against chance (:func:`.synthetic_task.beats_chance`);
* **the kept seeds**: a copy is *usable* when it beats chance and its loss levelled off; a seed is
  kept when every copy it trained is usable, so that the copies compared stay paired. A copy
  that is not usable is listed in ``excluded`` with its reason, and no statistic uses its seed;
* **the comparisons** over the kept seeds (:func:`.measures.compare`): the mean-pool copy
  against the MaxSim copy (``comparison``) and, on a fine-tuning arm that trains it, the
  hard-negative copy against the in-batch one (``hard_negatives``, :mod:`.hard_negatives`);
* **whether each comparison settled** (:func:`settled`): its main difference — the final-depth
  within-sentence cosine for the losses, the final-depth hard margin for the hard negatives —
  computed again on every kept copy's snapshot at three quarters of its steps, must lie inside
  the 95 % interval (over seeds and units) of its value at the end. A comparison that has not
  settled decides nothing: the statistics of its claims are recorded as not measured, with the
  two values, as a copy that did not learn is left out;
* **whether fine-tuning taught anything** (:func:`improvement`): on a fine-tuning arm, the copies
  of each loss must retrieve the held-out queries better than their backbone (beating chance
  excludes nothing there: the backbone already does). When either loss's copies do not, the
  comparison of the two losses decides nothing (:func:`untrained`), and its statistics are
  recorded as not measured, with the two recalls and the test;
* **the judged statistics** (:func:`judged`), each with its draws for the claims engine; the
  checks of the experiment (matched retrieval, an undamaged backbone) are judged whether or not
  the comparison settled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core import geometry, hierarchical
from . import hard_negatives, measures, synthetic_task, training
from .runs import Arm

Records = Mapping[str, Mapping[int, Any]]
SCORE_OF = {"mean_pool": "mean_pool", "maxsim": "maxsim", hard_negatives.VARIANT: "mean_pool"}
"""The score each trained variant was trained with (and its retrieval is read with)."""
HARD_KEYS = (*hard_negatives.QUERY_MEASURES, "hard_mean_pool", "other_twin_mean_pool", "easy_mean_pool", "anisotropy")
"""The measures the hard-negative comparison takes."""
MAIN = {"comparison": measures.FINGERPRINT, "hard_negatives": "hard_margin"}
"""Each comparison's main difference, the one whose settling :func:`settled` checks."""
MAIN_NAMES = {measures.FINGERPRINT: "within-sentence cosine", "hard_margin": "hard margin"}
"""The main differences' measures in words."""


def trained(records: Records) -> list[str]:
    """The trained variants of an arm's records (every variant but ``before``)."""
    return [v for v in records if v != "before"]


def retrieval(records: Records, arm: Arm) -> dict[str, dict[str, Any]]:
    """Each copy's held-out recall@k with the score it was trained with, its exact interval and
    whether it beats chance ({variant: {seed: …}}); each start's with both scores ({before:
    {score: {seed: …}}}, one entry for a fine-tuning arm, whose start is the same for every seed)."""
    own = {v: {s: synthetic_task.beats_chance(r["retrieval"][SCORE_OF[v]], arm.chance)
               for s, r in records[v].items()} for v in trained(records)}
    starts = dict(list(records["before"].items())[:1]) if arm.model is not None else records["before"]
    own["before"] = {score: {s: synthetic_task.beats_chance(r["retrieval"][score], arm.chance)
                             for s, r in starts.items()} for score in training.OBJECTIVES}
    return own


def losses(records: Records) -> dict[str, dict[str, dict[str, Any]]]:
    """{variant: {seed_<k>: {losses, first, last, levelled}}}: every step's loss, the means over
    the first and the last tenth of the steps, and :func:`.training.levelled`."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for variant in trained(records):
        for seed, record in records[variant].items():
            values, k = record["losses"], max(1, len(record["losses"]) // 10)
            out.setdefault(variant, {})[f"seed_{seed}"] = {
                "losses": values, "first": float(np.mean(values[:k])), "last": float(np.mean(values[-k:])),
                "levelled": training.levelled(values)}
    return out


def gradient_norms(records: Records, kept: Sequence[int]) -> dict[str, Any]:
    """Each trained variant's gradient norm per block, averaged over the training steps
    (:func:`.training.block_gradient_norms`): per kept seed (``per_seed`` {variant: [seeds,
    blocks]}, the claims' units) and their ``mean`` over the kept seeds ({variant: [blocks]}); a
    variant the arm did not train (the hard-negative copy when it is switched off) is None in both."""
    variants = (*training.OBJECTIVES, hard_negatives.VARIANT)
    per_seed = {v: [records[v][s]["gradient_norms"] for s in kept] if v in records else None for v in variants}
    return {"seeds": list(kept), "per_seed": per_seed,
            "mean": {v: np.mean(rows, axis=0).tolist() if rows else None for v, rows in per_seed.items()}}


NAMES = {"mean_pool": "mean-pool", "maxsim": "MaxSim"}
"""The losses' names in a reason."""
IMPROVES_AT = 0.05
"""The level of the one-sided exact sign test by which a fine-tuned loss's copies improve their
backbone's held-out retrieval (:func:`improvement`)."""


def improvement(records: Records, kept: Sequence[int]) -> dict[str, dict[str, Any]]:
    """Whether each fine-tuned variant's copies retrieve the held-out queries better than their
    backbone, each with the score it was trained with: per query q, d_q = the kept copies' mean
    hit − the backbone's hit; under no improvement a query with d_q ≠ 0 gains or loses with
    probability ½, so the one-sided exact sign test is the binomial test of the gains among them
    ({variant: {before, after, gained, lost, p_value, improves}})."""
    from scipy.stats import binomtest

    start = next(iter(records["before"].values()))["retrieval"]  # the same backbone for every seed
    out = {}
    for variant in trained(records):
        before = np.asarray(start[SCORE_OF[variant]], dtype=float)
        after = np.mean([records[variant][s]["retrieval"][SCORE_OF[variant]] for s in kept], axis=0)
        gained, lost = int(np.sum(after > before)), int(np.sum(after < before))
        p = float(binomtest(gained, gained + lost, 0.5, alternative="greater").pvalue) if gained + lost else 1.0
        out[variant] = {"before": float(before.mean()), "after": float(after.mean()), "gained": gained,
                        "lost": lost, "p_value": p, "improves": p < IMPROVES_AT}
    return out


def untrained(out: Mapping[str, Any]) -> dict[str, str]:
    """{statistic: why it is not judged} for the loss comparison's statistics when a loss's
    fine-tuned copies do not improve their backbone's held-out retrieval (:func:`improvement`):
    such copies are the backbone moved by training that taught nothing measurable, so a
    difference between them is not the loss's doing."""
    found, reasons = out.get("improvement") or {}, {}
    for name in RESTS_ON["comparison"]:
        failing = [v for v in NEEDS.get(name, training.OBJECTIVES) if v in found and not found[v]["improves"]]
        if failing:
            reasons[name] = f"fine-tuning did not improve the backbone's held-out recall@{out['k']}: " + "; ".join(
                f"{NAMES[v]} copies {change_text(found[v])}" for v in failing)
    return reasons


def change_text(found: Mapping[str, Any]) -> str:
    """One variant's :func:`improvement` in words: "0.516 → 0.509 (2 queries gained, 2 lost;
    one-sided exact sign test p = 0.69)"."""
    queries = "query" if found["gained"] == 1 else "queries"
    return (f"{found['before']:.3f} → {found['after']:.3f} ({found['gained']} {queries} gained, {found['lost']} "
            f"lost; one-sided exact sign test p = {found['p_value']:.2g})")


def excluded(found: Mapping[str, Any], loss: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every copy that is not usable, with its recall record and ``reasons``."""
    out = []
    for variant, by_seed in loss.items():
        for name, run in by_seed.items():
            seed = int(name.removeprefix("seed_"))
            recall = found[variant][seed]
            reasons = ([] if recall["beats_chance"] else ["does not beat chance"]) + \
                      ([] if run["levelled"]["levelled"] else ["its loss had not levelled off"])
            if reasons:
                out.append({"variant": variant, "seed": seed, **recall, "reasons": reasons})
    return out


def kept_seeds(seeds: Sequence[int], dropped: Sequence[Mapping[str, Any]]) -> list[int]:
    """The seeds none of whose copies is among the ``dropped`` (:func:`excluded`)."""
    out = {e["seed"] for e in dropped}
    return sorted(s for s in seeds if s not in out)


def retrieval_difference(records: Records, seeds: Sequence[int], pair: Sequence[str], seed: int,
                         resamples: int) -> dict:
    """Copy a's held-out recall minus copy b's, each with the score it was trained with, paired by
    seed and query, with its draws over seeds and queries and its sign-flip test."""
    a, b = pair
    values = np.stack([records[a][s]["retrieval"][SCORE_OF[a]] - records[b][s]["retrieval"][SCORE_OF[b]]
                       for s in seeds])[..., None]
    name = "retrieval_match" if tuple(pair) == training.OBJECTIVES else f"retrieval.{a}-{b}"
    found = hierarchical.hierarchical_interval(values, seed=measures.generator(seed, name),
                                               resamples=resamples)
    return measures.judged(found, values.mean(axis=1)[:, 0])


def cone(records: Records, seeds: Sequence[int]) -> dict[str, Any]:
    """The cone of each fine-tuned copy against its backbone's, on the final mean pools P of the
    held-out texts: |cos| between the cone axes (PC1 of the centred pools), cos between the mean
    directions, and the anisotropy of the copy's pools raw, centred on the backbone's mean pool
    (the backbone's centering vector) and centred on its own ({variant: {seed_<k>: …}})."""
    base = records["before"][seeds[0]]["pools"]
    base_axis, base_mean = geometry.principal_axis(base), base.mean(axis=0)
    out: dict[str, Any] = {}
    for variant in records:
        for s in seeds if variant != "before" else seeds[:1]:
            pools = records[variant][s]["pools"]
            out.setdefault(variant, {})[f"seed_{s}"] = {
                "axis_cosine": abs(geometry.cosine(geometry.principal_axis(pools), base_axis)),
                "mean_direction_cosine": geometry.cosine(pools.mean(axis=0), base_mean),
                "anisotropy": geometry.mean_pairwise_cosine(pools),
                "anisotropy_backbone_centred": geometry.mean_pairwise_cosine(pools - base_mean),
                "anisotropy_own_centred": geometry.mean_pairwise_cosine(pools - pools.mean(axis=0))}
    return out


def settled(records: Records, comparison: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Whether the difference of ``key`` at the final depth had settled: its value on the kept
    copies' snapshots at three quarters of their steps (``three_quarters``, with each seed's),
    against its value at the end and the end's 95 % interval over seeds and units."""
    a, b = comparison["pair"]
    seeds = comparison["seeds"]
    per_seed = [float(np.mean(records[a][s]["snapshot"][1][key][:, -1] - records[b][s]["snapshot"][1][key][:, -1]))
                for s in seeds]
    final = comparison["final"]["difference"][key]
    earlier = float(np.mean(per_seed))
    low, high = final["interval"]
    return {"measure": key, "pair": [a, b], "three_quarters": earlier, "per_seed_three_quarters": per_seed,
            "end": final["value"], "interval": [low, high], "settled": bool(low <= earlier <= high)}


def block(records: Records, arm: Arm, seed: int = 0, resamples: int = hierarchical.RESAMPLES) -> dict[str, Any]:
    """One arm's results (module docstring): the ``settings``, the seeds run and ``kept``, the
    ``excluded`` copies, every copy's ``loss``, ``retrieval`` and ``cpu_seconds`` (each start's
    once), the kept copies' ``gradient_norm`` per block, the curves of the kept seeds' copies and
    of the starts (``runs``; an excluded copy's geometry is never reported), the ``comparison`` of
    the two losses and, with a hard-negative copy, ``hard_negatives`` (each with the ``settled``
    check; None, with ``not_measured``, when fewer than 2 seeds are kept), the ``judged``
    statistics (``not_judged``: why some are not) and, on a fine-tuning arm, the ``improvement`` over
    the backbone and the ``cone``."""
    found, loss = retrieval(records, arm), losses(records)
    dropped = excluded(found, loss)
    kept = kept_seeds(sorted(records["mean_pool"]), dropped)
    distinct = {v: dict(list(by_seed.items())[:1]) if v == "before" and arm.model is not None else
                {s: r for s, r in by_seed.items() if v == "before" or s in kept} for v, by_seed in records.items()}
    out = {"settings": {**vars(arm.settings)}, "seeds": sorted(records["mean_pool"]), "kept": kept,
           "excluded": dropped, "chance": arm.chance, "k": arm.k, "n_train": len(arm.train),
           "n_held_out": len(arm.held_out), "loss": loss, "retrieval": found, "variants": trained(records),
           "cpu_seconds": {v: {f"seed_{s}": r["cpu_seconds"] for s, r in by_seed.items()}
                           for v, by_seed in {**records, "before": distinct["before"]}.items()},
           "runs": {v: {f"seed_{s}": r["geometry"][0] for s, r in by_seed.items()} for v, by_seed in distinct.items()},
           "gradient_norm": gradient_norms(records, kept)}
    if "one_topic" in next(iter(records["before"].values())):
        out["one_topic"] = {v: {f"seed_{s}": r["one_topic"] for s, r in by_seed.items()}
                            for v, by_seed in distinct.items()}
    if len(kept) < 2:
        out.update(comparison=None, hard_negatives=None, not_judged={},
                   not_measured=f"{len(kept)} of {len(out['seeds'])} seeds kept: every copy of at least 2 must "
                                "beat chance and level off")
        out["judged"] = judged(None, arm)
        return out
    measured = {v: {s: r["geometry"] for s, r in records[v].items()} for v in records}
    final = _comparisons(out, records, measured, arm, kept, seed, resamples)
    if arm.model is not None:
        out["improvement"] = improvement(records, kept)
        out["cone"] = cone(records, kept)
    out["not_judged"] = {**unsettled(out), **untrained(out)}
    out["judged"] = judged(final, arm, out["not_judged"])
    return out


def _comparisons(out: dict[str, Any], records: Records, measured: Mapping, arm: Arm, kept: list[int], seed: int,
                 resamples: int) -> dict[str, Any]:
    """Fill ``out`` with the arm's comparisons and their ``settled`` checks; returns what
    :func:`judged` picks from (the popped ``judged_final`` of each, with the retrieval
    differences and the peak margin)."""
    keys = measures.SENTENCE_MEASURES + (measures.PAIR_MEASURES if arm.pair_sets else ())
    out["comparison"] = measures.compare(measured, kept, keys, seed, resamples)
    final = out["comparison"].pop("judged_final")
    final["retrieval_match"] = retrieval_difference(records, kept, training.OBJECTIVES, seed, resamples)
    within = np.stack([measured["maxsim"][s][1][measures.FINGERPRINT] for s in kept])
    final["peak_margin"] = measures.peak_margin(within, seed, f"{arm.name}.peak", resamples)
    out["comparison"]["peak_margin"] = {k: v for k, v in final["peak_margin"].items() if k != "draws"}
    out["comparison"]["settled"] = settled(records, out["comparison"], MAIN["comparison"])
    out["hard_negatives"] = None
    if arm.hard_negatives:
        pair = (hard_negatives.VARIANT, hard_negatives.BASELINE)
        out["hard_negatives"] = measures.compare(measured, kept, HARD_KEYS, seed, resamples, pair=pair)
        final["hard_negatives"] = out["hard_negatives"].pop("judged_final")
        final["hard_negatives"]["retrieval"] = retrieval_difference(records, kept, pair, seed, resamples)
        out["hard_negatives"]["settled"] = settled(records, out["hard_negatives"], MAIN["hard_negatives"])
    return final


# --------------------------------------------------------------------------- what the claims judge

JUDGED = {"collapse_difference": ("difference", measures.FINGERPRINT),
          "separability_difference": ("difference", measures.RATIO),
          **{f"visibility_{name}": ("visibility", name) for name in measures.VISIBILITY},
          "peak_margin": ("peak_margin",), "retrieval_match": ("retrieval_match",)}
FINETUNE_JUDGED = {"maxsim_change": ("change", "maxsim", measures.FINGERPRINT),
                   **{f"{m}_change_{o}": ("change", o, key) for o in training.OBJECTIVES
                      for m, key in (("anisotropy", "anisotropy"), ("easy", "easy_mean_pool"))}}
HARD_JUDGED = {"hard_negative_margin": ("hard_negatives", "difference", "hard_margin"),
               "hard_negative_other_twin": ("hard_negatives", "difference", "other_twin_margin"),
               "hard_negative_recall": ("hard_negatives", "difference", "hard_recall"),
               "hard_negative_retrieval": ("hard_negatives", "retrieval")}
RESTS_ON = {"comparison": ["collapse_difference", "separability_difference", "peak_margin", "maxsim_change",
                           *(f"visibility_{name}" for name in measures.VISIBILITY)],
            "hard_negatives": ["hard_negative_margin", "hard_negative_other_twin", "hard_negative_recall"]}
"""The statistics that rest on each comparison's geometry: not judged when it has not settled (the
checks of the experiment — matched retrieval, anisotropy and easy pairs, the hard-negative copy's
retrieval — are judged either way)."""
NEEDS = {"maxsim_change": ("maxsim",), "peak_margin": ("maxsim",)}
"""The copies a statistic of the losses' comparison needs trained (:func:`untrained`; both losses'
unless named): the MaxSim copy's change from its backbone, and its inside peak, need that copy alone."""


def unsettled(out: Mapping[str, Any]) -> dict[str, str]:
    """{statistic: why it is not judged} for the statistics of every comparison that did not settle."""
    reasons = {}
    for name, statistics in RESTS_ON.items():
        found = out.get(name)
        if found and not found["settled"]["settled"]:
            s = found["settled"]
            why = (f"the {MAIN_NAMES[s['measure']]} difference had not settled: {s['three_quarters']:.3f} "
                   f"at three quarters of the steps, outside the 95 % interval [{s['interval'][0]:.3f}, "
                   f"{s['interval'][1]:.3f}] of its {s['end']:.3f} at the end")
            reasons.update(dict.fromkeys(statistics, why))
    return reasons


def judged(final: Mapping[str, Any] | None, arm: Arm,
           not_judged: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The statistics the chapter's claims judge, each {value, interval, draws, n_seeds, n_units}
    (None throughout when the arm kept fewer than 2 seeds, and for the statistics of
    ``not_judged``), picked from ``final``: the final-depth differences of
    within-sentence cosine and separability, the within-sentence difference's ``visibility`` at the
    final depth, over the back half and at every depth, the MaxSim copy's ``peak_margin``, the
    ``retrieval_match``; on a fine-tuning arm also the final-depth changes (the MaxSim copy's
    within-sentence cosine; each copy's anisotropy and easy-pair cosine) and the hard-negative
    copy's differences from the in-batch copy (hard margin, the other twin's, hard recall@1,
    held-out retrieval)."""
    paths = {**JUDGED, **({**FINETUNE_JUDGED, **HARD_JUDGED} if arm.model is not None else {})}
    found = {}
    for name, path in paths.items():
        entry = final
        for part in path:
            entry = None if entry is None else entry.get(part)
        if entry is None or name in (not_judged or {}):
            found[name] = {"value": None, "interval": None, "draws": None, "n_seeds": None}
            continue
        found[name] = {**entry, "draws": recorded(entry["draws"])}
    return found


DRAW_DIGITS = 6
"""Significant digits a judged statistic's draws keep: 20,000 draws of each land in the results JSON,
and six digits move no percentile by more than a millionth of its value."""


def recorded(draws: np.ndarray) -> np.ndarray:
    """``draws`` rounded to :data:`DRAW_DIGITS` significant digits (what the claims engine and the
    results JSON both read)."""
    return np.array([float(f"{x:.{DRAW_DIGITS}g}") for x in np.asarray(draws, dtype=float)])


def not_measured(blocks: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Why each judged statistic that is None is not measured, keyed by the claims' metric path
    (``objectives.<arm>.judged.<name>.value``, ``objectives.<arm>.gradient_norm.mean.<variant>``):
    an arm that kept fewer than 2 seeds, a comparison that had not settled, a fine-tuning arm that
    trained no hard-negative copy."""
    out = {}
    for arm, block in blocks.items():
        for name, entry in block["judged"].items():
            if entry["value"] is None:
                why = block.get("not_measured") or block["not_judged"].get(name) or (
                    "this run trained no hard-negative copy (hard_negatives = False)" if name in HARD_JUDGED else None)
                if why:
                    out[f"objectives.{arm}.judged.{name}.value"] = why
        for variant, values in block["gradient_norm"]["mean"].items():
            if values is None:
                out[f"objectives.{arm}.gradient_norm.mean.{variant}"] = block.get("not_measured") or (
                    "this arm trained no hard-negative copy (hard_negatives = False, or the from-scratch arm)")
    return out
