"""Parameter validation: one line naming the parameter and what it expects."""

import pytest

from embedding_geometry.book import parameters
from embedding_geometry.core.errors import ParameterError


@pytest.mark.parametrize("name, value, expected", [
    ("batch_size", -1, "parameter 'batch_size' expects an integer in [1, 4096]; got -1"),
    ("batch_size", "8", "parameter 'batch_size' expects an integer in [1, 4096]; got '8'"),
    ("batch_size", True, "parameter 'batch_size' expects an integer in [1, 4096]; got True"),
    ("device", "gpu", "parameter 'device' expects one of 'auto', 'cpu', 'cuda'; got 'gpu'"),
    ("threshold", 1.5, "parameter 'threshold' expects a number in [0.0, 1.0]; got 1.5"),
    ("threshold", float("nan"), "parameter 'threshold' expects a number in [0.0, 1.0]; got nan"),
    ("sentences", [], "parameter 'sentences' expects a list of at least 1 non-empty, distinct strings; got []"),
    ("sentences", ["a", " "], "parameter 'sentences' expects a list of at least 1 non-empty, distinct strings; got ' '"),
    ("model", "", "parameter 'model' expects a non-empty string; got ''"),
    ("trust_remote_code", "yes", "parameter 'trust_remote_code' expects true or false; got 'yes'"),
    ("models", "one-model", "parameter 'models' expects a non-empty list of model ids or local directories; got 'one-model'"),
])
def test_bad_values_give_one_line(name, value, expected):
    with pytest.raises(ParameterError) as error:
        parameters.validate(**{name: value})
    assert str(error.value) == expected
    assert error.value._render_traceback_() == [f"ParameterError: {expected}"]


def test_duplicates_are_named():
    with pytest.raises(ParameterError, match="found a duplicate"):
        parameters.validate(sentences=["a", "a"])


def test_good_values_pass_and_extra_rules_apply():
    checked = parameters.validate({"k": parameters.integer(1, 5), "extra": parameters.text_list(0)},
                                  batch_size=8, device="cpu", threshold=0, k=3, extra=[])
    assert checked == {"batch_size": 8, "device": "cpu", "threshold": 0.0, "k": 3, "extra": []}
    assert parameters.validate({"x": parameters.optional(parameters.integer(0))}, x=None) == {"x": None}


def test_a_parameter_without_a_rule_is_a_programming_error():
    with pytest.raises(KeyError):
        parameters.validate(no_such_parameter=1)


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
