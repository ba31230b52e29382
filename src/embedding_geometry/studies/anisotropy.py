"""Anisotropy and the cone (chapter 3; definitions on the book's Methods page, "Inside the cone"):
how much a set of vectors shares one direction.

Measurements (X: [n, D] vectors, S: [L + 1, n, D] the same n texts at every depth, A = anisotropy):

    anisotropy(X)            = (1 / n(n−1)) Σ_{i≠j} cos(x_i, x_j)   (geometry.mean_pairwise_cosine)
    row_means_per_depth(S)   = [a_i(S[l])]: each row's mean cosine with the others   → [n, L + 1]
    anisotropy_per_depth(S)  = [A(S[l]) for l = 0..L], the mean over i of the above
    final_step_share(x)      = (x_{L−1} − x_L) / (max_l x_l − x_L): the share of the fall from the
                               peak made by the last step                                x: [L + 1]
    text_shares(v, owner)    = t_s = (N / n) Σ_{i: owner(i) = s} v_i: the values of n tokens as
                               N per-text values with the same mean (cluster units)
    cone axis                = geometry.principal_axis(X): PC1 of the centred rows           → [D]
    mean_direction(X)        = x̄ / ‖x̄‖, where the cone points                              → [D]
    axis_scores(X, a)        = (x_i − x̄) · â, the PCA score of each row                    → [n]
    explained_variance_ratio = Σ_i ((x_i − x̄) · â)² / Σ_i ‖x_i − x̄‖²
    axis_cosines({m: a_m})   = |cos(a_m, a_m')| for every pair of equal width, None otherwise
    axis_products(u, v)      = D · sign(û·v̂) · û_d v̂_d → [D], whose mean is |cos(u, v)|
    chance_axis_cosine(D)    = √(2 / (π D)), E|cos| of two random directions of R^D (large D)
    vocabulary_projection    = E â, the raw word-embedding rows on an axis      E: [V, D] → [V]
    correlation_ratio(y, g)  = η² = Σ_k n_k (ȳ_k − ȳ)² / Σ_i (y_i − ȳ)²        g: labels
    permuted_eta2(g)         = (K − 1) / (N − 1), E η² when the K labels are shuffled
    rank_correlation(x, y)   = Spearman's ρ (scipy); rank_products: z(rank x)_i · z(rank y)_i,
                               whose mean is ρ

**Per-unit values** (``per_unit``, for the claims' bootstrap intervals, ``book.intervals``): an
array [n_units, …] whose mean over axis 0 is the metric, or two arrays whose means make it as a
ratio. Units are sentences (a_s, each sentence's mean cosine with the others), tokens, or
dimensions (the coordinates of two axes). A quantity that the run locates (the peak depth, the
group means, the ranks) is held at its whole-sample value in every resample.

The chapter's **metrics dict** is the union of what its study functions return (N sentences on
a model of L blocks and width D; "new" marks keys added with the chapter skeleton or the
verdict intervals, every other key and value is as before). The topic keys come from
``studies.centering.topic_measurements``, the exercises' from ``studies.cone_exercises``.

    cone_formation(pools)                          Experiment 1: when does the cone form?
      anisotropy [L + 1]; final_step_share; new: anisotropy_peak_depth, anisotropy_rise [L + 1]
      (A_l − A_0); per_unit: anisotropy, anisotropy_rise [N, L + 1] (the final step's share is
      a function of the anisotropy series: its interval resamples the sentences' rows of it)
    pooling_gap(pools, tokens, owners)             Experiment 2: how much does pooling make?
      token_anisotropy [L + 1] on the token_sample rows; anisotropy_gap [L + 1] = sentence − token;
      new: pooling_share [L + 1] = gap / sentence; per_unit: token_anisotropy [n_tok, L + 1]
      (tokens), token_anisotropy.by_sentence and anisotropy_gap [N, L + 1] (text_shares)
    cone_axis_reading(final, topics, lengths, sentences, k)   Experiment 3: what the axis encodes
      cone_axis [D]; mean_direction [D]; cone_axis_vs_mean_direction (cos);
      cone_axis_explained_variance; mean_direction_explained_variance;
      cone_extremes {high, low: k × {sentence, topic, score}}; cone_axis_topic_eta2 (None with one
      topic); cone_axis_length_spearman (ρ with word-token counts); new: cone_axis_scores [N],
      mean_cos_to_mean_direction, mean_abs_cos_to_cone_axis, cone_end_topics (end_topics at k),
      cone_axis_topic_eta2_permuted; per_unit: cone_axis_topic_eta2.between and .total,
      cone_axis_length_spearman [N]
    vocab_on_cone_axis = vocabulary_on_axis(model, axis, k, words)
      {top, bottom: k × {token, id, projection}, common_word_ranks {word: rank},
       common_in_top (how many ranks ≤ k), new: n_tokens (V), common_in_top_each [0/1 per word],
       common_share_in_top}
    axis_comparison(finals, post, series)          Experiment 4: does fine-tuning rotate the cone?
      cone_axis_cosine {model: {model: |cos| or None}}; cone_axis_family {within_min,
      to_outsider_max} (None without the post's models); models_final_anisotropy {model: A};
      new: chance_axis_cosine; random_control {model, final_anisotropy, axis_cosine (with the
      chapter's model), anisotropy_excess (control − model), anisotropy and anisotropy_rise
      [L + 1]}, None values without a control; per_unit: random_control.anisotropy_excess [N],
      cone_axis_family.within_min and .to_outsider_max [D] (the pair that attains each)

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
"""Token anisotropy uses at most this many tokens (a seeded uniform sample; Methods, chapter 3)."""

anisotropy = mean_pairwise_cosine
"""Anisotropy *is* the mean pairwise cosine: one implementation, in ``core.geometry``."""


# --------------------------------------------------------------------------- across depth (Experiments 1, 2)

def anisotropy_per_depth(states: np.ndarray) -> np.ndarray:
    """[L + 1]: ``anisotropy(states[l])`` at every depth of ``states`` ([L + 1, n, D])."""
    return np.array([anisotropy(layer) for layer in np.asarray(states)])


def row_means_per_depth(states: np.ndarray) -> np.ndarray:
    """[n, L + 1]: each row's mean cosine with the other rows at every depth of ``states``
    ([L + 1, n, D]); the mean over rows is :func:`anisotropy_per_depth`."""
    return np.stack([row_mean_cosine(layer) for layer in np.asarray(states)], axis=1)


def text_shares(values: np.ndarray, owners: np.ndarray, n_texts: int) -> np.ndarray:
    """[N, …]: t_s = (N / n) Σ_{i: owners[i] = s} v_i for the n token values ``values`` [n, …]:
    per-text values whose mean over the N texts is the mean over the tokens (a text with no
    token gets 0), so that a token mean can be resampled by text."""
    values = np.asarray(values, dtype=np.float64)
    totals = np.zeros((n_texts, *values.shape[1:]))
    np.add.at(totals, np.asarray(owners), values)
    return totals * n_texts / len(values)


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
    """Experiment 1 on mean pools [L + 1, N, D]: sentence-level anisotropy at every depth, its
    rise from depth 0, the depth of its peak and the share of the fall from the peak made by
    the last step, with each sentence's values."""
    rows, series = row_means_per_depth(pools), anisotropy_per_depth(pools)
    peak = int(np.argmax(series))
    per_unit = {"anisotropy": rows, "anisotropy_rise": rows - rows[:, :1]}
    return {"anisotropy": series, "final_step_share": final_step_share(series), "anisotropy_peak_depth": peak,
            "anisotropy_rise": series - series[0], "per_unit": per_unit}


