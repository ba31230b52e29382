"""Chapter 7's run-dependent sentences, written from its metrics and verdicts (Markdown), and the
tables its exercises' answers show.

Nothing here judges: the verdicts come from the claims engine (:mod:`embedding_geometry.book.claims`) and are put in
words by :mod:`embedding_geometry.book.claims.words`, the numbers come from the chapter's metrics
(``metrics["objectives"]``, see :mod:`.results`). A page shows each text or table
as a cell output, so that it reads the same in plain Jupyter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ...book import claims
from ...book.claims import words
from . import measures, results, training
from .charts import ARM_LABELS, OBJECTIVE_LABELS, dense_colbert_endpoints, reach_text

ANSWER_CLAIMS = {
    "scratch": ["loss-decides-collapse-scratch", "loss-leaves-fingerprint-scratch", "fingerprint-every-depth-scratch",
                "loss-decides-separability-scratch"],
    "finetune": ["maxsim-keeps-spread", "loss-decides-collapse", "loss-leaves-fingerprint",
                 "finetune-retrieval-matched", "finetune-keeps-anisotropy-mean-pool",
                 "finetune-keeps-anisotropy-maxsim"],
}
"""The claims each arm's answer to the two losses is stated with, in the order the page reads them."""
MATCH_CHECK = "finetune-retrieval-matched"
"""The check whose failure flags the fine-tuning arm's geometry comparison."""
FLAGGED = {"maxsim-keeps-spread", "loss-decides-collapse", "loss-leaves-fingerprint", "fingerprint-reaches-back",
           "fingerprint-every-depth", "loss-decides-separability", "maxsim-peak-inside"}
"""The fine-tuning arm's geometry claims: flagged when the two copies' retrieval is not matched."""
BUDGET_SECONDS = 300
"""The chapter's budget in the default build (issue 27): five minutes on the book's 2-core machine."""


def _span(values: Sequence[float], digits: int = 2) -> str:
    """"0.12" for one value (or equal values), "0.12–0.31" for their range."""
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if round(low, digits) == round(high, digits) else f"{low:.{digits}f}–{high:.{digits}f}"


def starts(blocks: Mapping[str, Mapping[str, Any]]) -> str:
    """Per arm, the starts' held-out recall@k with each score against chance, and how many of them
    beat it (Markdown): what every copy starts from."""
    lines = []
    for arm, block in blocks.items():
        found = [r for by_seed in block["retrieval"]["before"].values() for r in by_seed.values()]
        beating = sum(r["beats_chance"] for r in found)
        lines.append(f"- **{ARM_LABELS[arm].capitalize()}**, before training: held-out recall@{block['k']} "
                     f"{_span([r['recall'] for r in found], 3)} against chance {block['chance']:.3g}; "
                     f"{beating} of {len(found)} start–score pairs beat chance (one-sided exact binomial test at "
                     "0.05).")
    return "\n".join(lines) + "\n"


def convergence(blocks: Mapping[str, Mapping[str, Any]]) -> str:
    """Per arm, how every copy trained: the loss over the first and the last tenth of its steps,
    how many copies' loss levelled off, their held-out recall@k against chance, and which copies
    were excluded (Markdown)."""
    lines = []
    for arm, block in blocks.items():
        k, chance = block["k"], block["chance"]
        parts = []
        for variant in block["variants"]:
            runs, found = block["loss"][variant].values(), block["retrieval"][variant].values()
            level = sum(r["levelled"]["levelled"] for r in runs)
            parts.append(f"the {OBJECTIVE_LABELS[variant]} goes from {_span([r['first'] for r in runs])} to "
                         f"{_span([r['last'] for r in runs])} and levels off on {level} of {len(runs)} copies, whose "
                         f"held-out recall@{k} is {_span([r['recall'] for r in found])}")
        lines.append(f"- **{ARM_LABELS[arm].capitalize()}** ({len(block['seeds'])} seeds, "
                     f"{block['settings']['steps']} steps each): over the first and the last tenth of the steps "
                     + "; ".join(parts) + f" (chance: {chance:.3g}); {_kept(block)}.")
        if block.get("improvement"):
            lines.append(_improvement(block))
    return "\n".join(lines) + "\n"


