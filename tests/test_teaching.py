"""Every chapter teaches: learning objectives at the top, a prerequisites line into the primer,
and at least three exercises at the end, each naming a parameter to change and answering with
numbers computed in the build (CONTRIBUTING.md, "How a chapter notebook reads").

The pattern a chapter follows (see ``notebooks/00_the_model.ipynb``):

- right under the title and thesis, a paragraph
  ``**Learning objectives.** After this chapter you can:`` followed by 3–5 ``- `` bullets, and a
  line starting ``**Prerequisites:**`` that links to a chapter or to a section of the primer
  (``[Cosine similarity](00b_primer.ipynb#primer-cosine)``, an anchor ``<a id="primer-…"></a>``
  of the primer): plain Markdown and HTML, which read the same in Jupyter and in the book;
- a ``## Exercises`` section of ``### Exercise N: …`` subsections, each with the papermill command
  (``papermill notebooks/<slug>.ipynb … -p name value`` or ``-y 'name: …'``) or a profile snippet
  naming a declared parameter, a question, a code cell tagged ``hide-output`` whose output holds
  the answer's numbers (folded in the book, visible in Jupyter), and a
  ``<details><summary>Answer</summary> … </details>`` block of reasoning that types no number.

Every notebook in ``notebooks/`` is a chapter except the pages of the table of contents'
"Reference" part (and the claims dashboard, 99_*). Chapters in ``PENDING`` have not got their exercises yet: their
tests are expected to fail (strict), so the suite stays green and the entry must be removed once the exercises land.
"""

import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"


def reference_pages() -> set[str]:
    """Notebooks of the table of contents' "Reference" part (claims dashboard, performance):
    pages about the book, not chapters that teach."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return {Path(entry["file"]).name for part in toc["parts"] if part.get("caption") == "Reference"
            for entry in part["chapters"]}


CHAPTERS = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb")
                  if p.stem not in reference_pages() and not p.stem.startswith("99_"))
PRIMER = "00b_primer"
PENDING: set[str] = set()
MIN_EXERCISES = 3


def chapters():
    """Every chapter notebook present; those in PENDING marked as expected (strict) failures."""
    pending = pytest.mark.xfail(strict=True, reason="exercises not added yet")
    return [pytest.param(slug, marks=pending) if slug in PENDING else slug for slug in CHAPTERS]


# --------------------------------------------------------------------------- reading a notebook

def markdown(slug: str) -> str:
    notebook = nbformat.read(NOTEBOOKS / f"{slug}.ipynb", as_version=4)
    return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


COMPUTED = "[[computed answer]]"
"""Where a code cell tagged ``hide-output`` stands in :func:`stream` (the cell that computes an answer)."""


def stream(slug: str) -> str:
    """The notebook's markdown, with :data:`COMPUTED` where a ``hide-output`` code cell stands."""
    notebook = nbformat.read(NOTEBOOKS / f"{slug}.ipynb", as_version=4)
    return "\n\n".join(c.source if c.cell_type == "markdown" else COMPUTED for c in notebook.cells
                        if c.cell_type == "markdown" or "hide-output" in c.metadata.get("tags", []))


def declared_parameters(slug: str) -> set[str]:
    import papermill

    return set(papermill.inspect_notebook(str(NOTEBOOKS / f"{slug}.ipynb")))


def primer_labels() -> set[str]:
    """The primer's section anchors, ``<a id="primer-…"></a>`` on the line before a heading."""
    return set(re.findall(r'^<a id="(primer-[\w-]+)"></a>$', markdown(PRIMER), re.M))


