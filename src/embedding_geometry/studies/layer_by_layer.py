"""Chapter 1, *Layer by layer*: how the tokens of a sentence collapse into a sentence vector.

Every function turns activations (:class:`~embedding_geometry.core.activations.Activations`,
all tokens of N texts at depths 0..L, width D) into part of one model's metrics dict;
:func:`measure` runs them all on one model's texts and its random-init controls, so that the
chapter's main model (``ch.add_metrics``) and every other model it compares (``ch.judge_model``)
are measured the same way. With m_l(s) the mean pool of all tokens of text s at depth l, w_l(s)
the mean of its word tokens, c_l(s) its [CLS] state, h_i its word-token states and û_i = h_i / ‖h_i‖
(book/methods.md, Conventions and Layer by layer), the schema is:

collapse(acts), on the chapter's sentences (also ``exercises.one_topic``, on five sentences on one topic)
    intra_sentence_cosine      [L + 1]   mean_s mean_{i≠j ∈ s} cos(h_i, h_j)
    cross_sentence_baseline    [L + 1]   mean_{s≠t} K_st, K_st = mean_{i∈s, j∈t} cos(h_i, h_j) = ū_s · ū_t
    collapse_gap               [L + 1]   intra − baseline
token_norms(acts)
    token_norm                 [L + 1]   mean_s mean_{i∈s} ‖h_i‖
    token_norm_range           float     mean_s max_l n_l(s) / min_l n_l(s), n_l(s) = mean_{i∈s} ‖h_i‖ at depth l
coherence(acts)
    update_coherence           [L]       l: mean_s mean_{i≠j ∈ s} cos(Δ_i, Δ_j), Δ_i = h_i(l) − h_i(l−1)
pca_steps(acts): every word token of the set in a 2-D PCA
    pca_step_fixed, pca_step_refit   [L]   mean step l−1 → l, one PCA at depth 0 / a PCA per depth
    pca_step_ratio             float     mean refit step / mean fixed step
final_view(four): the hard and easy pairs in a PCA fitted on their word tokens at depth L
    final_pca_projection       {coords [L + 1, n_word, 2], explained_variance_ratio [2], tokens [n_word]}
    semantic_assembly          {text: [L + 1]}   cos(centroid_l, centroid_L) of a text's tokens in that 2-D view
travel(acts)
    meanpool_first_last_cosine [N]       cos(m_0(s), m_L(s)) per sentence
    meanpool_first_last_abs    float     mean_s |cos(m_0(s), m_L(s))|
    meanpool_to_final          [L + 1]   mean_s cos(m_l(s), m_L(s))
peak_writes(acts, tail)
    peak_write_depth           [D]       argmax_{l=1..L} mean_s |m_l(s)_d − m_{l−1}(s)_d|
    peak_write_hist            [L]       dimensions per peak block l = 1..L
    peak_write_share           [L]       peak_write_hist / D;  peak_write_uniform [L]: 1 / L each (chance)
    peak_write_last_two        float     share of the D dimensions peaking in the last ``tail`` of the blocks
    resampled.peak_write_last_two [B]    that share on B bootstrap resamples of the sentences
dimension_correlation(acts)
    dim_corr_first_last        {r [D], mean, threshold, n_above, n_below, fraction_above, fraction_below}
                                         Pearson r over sentences of m_0(s)_d and m_L(s)_d
discriminative_dims(pair): the hard pair (a, b)
    top_discriminative_dims    {dims [5], difference [5, L + 1], half_value_depth [5], half_value_relative_depth [5],
                                earliest_half_value_relative_depth}
matryoshka(pair)
    slice_bounds               {name: [p, q) or None}   the Matryoshka slices clipped to D
    slice_cosine               {name: [L + 1] or None}  cos(m_l(a)[p:q], m_l(b)[p:q])
separability(acts)
    separability_ratio         [L + 1]   B / W: between-sentence spread over within-sentence scatter (Euclidean)
recall(sets, k): per retrieval set (easy, hard), the pool ranked by mean-pool cosine
    recall_at_k                {set: [L + 1]}   Recall@k per depth, k = recall_k[set]
    recall_k                   {set: int};  recall_chance {set: float}: k / pool size
pairs(negation, role_reversal, alone)
    pair_cosine                {negation: [L + 1], role_reversal: [L + 1]}   cos(m_l(a), m_l(b))
    discriminative_token_cosine_alone   float   cos(w_0(surged), w_0(plunged)), each word encoded alone
twin_cosine(twins): the book's hard set, each document with its negation and its role reversal
    twin_cosine                {negation, role_reversal, reversal_minus_negation: [L + 1]}   means over the n documents
cls_alignment(acts)
    cls_mean_alignment         [L + 1]   mean_s cos(c_l(s), w_l(s))
    pc1_mean_alignment         [L + 1]   mean_s |cos(PC1 of s's centred word tokens, w_l(s))|
dip(acts, after_attention): the dip's mechanism
    dip                        {attention_change [L], feed_forward_change [L]: the change in within-sentence
                                cosine across each block's attention and feed-forward sublayers;
                                by_word_class {content, function, mixed: [L + 1]}: within-sentence cosine among
                                content words, among function words, and between the two;
                                steepest_fall_block: the block whose within-sentence cosine falls most, or
                                rises least}
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
  ``update_coherence``, ``meanpool_first_last_abs``, ``cls_mean_alignment``,
  ``pc1_mean_alignment``, ``separability_ratio.within`` (W_s), ``pca_step_fixed`` and
  ``pca_step_refit`` (a sentence's token sums · N / n, PCA axes held fixed) with
  ``pca_step_ratio.refit`` and ``.fixed``, ``intra_sentence_cosine_by_model.<model>``;
* sentences, pairwise kernels [N, N, …] (U-statistics: self-pairs left out, a sentence drawn
  twice is not paired with itself): ``cross_sentence_baseline.pairs`` (K_st) and
  ``separability_ratio.between_pairs`` ((N − 1)/N · ‖c_s − c_t‖² / 2, whose U-statistic is B);
* sentences, correlation moments [N, D]: ``dim_corr_first_last.x`` and ``.y`` (m_0(s) and m_L(s),
  centred over the sentences), from whose moments each resample rebuilds every r_d;
* queries [Q, L + 1]: ``recall_at_k.<set>``; pairs [n, L + 1]: ``twin_cosine.negation``,
  ``.role_reversal``;
* seeds × sentences [S, N, …] (and [S, N, N, …] kernels) of the random-init controls, under
  ``control.`` followed by the key above; seeds × pairs [S, n, L + 1] ``control.twin_cosine.negation``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from . import retrieval
from ..core import architectures, corpora, geometry
from ..core.activations import Activations
from ..core.capture import run_with_cache
from ..core.errors import NotApplicableError
from ..core.models import LoadedModel, ModelInfo

ONE_TOPIC = (
    "The stock market surged after the central bank cut interest rates",
    "Bond yields fell as investors expected lower interest rates",
    "The central bank raised rates to fight rising inflation",
    "Bank shares rallied after strong quarterly earnings",
    "Currency traders sold the dollar after the rate decision",
)
"""Exercise 1: five sentences on one topic (central banks and markets)."""

TAIL = 2 / 24
"""The post's "final two layers" of 24, as a share of the blocks (peak writes; the ledger's
``last_fraction:0.0833``)."""

RESAMPLES = 20_000
"""Bootstrap resamples a study draws itself (the claims engine's own number)."""

TRAINED_TEXTS = ("sentences", "twins", "easy_queries", "easy_pool", "hard_queries", "hard_pool",
                 "negation_pair", "role_reversal_pair", "final_view", "token_pair_alone", "exercise_one_topic")
"""The text sets every trained model runs."""
CONTROL_TEXTS = ("sentences", "negation_twins")
"""The text sets a random-init control runs: what its nulls need."""

PUBLISHED_MODELS = ("mixedbread-ai/mxbai-embed-large-v1", "jinaai/jina-colbert-v2")
"""The post's models: the dense-vs-ColBERT claims read them from ``*_by_model`` (None when not run)."""

Metrics = dict[str, Any]
RetrievalSet = tuple[Activations, Activations, Sequence[int]]
Extract = Callable[..., Activations]


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


# --------------------------------------------------------------------------- running the models

@dataclass
class Run:
    """One model's activations of every text set, by name (:data:`TRAINED_TEXTS`), and, for a
    trained model, its sentences' states after each block's attention sublayer (:func:`after_attention`)."""

    info: ModelInfo
    acts: dict[str, Activations]
    sublayers: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    @property
    def control(self) -> bool:
        return self.info.source == "control"


def texts_of(inputs: Mapping[str, Any], control: bool = False) -> dict[str, list[str]]:
    """The text sets a model runs, by name: a trained model :data:`TRAINED_TEXTS`, a random-init
    control :data:`CONTROL_TEXTS`."""
    found = {"sentences": inputs["sentences"], "twins": inputs["twins"], "negation_twins": inputs["negation_twins"],
             "easy_queries": inputs["easy_set"]["queries"], "easy_pool": inputs["easy_set"]["pool"],
             "hard_queries": inputs["hard_set"]["queries"], "hard_pool": inputs["hard_set"]["pool"],
             "negation_pair": inputs["negation_pair"], "role_reversal_pair": inputs["role_reversal_pair"],
             "final_view": inputs["hard_pair"] + inputs["easy_pair"], "token_pair_alone": inputs["token_pair_alone"],
             "exercise_one_topic": inputs["exercise_one_topic"]}
    return {name: found[name] for name in (CONTROL_TEXTS if control else TRAINED_TEXTS)}


SOURCES = {"easy_queries": "easy_set", "easy_pool": "easy_set", "hard_queries": "hard_set", "hard_pool": "hard_set",
           "exercise_one_topic": "sentences", "final_view": "texts", "negation_pair": "texts",
           "role_reversal_pair": "texts", "token_pair_alone": "texts"}
"""The parameter each text set comes from, for error messages."""


def run_all(extract: Extract, loaded_models: Iterable[LoadedModel], inputs: Mapping[str, Any],
            batch_size: int = 32) -> dict[str, Run]:
    """Every model's :class:`Run`, by model id, in the order given: ``extract(texts, model,
    source=…)`` (the chapter's cached forward pass) on each text set of :func:`texts_of`, and the
    sentences' sublayer states of every trained model."""
    runs = {}
    for loaded in loaded_models:
        control = loaded.info.source == "control"
        acts = {name: extract(texts, loaded, source=SOURCES.get(name, name))
                for name, texts in texts_of(inputs, control).items()}
        sublayers = None if control else after_attention(loaded, inputs["sentences"], batch_size)
        runs[loaded.info.id] = Run(loaded.info, acts, sublayers)
    return runs


def trained(runs: Mapping[str, Run]) -> list[str]:
    """The ids of the trained models run, in order (the main model first)."""
    return [name for name, run in runs.items() if not run.control]


def controls_of(runs: Mapping[str, Run], model: str) -> list[Run]:
    """The random-init controls of ``model`` among ``runs`` (their ids begin with the model's)."""
    return [run for name, run in runs.items() if run.control and name.startswith(f"{model} [")]


def models_table(runs: Mapping[str, Run]) -> "pd.DataFrame":
    """One row per model run: its id, kind, blocks L, width D and weights' SHA-256 (first 12 hex)."""
    import pandas as pd

    return pd.DataFrame([{"model": name, "kind": "random-init control" if run.control else "trained",
                          "blocks L": run.info.layers, "width D": run.info.hidden,
                          "weights (SHA-256)": (run.info.sha256 or "—")[:12]} for name, run in runs.items()])


def label(info: ModelInfo) -> str:
    """A model's name in the charts and tables: "all-MiniLM-L6-v2 (6 blocks)"."""
    return f"{info.id.rsplit('/', 1)[-1]} ({info.layers} blocks)"


def labelled(runs: Mapping[str, Run], metrics: Mapping[str, Metrics]) -> dict[str, Metrics]:
    """The metrics of every trained model, by :func:`label`, in the order they ran."""
    return {label(runs[name].info): metrics[name] for name in trained(runs) if name in metrics}


def dip_table(measured: Mapping[str, Metrics]) -> "pd.DataFrame":
    """Per model, the block where the within-sentence cosine falls most (or, where it never falls,
    rises least) and what each sublayer changes there (:func:`dip`), with the number of content
    and function word tokens."""
    import pandas as pd

    rows = []
    for name, metrics in measured.items():
        found, block = metrics["dip"], metrics["dip"]["steepest_fall_block"]
        rows.append({"model": name, "block of the least change": f"{block} of {len(metrics['update_coherence'])}",
                     "change in within-sentence cosine there": metrics["intra_sentence_cosine"][block]
                     - metrics["intra_sentence_cosine"][block - 1],
                     "across attention": _at(found["attention_change"], block - 1),
                     "across feed-forward": _at(found["feed_forward_change"], block - 1),
                     "content word tokens": found["word_class_counts"]["content"],
                     "function word tokens": found["word_class_counts"]["function"]})
    return pd.DataFrame(rows).round(4).fillna("—")


def _at(series, i: int):
    return None if series is None else float(series[i])


def measure(runs: Mapping[str, Run], model: str, inputs: Mapping[str, Any], k: Mapping[str, int],
            seed: int = 0) -> Metrics:
    """Every measurement of the chapter on ``model``'s run, its random-init controls as the nulls,
    and the exercises' answers: one metrics dict (the module docstring's schema); ``seed`` seeds
    the resamples the study draws itself."""
    run, acts = runs[model], runs[model].acts
    sets = {name: (acts[f"{name}_queries"], acts[f"{name}_pool"], inputs[f"{name}_set"]["relevant"]) for name in k}
    sentences = acts["sentences"]
    return merged(
        collapse(sentences), token_norms(sentences), coherence(sentences), pca_steps(sentences),
        final_view(acts["final_view"]), travel(sentences), peak_writes(sentences, seed=seed),
        dimension_correlation(sentences),
        discriminative_dims(acts["negation_pair"]), matryoshka(acts["negation_pair"]), separability(sentences),
        recall(sets, k), pairs(acts["negation_pair"], acts["role_reversal_pair"], acts["token_pair_alone"]),
        twin_cosine(acts["twins"]), cls_alignment(sentences), dip(sentences, run.sublayers),
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
    """Per text and depth, the mean cosine over ordered pairs i ≠ j of its tokens,
    (n² ‖ū_s‖² − n) / (n (n − 1)) → [N, L + 1]."""
    n = np.array([s.shape[1] for s in stacks], dtype=float)[:, None]
    if np.any(n < 2):
        raise ValueError("every text needs at least 2 word tokens for a within-sentence cosine")
    squared = (_mean_units(stacks) ** 2).sum(-1)
    return (n ** 2 * squared - n) / (n * (n - 1))


def _pair_kernel(vectors: np.ndarray) -> np.ndarray:
    """K_st = v_s · v_t at every depth for per-text vectors [N, L + 1, D] → [N, N, L + 1], the
    diagonal (never used by a U-statistic) set to 0."""
    kernel = np.einsum("sld,tld->stl", vectors, vectors)
    kernel[np.arange(len(vectors)), np.arange(len(vectors))] = 0.0
    return kernel


def collapse(acts: Activations) -> Metrics:
    """Within-sentence token similarity, the cross-sentence baseline and their gap, per depth.
    Per sentence (``per_unit``): its within value [N, L + 1] and the baseline's pairwise kernel
    K_st = ū_s · ū_t [N, N, L + 1] (the mean cosine of a token of s and a token of t)."""
    stacks = acts.word_states()
    within, kernel = _within(stacks), _pair_kernel(_mean_units(stacks))
    n = len(stacks)
    if n < 2:
        raise ValueError("the cross-sentence baseline needs at least 2 texts")
    baseline = kernel.sum(axis=(0, 1)) / (n * (n - 1))
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


def final_view(acts: Activations, labels: Sequence[str] = ("surged", "plunged", "fox", "RAG")) -> Metrics:
    """The post's teleological view: word tokens in a PCA fitted at the final depth, and its
    unrendered "semantic assembly" curve, per text (``labels``) the cosine between the centroid
    of its tokens at depth l and at depth L in that 2-D view."""
    view = token_pca(acts, fit_depth=acts.n_layers)
    text_of = acts.text_index()[acts.word_mask]
    centroids = np.stack([view["coords"][:, text_of == t].mean(axis=1) for t in range(acts.n_texts)])  # [N, L + 1, 2]
    return {"final_pca_projection": view,
            "semantic_assembly": dict(zip(labels, geometry.pair_cosine(centroids, centroids[:, -1:]).tolist()))}


# --------------------------------------------------------------------------- the mean pool's dimensions

def travel(acts: Activations) -> Metrics:
    """How far a sentence's mean pool travels: cos(m_0(s), m_L(s)) per sentence, its mean
    absolute value (per sentence under ``per_unit``), and mean_s cos(m_l(s), m_L(s)) per depth."""
    pools = acts.mean_pool("all")
    to_final = geometry.pair_cosine(pools, pools[-1:])  # [L + 1, N]
    first = to_final[0]
    return {"meanpool_first_last_cosine": first, "meanpool_first_last_abs": np.abs(first).mean(),
            "meanpool_to_final": to_final.mean(axis=1), "per_unit": {"meanpool_first_last_abs": np.abs(first)}}


def _peak_share(writes: np.ndarray, weights: np.ndarray, tail: float) -> np.ndarray:
    """For each row of sentence weights [B, N], the share of dimensions whose largest weighted
    mean write (writes [N, D, L]) falls in the last ``tail`` of the L blocks → [B]. The first
    block of largest write is in the tail exactly when the tail's largest write is larger than
    every earlier block's."""
    n, D, L = writes.shape
    late = np.arange(1, L + 1) / L > 1 - tail + 1e-9
    mean = (weights.astype(np.float32) @ writes.reshape(n, -1)).reshape(len(weights), D, L)
    return (mean[..., late].max(axis=-1) > mean[..., ~late].max(axis=-1, initial=-np.inf)).mean(axis=1)


def peak_writes(acts: Activations, tail: float = TAIL, resamples: int = RESAMPLES, seed: int = 0) -> Metrics:
    """Each dimension's peak-write block, their histogram over blocks 1..L (counts, and shares
    of the D dimensions), the share peaking in the last ``tail`` of the blocks, the shares if
    every block were equally likely (``peak_write_uniform``), and that share on ``resamples``
    bootstrap resamples of the sentences (each dimension's peak found again on each)."""
    pools = acts.mean_pool("all")
    peaks = geometry.peak_write(pools)
    hist = geometry.depth_histogram(peaks, acts.n_layers)
    writes = np.abs(np.diff(pools, axis=0)).transpose(1, 2, 0).astype(np.float32)  # [N, D, L], contiguous
    rng, n = np.random.default_rng([seed, 1]), acts.n_texts
    draws = [_peak_share(writes, np.bincount((rng.integers(0, n, (b, n)) + n * np.arange(b)[:, None]).ravel(),
                                            minlength=b * n).reshape(b, n) / n, tail)
             for b in np.diff(np.r_[0:resamples:2000, resamples])]
    late = np.arange(1, acts.n_layers + 1) / acts.n_layers > 1 - tail + 1e-9
    return {"peak_write_depth": peaks, "peak_write_hist": hist, "peak_write_share": hist / len(peaks),
            "peak_write_last_two": hist[late].sum() / len(peaks),
            "peak_write_uniform": np.full(acts.n_layers, 1 / acts.n_layers),
            "resampled": {"peak_write_last_two": np.concatenate(draws), "n_sentences": n}}


def dimension_correlation(acts: Activations, threshold: float = 0.7) -> Metrics:
    """Per dimension, Pearson r over the sentences of m_0(s)_d and m_L(s)_d, and its summary;
    per sentence (``per_unit``) the centred pools x = m_0(s) − mean and y = m_L(s) − mean [N, D],
    whose moments x, y, x², y², xy let a resample of the sentences rebuild every r."""
    pools = acts.mean_pool("all")
    r = geometry.dim_correlation(pools[0], pools[-1])
    x, y = (geometry.centred(p) for p in (pools[0], pools[-1]))
    return {"dim_corr_first_last": {"r": r, **geometry.correlation_summary(r, threshold=threshold)},
            "per_unit": {"dim_corr_first_last.x": x, "dim_corr_first_last.y": y}}


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
    means over texts are the B and W of ``geometry.separability_ratio`` (C the set's mean)."""
    centroids = np.stack([s.astype(np.float64).mean(axis=1) for s in stacks])  # [N, L + 1, D]
    between = ((centroids - centroids.mean(axis=0)) ** 2).sum(-1)
    within = np.stack([((s - c[:, None]) ** 2).sum(-1).mean(axis=1) for s, c in zip(stacks, centroids)])
    return between, within


def separability_units(acts: Activations) -> dict[str, np.ndarray]:
    """Per sentence s, ``between`` ‖c_s − C‖² and ``within`` W_s, each [N, L + 1]: the plug-in
    terms of B / W with C held at the set's mean (:func:`separability_parts`)."""
    between, within = separability_parts([s.astype(np.float64) for s in acts.word_states()])
    return {"between": between, "within": within}


def separability(acts: Activations) -> Metrics:
    """Between-sentence spread over within-sentence scatter of the word tokens, per depth. B is a
    pairwise statistic, B = (N − 1)/N · mean_{s≠t} ‖c_s − c_t‖² / 2, so ``per_unit`` holds its
    kernel [N, N, L + 1] (resampled as a U-statistic) next to W_s [N, L + 1]."""
    stacks = acts.word_states()
    centroids = np.stack([s.astype(np.float64).mean(axis=1) for s in stacks])  # [N, L + 1, D]
    _, within = separability_parts(stacks)
    squared = (centroids ** 2).sum(-1)
    distances = squared[:, None] + squared[None, :] - 2 * np.einsum("sld,tld->stl", centroids, centroids)
    n = len(stacks)
    kernel = (n - 1) / n * np.maximum(distances, 0.0) / 2
    kernel[np.arange(n), np.arange(n)] = 0.0
    return {"separability_ratio": geometry.separability_ratio(stacks),
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
    pc1 = np.stack([_pc1_alignment(s) for s in acts.word_states()])
    return {"cls_mean_alignment": per_sentence.mean(axis=0), "pc1_mean_alignment": pc1.mean(axis=0),
            "per_unit": {"cls_mean_alignment": per_sentence, "pc1_mean_alignment": pc1}}


def _pc1_alignment(stack: np.ndarray) -> np.ndarray:
    """|cos(PC1, w)| at every depth of one text's tokens [L + 1, n, D]: PC1 = X_cᵀ v / ‖X_cᵀ v‖ with v
    the top eigenvector of the centred tokens' Gram matrix X_c X_cᵀ [n, n] (the same axis as an
    SVD of X_c, found in n × n instead of n × D), w the mean of the tokens."""
    x = stack.astype(np.float64)
    centred = x - x.mean(axis=1, keepdims=True)
    _, vectors = np.linalg.eigh(centred @ centred.transpose(0, 2, 1))
    axis = np.einsum("lnd,ln->ld", centred, vectors[..., -1])
    return np.abs(geometry.pair_cosine(axis, x.mean(axis=1)))


# --------------------------------------------------------------------------- the dip's mechanism

def _attention_norm(block: torch.nn.Module) -> torch.nn.Module:
    """The LayerNorm that closes a post-norm block's attention sublayer (BERT's
    ``attention.output.LayerNorm``, MPNet's ``attention.LayerNorm``): the first one inside
    ``block.attention``."""
    found = next((m for m in getattr(block, "attention", torch.nn.Module()).modules()
                  if isinstance(m, torch.nn.LayerNorm)), None)
    if found is None:
        raise NotApplicableError("the split of a block into its attention and feed-forward sublayers",
                                 type(block).__name__, "a post-norm block whose attention module ends in a LayerNorm")
    return found


def after_attention(loaded: LoadedModel, texts: Sequence[str], batch_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Every token's state at every depth and after each block's attention sublayer, from one
    forward pass with the capture sites ``embed``, ``blocks.{l}.resid_post`` and
    ``blocks.{l}.attn.head_out``: in a post-norm block, a_l = LN₁(h_{l−1} + O(head_out_l)), O the
    attention output projection, and h_l = LN₂(a_l + FFN(a_l)). → (hidden [L + 1, n_tokens, D],
    after attention [L, n_tokens, D]), texts in order, padding dropped."""
    model, tokenizer = loaded.model, loaded.tokenizer
    family, L = architectures.family_of(model), model.config.num_hidden_layers
    blocks = family.blocks_of(model)
    names = ["embed"] + [f"blocks.{l}.{site}" for l in range(L) for site in ("resid_post", "attn.head_out")]
    ids = tokenizer(list(texts), truncation=True, max_length=loaded.info.max_seq_length)["input_ids"]
    hidden, mid = [], []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        batch = tokenizer.pad({"input_ids": chunk}, padding_side="right", return_tensors="pt")
        _, cache = run_with_cache(model, {k: v.to(loaded.device) for k, v in batch.items()}, names)
        states = [cache["embed"]] + [cache[f"blocks.{l}.resid_post"] for l in range(L)]
        with torch.inference_mode():
            after = [_attention_norm(blocks[l])(states[l].to(loaded.device) + family.head_out_of(blocks[l])(
                cache[f"blocks.{l}.attn.head_out"].flatten(2).to(loaded.device))).cpu() for l in range(L)]
        states, after = torch.stack(states).float().numpy(), torch.stack(after).float().numpy()  # [L (+1), B, T, D]
        for row, text_ids in enumerate(chunk):
            hidden.append(states[:, row, :len(text_ids)])
            mid.append(after[:, row, :len(text_ids)])
    return np.concatenate(hidden, axis=1), np.concatenate(mid, axis=1)


def word_classes(acts: Activations) -> np.ndarray:
    """For every token: "function" for a piece of an alphabetic stop word (scikit-learn's English
    list: the, of, after, …), "content" for a piece of any other alphabetic word, "other" for
    punctuation, numbers and special tokens."""
    kinds = np.full(len(acts.tokens), "other", dtype=object)
    for i in range(acts.n_texts):
        rows = np.arange(acts.offsets[i], acts.offsets[i + 1])
        for word in np.unique(acts.word_ids[rows][acts.word_ids[rows] >= 0]):
            mine = rows[acts.word_ids[rows] == word]
            text = "".join(acts.tokens[j].removeprefix("##") for j in mine).lower()
            if text.isalpha():
                kinds[mine] = "function" if text in ENGLISH_STOP_WORDS else "content"
    return kinds


def _class_cosine(stack: np.ndarray, kinds: np.ndarray, a: str, b: str) -> np.ndarray | None:
    """Mean cosine over pairs (i of kind a, j of kind b, i ≠ j) of one text's tokens per depth, or
    None when the text has no such pair."""
    x, y = np.flatnonzero(kinds == a), np.flatnonzero(kinds == b)
    if len(x) == 0 or len(y) == 0 or (a == b and len(x) < 2):
        return None
    unit = geometry.unit_rows(stack)
    cos = np.einsum("lid,ljd->lij", unit[:, x], unit[:, y])
    if a == b:
        return (cos.sum(axis=(1, 2)) - len(x)) / (len(x) * (len(x) - 1))
    return cos.mean(axis=(1, 2))


def dip(acts: Activations, sublayers: tuple[np.ndarray, np.ndarray] | None) -> Metrics:
    """The dip's mechanism: the change in within-sentence cosine across each block's attention
    sublayer (h_{l−1} → a_l) and feed-forward sublayer (a_l → h_l), means over sentences; the
    within-sentence cosine among content words, among function words and between the two
    (:func:`word_classes`), per depth; and the block where the within-sentence cosine falls most.
    ``sublayers`` is :func:`after_attention` of the sentences (None: a model not split)."""
    kinds = word_classes(acts)
    by_class = {}
    for name, (a, b) in {"content": ("content", "content"), "function": ("function", "function"),
                         "mixed": ("content", "function")}.items():
        found = [c for i in range(acts.n_texts)
                 if (c := _class_cosine(acts.hidden[:, acts.rows(i)].astype(np.float64), kinds[acts.rows(i)], a, b))
                 is not None]
        by_class[name] = np.mean(found, axis=0) if found else None
    within = collapse(acts)["intra_sentence_cosine"]
    found = {"by_word_class": by_class, "steepest_fall_block": int(np.argmin(np.diff(within))) + 1,
             "word_class_counts": {kind: int(np.sum((kinds == kind) & acts.word_mask))
                                   for kind in ("content", "function")}}
    if sublayers is None:
        return {"dip": {**found, "attention_change": None, "feed_forward_change": None}}
    hidden, after = sublayers
    stacks = [np.concatenate([hidden[:-1, acts.rows(i)], after[:, acts.rows(i)], hidden[1:, acts.rows(i)]])
              [:, acts.word_mask[acts.rows(i)]] for i in range(acts.n_texts)]
    L = acts.n_layers
    start, middle, end = (np.mean([_within([s[part * L:(part + 1) * L]])[0] for s in stacks], axis=0)
                          for part in range(3))
    return {"dip": {**found, "attention_change": middle - start, "feed_forward_change": end - middle}}


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
