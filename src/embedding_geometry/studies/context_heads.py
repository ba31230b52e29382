"""Kinds of attention head, chapter 4 (the book's Methods page, section ``methods-heads``): the
book's rule that sorts heads into classes (the paper gives none), the per-head table, the rule
on two halves of the texts and each head's focus tokens on subsets and topics of the texts
(stability), and the number of blocks with both kinds on resamples of the texts.

The rule, per head over all texts (:func:`classify`): *repetition* when its repeat share — the
share of its high pairs that join two occurrences of one word token — is at least
``repeat_share_threshold``; else *common-token* when its focus is a common token (at least
``common_min_count`` occurrences in its text) in at least ``common_focus_threshold`` of the
texts; else *other*. Both shares are ratios of per-text sums, so a resample of the texts
recomputes them exactly (:func:`both_kinds_draws`).
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter

import numpy as np
import pandas as pd

from ..core import corpora
from .context_stats import ContextStats, Settings, text_resamples

HEAD_CLASSES = ("repetition", "common-token", "other")
FOCUS_SUBSETS = 4
"""Random disjoint subsets of the texts whose focus tokens :func:`head_stability` compares."""
FOCUS_TOP = 3
"""k: the focus tokens per head compared (as many as the head table shows)."""


def classify(repeat_share: np.ndarray, common_focus_share: np.ndarray, settings: Settings) -> np.ndarray:
    """Each head's class index into HEAD_CLASSES by the chapter's rule (:func:`head_table`), for
    arrays of any shape (a share that is nan — a head with no high pairs — meets no bar)."""
    with np.errstate(invalid="ignore"):
        repetition = repeat_share >= settings.repeat_share_threshold
        common = common_focus_share >= settings.common_focus_threshold
    return np.where(repetition, 0, np.where(common, 1, 2))


def head_table(stats: ContextStats, settings: Settings) -> pd.DataFrame:
    """One row per head (layer and head numbered from 1) with its shares and its class:

    repetition    repeat_share ≥ repeat_share_threshold: that share of its high pairs join two
                  occurrences of the same word token;
    common-token  otherwise, common_focus_share ≥ common_focus_threshold: in that share of the
                  texts its focus token is a common token (≥ common_min_count occurrences);
    other         neither.
    """
    n_layers, n_heads, _ = stats.shape
    focus_ids = stats.text_rows().get("head_focus_id", np.zeros((0, n_layers, n_heads), int))  # [texts, L, H]
    layer, head = np.meshgrid(np.arange(1, n_layers + 1), np.arange(1, n_heads + 1), indexing="ij")
    repeat_share, common_share = stats.head_repeats / stats.head_pairs, stats.head_common_focus / stats.texts
    frame = pd.DataFrame({
        "layer": layer.ravel(), "head": head.ravel(),
        "repeat_share": repeat_share.ravel(),
        "common_focus_share": common_share.ravel(),
        "mean_pair_distance": (stats.head_distance / stats.head_pairs).ravel(),
        "same_sentence_fraction": (stats.head_same_sentence / stats.head_pairs).ravel(),
        "separator_attention": (stats.head_attended_separators / stats.head_attended).ravel(),
        "top_focus": [_top_focus(ids, stats.focus_pieces, stats.texts)
                      for ids in focus_ids.reshape(len(focus_ids), n_layers * n_heads).T],
    })
    frame["class"] = np.asarray(HEAD_CLASSES)[classify(repeat_share, common_share, settings).ravel()]
    return frame


def _top_focus(ids: np.ndarray, pieces: dict[int, str], n_texts: int, k: int = 3) -> str:
    """The ``k`` pieces a head most often focuses on, with the share of texts (ties: the piece met first)."""
    counts = Counter(pieces[i] for i in ids.tolist())
    return ", ".join(f"{token} {count / n_texts:.0%}" for token, count in counts.most_common(k))


def _both_kinds(classes: np.ndarray) -> np.ndarray:
    """The number of blocks with a repetition-detecting and a common-token head: classes [..., L, H] → [...]."""
    return np.sum((classes == 0).any(axis=-1) & (classes == 1).any(axis=-1), axis=-1)


def both_kinds_draws(rows: dict[str, np.ndarray], n_texts: int, settings: Settings) -> np.ndarray:
    """``layers_with_both_kinds`` on resamples of the texts: each head's shares recomputed from
    the resampled texts' counts, then the rule."""
    repeats, pairs, common = (rows[name] for name in ("head_repeats", "head_high_pairs", "head_common_focus"))
    shape, n = repeats.shape[1:], len(repeats)
    draws = []
    for w in text_resamples(n, settings.seed + 1):
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (w @ repeats.reshape(n, -1)) / (w @ pairs.reshape(n, -1))
        classes = classify(share, w @ common.reshape(n, -1), settings).reshape(-1, *shape)
        draws.append(_both_kinds(classes))
    return np.concatenate(draws)


