"""Chapter 6's retrieval pieces: BM25, reciprocal-rank fusion, nDCG, reranking, the query set."""

import numpy as np
import pytest

from embedding_geometry.core import corpora, ranking
from embedding_geometry.studies import retrieval
from embedding_geometry.core.errors import ModelUnavailableError


def test_competition_ranks_share_the_best_rank_on_ties():
    assert retrieval.competition_ranks(np.array([[3.0, 1.0, 3.0, 2.0]])).tolist() == [[1, 4, 1, 3]]


def test_rrf_on_a_hand_ranking():
    dense = np.array([[0.9, 0.5, 0.1]])  # ranks 1, 2, 3
    lexical = np.array([[0.0, 2.0, 1.0]])  # ranks 3, 1, 2
    fused = retrieval.reciprocal_rank_fusion([dense, lexical], k=60)
    expected = [1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62]
    assert fused[0] == pytest.approx(expected)
    assert np.argmax(fused[0]) == 1  # second in one list, first in the other
    with pytest.raises(ValueError, match="share one shape"):
        retrieval.reciprocal_rank_fusion([dense, np.zeros((1, 4))])
    with pytest.raises(ValueError, match="at least one"):
        retrieval.reciprocal_rank_fusion([])


def test_ndcg_of_a_known_ranking():
    scores = np.array([[0.9, 0.8, 0.7, 0.6]])
    relevant = [[0, 2]]  # relevant at ranks 1 and 3
    dcg = 1 + 1 / np.log2(4)
    ideal = 1 + 1 / np.log2(3)
    assert retrieval.ndcg_at_k(scores, relevant, k=10) == pytest.approx(dcg / ideal)
    assert retrieval.ndcg_at_k(scores, [[0, 1]], k=10) == pytest.approx(1.0)
    assert retrieval.ndcg_at_k(scores, [[3]], k=2) == 0.0
    assert retrieval.ndcg_at_k(np.zeros((1, 4)), [[0]], k=10) == pytest.approx(1 / np.log2(5))  # ties: pessimistic
    with pytest.raises(ValueError, match="k must be"):
        retrieval.ndcg_at_k(scores, relevant, k=0)


def test_bm25_on_a_three_document_corpus():
    documents = ["The cat sat", "The dog barked", "Cats and dogs"]
    scores = retrieval.bm25_scores(["cat"], documents)
    # "the" and "and" are stopwords, "cats" stems to "cat": documents 0 and 2 contain it once and
    # every document has two terms (|d| = avgdl), so both score idf · 1 / (1 + k1) with
    # idf = ln(1 + (N − df + 0.5) / (df + 0.5)) (Lucene's BM25: no (k1 + 1) in the numerator).
    idf = np.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    assert scores[0] == pytest.approx([idf / 2.5, 0.0, idf / 2.5], rel=1e-5)
    assert retrieval.bm25_scores(["barking dog"], documents)[0].argmax() == 1


def test_rerank_reorders_only_the_top_candidates():
    scores = np.array([[0.9, 0.8, 0.7, 0.1]])
    def longest(pairs):
        return [len(document) for _, document in pairs]
    documents = ["a", "bbb", "cc", "dddddd"]
    new = retrieval.rerank(["q"], documents, scores, longest, depth=3)
    assert np.argsort(-new[0]).tolist() == [1, 2, 0, 3]  # "dddddd" is beyond the depth
    assert ranking.ranks(new, [[1]]) == [[1]]
    with pytest.raises(ValueError, match="depth"):
        retrieval.rerank(["q"], documents, scores, longest, depth=0)


def test_cross_encoder_loading(tiny_bert_dir, tmp_path):
    predict = retrieval.cross_encoder(str(tiny_bert_dir))  # a random head on the tiny BERT
    assert len(predict([("a query", "a document"), ("another", "text")])) == 2
    with pytest.raises(ModelUnavailableError, match="not available offline"):
        retrieval.cross_encoder(str(tmp_path / "no-such-model"))
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelUnavailableError, match="not a model directory"):
        retrieval.cross_encoder(str(tmp_path))


