"""Profiles: the YAML files that set the chapters' parameters for a build.

A profile is ``params/<name>.yaml``, or any path ending in ``.yaml``/``.yml``::

    common:                      # for every chapter that declares the parameter
      model: sentence-transformers/all-MiniLM-L6-v2
    chapters:
      04_attention_context_similarity:   # for one chapter, over common
        n_texts: 64

:func:`load` reads and checks one before anything runs. A file that is missing, unreadable, not
UTF-8, not YAML (named with its line and column), or not of this shape — another top-level key,
a chapter that does not exist, a parameter that no chapter has — is a one-line
:class:`ProfileError`. :func:`chapter_parameters` gives one chapter its values, each checked
against the chapter's rule in :mod:`~embedding_geometry.book.rules` (a bad value is the one-line
:class:`~embedding_geometry.core.errors.ParameterError` the notebook itself would raise).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import rules
from ..core.errors import BookError, ParameterError
from ..core.errors import short_repr

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


def load(profile: str, root: Path, chapters: list[str]) -> Profile:
    """The profile named ``profile`` (a name under ``root/params`` or a path), checked against
    the book's ``chapters`` (slugs) and every chapter's rule table; see the module docstring."""
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
    known = set().union(*rules.chapters().values())
    common = _section(data.get("common"), f"{where}: common", known, "no chapter has such a parameter")
    sections = _section(data.get("chapters"), f"{where}: chapters", set(chapters),
                        f"the book has no such chapter (it has: {', '.join(chapters)})")
    per_chapter = {slug: _section(values, f"{where}: chapters.{slug}", set(rules.rules_for(slug)),
                                  f"chapter {slug} has no such parameter (it has: {', '.join(rules.rules_for(slug))})")
                   for slug, values in sections.items()}
    return Profile(path=path, common=common, chapters=per_chapter)


def chapters(root: Path) -> list[str]:
    """The slugs of the book's chapters, in order: its ``notebooks/NN_*.ipynb``."""
    return [path.stem for path in sorted((root / "notebooks").glob("[0-9]*.ipynb"))]


def chapter_parameters(slug: str, profile: Profile, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The profile's values for the parameters chapter ``slug`` declares (``common`` first, then
    ``chapters.<slug>``), as written; each is checked by the chapter's rule, and, with the
    chapter's ``defaults`` (:func:`notebook_defaults`) for the values the profile leaves out,
    the chapter's needs that do not read the model (ParameterError)."""
    table = rules.rules_for(slug)
    params = {name: value for name, value in profile.common.items() if name in table}
    params.update(profile.chapters.get(slug, {}))
    for name, value in params.items():
        table[name](name, value)
        if _too_large(value):
            raise ParameterError(name, f"{getattr(table[name], 'expects', 'a value')}, its integers within ±2**63",
                                 value)
    if defaults is not None:
        rules.check(slug, {**defaults, **params})
    return params


def notebook_defaults(notebook: Path) -> dict[str, Any]:
    """The values a chapter notebook's ``parameters`` cell sets (literals, read without running it)."""
    import ast

    import papermill

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