def head_stability(stats: ContextStats, settings: Settings) -> dict | None:
    """The head rule applied to the first and the second half of the texts (in stream order, so
    the halves read different stretches of the source): ``texts`` [2], each half's ``classes``
    [L][H] and ``layers_with_both_kinds`` [2]; ``agreement``, the share of heads whose class is the
    same in both halves, and Cohen's κ of the two labellings (None when it is undefined: one
    class throughout); ``rank_correlation``: Spearman's ρ between the halves, over all heads, of
    each head's repeat share, common-focus share, mean pair distance and separator share;
    ``focus``: :func:`focus_agreement` of each head's focus tokens across :data:`FOCUS_SUBSETS`
    random disjoint subsets of the texts (seeded by ``settings.seed``; None with fewer texts) and
    across the two corpus topics that begin the most texts (None unless both begin at least one).
    None with fewer than 2 texts."""
    from scipy.stats import spearmanr
    from sklearn.metrics import cohen_kappa_score

    rows, n = stats.text_rows(), stats.texts
    if n < 2:
        return None
    halves = [slice(0, n // 2), slice(n // 2, n)]
    measures = {"repeat_share": ("head_repeats", "head_high_pairs"), "common_focus_share": ("head_common_focus", None),
                "mean_pair_distance": ("head_pair_distance", "head_high_pairs"),
                "separator_attention": ("head_attended_separators", "head_attended")}
    found = []
    for part in halves:
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = {name: rows[a][part].sum(axis=0) / (rows[b][part].sum(axis=0) if b else len(rows[a][part]))
                      for name, (a, b) in measures.items()}
        found.append((shares, classify(shares["repeat_share"], shares["common_focus_share"], settings)))
    (first, a), (second, b) = found
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant measure has no ρ: recorded as None below
        kappa = cohen_kappa_score(a.ravel(), b.ravel()) if len(np.union1d(a, b)) > 1 else None
        rho = {name: spearmanr(first[name].ravel(), second[name].ravel(), nan_policy="omit").statistic
               for name in measures}
    return {"texts": [n // 2, n - n // 2], "classes": [np.asarray(HEAD_CLASSES)[c].tolist() for c in (a, b)],
            "layers_with_both_kinds": [int(_both_kinds(c)) for c in (a, b)],
            "agreement": float(np.mean(a == b)),
            "kappa": None if kappa is None or not np.isfinite(kappa) else float(kappa),
            "rank_correlation": {name: float(r) if np.isfinite(r) else None for name, r in rho.items()},
            "focus": _focus_stability(rows, settings.seed)}


def _focus_stability(rows: dict[str, np.ndarray], seed: int) -> dict:
    """:func:`focus_agreement` across random subsets of the texts and across two topics."""
    ids, n = rows["head_focus_id"], len(rows["head_focus_id"])
    subsets = np.array_split(np.random.default_rng([seed, n]).permutation(n), FOCUS_SUBSETS)
    named, counts = np.unique(rows["topic"][rows["topic"] >= 0], return_counts=True)
    two = named[np.argsort(-counts, kind="stable")[:2]]
    return {"k": FOCUS_TOP,
            "subsets": focus_agreement(ids, subsets) if n >= FOCUS_SUBSETS else None,
            "topics": {"names": [corpora.topics()[t] for t in two],
                       **focus_agreement(ids, [np.flatnonzero(rows["topic"] == t) for t in two])}
            if len(two) == 2 else None}


def focus_agreement(focus_ids: np.ndarray, groups: list[np.ndarray], k: int = FOCUS_TOP) -> dict:
    """How far each head keeps its focus tokens from one group of texts to another. Per head and
    group, its top-k focus tokens F_g: the k ids most often its focus on those texts (ties to the
    lower id); agreement J = |F_a ∩ F_b| / |F_a ∪ F_b| (Jaccard), averaged over every two groups;
    its chance, the same mean of E[X / (|F_a| + |F_b| − X)] with X hypergeometric — the overlap of
    |F_a| and |F_b| tokens drawn at random from the N distinct tokens the head focuses on over all
    the groups. focus_ids [n, L, H] → ``texts`` (per group), ``jaccard`` and ``chance`` [L, H],
    their means per block [L] (``block``, ``block_chance``) and overall (``mean``, ``chance_all``)."""
    from scipy.stats import hypergeom

    _, n_layers, n_heads = focus_ids.shape
    jaccard, chance = np.zeros((n_layers, n_heads)), np.zeros((n_layers, n_heads))
    pairs = list(itertools.combinations(range(len(groups)), 2))
    for l, h in np.ndindex(n_layers, n_heads):
        tops = [set(_top_ids(focus_ids[g, l, h], k)) for g in groups]
        seen = len(np.unique(focus_ids[np.concatenate(groups), l, h]))
        for a, b in pairs:
            jaccard[l, h] += len(tops[a] & tops[b]) / len(tops[a] | tops[b]) / len(pairs)
            x = np.arange(min(len(tops[a]), len(tops[b])) + 1)
            expected = hypergeom(seen, len(tops[a]), len(tops[b])).pmf(x) @ (x / (len(tops[a]) + len(tops[b]) - x))
            chance[l, h] += expected / len(pairs)
    return {"texts": [len(g) for g in groups], "jaccard": jaccard, "chance": chance,
            "block": jaccard.mean(axis=1), "block_chance": chance.mean(axis=1),
            "mean": float(jaccard.mean()), "chance_all": float(chance.mean())}


def _top_ids(ids: np.ndarray, k: int) -> np.ndarray:
    """The k most frequent values of ``ids`` (ties to the lower value)."""
    values, counts = np.unique(ids, return_counts=True)
    return values[np.lexsort((values, -counts))[:k]]


def class_counts(stats: ContextStats, settings: Settings) -> dict:
    """Heads per class over all layers, and the layers with both a repetition-detecting and a
    common-token head, by the rule of ``settings`` on the totals (as :func:`class_totals` reads
    them from a metrics dict)."""
    classes = classify(stats.head_repeats / stats.head_pairs, stats.head_common_focus / stats.texts, settings)
    return {"heads": {c: int(np.sum(classes == k)) for k, c in enumerate(HEAD_CLASSES)},
            "layers_with_both_kinds": int(_both_kinds(classes))}


def class_totals(m: dict) -> dict:
    """Heads per class over all layers, and the layers that have both a repetition-detecting
    and a common-token head, from a metrics dict."""
    return {"heads": {c: int(sum(m["head_classes"][c])) for c in HEAD_CLASSES},
            "layers_with_both_kinds": m["layers_with_both_kinds"]}
