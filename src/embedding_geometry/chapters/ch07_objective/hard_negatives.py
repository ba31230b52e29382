"""Chapter 7's hard-negative arm: a twin of every training positive built in code, and the
comparison of the copy trained with those twins against the copy trained without them.

The similarity-attractor post (seed 000, "What This Means for Training") says that hard negatives
are necessary: a model trained with random negatives only never learns to push apart sentences
that share domain and vocabulary but differ in meaning. The fine-tuning arm asks it of its
backbone with paired seeds: for every seed, the mean-pool copy of :mod:`.training` (in-batch
negatives only) and a third copy trained the same way — same start, same batches, same steps and
schedule — whose batches also hold one **hard negative** per pair, the twin of its positive.

**The twin of a text** (:func:`twin`) keeps its words and changes its meaning, as the negation and
role-reversal twins of the book's hard set do (``data/retrieval_hard.yaml``, written by hand and
never trained on):

* *negation*, when the text has an auxiliary or a copula (:data:`AUXILIARIES`): "not" is put after
  the first one, or taken away when it follows it ("is" → "is not", "is not" → "is");
* *role swap*, otherwise: the first and the last content words (alphabetic, at least three
  letters, not stop words) trade places — "A boy kicks a ball against the garage door" becomes "A
  door kicks a ball against the garage boy" — the same words in another relation.

A text with neither (one content word, no auxiliary) has no twin; its pair trains with in-batch
negatives only (:func:`negatives` gives None, and the loss masks that column out).

**With hard negatives**, a batch of B pairs (q_i, d_i) with twins n_i scores each query against the
2B texts d_1 … d_B, n_1 … n_B, and InfoNCE finds d_i among them:

    L = −(1/B) Σ_i log [ e^{s(q_i, d_i)/τ} / (Σ_j e^{s(q_i, d_j)/τ} + Σ_j e^{s(q_i, n_j)/τ}) ].

**What is measured** (:func:`hard_set_measures`, on held-out texts only): each query q of chapter
1's hard set against its document d, its negation and its role reversal, per depth,

    margin_twin(q) = cos(m(q), m(d)) − cos(m(q), m(twin(d)))      (twin: the ``hard_twin`` one, and
                                                                   the other as ``other_twin_margin``)

and hard recall@1, whether d ranks first among every document and every ``hard_twin`` twin of the
hard set (ties counted against it). The
comparison (:func:`.measures.compare` with the pair (hard-negative copy, in-batch copy))
takes each difference seed by seed and query by query, with intervals over seeds and queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

import numpy as np

from ...core import corpora, geometry, ranking
from ...core.activations import Activations

AUXILIARIES = ("is", "are", "was", "were", "has", "have", "had", "will", "can", "could", "would", "should", "must",
               "may", "might", "does", "do", "did")
"""The words a negation puts "not" after."""
VARIANT = "mean_pool_hard"
"""The hard-negative copy's name among a seed's copies."""
BASELINE = "mean_pool"
"""The copy it is compared with: the same loss with in-batch negatives only."""
QUERY_MEASURES = ("hard_margin", "other_twin_margin", "hard_recall")
"""The hard set's measures per query [Q, L + 1]."""


@cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _negated(words: list[str]) -> list[str] | None:
    """The words with "not" put after (or taken from after) the first auxiliary, or None."""
    for i, word in enumerate(words):
        if word.lower() in AUXILIARIES:
            if i + 1 < len(words) and words[i + 1].lower() == "not":
                return words[: i + 1] + words[i + 2:]
            return words[: i + 1] + ["not"] + words[i + 1:]
    return None


def _swapped(words: list[str]) -> list[str] | None:
    """The words with the first and the last content word traded (their punctuation kept in place;
    the word that moves to the front of the text takes its capital), or None when the text has
    fewer than two different content words."""
    parts = [re.fullmatch(r"([A-Za-z]+)(\W*)", w) for w in words]
    content = [i for i, m in enumerate(parts) if m and len(m[1]) >= 3 and m[1].lower() not in _stop_words()]
    if len(content) < 2 or parts[content[0]][1].lower() == parts[content[-1]][1].lower():
        return None
    a, b = content[0], content[-1]
    first, last = parts[a][1], parts[b][1]
    if a == 0:
        first, last = first.lower(), last[:1].upper() + last[1:]
    out = list(words)
    out[a], out[b] = last + parts[a][2], first + parts[b][2]
    return out


def twin(text: str) -> str | None:
    """The text's hard twin (module docstring): its negation, else its role swap, else None."""
    words = text.split()
    found = _negated(words) or _swapped(words)
    return None if found is None else " ".join(found)


def negatives(pairs: Sequence[tuple[str, str]]) -> list[str | None]:
    """The twin of each pair's positive (None where it has none)."""
    return [twin(document) for _, document in pairs]


def kinds(pairs: Sequence[tuple[str, str]]) -> dict[str, int]:
    """How many positives get a negation, a role swap, or no twin."""
    words = [document.split() for _, document in pairs]
    negated = sum(_negated(w) is not None for w in words)
    swapped = sum(_negated(w) is None and _swapped(w) is not None for w in words)
    return {"negation": negated, "role swap": swapped, "none": len(words) - negated - swapped}


# --------------------------------------------------------------------------- the hard set, measured

def hard_set(hard_twin: str = "negation") -> dict[str, list[str]]:
    """Chapter 1's hard set as texts: its ``hard_queries``, and the ``hard_pool`` (per item its
    document, its ``hard_twin`` twin and its other twin, in that order)."""
    items = corpora.load_yaml("retrieval_hard.yaml")["items"]
    other = "role_reversal" if hard_twin == "negation" else "negation"
    return {"hard_queries": [item["query"] for item in items],
            "hard_pool": [item[key] for item in items for key in ("relevant", hard_twin, other)]}


def hard_set_measures(queries: Activations, pool: Activations) -> tuple[dict, dict]:
    """(curves, per-query values [Q, L + 1]) of :data:`QUERY_MEASURES` from the hard set's queries
    and its pool laid out d_q, twin_q, other_q (:func:`hard_set`): the two margins, and recall@1
    among the 2Q documents and ``hard_twin`` twins (the other twins are not in that pool)."""
    q, p = queries.mean_pool("all"), pool.mean_pool("all")  # [L + 1, Q, D], [L + 1, 3Q, D]
    if p.shape[1] != 3 * q.shape[1]:
        raise ValueError(f"the hard set needs three texts per query; got {q.shape[1]} queries, {p.shape[1]} texts")
    rows = np.arange(q.shape[1])
    scores = np.stack([geometry.cosine_matrix(a, b) for a, b in zip(q, p)])  # [L + 1, Q, 3Q]
    own = scores[:, rows, 3 * rows]
    pool = np.sort(np.r_[3 * rows, 3 * rows + 1])  # the documents and their twins: d_q is entry 2q
    units = {"hard_margin": (own - scores[:, rows, 3 * rows + 1]).T,
             "other_twin_margin": (own - scores[:, rows, 3 * rows + 2]).T,
             "hard_recall": np.stack([ranking.recall_per_query(s[:, pool], 2 * rows, 1) for s in scores], axis=1)}
    return {key: value.mean(axis=0) for key, value in units.items()}, units