def sample_rows(n: int, size: int = TOKEN_SAMPLE, seed: int = 0) -> np.ndarray:
    """Sorted indices of a seeded uniform sample of ``size`` of ``n`` rows (all rows if n ≤ size)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def token_sample(acts, token_set: str = "word", size: int = TOKEN_SAMPLE, seed: int = 0) -> tuple[np.ndarray, int]:
    """``(rows, n_kept)``: the token rows of an ``Activations`` record that token-level anisotropy
    uses — word tokens (``"word"``, the book's convention) or every real token, [CLS] and [SEP]
    included (``"all"``) — as a seeded sample of at most ``size`` of the ``n_kept`` such rows."""
    if token_set not in ("word", "all"):
        raise ValueError(f"token_set must be 'word' or 'all'; got {token_set!r}")
    keep = acts.word_mask if token_set == "word" else acts.word_mask | acts.special_mask
    kept = np.flatnonzero(np.asarray(keep, dtype=bool))
    return kept[sample_rows(len(kept), size, seed)], len(kept)


def pooling_gap(pools: np.ndarray, tokens: np.ndarray, owners: np.ndarray) -> dict:
    """Experiment 2: token-level anisotropy of ``tokens`` ([L + 1, n_tok, D], the same sampled
    tokens at every depth, never paired with themselves; token i belongs to sentence
    ``owners[i]``), the gap that mean pooling adds, and the gap's share of the mean pools'
    anisotropy. Per unit: each token's mean cosine, and per sentence its tokens' share
    (:func:`text_shares`) and its own value minus that share."""
    sentence, token = anisotropy_per_depth(pools), anisotropy_per_depth(tokens)
    per_token = row_means_per_depth(tokens)
    by_sentence = text_shares(per_token, owners, np.asarray(pools).shape[1])
    return {"token_anisotropy": token, "anisotropy_gap": sentence - token, "pooling_share": (sentence - token) / sentence,
            "per_unit": {"token_anisotropy": per_token, "token_anisotropy.by_sentence": by_sentence,
                         "anisotropy_gap": row_means_per_depth(pools) - by_sentence}}


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
    axis separates: η² of ``topics`` (None with a single topic) against its value under shuffled
    topics, and Spearman's ρ with ``lengths``, each with its per-sentence parts."""
    axis, direction = principal_axis(final), mean_direction(final)
    scores = axis_scores(final, axis)
    ends = dict(zip(("high", "low"), extremes(scores, k)))
    several = len(set(topics)) > 1
    per_unit = {"cone_axis_length_spearman": rank_products(scores, lengths)}
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
        "cone_axis_topic_eta2_permuted": permuted_eta2(topics) if several else None,
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
                       names: Callable[[list[int]], list[str]]) -> dict:
    """The ``k`` vocabulary rows at each end of ``axis`` (``names`` maps row ids to tokens), the
    rank of each common word (``common_ids``: word → row id), whether each is in the top k
    (1 or 0, in the order of ``common_ids``), how many are and what share of them."""
    projection, top, bottom = vocabulary_projection(embeddings, axis, k)
    ranks = dict(zip(common_ids, vocabulary_ranks(projection, list(common_ids.values()))))
    in_top = [int(rank <= k) for rank in ranks.values()]

    def rows(ids: np.ndarray) -> list[dict]:
        return [{"token": t, "id": int(i), "projection": float(projection[i])} for t, i in zip(names(ids.tolist()), ids)]

    return {"top": rows(top), "bottom": rows(bottom), "common_word_ranks": ranks, "common_in_top": sum(in_top),
            "n_tokens": len(projection), "common_in_top_each": in_top,
            "common_share_in_top": sum(in_top) / len(in_top) if in_top else None}


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


