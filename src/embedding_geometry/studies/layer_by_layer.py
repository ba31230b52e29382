"""Chapter 1, *Layer by layer*: how the tokens of a sentence collapse into a sentence vector.

Every function turns activations (:class:`~embedding_geometry.core.activations.Activations`,
all tokens of N texts at depths 0..L, width D) into part of the chapter's metrics dict; the
notebook adds each part with ``ch.add_metrics``. With m_l(s) the mean pool of all tokens of text
s at depth l, w_l(s) the mean of its word tokens, c_l(s) its [CLS] state and h_i its word-token
states (book/methods.md, Conventions and Layer by layer), the schema is:

collapse(acts), on the chapter's sentences (also ``exercises.one_topic``, on five sentences on one topic)
    intra_sentence_cosine      [L + 1]   mean_s mean_{i≠j ∈ s} cos(h_i, h_j)
    cross_sentence_baseline    [L + 1]   mean_{s<t} mean_{i∈s, j∈t} cos(h_i, h_j)
    collapse_gap               [L + 1]   intra − baseline
pca_steps(acts): every word token of the set in a 2-D PCA
    pca_step_fixed, pca_step_refit   [L]   mean step l−1 → l, one PCA at depth 0 / a PCA per depth
    pca_step_ratio             float     mean refit step / mean fixed step
token_pca(acts, fit_depth): ``final_pca_projection`` (hard and easy pair, fitted at depth L)
    coords [L + 1, n_word, 2] (rounded to 3 decimals), explained_variance_ratio [2], tokens [n_word]
first_last_cosine(acts, near)
    meanpool_first_last_cosine [N]       cos(m_0(s), m_L(s)) per sentence
    meanpool_first_last_summary {max, near, share_orthogonal}   share of sentences with |cos| < near
peak_writes(acts)
    peak_write_depth           [D]       argmax_{l=1..L} mean_s |m_l(s)_d − m_{l−1}(s)_d|
    peak_write_hist            [L]       dimensions per peak depth l = 1..L
    peak_write_share           [L]       peak_write_hist / D;  peak_write_uniform [L]: 1 / L each (chance)
    peak_write_last_two        float     share of the D dimensions peaking at L − 1 or L
dimension_correlation(acts)
    dim_corr_first_last        {r [D], mean, threshold, n_above, n_below, fraction_above, fraction_below}
                                         Pearson r over sentences of m_0(s)_d and m_L(s)_d
discriminative_dims(pair): the hard pair (a, b)
    top_discriminative_dims    {dims [5], difference [5, L + 1], half_value_depth [5], half_value_relative_depth [5],
                                earliest_half_value_relative_depth}
                                         the 5 dims of largest |m_L(a)_d − m_L(b)_d|, and when each reaches half of it
matryoshka(pair)
    slice_bounds               {name: [p, q) or None}   the Matryoshka slices clipped to D
    slice_cosine               {name: [L + 1] or None}  cos(m_l(a)[p:q], m_l(b)[p:q])
separability(acts)
    separability_ratio         [L + 1]   between-sentence spread / within-sentence scatter (Euclidean)
recall(sets, k): per retrieval set (easy, hard), the pool ranked by mean-pool cosine
    recall_at_k                {set: [L + 1]}   Recall@k per depth, k = recall_k[set]
    recall_k                   {set: int}
    recall_chance              {set: float}     k / pool size
pair_cosine(pair, tokens): cos(m_l(a), m_l(b)) → [L + 1]; the notebook stores
    pair_cosine                {negation: [L + 1], role_reversal: [L + 1]}
    discriminative_token_cosine_alone   float   cos(w_0(surged), w_0(plunged)), each word encoded alone
twin_cosine(twins): the book's hard set, each document with its negation and its role reversal
    twin_cosine                {negation: [L + 1], role_reversal: [L + 1]}   mean over the n documents
cls_alignment(acts)
    cls_mean_alignment         [L + 1]   mean_s cos(c_l(s), w_l(s))
    pc1_mean_alignment         [L + 1]   mean_s |cos(PC1 of s's centred word tokens, w_l(s))|
by_model(runs): per model name (None for a published model not run)
    intra_sentence_cosine_by_model, separability_ratio_by_model   {model: [L_model + 1] or None}
control(run): the random-init control's nulls (None without a control)
    control                    {collapse_gap [L + 1], separability_ratio [L + 1], twin_cosine {negation, role_reversal}}
exercises(topic, sets)
    exercises                  {one_topic: collapse(topic) without per_unit, easy_recall_at_1 [L + 1],
                                easy_recall_at_1_peak_depth int (first depth of its maximum),
                                hard_recall_at_1 [L + 1], hard_recall_at_3 [L + 1]}

``per_unit`` (merged into ``metrics["per_unit"]``) holds, for every metric a claim bootstraps, the
values of its sampling unit, whose mean over axis 0 is the metric (book.intervals):

* sentences [N, …]: ``intra_sentence_cosine``, ``cross_sentence_baseline`` (b_s = mean_{t≠s} of the
  pair values; mean_s b_s is the mean over pairs), ``collapse_gap``, ``cls_mean_alignment``,
  ``pc1_mean_alignment``, ``intra_sentence_cosine_by_model.<model>``,
  ``meanpool_first_last_summary.share_orthogonal`` (1 or 0), ``pca_step_fixed`` and
  ``pca_step_refit`` (a sentence's token sums · N / n) with ``pca_step_ratio.refit`` and
  ``pca_step_ratio.fixed`` (their means over steps: the ratio's numerator and denominator), and
  ``separability_ratio.between`` and ``.within`` (B_s and W_s: the ratio's numerator and denominator);
* queries [Q, L + 1]: ``recall_at_k.<set>`` (the share of a query's relevant documents in the top k);
* pairs [n, L + 1]: ``twin_cosine.negation``, ``twin_cosine.role_reversal``;
* dimensions [D, …]: ``peak_write_share`` (one-hot of the peak block), ``dim_corr_first_last.mean``
  (r), ``.fraction_above`` and ``.fraction_below`` (1 or 0).

The bootstrap resamples these rows with everything else held fixed (the PCA axes, the
all-sentence centroid C of the separability, the sentence pairs behind b_s).
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
    when None), the reference pairs (book/methods.md, Conventions), the book's hard set as twins
    (each document, its negation and its role reversal, whatever ``hard_set`` is) and the
    exercise's one-topic sentences."""
    r = corpora.REFERENCE_SENTENCES
    return {
        "sentences": sentences or corpora.layer_by_layer_sentences(),
        "hard_pair": [r["surged"], r["plunged"]], "negation_pair": [r["surged"], r["plunged"]],
        "role_reversal_pair": [r["acquirer"], r["acquired"]], "easy_pair": [r["fox"], r["rag"]],
        "token_pair_alone": ["surged", "plunged"],
        "easy_set": easy_set or corpora.retrieval_set("easy"), "hard_set": hard_set or corpora.retrieval_set("hard"),
        "twins": corpora.retrieval_set("hard")["pool"], "exercise_one_topic": list(ONE_TOPIC),
    }


