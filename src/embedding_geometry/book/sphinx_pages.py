"""The book's Sphinx extension: what the site does with the pages around their text.

- **Nothing raw.** A number pasted into the prose that rounds to zero carries no sign ("-0.00").
- **Numbers.** A chapter's number is the number its file name starts with
  (``book/chapters/07_training_objective`` is chapter 7, :func:`pages.chapter_number`); its page
  title, the sidebar and every link to it read "7. One backbone, two losses…", as the dashboard
  and the Methods page do.
- **Maths as MathML.** Every browser a reader uses renders MathML Core itself (Chromium since
  version 109, Firefox, Safari), so the TeX of the pages — ``$…$`` and ``$$…$$`` in the chapters
  and the book's pages, and the formulas of the claims — is converted once, by ``latex2mathml``
  (:func:`.maths.mathml`), and no page loads a script to typeset it (MathJax's loader, TeX input
  and HTML output with its fonts weighed about 0.6 MB a page); the PDF carries the same maths. The
  renderer is registered as ``mathml`` and chosen in ``_config.yml`` (``html_math_renderer``).
- **Links written for Jupyter.** A chapter notebook is read in Jupyter from ``notebooks/``, where
  MyST's roles, directives and ``(label)=`` lines would show as raw text, so its Markdown is plain
  (CONTRIBUTING.md): a link to another chapter is relative (``[1. Layer by layer](01_layer_by_layer.ipynb)``,
  which works as it is: the site's copies sit side by side in ``book/chapters/``); a link to a
  page of the book is written from ``notebooks/`` (``[How to rerun](../book/rerun.md)``); a link
  to a section names a label after ``#``: a book page's ``(methods-verdicts)=``, or a chapter's
  HTML anchor on the line before the section's heading, ``<a id="primer-cosine"></a>``. MyST
  resolves a path's ``#fragment`` only against heading slugs, so before a chapter page is parsed
  (:func:`for_the_site`) each anchor line becomes a label and each link to a label a
  cross-reference, which Sphinx resolves to the label's page, and warns about (an error in the
  book's build) when no page defines it.
- **Lighter pages.** The chart bundle (``vega-bundle.js``, ``charts.js``) loads only on pages that
  draw a chart; the theme's 1.5 MB icon script and its icon font give way to
  ``_static/icons.css``, and the search index loads on the search page only (``_templates/layout.html``).
- **Downloads.** Every chapter's results JSON is copied to ``downloads/results/<chapter>.json``
  and every claim of the build to ``downloads/claims.csv`` (the dashboard's columns), so that the
  pages link them and they work offline.
- **Footer.** The licences, a link to "Cite this book", and the commit and date of the build.
- **Repository.** One setting, ``repository.url`` in ``_config.yml``: when it names a public
  repository, the repository button and the Binder/Colab launch buttons appear; without it,
  neither does (a button that opens a placeholder is worse than none). The launch buttons open
  the clean source notebook in ``notebooks/``, not the executed copy the page was made from.
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

from . import dashboard, pages
from .maths import mathml

EXECUTED, SOURCE = "book/chapters/", "notebooks/"
CHART_SCRIPTS = ("vega-bundle.js", "charts.js")
LAUNCH = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}


def number_titles(app, doctree) -> None:
    """Prefix a chapter page's title with its number ("7. "), before Sphinx records the title
    for the sidebar and for links."""
    number = pages.chapter_number(Path(app.env.docname).name) if app.env.docname.startswith(EXECUTED) else None
    section = next(iter(doctree.findall(nodes.section)), None)
    if number is None or section is None or not section.children or not isinstance(section[0], nodes.title):
        return
    title = section[0]
    if not title.astext().startswith(f"{number}. "):
        title.insert(0, nodes.Text(f"{number}. "))


NEGATIVE_ZERO = re.compile(r"^-(?=0(?:\.0+)?(?:%|[eE][+-]?\d+)?$)")
"""A number that rounds to zero with a sign in front ("-0.00"): the sign means nothing."""


def unsigned_zeros(app, doctree, docname) -> None:
    """A number pasted into the prose (``{glue:text}``) that its format rounds to zero reads "0.00",
    not "-0.00"."""
    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" in node.get("classes", []) and NEGATIVE_ZERO.match(node.astext()):
            node.children = [nodes.Text(node.astext()[1:])]


def _named(asset: Any, names: list[str]) -> bool:
    """Whether a script or stylesheet of the page is one of ``names`` (file names)."""
    return any(name in str(getattr(asset, "filename", asset) or "") for name in names)


def prune_assets(app, pagename, templatename, context, doctree) -> None:
    """Drop the chart scripts from pages without a chart, and sphinx-design's stylesheet from
    pages without its dropdowns or cards."""
    body = context.get("body", "")
    scripts, styles = context.get("script_files"), context.get("css_files")
    drop = [] if "eg-chart" in body else list(CHART_SCRIPTS)
    if isinstance(scripts, list):
        scripts[:] = [s for s in scripts if not _named(s, drop)]
    if isinstance(styles, list) and 'class="sd-' not in body and " sd-" not in body:
        styles[:] = [s for s in styles if not _named(s, ["sphinx-design"])]


def build_stamp() -> tuple[str, str]:
    """(commit, date) of this build: the short commit of the package's checkout (with "+" when it
    has uncommitted changes; "unknown" outside git) and today's date (UTC)."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    package = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        try:
            found = subprocess.run(["git", *args], cwd=package, capture_output=True, text=True, timeout=20)
            return found.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown", date
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+" if dirty else ""), date