def exercises(text: str) -> list[tuple[str, str]]:
    """(title, body) of every ``### Exercise`` subsection after the ``## Exercises`` heading."""
    match = re.search(r"^## Exercises\s*$", text, re.M)
    if not match:
        return []
    rest = text[match.end():]
    rest = rest[: m.start()] if (m := re.search(r"^## ", rest, re.M)) else rest
    parts = re.split(r"^### (Exercise[^\n]*)\n", rest, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def answer(body: str) -> str | None:
    """The text of the exercise's ``<details><summary>Answer</summary> … </details>`` block."""
    match = re.search(r"<details><summary>Answer</summary>(.*?)</details>", body, re.S)
    return match.group(1) if match else None


def changed_parameters(slug: str, body: str) -> list[str]:
    """The parameters an exercise tells the reader to change: ``-p name`` and ``-y 'name: …'`` in
    a papermill command on this notebook, or ``name:`` lines of a profile snippet under the slug."""
    names = []
    for command in re.findall(rf"papermill notebooks/{re.escape(slug)}\.ipynb(?:[^\n]*\\\n)*[^\n]*", body):
        names += re.findall(r"-p\s+(\w+)", command) + re.findall(r"-y\s+['\"](\w+):", command)
    for snippet in re.findall(r"```yaml\n(.*?)```", body, re.S):
        if f"{slug}:" in snippet:
            names += re.findall(r"^\s+(\w+):", snippet.split(f"{slug}:", 1)[1], re.M)
    return names


HAND_TYPED = re.compile(r"\d+\.\d+|\d{2,}")


def teaching_problems(slug: str) -> list[str]:
    """What the notebook's teaching pattern lacks (empty when complete)."""
    text, problems = stream(slug), []
    objectives = re.search(r"^\*\*Learning objectives\.\*\*[^\n]*\n\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    bullets = re.findall(r"^- ", objectives.group(1), re.M) if objectives else []
    if not 3 <= len(bullets) <= 5:
        problems.append(f"a '**Learning objectives.**' paragraph with 3–5 bullets (found {len(bullets)})")
    prerequisites = re.search(r"^\*\*Prerequisites:\*\*(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    if not prerequisites or not re.search(r"\]\((?:\d\d[a-z]?_\w+\.ipynb)?(?:#[\w-]+)?\)", prerequisites.group(1)):
        problems.append("a '**Prerequisites:**' line that links to the primer or a chapter")
    else:
        refs = re.findall(r"\]\((?:00b_primer\.ipynb)?#(primer-[\w-]+)\)", prerequisites.group(1))
        problems += [f"prerequisite {ref} is not an anchor of the primer" for ref in set(refs) - primer_labels()]
    found = exercises(text)
    if len(found) < MIN_EXERCISES:
        problems.append(f"at least {MIN_EXERCISES} '### Exercise' subsections under '## Exercises' "
                        f"(found {len(found)})")
    declared = declared_parameters(slug)
    for title, body in found:
        names = changed_parameters(slug, body)
        if not names or set(names) - declared:
            problems.append(f"{title}: names no declared parameter to change (found {names})")
        if COMPUTED not in body:
            problems.append(f"{title}: no code cell tagged hide-output computes its answer")
        text_of_answer = answer(body)
        if text_of_answer is None:
            problems.append(f"{title}: no '<details><summary>Answer</summary>' block")
            continue
        if "{glue" in text_of_answer:
            problems.append(f"{title}: its answer uses a glue role (a placeholder in plain Jupyter)")
        prose = re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)", "", text_of_answer)  # code, maths, a link's target
        if typed := HAND_TYPED.findall(prose):
            problems.append(f"{title}: its answer types numbers by hand: {typed}")
    return problems


# --------------------------------------------------------------------------- the tests

def test_every_chapter_is_covered_and_pending_lists_only_real_gaps():
    assert PRIMER in CHAPTERS and "00_the_model" in CHAPTERS
    assert not (PENDING & {PRIMER, "00_the_model"})


@pytest.mark.parametrize("slug", chapters())
def test_chapter_source_has_objectives_prerequisites_and_exercises(slug):
    assert teaching_problems(slug) == []


def test_the_checker_rejects_a_chapter_without_the_pattern(tmp_path, monkeypatch):
    """A hand-typed answer, a missing dropdown and an undeclared parameter are all caught."""
    bad = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                            "language": "python"}})
    bad.cells = [nbformat.v4.new_code_cell("x = 1  # a parameter", metadata={"tags": ["parameters"]}),
                 nbformat.v4.new_markdown_cell("# Bad\n\n## Exercises\n\n### Exercise 1: typed\n\n"
                                               "`papermill notebooks/bad.ipynb out.ipynb -p y 2`\n\n"
                                               "<details><summary>Answer</summary>\nIt is 0.42.\n</details>\n")]
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nbformat.write(bad, folder / "bad.ipynb")
    nbformat.write(nbformat.read(NOTEBOOKS / f"{PRIMER}.ipynb", as_version=4), folder / f"{PRIMER}.ipynb")
    monkeypatch.setattr(sys.modules[__name__], "NOTEBOOKS", folder)
    problems = " | ".join(teaching_problems("bad"))
    for expected in ("Learning objectives", "Prerequisites", "at least 3", "names no declared parameter",
                     "no code cell tagged hide-output", "types numbers by hand"):
        assert expected in problems, problems


@pytest.mark.slow
@pytest.mark.parametrize("slug", chapters())
def test_built_page_shows_objectives_and_computed_answers(built_book, slug):
    """On the built page: the learning objectives and their list, and in the Exercises section at
    least three answers, each a folded output (the computed numbers) and an answer block."""
    root, result = built_book
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    page = (root / "_build" / "html" / "book" / "chapters" / f"{slug}.html").read_text()
    assert re.search(r"<p><strong>Learning objectives\.</strong>[^<]*</p>\s*<ul", page)
    start = page.find('<section id="exercises">')
    assert start >= 0, "no Exercises section"
    end = re.search(r'<section id="(?!exercise)', page[start + 1:])
    section = page[start: start + 1 + end.start()] if end else page[start:]
    folded = re.findall(r'<div class="[^"]*tag_hide-output[^"]*".*?</details>', section, re.S)
    assert len(folded) >= MIN_EXERCISES and all("<td" in block or "<img" in block for block in folded), section[:800]
    assert section.count("<summary>Answer</summary>") >= MIN_EXERCISES
