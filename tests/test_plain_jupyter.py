"""Every chapter reads in plain Jupyter: executed on the tiny model (papermill runs it through
nbclient, as Jupyter's "run all" does) and rendered by plain nbconvert — not by Jupyter Book — it
shows no MyST glue and no unrendered role in any output, and the number of each headline claim
appears on the page (the claims table and the claims in words are cell outputs).

Its Markdown is plain too (CONTRIBUTING.md, "How a chapter notebook reads"): no MyST role, no
directive fence and no ``(label)=`` line, which Jupyter would show as raw text, but links, HTML
``<details>`` folds and ``<a id="…"></a>`` anchors; and every link works where a student opens
the notebook, in ``notebooks/`` (``embedding_geometry.book.sphinx_pages`` resolves the same links
on the site)."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbconvert import HTMLExporter

from conftest import ROOT
from embedding_geometry.book.claims import words

CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("0*.ipynb"))
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
ROLE = re.compile(r"\{(?:glue|glue:\w+|ref|doc|cite|numref|eq)\}`")
MYST = re.compile(r"\{[\w:-]+\}`|^[ \t]*(?::{3,}|`{3,}|~{3,})\{|^\([\w-]+\)=[ \t]*$", re.M)
"""What plain Jupyter shows raw: a role (``{cite}`key```), a directive fence (``:::{note}``,
```` ```{admonition} ````) or a label line (``(primer-cosine)=``)."""
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^()\s#]*)(?:#([^()\s]+))?\)")
"""A relative Markdown link: its path (empty for a link within the page) and its fragment."""


def outputs_text(notebook) -> str:
    """Every text a code cell's outputs carry (plain, Markdown, HTML)."""
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            found += [data.get(kind, "") for kind in ("text/plain", "text/markdown", "text/html")]
            found.append(output.get("text", ""))
    return "\n".join("".join(part) if isinstance(part, list) else part for part in found)


@pytest.mark.slow
@pytest.mark.parametrize("slug", CHAPTERS)
def test_a_chapter_rendered_by_plain_nbconvert_shows_its_numbers_and_no_roles(built_book, slug):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    notebook = nbformat.read(root / "book" / "chapters" / f"{slug}.ipynb", as_version=4)
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    assert "{glue" not in html
    shown = outputs_text(notebook)
    assert not ROLE.search(shown), ROLE.search(shown).group(0)
    results = json.loads((root / "build" / "results" / f"{slug}.json").read_text())
    main = results["params"].get("model")  # the chapter's own model: its headline claims are stated in words
    headline = [c for c in results["claims"] if c.get("headline") and not c.get("home") and c["model"] == main
                and isinstance(c.get("measured"), (int, float))]
    missing = [(c["id"], words.number(c["measured"])) for c in headline if words.number(c["measured"]) not in html]
    assert not missing, f"headline numbers not on the page: {missing[:5]}"


def markdown_cells(slug: str) -> list:
    notebook = nbformat.read(ROOT / "notebooks" / f"{slug}.ipynb", as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "markdown"]


def myst_syntax(text: str) -> list[str]:
    """Each piece of ``text`` that plain Jupyter would show as raw MyST (:data:`MYST`)."""
    return [m.group(0).strip() for m in MYST.finditer(text)]


def anchors(path) -> set[str]:
    """The fragments a link may name in ``path``: a notebook's ``<a id>`` anchors, a book page's
    ``(label)=`` labels."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text = "\n".join(cell.source for cell in nbformat.reads(text, as_version=4).cells)
        return set(re.findall(r'^<a id="([\w-]+)"></a>$', text, re.M))
    return set(re.findall(r"^\(([\w-]+)\)=$", text, re.M))


def test_the_myst_check_finds_roles_directives_and_labels_but_not_plain_markdown():
    raw = ("{cite}`a_2020`\n{ref}`Methods <methods-verdicts>`\n::::{dropdown} About\n"
           "```{admonition} Objectives\n(primer-pca)=")
    assert myst_syntax(raw) == ["{cite}`", "{ref}`", "::::{", "```{", "(primer-pca)="]
    plain = ('<details class="eg-fold"><summary>About</summary>\n\n```bash\nmake book\n```\n\n'
             '<a id="primer-pca"></a>\n## PCA\n\nSee [Methods](../book/methods.md#methods-verdicts) (a note).')
    assert myst_syntax(plain) == []


@pytest.mark.parametrize("slug", NOTEBOOKS)
def test_no_markdown_cell_holds_myst_syntax_that_jupyter_shows_raw(slug):
    found = {cell.get("id"): myst_syntax(cell.source) for cell in markdown_cells(slug)}
    assert {cell: raw for cell, raw in found.items() if raw} == {}


@pytest.mark.parametrize("slug", NOTEBOOKS)
def test_every_link_of_a_chapter_opens_a_file_next_to_it_and_names_an_anchor_there(slug):
    """From ``notebooks/``: another chapter (``02_x.ipynb``), a page of the book
    (``../book/methods.md``), a section (``…#label``: an anchor of that notebook, a label of that page)."""
    here = ROOT / "notebooks" / f"{slug}.ipynb"
    broken = []
    for cell in markdown_cells(slug):
        for path, fragment in LINK.findall(re.sub(r"`[^`]*`", "", cell.source)):
            target = (here.parent / path).resolve() if path else here
            if not target.is_file():
                broken.append(f"{path}: no such file")
            elif fragment and fragment not in anchors(target):
                broken.append(f"{path}#{fragment}: no such anchor")
    assert broken == []
