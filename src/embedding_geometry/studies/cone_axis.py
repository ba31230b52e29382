"""The cone axis (chapter 3, Experiments 3 and 4; definitions on the book's Methods page): what
the dominant direction of a model's sentence embeddings encodes, and how it compares across models.

    cone axis                = geometry.principal_axis(X): PC1 of the centred rows           → [D]
    mean_direction(X)        = x̄ / ‖x̄‖, where the cone points                              → [D]
    axis_scores(X, a)        = (x_i − x̄) · â, the PCA score of each row                    → [n]
    explained_variance_ratio = Σ_i ((x_i − x̄) · â)² / Σ_i ‖x_i − x̄‖²
    vocabulary_projection    = E â, the raw word-embedding rows on an axis      E: [V, D] → [V]
    axis_cosines({m: a_m})   = |cos(a_m, a_m')| for every pair of equal width, None otherwise
    axis_products(u, v)      = D · sign(û·v̂) · û_d v̂_d → [D], whose mean is |cos(u, v)|
    chance_axis_cosine(D)    = √(2 / (π D)), E|cos| of two random directions of R^D (large D)
    chance_axis_quantile(D)  = the 99 % quantile of that |cos|: cos² ~ Beta(1/2, (D − 1)/2)

The study functions (their keys join chapter 3's metrics dict, ``studies.cone``; N sentences of
width D, S controls, P permutations):

    cone_axis_reading(final, topics, lengths, sentences, k, seed)   Experiment 3
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
       controls_axis_cos [S(S−1)/2] (controls among themselves), chance, chance_q99,
       centering {model_by_control [S], control_by_model [S]}: removal shares of one model's
       mean on the other's embeddings}; None values without controls
    axis_comparison(finals, post)                  Experiment 4 as published (every model run)
      cone_axis_cosine {model: {model: |cos| or None}}; cone_axis_family {within_min,
      to_outsider_max} (None without the post's models); models_final_anisotropy;
      chance_axis_cosine; per_unit: cone_axis_family.within_min and .to_outsider_max [D]

PC1 of *centred* vectors is the direction of largest spread around the mean; the mean direction
is where the cone points. The two need not agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from ..core.geometry import centred, cosine, cosine_matrix, principal_axis, unit_rows
from . import centering
from .anisotropy import (
    PERMUTATIONS,
    anisotropy,
    correlation_ratio,
    correlation_ratio_parts,
    permuted_eta2_draws,
    rank_correlation,
    rank_moments,
)

if TYPE_CHECKING:
    from ..core.models import LoadedModel


# --------------------------------------------------------------------------- Experiment 3: what the axis encodes

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
        "cone_extremes": {side: [{"sentence": sentences[i], "topic": topics[i], "score": float(scores[i])}
                                 for i in rows]
                          for side, rows in ends.items()},
        "cone_end_topics": end_topics(scores, topics, k),
        "cone_axis_topic_eta2": correlation_ratio(scores, topics) if several else None,
        "cone_axis_topic_eta2_permutations":
            permuted_eta2_draws(scores, topics, permutations, seed) if several else None,
        "cone_axis_length_spearman": rank_correlation(scores, lengths), "per_unit": per_unit,
    }


def vocabulary_projection(embeddings: np.ndarray, axis: np.ndarray,
                          k: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
                       names: Callable[[list[int]], list[str]],
                       listed_ids: Mapping[str, int | None] | None = None) -> dict:
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
        return [{"token": t, "id": int(i), "projection": float(projection[i])}
                for t, i in zip(names(ids.tolist()), ids)]

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


def axis_comparison(finals: Mapping[str, np.ndarray], post: Mapping,
                    axes: Mapping[str, np.ndarray] | None = None) -> dict:
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
    return {"axis_cos": cosines, "axis_cos_over_q99": cosines / q99,
            "axis_cos_over_q99_mean": float(np.mean(cosines / q99)),
            "controls_axis_cos": [abs(cosine(a, b)) for i, a in enumerate(others) for b in others[i + 1:]],
            "chance": chance_axis_cosine(width), "chance_q99": q99,
            "centering": {"model_by_control": list(by_control.values()),
                          "control_by_model": [centering.removal_share(c, mean, "control") for c in controls]}}
