"""core.ranking: pessimistic ranks and recall@k on hand-made score matrices."""

import numpy as np
import pytest

from embedding_geometry.core import ranking

SCORES = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.3]])


def test_ranks_count_ties_against_the_relevant_candidate():
    assert ranking.ranks(SCORES, [0, 1]) == [[1], [2]]  # query 1: candidate 2 ties with it


def test_recall_at_k_with_one_relevant_candidate():
    assert ranking.recall_at_k(SCORES, [0, 1], k=1) == 0.5
    assert ranking.recall_at_k(SCORES, [0, 1], k=2) == 1.0


def test_recall_at_k_with_several_relevant_candidates():
    # query 0: relevant ranks 1 and 2 → 1/2 within k = 1; query 1: rank 2 → 0
    assert ranking.recall_at_k(SCORES, [[0, 2], [1]], k=1) == 0.25


def test_bad_relevant_indices_and_k_are_errors():
    with pytest.raises(ValueError, match="one entry per query"):
        ranking.recall_at_k(SCORES, [0], k=1)
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        ranking.recall_at_k(SCORES, [0, 3], k=1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        ranking.recall_at_k(SCORES, [0, 1], k=0)


def test_recall_per_query_is_one_when_the_own_document_ranks_in_the_top_k():
    # query i's document is document i (chapter 7's task); row 1 ties: its document ranks second
    found = np.array([[0.9, 0.1, 0.2], [0.5, 0.5, 0.1], [0.3, 0.8, 0.2]])
    np.testing.assert_array_equal(ranking.recall_per_query(found, [0, 1, 2], 1), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(ranking.recall_per_query(found, [0, 1, 2], 2), [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(ranking.recall_per_query(found, [0, 1, 2], 3), [1.0, 1.0, 1.0])