# --------------------------------------------------------------------------- tokens of a sentence

def _per_text(measure: Callable[[list[np.ndarray]], np.ndarray], stacks: list[np.ndarray]) -> np.ndarray:
    """The per-text values of a macro mean over texts: ``measure`` of each text alone → [N, L + 1]."""
    return np.stack([measure([stack]) for stack in stacks])


def _per_sentence_of_pairs(pairs: dict[tuple[int, int], np.ndarray], n: int) -> np.ndarray:
    """b_s = mean_{t ≠ s} B(s, t) for a symmetric pair value B given on the pairs s < t → [n, …].
    mean_s b_s = mean over the pairs, since every pair counts once for each of its two texts."""
    return np.stack([np.mean([pairs[min(s, t), max(s, t)] for t in range(n) if t != s], axis=0) for s in range(n)])


def collapse(acts: Activations) -> Metrics:
    """Within-sentence token similarity, the cross-sentence baseline and their gap, per depth;
    per sentence s (``per_unit``): its within value, b_s (its mean baseline against every other
    sentence) and their difference."""
    stacks = acts.word_states()
    within = geometry.intra_sentence_cosine(stacks)
    baseline = geometry.cross_sentence_baseline(stacks)
    pairs = {(s, t): geometry.cross_sentence_baseline([stacks[s], stacks[t]])
             for s, t in combinations(range(len(stacks)), 2)}
    per_within, per_baseline = _per_text(geometry.intra_sentence_cosine, stacks), _per_sentence_of_pairs(pairs, len(stacks))
    return {"intra_sentence_cosine": within, "cross_sentence_baseline": baseline, "collapse_gap": within - baseline,
            "per_unit": {"intra_sentence_cosine": per_within, "cross_sentence_baseline": per_baseline,
                         "collapse_gap": per_within - per_baseline}}


def _token_sums(values: np.ndarray, text_of: np.ndarray, n_texts: int) -> np.ndarray:
    """Per text s, Σ_{i∈s} values[:, i] · N / n: rows whose mean over texts is the mean over all n
    tokens. values [L, n] → [N, L]."""
    sums = np.stack([np.bincount(text_of, weights=row, minlength=n_texts) for row in values], axis=1)
    return sums * n_texts / values.shape[1]


