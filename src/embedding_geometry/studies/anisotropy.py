"""Anisotropy and the cone (chapter 3, METHODS.md §3): how much a set of vectors shares one direction.

Measurements (X: [n, D] vectors, S: [L + 1, n, D] the same n texts at every depth, A = anisotropy):

    anisotropy(X)            = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)   (geometry.mean_pairwise_cosine)
    anisotropy_per_depth(S)  = [A(S[l]) for l = 0..L]
    final_step_share(x)      = (x_{L−1} − x_L) / (max_l x_l − x_L): the share of the fall from the
                               peak made by the last step                                x: [L + 1]
    cone axis                = geometry.principal_axis(X): PC1 of the centred rows           → [D]
    mean_direction(X)        = x̄ / ‖x̄‖, where the cone points                              → [D]
    axis_scores(X, a)        = (x_i − x̄) · â, the PCA score of each row                    → [n]
    explained_variance_ratio = Σ_i ((x_i − x̄) · â)² / Σ_i ‖x_i − x̄‖²
    axis_cosines({m: a_m})   = |cos(a_m, a_m')| for every pair of equal width, None otherwise
    chance_axis_cosine(D)    = √(2 / (π D)), E|cos| of two random directions of R^D (large D)
    vocabulary_projection    = E â, the raw word-embedding rows on an axis      E: [V, D] → [V]
    correlation_ratio(y, g)  = η² = Σ_k n_k (ȳ_k − ȳ)² / Σ_i (y_i − ȳ)²        g: labels
    rank_correlation(x, y)   = Spearman's ρ (scipy)

The chapter's **metrics dict** is the union of what its study functions return (N sentences on
a model of L blocks and width D; "new" marks keys added with the chapter skeleton, every other
key and value is as before). The topic keys come from ``studies.centering.topic_measurements``.

    cone_formation(pools)                          Experiment 1: when does the cone form?
      anisotropy [L + 1]; final_step_share; anisotropy_peak_depth (new);
      per_unit: {anisotropy: [N, L + 1]} (new), a_s = each sentence's mean cosine with the
        others (geometry.row_mean_cosine), whose mean over axis 0 is ``anisotropy``
    pooling_gap(pools, tokens)                     Experiment 2: how much does pooling make?
      token_anisotropy [L + 1] on the token_sample rows; anisotropy_gap [L + 1] = sentence − token
    cone_axis_reading(final, topics, lengths, sentences, k)   Experiment 3: what the axis encodes
      cone_axis [D]; mean_direction [D]; cone_axis_vs_mean_direction (cos);
      cone_axis_explained_variance; mean_direction_explained_variance;
      cone_extremes {high, low: k × {sentence, topic, score}}; cone_axis_topic_eta2 (None with one
      topic); cone_axis_length_spearman (ρ with word-token counts); new: cone_axis_scores [N],
      mean_cos_to_mean_direction, mean_abs_cos_to_cone_axis, cone_end_topics (end_topics at k)
    vocab_on_cone_axis = vocabulary_on_axis(model, axis, k, words)
      {top, bottom: k × {token, id, projection}, common_word_ranks {word: rank},
       common_in_top (how many ranks ≤ k), n_tokens (new: V)}
    axis_comparison(finals, post)                  Experiment 4: does fine-tuning rotate the cone?
      cone_axis_cosine {model: {model: |cos| or None}}; cone_axis_family {within_min,
      to_outsider_max} (None without the post's models); models_final_anisotropy {model: A};
      new: chance_axis_cosine; random_control {model, final_anisotropy, axis_cosine (with the
      chapter's model), anisotropy_excess (control − model)}, None values without a control
    exercises {
      n_texts_300_anisotropy [L + 1], n_texts_300 {n, peak, peak_depth, final, max_difference} (new)
                                                   sample_size_check
      token_set_all_token_anisotropy [L + 1], token_set_all {at_depth, this_build_at_depth,
        max_difference, special_share, special_anisotropy, change_share} (new)   token_set_check
      top_topic_at_each_end {"k=<k>": end_topics(scores, topics, k)} for k_extremes and 20
      seed_1_control {final_anisotropy, axis_cos_with_model, axis_cos_with_this_control;
        new: anisotropy_difference, axis_cos_over_chance}                        second_control }

Cosines are on raw vectors (no centring, no normalisation first), as everywhere in the book; a
zero vector has no direction and raises ValueError instead of giving NaN. Nothing here mutates
its inputs. PC1 of *centred* vectors is the direction of largest spread around the mean; the
mean direction is where the cone points. The two need not agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..core.geometry import (centred, cosine, cosine_matrix, label_rows, mean_pairwise_cosine, principal_axis,
                             row_mean_cosine, unit_rows)
from ..core.models import LoadedModel, ModelInfo

TOKEN_SAMPLE = 4000
"""METHODS.md §3: token anisotropy uses at most this many tokens (a seeded uniform sample)."""

anisotropy = mean_pairwise_cosine
"""Anisotropy *is* the mean pairwise cosine: one implementation, in ``core.geometry``."""


# --------------------------------------------------------------------------- across depth (Experiments 1, 2)

def anisotropy_per_depth(states: np.ndarray) -> np.ndarray:
    """[L + 1]: ``anisotropy(states[l])`` at every depth of ``states`` ([L + 1, n, D])."""
    return np.array([anisotropy(layer) for layer in np.asarray(states)])


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


def cone_formation(pools: np.ndarray) -> dict:
    """Experiment 1 on mean pools [L + 1, N, D]: sentence-level anisotropy at every depth, the
    depth of its peak and the share of the fall from the peak made by the last step."""
    series = anisotropy_per_depth(pools)
    return {"anisotropy": series, "final_step_share": final_step_share(series),
            "anisotropy_peak_depth": int(np.argmax(series)),
            "per_unit": {"anisotropy": np.stack([row_mean_cosine(x) for x in np.asarray(pools)], axis=1)}}


def sample_rows(n: int, size: int = TOKEN_SAMPLE, seed: int = 0) -> np.ndarray:
    """Sorted indices of a seeded uniform sample of ``size`` of ``n`` rows (all rows if n ≤ size)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def token_sample(acts, token_set: str = "word", size: int = TOKEN_SAMPLE, seed: int = 0) -> tuple[np.ndarray, int]:
    """``(rows, n_kept)``: the token rows of an ``Activations`` record that token-level anisotropy
    uses — word tokens (``"word"``, METHODS.md §0) or every real token, [CLS] and [SEP] included
    (``"all"``) — as a seeded sample of at most ``size`` of the ``n_kept`` such rows."""
    if token_set not in ("word", "all"):
        raise ValueError(f"token_set must be 'word' or 'all'; got {token_set!r}")
    keep = acts.word_mask if token_set == "word" else acts.word_mask | acts.special_mask
    kept = np.flatnonzero(np.asarray(keep, dtype=bool))
    return kept[sample_rows(len(kept), size, seed)], len(kept)


