"""Texts of exactly T tokens (core.windows): whole sentences, the cut last one, separators, the
sentence sources (corpus cycled, WikiText) and what the results record about the texts."""

import hashlib
from itertools import islice

import numpy as np
import pytest

from embedding_geometry.core import corpora, windows
from embedding_geometry.core.errors import ParameterError

SENTENCES = [
    "The cat sat on the mat.",
    "A dog barked at the cat!",
    "Birds sing in the morning.",
    "Is the garden green?",
    "The mat was red.",
    "Rain fell all night long.",
]


def test_windows_are_exactly_t_tokens_of_whole_sentences(tiny_bert):
    tokenizer = tiny_bert.tokenizer
    made = list(windows.windows(tokenizer, SENTENCES, n_texts=2, length=16))
    for w in made:
        assert len(w.input_ids) == 16 and w.tokens[0] == "[CLS]" and w.tokens[-1] == "[SEP]"
        assert tokenizer(w.text)["input_ids"] == w.input_ids.tolist()  # the text is what the model read
        ids = w.sentence_ids[1:-1]
        assert (np.diff(ids) >= 0).all() and ids[0] == 0 and w.sentence_ids[0] == w.sentence_ids[-1] == -1
    first, second = made
    # "the cat sat on the mat ." is 7 pieces, "a dog barked at the cat !" 7 more: 16 with [CLS] [SEP]
    assert first.text == "The cat sat on the mat. A dog barked at the cat!" and first.whole_sentences == 2
    assert np.flatnonzero(first.separators).tolist() == [7, 14, 15]
    # the next text starts with the next sentence; its last sentence is cut
    assert second.text.startswith("Birds sing in the morning. Is the garden green?")
    assert second.whole_sentences == 2 and not second.text.endswith("The mat was red.")
    assert second.separators[-1] and second.separators.sum() == 3


def test_windows_run_out_skip_blanks_and_check_length(tiny_bert):
    with pytest.raises(ParameterError, match="'n_texts' expects at most 1 texts of 16 tokens"):
        list(windows.windows(tiny_bert.tokenizer, SENTENCES[:3], n_texts=2, length=16))
    spaced = [SENTENCES[0], "  ", "", SENTENCES[1]]
    (w,) = windows.windows(tiny_bert.tokenizer, spaced, n_texts=1, length=16)
    assert w.text == "The cat sat on the mat. A dog barked at the cat!"
    for bad in (2, 4.0, True):
        with pytest.raises(ParameterError, match="'text_length' expects an integer ≥ 4"):
            list(windows.windows(tiny_bert.tokenizer, SENTENCES, n_texts=1, length=bad))


def test_cycled_repeats_in_new_seeded_orders():
    stream = windows.cycled(["a", "b", "c"], seed=3)
    first = [next(stream) for _ in range(9)]
    assert first[:3] == ["a", "b", "c"] and sorted(first[3:6]) == sorted(first[6:9]) == ["a", "b", "c"]
    again = windows.cycled(["a", "b", "c"], seed=3)
    assert [next(again) for _ in range(9)] == first
    with pytest.raises(ParameterError, match="'sentences'"):
        next(windows.cycled([]))


def test_sentence_stream_names_the_source_and_restarts_on_every_call():
    first = windows.sentence_stream("corpus", seed=0)
    sentences = corpora.corpus()["sentence"].tolist()
    assert [next(first) for _ in range(3)] == sentences[:3]
    n = len(sentences) + 5  # past the first pass: into the seeded shuffled order
    again = windows.sentence_stream("corpus", seed=0)
    assert list(islice(again, n)) == list(islice(windows.cycled(sentences, seed=0), n))
    with pytest.raises(ParameterError, match="'texts' expects one of 'corpus', 'wikitext'; got 'books'"):
        windows.sentence_stream("books")


def test_from_source_gives_the_same_first_texts_on_every_call(tiny_bert):
    made = [w.text for w in windows.from_source(tiny_bert.tokenizer, "corpus", 3, length=24, seed=0)]
    again = windows.windows(tiny_bert.tokenizer, windows.sentence_stream("corpus", 0), 3, 24)
    assert made == [w.text for w in again] and len(made) == 3
    shorter = [w.text for w in windows.from_source(tiny_bert.tokenizer, "corpus", 2, length=24, seed=0)]
    assert shorter == made[:2]


WIKITEXT = """ = Valkyria Chronicles III =\x20

 Senjō no Valkyria 3 is a tactical role @-@ playing video game . It was released in 2011 in Japan !
 The game 's budget was 1 @,@ 000 @.@ 5 million yen . Is it a sequel ? Yes .

 = = Gameplay = =\x20

 The player controls a squad of U.S. soldiers on a map .
"""


def test_wikitext_code_path_on_a_local_file(tmp_path, tiny_bert):
    path = tmp_path / "wiki.txt"
    path.write_text(WIKITEXT)
    sentences = list(windows.wikitext_sentences(data_files=path))
    assert sentences == [
        "Senjō no Valkyria 3 is a tactical role-playing video game .",
        "It was released in 2011 in Japan !",
        "The game 's budget was 1,000.5 million yen .",
        "Is it a sequel ?",
        "Yes .",
        "The player controls a squad of U.S. soldiers on a map .",
    ]
    (w,) = windows.windows(tiny_bert.tokenizer, windows.wikitext_sentences(data_files=path), 1, length=24)
    assert len(w.input_ids) == 24 and w.text.startswith("Senjō no Valkyria")
    assert windows.split_wikitext(" = = Heading = = ") == []


def test_text_record_keeps_the_first_texts_and_hashes_all(tiny_bert):
    made = list(windows.windows(tiny_bert.tokenizer, windows.cycled(SENTENCES), 25, length=12))
    record = windows.TextRecord()
    for w in made:
        record.add(w)
    summary = record.to_dict()
    assert summary["count"] == 25 and summary["first"] == [w.text for w in made[:windows.FIRST_TEXTS]]
    assert summary["sha256"] == hashlib.sha256("".join(w.text + "\n" for w in made).encode()).hexdigest()
    assert summary["whole_sentences_per_text"] == sum(w.whole_sentences for w in made) / 25
    assert windows.TextRecord().to_dict()["whole_sentences_per_text"] == 0  # no texts: no division by 0
