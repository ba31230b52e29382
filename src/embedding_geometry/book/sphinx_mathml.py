"""A Sphinx extension that writes the book's maths as MathML when the book is built.

Every browser a reader uses renders MathML Core itself (Chromium since version 109, Firefox,
Safari), so the TeX of the pages — ``$…$`` and ``$$…$$`` in the chapters and the book's pages,
and the formulas of the claims — is converted once, by ``latex2mathml`` (:func:`.maths.mathml`),
and no page loads a script to typeset it in the reader's browser (MathJax's loader, TeX input
and HTML output with its fonts weighed about 0.6 MB a page). The PDF, which Chromium prints from
the same pages, carries the same maths.

The renderer is registered as ``mathml`` and chosen in ``_config.yml``
(``html_math_renderer: mathml``). A display block holding several equations (separated by a
blank line, as Sphinx writes them) sets each as a block of its own; a numbered equation keeps its
number and its link.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

from .maths import mathml

def display_parts(tex: str) -> list[str]:
    """A display block's equations: Sphinx separates them by a blank line; each becomes a block
    of its own, one under the other."""
    return [part.strip() for part in tex.split("\n\n") if part.strip()]


def visit_math(self, node: nodes.math) -> None:
    """An inline formula: its MathML in a span Sphinx's stylesheets know."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(mathml(node.astext()) + "</span>")
    raise nodes.SkipNode


def visit_math_block(self, node: nodes.math_block) -> None:
    """A display formula, with its equation number and permalink when it has one."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append("".join(mathml(part, block=True) for part in display_parts(node.astext())) + "</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
