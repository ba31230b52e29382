"""Anisotropy and the cone (chapter 3; definitions on the book's Methods page, "Inside the cone"):
how much a set of vectors shares one direction, on every trained model the chapter runs and its
random-init controls.

Measurements (X: [n, D] vectors, S: [L + 1, n, D] the same n texts at every depth, A = anisotropy):

    anisotropy(X)            = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)   (geometry.mean_pairwise_cosine)
    cosine_kernel(S)         = K[s, t, l] = cos(S[l, s], S[l, t]), K[s, s, ·] = 0      → [n, n, L + 1]
                               A_l is the mean of K[·, ·, l] over pairs s ≠ t: a U-statistic
    token_kernels(H, owner)  = T[s, t, l] = Σ_{i∈s, j∈t} cos(h_il, h_jl) = Σ_s·Σ_t with Σ_s the sum of
                               text s's unit token states, and C[s, t] = n_s n_t (both 0 for s = t)
    cross_text_anisotropy    = Σ_{s≠t} T[s, t, l] / Σ_{s≠t} C[s, t]: the mean cosine of two tokens
                               of different texts, the token-level anisotropy       → [L + 1]
    final_step_share(x)      = (x_{L−1} − x_L) / (max_l x_l − x_L)
    cone axis                = geometry.principal_axis(X): PC1 of the centred rows           → [D]
    mean_direction(X)        = x̄ / ‖x̄‖, where the cone points                              → [D]
    axis_scores(X, a)        = (x_i − x̄) · â, the PCA score of each row                    → [n]
    explained_variance_ratio = Σ_i ((x_i − x̄) · â)² / Σ_i ‖x_i − x̄‖²
    axis_cosines({m: a_m})   = |cos(a_m, a_m')| for every pair of equal width, None otherwise
    chance_axis_cosine(D)    = √(2 / (π D)), E|cos| of two random directions of R^D (large D)
    vocabulary_projection    = E â, the raw word-embedding rows on an axis      E: [V, D] → [V]
    correlation_ratio(y, g)  = η² = Σ_k n_k (ȳ_k − ȳ)² / Σ_i (y_i − ȳ)²        g: labels
    rank_correlation(x, y)   = Spearman's ρ (scipy), Pearson's r of the ranks (ties averaged)

**Sampling units** (``per_unit``, for the claims' bootstrap intervals, ``book.claims.samples``).
The unit is the sentence. Anisotropy is a mean over *pairs* of sentences, so its per-unit values
are kernels [N, N, …] — a resample recomputes the mean over the pairs of the sentences it drew
(``{pairwise: key}``); resampling each sentence's mean cosine with the others instead would
halve the standard error. Token-level anisotropy is a ratio of two such kernels, the cosines of
two texts' tokens over the number of token pairs, so that the tokens of one sentence travel
with it. The random-init controls give one kernel per seed, [S, N, N, …], on the same
sentences (``{seeds: {pairwise: key}}``): their difference from the trained model is resampled
sentence by sentence and seed by seed.

**A chapter run** (:func:`run_models`, then :func:`measure` per trained model) gives one metrics
dict per trained model (N sentences, a model of L blocks and width D, S control seeds):

    cone_formation(pools, "pairs")                 Experiment 1: when does the cone form?
      anisotropy, anisotropy_rise (A_l − A_0) [L + 1]; anisotropy_peak_depth; final_step_share;
      per_unit: anisotropy.pairs, anisotropy_rise.pairs [N, N, L + 1]
    control_formation(pools, controls)             the random-init controls, the null of Experiment 1
      controls {anisotropy [S, L + 1], anisotropy_mean [L + 1], final_anisotropy [S]};
      random_control {anisotropy_excess [L + 1]: the controls' mean minus the model's};
      per_unit: controls.anisotropy.pairs, controls.anisotropy_rise.pairs [S, N, N, L + 1]
      (None values and no per-unit samples without controls)
    pooling_gap(pools, acts, token_set)            Experiment 2: how much does pooling make?
      token_anisotropy (of the chapter's token set), anisotropy_gap (sentence − token),
      pooling_share (gap / sentence), token_anisotropy_word and token_anisotropy_all (each token
      set), token_set_effect ((all − word) / gap) [L + 1]; n_tokens; per_unit: for the chapter's
      set, word tokens and all tokens, <key>.pairs [N, N, L + 1] and <key>.counts [N, N, 1] with
      <key> token_anisotropy, token_anisotropy_word, token_anisotropy_all
    cone_axis_reading(final, topics, lengths, sentences, k, seed)   Experiment 3: what the axis encodes
      cone_axis, mean_direction [D]; cone_axis_vs_mean_direction; cone_axis_explained_variance;
      mean_direction_explained_variance; mean_cos_to_mean_direction; mean_abs_cos_to_cone_axis;
      cone_axis_scores [N]; cone_extremes {high, low: k × {sentence, topic, score}};
      cone_end_topics; cone_axis_topic_eta2 and its permutation draws
      cone_axis_topic_eta2_permutations [P] (None with one topic); cone_axis_length_spearman;
      per_unit: cone_axis_topic_eta2.between and .total [N], cone_axis_length.x, .y, .xx, .yy,
      .xy [N, 1] (the ranks' moments: Spearman's ρ rebuilt in each resample)
    vocab_on_cone_axis = vocabulary_on_axis(model, axis, k, common, listed)
      {top, bottom: k × {token, id, projection}, common_word_ranks, common_in_top,
       common_in_top_each, common_share_in_top, n_tokens, post_tokens: the post's L0 tokens
       {token, in_vocabulary, rank, projection}}
    rotation(final, controls)                      Experiment 4 offline: trained against random-init
      {axis_cos [S] (model vs each control), axis_cos_over_q99 [S] and its mean,
       controls_axis_cos [S(S−1)/2] (controls among themselves), chance, chance_q99 (99 %
       quantile of |cos| of random directions),
       centering {model_by_control [S], control_by_model [S]}: removal shares of one model's
       mean on the other's embeddings}; None without controls
    axis_comparison(finals, post)                  Experiment 4 as published (every model run)
      cone_axis_cosine {model: {model: |cos| or None}}; cone_axis_family {within_min,
      to_outsider_max} (None without the post's models); models_final_anisotropy;
      chance_axis_cosine; per_unit: cone_axis_family.within_min and .to_outsider_max [D]
    studies.centering.topic_measurements           is a centering vector corpus-specific?

Cosines are on raw vectors (no centring, no normalisation first), as everywhere in the book; a
zero vector has no direction and raises ValueError instead of giving NaN. Nothing here mutates
its inputs. PC1 of *centred* vectors is the direction of largest spread around the mean; the
mean direction is where the cone points. The two need not agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core import corpora
from ..core.geometry import (
    centred,
    cosine,
    cosine_matrix,
    label_rows,
    mean_pairwise_cosine,
    principal_axis,
    row_mean_cosine,
    unit_rows,
)
from ..core.models import LoadedModel, ModelInfo
from . import centering

anisotropy = mean_pairwise_cosine
"""Anisotropy *is* the mean pairwise cosine: one implementation, in ``core.geometry``."""

PERMUTATIONS = 200
"""Shuffles of the topic labels in a permutation null (η² of the cone axis, the centering test)."""

TOKEN_SETS = ("word", "all")


# --------------------------------------------------------------------------- the chapter's sentences

def chapter_corpus(name: str = "project", n: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The chapter's sentences: all of corpus ``name`` when ``n`` is None, else ``n`` of them
    spread evenly over its topics — each topic's rows shuffled with a generator seeded by
    ``seed``, then taken in turn from each topic — kept in corpus order. A corpus with one topic
    gives a seeded uniform sample."""
    frame = corpora.load_corpus(name)
    if n is None or n >= len(frame):
        return frame
    rng = np.random.default_rng(seed)
    order = [rng.permutation(rows) for rows in label_rows(frame["topic"].tolist()).values()]
    turns = sorted(((rank, k, row) for k, rows in enumerate(order) for rank, row in enumerate(rows)))
    keep = sorted(row for _, _, row in turns[:n])
    return frame.iloc[keep].reset_index(drop=True)


