"""Every chapter's parameters, the rule each must satisfy, and what each chapter's computations
need of them: the book's registry of these rules, derived, never written here. A chapter package
keeps its own rules and needs in its ``rules`` module (``CHAPTER``: the slug; ``RULES``: its
parameters' rules; ``NEEDS``), which this registry finds in ``chapters/*/rules.py`` and imports by
name when first asked for (:func:`chapters`), so that this module imports no chapter package
(``tests/test_layers.py``) and a chapter's rules can import the rule sets shared here:
:data:`MODEL`, :data:`CONTROLS`, :data:`COMPARED`, :data:`unit`, :func:`words`, :func:`distinct`,
:func:`positions`. A chapter whose package has no ``rules`` module declares its parameters in its
ledger (``parameters:``, CONTRIBUTING.md's example); the book's own pages, which are no chapters,
are in :data:`PAGES`.

A chapter notebook's ``parameters`` cell declares the names and defaults (what papermill
overrides); ``RULES`` says what each value must be alone, and ``NEEDS`` what the chapter's
computations need of its values together and of what the model's tokenizer makes of its texts
(a pair of tokens within a text needs two word tokens; a rank correlation three texts).
:meth:`Chapter.open <embedding_geometry.book.chapter.Chapter.open>` checks both before any
forward pass (:func:`check`); the build checks the rules and the needs that do not read the model
before any chapter runs. The page's parameter table (:func:`embedding_geometry.book.pages.parameter_table`)
shows the rule's ``expects`` text, and each need's, beside the cell's comment. A name in the
cell with no rule here, or a rule with no name in the cell, is a programming error that the
tests catch.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from . import parameters as p
from .claims import ledger
from .claims.ledger import LedgerError

MODEL = {
    "model": p.text,
    "device": p.one_of("auto", "cpu", "cuda"),
    "batch_size": p.integer(1, 4096),
    "seed": p.integer(0, 2**32 - 1),
    "trust_remote_code": p.boolean,
}
"""Every measuring chapter: which model, where it runs, how it is batched and seeded."""

CONTROLS = {
    "random_control": p.boolean,
    "control_seeds": p.integer(1, 64),
}
"""Chapters with random-init controls: whether to run them, and how many seeds of each (their
spread is the null distribution a trained model is compared with)."""

COMPARED = {
    "models": p.text_list(0),
    **CONTROLS,
}
"""Chapters that compare models: more models, and random-init controls of each trained one."""

unit = p.number(0.0, 1.0)
"""A share or a probability: a number in [0, 1]."""

PAGES: dict[str, dict[str, p.Rule]] = {
    "98_performance": {"bench_file": p.text},
    "99_claims_dashboard": {"chapters": p.text_list(0)},
}
"""The book's own pages that are no chapters, and their parameters."""


# --------------------------------------------------------------------------- needs
# What each chapter's computations need of its values together and of its texts as the model's
# tokenizer reads them (parameters.need: the parameter an error names, what is needed, whether
# the check reads the model). Each is checked before any forward pass.

def _texts(value: Any) -> dict[str, str]:
    """The texts of a parameter's value, by where each stands: a list ("text 2"), a retrieval set
    ("query 1", "pool text 3"), a mapping of pairs ("pair 'mine', sentence 2"); None: none."""
    if isinstance(value, Mapping) and "pool" in value:
        return {**{f"query {i + 1}": t for i, t in enumerate(value["queries"])},
                **{f"pool text {i + 1}": t for i, t in enumerate(value["pool"])}}
    if isinstance(value, Mapping):
        return {f"pair {name!r}, sentence {i + 1}": t for name, pair in value.items() for i, t in enumerate(pair)}
    return {f"text {i + 1} of {len(value)}": t for i, t in enumerate(value or [])}


