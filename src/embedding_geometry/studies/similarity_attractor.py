"""Chapter 2, *The similarity attractor*: how sentence pairs of every difficulty move through the depths.

Every function turns the activations of sentence pairs (:class:`~embedding_geometry.core.activations.Activations`,
depths 0..L) into part of one model's metrics dict; :func:`measure` assembles all of them for one
trained model and its random-init controls. With m_l(s) the mean pool of all tokens of s at
depth l, c_l(s) its [CLS] state and h_{l,i}(s) its word-token states (book/methods.md,
Conventions and The similarity attractor), the schema is:

forward_passes(extract, model, texts): the records one model runs (a control: the two sets only)
measure(passes, controls): every metric below of one trained model; by_model(passes, ran): measure of
    every trained model with its controls → {model id: metrics}

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
pair_sets(hard, easy): n hard pairs (a document and its negation) and n easy pairs (unrelated
    sentences), each record holding its pairs' texts a_1, b_1, a_2, b_2, …
    pair_sets                  {hard, easy, gap, gap_relative, maxsim_shared, maxsim_discriminative,
                                maxsim_gap, hard_centroid_ratio, easy_centroid_ratio: [L + 1];
                                cls_minus_mean_pool, maxsim_minus_mean_pool,
                                hard_middle_rise, easy_centroid_middle_change: float; n_pairs: int}
                               means over pairs of cos(m_l(a), m_l(b)), hard − easy, gap_l / gap_0, the
                               MaxSim a → b of a's tokens that b has / lacks, shared − discriminative;
                               the distance of the two centroids over the tokens' spread (centroid_ratio);
                               at depth L, cos(c_L(a), c_L(b)) − cos(m_L(a), m_L(b)) and mean MaxSim a → b
                               − cos(m_L(a), m_L(b)) of the hard pairs; and cos at the middle depth
                               round(L / 2) − cos at depth 0 of the hard pairs; the easy pairs'
                               centroid_ratio at that middle depth − at depth 0
truncation(queries, hard): the model with its last k blocks dropped, for every k = L − l (its own
    mean pool is then m_l, so "keep l blocks" reads depth l); query q's document is text a of hard
    pair q, its negation text b
    truncation                 {hard_margin, easy_margin, recall: [L + 1] over the blocks kept l;
                                kept: float, cut_depth: int, blocks_dropped: int,
                                hard_margin_lost, easy_margin_lost, recall_lost, specific_loss: float}
                               per query q with relevant document d_q and its negation n_q:
                               hard margin cos(q, d_q) − cos(q, n_q), easy margin cos(q, d_q) −
                               max_{q'≠q} cos(q, d_q'), recall@1 among every d and n; "lost" is the
                               value at depth L minus the value at cut_depth = round(kept · L)
control(runs): the random-init controls, one (hard, easy) pair of records per seed
    control                    {pair_sets: {hard, easy: [L + 1]}, n_seeds} mean over seeds and pairs (None without)
surface_form(pools, texts): a pair's cosine against its shared words, over the pairs of a corpus
    sample (studies.surface_form)
    surface_form               {spearman [L + 1], peak_depth, peak_relative_depth, peak_margin,
                                peak_margin_draws [B], n_sentences, n_pairs, overlap_mean, overlap_zero_share}
offline(): what this chapter cannot measure offline
    hard_negative_training, backbone_attractor   None (the ledger says why)
exercises(reversal, paraphrase, negation, hard)
    exercises                  {reversal_cosine [L + 1], reversal_peak_depth int, paraphrase_cosine [L + 1],
                                paraphrase_peak_depth int, paraphrase_above_hard_depths int,
                                negation_maxsim_final {a_to_b_mean, a_to_b_min, b_to_a {token of b: float}}}

token_animation(four): the PCA animation of the hard and easy pairs, chapter 1's
:func:`~embedding_geometry.studies.pca_views.token_pca` fitted at depth 0. ``per_unit``
(merged into ``metrics["per_unit"]``) holds the values each bootstrap resamples, whose mean over
axis 0 is the metric (book/claims/samples.py): per word token of a (tokens) ``maxsim_mean`` [n_a, L + 1]
and ``final_depth_differences.maxsim_minus_mean_pool`` [n_a]; per pair (pairs) every key of
``pair_sets`` as ``pair_sets.<key>`` ([n, L + 1], or [n] for a number), and ``gap_first``, the
denominator of ``gap_relative``; per query (queries) every key of ``truncation`` as
``truncation.<key>``; per seed and pair ``control.pair_sets.hard`` and ``.easy`` [S, n, L + 1].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..core import corpora, geometry
from ..core.activations import Activations, unique_labels
from ..core.ranking import recall_per_query
from ..core.relative_depth import index_at
from . import pca_views, surface_form
from .layer_by_layer import pair_cosine

PARAPHRASE = "Share prices rallied when the Federal Reserve lowered borrowing costs"
"""Exercise 2: a paraphrase of the *surged* sentence in other words."""
NOT_SURGED = "The stock market did not surge after the central bank cut interest rates"
"""Exercise 3: the *surged* sentence with an explicit negation."""
MIDDLE = 0.5
"""The post's L12 of 24: the relative depth where it says every pair peaks."""
KEPT = 0.8
"""Relative depth a truncated model keeps: dropping the post's "final 4–5 layers" of 24 keeps
19–20 of them, l / L ≈ 0.8 (depth round(0.8 L): 5 of 6, 10 of 12, 19 of 24)."""

