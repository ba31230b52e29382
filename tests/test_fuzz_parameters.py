"""Fuzz every chapter's parameter rules (book/rules.py) with values of every type.

Each rule, called directly, either accepts a value and returns one of the kind its ``expects``
text states (within the bounds it states, and accepted again unchanged), or raises
ParameterError whose message is one line naming the parameter and what it expects. Anything
else — another exception, a multi-line message, an input changed in place — fails.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings

from embedding_geometry.book import parameters, rules
from embedding_geometry.core.errors import ParameterError
from fuzz_values import FUZZ, budget, of_expected_kind, one_line, values

RULES = [(slug, name) for slug, table in rules.chapters().items() for name in table]
EXAMPLES_PER_RULE = budget(25)


def check(slug: str, name: str, value) -> None:
    rule = rules.chapters()[slug][name]
    expects = getattr(rule, "expects", "")
    before = pickle.dumps(value)
    try:
        accepted = parameters.validate(rules.chapters()[slug], **{name: value})[name]
    except ParameterError as error:
        message = str(error)
        assert one_line(message), message
        assert message.startswith(f"parameter '{name}' expects "), message
        assert error._render_traceback_() == [f"ParameterError: {message}"]
    else:
        assert of_expected_kind(expects, accepted), f"{slug}.{name} accepted {value!r} as {accepted!r}"
        assert rule(name, accepted) == accepted, f"{slug}.{name}: {accepted!r} is not accepted again"
    assert pickle.dumps(value) == before, f"{slug}.{name} changed its input"


@pytest.mark.parametrize("slug, name", RULES, ids=[f"{s}.{n}" for s, n in RULES])
@settings(parent=FUZZ, max_examples=EXAMPLES_PER_RULE)
@given(value=values)
def test_every_rule_accepts_or_names_the_parameter_in_one_line(slug, name, value):
    check(slug, name, value)


def alias_bomb(depth: int = 8) -> list:
    """What a YAML "billion laughs" profile loads into: 9**depth leaves, shared, in little memory."""
    bomb = ["lol"] * 9
    for _ in range(depth):
        bomb = [bomb] * 9
    return bomb


def self_containing() -> list:
    loop: list = ["a"]
    loop.append(loop)
    return loop


EDGES = {
    "5000-digit int": 10**5000,            # beyond Python's digit limit for repr(): broke every message
    "int beyond float": 10**400,           # math.isfinite overflowed in the number rules
    "unhashable pair": [["a"], ["b"]],     # set() of unhashable items in the sentence-pair rule
    "pair of None and list": [None, []],
    "alias bomb": alias_bomb(),            # repr() of it would never finish
    "self-containing list": self_containing(),
    "nan": float("nan"), "-inf": float("-inf"), "blank": " ", "none": None, "true": True,
    "empty list": [], "empty mapping": {}, "mapping of ints": {1: 2},
}


@pytest.mark.parametrize("value", EDGES.values(), ids=EDGES.keys())
def test_values_that_broke_a_rule_before(value):
    for slug, name in RULES:
        check(slug, name, value)
