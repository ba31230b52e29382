"""Ranking a candidate pool by score, and recall@k: one implementation for every chapter that searches.

For Q queries, a pool of P candidates with scores [Q, P] (e.g. cosines) and, per query, the set
R_q of indices of its relevant candidates:

    rank_q(p)    = #{p' : scores[q, p'] ≥ scores[q, p]}             1-based; ties count against p
    recall_q@k   = |{p ∈ R_q : rank_q(p) ≤ k}| / |R_q|               per query, ∈ [0, 1]
    recall@k     = mean_q recall_q@k

With one relevant candidate per query, recall@k is the fraction of queries whose relevant
candidate is among the top k. Ties are broken pessimistically (a candidate that scores exactly
as well as the relevant one ranks above it), so a degenerate space cannot look good by luck.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Relevant = Sequence[int] | Sequence[Sequence[int]]


def relevant_sets(relevant: Relevant, n_queries: int, pool_size: int) -> list[list[int]]:
    """Normalise ``relevant`` (one index per query, or a list of indices per query) to a list of
    index lists, checking that there is one entry per query and every index is in the pool."""
    if len(relevant) != n_queries:
        raise ValueError(f"relevant needs one entry per query ({n_queries}); got {len(relevant)}")
    sets = [[int(r)] if np.isscalar(r) else [int(i) for i in r] for r in relevant]
    for q, items in enumerate(sets):
        if not items or any(not 0 <= i < pool_size for i in items):
            raise ValueError(f"query {q}: relevant indices must be non-empty and in [0, {pool_size}); got {items}")
    return sets


def ranks(scores: np.ndarray, relevant: Relevant) -> list[list[int]]:
    """The 1-based pessimistic rank of each relevant candidate of each query (module docstring)."""
    scores = np.asarray(scores, dtype=np.float64)
    sets = relevant_sets(relevant, *scores.shape)
    return [[int(np.sum(row >= row[p])) for p in items] for row, items in zip(scores, sets)]


def recall_per_query(scores: np.ndarray, relevant: Relevant, k: int) -> np.ndarray:
    """recall_q@k: per query, the fraction of its relevant candidates ranked within the top k → [Q]."""
    if k < 1:
        raise ValueError(f"k must be at least 1; got {k}")
    return np.array([np.mean([r <= k for r in query]) for query in ranks(scores, relevant)], dtype=np.float64)


def recall_at_k(scores: np.ndarray, relevant: Relevant, k: int) -> float:
    """recall@k: the mean over queries of :func:`recall_per_query`."""
    return float(np.mean(recall_per_query(scores, relevant, k)))