def pca_steps(acts: Activations) -> Metrics:
    """The mean 2-D step of every word token between depths, in fixed and in refitted PCA axes,
    and their ratio. Per sentence (``per_unit``, PCA axes held fixed): its tokens' share of each
    mean step, and of the mean over steps (the ratio's numerator and denominator)."""
    words, text_of = acts.hidden[:, acts.word_mask], acts.text_index()[acts.word_mask]
    steps = {axes: geometry.pca_token_steps(words, axes) for axes in geometry.PCA_AXES}
    fixed, refit = steps["fixed"].mean(axis=1), steps["refit"].mean(axis=1)
    shares = {axes: _token_sums(step, text_of, acts.n_texts) for axes, step in steps.items()}
    return {"pca_step_fixed": fixed, "pca_step_refit": refit, "pca_step_ratio": refit.mean() / fixed.mean(),
            "per_unit": {"pca_step_fixed": shares["fixed"], "pca_step_refit": shares["refit"],
                         **{f"pca_step_ratio.{axes}": share.mean(axis=1) for axes, share in shares.items()}}}


def token_pca(acts: Activations, fit_depth: int) -> Metrics:
    """Every word token at every depth in a 2-D PCA fitted on the word tokens at ``fit_depth``."""
    coords, explained = geometry.pca_projection(acts.hidden[:, acts.word_mask], fit_depth)
    return {"coords": coords, "explained_variance_ratio": explained, "tokens": acts.word_tokens()}


# --------------------------------------------------------------------------- the mean pool's dimensions

def first_last_cosine(acts: Activations, near: float = 0.1) -> Metrics:
    """cos(m_0(s), m_L(s)) for every sentence s, its largest value, and the share of sentences
    with |cos| < ``near`` (per sentence, 1 or 0, under ``per_unit``)."""
    pools = acts.mean_pool("all")
    cosine = geometry.pair_cosine(pools[0], pools[-1])
    orthogonal = (np.abs(cosine) < near).astype(float)
    return {"meanpool_first_last_cosine": cosine,
            "meanpool_first_last_summary": {"max": cosine.max(), "near": near, "share_orthogonal": orthogonal.mean()},
            "per_unit": {"meanpool_first_last_summary.share_orthogonal": orthogonal}}


def peak_writes(acts: Activations) -> Metrics:
    """Each dimension's peak-write depth, their histogram over depths 1..L (counts, and shares
    of the D dimensions), the share of the dimensions whose peak is one of the last two
    transitions, and the shares if every block were equally likely (``peak_write_uniform``, 1/L
    each). Per dimension (``per_unit``): the one-hot row of its peak block."""
    peaks = geometry.peak_write(acts.mean_pool("all"))
    hist = geometry.depth_histogram(peaks, acts.n_layers)
    one_hot = (peaks[:, None] == np.arange(1, acts.n_layers + 1)).astype(float)
    return {"peak_write_depth": peaks, "peak_write_hist": hist, "peak_write_last_two": hist[-2:].sum() / len(peaks),
            "peak_write_share": hist / len(peaks), "peak_write_uniform": np.full(acts.n_layers, 1 / acts.n_layers),
            "per_unit": {"peak_write_share": one_hot}}


def dimension_correlation(acts: Activations, threshold: float = 0.7) -> Metrics:
    """Per dimension, Pearson r over the sentences of m_0(s)_d and m_L(s)_d, and its summary;
    per dimension (``per_unit``) r and whether it lies above +threshold or below −threshold."""
    pools = acts.mean_pool("all")
    r = geometry.dim_correlation(pools[0], pools[-1])
    per_dimension = {"mean": r, "fraction_above": (r > threshold) * 1.0, "fraction_below": (r < -threshold) * 1.0}
    return {"dim_corr_first_last": {"r": r, **geometry.correlation_summary(r, threshold=threshold)},
            "per_unit": {f"dim_corr_first_last.{key}": value for key, value in per_dimension.items()}}


def discriminative_dims(pair: Activations, k: int = 5) -> Metrics:
    """The k dimensions that best tell the two texts' final mean pools apart, their difference at
    every depth, and the (relative) depth at which each reaches half its final difference."""
    pools = pair.mean_pool("all")
    dims, diffs = geometry.top_discriminative_dims(pools[:, 0], pools[:, 1], k=k)
    half = np.array([geometry.half_value_depth(d) for d in diffs])
    return {"top_discriminative_dims": {"dims": dims, "difference": diffs, "half_value_depth": half,
                                        "half_value_relative_depth": half / pair.n_layers,
                                        "earliest_half_value_relative_depth": half.min() / pair.n_layers}}


