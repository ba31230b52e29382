"""Parameter validation: one line naming the parameter and what it expects."""

import pytest

from embedding_geometry.book import parameters, rules
from embedding_geometry.core.errors import ParameterError

TABLE = {**rules.chapters()["00_the_model"], **rules.chapters()["04_attention_context_similarity"],
         **rules.chapters()["01_layer_by_layer"], "threshold": parameters.number(0.0, 1.0)}


@pytest.mark.parametrize("name, value, expected", [
    ("batch_size", -1, "parameter 'batch_size' expects an integer in [1, 4096]; got -1"),
    ("batch_size", "8", "parameter 'batch_size' expects an integer in [1, 4096]; got '8'"),
    ("batch_size", True, "parameter 'batch_size' expects an integer in [1, 4096]; got True"),
    ("device", "gpu", "parameter 'device' expects one of 'auto', 'cpu', 'cuda'; got 'gpu'"),
    ("threshold", 1.5, "parameter 'threshold' expects a number in [0.0, 1.0]; got 1.5"),
    ("threshold", float("nan"), "parameter 'threshold' expects a number in [0.0, 1.0]; got nan"),
    ("sentences", [], "parameter 'sentences' expects None or a list of at least 3 non-empty, distinct strings; got []"),
    ("sentences", ["a", "b", " "],
     "parameter 'sentences' expects None or a list of at least 3 non-empty, distinct strings; got ' '"),
    ("sentences", ["a", "b", "c\ud800"],
     "parameter 'sentences' expects None or a list of at least 3 non-empty, distinct strings; got 'c\\ud800'"),
    ("model", "", "parameter 'model' expects a non-empty string; got ''"),
    ("model", "m\udc80",
     "parameter 'model' expects a non-empty string of valid Unicode (no lone surrogates); got 'm\\udc80'"),
    ("trust_remote_code", "yes", "parameter 'trust_remote_code' expects true or false; got 'yes'"),
    ("models", "one-model",
     "parameter 'models' expects a non-empty list of model ids or local directories; got 'one-model'"),
    ("extra_sentences", "a sentence",
     "parameter 'extra_sentences' expects a list (possibly empty) of non-empty, distinct strings; got 'a sentence'"),
])
def test_bad_values_give_one_line(name, value, expected):
    with pytest.raises(ParameterError) as error:
        parameters.validate(TABLE, **{name: value})
    assert str(error.value) == expected
    assert error.value._render_traceback_() == [f"ParameterError: {expected}"]


def test_duplicates_are_named():
    with pytest.raises(ParameterError, match="found a duplicate"):
        parameters.validate(TABLE, sentences=["a", "b", "a"])


def test_good_values_pass_and_every_value_needs_a_rule_of_the_table_given():
    checked = parameters.validate({"k": parameters.integer(1, 5), "extra": parameters.text_list(0)}, k=3, extra=[])
    assert checked == {"k": 3, "extra": []}
    assert parameters.validate({"x": parameters.optional(parameters.integer(0))}, x=None) == {"x": None}
    with pytest.raises(KeyError):
        parameters.validate({"k": parameters.integer(1, 5)}, batch_size=8)


def test_the_rules_of_every_chapter_live_in_one_table():
    """issue 26: parameters.py kept a second RULES table that contradicted rules.py (max_length
    ≥ 2 there, ≥ 4 here; sentences ≥ 1 there, ≥ 3 here)."""
    assert not hasattr(parameters, "RULES")
    assert rules.chapters()["07_training_objective"]["max_length"].expects == "an integer in [4, 8192]"
    assert rules.chapters()["01_layer_by_layer"]["sentences"].expects.endswith("at least 3 non-empty, distinct strings")


def test_retrieval_sets_and_sentence_pairs():
    good = {"queries": ["q"], "pool": ["a", "b"], "relevant": [1]}
    assert parameters.retrieval_set("easy_set", good) == good
    for bad in ({"queries": ["q"], "pool": ["a", "b"]}, {**good, "relevant": [2]}, {**good, "relevant": [0, 1]},
                {**good, "relevant": [True]}, {**good, "pool": ["a"]}):
        with pytest.raises(ParameterError, match="parameter 'easy_set' expects"):
            parameters.retrieval_set("easy_set", bad)
    assert parameters.sentence_pairs("pairs", {"mine": ("a", "b")}) == {"mine": ["a", "b"]}
    for bad in ({"mine": ["a"]}, {"mine": ["a", ""]}, ["a", "b"], {"": ["a", "b"]}):
        with pytest.raises(ParameterError, match="parameter 'pairs' expects"):
            parameters.sentence_pairs("pairs", bad)
