"""Retrieval: pessimistic ranks and recall@k on hand-made score matrices."""

import numpy as np
import pytest

from embedding_geometry.studies import retrieval

SCORES = np.array([[0.9, 0.1, 0.5], [0.2, 0.3, 0.3]])


def test_ranks_count_ties_against_the_relevant_candidate():
    assert retrieval.ranks(SCORES, [0, 1]) == [[1], [2]]  # query 1: candidate 2 ties with it


def test_recall_at_k_with_one_relevant_candidate():
    assert retrieval.recall_at_k(SCORES, [0, 1], k=1) == 0.5
    assert retrieval.recall_at_k(SCORES, [0, 1], k=2) == 1.0


def test_recall_at_k_with_several_relevant_candidates():
    # query 0: relevant ranks 1 and 2 → 1/2 within k = 1; query 1: rank 2 → 0
    assert retrieval.recall_at_k(SCORES, [[0, 2], [1]], k=1) == 0.25


def test_bad_relevant_indices_and_k_are_errors():
    with pytest.raises(ValueError, match="one entry per query"):
        retrieval.recall_at_k(SCORES, [0], k=1)
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        retrieval.recall_at_k(SCORES, [0, 3], k=1)
    with pytest.raises(ValueError, match="k must be at least 1"):
        retrieval.recall_at_k(SCORES, [0, 1], k=0)


def test_recall_per_depth_ranks_by_cosine():
    queries = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # one query, two depths
    pool = np.array([[[1.0, 0.1], [0.0, 1.0]], [[1.0, 0.1], [0.0, 1.0]]])
    np.testing.assert_allclose(retrieval.recall_at_k_per_depth(queries, pool, [0], k=1), [1.0, 0.0])
    with pytest.raises(ValueError, match="zero vector"):
        retrieval.cosine_scores(np.zeros((1, 2)), pool[0])


def test_judged_corpus_pairs_every_query_with_sentences_of_the_corpus():
    from embedding_geometry.core import corpora

    sentences, topics, queries = retrieval.judged_corpus()
    assert len(sentences) == len(topics) == corpora.CORPUS_SIZE
    assert queries["queries"] and len(queries["relevant"]) == len(queries["queries"])
    assert all(0 <= i < len(sentences) for found in queries["relevant"] for i in found)