@dataclass
class Run:
    """One trained model's forward pass over the chapter's sentences (``acts``), and the mean
    pools [L + 1, N, D] of its random-init controls on the same sentences, by control id."""

    model: LoadedModel
    acts: Any
    controls: dict[str, np.ndarray]

    @cached_property
    def pools(self) -> np.ndarray:
        """[L + 1, N, D]: the model's mean pools."""
        return self.acts.mean_pool("all")


def run_models(encoders: Iterable[LoadedModel], extract: Callable[..., Any], texts: list[str]) -> dict[str, Run]:
    """Run every model of ``encoders`` (trained models, then random-init controls, as
    ``Chapter.compared`` yields them) on ``texts`` with ``extract(texts, model, source=...)``:
    one :class:`Run` per trained model, with its controls' mean pools."""
    runs: dict[str, Run] = {}
    for encoder in encoders:
        record = extract(texts, encoder, source="corpus")
        if encoder.info.source == "control":
            runs[control_of(encoder.info, runs)].controls[encoder.info.id] = record.mean_pool("all")
        else:
            runs[encoder.info.id] = Run(encoder, record, {})
    return runs


def control_of(info: ModelInfo, trained: Iterable[str]) -> str:
    """The trained model whose random-init control ``info`` is (its id begins the control's)."""
    found = [name for name in trained if info.id.startswith(f"{name} [")]
    if not found:
        raise ValueError(f"{info.id!r} is not the control of any model run before it")
    return found[0]


