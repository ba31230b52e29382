"""Chapter 1, *Layer by layer*: how the tokens of a sentence collapse into a sentence vector.

Every function turns activations (:class:`~embedding_geometry.core.activations.Activations`,
all tokens of N texts at depths 0..L, width D) into part of one model's metrics dict;
:func:`measure` runs them all — with those of :mod:`.pca_views`, :mod:`.pool_dimensions` and
:mod:`.sublayers` — on one model's texts and its random-init controls (:mod:`.layer_runs`), so
that the chapter's main model (``ch.add_metrics``) and every other model it compares
(``ch.judge_model``) are measured the same way. With m_l(s) the mean pool of all tokens of text s
at depth l, w_l(s) the mean of its word tokens, c_l(s) its [CLS] state, h_i its word-token
states and ū_s the mean of their unit vectors (book/methods.md, Conventions and Layer by layer):

collapse(acts), on the chapter's sentences (also ``exercises.one_topic``, on five sentences on one topic)
    intra_sentence_cosine      [L + 1]   mean_s mean_{i≠j ∈ s} cos(h_i, h_j)
    cross_sentence_baseline    [L + 1]   mean_{s≠t} K_st, K_st = mean_{i∈s, j∈t} cos(h_i, h_j) = ū_s · ū_t
    collapse_gap               [L + 1]   intra − baseline
token_norms(acts)
    token_norm                 [L + 1]   mean_s mean_{i∈s} ‖h_i‖
    token_norm_range           float     mean_s max_l n_l(s) / min_l n_l(s), n_l(s) = mean_{i∈s} ‖h_i‖
coherence(acts)
    update_coherence           [L]       l: mean_s mean_{i≠j ∈ s} cos(Δ_i, Δ_j), Δ_i = h_i(l) − h_i(l−1)
separability(acts)
    separability_ratio         [L + 1]   B / W: between-sentence spread over within-sentence scatter (Euclidean)
recall(sets, k): per retrieval set (easy, hard), the pool ranked by mean-pool cosine
    recall_at_k                {set: [L + 1]}   Recall@k per depth, k = recall_k[set]
    recall_k                   {set: int};  recall_chance {set: float}: k / pool size
pairs(negation, role_reversal, alone)
    pair_cosine                {negation: [L + 1], role_reversal: [L + 1]}   cos(m_l(a), m_l(b))
    discriminative_token_cosine_alone   float   cos(w_0(surged), w_0(plunged)), each word encoded alone
twin_cosine(twins): the book's hard set, each document with its negation and its role reversal
    twin_cosine                {negation, role_reversal, reversal_minus_negation: [L + 1]}   means over documents
cls_alignment(acts)
    cls_mean_alignment         [L + 1]   mean_s cos(c_l(s), w_l(s))
    pc1_mean_alignment         [L + 1]   mean_s |cos(PC1 of s's centred word tokens, w_l(s))|
control(runs): a model's random-init controls, one per seed (None without controls)
    control                    {collapse_gap, separability_ratio, intra_sentence_cosine [L + 1],
                                twin_cosine {negation} [L + 1], seeds}: means over the seeds
by_model(runs): per model name (None for a published model not run)
    intra_sentence_cosine_by_model, separability_ratio_by_model   {model: [L_model + 1] or None}
exercises(topic, sets)
    exercises                  {one_topic: collapse(topic) without per_unit, easy_recall_at_1 [L + 1],
                                easy_recall_at_1_peak_depth, hard_recall_at_1 [L + 1], hard_recall_at_3 [L + 1]}

``per_unit`` (merged into ``metrics["per_unit"]``) holds, for every statistic a claim resamples,
what each sampling unit contributes (book/claims/samples.py):

* sentences, means [N, …]: ``intra_sentence_cosine``, ``token_norm``, ``token_norm_range``,
  ``update_coherence``, ``cls_mean_alignment``, ``pc1_mean_alignment``,
  ``separability_ratio.within`` (W_s), ``intra_sentence_cosine_by_model.<model>``, and those of
  :mod:`.pca_views` and :mod:`.pool_dimensions`;
* sentences, pairwise kernels [N, N, …] (U-statistics: self-pairs left out, a sentence drawn
  twice is not paired with itself): ``cross_sentence_baseline.pairs`` (K_st) and
  ``separability_ratio.between_pairs`` ((N − 1)/N · ‖c_s − c_t‖² / 2, whose U-statistic is B);
* queries [Q, L + 1]: ``recall_at_k.<set>``; pairs [n, L + 1]: ``twin_cosine.negation``,
  ``.role_reversal``;
* seeds × sentences [S, N, …] (and [S, N, N, …] kernels) of the random-init controls, under
  ``control.`` followed by the key above; seeds × pairs [S, n, L + 1] ``control.twin_cosine.negation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .layer_runs import Run, controls_of
from .pca_views import final_view, pca_steps
from .pool_dimensions import dimension_correlation, discriminative_dims, matryoshka, peak_writes, travel
from .sublayers import dip
from ..core import corpora, geometry, ranking
from ..core.activations import Activations

ONE_TOPIC = (
    "The stock market surged after the central bank cut interest rates",
    "Bond yields fell as investors expected lower interest rates",
    "The central bank raised rates to fight rising inflation",
    "Bank shares rallied after strong quarterly earnings",
    "Currency traders sold the dollar after the rate decision",
)
"""Exercise 1: five sentences on one topic (central banks and markets)."""

PUBLISHED_MODELS = ("mixedbread-ai/mxbai-embed-large-v1", "jinaai/jina-colbert-v2")
"""The post's models: the dense-vs-ColBERT claims read them from ``*_by_model`` (None when not run)."""

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
        "twins": corpora.retrieval_set("hard")["pool"], "negation_twins": negation_twins(),
        "exercise_one_topic": list(ONE_TOPIC),
    }


