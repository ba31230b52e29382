"""Every chapter reads in plain Jupyter: executed on the tiny model (papermill runs it through
nbclient, as Jupyter's "run all" does) and rendered by plain nbconvert — not by Jupyter Book — it
shows no MyST glue and no unrendered role in any output, and the number of each headline claim
appears on the page (the claims table and the claims in words are cell outputs)."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbconvert import HTMLExporter

from conftest import ROOT
from embedding_geometry.book.claims import words

CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("0*.ipynb"))
ROLE = re.compile(r"\{(?:glue|glue:\w+|ref|doc|cite|numref|eq)\}`")


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
