"""Chapter 1, *Layer by layer*: how the tokens of a sentence collapse into a sentence vector.

Every function turns activations (:class:`~embedding_geometry.core.activations.Activations`,
all tokens of N texts at depths 0..L, width D) into part of the chapter's metrics dict; the
notebook adds each part with ``ch.add_metrics``. With m_l(s) the mean pool of all tokens of text
s at depth l, w_l(s) the mean of its word tokens, c_l(s) its [CLS] state and h_i its word-token
states (METHODS.md §0, §1), the schema is:

collapse(acts), on the chapter's sentences (also ``exercises.one_topic``, on five sentences on one topic)
    intra_sentence_cosine      [L + 1]   mean_s mean_{i≠j ∈ s} cos(h_i, h_j)
    cross_sentence_baseline    [L + 1]   mean_{s<t} mean_{i∈s, j∈t} cos(h_i, h_j)
    collapse_gap               [L + 1]   intra − baseline
pca_steps(acts): every word token of the set in a 2-D PCA
    pca_step_fixed, pca_step_refit   [L]   mean step l−1 → l, one PCA at depth 0 / a PCA per depth
    pca_step_ratio             float     mean refit step / mean fixed step
token_pca(acts, fit_depth): ``final_pca_projection`` (hard and easy pair, fitted at depth L)
    coords [L + 1, n_word, 2] (rounded to 3 decimals), explained_variance_ratio [2], tokens [n_word]
first_last_cosine(acts)
    meanpool_first_last_cosine [N]       cos(m_0(s), m_L(s)) per sentence
peak_writes(acts)
    peak_write_depth           [D]       argmax_{l=1..L} mean_s |m_l(s)_d − m_{l−1}(s)_d|
    peak_write_hist            [L]       dimensions per peak depth l = 1..L
    peak_write_last_two        float     share of the D dimensions peaking at L − 1 or L
dimension_correlation(acts)
    dim_corr_first_last        {r [D], mean, threshold, n_above, n_below, fraction_above, fraction_below}
                                         Pearson r over sentences of m_0(s)_d and m_L(s)_d
discriminative_dims(pair): the hard pair (a, b)
    top_discriminative_dims    {dims [5], difference [5, L + 1], half_value_depth [5], half_value_relative_depth [5]}
                                         the 5 dims of largest |m_L(a)_d − m_L(b)_d|, and when each reaches half of it
matryoshka(pair)
    slice_bounds               {name: [p, q) or None}   the Matryoshka slices clipped to D
    slice_cosine               {name: [L + 1] or None}  cos(m_l(a)[p:q], m_l(b)[p:q])
separability(acts)
    separability_ratio         [L + 1]   between-sentence spread / within-sentence scatter (Euclidean)
recall(sets, k): per retrieval set (easy, hard), the pool ranked by mean-pool cosine
    recall_at_k                {set: [L + 1]}   Recall@k per depth, k = recall_k[set]
    recall_k                   {set: int}
pair_cosine(pair, tokens): cos(m_l(a), m_l(b)) → [L + 1]; the notebook stores
    pair_cosine                {negation: [L + 1], role_reversal: [L + 1]}
    discriminative_token_cosine_alone   float   cos(w_0(surged), w_0(plunged)), each word encoded alone
cls_alignment(acts)
    cls_mean_alignment         [L + 1]   mean_s cos(c_l(s), w_l(s))
    pc1_mean_alignment         [L + 1]   mean_s |cos(PC1 of s's centred word tokens, w_l(s))|
by_model(runs): per model name (None for a published model not run)
    intra_sentence_cosine_by_model, separability_ratio_by_model   {model: [L_model + 1] or None}
exercises(topic, sets)
    exercises                  {one_topic: collapse(topic) without per_unit, easy_recall_at_1 [L + 1],
                                easy_recall_at_1_peak_depth int (first depth of its maximum),
                                hard_recall_at_1 [L + 1], hard_recall_at_3 [L + 1]}

``per_unit`` (merged into ``metrics["per_unit"]``) holds, for a metric that is a mean over sampled
units, the unit values whose mean over axis 0 is the metric: ``intra_sentence_cosine`` and
``pc1_mean_alignment`` and ``cls_mean_alignment`` [N, L + 1] (sentences),
``cross_sentence_baseline`` [N(N − 1)/2, L + 1] (sentence pairs s < t), and
``recall_at_k.<set>`` [Q, L + 1] (queries: the share of a query's relevant documents in the top k).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from . import retrieval
from ..core import corpora, geometry
from ..core.activations import Activations

ONE_TOPIC = (
    "The stock market surged after the central bank cut interest rates",
    "Bond yields fell as investors expected lower interest rates",
    "The central bank raised rates to fight rising inflation",
    "Bank shares rallied after strong quarterly earnings",
    "Currency traders sold the dollar after the rate decision",
)
"""Exercise 1: five sentences on one topic (central banks and markets)."""

Metrics = dict[str, Any]
RetrievalSet = tuple[Activations, Activations, Sequence[int]]


def inputs(sentences: list[str] | None = None, easy_set: Mapping | None = None,
           hard_set: Mapping | None = None) -> dict[str, Any]:
    """Every text the chapter measures: the sentence set and retrieval sets (the book's data files
    when None), the reference pairs of METHODS.md §0, and the exercise's one-topic sentences."""
    r = corpora.REFERENCE_SENTENCES
    return {
        "sentences": sentences or corpora.layer_by_layer_sentences(),
        "hard_pair": [r["surged"], r["plunged"]], "negation_pair": [r["surged"], r["plunged"]],
        "role_reversal_pair": [r["acquirer"], r["acquired"]], "easy_pair": [r["fox"], r["rag"]],
        "token_pair_alone": ["surged", "plunged"],
        "easy_set": easy_set or corpora.retrieval_set("easy"), "hard_set": hard_set or corpora.retrieval_set("hard"),
        "exercise_one_topic": list(ONE_TOPIC),
    }