def negation_twins() -> list[str]:
    """The hard set's documents each followed by its negation, d_1, n_1, d_2, n_2, …: what the
    random-init controls run for the negation twins' null (chapter 2's hard pairs, the same list,
    so that the two chapters share the controls' forward passes)."""
    pool = corpora.retrieval_set("hard")["pool"]
    return [text for i in range(0, len(pool), 3) for text in pool[i:i + 2]]


def measure(runs: Mapping[str, Run], model: str, inputs: Mapping[str, Any], k: Mapping[str, int],
            seed: int = 0) -> Metrics:
    """Every measurement of the chapter on ``model``'s run, its random-init controls as the nulls,
    and the exercises' answers: one metrics dict (the module docstring's schema); ``seed`` seeds
    the resamples the study draws itself."""
    acts = runs[model].acts
    sets = {name: (acts[f"{name}_queries"], acts[f"{name}_pool"], inputs[f"{name}_set"]["relevant"]) for name in k}
    sentences = acts["sentences"]
    return merged(
        collapse(sentences), token_norms(sentences), coherence(sentences), pca_steps(sentences),
        final_view(acts["final_view"]), travel(sentences), peak_writes(sentences, seed=seed),
        dimension_correlation(sentences),
        discriminative_dims(acts["negation_pair"]), matryoshka(acts["negation_pair"], acts["twins"]),
        separability(sentences),
        recall(sets, k), pairs(acts["negation_pair"], acts["role_reversal_pair"], acts["token_pair_alone"]),
        twin_cosine(acts["twins"]), cls_alignment(sentences), dip(sentences),
        control([(c.acts["sentences"], c.acts["negation_twins"]) for c in controls_of(runs, model)]),
        by_model({**dict.fromkeys(PUBLISHED_MODELS), **{name: run.acts["sentences"] for name, run in runs.items()}}),
        exercises(acts["exercise_one_topic"], sets))


def merged(*parts: Mapping[str, Any]) -> Metrics:
    """The union of study results, their ``per_unit`` values joined rather than replaced."""
    found: Metrics = {"per_unit": {}}
    for part in parts:
        part = dict(part)
        found["per_unit"].update(part.pop("per_unit", {}))
        found.update(part)
    return found


def for_the_record(others: Mapping[str, Metrics]) -> Metrics:
    """The other models' metrics without their per-unit samples and resamples, for the results
    JSON (the charts draw them; their claims are judged with ``ch.judge_model``)."""
    kept = {name: {key: value for key, value in metrics.items() if key not in ("per_unit", "resampled")}
            for name, metrics in others.items()}
    return {"other_models": kept}


# --------------------------------------------------------------------------- tokens of a sentence

def _mean_units(stacks: Sequence[np.ndarray]) -> np.ndarray:
    """ū_s at every depth: the mean of text s's unit token vectors → [N, L + 1, D]."""
    return np.stack([geometry.unit_rows(s).mean(axis=1) for s in stacks])


def _within(stacks: Sequence[np.ndarray]) -> np.ndarray:
    """Per text and depth, its within-sentence cosine (``geometry.within_cosine``) → [N, L + 1]."""
    return np.stack([geometry.within_cosine(s) for s in stacks])