# --------------------------------------------------------------------------- pairwise kernels

def cosine_kernel(states: np.ndarray) -> np.ndarray:
    """K [n, n, L + 1]: K[s, t, l] = cos(states[l, s], states[l, t]) for s ≠ t and 0 on the
    diagonal, from ``states`` [L + 1, n, D]. The mean over s ≠ t of K[·, ·, l] is the anisotropy."""
    unit = unit_rows(np.asarray(states, dtype=np.float64))
    kernel = np.einsum("lsd,ltd->stl", unit, unit)
    kernel[np.arange(unit.shape[1]), np.arange(unit.shape[1])] = 0.0
    return kernel


def pair_mean(kernel: np.ndarray) -> np.ndarray:
    """The mean of a kernel [n, n, …] over ordered pairs s ≠ t (its diagonal left out)."""
    n = kernel.shape[0]
    off = kernel.sum(axis=(0, 1)) - np.einsum("ss...->...", kernel)
    return off / (n * (n - 1))


def token_kernels(hidden: np.ndarray, owners: np.ndarray, n_texts: int) -> tuple[np.ndarray, np.ndarray]:
    """(T [N, N, L + 1], C [N, N, 1]) of the token states ``hidden`` [L + 1, n_tok, D], token i
    belonging to text ``owners[i]``: T[s, t, l] = Σ_{i∈s, j∈t} cos(h_il, h_jl) = Σ_s·Σ_t, with Σ_s the
    sum of text s's unit token states at depth l, and C[s, t] = n_s n_t; both 0 for s = t."""
    unit = unit_rows(np.asarray(hidden, dtype=np.float64))
    owners = np.asarray(owners)
    sums = np.zeros((unit.shape[0], n_texts, unit.shape[2]))
    np.add.at(sums, (slice(None), owners), unit)
    pairs = np.einsum("lsd,ltd->stl", sums, sums)
    counts = np.bincount(owners, minlength=n_texts).astype(np.float64)
    products = np.outer(counts, counts)[:, :, None]
    diagonal = np.arange(n_texts)
    pairs[diagonal, diagonal], products[diagonal, diagonal] = 0.0, 0.0
    return pairs, products


def cross_text_anisotropy(hidden: np.ndarray, owners: np.ndarray, n_texts: int) -> np.ndarray:
    """[L + 1]: the mean cosine over pairs of tokens of different texts (:func:`token_kernels`)."""
    pairs, products = token_kernels(hidden, owners, n_texts)
    return pairs.sum(axis=(0, 1)) / products.sum()


# --------------------------------------------------------------------------- Experiment 1

def anisotropy_per_depth(states: np.ndarray) -> np.ndarray:
    """[L + 1]: ``anisotropy(states[l])`` at every depth of ``states`` ([L + 1, n, D])."""
    return np.array([anisotropy(layer) for layer in np.asarray(states)])


def row_means_per_depth(states: np.ndarray) -> np.ndarray:
    """[n, L + 1]: each row's mean cosine with the other rows at every depth of ``states``
    ([L + 1, n, D]); the mean over rows is :func:`anisotropy_per_depth`."""
    return np.stack([row_mean_cosine(layer) for layer in np.asarray(states)], axis=1)


def final_step_share(series: np.ndarray) -> float:
    """(x_{L−1} − x_L) / (max_l x_l − x_L): the share of the fall from the peak of a per-depth
    series that happens in its last step (0 when the final depth is the peak: nothing falls)."""
    series = np.asarray(series, dtype=np.float64)
    if len(series) < 2:
        raise ValueError(f"a final step needs a series of at least 2 depths; got {len(series)}")
    fall = series.max() - series[-1]
    return 0.0 if fall == 0 else float((series[-2] - series[-1]) / fall)


def nearest_depth(relative: float, n_layers: int) -> int:
    """The depth l of a model of ``n_layers`` blocks nearest relative depth r = l / L."""
    return int(round(relative * n_layers))