Metrics = dict[str, Any]


# --------------------------------------------------------------------------- the texts

def pair_set_texts() -> dict[str, list[str]]:
    """The two sets of pairs as texts a_1, b_1, a_2, b_2, …: ``hard``, each document of the book's
    hard retrieval set with its negation (same domain, opposite meaning, nearly the same words);
    ``easy``, chapter 1's varied sentences paired in order (unrelated topics). Both hold the same
    number of pairs, so that pair i of each makes one unit of the hard − easy gap. Chapter 8 runs
    the same lists, and the easy one is chapter 1's sentences, so their forward passes are shared."""
    pool, varied = corpora.retrieval_set("hard")["pool"], corpora.layer_by_layer_sentences()
    hard = [text for i in range(0, len(pool), 3) for text in pool[i:i + 2]]
    return {"hard": hard, "easy": varied[:len(hard)]}


def inputs(pairs: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Every text the chapter measures: the post's hard, medium and easy pairs plus ``pairs``
    (a pair of the same name replaces the post's); the sets of pairs of :func:`pair_set_texts`;
    the hard set's queries, one per hard pair, whose document is text a of that pair and whose
    negation is text b (the truncation test); the corpus sample of :mod:`.surface_form`; and the
    exercises' pairs."""
    r, every = corpora.REFERENCE_SENTENCES, {**corpora.attractor_pairs(), **(pairs or {})}
    return {"pairs": every, "animation": every["hard"] + every["easy"], "maxsim_pair": every["hard"],
            "pair_sets": pair_set_texts(), "queries": corpora.retrieval_set("hard")["queries"],
            "corpus": surface_form.corpus_texts(),
            "exercise_pairs": {"reversal": [r["acquirer"], r["acquired"]], "paraphrase": [r["surged"], PARAPHRASE],
                               "negation": [r["surged"], NOT_SURGED]}}


Extract = Callable[..., Activations]


def forward_passes(extract: Extract, model: Any, texts: Mapping[str, Any]) -> dict[str, Any]:
    """The records :func:`measure` reads, from ``extract(texts, model, source=…)`` (a chapter's
    ``ch.extract``): for every model the two sets of pairs; for a trained model also the hard
    set's queries, each pair (``pairs``) and the corpus sample (``corpus``)."""
    found = {name: extract(texts["pair_sets"][name], model, source="pair_sets") for name in ("hard", "easy")}
    if getattr(model.info, "source", None) != "control":
        found.update(queries=extract(texts["queries"], model, source="queries"),
                     corpus=extract(texts["corpus"], model, source="corpus"),
                     pairs={name: extract(pair, model, source="pairs") for name, pair in texts["pairs"].items()})
    return found


# --------------------------------------------------------------------------- the post's pairs

def token_animation(four: Activations) -> Metrics:
    """The word tokens of the hard and easy pairs (one record of their four texts) on a 2-D PCA
    fitted at depth 0 and kept for every depth (chapter 1's
    :func:`~embedding_geometry.studies.pca_views.token_pca`)."""
    return {"token_animation": pca_views.token_pca(four, fit_depth=0)}


def pair_similarity(records: Mapping[str, Activations]) -> Metrics:
    """Mean-pool and [CLS] cosine of every pair at every depth."""
    cls = {name: record.cls() for name, record in records.items()}
    return {"pair_cosine": {name: pair_cosine(record) for name, record in records.items()},
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


# --------------------------------------------------------------------------- sets of pairs

def maxsim_rows(acts: Activations, arity: int = 2) -> dict[str, np.ndarray]:
    """Per unit (texts arity·i, arity·i + 1, …): the mean over the first text's word tokens of
    their best cosine with any word token of the second, per depth, over all of them
    (``maxsim``), those the second text also has (``maxsim_shared``) and those it lacks
    (``maxsim_discriminative``) → each [n, L + 1]. A unit without both kinds: ValueError."""
    stacks, found = acts.word_states(), {"maxsim": [], "maxsim_shared": [], "maxsim_discriminative": []}
    for first in range(0, acts.n_texts, arity):
        sims = geometry.maxsim(stacks[first], stacks[first + 1])  # [L + 1, n_a]
        shared = np.isin(acts.word_tokens(first), acts.word_tokens(first + 1))
        if shared.all() or not shared.any():
            raise ValueError(f"the pair ({acts.texts[first]!r}, {acts.texts[first + 1]!r}) needs both shared and "
                             "discriminative word tokens")
        for key, picked in (("maxsim", slice(None)), ("maxsim_shared", shared), ("maxsim_discriminative", ~shared)):
            found[key].append(sims[:, picked].mean(axis=1))
    return {key: np.stack(rows) for key, rows in found.items()}


def pair_units(pair: Activations, tokens: bool = False) -> dict[str, np.ndarray]:
    """Per pair of a set (texts 2i, 2i + 1), per depth → [n, L + 1]: its mean-pool cosine, its
    :func:`centroid_ratio` and,
    with ``tokens``, its CLS cosine and the mean MaxSim a → b of all, of the shared and of the
    discriminative word tokens of a."""
    pools = pair.mean_pool("all")
    found = {"cosine": geometry.pair_cosine(pools[:, 0::2], pools[:, 1::2]).T, "centroid_ratio": centroid_ratio(pair)}
    if tokens:
        cls = pair.cls()
        found["cls"] = geometry.pair_cosine(cls[:, 0::2], cls[:, 1::2]).T
        rows = maxsim_rows(pair)
        found.update(maxsim=rows["maxsim"], shared=rows["maxsim_shared"], discriminative=rows["maxsim_discriminative"])
    return found


def centroid_ratio(pair: Activations) -> np.ndarray:
    """Per pair i of a set (texts 2i, 2i + 1), per depth → [n, L + 1]: how far apart the two
    sentences' centroids are (the means of their word tokens, the animation's diamonds) against
    how far their word tokens lie from their own centroid,
    ‖w_l(a) − w_l(b)‖ / mean_{t ∈ a ∪ b} ‖h_l(t) − w_l(text of t)‖; below 1 the two centroids are
    closer together than a token is to its centroid: the two clouds overlap (a pair whose every
    token sits on its centroid has no spread: its ratio is undefined, NaN)."""
    words = pair.word_mask
    centres = pair.mean_pool("word")  # [L + 1, N, D]
    owner = pair.text_index()[words]
    spread = np.linalg.norm(pair.hidden[:, words].astype(np.float64) - centres[:, owner], axis=-1)  # [L + 1, W]
    per_pair = owner // 2
    mean_spread = np.stack([spread[:, per_pair == i].mean(axis=1) for i in range(pair.n_texts // 2)], axis=1)
    gap = np.linalg.norm(centres[:, 0::2] - centres[:, 1::2], axis=-1)
    return np.divide(gap, mean_spread, out=np.full_like(gap, np.nan), where=mean_spread > 0).T


def middle_index(n_layers: int, r: float = MIDDLE) -> int:
    """The depth nearest r · L (a tie goes deeper), as the claims engine reads ``at_relative:r``."""
    return index_at(r, n_layers + 1)


def pair_sets(hard: Activations, easy: Activations) -> Metrics:
    """The chapter's tests on sets of pairs: per depth the mean over pairs of the mean-pool
    cosine (``hard``, ``easy``), the hard − easy gap and that gap over its depth-0 value
    (``gap_relative``, a ratio of means); the mean MaxSim of the hard pairs' shared and
    discriminative tokens and their difference (``maxsim_gap``); at the final depth, CLS minus
    mean-pool cosine and mean MaxSim minus mean-pool cosine of the hard pairs; and how much more
    alike the hard pairs are at the middle depth than at depth 0. ``per_unit`` holds every one
    per pair (pair i of each set is one unit of the gap; ``gap_first`` repeats a unit's depth-0
    gap, the ratio's denominator)."""
    h, e = pair_units(hard, tokens=True), pair_units(easy)
    mid = middle_index(hard.n_layers)
    units = {**gap_units(h["cosine"], e["cosine"], h["shared"], h["discriminative"]),
             "cls_minus_mean_pool": h["cls"][:, -1] - h["cosine"][:, -1],
             "maxsim_minus_mean_pool": h["maxsim"][:, -1] - h["cosine"][:, -1],
             "hard_middle_rise": h["cosine"][:, mid] - h["cosine"][:, 0],
             "hard_centroid_ratio": h["centroid_ratio"], "easy_centroid_ratio": e["centroid_ratio"],
             "easy_centroid_middle_change": e["centroid_ratio"][:, mid] - e["centroid_ratio"][:, 0]}
    return {"pair_sets": gap_means(units), "per_unit": {f"pair_sets.{k}": v for k, v in units.items()}}


def gap_units(hard: np.ndarray, easy: np.ndarray, shared: np.ndarray, discriminative: np.ndarray) -> Metrics:
    """The hard − easy units [n, L + 1] of :func:`pair_sets` (and chapter 8's): the mean-pool cosines, their
    ``gap`` and its depth-0 value ``gap_first``, the hard pairs' MaxSim of shared and discriminative tokens."""
    if len(hard) != len(easy):
        raise ValueError(f"the hard and easy sets need as many pairs; got {len(hard)} and {len(easy)}")
    gap = hard - easy
    return {"hard": hard, "easy": easy, "gap": gap, "gap_first": np.repeat(gap[:, :1], gap.shape[1], axis=1),
            "maxsim_shared": shared, "maxsim_discriminative": discriminative, "maxsim_gap": shared - discriminative}


def gap_means(units: Mapping[str, np.ndarray]) -> Metrics:
    """Each unit's mean over pairs (``gap_first`` aside), ``gap_relative`` (a ratio of means) and ``n_pairs``."""
    means = {key: value.mean(axis=0) for key, value in units.items() if key != "gap_first"}
    return {**means, "gap_relative": means["gap"] / units["gap"][:, 0].mean(), "n_pairs": len(units["gap"])}


def control(runs: Iterable[tuple[Activations, Activations]] = ()) -> Metrics:
    """The random-init controls (one (hard, easy) pair of records per seed): per seed and pair the
    mean-pool cosine per depth of both sets (``per_unit``, [S, n, L + 1]), and its mean over
    seeds and pairs (``control`` is None without a control)."""
    runs = list(runs)
    if not runs:
        return {"control": None}
    seeds = {"hard": np.stack([pair_units(hard)["cosine"] for hard, _ in runs]),
             "easy": np.stack([pair_units(easy)["cosine"] for _, easy in runs])}
    return {"control": {"pair_sets": {name: values.mean(axis=(0, 1)) for name, values in seeds.items()},
                        "n_seeds": len(runs)},
            "per_unit": {f"control.pair_sets.{name}": values for name, values in seeds.items()}}


# --------------------------------------------------------------------------- the truncated model

def truncation(queries: Activations, hard: Activations, kept: float = KEPT) -> Metrics:
    """Query q of the hard set against the texts of the hard pairs (``hard``: its document d_q is
    text 2q, its negation n_q text 2q + 1), read at every depth l: what the model gives with its
    last L − l blocks dropped (its mean pool is then m_l). Per query and depth, the hard margin
    cos(q, d_q) − cos(q, n_q), the easy margin cos(q, d_q) − max_{q'≠q} cos(q, d_q') and
    recall@1 among every document and negation; and what dropping the blocks above ``kept`` · L
    loses of each (module docstring)."""
    q, p = queries.mean_pool("all"), hard.mean_pool("all")  # [L + 1, Q, D], [L + 1, 2Q, D]
    if p.shape[1] != 2 * q.shape[1]:
        raise ValueError(f"the truncation test needs one hard pair per query; got {q.shape[1]} queries and "
                         f"{p.shape[1]} texts")
    rows = np.arange(q.shape[1])
    scores = np.stack([geometry.cosine_matrix(a, b) for a, b in zip(q, p)])  # [L + 1, Q, 2Q]
    own, others = scores[:, rows, 2 * rows], scores[:, :, 0::2].copy()
    others[:, rows, rows] = -np.inf  # a query's own document is not its easy negative
    per_query = {"hard_margin": (own - scores[:, rows, 2 * rows + 1]).T, "easy_margin": (own - others.max(axis=2)).T,
                 "recall": np.stack([recall_per_query(s, 2 * rows, 1) for s in scores], axis=1)}
    L = queries.n_layers
    cut = middle_index(L, kept)
    lost = {f"{name}_lost": values[:, -1] - values[:, cut] for name, values in per_query.items()}
    lost["specific_loss"] = lost["hard_margin_lost"] - lost["easy_margin_lost"]
    units = {**per_query, **lost}
    return {"truncation": {**{key: value.mean(axis=0) for key, value in units.items()},
                           "kept": kept, "cut_depth": cut, "blocks_dropped": L - cut},
            "per_unit": {f"truncation.{key}": value for key, value in units.items()}}


def offline() -> Metrics:
    """The post's takeaways this chapter cannot measure offline, as None (the ledger says why):
    training with and without hard negatives, and the backbone before its sentence training."""
    return {"hard_negative_training": None, "backbone_attractor": None}


# --------------------------------------------------------------------------- one model, every model

def measure(passes: Mapping[str, Any], controls: Sequence[Mapping[str, Any]] = (),
            words: Sequence[str] = ("surged", "cut"), seed: int = 0) -> Metrics:
    """Every metric of the schema for one trained model, from its :func:`forward_passes` and
    those of its random-init controls (``per_unit`` included); ``seed`` seeds the resamples of
    :func:`.surface_form.surface_form`."""
    found: Metrics = {"per_unit": {}}
    corpus = passes["corpus"]
    parts = [pair_similarity(passes["pairs"]), maxsim_profile(passes["pairs"]["hard"], words),
             pair_sets(passes["hard"], passes["easy"]), truncation(passes["queries"], passes["hard"]),
             control([(run["hard"], run["easy"]) for run in controls]), offline(),
             surface_form.surface_form(corpus.mean_pool("all"), corpus.texts, seed=seed)]
    for part in parts:
        found["per_unit"].update(part.pop("per_unit", {}))
        found.update(part)
    found.update(attractor(found["pair_cosine"]))
    final = final_depth(found)
    found["per_unit"].update(final.pop("per_unit"))
    return {**found, **final}


def by_model(passes: Mapping[str, Mapping[str, Any]], ran: Mapping[str, Mapping[str, Any]],
             seed: int = 0) -> dict[str, Metrics]:
    """:func:`measure` of every trained model of ``passes`` (model id → its forward passes), with
    its controls: the models ``ran`` (id → model info) marks as controls whose id begins with the
    trained model's id. Trained models keep their order (the main model first)."""
    controls = [name for name in passes if ran[name].get("source") == "control"]
    return {name: measure(run, [passes[c] for c in controls if c.startswith(f"{name} ")], seed=seed)
            for name, run in passes.items() if name not in controls}


# --------------------------------------------------------------------------- exercises

def exercises(reversal: Activations, paraphrase: Activations, negation: Activations,
              hard_cosine: np.ndarray) -> Metrics:
    """The exercises' answers: a role reversal's and a paraphrase's mean-pool cosine per depth
    (the paraphrase against the hard pair's ``hard_cosine``), and MaxSim between the *surged*
    sentence and its negation at the final depth, both ways."""
    rev, para = pair_cosine(reversal), pair_cosine(paraphrase)
    a, b = negation.word_states()
    forward, backward = geometry.maxsim(a, b)[-1], geometry.maxsim(b, a)[-1]
    return {"exercises": {
        "reversal_cosine": rev, "reversal_peak_depth": int(np.argmax(rev)),
        "paraphrase_cosine": para, "paraphrase_peak_depth": int(np.argmax(para)),
        "paraphrase_above_hard_depths": int((para > np.asarray(hard_cosine)).sum()),
        "negation_maxsim_final": {"a_to_b_mean": forward.mean(), "a_to_b_min": forward.min(),
                                  "b_to_a": dict(zip(unique_labels(negation.word_tokens(1)), backward))},
    }}