def collapse(acts: Activations) -> Metrics:
    """Within-sentence token similarity, the cross-sentence baseline and their gap, per depth.
    Per sentence (``per_unit``): its within value [N, L + 1] and the baseline's pairwise kernel
    K_st = ū_s · ū_t [N, N, L + 1] (the mean cosine of a token of s and a token of t)."""
    stacks = acts.word_states()
    within, kernel = _within(stacks), geometry.pair_kernel(_mean_units(stacks))
    if len(stacks) < 2:
        raise ValueError("the cross-sentence baseline needs at least 2 texts")
    baseline = geometry.pair_mean(kernel)
    return {"intra_sentence_cosine": within.mean(axis=0), "cross_sentence_baseline": baseline,
            "collapse_gap": within.mean(axis=0) - baseline,
            "per_unit": {"intra_sentence_cosine": within, "cross_sentence_baseline.pairs": kernel}}


def token_norms(acts: Activations) -> Metrics:
    """Mean word-token norm per depth, and how far it moves: per sentence, the ratio of its
    largest to its smallest mean norm over depths (per sentence under ``per_unit``)."""
    norms = np.stack([geometry.token_norms(s).mean(axis=1) for s in acts.word_states()])  # [N, L + 1]
    spread = norms.max(axis=1) / norms.min(axis=1)
    return {"token_norm": norms.mean(axis=0), "token_norm_range": spread.mean(),
            "per_unit": {"token_norm": norms, "token_norm_range": spread}}


def coherence(acts: Activations) -> Metrics:
    """How alike the updates of a sentence's tokens are: per block l, the mean over ordered pairs
    of its word tokens of cos(Δ_i, Δ_j), Δ_i = h_i(l) − h_i(l − 1); per sentence under ``per_unit``."""
    per_sentence = _within([np.diff(s.astype(np.float64), axis=0) for s in acts.word_states()])
    return {"update_coherence": per_sentence.mean(axis=0), "per_unit": {"update_coherence": per_sentence}}


# --------------------------------------------------------------------------- sentences and pairs

def separability_units(acts: Activations) -> dict[str, np.ndarray]:
    """Per sentence s, ``between`` ‖c_s − C‖² and ``within`` W_s, each [N, L + 1]: the plug-in
    terms of B / W with C held at the set's mean (``geometry.separability_parts``)."""
    between, within = geometry.separability_parts([s.astype(np.float64) for s in acts.word_states()])
    return {"between": between, "within": within}


def separability(acts: Activations) -> Metrics:
    """Between-sentence spread over within-sentence scatter of the word tokens, per depth. B is a
    pairwise statistic, B = (N − 1)/N · mean_{s≠t} ‖c_s − c_t‖² / 2, so ``per_unit`` holds its
    kernel [N, N, L + 1] (resampled as a U-statistic) next to W_s [N, L + 1]."""
    stacks = acts.word_states()
    centroids = np.stack([s.astype(np.float64).mean(axis=1) for s in stacks])  # [N, L + 1, D]
    between, within = geometry.separability_parts(stacks)
    kernel = geometry.between_kernel(centroids)
    return {"separability_ratio": geometry.parts_ratio(between, within),
            "per_unit": {"separability_ratio.between_pairs": kernel, "separability_ratio.within": within}}


def pair_cosine(pair: Activations, tokens: str = "all") -> np.ndarray:
    """cos(m_l(a), m_l(b)) of a two-text record at every depth → [L + 1]; ``tokens="word"`` uses
    the word-token means w_l instead."""
    pools = pair.mean_pool(tokens)
    return geometry.pair_cosine(pools[:, 0], pools[:, 1])


def pairs(negation: Activations, role_reversal: Activations, alone: Activations) -> Metrics:
    """The post's negation and role-reversal pairs' mean-pool cosines per depth, and the cosine
    of the two discriminative words encoded alone (each the mean of its word pieces) at depth 0."""
    return {"pair_cosine": {"negation": pair_cosine(negation), "role_reversal": pair_cosine(role_reversal)},
            "discriminative_token_cosine_alone": pair_cosine(alone, tokens="word")[0]}


def recall_at_k(queries: Activations, pool: Activations, relevant: Sequence[int],
                k: int) -> tuple[np.ndarray, np.ndarray]:
    """Recall@k of the pool ranked by mean-pool cosine at every depth → [L + 1], and per query the
    share of its relevant documents ranked in the top k → [Q, L + 1] (their mean over queries)."""
    q, p = queries.mean_pool("all"), pool.mean_pool("all")
    hits = [ranking.recall_per_query(geometry.cosine_matrix(a, b), relevant, k) for a, b in zip(q, p)]
    return np.array([float(np.mean(h)) for h in hits]), np.array(hits).T