def configure(app, config) -> None:
    """The footer (licences, citation, commit and date) and the repository setting."""
    options = config.html_theme_options
    commit, date = build_stamp()
    repository = options.get("repository_url") or ""
    placeholder = not repository or "executablebooks/jupyter-book" in repository  # Jupyter Book's default
    options["use_repository_button"] = not placeholder
    options["use_issues_button"] = False
    buttons = dict(options.get("launch_buttons") or {})
    options["launch_buttons"] = {**buttons, **{key: "" if placeholder else buttons.get(key) or url
                                              for key, url in LAUNCH.items()}}
    source = "" if placeholder else f' · <a href="{repository}">source</a>'
    options["extra_footer"] = (
        f'<p class="eg-footer">Code: MIT licence; text and figures: CC BY 4.0 (see LICENSE). '
        f'<a href="{{pathto}}book/cite.html">Cite this book</a>{source}. '
        f'Built {date} from commit <code>{commit}</code>.</p>')


PDF = Path("_build") / "pdf" / "book.pdf"
"""Where the build prints the book (book.build.book_pdf); the site offers it as ``downloads/book.pdf``."""


def pdf_link(app) -> str:
    """What a page says of the book's PDF (``@pdf@``): a link to this build's, or why there is none."""
    made = Path(app.srcdir) / PDF
    if app.builder.name != "html":  # the printed book itself
        return "this file, printed from this build"
    if not made.is_file():
        return ("not printed by this build: it needs Debian's <code>chromium</code> and <code>chromium-driver</code> "
                "(<code>make pdf</code> installs them and builds the book)")
    return (f'<a href="../{pages.DOWNLOADS}/book.pdf" download><code>book.pdf</code></a> '
            f"({made.stat().st_size / 1e6:.0f} MB, printed from this build)")


def stamp_citation(app, pagename, templatename, context, doctree) -> None:
    """Fill the citation (the Cite page, or the single page the PDF prints) with this build:
    ``@commit@`` and ``@date@`` (:func:`build_stamp`) and ``@url@``, the repository's address, whose
    BibTeX line is dropped while none is set; and on any page, ``@pdf@`` (:func:`pdf_link`)."""
    for token in ("@pdf@", "&#64;pdf&#64;"):  # the HTML writer may write an "@" as "&#64;"
        if token in context.get("body", ""):
            context["body"] = context["body"].replace(token, pdf_link(app))
    if "@commit@" not in context.get("body", ""):
        return
    commit, date = build_stamp()
    url = app.config.html_theme_options.get("repository_url") or ""
    body = context["body"].replace("@commit@", commit).replace("@date@", date)
    if not url or "executablebooks/jupyter-book" in url:  # Jupyter Book's default is not this book's
        body = "\n".join(line for line in body.split("\n") if "@url@" not in line)  # one line, highlighted
    context["body"] = body.replace("@url@", url)


def footer_links(app, pagename, templatename, context, doctree) -> None:
    """Resolve the footer's link to the citation page relative to this page."""
    footer = context.get("theme_extra_footer")
    if footer and "{pathto}" in footer:
        context["theme_extra_footer"] = footer.replace("{pathto}book/cite.html", context["pathto"]("book/cite"))


