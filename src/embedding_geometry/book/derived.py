"""What the site derives from the chapters themselves, so that a new chapter is a notebook, a
study module and a ledger, and nothing else.

- **The table of contents.** ``_toc.yml`` orders the parts and the reference pages. A chapter
  notebook it does not name is added, at build time, to the part its notebook's metadata names
  (``metadata.embedding_geometry.part``; :data:`NEW_PART` when it names none), a new part going
  before the last one (the reference pages). :func:`write_toc` writes the result to
  ``build/_toc.yml``, which the site build reads (``jupyter-book build --toc``).
- **The Methods page's stub.** A measuring chapter (one with a claims ledger) whose notebook cites no chapter section of
  ``book/methods.md`` (a link to a ``methods-…`` label of its own, ``[…](../book/methods.md#methods-…)``)
  gets one, written from the docstrings of the study modules its notebook imports:
  ``build/methods_stubs.md``, which the Methods page includes at its end. A hand-written section
  replaces the stub as soon as the notebook cites it.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from . import rules
from .claims import ledger

EXECUTED = "book/chapters/"
NEW_PART = "More chapters"
SHARED_SECTIONS = {"methods-conventions", "methods-verdicts", "methods-reproducibility"}
"""Methods sections every chapter may cite; citing one of them alone does not cover a chapter."""
TOC, STUBS = Path("build") / "_toc.yml", Path("build") / "methods_stubs.md"


def _notebook(root: Path, slug: str) -> dict[str, Any]:
    return json.loads((root / "notebooks" / f"{slug}.ipynb").read_text(encoding="utf-8"))


def _source(notebook: dict[str, Any]) -> str:
    return "\n".join("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                     for cell in notebook["cells"])


def part_of(notebook: dict[str, Any]) -> str:
    """The part a chapter notebook asks to be listed in (:data:`NEW_PART` by default)."""
    return notebook.get("metadata", {}).get("embedding_geometry", {}).get("part") or NEW_PART


def derived_toc(root: Path) -> dict[str, Any]:
    """``root/_toc.yml`` with every chapter notebook it does not name added to its part."""
    toc = copy.deepcopy(yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")))
    listed = {entry.get("file") for part in toc["parts"] for entry in part["chapters"]}
    for slug in rules.slugs(root):
        if EXECUTED + slug in listed:
            continue
        caption = part_of(_notebook(root, slug))
        part = next((p for p in toc["parts"] if p.get("caption") == caption), None)
        if part is None:
            part = {"caption": caption, "chapters": []}
            toc["parts"].insert(max(len(toc["parts"]) - 1, 0), part)
        part["chapters"].append({"file": EXECUTED + slug})
    return toc


def write_toc(root: Path) -> Path:
    """Write :func:`derived_toc` to ``root/build/_toc.yml`` and return its path."""
    path = root / TOC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Derived from _toc.yml and the chapter notebooks (embedding_geometry.book.derived)\n"
                    + yaml.safe_dump(derived_toc(root), sort_keys=False), encoding="utf-8")
    return path


def cited_sections(root: Path, slug: str) -> set[str]:
    """The chapter sections of the Methods page that chapter ``slug``'s notebook cites."""
    labels = set(re.findall(r"^\((methods-[\w-]+)\)=", (root / "book" / "methods.md").read_text(encoding="utf-8"),
                            flags=re.M))
    cited = set(re.findall(r"\]\(\.\./book/methods\.md#(methods-[\w-]+)\)", _source(_notebook(root, slug))))
    return (cited & labels) - SHARED_SECTIONS


def study_modules(notebook: dict[str, Any]) -> list[str]:
    """The study modules a notebook imports, from ``studies`` or from its chapter package, by their
    path in the package: ``from embedding_geometry.studies import a as b, c`` → ``studies.a``,
    ``studies.c``; ``from embedding_geometry.chapters.ch07_objective import runs`` →
    ``chapters.ch07_objective.runs``."""
    names = []
    pattern = r"from embedding_geometry\.(studies|chapters\.\w+) import ([^\n]+)"
    for where, line in re.findall(pattern, _source(notebook)):
        names += [f"{where}.{part.split(' as ')[0].strip(' ()')}" for part in line.split(",") if part.strip(" ()")]
    return list(dict.fromkeys(names))


def title(notebook: dict[str, Any], slug: str) -> str:
    """The notebook's first heading (the slug when it has none)."""
    found = re.search(r"^# (.+)$", _source(notebook), flags=re.M)
    return found.group(1).strip() if found else slug


def methods_stub(root: Path, slug: str) -> str:
    """The Methods section of a chapter that has none: its title, and each study module's
    docstring (reStructuredText, rendered as such)."""
    notebook = _notebook(root, slug)
    parts = [f"(methods-{slug.replace('_', '-')})=", f"## {title(notebook, slug)}", "",
             "*Written from the chapter's study modules; a hand-written section replaces it.*", ""]
    for name in study_modules(notebook):
        doc = importlib.import_module(f"embedding_geometry.{name}").__doc__ or ""
        parts += [f"**`embedding_geometry.{name}`**", "", "```{eval-rst}", doc.strip(), "```", ""]
    return "\n".join(parts)


def write_methods_stubs(root: Path) -> Path:
    """Write the stubs of every measuring chapter (one with a ledger) without a Methods section to
    ``root/build/methods_stubs.md`` (empty when every chapter has one) and return its path."""
    stubs = [methods_stub(root, slug) for slug in rules.slugs(root)
             if slug in ledger.ledgers() and not cited_sections(root, slug)]
    path = root / STUBS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(stubs) + "\n", encoding="utf-8")
    return path