def words(name: str, at_least: int, why: str) -> p.Need:
    """Each text of parameter ``name`` has at least ``at_least`` word tokens once tokenized."""
    plural = "" if at_least == 1 else "s"

    @p.need(name, f"texts of at least {at_least} word token{plural} each once tokenized ({why})", model=True)
    def enough_words(values, view):
        return p.fewer_words(_texts(values[name]), view, at_least)

    return enough_words


def distinct(name: str, why: str) -> p.Need:
    """No two texts of parameter ``name`` read alike once tokenized."""

    @p.need(name, f"texts that differ once tokenized ({why})", model=True)
    def differ(values, view):
        return p.read_alike(_texts(values[name]), view)

    return differ


def positions(name: str) -> p.Need:
    """Parameter ``name`` (a length in tokens) within the model's positions."""

    @p.need(name, "at most as many tokens as the model has positions", model=True)
    def within_positions(values, view):
        limit = view.positions
        return None if values[name] <= limit else (values[name], f"this model has {limit} positions")

    return within_positions


@functools.cache
def _packages() -> dict[str, ModuleType]:
    """Each chapter package's ``rules`` module (``chapters/<package>/rules.py``), by the slug it names
    (``CHAPTER``), imported on first use."""
    found = {}
    for path in sorted(Path(__file__).parents[1].glob("chapters/*/rules.py")):
        module = importlib.import_module(f"{__package__.rsplit('.', 1)[0]}.chapters.{path.parent.name}.rules")
        if module.CHAPTER in found:
            raise ValueError(f"{path}: chapter {module.CHAPTER} has its rules in {found[module.CHAPTER].__file__} too")
        found[module.CHAPTER] = module
    return found


def chapters() -> dict[str, dict[str, p.Rule]]:
    """Every rule table of the book, by slug: each chapter package's ``RULES``, or, for a chapter
    whose package has no ``rules`` module, the rules its ledger declares (``parameters:``, read by
    :func:`parameters.declared`), on top of :data:`MODEL`; and the pages' (:data:`PAGES`)."""
    tables = {slug: {**MODEL, **module.RULES} for slug, module in _packages().items()}
    tables.update({slug: _declared(slug) for slug in ledger.ledgers() if slug not in tables})
    return dict(sorted({**tables, **PAGES}.items()))


def _declared(slug: str) -> dict[str, p.Rule]:
    """The rules chapter ``slug``'s ledger declares (``parameters:``) on top of :data:`MODEL`."""
    declared = ledger.load(slug).parameters
    try:
        return {**MODEL, **p.declared(declared)}
    except ValueError as error:
        raise LedgerError(f"{slug}.yaml: {error}") from None


def rules_for(slug: str) -> dict[str, p.Rule]:
    """The rule table of chapter ``slug`` (:func:`chapters`); KeyError names the known chapters when
    it has none (no ledger, no rules)."""
    known = chapters()
    if slug not in known:
        raise KeyError(f"no parameter rules for chapter {slug!r}: write its ledger (CONTRIBUTING.md); "
                       f"chapters with rules: {sorted(known)}")
    return known[slug]


def needs_for(slug: str) -> tuple[p.Need, ...]:
    """The needs of chapter ``slug``: its package's ``NEEDS`` (none for a chapter whose rules are in
    its ledger, or for a page)."""
    rules_for(slug)
    module = _packages().get(slug)
    return tuple(module.NEEDS) if module is not None else ()


def check(slug: str, values: Mapping[str, Any], view: p.ModelView | None = None) -> dict[str, Any]:
    """Every value of ``values`` (all of chapter ``slug``'s parameters) checked by its rule, then
    the chapter's needs — those that read the model only with ``view``; returns the checked
    values. The first fault is a one-line ParameterError."""
    checked = p.validate(rules_for(slug), **values)
    p.check_needs(needs_for(slug), checked, view)
    return checked


def expects(slug: str, name: str) -> str:
    """What parameter ``name`` of chapter ``slug`` expects, in words: its rule's text, then the
    text of every need that names it."""
    return "; ".join([rules_for(slug)[name].expects] + [n.expects for n in needs_for(slug) if n.name == name])
