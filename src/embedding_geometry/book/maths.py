"""Maths in generated text: a ledger writes a formula between dollars, ``$a_j \\ge \\tau$``, as
MyST Markdown does, and every output that shows the text sets it as maths.

- **Markdown** (a chapter's sentences, its summary): the dollars stay; MyST's ``dollarmath`` on
  the page and Jupyter's Markdown renderer both typeset them.
- **HTML** (a table cell, a finding, a dashboard row): :func:`html` escapes the text and writes
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
    text, out, start = str(text), [], 0
    for match in FORMULA.finditer(text):
        out += [_html.escape(text[start:match.start()]), SPAN.format(_html.escape(match.group(1)))]
        start = match.end()
    return "".join(out) + _html.escape(text[start:])
