"""Chapter 2, *The similarity attractor*: how sentence pairs of every difficulty move through the depths.

Every function turns the activations of sentence pairs (:class:`~embedding_geometry.core.activations.Activations`
of two texts a, b, depths 0..L) into part of the chapter's metrics dict; the notebook adds each
part with ``ch.add_metrics``. With m_l(s) the mean pool of all tokens of s at depth l, c_l(s) its
[CLS] state and h_{l,i}(s) its word-token states (book/methods.md, Conventions and The
similarity attractor), the schema is:

pair_similarity(records): per pair name (hard, medium, easy and the reader's ``pairs``)
    pair_cosine                {pair: [L + 1]}   cos(m_l(a), m_l(b))
    cls_cosine                 {pair: [L + 1]}   cos(c_l(a), c_l(b))
attractor(pair_cosine)
    attractor_peak_depth       {pair: int}       argmax_l of its mean-pool cosine (first on ties)
    attractor_peak_relative_depth {pair: float}  that depth / L
    hard_easy_gap              [L + 1]           pair_cosine.hard − pair_cosine.easy
    hard_easy_gap_relative     [L + 1]           hard_easy_gap / hard_easy_gap[0]
    hard_easy_gap_summary      {first, easy_peak_depth, at_easy_peak, last, narrowing = at_easy_peak / first}
maxsim_profile(pair, words): the hard pair, one direction a → b, word tokens only
    maxsim                     {token of a: [L + 1]}   max_j cos(h_{l,i}(a), h_{l,j}(b)); repeats subscripted (the₂)
    maxsim_mean, maxsim_spread [L + 1]           mean and max − min over the tokens of a
    maxsim_shared              {first_min, last_min, last_max}   over the tokens of a that b also has (None if none)
    maxsim_final_range         {min, max}        over the tokens of a at depth L
    maxsim_discriminative      {word: [L + 1] or None}   the rows of ``words`` (surged, cut)
final_depth(metrics): the hard pair at depth L
    final_depth_scores         {"mean pool", "CLS", "mean MaxSim": float}
    final_depth_differences    {cls_minus_mean_pool, maxsim_minus_mean_pool}
pair_sets(hard, easy): n hard pairs (a document and its negation) and n easy pairs (unrelated sentences)
    pair_sets                  {hard, easy, gap, gap_relative, maxsim_shared, maxsim_discriminative,
                                maxsim_gap: [L + 1]; cls_minus_mean_pool: float; n_pairs: int}
                               means over pairs of cos(m_l(a), m_l(b)), hard − easy, gap_l / gap_0, the
                               MaxSim a → b of a's tokens that b has / lacks, shared − discriminative,
                               and cos(c_L(a), c_L(b)) − cos(m_L(a), m_L(b)) of the hard pairs
control(hard, easy): the random-init control (None without one)
    control                    {pair_sets: {hard: [L + 1], easy: [L + 1]}}
exercises(reversal, paraphrase, negation, hard)
    exercises                  {reversal_cosine [L + 1], reversal_peak_depth int, paraphrase_cosine [L + 1],
                                paraphrase_peak_depth int, paraphrase_above_hard_depths int,
                                negation_maxsim_final {a_to_b_mean, a_to_b_min, b_to_a {token of b: float}}}

The PCA animation of the hard and easy pairs, ``token_animation``, is chapter 1's
:func:`~embedding_geometry.studies.layer_by_layer.token_pca` fitted at depth 0. ``per_unit``
(merged into ``metrics["per_unit"]``) holds the values each bootstrap resamples, whose mean over
axis 0 is the metric (book.intervals): per word token of a (tokens) ``maxsim_mean`` [n_a, L + 1]
and ``final_depth_differences.maxsim_minus_mean_pool`` [n_a]; per pair (pairs) every key of
``pair_sets`` as ``pair_sets.<key>`` [n, L + 1] (``cls_minus_mean_pool`` [n]), and ``gap_first``,
the denominator of ``gap_relative``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import corpora, geometry
from ..core.activations import Activations, unique_labels

PARAPHRASE = "Share prices rallied when the Federal Reserve lowered borrowing costs"
"""Exercise 2: a paraphrase of the *surged* sentence in other words."""
NOT_SURGED = "The stock market did not surge after the central bank cut interest rates"
"""Exercise 3: the *surged* sentence with an explicit negation."""

Metrics = dict[str, Any]


def pair_set_texts() -> dict[str, list[str]]:
    """The two sets of pairs that the chapter's tests run on, as texts a_1, b_1, a_2, b_2, …:
    ``hard``, each document of the book's hard retrieval set with its negation (same domain,
    opposite meaning, nearly the same words); ``easy``, chapter 1's varied sentences paired in
    order (unrelated topics). Both hold the same number of pairs, so that pair i of each makes one
    unit of the hard − easy gap."""
    pool, varied = corpora.retrieval_set("hard")["pool"], corpora.layer_by_layer_sentences()
    hard = [text for i in range(0, len(pool), 3) for text in pool[i:i + 2]]
    return {"hard": hard, "easy": varied[:len(hard)]}


def inputs(pairs: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Every text the chapter measures: the post's hard, medium and easy pairs plus ``pairs``
    (a pair of the same name replaces the post's), the sets of pairs of :func:`pair_set_texts`,
    and the exercises' pairs."""
    r, every = corpora.REFERENCE_SENTENCES, {**corpora.attractor_pairs(), **(pairs or {})}
    return {"pairs": every, "animation": every["hard"] + every["easy"], "maxsim_pair": every["hard"],
            "pair_sets": pair_set_texts(),
            "exercise_pairs": {"reversal": [r["acquirer"], r["acquired"]], "paraphrase": [r["surged"], PARAPHRASE],
                               "negation": [r["surged"], NOT_SURGED]}}


