"""Maths in generated text: a ledger writes a formula between dollars, ``$a_j \\ge \\tau$``, as
MyST Markdown does, and every output that shows the text sets it as maths.

- **Markdown** (a chapter's sentences, its summary): the dollars stay; MyST's ``dollarmath`` on
  the page (``_config.yml`` has myst-nb read Markdown outputs as MyST, not its default CommonMark,
  which would show the dollars) and Jupyter's Markdown renderer both typeset them.
- **HTML** (a table cell, an HTML block such as a finding, a dashboard row): :func:`html` escapes
  the text and writes each formula as MathML (:func:`mathml`, as the book's pages write theirs:
  :mod:`.sphinx_pages`), which the browser renders on the page and in Jupyter alike.
- **Plain text** (a CSV, a ``text/plain`` output): the TeX stays as written, short enough to read.
"""

from __future__ import annotations

import html as _html
import re

from latex2mathml.converter import convert

FORMULA = re.compile(r"\$([^$\n]+?)\$")
"""A formula: the shortest run between two dollars on one line."""
SPAN = '<span class="math notranslate nohighlight">{}</span>'
"""How the book's pages write an inline formula (:mod:`.sphinx_pages`): its MathML in a span."""


UPRIGHT = ((re.compile(r"\\operatorname\*?\{([^{}]*)\}"), r"\\mathrm{\1}"),
           (re.compile(r"\\arg(?![A-Za-z])"), r"\\mathrm{arg}\\,"))
"""Operator names ``latex2mathml`` sets wrong, rewritten as upright text before converting:
``\\operatorname{mean}`` (which it sets in italics) and ``\\arg`` (which it leaves as TeX)."""


def mathml(tex: str, block: bool = False) -> str:
    """The MathML of one TeX formula (``latex2mathml``, after :data:`UPRIGHT`):
    ``<math display="inline">…</math>``, or ``display="block"``."""
    for pattern, upright in UPRIGHT:
        tex = pattern.sub(upright, tex)
    return convert(tex.strip(), display="block" if block else "inline")


def html(text: object) -> str:
    """``text`` as HTML: escaped around its formulas, each ``$…$`` a formula in MathML (module docstring)."""
    text, out, start = str(text), [], 0
    for match in FORMULA.finditer(text):
        out += [_html.escape(text[start:match.start()]), SPAN.format(mathml(match.group(1)))]
        start = match.end()
    return "".join(out) + _html.escape(text[start:])