def _improvement(block: Mapping[str, Any]) -> str:
    """Whether each fine-tuned loss's kept copies retrieve better than their backbone
    (:func:`.results.improvement`), and what follows for the comparison of the losses."""
    found = block["improvement"]
    parts = [f"the {OBJECTIVE_LABELS[v]} {results.change_text(r)}" for v, r in found.items()]
    failing = [OBJECTIVE_LABELS[v] for v in training.OBJECTIVES if not found[v]["improves"]]
    outcome = ("both losses' copies improve on it, so the losses' geometry is compared" if not failing else
               f"the copies of the {' and the '.join(failing)} do not improve on it: that training taught nothing "
               "this test detects, so the two losses' geometry is not compared (its claims are not tested); the "
               f"checks of the experiment{' and the hard-negative comparison' if block.get('hard_negatives') else ''} "
               "are judged")
    return (f"- **{ARM_LABELS['finetune'].capitalize()}, against the backbone** (held-out recall@{block['k']}, "
            f"each query's hit averaged over the kept copies): " + "; ".join(parts) + f". At 0.05, {outcome}.")


def _kept(block: Mapping[str, Any]) -> str:
    """Which copies are usable, which were excluded with their seed and why, and how many seeds are kept."""
    excluded, n_seeds, n_copies = block["excluded"], len(block["seeds"]), len(block["variants"]) * len(block["seeds"])
    if not excluded:
        return (f"all {n_copies} copies beat chance (one-sided exact binomial test at 0.05) and levelled off, so all "
                f"{n_seeds} seeds are kept")
    which = ", ".join(f"{OBJECTIVE_LABELS[e['variant']]}, seed {e['seed']}: {' and '.join(e['reasons'])}"
                      for e in excluded)
    one = len(excluded) == 1
    return (f"{len(excluded)} cop{'y is' if one else 'ies are'} excluded with {'its' if one else 'their'} seed "
            f"({which}); {len(block['kept'])} of {n_seeds} seeds are kept")


def settling(blocks: Mapping[str, Mapping[str, Any]]) -> str:
    """Per comparison made, whether its main difference had settled (Markdown), and what follows."""
    lines = []
    for arm, block in blocks.items():
        for name in ("comparison", "hard_negatives"):
            if not block.get(name):
                continue
            s = block[name]["settled"]
            pair = " and ".join(OBJECTIVE_LABELS[v] for v in s["pair"])
            untaught = name == "comparison" and any(
                why.startswith("fine-tuning did not improve") for why in block.get("not_judged", {}).values())
            verdict = ("it had not settled, so the claims that rest on it are not judged (the checks still are)"
                       if not s["settled"] else "it had settled, but fine-tuning did not improve the backbone "
                       "(above), so its claims are not judged" if untaught else "it had settled, so its claims are "
                       "judged")
            measure = results.MAIN_NAMES[s["measure"]]
            lines.append(f"- {ARM_LABELS[arm].capitalize()}, {pair}: the final-depth difference in {measure} was "
                         f"{s['three_quarters']:.4f} at three quarters of the steps and {s['end']:.4f} at the end "
                         f"(95 % interval [{s['interval'][0]:.4f}, {s['interval'][1]:.4f}]): {verdict}.")
    return "\n".join(lines) + "\n" if lines else "No comparison was made: fewer than 2 seeds were kept.\n"


def flag(verdicts: Iterable[claims.Verdict]) -> str:
    """The sentence that flags the fine-tuning arm's geometry comparison, generated from the
    verdict of the matched-retrieval check (Markdown; empty when the check passes, or when it
    was not measured and the geometry verdicts with it)."""
    found = [v.record() for v in verdicts if v.claim.id == MATCH_CHECK]
    if not found:
        return ""
    record = found[0]
    word = words.verdict_of(record)
    if word in (words.HOLDS, words.NOT_TESTED):
        return ""
    return (f"**Flagged:** the check that the two fine-tuned copies retrieve equally well did not pass (its verdict: "
            f"{word}; {words.result_text(record)}), so their difference in geometry may be a difference in how well "
            "each learned, not one of the loss alone; the fine-tuning arm's geometry verdicts above are read with that "
            "caution.")


