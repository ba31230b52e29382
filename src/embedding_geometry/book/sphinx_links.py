"""A Sphinx extension: a chapter's links, written to work in Jupyter, resolved on the site.

A chapter notebook is read in Jupyter from ``notebooks/``, where MyST's roles, directives and
``(label)=`` lines would show as raw text. So its Markdown is plain (CONTRIBUTING.md):

- a link to another chapter is a relative link, ``[1. Layer by layer](01_layer_by_layer.ipynb)``:
  it works as it is, since the site's copies sit side by side in ``book/chapters/``;
- a link to a page of the book is written from ``notebooks/``, ``[How to rerun](../book/rerun.md)``;
  from ``book/chapters/`` that page is ``../rerun.md``;
- a link to a section names a label after ``#``: a book page's ``(methods-verdicts)=``, or a
  chapter's HTML anchor on the line before the section's heading, ``<a id="primer-cosine"></a>``
  (``[Cosine similarity](00b_primer.ipynb#primer-cosine)``).

MyST resolves a path's ``#fragment`` only against heading slugs, not labels, so before a chapter
page is parsed (:func:`for_the_site`) each anchor line becomes the label ``(primer-cosine)=`` and
each link to a label becomes ``[text](#primer-cosine)``, a cross-reference that Sphinx resolves
to the label's page, and warns about (an error in the book's build) when no page defines it.
"""

from __future__ import annotations

import json
import re
from typing import Any

EXECUTED = "book/chapters/"
ANCHOR = re.compile(r'^<a id="([\w-]+)"></a>[ \t]*$', re.M)
"""An HTML anchor alone on its line: a section's label in a notebook."""
SECTION_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)[^()\s#]*\.(?:ipynb|md)#([\w-]+)\)")
"""A relative link to a label of a chapter or a book page: ``](page.md#label)``."""
PAGE_LINK = re.compile(r"\]\(\.\./book/")
"""A relative link from ``notebooks/`` to a page of the book."""


def for_the_site(markdown: str) -> str:
    """A chapter's Markdown as MyST reads it on the site: labels for anchors, cross-references for
    links to labels, and links to the book's pages from ``book/chapters/``."""
    markdown = ANCHOR.sub(r"(\1)=", markdown)
    markdown = SECTION_LINK.sub(r"](#\1)", markdown)
    return PAGE_LINK.sub("](../", markdown)


def rewrite_chapter(app, docname: str, source: list[str]) -> None:
    """``source-read``: :func:`for_the_site` on every Markdown cell of a chapter notebook."""
    if not docname.startswith(EXECUTED):
        return
    try:
        notebook = json.loads(source[0])
    except ValueError:
        return
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cell["source"] = for_the_site(text)
    source[0] = json.dumps(notebook, ensure_ascii=False)


def setup(app) -> dict[str, Any]:
    app.connect("source-read", rewrite_chapter)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
