"""Texts built from corpus sentences, the article's sliding windows, and what the model reads."""

import numpy as np
import pytest

from embedding_geometry.core import activations, corpora
from embedding_geometry.studies import long_texts

SENTENCES = [f"Sentence number {i} is here." for i in range(12)]
TOPICS = ["a"] * 4 + ["b"] * 4 + ["c"] * 4


def test_dilution_sets_key_first_and_last():
    first = long_texts.dilution_sets(SENTENCES, TOPICS, n_keys=3, k_max=4, seed=1)
    last = long_texts.dilution_sets(SENTENCES, TOPICS, n_keys=3, k_max=4, seed=1, key_last=True)
    assert first["keys"] == last["keys"] and first["fillers"] == last["fillers"]
    for key, fillers, texts, texts_last in zip(first["keys"], first["fillers"], first["texts"], last["texts"]):
        assert len(texts) == 5 and texts[0] == key == texts_last[0]
        assert texts[2] == " ".join([key, *fillers[:2]]) and texts_last[2] == " ".join([*fillers[:2], key])
        key_topic = TOPICS[SENTENCES.index(key)]
        assert all(TOPICS[SENTENCES.index(f)] != key_topic for f in fillers)
        assert len(set(fillers)) == len(fillers)
    with pytest.raises(ValueError, match="outside the key's topic"):
        long_texts.dilution_sets(SENTENCES, TOPICS, n_keys=1, k_max=9)


def test_topic_runs_reach_the_length(embedded):
    frame = corpora.corpus()
    runs = long_texts.topic_runs(frame["sentence"].tolist(), frame["topic"].tolist(), embedded.tokenizer, 120)
    assert len(runs) == frame["topic"].nunique()
    for topic, text in runs.items():
        assert len(embedded.tokenizer(text)["input_ids"]) >= 120
        assert text.startswith(frame.loc[frame["topic"] == topic, "sentence"].iloc[0])


def test_documents_are_disjoint_runs_of_enough_words():
    docs = long_texts.documents(SENTENCES, min_words=12, n_docs=3, seed=0)
    assert len(docs) == 3
    assert all(sum(len(SENTENCES[i].split()) for i in doc) >= 12 for doc in docs)
    flat = [i for doc in docs for i in doc]
    assert len(flat) == len(set(flat))
    with pytest.raises(ValueError, match="holds only"):
        long_texts.documents(SENTENCES, min_words=30, n_docs=3)


def test_word_windows_follow_the_article_and_drop_the_tail():
    ten = " ".join(f"w{i}" for i in range(10))
    assert long_texts.word_windows(ten, window=4, stride=2) == [
        "w0 w1 w2 w3",
        "w2 w3 w4 w5",
        "w4 w5 w6 w7",
        "w6 w7 w8 w9",
    ]
    eleven = ten + " w10"
    windows = long_texts.word_windows(eleven, window=4, stride=2)
    assert len(windows) == 4 and not any("w10" in w for w in windows)  # the last word is never encoded
    assert long_texts.window_starts(11, 4, 2) == [0, 2, 4, 6]
    assert long_texts.word_windows("short text", window=4) == ["short text"]
    with pytest.raises(ValueError, match="≥ 1"):
        long_texts.word_windows(ten, window=0)


def test_pool_windows():
    vectors = np.array([[3.0, 0.0], [0.0, 2.0]])
    assert long_texts.pool_windows(vectors, "max") == pytest.approx([1.0, 1.0])
    assert long_texts.pool_windows(vectors, "mean") == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="window pooling must be one of"):
        long_texts.pool_windows(vectors, "sum")


def test_read_masks_and_spans_by_hand():
    offsets = np.array([0, 2, 3, 5])  # three words of 2, 1 and 2 tokens
    assert long_texts.read_mask(offsets, 3).tolist() == [True, True, True, False, False]
    assert long_texts.read_mask(offsets, 2, starts=[0, 1], window=2).tolist() == [True, True, True, True, False]
    assert long_texts.read_mask(offsets, 3, starts=[0, 1], window=2).all()
    assert long_texts.sentence_spans(offsets, [2, 1]) == [(0, 3), (3, 5)]


def test_word_token_offsets_and_tokens_per_word(embedded):
    offsets = long_texts.word_token_offsets(embedded.tokenizer, "DataForce is here")
    assert offsets.tolist() == [0, 2, 3, 4]
    assert long_texts.tokens_per_word(embedded.tokenizer, ["DataForce is here"]) == pytest.approx(4 / 3)
    assert long_texts.budget(embedded.tokenizer, 256) == 254


def test_dilution_texts_put_the_key_first_and_last_in_the_order_the_study_reads():
    sets = long_texts.dilution_texts(SENTENCES, TOPICS, n_keys=2, k_max=3, seed=1)
    assert list(sets) == list(long_texts.KEY_POSITIONS)
    assert sets["key first"]["keys"] == sets["key last"]["keys"]
    flat = long_texts.flat_texts(sets)
    assert len(flat) == 2 * 2 * 4
    assert flat[:4] == sets["key first"]["texts"][0] and flat[-4:] == sets["key last"]["texts"][1]


def test_long_documents_encode_each_document_then_its_windows():
    docs = long_texts.long_documents(SENTENCES, min_words=12, n_docs=2, window=4, stride=2, seed=0)
    assert docs.documents == long_texts.documents(SENTENCES, 12, 2, seed=0)
    assert docs.texts == [" ".join(SENTENCES[i] for i in doc) for doc in docs.documents]
    assert docs.windows == [long_texts.word_windows(t, 4, 2) for t in docs.texts]
    assert docs.encoded == docs.texts + [w for ws in docs.windows for w in ws]


