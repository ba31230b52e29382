"""A new chapter's notebook and package, written with the book's conventions in place
(CONTRIBUTING.md): ``python -m embedding_geometry new-chapter <slug> --title … --study <module>``.

A chapter is three things: its notebook, its study module and its ledger. The command writes the
notebook, and the chapter's package ``chapters/ch<slug>/`` with only its ``__init__`` (a docstring
that maps the package); the other two — ``chapters/ch<slug>/<module>.py`` and
``chapters/ch<slug>/ledger.yaml`` — are the contributor's to write. The skeleton runs as soon as the
study module has a ``measure(acts)`` that returns the chapter's metrics and the ledger names the
claims to judge on them: the parameters cell, ``Chapter.open``, the findings box,
the folded "About this chapter" with learning objectives and prerequisites, one measurement
section (the chapter's sentences through the model, ``study.measure``, the claims in words), the
claims table, the summary, three exercises (each a rerun command, a question, a folded cell with
the numbers of the answer and the answer's reasoning), the parameter table and provenance. It
passes the checks every chapter passes (``tests/test_teaching.py``, ``tests/test_notebook_conventions.py``);
its words are the contributor's to replace.

Its metadata (``embedding_geometry``) holds the part of the table of contents it is listed in
and ``tiny``: the parameters a test run on the tiny model sets (none: the defaults are small
enough; ``tests/conftest.py`` reads them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.errors import BookError

SLUG = re.compile(r"^[0-9]{2}[a-z]?_[a-z0-9_]+$")
MODULE = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(BookError, ValueError):
    """A new chapter's name, study or place is not usable."""


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def _code(text: str, *tags: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {"tags": list(tags)} if tags else {},
            "outputs": [], "source": text.strip("\n")}


ABOUT = """<details class="eg-fold">
<summary>About this chapter: the claims tested, learning objectives, prerequisites</summary>

**Overview — the claims tested.** Which text this chapter reproduces, and its claims in a few words.

**Learning objectives.** After this chapter you can:

- say what this chapter measures, on which sentences, and at which depths;
- read its measurement on a model of any depth;
- judge each of its claims from its interval and its test.

**Prerequisites:** the [primer](00b_primer.ipynb) on hidden states and depths
([Hidden states and depths](00b_primer.ipynb#primer-hidden-states)).

</details>"""
"""The skeleton's folded "About this chapter": three learning objectives and the prerequisites (to be
rewritten), in plain Markdown and HTML, which reads the same in Jupyter and in the book (CONTRIBUTING.md)."""

EXERCISES = [
    ("a model of another depth", "-p model sentence-transformers/all-mpnet-base-v2",
     "Does each claim keep its verdict on a model with twice as many blocks?",
     "A claim that holds on both models is not a property of one model's size; one whose verdict "
     "changes is read on the claims table of each run, model by model."),
    ("one sentence at a time", "-p batch_size 1",
     "Does any number change when each sentence runs through the model alone?",
     "No more than floating-point noise: the attention mask keeps padding out of every real token's "
     "state, so a claim's verdict does not depend on the batch size."),
    ("another seed", "-p seed 1",
     "Which numbers move when the seed changes?",
     "The measurement on the fixed sentences does not move; the ends of each interval move a little, "
     "because the bootstrap draws its resamples from the seed."),
]
"""Each exercise of the skeleton: title, the papermill option, question, reasoning (no number)."""


def exercises(slug: str) -> list[dict]:
    """The skeleton's ``## Exercises``: per exercise a rerun command and a question, a folded cell
    with the answer's numbers (the claims on this run) and the reasoning, typed without a number."""
    found = [_markdown("## Exercises\n\nEach exercise changes one parameter. Rerun this chapter with the command "
                       "given (from the\nrepository root) and answer the question from the result; the numbers "
                       "of this run are folded\nunder each question.")]
    for i, (title, option, question, reasoning) in enumerate(EXERCISES, 1):
        found += [_markdown(f"### Exercise {i}: {title}\n\n```bash\n.venv/bin/papermill notebooks/{slug}.ipynb "
                            f"/tmp/{slug}.ipynb {option}\n```\n\n{question}"),
                  _code("ch.report(*claim_ids)", "hide-output"),
                  _markdown(f"<details><summary>Answer</summary>\n\n{reasoning}\n</details>")]
    return found


