"""Fuzz the texts a chapter extracts activations for (``core.activations.extract``), on the tiny
local BERT: empty, whitespace-only, control characters, right-to-left scripts, emoji, zero-width
characters, special tokens spelled out, lone surrogates, non-strings, 100,000 characters.

Each list of texts either gives a consistent record — every text kept verbatim, with at least
one word token, special tokens never counted as words, at most the model's sequence length —
or a one-line ParameterError naming the parameter the texts came from. Cache entries written
before stay byte-identical.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from embedding_geometry.core import activations
from embedding_geometry.core.errors import ParameterError
from fuzz_values import FUZZ, budget, ODD_TEXT, one_line, snapshot, unchanged

SPECIAL = ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "<s>", "</s>"]
text = st.one_of(
    st.sampled_from(ODD_TEXT), st.text(max_size=30),
    # controls, formats, marks, symbols
    st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "So"]), max_size=6),
    st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2),  # lone surrogates
    st.lists(st.sampled_from(SPECIAL + [" ", "word"]), min_size=1, max_size=5).map(" ".join),
    st.sampled_from([None, 5, b"bytes", ["nested"]]),
)


@pytest.fixture(scope="module")
def earlier(tiny_bert, tmp_path_factory):
    """A cache folder with one entry from before the fuzzing, and its bytes."""
    folder = tmp_path_factory.mktemp("text-cache")
    activations.extract(tiny_bert, ["An earlier sentence."], cache_dir=folder, progress=False)
    return folder, snapshot(folder)


def check(tiny_bert, folder, texts, source="texts"):
    try:
        record = activations.extract(tiny_bert, texts, cache_dir=folder, progress=False, source=source)
    except ParameterError as error:
        assert one_line(str(error)) and str(error).startswith(f"parameter '{source}' expects "), str(error)
        return None
    assert record.texts == list(texts) and record.n_texts == len(texts)
    assert record.offsets[-1] == record.hidden.shape[1] == len(record.tokens) == len(record.word_mask)
    assert np.isfinite(record.hidden).all()
    structural = activations._structural_ids(tiny_bert.tokenizer)
    assert not np.isin(record.input_ids[record.word_mask], structural).any()
    for i in range(record.n_texts):
        assert 0 < record.word_mask[record.rows(i)].sum() <= record.lengths[i] <= tiny_bert.info.max_seq_length
    assert (record.word_ids[record.special_mask] == -1).all()
    return record


@settings(parent=FUZZ, max_examples=budget(80))
@given(texts=st.lists(text, min_size=1, max_size=3))
@example(texts=["word " * 20_000])                      # 100,000 characters
@example(texts=["[CLS] [SEP] [PAD]"])                   # nothing but special tokens
@example(texts=["[SEP] a [CLS]"])
@example(texts=["שלום עולם", "مرحبا", "😀👍🏽"])
def test_any_texts_give_a_record_or_one_line(tiny_bert, earlier, texts):
    folder, before = earlier
    event("extracted" if check(tiny_bert, folder, texts) else "refused")
    assert unchanged(before)


def test_what_a_text_can_be_is_named(tiny_bert, earlier):
    folder, _ = earlier
    for texts, expected in [("one string", "a list of texts, not one string"), ([], "a non-empty list"),
                            (["ok", None], "a list of strings"), (["a\ud800b"], "no lone surrogates"),
                            (["[CLS] [SEP]"], "at least one word token"), ([" \t"], "at least one word token")]:
        with pytest.raises(ParameterError, match=f"^parameter 'sentences' expects [^\n]*{re.escape(expected)}"):
            activations.extract(tiny_bert, texts, cache_dir=folder, progress=False, source="sentences")


def test_spelled_out_special_tokens_are_not_word_tokens(tiny_bert, earlier):
    record = check(tiny_bert, earlier[0], ["The [SEP] cat"])
    assert record.tokens == ["[CLS]", "the", "[SEP]", "cat", "[SEP]"]
    assert record.word_mask.tolist() == [False, True, False, True, False]