def axis_comparison(finals: Mapping[ModelInfo, np.ndarray], post: Mapping,
                    series: Mapping[ModelInfo, np.ndarray] | None = None) -> dict:
    """Experiment 4 on the final-depth embeddings of the same sentences by several models (the
    chapter's model first; a model whose ``source`` is ``"control"`` is a random-init control),
    with each model's anisotropy per depth in ``series`` where given. ``post`` names the
    published family: ``models`` {name: id}, ``fine_tuned`` [names], ``base``."""
    ids = {info.id: final for info, final in finals.items()}
    axes = {name: principal_axis(final) for name, final in ids.items()}
    matrix, final_anisotropy = axis_cosines(axes), {name: anisotropy(final) for name, final in ids.items()}
    main, control = next(iter(ids)), next((info for info in finals if info.source == "control"), None)
    pairs = family_pairs(matrix, [post["models"][name] for name in post["fine_tuned"]], post["models"][post["base"]])
    per_unit = {f"cone_axis_family.{key}": axis_products(axes[pair[0]], axes[pair[1]])
                for key, pair in pairs.items() if pair is not None}
    summary = dict.fromkeys(("model", "final_anisotropy", "axis_cosine", "anisotropy_excess", "anisotropy",
                             "anisotropy_rise"))
    if control is not None:
        curve = None if series is None else np.asarray(series[control], dtype=np.float64)
        summary.update(model=control.id, final_anisotropy=final_anisotropy[control.id],
                       axis_cosine=matrix[main][control.id],
                       anisotropy_excess=final_anisotropy[control.id] - final_anisotropy[main],
                       anisotropy=curve, anisotropy_rise=None if curve is None else curve - curve[0])
        per_unit["random_control.anisotropy_excess"] = row_mean_cosine(finals[control]) - row_mean_cosine(ids[main])
    return {
        "cone_axis_cosine": matrix, "models_final_anisotropy": final_anisotropy,
        "cone_axis_family": {key: None if pair is None else matrix[pair[0]][pair[1]] for key, pair in pairs.items()},
        "chance_axis_cosine": chance_axis_cosine(ids[main].shape[1]), "random_control": summary,
        "per_unit": per_unit,
    }


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


def permuted_eta2(labels: Sequence[str]) -> float:
    """(K − 1) / (N − 1): the expected η² of any values when the N labels (K distinct) are
    shuffled — the permuted-labels null of :func:`correlation_ratio`."""
    labels = list(labels)
    return (len(set(labels)) - 1) / (len(labels) - 1)


def rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ between two series of the same length (scipy)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"rank correlation needs two series of equal length ≥ 3; got {len(x)} and {len(y)}")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("rank correlation is undefined for a constant series")
    return float(stats.spearmanr(x, y).statistic)


def rank_products(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[n]: z(rank x)_i · z(rank y)_i, the ranks (ties averaged) standardised with their
    population sd; their mean is Spearman's ρ (Pearson's r of the ranks)."""
    z = [(r - r.mean()) / r.std() for r in (stats.rankdata(x), stats.rankdata(y))]
    return z[0] * z[1]
