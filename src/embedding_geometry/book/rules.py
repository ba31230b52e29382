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

**Profiles.** The YAML files that set the chapters' parameters for a build: ``params/<name>.yaml``,
or any path ending in ``.yaml``/``.yml``::

    common:                      # for every chapter that declares the parameter
      model: sentence-transformers/all-MiniLM-L6-v2
    chapters:
      04_attention_context_similarity:   # for one chapter, over common
        n_texts: 64

:func:`load` reads and checks one before anything runs. A file that is missing, unreadable, not
UTF-8, not YAML (named with its line and column), or not of this shape — another top-level key,
a chapter that does not exist, a parameter that no chapter has — is a one-line
:class:`ProfileError`. :func:`chapter_parameters` gives one chapter its values, each checked
against the chapter's rule (a bad value is the one-line
:class:`~embedding_geometry.core.errors.ParameterError` the notebook itself would raise).
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from . import parameters as p
from ..core.errors import BookError, ParameterError, short_repr
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


# --------------------------------------------------------------------------- profiles

SECTIONS = ("common", "chapters")
INT64 = 2**63
"""Integers a chapter can take: papermill writes them into the notebook and JSON records them."""


class ProfileError(BookError, ValueError):
    """A profile cannot be read, is not YAML, or does not have the shape of a profile."""


@dataclass(frozen=True)
class Profile:
    """A checked profile: where it came from, its common values and its per-chapter values."""

    path: Path
    common: dict[str, Any]
    chapters: dict[str, dict[str, Any]]

    @property
    def where(self) -> str:
        """``profile '<path>'``, for messages."""
        return f"profile {str(self.path)!r}"


def load(profile: str, root: Path, book: list[str]) -> Profile:
    """The profile named ``profile`` (a name under ``root/params`` or a path), checked against
    the book's chapters (``book``: their slugs) and every chapter's rule table; see the module docstring."""
    path = _find(profile, root)
    where = Profile(path, {}, {}).where
    data = _parse(path, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError(f"{where} holds {_kind(data)}; expected a mapping with the keys 'common' and 'chapters'")
    for key in data:
        if key not in SECTIONS:
            raise ProfileError(
                f"{where} has the top-level key {short_repr(key)}; expected only 'common' and 'chapters'")
    known = set().union(*chapters().values())
    common = _section(data.get("common"), f"{where}: common", known, "no chapter has such a parameter")
    sections = _section(data.get("chapters"), f"{where}: chapters", set(book),
                        f"the book has no such chapter (it has: {', '.join(book)})")
    per_chapter = {slug: _section(values, f"{where}: chapters.{slug}", set(rules_for(slug)),
                                  f"chapter {slug} has no such parameter (it has: {', '.join(rules_for(slug))})")
                   for slug, values in sections.items()}
    return Profile(path=path, common=common, chapters=per_chapter)


def slugs(root: Path) -> list[str]:
    """The slugs of the book's chapters, in order: its ``notebooks/NN_*.ipynb``."""
    return [path.stem for path in sorted((root / "notebooks").glob("[0-9]*.ipynb"))]


def chapter_parameters(slug: str, profile: Profile, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The profile's values for the parameters chapter ``slug`` declares (``common`` first, then
    ``chapters.<slug>``), as written; each is checked by the chapter's rule, and, with the
    chapter's ``defaults`` (:func:`notebook_defaults`) for the values the profile leaves out,
    the chapter's needs that do not read the model (ParameterError)."""
    table = rules_for(slug)
    params = {name: value for name, value in profile.common.items() if name in table}
    params.update(profile.chapters.get(slug, {}))
    for name, value in params.items():
        table[name](name, value)
        if _too_large(value):
            raise ParameterError(name, f"{getattr(table[name], 'expects', 'a value')}, its integers within ±2**63",
                                 value)
    if defaults is not None:
        check(slug, {**defaults, **params})
    return params


def notebook_defaults(notebook: Path) -> dict[str, Any]:
    """The values a chapter notebook's ``parameters`` cell sets (literals, read without running it)."""
    import papermill  # loads nbformat and jupyter_client: only the build reads a notebook's defaults

    return {name: ast.literal_eval(spec["default"]) for name, spec in papermill.inspect_notebook(str(notebook)).items()}


# --------------------------------------------------------------------------- reading

def _find(profile: str, root: Path) -> Path:
    path = Path(profile) if profile.endswith((".yaml", ".yml")) else root / "params" / f"{profile}.yaml"
    try:
        found = path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
        found = False
    if not found:
        raise ProfileError(f"profile {profile!r} not found (looked for {str(path)!r})")
    return path


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader (on libyaml when installed: ten times faster on long lists), but a
    value it cannot convert (``2020-13-45`` read as a date, ``!!int abc``) is a YAML error with
    the value's line and column, like a syntax error."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as error:
            raise yaml.constructor.ConstructorError(None, None, f"cannot read this value ({error})",
                                                    node.start_mark) from error


def _parse(path: Path, where: str) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ProfileError(f"{where} cannot be read ({error.strerror or type(error).__name__})") from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise ProfileError(f"{where} is not UTF-8 text: byte 0x{raw[error.start]:02x} on line {line} "
                           "cannot be decoded; save the file as UTF-8") from error
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = " ".join(str(error.problem or error.context or "a syntax error").split())
        context = f" ({' '.join(error.context.split())})" if error.context and error.problem else ""
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ProfileError(f"{where} is not valid YAML: {at}{problem}{context}") from error
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        code = ord(error.character) if isinstance(error.character, str) else error.character
        raise ProfileError(f"{where} is not valid YAML: line {line}, column {column}: the control character "
                           f"U+{code:04X} is not allowed in YAML") from error
    except (yaml.YAMLError, RecursionError) as error:
        problem = "it nests deeper than a profile can" if isinstance(error, RecursionError) else \
            " ".join(str(error).split())
        raise ProfileError(f"{where} is not valid YAML: {problem}") from error


def _section(value: Any, where: str, allowed: set[str], unknown: str) -> dict[str, Any]:
    """``value`` as a mapping whose keys are all in ``allowed`` (None reads as empty);
    ``unknown`` says what is wrong with any other key."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f"{where} holds {_kind(value)}; expected a mapping of names to values")
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1) if isinstance(key, str) else []
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ProfileError(f"{where} sets {short_repr(key)}, but {unknown}{hint}")
    return dict(value)


def _too_large(value: Any) -> bool:
    """Whether an integer in ``value`` (a checked parameter: lists and mappings of plain values)
    lies outside ±2**63."""
    if isinstance(value, int) and not isinstance(value, bool):
        return not -INT64 <= value < INT64
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return any(_too_large(item) for item in items)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}.get(
        type(value), f"a {type(value).__name__}")