def test_summary_by_kind():
    scores = np.array([[0.9, 0.1], [0.1, 0.9], [0.9, 0.1]])
    result = retrieval.summary_by_kind(scores, [[0], [0], [1]], ["keyword", "paraphrase", "keyword"], ks=(1,))
    assert result["all"]["recall_at_1"] == pytest.approx(1 / 3)
    assert result["keyword"]["recall_at_1"] == pytest.approx(0.5)
    assert result["paraphrase"]["ndcg_at_10"] == pytest.approx(1 / np.log2(3))


def test_the_judged_query_set():
    frame = corpora.corpus()
    sentences, topics = frame["sentence"].tolist(), frame["topic"].tolist()
    qs = retrieval.corpus_queries(sentences)
    assert len(qs["queries"]) >= 40 and len(set(qs["queries"])) == len(qs["queries"])
    assert not set(qs["queries"]) & set(sentences)  # no query copies a corpus sentence
    assert set(qs["kinds"]) == {"keyword", "paraphrase"} and min(qs["kinds"].count(k) for k in set(qs["kinds"])) >= 15
    for query, topic, relevant in zip(qs["queries"], qs["topics"], qs["relevant"]):
        assert relevant and all(topics[i] == topic for i in relevant), query
    with pytest.raises(ValueError, match="not in the corpus"):
        retrieval.corpus_queries(sentences[:3] + sentences[4:])


def test_hybrid_study_of_a_three_sentence_corpus():
    documents = ["metformin treats type 2 diabetes", "the cat sat on the mat", "rain is forecast for tomorrow"]
    queries = {"queries": ["metformin", "weather tomorrow"], "kinds": ["keyword", "paraphrase"], "relevant": [[0], [2]]}
    vectors = np.eye(3)
    found = retrieval.hybrid_study(queries, documents, vectors, np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    study, per_unit = found["hybrid_retrieval"], found["per_unit"]
    assert set(study) == {"dense", "bm25", "rrf", "rrf_minus_dense", "rerank_minus_dense"}
    assert study["dense"]["keyword"]["recall_at_1"] == 0.0 and study["dense"]["paraphrase"]["recall_at_1"] == 1.0
    assert study["bm25"]["keyword"]["recall_at_1"] == 1.0
    assert study["rrf_minus_dense"]["all"] == pytest.approx(study["rrf"]["all"]["ndcg_at_10"]
                                                            - study["dense"]["all"]["ndcg_at_10"])
    for kind, n in (("all", 2), ("keyword", 1), ("paraphrase", 1)):  # paired per-query differences
        differences = per_unit[f"hybrid_retrieval.rrf_minus_dense.{kind}"]
        assert len(differences) == n and np.mean(differences) == pytest.approx(study["rrf_minus_dense"][kind])
    assert study["rerank_minus_dense"] is None and "hybrid_retrieval.rerank_minus_dense" not in per_unit
    def judge(pairs):
        return [1.0 if "metformin" in d and "metformin" in q else 0.0 for q, d in pairs]
    reranked = retrieval.hybrid_study(queries, documents, vectors, np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
                                      judge, 3)
    assert reranked["hybrid_retrieval"]["dense + rerank"]["keyword"]["recall_at_1"] == 1.0
    gains = reranked["per_unit"]["hybrid_retrieval.rerank_minus_dense"]
    assert reranked["hybrid_retrieval"]["rerank_minus_dense"] > 0 and gains[1] == 0.0
    assert np.mean(gains) == pytest.approx(reranked["hybrid_retrieval"]["rerank_minus_dense"])


def test_per_query_values_average_to_recall_and_ndcg():
    scores = np.array([[0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4]])
    relevant = [[0, 2], [0]]
    ndcg = retrieval.ndcg_per_query(scores, relevant, k=10)
    assert ndcg[0] == pytest.approx((1 + 1 / np.log2(4)) / (1 + 1 / np.log2(3)))
    assert ndcg[1] == pytest.approx(1 / np.log2(5))
    assert ndcg.mean() == pytest.approx(retrieval.ndcg_at_k(scores, relevant, 10))
    assert ranking.recall_per_query(scores, relevant, 1).tolist() == [0.5, 0.0]
    assert retrieval.paired_ndcg(scores, scores[::-1], [[0, 2], [0]]) == pytest.approx(
        ndcg - retrieval.ndcg_per_query(scores[::-1], relevant, 10))
