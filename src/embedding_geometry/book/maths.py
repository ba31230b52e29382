"""Maths in generated text: a ledger writes a formula between dollars, ``$a_j \\ge \\tau$``, as
MyST Markdown does, and every output that shows the text sets it as maths.

- **Markdown** (a chapter's sentences, its summary): the dollars stay; MyST's ``dollarmath`` on
  the page (``_config.yml`` has myst-nb read Markdown outputs as MyST, not its default CommonMark,
  which would show the dollars) and Jupyter's Markdown renderer both typeset them. Markdown that mixes in inline HTML
  (a badge) escapes the text around the formulas and leaves each formula as it is
  (:func:`markdown`): Markdown reads the text between two tags as Markdown, where ``\\(`` would
  lose its backslash.
- **HTML** (a table cell, an HTML block such as a finding, a dashboard row): :func:`html` escapes
  the text and writes
  each formula as Sphinx writes a math node, ``<span class="math notranslate nohighlight">\\(…\\)
  </span>``. On the page MathJax typesets it (MyST limits MathJax to elements of class ``math``),
  and :func:`embedding_geometry.book.sphinx_pages.has_maths` sees the class, so a page whose only
  maths is in such an output still loads MathJax; Jupyter typesets ``\\(…\\)`` in an output too.
- **Plain text** (a CSV, a ``text/plain`` output): the TeX stays as written, short enough to read.
"""

from __future__ import annotations

import html as _html
import re

FORMULA = re.compile(r"\$([^$\n]+?)\$")
"""A formula: the shortest run between two dollars on one line."""
SPAN = '<span class="math notranslate nohighlight">\\({}\\)</span>'
"""How Sphinx writes an inline math node in HTML (the class MathJax looks for)."""


def formulas(text: str) -> list[str]:
    """The TeX of every formula in ``text``."""
    return FORMULA.findall(str(text))


def html(text: object) -> str:
    """``text`` as HTML: escaped, each ``$…$`` a math span (module docstring)."""
    return _escaped(str(text), lambda tex: SPAN.format(_html.escape(tex)))


def markdown(text: object) -> str:
    """``text`` for Markdown beside inline HTML: escaped, each ``$…$`` left as it is (MyST's
    dollarmath reads it before any HTML)."""
    return _escaped(str(text), lambda tex: f"${tex}$")


def _escaped(text: str, formula) -> str:
    """``text`` escaped around its formulas, each formula written by ``formula(tex)``."""
    out, start = [], 0
    for match in FORMULA.finditer(text):
        out += [_html.escape(text[start:match.start()]), formula(match.group(1))]
        start = match.end()
    return "".join(out) + _html.escape(text[start:])
