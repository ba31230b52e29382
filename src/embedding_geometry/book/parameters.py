"""Validation of a chapter's parameters: one call at the top of each notebook.

A chapter's ``parameters`` cell is its whole public interface. ``validate`` checks every value
against a rule named after the parameter and raises :class:`~embedding_geometry.errors.ParameterError`
(one line: the parameter, what it expects, what it got) on the first bad one. Rules shared by all
chapters live in ``RULES``; a chapter passes extra ones for parameters only it has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import ParameterError

Rule = Callable[[str, Any], Any]


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" in [{low}, {high}]"
    if low is not None:
        return f" ≥ {low}"
    if high is not None:
        return f" ≤ {high}"
    return ""


def expects(description: str) -> Callable[[Rule], Rule]:
    """Attach ``description`` (what the rule accepts, in words) to a rule, for the parameter table."""

    def mark(rule: Rule) -> Rule:
        rule.expects = description
        return rule

    return mark


@expects("true or false")
def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(name, "true or false", value)
    return value


def integer(low: int | None = None, high: int | None = None) -> Rule:
    """An int in [low, high] (either bound optional); bools are not ints here."""

    @expects(f"an integer{_bounds(low, high)}")
    def rule(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError(name, f"an integer{_bounds(low, high)}", value)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ParameterError(name, f"an integer{_bounds(low, high)}", value)
        return value

    return rule


def number(low: float | None = None, high: float | None = None) -> Rule:
    """A finite real number in [low, high]."""

    @expects(f"a number{_bounds(low, high)}")
    def rule(name: str, value: Any) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
        if not ok or (low is not None and value < low) or (high is not None and value > high):
            raise ParameterError(name, f"a number{_bounds(low, high)}", value)
        return float(value)

    return rule


def _finite(value: int | float) -> bool:
    """A finite number that a float can hold (an int beyond 1.8e308 cannot)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def one_of(*choices: str) -> Rule:
    @expects("one of " + ", ".join(repr(c) for c in choices))
    def rule(name: str, value: Any) -> str:
        if value not in choices:
            raise ParameterError(name, "one of " + ", ".join(repr(c) for c in choices), value)
        return value

    return rule


@expects("a non-empty string")
def text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(name, "a non-empty string", value)
    return value


def optional(rule: Rule) -> Rule:
    """``None`` or whatever ``rule`` accepts."""

    @expects(f"None or {getattr(rule, 'expects', 'a value')}")
    def wrapped(name: str, value: Any) -> Any:
        return None if value is None else rule(name, value)

    return wrapped


def text_list(min_items: int = 1) -> Rule:
    """A list of at least ``min_items`` non-empty strings, without duplicates."""

    @expects(f"a list of at least {min_items} non-empty, distinct strings")
    def rule(name: str, value: Any) -> list[str]:
        expected = f"a list of at least {min_items} non-empty, distinct strings"
        if not isinstance(value, (list, tuple)) or len(value) < min_items:
            raise ParameterError(name, expected, value)
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise ParameterError(name, expected, item)
        if len(set(value)) != len(value):
            raise ParameterError(name, expected + " (found a duplicate)", value)
        return list(value)

    return rule


@expects('{"queries": [...], "pool": [...], "relevant": [pool index per query]}')
def retrieval_set(name: str, value: Any) -> dict[str, list]:
    """``{"queries": [...], "pool": [...], "relevant": [...]}``: non-empty lists of strings and,
    per query, the index of its relevant document in the pool."""
    expected = 'a mapping {"queries": [str, ...], "pool": [str, ...], "relevant": [pool index per query]}'
    if not isinstance(value, Mapping) or set(value) != {"queries", "pool", "relevant"}:
        raise ParameterError(name, expected, value)
    queries, pool = text_list(1)(name, value["queries"]), text_list(2)(name, value["pool"])
    relevant = value["relevant"]
    if (not isinstance(relevant, (list, tuple)) or len(relevant) != len(queries)
            or any(isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < len(pool) for r in relevant)):
        raise ParameterError(name, f"{expected}, one index in [0, {len(pool)}) per query", relevant)
    return {"queries": queries, "pool": pool, "relevant": list(relevant)}


@expects("a mapping {pair name: [sentence a, sentence b]}")
def sentence_pairs(name: str, value: Any) -> dict[str, list[str]]:
    """A mapping from a pair's name to exactly two non-empty sentences."""
    if not isinstance(value, Mapping):
        raise ParameterError(name, "a mapping from a pair name to [sentence a, sentence b]", value)
    for key, pair in value.items():
        if not isinstance(key, str) or not key.strip() or not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ParameterError(name, "a mapping from a pair name to [sentence a, sentence b]", {key: pair})
        for sentence in pair:
            text(name, sentence)
    return {key: list(pair) for key, pair in value.items()}


@expects("a non-empty list of model ids or local directories")
def model_list(name: str, value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(name, "a non-empty list of model ids or local directories", value)
    return [text(name, item) for item in value]


RULES: dict[str, Rule] = {
    "model": text,
    "models": model_list,
    "device": one_of("auto", "cpu", "cuda"),
    "batch_size": integer(1, 4096),
    "max_length": integer(2, 8192),
    "seed": integer(0, 2**32 - 1),
    "trust_remote_code": boolean,
    "n_texts": integer(1),
    "threshold": number(0.0, 1.0),
    "sentences": text_list(1),
}


def validate(rules: Mapping[str, Rule] | None = None, **values: Any) -> dict[str, Any]:
    """Check each ``name=value`` against ``rules[name]`` (else ``RULES[name]``); return the
    checked values. A parameter with no rule is a programming error (``KeyError``)."""
    table = {**RULES, **(rules or {})}
    return {name: table[name](name, value) for name, value in values.items()}



@expects("None or a list of two different non-empty sentences")
def sentence_pair(name: str, value: Any) -> list[str] | None:
    """None, or exactly two different non-empty sentences."""
    if value is None:
        return None
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(isinstance(s, str) and s.strip() for s in value) and len(set(value)) == 2)
    if not ok:
        raise ParameterError(name, "None or a list of two different non-empty sentences", value)
    return list(value)


def number_list(low: float, high: float) -> Rule:
    """A non-empty list of numbers, each in [low, high]."""

    @expects(f"a non-empty list of numbers in [{low}, {high}]")
    def rule(name: str, value: Any) -> list[float]:
        if not isinstance(value, (list, tuple)) or not value:
            raise ParameterError(name, f"a non-empty list of numbers in [{low}, {high}]", value)
        return [number(low, high)(name, item) for item in value]

    return rule