# --------------------------------------------------------------------------- tokens of a sentence

def _per_text(measure: Callable[[list[np.ndarray]], np.ndarray], stacks: list[np.ndarray]) -> np.ndarray:
    """The per-text values of a macro mean over texts: ``measure`` of each text alone → [N, L + 1]."""
    return np.stack([measure([stack]) for stack in stacks])


def collapse(acts: Activations) -> Metrics:
    """Within-sentence token similarity, the cross-sentence baseline and their gap, per depth."""
    stacks = acts.word_states()
    within = geometry.intra_sentence_cosine(stacks)
    baseline = geometry.cross_sentence_baseline(stacks)
    pairs = np.stack([geometry.cross_sentence_baseline([stacks[s], stacks[t]])
                      for s, t in combinations(range(len(stacks)), 2)])
    return {"intra_sentence_cosine": within, "cross_sentence_baseline": baseline, "collapse_gap": within - baseline,
            "per_unit": {"intra_sentence_cosine": _per_text(geometry.intra_sentence_cosine, stacks),
                         "cross_sentence_baseline": pairs}}


def pca_steps(acts: Activations) -> Metrics:
    """The mean 2-D step of every word token between depths, in fixed and in refitted PCA axes."""
    words = acts.hidden[:, acts.word_mask]
    fixed, refit = geometry.pca_steps(words, "fixed"), geometry.pca_steps(words, "refit")
    return {"pca_step_fixed": fixed, "pca_step_refit": refit, "pca_step_ratio": refit.mean() / fixed.mean()}


def token_pca(acts: Activations, fit_depth: int) -> Metrics:
    """Every word token at every depth in a 2-D PCA fitted on the word tokens at ``fit_depth``."""
    coords, explained = geometry.pca_projection(acts.hidden[:, acts.word_mask], fit_depth)
    return {"coords": coords.round(3), "explained_variance_ratio": explained, "tokens": acts.word_tokens()}


# --------------------------------------------------------------------------- the mean pool's dimensions

def first_last_cosine(acts: Activations) -> Metrics:
    """cos(m_0(s), m_L(s)) for every sentence s."""
    pools = acts.mean_pool("all")
    return {"meanpool_first_last_cosine": geometry.pair_cosine(pools[0], pools[-1])}


def peak_writes(acts: Activations) -> Metrics:
    """Each dimension's peak-write depth, their histogram over depths 1..L, and the share of the
    dimensions whose peak is one of the last two transitions."""
    peaks = geometry.peak_write(acts.mean_pool("all"))
    hist = geometry.depth_histogram(peaks, acts.n_layers)
    return {"peak_write_depth": peaks, "peak_write_hist": hist, "peak_write_last_two": hist[-2:].sum() / len(peaks)}


def dimension_correlation(acts: Activations, threshold: float = 0.7) -> Metrics:
    """Per dimension, Pearson r over the sentences of m_0(s)_d and m_L(s)_d, and its summary."""
    pools = acts.mean_pool("all")
    r = geometry.dim_correlation(pools[0], pools[-1])
    return {"dim_corr_first_last": {"r": r, **geometry.correlation_summary(r, threshold=threshold)}}


