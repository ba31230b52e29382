"""Chapter 5's judged corpus queries (ranks and recall@k: test_ranking)."""


from embedding_geometry.studies import retrieval

def test_judged_corpus_pairs_every_query_with_sentences_of_the_corpus():
    from embedding_geometry.core import corpora

    sentences, topics, queries = retrieval.judged_corpus()
    assert len(sentences) == len(topics) == corpora.CORPUS_SIZE
    assert queries["queries"] and len(queries["relevant"]) == len(queries["queries"])
    assert all(0 <= i < len(sentences) for found in queries["relevant"] for i in found)