def test_long_text_study_with_hand_made_vectors(embedded):
    # two documents, one window each (window ≥ their length); every sentence's vector points
    # at its own document's vector, so every method finds every document
    docs = long_texts.long_documents(SENTENCES, min_words=12, n_docs=2, window=50, stride=25, seed=0)
    assert [len(ws) for ws in docs.windows] == [1, 1]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # documents, then windows
    sentence_vectors = np.zeros((len(SENTENCES), 2))
    for d, doc in enumerate(docs.documents):
        sentence_vectors[doc] = vectors[d]
    study = long_texts.long_text_study(docs, vectors, SENTENCES, sentence_vectors, embedded.tokenizer, 256)["long_text"]
    assert study["n_docs"] == 2 and study["windows_per_doc"] == 1.0 and study["token_budget"] == 254
    assert study["coverage"] == {"truncation": 1.0, "windows": 1.0}
    assert study["windows_over_limit_fraction"] == 0.0 and study["sentences_beyond_truncation"] == 0.0
    assert all(r["all"] == 1.0 and r["beyond_truncation"] is None for r in study["recall_at_1"].values())
    assert study["windows_minus_truncation"] == 0.0 and study["max_minus_mean"] == 0.0
    assert study["tokens_per_word"] == long_texts.tokens_per_word(embedded.tokenizer, SENTENCES)
    assert study["words_in_budget"] == pytest.approx(254 / study["tokens_per_word"])
    short = long_texts.long_text_study(docs, vectors, SENTENCES, sentence_vectors, embedded.tokenizer, 12)["long_text"]
    assert short["coverage"]["truncation"] < 1 and short["windows_over_limit_fraction"] == 1.0
    exercise = long_texts.long_text_study(
        docs, vectors, SENTENCES, sentence_vectors, embedded.tokenizer, 12, key="exercise", samples=False
    )
    assert set(exercise) == {"exercise"} and exercise["exercise"]["coverage"] == short["coverage"]


def test_what_a_model_reads_needs_only_its_tokenizer(embedded):
    docs = long_texts.long_documents(SENTENCES, min_words=12, n_docs=2, window=50, stride=25, seed=0)
    found = long_texts.coverage_study(docs, embedded.tokenizer, 12)
    read, per_unit = found["long_text"], found["per_unit"]
    studied = long_texts.long_text_study(
        docs, np.tile(np.eye(2), (2, 1)), SENTENCES, np.ones((len(SENTENCES), 2)), embedded.tokenizer, 12
    )["long_text"]
    assert {k: studied[k] for k in read} == read  # the same what-is-read as the full study
    assert per_unit["long_text.coverage.windows"].mean() == pytest.approx(read["coverage"]["windows"])
    assert read["token_budget"] == 10 and read["windows_over_limit_fraction"] == 1.0
    assert set(long_texts.coverage_study(docs, embedded.tokenizer, 12, key="other", samples=False)) == {"other"}


def test_per_document_hits_count_each_document_once(embedded):
    # every sentence points nearer document 0's truncated vector and nearer document 1's window,
    # so truncation finds only document 0's sentences and the windows only document 1's
    docs = long_texts.long_documents(SENTENCES, min_words=12, n_docs=2, window=50, stride=25, seed=0)
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # documents, then one window each
    sentence_vectors = np.tile([1.0, 0.1], (len(SENTENCES), 1))
    found = long_texts.long_text_study(docs, vectors, SENTENCES, sentence_vectors, embedded.tokenizer, 256)
    sizes = [len(doc) for doc in docs.documents]
    hits = found["per_unit"]["long_text.windows_minus_truncation.hits"]
    assert hits.tolist() == [-sizes[0], sizes[1]]
    assert found["long_text"]["windows_minus_truncation"] == pytest.approx((sizes[1] - sizes[0]) / sum(sizes))


def test_long_text_study_on_the_tiny_model(tiny_bert):
    sentences = corpora.corpus()["sentence"].tolist()
    vectors = np.random.default_rng(0).standard_normal((len(sentences), tiny_bert.info.hidden))
    docs = long_texts.long_documents(sentences, min_words=150, n_docs=2, window=40, stride=20)
    encoded = activations.extract(tiny_bert, docs.encoded, batch_size=4, cache=False, progress=False)
    found = long_texts.long_text_study(
        docs, encoded.mean_pool("all")[-1], sentences, vectors, tiny_bert.tokenizer, tiny_bert.info.max_seq_length
    )
    study, per_unit = found["long_text"], found["per_unit"]
    assert study["n_docs"] == 2
    assert per_unit["long_text.coverage.windows"].mean() == pytest.approx(study["coverage"]["windows"])
    for key in ("windows_minus_truncation", "max_minus_mean"):  # per document: a ratio of means
        hits, counts = per_unit[f"long_text.{key}.hits"], per_unit[f"long_text.{key}.sentences"]
        assert counts.tolist() == [len(doc) for doc in docs.documents]
        assert hits.sum() / counts.sum() == pytest.approx(study[key])
    assert 0 < study["coverage"]["truncation"] < study["coverage"]["windows"] <= 1
    assert set(study["recall_at_1"]) == {"truncation", "windows_max", "windows_mean"}
    assert all(0 <= r["all"] <= 1 for r in study["recall_at_1"].values())


def test_document_count_is_how_many_documents_the_shuffle_gives():
    n = long_texts.document_count(SENTENCES, min_words=12, seed=0)
    assert len(long_texts.documents(SENTENCES, 12, n, seed=0)) == n
    with pytest.raises(ValueError, match=f"holds only {n} documents"):
        long_texts.documents(SENTENCES, 12, n + 1, seed=0)