def discriminative_dims(pair: Activations, k: int = 5) -> Metrics:
    """The k dimensions that best tell the two texts' final mean pools apart, their difference at
    every depth, and the (relative) depth at which each reaches half its final difference."""
    pools = pair.mean_pool("all")
    dims, diffs = geometry.top_discriminative_dims(pools[:, 0], pools[:, 1], k=k)
    half = np.array([geometry.half_value_depth(d) for d in diffs])
    return {"top_discriminative_dims": {"dims": dims, "difference": diffs, "half_value_depth": half,
                                        "half_value_relative_depth": half / pair.n_layers}}


def matryoshka(pair: Activations) -> Metrics:
    """The two texts' mean-pool cosine within each Matryoshka slice of the dimensions."""
    pools = pair.mean_pool("all")
    bounds = geometry.matryoshka_slices(pools.shape[-1])
    return {"slice_bounds": bounds,
            "slice_cosine": {name: None if b is None else geometry.slice_cosine(pools[:, 0], pools[:, 1], b)
                             for name, b in bounds.items()}}


# --------------------------------------------------------------------------- sentences and pairs

def separability(acts: Activations) -> Metrics:
    """Between-sentence spread over within-sentence scatter of the word tokens, per depth."""
    return {"separability_ratio": geometry.separability_ratio(acts.word_states())}


def pair_cosine(pair: Activations, tokens: str = "all") -> np.ndarray:
    """cos(m_l(a), m_l(b)) of a two-text record at every depth → [L + 1]; ``tokens="word"`` uses
    the word-token means w_l instead."""
    pools = pair.mean_pool(tokens)
    return geometry.pair_cosine(pools[:, 0], pools[:, 1])


def recall_at_k(queries: Activations, pool: Activations, relevant: Sequence[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Recall@k of the pool ranked by mean-pool cosine at every depth → [L + 1], and per query the
    share of its relevant documents ranked in the top k → [Q, L + 1] (their mean over queries)."""
    q, p = queries.mean_pool("all"), pool.mean_pool("all")
    hits = np.array([[np.mean([rank <= k for rank in found])
                      for found in retrieval.ranks(retrieval.cosine_scores(a, b), relevant)] for a, b in zip(q, p)])
    return retrieval.recall_at_k_per_depth(q, p, relevant, k), hits.T


def recall(sets: Mapping[str, RetrievalSet], k: Mapping[str, int]) -> Metrics:
    """Recall@k per depth of every retrieval set (queries, pool, relevant), with its own k."""
    found = {name: recall_at_k(*task, k[name]) for name, task in sets.items()}
    return {"recall_at_k": {name: r for name, (r, _) in found.items()}, "recall_k": dict(k),
            "per_unit": {f"recall_at_k.{name}": hits for name, (_, hits) in found.items()}}


def cls_alignment(acts: Activations) -> Metrics:
    """How well CLS tracks the word-token mean, and how far the first principal axis of a
    sentence's word tokens is from their mean, per depth (macro means over sentences)."""
    stacks = acts.word_states()
    per_sentence = geometry.pair_cosine(acts.cls(), acts.mean_pool("word")).T  # [N, L + 1]
    return {"cls_mean_alignment": per_sentence.mean(axis=0), "pc1_mean_alignment": geometry.pc1_mean_alignment(stacks),
            "per_unit": {"cls_mean_alignment": per_sentence,
                         "pc1_mean_alignment": _per_text(geometry.pc1_mean_alignment, stacks)}}


def by_model(runs: Mapping[str, Activations | None]) -> Metrics:
    """Within-sentence similarity and separability of the same sentences on every model run
    (None for a model named but not run)."""
    stacks = {name: None if acts is None else acts.word_states() for name, acts in runs.items()}
    return {f"{key}_by_model": {name: None if s is None else measure(s) for name, s in stacks.items()}
            for key, measure in (("intra_sentence_cosine", geometry.intra_sentence_cosine),
                                 ("separability_ratio", geometry.separability_ratio))}


def exercises(topic: Activations, sets: Mapping[str, RetrievalSet]) -> Metrics:
    """The exercises' answers: the collapse on one-topic sentences; easy Recall@1 and the first
    depth of its highest value; hard Recall@3 and Recall@1 (their difference: near misses)."""
    one_topic = collapse(topic)
    one_topic.pop("per_unit")
    easy_1 = recall_at_k(*sets["easy"], 1)[0]
    return {"exercises": {"one_topic": one_topic, "easy_recall_at_1": easy_1,
                          "easy_recall_at_1_peak_depth": int(np.argmax(easy_1)),
                          "hard_recall_at_1": recall_at_k(*sets["hard"], 1)[0],
                          "hard_recall_at_3": recall_at_k(*sets["hard"], 3)[0]}}