def matryoshka(pair: Activations) -> Metrics:
    """The two texts' mean-pool cosine within each Matryoshka slice of the dimensions."""
    pools = pair.mean_pool("all")
    bounds = geometry.matryoshka_slices(pools.shape[-1])
    return {"slice_bounds": bounds,
            "slice_cosine": {name: None if b is None else geometry.slice_cosine(pools[:, 0], pools[:, 1], b)
                             for name, b in bounds.items()}}


# --------------------------------------------------------------------------- sentences and pairs

def separability_parts(stacks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per text s, B_s = ‖c_s − C‖² and W_s = mean_{i∈s} ‖h_i − c_s‖² → two [N, L + 1], whose
    means over texts are the B and W of ``geometry.separability_ratio`` (C held at the full set's mean)."""
    centroids = np.stack([s.astype(np.float64).mean(axis=1) for s in stacks])  # [N, L + 1, D]
    between = ((centroids - centroids.mean(axis=0)) ** 2).sum(-1)
    within = np.stack([((s - c[:, None]) ** 2).sum(-1).mean(axis=1) for s, c in zip(stacks, centroids)])
    return between, within


def separability(acts: Activations) -> Metrics:
    """Between-sentence spread over within-sentence scatter of the word tokens, per depth; per
    sentence (``per_unit``) its B_s and W_s, the ratio's numerator and denominator."""
    stacks = acts.word_states()
    between, within = separability_parts(stacks)
    return {"separability_ratio": geometry.separability_ratio(stacks),
            "per_unit": {"separability_ratio.between": between, "separability_ratio.within": within}}


def separability_units(acts: Activations) -> dict[str, np.ndarray]:
    """Per sentence s, the two terms whose means over sentences make the separability ratio B / W:
    ``between`` ‖c_s − C‖² and ``within`` mean_{i∈s} ‖h_i − c_s‖², each [N, L + 1]."""
    stacks = [s.astype(np.float64) for s in acts.word_states()]
    centroids = np.stack([s.mean(axis=1) for s in stacks])  # [N, L + 1, D]
    between = ((centroids - centroids.mean(axis=0)) ** 2).sum(-1)
    within = np.stack([((s - c[:, None]) ** 2).sum(-1).mean(axis=1) for s, c in zip(stacks, centroids)])
    return {"between": between, "within": within}


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
    """Recall@k per depth of every retrieval set (queries, pool, relevant), with its own k, and
    chance recall k / pool size (one relevant document per query, ranked at random)."""
    found = {name: recall_at_k(*task, k[name]) for name, task in sets.items()}
    return {"recall_at_k": {name: r for name, (r, _) in found.items()}, "recall_k": dict(k),
            "recall_chance": {name: min(1.0, k[name] / pool.n_texts) for name, (_, pool, _) in sets.items()},
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
    (None for a model named but not run); per sentence (``per_unit``) the within-sentence values
    of every model run."""
    stacks = {name: None if acts is None else acts.word_states() for name, acts in runs.items()}
    found = {f"{key}_by_model": {name: None if s is None else measure(s) for name, s in stacks.items()}
             for key, measure in (("intra_sentence_cosine", geometry.intra_sentence_cosine),
                                  ("separability_ratio", geometry.separability_ratio))}
    found["per_unit"] = {f"intra_sentence_cosine_by_model.{name}": _per_text(geometry.intra_sentence_cosine, s)
                         for name, s in stacks.items() if s is not None}
    return found


def twin_cosine(twins: Activations) -> Metrics:
    """Mean-pool cosine of every document of the hard set with its negation and with its role
    reversal (``twins``: the texts in triplets document, negation, role reversal), per depth: the
    mean over the triplets, and per pair (``per_unit``) → [n, L + 1]."""
    pools = twins.mean_pool("all")
    per_pair = {name: geometry.pair_cosine(pools[:, 0::3], pools[:, offset::3]).T
                for name, offset in (("negation", 1), ("role_reversal", 2))}
    return {"twin_cosine": {name: values.mean(axis=0) for name, values in per_pair.items()},
            "per_unit": {f"twin_cosine.{name}": values for name, values in per_pair.items()}}


def control(run: tuple[Activations, Activations] | None) -> Metrics:
    """The nulls of a random-init control, from its (sentences, twins) activations: its collapse
    gap, separability ratio and twin cosines (``control`` is None without a control)."""
    if run is None:
        return {"control": None}
    sentences, twins = run
    return {"control": {"collapse_gap": collapse(sentences)["collapse_gap"],
                        "separability_ratio": geometry.separability_ratio(sentences.word_states()),
                        "twin_cosine": twin_cosine(twins)["twin_cosine"]}}


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