def cone_formation(pools: np.ndarray, units: str = "rows") -> dict:
    """Experiment 1 on mean pools [L + 1, N, D]: sentence-level anisotropy at every depth, its
    rise from depth 0, the depth of its peak and the share of the fall from the peak made by the
    last step. ``units``: ``"pairs"``, the kernels of :func:`cosine_kernel` (chapter 3's claims
    resample these), or ``"rows"``, each sentence's mean cosine with the others [N, L + 1] (what
    chapters 7 and 8 resample; as independent units they understate a pairwise statistic's
    standard error)."""
    if units not in ("rows", "pairs"):
        raise ValueError(f"units must be 'rows' or 'pairs'; got {units!r}")
    series = anisotropy_per_depth(pools)
    if units == "pairs":
        kernel = cosine_kernel(pools)
        per_unit = {"anisotropy.pairs": kernel, "anisotropy_rise.pairs": kernel - kernel[..., :1]}
    else:
        rows = row_means_per_depth(pools)
        per_unit = {"anisotropy": rows, "anisotropy_rise": rows - rows[:, :1]}
    return {"anisotropy": series, "final_step_share": final_step_share(series),
            "anisotropy_peak_depth": int(np.argmax(series)), "anisotropy_rise": series - series[0],
            "per_unit": per_unit}


def control_formation(pools: np.ndarray, controls: Sequence[np.ndarray]) -> dict:
    """The random-init controls' anisotropy per depth on the same sentences as ``pools``
    ([L + 1, N, D]; ``controls``: one such array per seed), their mean's excess over the model,
    and their kernels, one per seed (module docstring). None values without controls."""
    if not controls:
        return {"controls": {"anisotropy": None, "anisotropy_mean": None, "final_anisotropy": None},
                "random_control": {"anisotropy_excess": None}}
    curves = np.stack([anisotropy_per_depth(c) for c in controls])
    kernels = np.stack([cosine_kernel(c) for c in controls])
    return {"controls": {"anisotropy": curves, "anisotropy_mean": curves.mean(axis=0), "final_anisotropy": curves[:, -1]},
            "random_control": {"anisotropy_excess": curves.mean(axis=0) - anisotropy_per_depth(pools)},
            "per_unit": {"controls.anisotropy.pairs": kernels,
                         "controls.anisotropy_rise.pairs": kernels - kernels[..., :1]}}


# --------------------------------------------------------------------------- Experiment 2

def token_rows(acts, token_set: str = "word") -> np.ndarray:
    """The token rows of an ``Activations`` record that token-level anisotropy uses: word tokens
    (``"word"``, the book's convention) or every real token, [CLS] and [SEP] included (``"all"``)."""
    if token_set not in TOKEN_SETS:
        raise ValueError(f"token_set must be 'word' or 'all'; got {token_set!r}")
    keep = acts.word_mask if token_set == "word" else acts.word_mask | acts.special_mask
    return np.flatnonzero(np.asarray(keep, dtype=bool))


def pooling_gap(pools: np.ndarray, acts, token_set: str = "word") -> dict:
    """Experiment 2: token-level anisotropy (the mean cosine of two tokens of different
    sentences, over every token of ``token_set``), the gap that mean pooling adds (sentence −
    token) and the gap's share of the mean pools' anisotropy, with the token kernels; and the
    effect of counting [CLS] and [SEP]: (A_all − A_word) / gap, per depth."""
    sentence, kernels = anisotropy_per_depth(pools), {}
    for name in TOKEN_SETS:
        rows = token_rows(acts, name)
        kernels[name] = token_kernels(acts.hidden[:, rows], acts.text_index()[rows], acts.n_texts)
    by_set = {name: pairs.sum(axis=(0, 1)) / products.sum() for name, (pairs, products) in kernels.items()}
    token, gap = by_set[token_set], sentence - by_set[token_set]
    return {"token_anisotropy": token, "anisotropy_gap": gap, "pooling_share": gap / sentence,
            "n_tokens": len(token_rows(acts, token_set)),
            "token_anisotropy_word": by_set["word"], "token_anisotropy_all": by_set["all"],
            "token_set_effect": (by_set["all"] - by_set["word"]) / gap,
            "per_unit": {"token_anisotropy.pairs": kernels[token_set][0], "token_anisotropy.counts": kernels[token_set][1],
                         "token_anisotropy_word.pairs": kernels["word"][0], "token_anisotropy_word.counts": kernels["word"][1],
                         "token_anisotropy_all.pairs": kernels["all"][0], "token_anisotropy_all.counts": kernels["all"][1]}}