def recall(sets: Mapping[str, RetrievalSet], k: Mapping[str, int]) -> Metrics:
    """Recall@k per depth of every retrieval set (queries, pool, relevant), with its own k, and
    chance recall k / pool size (one relevant document per query, ranked at random)."""
    found = {name: recall_at_k(*task, k[name]) for name, task in sets.items()}
    return {"recall_at_k": {name: r for name, (r, _) in found.items()}, "recall_k": dict(k),
            "recall_chance": {name: min(1.0, k[name] / pool.n_texts) for name, (_, pool, _) in sets.items()},
            "per_unit": {f"recall_at_k.{name}": hits for name, (_, hits) in found.items()}}


def twin_cosine(twins: Activations) -> Metrics:
    """Mean-pool cosine of every document of the hard set with its negation and with its role
    reversal (``twins``: triplets document, negation, role reversal), per depth: the means over
    the triplets and their difference, and per pair (``per_unit``) → [n, L + 1]."""
    pools = twins.mean_pool("all")
    per_pair = {name: geometry.pair_cosine(pools[:, 0::3], pools[:, offset::3]).T
                for name, offset in (("negation", 1), ("role_reversal", 2))}
    means = {name: values.mean(axis=0) for name, values in per_pair.items()}
    return {"twin_cosine": {**means, "reversal_minus_negation": means["role_reversal"] - means["negation"]},
            "per_unit": {f"twin_cosine.{name}": values for name, values in per_pair.items()}}


def cls_alignment(acts: Activations) -> Metrics:
    """How well CLS tracks the word-token mean, and how far the first principal axis of a
    sentence's word tokens is from their mean, per depth (macro means over sentences)."""
    per_sentence = geometry.pair_cosine(acts.cls(), acts.mean_pool("word")).T  # [N, L + 1]
    pc1 = np.stack([geometry.pc1_alignment(s) for s in acts.word_states()])
    return {"cls_mean_alignment": per_sentence.mean(axis=0), "pc1_mean_alignment": pc1.mean(axis=0),
            "per_unit": {"cls_mean_alignment": per_sentence, "pc1_mean_alignment": pc1}}


# --------------------------------------------------------------------------- models and controls

def control(runs: Sequence[tuple[Activations, Activations]]) -> Metrics:
    """The nulls of a model's random-init controls, one (sentences, negation twins) per seed (the
    twins laid out d_1, n_1, d_2, n_2, …, :func:`negation_twins`): per seed and unit
    (``per_unit``, keys ``control.<key>``) the values the claims compare unit by unit —
    within-sentence cosine, the baseline's and B's kernels, W_s, each document's cosine with its
    negation — and, for the charts, their curves averaged over the seeds (``control``: None
    without controls)."""
    if not runs:
        return {"control": None}
    parts = [merged(collapse(s), separability(s)) for s, _ in runs]
    negation = np.stack([geometry.pair_cosine(p[:, 0::2], p[:, 1::2]).T for p in (t.mean_pool("all") for _, t in runs)])
    keys = ("intra_sentence_cosine", "cross_sentence_baseline.pairs", "separability_ratio.between_pairs",
            "separability_ratio.within")
    mean = {key: np.mean([p[key] for p in parts], axis=0) for key in ("collapse_gap", "intra_sentence_cosine")}
    within = np.mean([p["per_unit"]["separability_ratio.within"] for p in parts], axis=(0, 1))
    between = np.mean([p["per_unit"]["separability_ratio.between_pairs"].sum(axis=(0, 1)) for p in parts], axis=0)
    n = runs[0][0].n_texts
    return {"control": {**mean, "separability_ratio": between / (n * (n - 1)) / within, "seeds": len(runs),
                        "twin_cosine": {"negation": negation.mean(axis=(0, 1))}},
            "per_unit": {**{f"control.{key}": np.stack([p["per_unit"][key] for p in parts]) for key in keys},
                         "control.twin_cosine.negation": negation}}


def by_model(runs: Mapping[str, Activations | None]) -> Metrics:
    """Within-sentence similarity and separability of the same sentences on every model run
    (None for a model named but not run); per sentence (``per_unit``) the within-sentence values
    of every model run."""
    stacks = {name: None if acts is None else acts.word_states() for name, acts in runs.items()}
    found = {f"{key}_by_model": {name: None if s is None else measure_of(s) for name, s in stacks.items()}
             for key, measure_of in (("intra_sentence_cosine", geometry.intra_sentence_cosine),
                                     ("separability_ratio", geometry.separability_ratio))}
    found["per_unit"] = {f"intra_sentence_cosine_by_model.{name}": _within(s)
                         for name, s in stacks.items() if s is not None}
    return found


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