def package_name(slug: str) -> str:
    """The package of chapter ``slug``: ``ch`` and the slug (``09_pool_norm`` → ``ch09_pool_norm``)."""
    return f"ch{slug}"


def package_doc(slug: str, title: str, study: str) -> str:
    """The new package's ``__init__``: its docstring, a map of the chapter's files."""
    return (f'"""Chapter {slug}, *{title}*: the code only this chapter uses, in the order its notebook\n'
            f"presents it.\n\n    ``{study}``{' ' * max(1, 14 - len(study))}the measurement: activations in, the "
            f"chapter's metrics out\n    ledger.yaml       the chapter's claims (``chapter: {slug}``)\n"
            '"""\n')


def cells(slug: str, title: str, study: str) -> list[dict]:
    """The skeleton's cells (CONTRIBUTING.md, "How a chapter notebook reads", item 6)."""
    return [
        _markdown(f"# {title}\n\nOne short paragraph: what this chapter measures, and which text it reproduces."),
        _code('model = "sentence-transformers/all-MiniLM-L6-v2"  # hub id or local model directory\n'
              'device = "auto"  # auto (CUDA when present), cpu or cuda\n'
              "batch_size = 32  # texts per forward pass\n"
              "seed = 0  # seed for every random generator\n"
              "trust_remote_code = False  # allow models that need custom code", "parameters"),
        _code("from embedding_geometry.book import charts, pages\n"
              "from embedding_geometry.book.chapter import Chapter\n"
              "from embedding_geometry.core import corpora\n"
              f"from embedding_geometry.chapters.{package_name(slug)} import {study} as study\n\n"
              f'ch = Chapter.open("{slug}", globals())', "remove-input"),
        _markdown("## What we found"),
        _code("ch.findings()", "remove-input"),
        _markdown(ABOUT),
        _markdown("## The measurement\n\nWhat is measured and why; how to read the output below."),
        _code('sentences = list(corpora.REFERENCE_SENTENCES.values())\n'
              'ch.inputs["sentences"] = sentences\n'
              'acts = ch.extract(sentences, source="sentences")\n'
              "ch.add_metrics(study.measure(acts))\n"
              "claim_ids = [claim.id for claim in ch.ledger.claims]\n"
              "ch.report(*claim_ids)"),
        _markdown("## Claims"),
        _code("ch.finish()", "remove-input"),
        _markdown("## Summary"),
        _code("ch.summary()", "remove-input"),
        *exercises(slug),
        _markdown("## Parameters"),
        _code('pages.parameter_table(ch.slug).style.hide(axis="index")', "remove-input"),
        _markdown("## Provenance"),
        _code("pages.provenance(pages.load_results(ch.slug))"),
    ]


def new_chapter(root: Path, slug: str, title: str, study: str, part: str | None = None, *, package: Path) -> Path:
    """Write ``notebooks/<slug>.ipynb`` and the chapter's package ``<package>/chapters/ch<slug>/``
    with its ``__init__`` (never over an existing one) and return the notebook's path; ``part``
    is the table of contents' part it is listed in (:mod:`.derived`); ``package`` the
    ``embedding_geometry`` folder to write in (the command's: the one imported, the repository's
    ``src/embedding_geometry`` in an editable install)."""
    if not SLUG.match(slug):
        raise ScaffoldError(f"slug {slug!r}: expected two digits, an optional letter, '_' and lower-case words "
                            "(e.g. 09_pool_norm)")
    if not MODULE.match(study):
        raise ScaffoldError(f"--study {study!r}: expected a module name in lower case (e.g. pool_norm)")
    if not title.strip():
        raise ScaffoldError("--title: expected the chapter's title")
    if not (root / "notebooks").is_dir():
        raise ScaffoldError(f"--root {str(root)!r} is not a book (it has no notebooks/ folder)")
    path = root / "notebooks" / f"{slug}.ipynb"
    if path.exists():
        raise ScaffoldError(f"slug {slug!r}: {path} exists already")
    folder = Path(package) / "chapters" / package_name(slug)
    if folder.exists():
        raise ScaffoldError(f"slug {slug!r}: its package {folder} exists already")
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"}}
    metadata["embedding_geometry"] = {"part": part, "tiny": {}} if part else {"tiny": {}}
    notebook = {"cells": cells(slug, title.strip(), study), "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    for i, cell in enumerate(notebook["cells"]):
        cell["id"] = f"{slug.replace('_', '-')}-{i}"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(package_doc(slug, title.strip(), study), encoding="utf-8")
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