def mean_pool_cosine(pair: Activations) -> np.ndarray:
    """cos(m_l(a), m_l(b)) of a two-text record at every depth → [L + 1]."""
    pools = pair.mean_pool("all")
    return geometry.pair_cosine(pools[:, 0], pools[:, 1])


def pair_similarity(records: Mapping[str, Activations]) -> Metrics:
    """Mean-pool and [CLS] cosine of every pair at every depth."""
    cls = {name: record.cls() for name, record in records.items()}
    return {"pair_cosine": {name: mean_pool_cosine(record) for name, record in records.items()},
            "cls_cosine": {name: geometry.pair_cosine(c[:, 0], c[:, 1]) for name, c in cls.items()}}


def peak_depths(series: Mapping[str, Sequence[float]]) -> dict[str, int]:
    """The depth of each series' highest value (the first, on ties)."""
    return {name: int(np.argmax(values)) for name, values in series.items()}


def attractor(pair_cosine: Mapping[str, np.ndarray]) -> Metrics:
    """Each pair's peak depth, and the hard–easy gap at every depth (also over its depth-0 value)
    and at the easy pair's peak."""
    peaks = peak_depths(pair_cosine)
    n_layers = len(pair_cosine["hard"]) - 1
    gap = np.asarray(pair_cosine["hard"]) - np.asarray(pair_cosine["easy"])
    at = peaks["easy"]
    return {"attractor_peak_depth": peaks,
            "attractor_peak_relative_depth": {name: depth / n_layers for name, depth in peaks.items()},
            "hard_easy_gap": gap, "hard_easy_gap_relative": gap / gap[0],
            "hard_easy_gap_summary": {"first": gap[0], "easy_peak_depth": at, "at_easy_peak": gap[at],
                                      "last": gap[-1], "narrowing": gap[at] / gap[0]}}


def maxsim_profile(pair: Activations, words: Sequence[str] = ("surged", "cut")) -> Metrics:
    """Per word token of text a, its best cosine with any word token of text b at every depth,
    and the summaries of the schema; ``words`` names the rows to single out."""
    (states_a, states_b), (tokens_a, tokens_b) = pair.word_states(), (pair.word_tokens(0), pair.word_tokens(1))
    sims = geometry.maxsim(states_a, states_b)  # [L + 1, n_a]
    rows = dict(zip(unique_labels(tokens_a), sims.T))
    shared = np.isin(tokens_a, tokens_b)
    ends = {"first_min": (0, np.min), "last_min": (-1, np.min), "last_max": (-1, np.max)}
    return {"maxsim": rows, "maxsim_mean": sims.mean(axis=1), "maxsim_spread": sims.max(axis=1) - sims.min(axis=1),
            "maxsim_shared": {key: reduce(sims[depth, shared]) if shared.any() else None
                              for key, (depth, reduce) in ends.items()},
            "maxsim_final_range": {"min": sims[-1].min(), "max": sims[-1].max()},
            "maxsim_discriminative": {word: rows.get(word) for word in words},
            "per_unit": {"maxsim_mean": sims.T}}


def final_depth(metrics: Mapping[str, Any]) -> Metrics:
    """The hard pair at the final depth by mean pool, CLS and mean MaxSim (from ``metrics``'
    ``pair_cosine.hard``, ``cls_cosine.hard``, ``maxsim_mean`` and its per-token rows), and CLS
    and MaxSim minus mean pool; per token of a (``per_unit``) its final MaxSim minus the mean-pool
    cosine, whose mean over tokens is the MaxSim difference."""
    final = {"mean pool": metrics["pair_cosine"]["hard"][-1], "CLS": metrics["cls_cosine"]["hard"][-1],
             "mean MaxSim": metrics["maxsim_mean"][-1]}
    per_token = np.asarray(metrics["per_unit"]["maxsim_mean"])[:, -1] - final["mean pool"]
    return {"final_depth_scores": final,
            "final_depth_differences": {"cls_minus_mean_pool": final["CLS"] - final["mean pool"],
                                        "maxsim_minus_mean_pool": final["mean MaxSim"] - final["mean pool"]},
            "per_unit": {"final_depth_differences.maxsim_minus_mean_pool": per_token}}