ICON_GLYPHS = frozenset(
    "f002 f00c f00d f010 f015 f019 f03a f03b f042 f04b f057 f058 f05a f062 f064 f065 f066 f06a f071 f078 f08e "
    "f0c1 f0c5 f0c9 f0eb f0f3 f104 f105 f121 f135 f15b f15c f185 f186 f1c1 f303 f35d "  # solid
    "f09b f092 f296 e5ae f171".split())  # brands
"""The Font Awesome glyphs of the subset fonts in ``_static/fonts`` (``_static/icons.css`` says how
they were made): the icons the theme and its buttons draw."""
ICON_RULE = re.compile(r'(?:\.fa-[a-z0-9-]+:(?:before|after),?)+\{content:"\\([0-9a-f]+)"\}')
THEME_CSS = "_static/styles/pydata-sphinx-theme.css"


def trim_icon_rules(outdir: Path) -> None:
    """Drop from the theme's stylesheet the rules of the ~1,900 icons the subset fonts do not draw
    (85 kB of ``.fa-<name>:before{content:…}``); the rules of :data:`ICON_GLYPHS` stay."""
    path = outdir / THEME_CSS
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        kept = ICON_RULE.sub(lambda m: m.group(0) if m.group(1) in ICON_GLYPHS else "", text)
        path.write_text(kept, encoding="utf-8")


def trim_theme(app, exception) -> None:
    """:func:`trim_icon_rules` of a finished HTML build."""
    if exception is None and app.builder.format == "html":
        trim_icon_rules(Path(app.outdir))


def copy_downloads(app, exception) -> None:
    """Copy each chapter's results JSON, the book's PDF and the licences, and write every claim as CSV,
    under ``downloads/``."""
    if exception is not None or app.builder.format != "html":
        return
    results = Path(app.srcdir) / "build" / "results"
    target = Path(app.outdir) / pages.DOWNLOADS / "results"
    target.mkdir(parents=True, exist_ok=True)
    if (Path(app.srcdir) / PDF).is_file():
        shutil.copy2(Path(app.srcdir) / PDF, target.parent / "book.pdf")
    if (Path(app.srcdir) / "LICENSE").is_file():
        shutil.copy2(Path(app.srcdir) / "LICENSE", target.parent / "LICENSE.txt")
    for path in sorted(results.glob("[!.]*.json")):
        shutil.copy2(path, target / path.name)
    if any(results.glob("[!.]*.json")):
        dashboard.claims_frame(results).to_csv(target.parent / "claims.csv", index=False)


# --------------------------------------------------------------------------- maths

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


# --------------------------------------------------------------------------- a chapter's links

ANCHOR = re.compile(r'^<a id="([\w-]+)"></a>[ \t]*$', re.M)
"""An HTML anchor alone on its line: a section's label in a notebook."""
SECTION_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)[^()\s#]*\.(?:ipynb|md)#([\w-]+)\)")
"""A relative link to a label of a chapter or a book page: ``](page.md#label)``."""
PAGE_LINK = re.compile(r"\]\(\.\./book/")
"""A relative link from ``notebooks/`` to a page of the book."""


def for_the_site(markdown: str) -> str:
    """A chapter's Markdown as MyST reads it on the site: labels for anchors (``(primer-cosine)=``),
    cross-references for links to labels (``[text](#primer-cosine)``), and links to the book's
    pages from ``book/chapters/`` (``../rerun.md``)."""
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


def _retarget(buttons: list[dict[str, Any]]) -> None:
    for button in buttons:
        if "url" in button:
            button["url"] = button["url"].replace(EXECUTED, SOURCE)
        _retarget(button.get("buttons", []))


def retarget_launch_buttons(app, pagename, templatename, context, doctree) -> None:
    """sphinx-book-theme builds a chapter's Binder/Colab links from the page's path, the executed
    copy in ``book/chapters/``; they open its source, ``notebooks/<chapter>.ipynb``."""
    if pagename.startswith(EXECUTED):
        _retarget([b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"])


def setup(app) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("html-page-context", retarget_launch_buttons, priority=502)  # just after the theme's
    app.connect("source-read", rewrite_chapter)
    app.connect("config-inited", configure)
    app.connect("doctree-read", number_titles, priority=400)  # before the title collector (500)
    app.connect("doctree-resolved", unsigned_zeros)
    app.connect("html-page-context", prune_assets, priority=900)  # after the theme and extensions add theirs (500)
    app.connect("html-page-context", footer_links, priority=901)
    app.connect("html-page-context", stamp_citation)
    app.connect("build-finished", copy_downloads)
    app.connect("build-finished", trim_theme)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