def pooling_gap(pools: np.ndarray, tokens: np.ndarray) -> dict:
    """Experiment 2: token-level anisotropy of ``tokens`` ([L + 1, n_tok, D], the same sampled
    tokens at every depth, never paired with themselves) and the gap that mean pooling adds."""
    token = anisotropy_per_depth(tokens)
    return {"token_anisotropy": token, "anisotropy_gap": anisotropy_per_depth(pools) - token}


# --------------------------------------------------------------------------- the cone axis (Experiment 3)

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
                      sentences: Sequence[str], k: int) -> dict:
    """Experiment 3 on final-depth embeddings ``final`` ([N, D]): the cone axis (PC1), the mean
    direction and how they relate, the ``k`` sentences at each end of the axis, and what the
    axis separates: η² of ``topics`` (None with a single topic) and Spearman's ρ with ``lengths``."""
    axis, direction = principal_axis(final), mean_direction(final)
    scores = axis_scores(final, axis)
    ends = dict(zip(("high", "low"), extremes(scores, k)))
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
        "cone_axis_topic_eta2": correlation_ratio(scores, topics) if len(set(topics)) > 1 else None,
        "cone_axis_length_spearman": rank_correlation(scores, lengths),
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
                       names: Callable[[list[int]], list[str]]) -> dict:
    """The ``k`` vocabulary rows at each end of ``axis`` (``names`` maps row ids to tokens), the
    rank of each common word (``common_ids``: word → row id) and how many of them are in the top k."""
    projection, top, bottom = vocabulary_projection(embeddings, axis, k)
    ranks = dict(zip(common_ids, vocabulary_ranks(projection, list(common_ids.values()))))

    def rows(ids: np.ndarray) -> list[dict]:
        return [{"token": t, "id": int(i), "projection": float(projection[i])} for t, i in zip(names(ids.tolist()), ids)]

    return {"top": rows(top), "bottom": rows(bottom), "common_word_ranks": ranks,
            "common_in_top": sum(rank <= k for rank in ranks.values()), "n_tokens": len(projection)}