def report(verdicts: Iterable[claims.Verdict], ids: Sequence[str]) -> str:
    """The claims ``ids`` in the engine's words (:func:`.claims.words.report`); when any of them is
    a judged geometry claim of the fine-tuning arm and the matched-retrieval check did not pass, the
    :func:`flag` follows them (Markdown)."""
    verdicts = list(verdicts)
    chosen = [v for i in ids for v in verdicts if v.claim.id == i]
    text = words.report(chosen)
    judged = {v.claim.id for v in chosen if words.verdict_of(v.record()) != words.NOT_TESTED}
    warning = flag(verdicts) if FLAGGED & judged else ""  # nothing to read with caution when none was judged
    return text + (f"\n{warning}\n" if warning else "")


def answers(verdicts: Iterable[claims.Verdict], blocks: Mapping[str, Mapping[str, Any]]) -> str:
    """Each comparison's answer: its claims of :data:`ANSWER_CLAIMS` in the engine's words, with the
    flag of :func:`report`, in the order the page reads them (Markdown); an arm that kept fewer
    than 2 seeds says so instead."""
    verdicts = list(verdicts)
    lines = []
    for arm, ids in ANSWER_CLAIMS.items():
        if arm not in blocks:
            continue
        lines.append(f"**{ARM_LABELS[arm].capitalize()}.**\n")
        if blocks[arm].get("not_measured"):
            lines.append(f"- Not measured: {blocks[arm]['not_measured']}.\n")
            continue
        lines.append(report(verdicts, ids))
    return "\n".join(lines) + "\n"


def budget(document: Mapping[str, Any], seconds: float = BUDGET_SECONDS) -> str:
    """The chapter's run time as this build recorded it (the results JSON's ``environment.seconds``:
    from opening the chapter to writing its results) against its budget, and the CPU seconds its
    copies took in their worker processes (Markdown)."""
    took = float(document["environment"]["seconds"])
    within = "within" if took <= seconds else "over"
    blocks = document["metrics"]["objectives"].values()
    cpu = sum(s for block in blocks for by_seed in block["cpu_seconds"].values() for s in by_seed.values())
    copies = sum(len(by_seed) for block in blocks for by_seed in block["cpu_seconds"].values())
    return (f"This build ran the chapter in {took:.0f} s on {document['environment']['device']} (from opening the "
            f"chapter to writing its results): {100 * took / seconds:.0f} % of the {seconds:.0f} s budget of the "
            f"default build's chapter, {within} it. Training and measuring its {copies} copies and starts took "
            f"{cpu:.0f} CPU-seconds in all, in {document['params']['workers']} worker processes of one thread each.\n")


def post_curves() -> str:
    """The post's two curves in one sentence (Markdown): where each model's within-sentence
    cosine ends, and jina-colbert-v2's peak."""
    p = dense_colbert_endpoints()
    return (f"The post's within-sentence token cosine ends at {p['mxbai_end']:.3f} in mxbai-embed-large-v1 "
            f"(mean-pool loss) and at {p['jina_end']:.3f} in jina-colbert-v2 (MaxSim loss), after a peak of "
            f"{p['jina_peak']:.3f} at L{p['jina_peak_layer']} of 24.\n")


def reaches(blocks: Mapping[str, Mapping[str, Any]], measure: str = "intra_sentence_cosine") -> str:
    """Per arm, the relative depth from which the difference in ``measure`` stays visible, with
    its 95 % interval over seeds and sentences (Markdown)."""
    lines = []
    for arm, block in blocks.items():
        if block.get("comparison"):
            reach = block["comparison"]["reach"][measure]
            lines.append(f"- {ARM_LABELS[arm].capitalize()}: visible from relative depth {reach_text(reach)} "
                         f"(share of the {len(reach['present'])} depths {reach['share']:.2f}, 95 % interval "
                         f"[{reach['share_interval'][0]:.2f}, {reach['share_interval'][1]:.2f}], "
                         f"{reach['n_seeds']} seeds × {reach['n_units']} sentences).")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the exercises' answers