# --------------------------------------------------------------------------- Experiment 3: the cone axis

def explained_variance_ratio(x: np.ndarray, axis: np.ndarray) -> float:
    """Share of the total variance of the centred rows of ``x`` along the unit vector ``axis``."""
    centred_x = centred(x)
    total = float(np.sum(centred_x ** 2))
    if total == 0:
        raise ValueError("explained variance is undefined: all vectors are identical")
    return float(np.sum((centred_x @ unit_rows(axis)) ** 2) / total)


def mean_direction(x: np.ndarray) -> np.ndarray:
    """The unit vector along the mean of the rows of ``x``: where the cone points."""
    return unit_rows(np.asarray(x, dtype=np.float64).mean(axis=0), "mean vector")


def axis_scores(x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """PCA scores [n]: each centred row of ``x`` projected on the unit vector ``axis``."""
    return centred(x) @ unit_rows(axis, "axis")


def extremes(scores: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``k`` highest scores (highest first) and the ``k`` lowest (lowest first);
    ties keep input order."""
    scores = np.asarray(scores, dtype=np.float64)
    if not 1 <= k <= len(scores):
        raise ValueError(f"k must be in [1, {len(scores)}]; got {k}")
    return np.argsort(-scores, kind="stable")[:k], np.argsort(scores, kind="stable")[:k]


def end_topics(scores: np.ndarray, topics: Sequence[str], k: int) -> dict:
    """The most frequent topic among the k highest and among the k lowest ``scores`` (k at most
    the number of scores): ``{side: {"topic", "sentences": its count, "of": k}}``."""
    k = min(k, len(scores))
    labels = pd.Series(list(topics))
    counts = {side: labels.iloc[rows].value_counts() for side, rows in zip(("high", "low"), extremes(scores, k))}
    return {side: {"topic": c.index[0], "sentences": int(c.iloc[0]), "of": k} for side, c in counts.items()}


def word_counts(acts) -> np.ndarray:
    """[N]: the number of word tokens of each text of an ``Activations`` record."""
    return np.add.reduceat(acts.word_mask.astype(int), acts.offsets[:-1])


def cone_axis_reading(final: np.ndarray, topics: Sequence[str], lengths: Sequence[int],
                      sentences: Sequence[str], k: int, seed: int = 0, permutations: int = PERMUTATIONS,
                      axis: np.ndarray | None = None) -> dict:
    """Experiment 3 on final-depth embeddings ``final`` ([N, D]): the cone axis (PC1, or ``axis``
    when already computed), the mean direction and how they relate, the ``k`` sentences at each
    end of the axis, and what the axis separates: η² of ``topics`` (None with a single topic)
    with its distribution under ``permutations`` seeded shuffles of the topics, and Spearman's ρ
    with ``lengths``, each with its per-sentence parts."""
    axis = principal_axis(final) if axis is None else np.asarray(axis, dtype=np.float64)
    direction = mean_direction(final)
    scores = axis_scores(final, axis)
    ends = dict(zip(("high", "low"), extremes(scores, k)))
    several = len(set(topics)) > 1
    per_unit = {f"cone_axis_length.{name}": value for name, value in rank_moments(scores, lengths).items()}
    if several:
        per_unit.update(zip(("cone_axis_topic_eta2.between", "cone_axis_topic_eta2.total"),
                            correlation_ratio_parts(scores, topics)))
    return {
        "cone_axis": axis, "mean_direction": direction, "cone_axis_vs_mean_direction": cosine(axis, direction),
        "cone_axis_explained_variance": explained_variance_ratio(final, axis),
        "mean_direction_explained_variance": explained_variance_ratio(final, direction),
        "mean_cos_to_mean_direction": float(cosine_matrix(final, direction[None]).mean()),
        "mean_abs_cos_to_cone_axis": float(np.abs(cosine_matrix(final, axis[None])).mean()),
        "cone_axis_scores": scores,
        "cone_extremes": {side: [{"sentence": sentences[i], "topic": topics[i], "score": float(scores[i])} for i in rows]
                          for side, rows in ends.items()},
        "cone_end_topics": end_topics(scores, topics, k),
        "cone_axis_topic_eta2": correlation_ratio(scores, topics) if several else None,
        "cone_axis_topic_eta2_permutations": permuted_eta2_draws(scores, topics, permutations, seed) if several else None,
        "cone_axis_length_spearman": rank_correlation(scores, lengths), "per_unit": per_unit,
    }


def vocabulary_projection(embeddings: np.ndarray, axis: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of a word-embedding matrix ([V, D]) projected on the unit vector ``axis``:
    ``(projections [V], top k row ids, bottom k row ids)`` (raw dot products, not centred)."""
    projections = np.asarray(embeddings, dtype=np.float64) @ unit_rows(axis, "axis")
    top, bottom = extremes(projections, k)
    return projections, top, bottom


def vocabulary_ranks(projections: np.ndarray, ids: Sequence[int]) -> list[int]:
    """1-based rank from the top of each row id in ``projections`` (rank 1 = highest)."""
    projections = np.asarray(projections, dtype=np.float64)
    return [int(np.sum(projections > projections[i])) + 1 for i in ids]


def vocabulary_reading(embeddings: np.ndarray, axis: np.ndarray, k: int, common_ids: Mapping[str, int],
                       names: Callable[[list[int]], list[str]], listed_ids: Mapping[str, int | None] | None = None) -> dict:
    """The ``k`` vocabulary rows at each end of ``axis`` (``names`` maps row ids to tokens), the
    rank of each common word (``common_ids``: word → row id), whether each is in the top k
    (1 or 0, in the order of ``common_ids``), how many are and what share of them; and where each
    token of ``listed_ids`` (token → row id, None when not in the vocabulary) ranks."""
    projection, top, bottom = vocabulary_projection(embeddings, axis, k)
    ranks = dict(zip(common_ids, vocabulary_ranks(projection, list(common_ids.values()))))
    in_top = [int(rank <= k) for rank in ranks.values()]
    listed = [{"token": token, "in_vocabulary": i is not None,
               "rank": vocabulary_ranks(projection, [i])[0] if i is not None else None,
               "projection": float(projection[i]) if i is not None else None}
              for token, i in (listed_ids or {}).items()]

    def rows(ids: np.ndarray) -> list[dict]:
        return [{"token": t, "id": int(i), "projection": float(projection[i])} for t, i in zip(names(ids.tolist()), ids)]

    return {"top": rows(top), "bottom": rows(bottom), "common_word_ranks": ranks, "common_in_top": sum(in_top),
            "n_tokens": len(projection), "common_in_top_each": in_top,
            "common_share_in_top": sum(in_top) / len(in_top) if in_top else None, "post_tokens": listed}


def vocabulary_on_axis(loaded: LoadedModel, axis: np.ndarray, k: int, common_words: Sequence[str],
                       listed: Sequence[str] = ()) -> dict:
    """:func:`vocabulary_reading` of ``loaded``'s input word embeddings (the raw token vectors,
    before position embeddings and LayerNorm), tokens named by its tokenizer; ``listed`` are
    tokens to rank (the post's), each looked up in the vocabulary as written."""
    embeddings = loaded.model.get_input_embeddings().weight.detach().cpu().numpy()
    tokenizer = loaded.tokenizer
    ids = tokenizer.convert_tokens_to_ids(list(common_words))
    vocabulary = tokenizer.get_vocab()
    return vocabulary_reading(embeddings, axis, k, dict(zip(common_words, ids)), tokenizer.convert_ids_to_tokens,
                              {token: vocabulary.get(token) for token in listed})


# --------------------------------------------------------------------------- Experiment 4: across models

def axis_cosines(axes: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """|cos| between every pair of axes (the sign of a principal axis is arbitrary); None where
    the widths differ, so the pair is not comparable."""
    return {a: {b: abs(cosine(u, v)) if len(u) == len(v) else None for b, v in axes.items()}
            for a, u in axes.items()}


def axis_products(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """[D]: D · s · û_d v̂_d with s = sign(û · v̂), per-coordinate terms whose mean is |cos(u, v)|:
    the per-unit values of an axis |cos| resampled over dimensions."""
    terms = unit_rows(u, "u") * unit_rows(v, "v")
    return len(terms) * np.sign(terms.sum()) * terms


def family_pairs(matrix: Mapping[str, Mapping[str, float | None]], family: Sequence[str],
                 outsider: str) -> dict[str, tuple[str, str] | None]:
    """From an ``axis_cosines`` matrix: ``within_min``, the pair of ``family`` members with the
    smallest |cos|, and ``to_outsider_max``, the (member, ``outsider``) pair with the largest;
    each None unless every model it needs is in the matrix and comparable."""
    def pick(pairs: list[tuple[str, str]], choose: Callable) -> tuple[str, str] | None:
        values = [matrix.get(a, {}).get(b) for a, b in pairs]
        return choose(zip(values, pairs))[1] if pairs and None not in values else None

    within = [(a, b) for i, a in enumerate(family) for b in family[i + 1:]]
    return {"within_min": pick(within, min), "to_outsider_max": pick([(a, outsider) for a in family], max)}


def chance_axis_cosine(width: int) -> float:
    """E|cos| of two random directions in R^D, ≈ √(2 / (π D)) for large D."""
    return float(np.sqrt(2 / (np.pi * width)))


def chance_axis_quantile(width: int, q: float = 0.99) -> float:
    """The q-quantile of |cos| of two random directions in R^D: cos² follows Beta(1/2, (D − 1)/2)."""
    return float(np.sqrt(stats.beta.ppf(q, 0.5, (width - 1) / 2)))


def axis_comparison(finals: Mapping[str, np.ndarray], post: Mapping, axes: Mapping[str, np.ndarray] | None = None) -> dict:
    """Experiment 4 as the post ran it, on the final-depth embeddings of the same sentences by
    every model run (id → [N, D]; their cone axes ``axes`` when already computed): the |cos|
    matrix of their cone axes, the post's family (``post``: ``models`` {name: id}, ``fine_tuned``
    [names], ``base``) and each model's final anisotropy."""
    axes = axes or {name: principal_axis(final) for name, final in finals.items()}
    matrix = axis_cosines(axes)
    pairs = family_pairs(matrix, [post["models"][name] for name in post["fine_tuned"]], post["models"][post["base"]])
    return {
        "cone_axis_cosine": matrix,
        "models_final_anisotropy": {name: anisotropy(final) for name, final in finals.items()},
        "cone_axis_family": {key: None if pair is None else matrix[pair[0]][pair[1]] for key, pair in pairs.items()},
        "chance_axis_cosine": chance_axis_cosine(next(iter(finals.values())).shape[1]),
        "per_unit": {f"cone_axis_family.{key}": axis_products(axes[pair[0]], axes[pair[1]])
                     for key, pair in pairs.items() if pair is not None},
    }


ROTATION_KEYS = ("axis_cos", "axis_cos_over_q99", "axis_cos_over_q99_mean", "controls_axis_cos", "chance", "chance_q99",
                 "centering")


def rotation(final: np.ndarray, controls: Sequence[np.ndarray], axes: Sequence[np.ndarray] | None = None) -> dict:
    """Experiment 4 offline: a trained model's final-depth embeddings ``final`` [N, D] against
    its random-init controls' on the same sentences — |cos| of the cone axes (the model against
    each control, also over the 99 % quantile of random directions' |cos|, and the controls among
    themselves) beside random directions' mean and 99 % quantile, and whether one model's
    centering vector serves the other: the removal shares (centering.removal_shares) of the
    model by each control's mean and of each control by the model's. None values without
    controls. ``axes``: the cone axes of the model and of each control, when already computed."""
    if not controls:
        return dict.fromkeys(ROTATION_KEYS)
    axis, *others = axes if axes is not None else [principal_axis(x) for x in [final, *controls]]
    mean = np.asarray(final, dtype=np.float64).mean(axis=0)
    by_control = centering.removal_shares(final, {str(s): np.mean(c, axis=0) for s, c in enumerate(controls)})
    width = len(axis)
    cosines, q99 = np.array([abs(cosine(axis, o)) for o in others]), chance_axis_quantile(width)
    return {"axis_cos": cosines, "axis_cos_over_q99": cosines / q99, "axis_cos_over_q99_mean": float(np.mean(cosines / q99)),
            "controls_axis_cos": [abs(cosine(a, b)) for i, a in enumerate(others) for b in others[i + 1:]],
            "chance": chance_axis_cosine(width), "chance_q99": q99,
            "centering": {"model_by_control": list(by_control.values()),
                          "control_by_model": [centering.removal_share(c, mean, "control") for c in controls]}}


# --------------------------------------------------------------------------- what an axis separates

def correlation_ratio_parts(values: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row i, (b_i, t_i) = ((ȳ_{g(i)} − ȳ)², (y_i − ȳ)²), with ȳ_{g(i)} the mean of row i's
    label: Σ b / Σ t = η², a ratio of means of per-row values (label means held fixed)."""
    values = np.asarray(values, dtype=np.float64)
    means = np.empty_like(values)
    for rows in label_rows(labels).values():
        means[rows] = values[rows].mean()
    return (means - values.mean()) ** 2, (values - values.mean()) ** 2


def correlation_ratio(values: np.ndarray, labels: Sequence[str]) -> float:
    """η²: the share of the variance of ``values`` explained by the label means (0 = the labels
    tell nothing, 1 = the values are constant within every label)."""
    between, total = correlation_ratio_parts(values, labels)
    if total.sum() == 0:
        raise ValueError("correlation ratio is undefined for constant values")
    return float(between.sum() / total.sum())


def permuted_eta2_draws(values: np.ndarray, labels: Sequence[str], permutations: int = PERMUTATIONS,
                        seed: int = 0) -> np.ndarray:
    """[P]: η² of ``values`` under ``permutations`` shuffles of ``labels`` (a generator seeded by
    ``seed``): the permutation distribution of η², whose mean is about (K − 1) / (N − 1)."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    return np.array([correlation_ratio(values, rng.permutation(labels)) for _ in range(permutations)])


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ between two series of the same length (scipy)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"rank correlation needs two series of equal length ≥ 3; got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rank correlation is undefined for a constant series")
    return float(stats.spearmanr(x, y).statistic)


def rank_moments(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The per-unit moments {x, y, xx, yy, xy} [n, 1] of the ranks of x and y (ties averaged):
    Pearson's r of them, rebuilt from weighted means in each resample, is Spearman's ρ."""
    rx, ry = stats.rankdata(x)[:, None], stats.rankdata(y)[:, None]
    return {"x": rx, "y": ry, "xx": rx ** 2, "yy": ry ** 2, "xy": rx * ry}


# --------------------------------------------------------------------------- every model

def measure(run: Run, topics: Sequence[str], sentences: Sequence[str], params: Mapping[str, Any],
            published: Mapping[str, Any], axes: Mapping[str, np.ndarray] | None = None) -> dict:
    """Every measurement of the chapter on one trained model's :class:`Run` (module docstring):
    ``params`` gives ``token_set``, ``k_extremes``, ``k_vocab`` and ``seed``; ``published`` the
    post's transcribed data (its common words and its L0 tokens); ``axes`` the cone axes of the
    model and its controls by id, when already computed."""
    pools, seed, controls = run.pools, params["seed"], list(run.controls.values())
    name = run.model.info.id
    axes = axes or {key: principal_axis(final) for key, final in [(name, pools[-1])] +
                    [(key, c[-1]) for key, c in run.controls.items()]}
    found: dict[str, Any] = {"layers": run.acts.n_layers, "per_unit": {}}
    parts = [cone_formation(pools, "pairs"), control_formation(pools, controls),
             pooling_gap(pools, run.acts, params["token_set"]),
             cone_axis_reading(pools[-1], topics, word_counts(run.acts), sentences, params["k_extremes"], seed,
                               axis=axes[name]),
             centering.topic_measurements(pools, topics, seed=seed)]
    for part in parts:
        found["per_unit"].update(part.pop("per_unit", {}))
        found.update(part)
    vocab = published["vocab_on_cone_axis"]
    found["vocab_on_cone_axis"] = vocabulary_on_axis(run.model, found["cone_axis"], params["k_vocab"],
                                                     vocab["common_words"], vocab["top_tokens_as_listed"])
    found["rotation"] = rotation(pools[-1], [c[-1] for c in controls], [axes[key] for key in [name, *run.controls]])
    return found


def measure_all(runs: Mapping[str, Run], topics: Sequence[str], sentences: Sequence[str],
                params: Mapping[str, Any], published: Mapping[str, Any]) -> dict[str, dict]:
    """:func:`measure` of every trained model of ``runs``, each with the comparison of every
    model's cone axis that the post made (:func:`axis_comparison`, the same for all): a metrics
    dict per trained model, by id. Each cone axis is computed once."""
    finals = {name: run.pools[-1] for name, run in runs.items()}
    finals.update({name: pools[-1] for run in runs.values() for name, pools in run.controls.items()})
    axes = {name: principal_axis(final) for name, final in finals.items()}
    shared = axis_comparison(finals, published["cone_axis_cosine"], axes)
    found = {}
    for name, run in runs.items():
        metrics = measure(run, topics, sentences, params, published, axes)
        metrics.update({key: value for key, value in shared.items() if key != "per_unit"})
        metrics["per_unit"].update(shared["per_unit"])
        found[name] = metrics
    return found


def without_units(found: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every model's metrics without their per-unit samples (what the results JSON keeps of a
    model the chapter judges besides its main one)."""
    return {name: {key: value for key, value in metrics.items() if key != "per_unit"} for name, metrics in found.items()}
