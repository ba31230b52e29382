"""Chapter 7's synthetic task: its words and texts follow the rules of the module docstring, the
small encoder is built deterministically from its seed and runs through the book's extraction,
and retrieval scores, recall and the test against chance agree with hand-computed cases."""

import math

import numpy as np
import pytest
from test_layer_by_layer import E1, E2, record

from embedding_geometry.core import activations
from embedding_geometry.core.errors import ParameterError
from embedding_geometry.chapters.ch07_objective import synthetic_task

TASK = synthetic_task.Task(concepts=16, train_pairs=120, held_out=20)


def _concepts(words, text):
    """The concepts a text names, and the forms it names them in."""
    form_of = {w: (c, f) for c, pair in enumerate(words.forms) for f, w in enumerate(pair)}
    return [form_of[w] for w in text.split() if w in form_of]


def test_words_are_stop_word_fillers_and_distinct_content_words_paired_by_a_seed():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = synthetic_task.vocabulary(TASK)
    assert len(words.fillers) == TASK.n_fillers and set(words.fillers) <= ENGLISH_STOP_WORDS
    content = [w for pair in words.forms for w in pair]
    assert len(words.forms) == TASK.concepts and len(set(content)) == 2 * TASK.concepts
    assert not set(content) & ENGLISH_STOP_WORDS
    assert synthetic_task.vocabulary(TASK) == words
    other = synthetic_task.vocabulary(synthetic_task.Task(concepts=16, seed=1))
    assert {frozenset(p) for p in other.forms} != {frozenset(p) for p in words.forms}  # another pairing
    assert words.vocabulary[:5] == list(synthetic_task.SPECIALS) and len(set(words.vocabulary)) == len(words.vocabulary)


def test_fillers_are_the_most_frequent_stop_words_and_content_words_the_most_frequent_others_of_three_letters():
    """The module docstring's rule, counted again here from the corpus: the fillers are the corpus's
    most frequent stop words (whatever their length: "after", "with"), the content words its most
    frequent other words of at least three letters ("man", "day" among them)."""
    import collections
    import re

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from embedding_geometry.core import corpora

    counts = collections.Counter(w for s in corpora.corpus()["sentence"] for w in re.findall(r"[a-z]+", s.lower()))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    words = synthetic_task.vocabulary(TASK)
    assert list(words.fillers) == [w for w in ranked if w in ENGLISH_STOP_WORDS][:TASK.n_fillers]
    assert any(len(w) > 3 for w in words.fillers)
    others = [w for w in ranked if w not in ENGLISH_STOP_WORDS and len(w) >= 3][: 2 * TASK.concepts]
    content = {w for pair in words.forms for w in pair}
    assert content == set(others) and min(len(w) for w in content) == 3


def test_a_query_names_some_of_its_documents_concepts_only_in_the_other_form():
    made = synthetic_task.texts(TASK)
    words = made["words"]
    for query, document in made["train"] + made["held_out"]:
        asked, held = _concepts(words, query), dict(_concepts(words, document))
        assert len(asked) == TASK.query_concepts and len(held) == TASK.doc_concepts
        assert all(c in held and held[c] == 1 - f for c, f in asked)  # the document's concept, the other form
        assert not set(query.split()) & set(document.split()) - set(words.fillers)  # no content word shared
        assert len(document.split()) == TASK.doc_concepts + TASK.doc_fillers
    documents = [d for _, d in made["train"]]
    assert len(set(documents)) == len(documents) == TASK.train_pairs and len(made["held_out"]) == TASK.held_out
    assert not {d for _, d in made["held_out"]} & set(documents)
    assert synthetic_task.texts(TASK)["train"] == made["train"]


def test_sizes_the_task_cannot_give_are_one_line_errors():
    with pytest.raises(ParameterError, match="query_concepts"):
        synthetic_task.texts(synthetic_task.Task(concepts=8, doc_concepts=3, query_concepts=4))
    with pytest.raises(ParameterError, match="concepts"):
        synthetic_task.vocabulary(synthetic_task.Task(concepts=100_000))
    with pytest.raises(ParameterError, match="scratch_width"):
        synthetic_task.Shape(width=30, heads=4)


def test_the_tokenizer_reads_one_token_per_word_between_cls_and_sep():
    words = synthetic_task.vocabulary(TASK)
    tokenizer = synthetic_task.tokenizer(words)
    text = f"{words.forms[0][0]} {words.fillers[0]} {words.forms[3][1]}"
    encoded = tokenizer(text, return_special_tokens_mask=True)
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"]) == ["[CLS]", *text.split(), "[SEP]"]
    assert encoded["special_tokens_mask"] == [1, 0, 0, 0, 1]
    assert tokenizer.convert_ids_to_tokens(tokenizer("zzyzx")["input_ids"])[1] == "[UNK]"


def test_the_encoder_is_drawn_from_its_seed_and_measured_by_the_books_extraction():
    words = synthetic_task.vocabulary(TASK)
    shape = synthetic_task.Shape(layers=2, width=16)
    one, two, other = (synthetic_task.encoder(words, shape, s) for s in (3, 3, 4))
    assert one.info.sha256 == two.info.sha256 != other.info.sha256
    assert (one.info.layers, one.info.hidden, one.info.heads, one.info.vocab) == (2, 16, 4, len(words.vocabulary))
    assert not one.model.training and one.model.config.intermediate_size == 64
    texts = [d for _, d in synthetic_task.texts(TASK)["held_out"][:3]]
    acts = activations.extract(one, texts, cache=False, progress=False)
    assert acts.n_layers == 2 and acts.hidden.shape[-1] == 16
    assert [len(t.split()) for t in texts] == [len(s[0]) for s in acts.word_states()]  # every word is one token


def test_scores_are_the_two_training_scores_on_hand_made_tokens():
    # queries (e1, e2) and (e2); documents (e1) and (e2, e2): one depth, every token real
    queries, documents = record([[E1, E2]], [[E2]]), record([[E1]], [[E2, E2]])
    np.testing.assert_allclose(synthetic_task.scores(queries, documents, "mean_pool"),
                               [[1 / math.sqrt(2), 1 / math.sqrt(2)], [0.0, 1.0]])
    # MaxSim: mean over the query's tokens of the best cosine among the document's
    np.testing.assert_allclose(synthetic_task.scores(queries, documents, "maxsim"), [[0.5, 0.5], [0.0, 1.0]])


def test_beating_chance_is_an_exact_binomial_test():
    from scipy.stats import binomtest

    learned = synthetic_task.beats_chance(np.array([1.0] * 8 + [0.0] * 12), chance=0.05)
    assert learned["beats_chance"] and learned["recall"] == 0.4 and learned["n_queries"] == 20
    assert learned["p_value"] == pytest.approx(binomtest(8, 20, 0.05, alternative="greater").pvalue)
    low, high = learned["interval"]
    assert 0 < low < 0.4 < high < 1  # two-sided exact interval
    at_chance = synthetic_task.beats_chance(np.array([1.0] + [0.0] * 19), chance=0.05)
    assert not at_chance["beats_chance"] and at_chance["p_value"] > 0.05