def _at_end(curves: Mapping[str, Sequence[float]], key: str) -> float:
    return float(np.asarray(curves[key])[-1])


def exercises(records: Mapping[str, Mapping[str, Mapping[int, Any]]], blocks: Mapping[str, Mapping[str, Any]],
              scratch_seeds: int, hard_twin: str, seed: int) -> dict[str, Any]:
    """The numbers of the chapter's three exercises, as tables ({column: {row: value}}, missing
    values "—"): ``fewer_seeds`` (half the from-scratch seeds), ``twin`` (the other hard twin) and
    ``one_topic`` (the one-topic sentences), each computed from this build's copies."""
    half = max(2, scratch_seeds // 2)
    other = measures.TWINS[1 - measures.TWINS.index(hard_twin)]
    return {"half": half, "other_twin": other,
            "fewer_seeds": fewer_seeds(records["scratch"], blocks["scratch"]["kept"], half, seed),
            "twin": twin_answer(blocks["finetune"], other), "one_topic": one_topic_answer(blocks["finetune"])}


def _table(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows {row: {column: value}} as columns {column: {row: value}}, "—" where a row has none."""
    columns = list(dict.fromkeys(c for row in rows.values() for c in row))
    return {c: {name: row.get(c, "—") for name, row in rows.items()} for c in columns}


def fewer_seeds(records: Mapping[str, Mapping[int, Any]], kept: Sequence[int], n: int, seed: int) -> dict:
    """The scratch arm's final-depth collapse difference with its 95 % interval on the first ``n``
    seeds (what a run with ``n`` seeds measures: a copy depends only on its seed), beside all kept
    seeds' (a table; a row with fewer than 2 kept seeds has no interval)."""
    measured = {v: {s: r["geometry"] for s, r in records[v].items()} for v in records}
    first = [s for s in sorted(records["mean_pool"])[:n] if s in kept]
    rows = {}
    for name, seeds in ((f"the first {n} seeds", first), ("every seed of this build", list(kept))):
        rows[name] = {"seeds kept": len(seeds)}
        if len(seeds) >= 2:
            final = measures.compare(measured, seeds, [measures.FINGERPRINT], seed)
            found = final["final"]["difference"][measures.FINGERPRINT]
            low, high = found["interval"]
            rows[name].update({"difference": found["value"], "95 % low": low, "95 % high": high, "width": high - low})
    return _table(rows)


def twin_answer(block: Mapping[str, Any], other: str) -> dict:
    """The fine-tuning arm's final-depth scores of the other twin pairs, mean over kept seeds,
    before and after each loss, under both scores (a table)."""
    if not block["comparison"]:
        return {"not measured": {"why": block["not_measured"]}}
    mean = block["comparison"]["mean"]
    return {OBJECTIVE_LABELS[v]: {f"{other.replace('_', ' ')} pairs, {name}": _at_end(mean[v], f"other_twin_{s}")
                                  for s, name in (("mean_pool", "mean-pool cosine"), ("maxsim", "MaxSim"))}
            for v in measures.VARIANTS}


def one_topic_answer(block: Mapping[str, Any]) -> dict:
    """The fine-tuning arm's final-depth within-sentence cosine and collapse gap on the one-topic
    sentences, mean over kept seeds, before and after each loss, beside the gap on this build's
    sentence set (a table)."""
    if not block["comparison"]:
        return {"not measured": {"why": block["not_measured"]}}
    kept, topic, mean = block["kept"], block["one_topic"], block["comparison"]["mean"]
    columns = {}
    for variant in measures.VARIANTS:
        runs = ([topic[variant][f"seed_{s}"] for s in kept if f"seed_{s}" in topic[variant]]
                or list(topic[variant].values()))
        columns[OBJECTIVE_LABELS[variant]] = {
            "within-sentence cosine, one topic": float(np.mean([_at_end(r, "intra_sentence_cosine") for r in runs])),
            "collapse gap, one topic": float(np.mean([_at_end(r, "collapse_gap") for r in runs])),
            "collapse gap, this build's sentences": _at_end(mean[variant], "collapse_gap")}
    return columns