def split_maxsim(pair: Activations, i: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Pair i of a record (texts 2i, 2i + 1 = a, b): the mean MaxSim a → b of the word tokens of
    a that b also has (shared) and of those it lacks (discriminative), per depth → two [L + 1]."""
    a, b = geometry.per_text(pair.hidden, pair.offsets[2 * i:2 * i + 3], pair.word_mask)
    sims = geometry.maxsim(a, b)  # [L + 1, n_a]
    shared = np.isin(pair.word_tokens(2 * i), pair.word_tokens(2 * i + 1))
    if shared.all() or not shared.any():
        raise ValueError(f"pair {i} ({pair.texts[2 * i]!r}, {pair.texts[2 * i + 1]!r}) needs both shared and "
                         f"discriminative word tokens")
    return sims[:, shared].mean(axis=1), sims[:, ~shared].mean(axis=1)


def pair_units(pair: Activations, tokens: bool = False) -> dict[str, np.ndarray]:
    """Per pair of a set (texts 2i, 2i + 1), per depth → [n, L + 1]: its mean-pool cosine and,
    with ``tokens``, its CLS cosine and the mean MaxSim of its shared and discriminative tokens."""
    pools = pair.mean_pool("all")
    found = {"cosine": geometry.pair_cosine(pools[:, 0::2], pools[:, 1::2]).T}
    if tokens:
        cls = pair.cls()
        found["cls"] = geometry.pair_cosine(cls[:, 0::2], cls[:, 1::2]).T
        split = [split_maxsim(pair, i) for i in range(pair.n_texts // 2)]
        found["shared"], found["discriminative"] = (np.stack(part) for part in zip(*split))
    return found


def pair_sets(hard: Activations, easy: Activations) -> Metrics:
    """The chapter's tests on sets of pairs (:func:`pair_set_texts`): per depth the mean over
    pairs of the mean-pool cosine (``hard``, ``easy``), the hard − easy gap and that gap over its
    depth-0 value (``gap_relative``, a ratio of means); the mean MaxSim of the hard pairs' shared and
    discriminative tokens and their difference (``maxsim_gap``); and, at the final depth, CLS minus
    mean-pool cosine of the hard pairs. ``per_unit`` holds every one per pair (pair i of each set
    is one unit of the gap; ``gap_first`` repeats a unit's depth-0 gap, the ratio's denominator)."""
    h, e = pair_units(hard, tokens=True), pair_units(easy)
    if len(h["cosine"]) != len(e["cosine"]):
        raise ValueError(f"the hard and easy sets need as many pairs; got {len(h['cosine'])} and {len(e['cosine'])}")
    gap = h["cosine"] - e["cosine"]
    units = {"hard": h["cosine"], "easy": e["cosine"], "gap": gap, "gap_first": np.repeat(gap[:, :1], gap.shape[1], axis=1),
             "maxsim_shared": h["shared"], "maxsim_discriminative": h["discriminative"],
             "maxsim_gap": h["shared"] - h["discriminative"], "cls_minus_mean_pool": h["cls"][:, -1] - h["cosine"][:, -1]}
    means = {key: value.mean(axis=0) for key, value in units.items() if key != "gap_first"}
    means["gap_relative"] = means["gap"] / gap[:, 0].mean()
    return {"pair_sets": {**means, "n_pairs": len(gap)}, "per_unit": {f"pair_sets.{k}": v for k, v in units.items()}}


def control(hard: Activations | None = None, easy: Activations | None = None) -> Metrics:
    """The random-init control's mean-pool cosine per depth, averaged over each set of pairs
    (``control`` is None without a control)."""
    if hard is None or easy is None:
        return {"control": None}
    return {"control": {"pair_sets": {name: pair_units(acts)["cosine"].mean(axis=0)
                                      for name, acts in (("hard", hard), ("easy", easy))}}}


def exercises(reversal: Activations, paraphrase: Activations, negation: Activations,
              hard_cosine: np.ndarray) -> Metrics:
    """The exercises' answers: a role reversal's and a paraphrase's mean-pool cosine per depth
    (the paraphrase against the hard pair's ``hard_cosine``), and MaxSim between the *surged*
    sentence and its negation at the final depth, both ways."""
    rev, para = mean_pool_cosine(reversal), mean_pool_cosine(paraphrase)
    a, b = negation.word_states()
    forward, backward = geometry.maxsim(a, b)[-1], geometry.maxsim(b, a)[-1]
    return {"exercises": {
        "reversal_cosine": rev, "reversal_peak_depth": int(np.argmax(rev)),
        "paraphrase_cosine": para, "paraphrase_peak_depth": int(np.argmax(para)),
        "paraphrase_above_hard_depths": int((para > np.asarray(hard_cosine)).sum()),
        "negation_maxsim_final": {"a_to_b_mean": forward.mean(), "a_to_b_min": forward.min(),
                                  "b_to_a": dict(zip(unique_labels(negation.word_tokens(1)), backward))},
    }}
