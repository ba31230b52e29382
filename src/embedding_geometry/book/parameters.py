"""The kinds of rule a chapter's parameters obey; the chapters' tables are :mod:`.rules`.

A chapter's ``parameters`` cell is its whole public interface. Two kinds of check guard it, each
raising :class:`~embedding_geometry.core.errors.ParameterError` (one line: the parameter, what it
expects, what it got) on the first bad value:

* a **rule** checks one value alone (``integer(1, 4096)``, ``text_list(3)``): :func:`validate`;
* a **need** states what the chapter's computations need of its values together, or of what the
  model's tokenizer makes of them (a pair of tokens within a text needs 2 word tokens; a PCA more
  texts than components): :func:`need` and :func:`check_needs`. A need reads the model only
  through :class:`ModelView` — its tokenizer and its sizes — so every need is checked before
  any forward pass.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.errors import ParameterError

Rule = Callable[[str, Any], Any]
Need = Callable[[Mapping[str, Any], "ModelView | None"], None]


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
    if not _is_text(value):
        raise ParameterError(name, "a non-empty string of valid Unicode (no lone surrogates)", value)
    return value


def _is_text(value: Any) -> bool:
    """A string with a character other than white space, and a UTF-8 form (no lone surrogate:
    no tokenizer can read one)."""
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def optional(rule: Rule) -> Rule:
    """``None`` or whatever ``rule`` accepts."""

    @expects(f"None or {getattr(rule, 'expects', 'a value')}")
    def wrapped(name: str, value: Any) -> Any:
        if value is None:
            return None
        try:
            return rule(name, value)
        except ParameterError as error:
            raise ParameterError(name, f"None or {error.expected}", error.got, error.detail) from None

    return wrapped


def text_list(min_items: int = 1) -> Rule:
    """A list of at least ``min_items`` non-empty strings, without duplicates."""

    expected = {0: "a list (possibly empty) of non-empty, distinct strings",
                1: "a non-empty list of non-empty, distinct strings"}.get(
        min_items, f"a list of at least {min_items} non-empty, distinct strings")

    @expects(expected)
    def rule(name: str, value: Any) -> list[str]:
        if not isinstance(value, (list, tuple)) or len(value) < min_items:
            raise ParameterError(name, expected, value)
        for item in value:
            if not _is_text(item):
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


def validate(rules: Mapping[str, Rule], **values: Any) -> dict[str, Any]:
    """Check each ``name=value`` against ``rules[name]``; return the checked values. A parameter
    with no rule is a programming error (``KeyError``)."""
    return {name: rules[name](name, value) for name, value in values.items()}


@expects("None or a list of two different non-empty sentences")
def sentence_pair(name: str, value: Any) -> list[str] | None:
    """None, or exactly two different non-empty sentences."""
    if value is None:
        return None
    ok = (isinstance(value, (list, tuple)) and len(value) == 2
          and all(_is_text(s) for s in value) and len(set(value)) == 2)
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


# --------------------------------------------------------------------------- needs

Fault = tuple[Any, str] | None
"""What a need found wrong: the item at fault and, when it is not plain to see, why; None: nothing."""


def need(name: str, expects: str, model: bool = False) -> Callable[[Callable[..., Fault]], Need]:
    """Make ``check(values) → Fault`` (``check(values, view)`` when ``model``: it reads the model
    through a :class:`ModelView`) a need of a chapter's values, all of them: ``name`` is the
    parameter its error names, ``expects`` what the computation needs, in words (the error and
    the chapter's parameter table say it). The need raises one-line ParameterError on the fault
    its check finds."""

    def mark(check: Callable[..., Fault]) -> Need:
        def checked(values: Mapping[str, Any], view: "ModelView | None" = None) -> None:
            fault = check(values, view) if model else check(values)
            if fault is not None:
                raise ParameterError(name, expects, *fault)

        checked.name, checked.expects, checked.model = name, expects, model
        checked.__name__, checked.__doc__ = check.__name__, check.__doc__
        return checked

    return mark


def check_needs(needs: Sequence[Need], values: Mapping[str, Any], view: "ModelView | None" = None) -> None:
    """Check ``values`` (each already accepted by its rule) against every need, in order; the
    needs that read the model only when ``view`` is given."""
    for check in needs:
        if view is not None or not check.model:
            check(values, view)


class ModelView:
    """What a need may read of a chapter's model without running it: its tokenizer and its
    sizes. ``load`` returns the :class:`~embedding_geometry.core.models.LoadedModel`; it is
    called on first use, so needs that read nothing of the model load nothing."""

    def __init__(self, load: Callable[[], Any]):
        self._load = load

    @functools.cached_property
    def loaded(self) -> Any:
        return self._load()

    @property
    def max_length(self) -> int:
        """The longest input the chapter's extraction reads (``max_seq_length``); longer texts are cut."""
        return self.loaded.info.max_seq_length

    @property
    def positions(self) -> int:
        """The longest input the model has positions for."""
        from ..core.streaming import max_text_length  # loads torch: the site build reads parameters without a model

        return max_text_length(self.loaded.model.config)

    @property
    def vocabulary(self) -> int:
        """V: the rows of the model's input word-embedding matrix."""
        return int(self.loaded.model.get_input_embeddings().weight.shape[0])

    def word_counts(self, texts: Sequence[str], max_length: int | None = None) -> list[int]:
        """Each text's word tokens once tokenized and cut to ``max_length`` (default: ``max_length``)."""
        from ..core.activations import word_token_counts  # loads torch (as positions)

        return word_token_counts(self.loaded.tokenizer, texts, max_length or self.max_length) if texts else []

    def token_ids(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """Each text as the model reads it: its token ids, cut to ``max_length``."""
        from ..core.activations import tokenize  # loads torch (as positions)

        if not texts:
            return []
        return [tuple(ids.tolist()) for ids in tokenize(self.loaded.tokenizer, texts, self.max_length)[1]]


def fewer_words(texts: Mapping[str, str], view: ModelView, at_least: int) -> Fault:
    """The first of ``texts`` (by where it stands: "text 3", "query 1") with fewer than
    ``at_least`` word tokens once tokenized, and how many it has."""
    for (where, text), n in zip(texts.items(), view.word_counts(list(texts.values()))):
        if n < at_least:
            return text, f"{where} has {n} word token{'' if n == 1 else 's'} once tokenized"
    return None


def read_alike(texts: Mapping[str, str], view: ModelView) -> Fault:
    """The first of ``texts`` (by where it stands) that the model reads exactly as an earlier one
    (the same token ids: an uncased tokenizer reads "Cat" as "cat"), and which one."""
    seen: dict[tuple[int, ...], str] = {}
    for (where, text), ids in zip(texts.items(), view.token_ids(list(texts.values()))):
        if ids in seen:
            return text, f"{where} reads as {seen[ids]} once tokenized"
        seen[ids] = where
    return None


def declared(spec: Mapping[str, Any]) -> dict[str, Rule]:
    """The rules a chapter's ledger states for its parameters (``parameters:``): each name maps to
    ``boolean`` or ``text``, or to ``{integer: [low, high]}``, ``{number: [low, high]}``,
    ``{texts: n}`` (a list of at least n strings) or ``{one_of: [choices]}``. Another form is a
    ValueError that names the parameter and the forms."""
    forms = {"integer": integer, "number": number, "boolean": boolean, "text": text, "texts": text_list,
             "one_of": one_of}
    table = {}
    for name, form in spec.items():
        kind, args = (form, None) if isinstance(form, str) else next(iter(form.items()), (None, None))
        if kind not in forms or (isinstance(form, Mapping) and len(form) != 1):
            raise ValueError(f"parameter '{name}' has no rule form {form!r}; expected one of {sorted(forms)}")
        table[name] = forms[kind] if args is None else forms[kind](*(args if isinstance(args, list) else [args]))
    return table
