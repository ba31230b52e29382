"""Fuzz the model directories ``core.models.load`` is given: files missing, emptied (a zero-byte
``model.safetensors``), cut short, replaced by random bytes, non-UTF-8 or another JSON type, and
a config.json of another architecture over the tiny BERT's weights.

Each must either load a model that extracts a sentence, or give a one-line error naming the
model and what is expected. The original directory stays byte-identical.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from embedding_geometry.core import activations, models
from embedding_geometry.core.errors import BookError
from fuzz_values import FUZZ, budget, one_line, snapshot

FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json",
         "sentence_bert_config.json", "1_Pooling/config.json"]
OTHER_ARCHITECTURES = {
    "gpt2": {"model_type": "gpt2", "n_layer": 2, "n_embd": 40, "n_head": 4},
    "t5": {"model_type": "t5", "num_layers": 2, "d_model": 40, "num_heads": 4, "d_kv": 10, "d_ff": 64},
    "distilbert": {"model_type": "distilbert", "n_layers": 3, "dim": 40, "n_heads": 4, "hidden_dim": 64},
    "xlm-roberta": {"model_type": "xlm-roberta", "hidden_size": 48, "num_hidden_layers": 2,
                    "num_attention_heads": 3, "intermediate_size": 64, "vocab_size": 300},
    "bert, wider": {"model_type": "bert", "hidden_size": 80, "num_hidden_layers": 3, "num_attention_heads": 4,
                    "intermediate_size": 64, "vocab_size": 30522},
    "bert, deeper": {"model_type": "bert", "hidden_size": 40, "num_hidden_layers": 6, "num_attention_heads": 4,
                     "intermediate_size": 64, "vocab_size": 30522, "max_position_embeddings": 160},
    "no model_type": {"hidden_size": 40},
}

damage = st.one_of(
    st.tuples(st.sampled_from(FILES), st.sampled_from(["delete", "empty", "non-utf8", "a JSON list"])),
    st.tuples(st.sampled_from(FILES), st.integers(1, 400).map(lambda n: ("truncate", n))),
    st.tuples(st.sampled_from(FILES), st.binary(min_size=1, max_size=16).map(lambda b: ("bytes", b))),
    st.tuples(st.just("config.json"), st.sampled_from(sorted(OTHER_ARCHITECTURES)).map(lambda a: ("architecture", a))),
)


def apply(directory, file, how) -> None:
    """Damage ``directory/file``: it is unlinked before anything is written, so that a copy made
    of hard links never writes through to the original."""
    path = directory / file
    content = path.read_bytes()
    path.unlink()
    if how == "delete":
        return
    if how == "empty":
        content = b""
    elif how == "non-utf8":
        content = b"\xff\xfe" + content
    elif how == "a JSON list":
        content = b"[1, 2]"
    elif how[0] == "truncate":
        content = content[: how[1]]
    elif how[0] == "bytes":
        content = how[1]
    else:
        content = json.dumps(OTHER_ARCHITECTURES[how[1]]).encode()
    path.write_bytes(content)


@pytest.fixture(scope="module")
def original(tiny_bert_dir):
    return snapshot(tiny_bert_dir)


@settings(parent=FUZZ, max_examples=budget(40))
@given(change=damage)
@example(change=("model.safetensors", "empty"))
@example(change=("config.json", ("architecture", "gpt2")))
@example(change=("tokenizer.json", "delete"))
def test_a_damaged_model_directory_loads_or_gives_one_line(tiny_bert_dir, original, tmp_path_factory, change):
    directory = tmp_path_factory.mktemp("model") / "m"
    shutil.copytree(tiny_bert_dir, directory, copy_function=os.link)  # the weights are not copied
    apply(directory, *change)
    try:
        loaded = models.load(str(directory), device="cpu")
        record = activations.extract(loaded, ["The cat sat on the mat"], cache=False, progress=False)
    except BookError as error:
        event(type(error).__name__)
        message = str(error)
        assert one_line(message) and ("model" in message), message
        assert str(directory) in message or "parameter 'model'" in message, message
    else:
        event("loaded")
        assert record.n_texts == 1 and record.word_mask.sum() > 0
    assert snapshot(tiny_bert_dir) == original
    shutil.rmtree(directory)


@pytest.mark.parametrize("change, expected", [
    (("model.safetensors", "empty"), "is damaged or incomplete (SafetensorError"),
    (("config.json", ("architecture", "gpt2")), "expects an encoder of a supported architecture"),
    (("config.json", ("architecture", "bert, deeper")), "has no weights for"),
    (("tokenizer.json", "delete"), "has no tokenizer files"),
    (("config.json", "non-utf8"), "is damaged or incomplete"),
])
def test_what_is_wrong_is_named(tiny_bert_dir, tmp_path, change, expected):
    directory = tmp_path / "m"
    shutil.copytree(tiny_bert_dir, directory)
    apply(directory, *change)
    with pytest.raises(BookError, match=expected.replace("(", r"\(")):
        models.load(str(directory), device="cpu")