def vocabulary_on_axis(loaded: LoadedModel, axis: np.ndarray, k: int, common_words: Sequence[str]) -> dict:
    """:func:`vocabulary_reading` of ``loaded``'s input word embeddings (the raw token vectors,
    before position embeddings and LayerNorm), tokens named by its tokenizer."""
    embeddings = loaded.model.get_input_embeddings().weight.detach().cpu().numpy()
    ids = loaded.tokenizer.convert_tokens_to_ids(list(common_words))
    return vocabulary_reading(embeddings, axis, k, dict(zip(common_words, ids)), loaded.tokenizer.convert_ids_to_tokens)


# --------------------------------------------------------------------------- across models (Experiment 4)

def axis_cosines(axes: Mapping[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """|cos| between every pair of axes (the sign of a principal axis is arbitrary); None where
    the widths differ, so the pair is not comparable."""
    return {a: {b: abs(cosine(u, v)) if len(u) == len(v) else None for b, v in axes.items()}
            for a, u in axes.items()}


def axis_family_summary(matrix: Mapping[str, Mapping[str, float | None]], family: Sequence[str],
                        outsider: str) -> dict[str, float | None]:
    """From an ``axis_cosines`` matrix: ``within_min``, the smallest |cos| between two members of
    ``family``, and ``to_outsider_max``, the largest |cos| between a member and ``outsider``;
    each None unless every model it needs is in the matrix and comparable."""
    def cell(a: str, b: str) -> float | None:
        return matrix.get(a, {}).get(b)

    within = [cell(a, b) for i, a in enumerate(family) for b in family[i + 1:]]
    across = [cell(a, outsider) for a in family]
    return {"within_min": min(within) if within and None not in within else None,
            "to_outsider_max": max(across) if across and None not in across else None}


def chance_axis_cosine(width: int) -> float:
    """E|cos| of two random directions in R^D, ≈ √(2 / (π D)) for large D."""
    return float(np.sqrt(2 / (np.pi * width)))


def axis_comparison(finals: Mapping[ModelInfo, np.ndarray], post: Mapping) -> dict:
    """Experiment 4 on the final-depth embeddings of the same sentences by several models (the
    chapter's model first; a model whose ``source`` is ``"control"`` is a random-init control).
    ``post`` names the published family: ``models`` {name: id}, ``fine_tuned`` [names], ``base``."""
    ids = {info.id: final for info, final in finals.items()}
    matrix = axis_cosines({name: principal_axis(final) for name, final in ids.items()})
    final_anisotropy = {name: anisotropy(final) for name, final in ids.items()}
    main = next(iter(ids))
    control = next((info.id for info in finals if info.source == "control"), None)
    family = [post["models"][name] for name in post["fine_tuned"]]
    return {
        "cone_axis_cosine": matrix, "models_final_anisotropy": final_anisotropy,
        "cone_axis_family": axis_family_summary(matrix, family, post["models"][post["base"]]),
        "chance_axis_cosine": chance_axis_cosine(ids[main].shape[1]),
        "random_control": {
            "model": control, "final_anisotropy": final_anisotropy.get(control),
            "axis_cosine": matrix[main][control] if control else None,
            "anisotropy_excess": final_anisotropy[control] - final_anisotropy[main] if control else None},
    }


def second_control(finals: Mapping[ModelInfo, np.ndarray], other: np.ndarray) -> dict:
    """Exercise 4: a second random-init control's final embeddings ``other`` ([N, D]) against the
    chapter's model (first in ``finals``) and its control: final anisotropy, |cos| of the cone
    axes, the anisotropy difference between the two controls and their axis |cos| over chance."""
    control = next((final for info, final in finals.items() if info.source == "control"), None)
    value, axis = anisotropy(other), principal_axis(other)
    result = {"final_anisotropy": value, "axis_cos_with_model": abs(cosine(axis, principal_axis(next(iter(finals.values()))))),
              "axis_cos_with_this_control": None, "anisotropy_difference": None, "axis_cos_over_chance": None}
    if control is not None:
        with_control = abs(cosine(axis, principal_axis(control)))
        result.update(axis_cos_with_this_control=with_control, anisotropy_difference=abs(value - anisotropy(control)),
                      axis_cos_over_chance=with_control / chance_axis_cosine(len(axis)))
    return result


# --------------------------------------------------------------------------- what an axis separates

def correlation_ratio(values: np.ndarray, labels: Sequence[str]) -> float:
    """η²: the share of the variance of ``values`` explained by the label means (0 = the labels
    tell nothing, 1 = the values are constant within every label)."""
    values = np.asarray(values, dtype=np.float64)
    total = float(np.sum((values - values.mean()) ** 2))
    if total == 0:
        raise ValueError("correlation ratio is undefined for constant values")
    between = sum(len(rows) * (values[rows].mean() - values.mean()) ** 2 for rows in label_rows(labels).values())
    return float(between / total)


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ between two series of the same length (scipy)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"rank correlation needs two series of equal length ≥ 3; got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rank correlation is undefined for a constant series")
    return float(stats.spearmanr(x, y).statistic)


# --------------------------------------------------------------------------- the exercises' answers

def sample_pools(sample: Sequence[str], sentences: Sequence[str], pools: np.ndarray,
                 extract: Callable[[list[str]], object]) -> np.ndarray:
    """Mean pools [L + 1, n, D] of the texts ``sample``: columns of ``pools`` (the mean pools of
    ``sentences``) when every text of the sample is among them, else ``extract(sample)``'s."""
    where = {s: i for i, s in enumerate(sentences)}
    if all(s in where for s in sample):
        return np.asarray(pools)[:, [where[s] for s in sample]]
    return extract(list(sample)).mean_pool("all")


def sample_size_check(pools: np.ndarray, full: np.ndarray) -> dict:
    """Exercise 1: anisotropy per depth of a sample's mean ``pools``, its peak, depth of the peak
    and final value, and the largest |difference| from the full corpus's series ``full``."""
    series = anisotropy_per_depth(pools)
    return {"n_texts_300_anisotropy": series,
            "n_texts_300": {"n": int(np.asarray(pools).shape[1]), "peak": float(series.max()),
                            "peak_depth": int(np.argmax(series)), "final": float(series[-1]),
                            "max_difference": float(np.abs(series - np.asarray(full)).max())}}


def token_set_check(hidden: np.ndarray, rows: np.ndarray, special: np.ndarray, token_anisotropy: np.ndarray,
                    gap: np.ndarray, depth: int) -> dict:
    """Exercise 2: token-level anisotropy of the token ``rows`` of ``hidden`` ([L + 1, n_tok, D],
    the post's set, [CLS] and [SEP] included) against this build's ``token_anisotropy``; the
    special tokens' share and their own anisotropy at ``depth``; and |change| / |pooling gap| there."""
    series = anisotropy_per_depth(np.asarray(hidden)[:, rows])
    special = np.asarray(special, dtype=bool)
    change, gap_at = abs(series[depth] - token_anisotropy[depth]), abs(float(gap[depth]))
    return {"token_set_all_token_anisotropy": series,
            "token_set_all": {"at_depth": float(series[depth]), "this_build_at_depth": float(token_anisotropy[depth]),
                              "max_difference": float(np.abs(series - token_anisotropy).max()),
                              "special_share": float(special.mean()),
                              "special_anisotropy": anisotropy(np.asarray(hidden)[depth, special]),
                              "change_share": float(change / gap_at) if gap_at > 0 else None}}
