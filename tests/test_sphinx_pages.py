"""The book's Sphinx extension (book/sphinx_pages.py): numbers, maths, lighter pages, downloads,
footer and repository setting; and the citation files it points to. The launch buttons and a
chapter's links on the site."""

import json
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import yaml
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from conftest import ROOT
from embedding_geometry.book import dashboard, pages, sphinx_pages


def doctree(title: str) -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    section = nodes.section()
    section += nodes.title(text=title)
    document += section
    return document


def test_a_chapter_title_carries_the_number_its_file_name_starts_with():
    for docname, title, expected in [("book/chapters/07_training_objective", "One backbone", "7. One backbone"),
                                     ("book/chapters/00_the_model", "The model", "0. The model"),
                                     ("book/chapters/00b_primer", "A primer", "A primer"),
                                     ("book/chapters/99_claims_dashboard", "Claims", "Claims"),
                                     ("book/methods", "Methods", "Methods")]:
        tree = doctree(title)
        sphinx_pages.number_titles(SimpleNamespace(env=SimpleNamespace(docname=docname)), tree)
        assert next(iter(tree.findall(nodes.title))).astext() == expected
    assert [pages.chapter_number(s) for s in ("01_a", "08_b", "00b_c", "98_d", "x")] == [1, 8, None, None, None]
    assert pages.chapter_label("07_training_objective") == "7 · training objective"


def test_chart_scripts_load_only_where_a_page_needs_them_and_maths_needs_none():
    def kept(body):
        context = {"body": body, "script_files": [SimpleNamespace(filename=name, attributes={}) for name in
                                                  ("jquery.js", "vega-bundle.js", "charts.js", "book.js")],
                   "css_files": [SimpleNamespace(filename="sphinx-design.min.css")]}
        sphinx_pages.prune_assets(None, "page", "page.html", context, None)
        return [s.filename for s in context["script_files"] + context["css_files"]]

    assert kept("<p>text</p>") == ["jquery.js", "book.js"]
    assert kept('<div class="eg-chart"></div>') == ["jquery.js", "vega-bundle.js", "charts.js", "book.js"]
    assert kept('<details class="sd-sphinx-override sd-dropdown">') == ["jquery.js", "book.js", "sphinx-design.min.css"]
    config = yaml.safe_load((ROOT / "_config.yml").read_text())  # a claim's $…$ in a Markdown output is maths
    assert config["sphinx"]["config"]["nb_render_markdown_format"] == "myst"
    assert config["sphinx"]["config"]["html_math_renderer"] == "mathml"
    assert "dollarmath" in config["parse"]["myst_enable_extensions"]


def test_a_formula_is_written_as_mathml_in_pages_and_in_the_claims_tables():
    from embedding_geometry.book import maths

    assert maths.mathml("a_j \\ge \\tau") == (
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><mrow><msub><mi>a</mi><mi>j</mi></msub>'
        "<mo>&#x02265;</mo><mi>&#x003C4;</mi></mrow></math>")
    assert 'display="block"' in maths.mathml("x", block=True)
    for tex in ("\\operatorname{mean}_s x", "\\arg\\max_l x"):  # upright operator names, no TeX left over
        written = maths.mathml(tex)
        assert "\\" not in written and '<mi mathvariant="normal">' in written, written
    cell = pages.HtmlTable(pd.DataFrame({"claim": ["high pairs $S_{ij} \\ge t$ for 5 < 6"]}), math_columns=("claim",))
    shown = cell._repr_html_()
    assert "<msub><mi>S</mi>" in shown and "5 &lt; 6" in shown and "$" not in shown
    assert "<math" not in pages.HtmlTable(pd.DataFrame({"claim": ["$5"]}), math_columns=("claim",))._repr_html_()
    assert sphinx_pages.display_parts("a = b\n\n c = d\n") == ["a = b", "c = d"]  # one block each


def test_a_pasted_number_that_rounds_to_zero_has_no_sign():
    tree = doctree("t")
    for text in ("-0.00", "-0.0%", "-0.01", "-3"):
        tree += nodes.inline(text, text, classes=["pasted-text"])
    sphinx_pages.unsigned_zeros(None, tree, "page")
    assert [n.astext() for n in tree.findall(nodes.inline)] == ["0.00", "0.0%", "-0.01", "-3"]


def config(**options):
    return SimpleNamespace(html_theme_options=dict(options))


def test_one_repository_setting_turns_the_repository_and_launch_buttons_on():
    default = config(repository_url="https://github.com/executablebooks/jupyter-book",
                     launch_buttons={"binderhub_url": "", "colab_url": "", "notebook_interface": "classic"})
    sphinx_pages.configure(SimpleNamespace(srcdir=str(ROOT)), default)
    options = default.html_theme_options
    assert not options["use_repository_button"] and not any(options["launch_buttons"][k] for k in sphinx_pages.LAUNCH)
    assert "source</a>" not in options["extra_footer"]
    assert re.search(r"Built \d{4}-\d\d-\d\d from commit <code>[0-9a-f]+\+?|unknown</code>", options["extra_footer"])
    assert "MIT" in options["extra_footer"] and "CC BY 4.0" in options["extra_footer"]
    public = config(repository_url="https://github.com/someone/embedding-geometry", launch_buttons={})
    sphinx_pages.configure(SimpleNamespace(srcdir=str(ROOT)), public)
    options = public.html_theme_options
    assert options["use_repository_button"] and options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert '<a href="https://github.com/someone/embedding-geometry">source</a>' in options["extra_footer"]


def test_the_theme_keeps_only_the_icon_rules_its_subset_fonts_draw(tmp_path):
    css = tmp_path / sphinx_pages.THEME_CSS
    css.parent.mkdir(parents=True)
    css.write_text('a{color:red}.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-ad:before{content:"\\f641"}b{x:y}')
    sphinx_pages.trim_icon_rules(tmp_path)
    assert css.read_text() == 'a{color:red}.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}b{x:y}'
    subset = (ROOT / "_static" / "icons.css").read_text()
    assert set(re.findall(r"U\+([0-9a-f]+)", subset)) == set(sphinx_pages.ICON_GLYPHS)  # one list of glyphs


def test_the_site_carries_each_chapters_results_and_every_claim_as_csv(tmp_path):
    from test_dashboard import claim, result

    results = tmp_path / "book" / "build" / "results"
    results.mkdir(parents=True)
    (results / "01_a.json").write_text(json.dumps(result("01_a", [claim("c", "holds")])))
    app = SimpleNamespace(srcdir=str(tmp_path / "book"), outdir=str(tmp_path / "html"),
                          builder=SimpleNamespace(format="html"))
    sphinx_pages.copy_downloads(app, None)
    downloads = tmp_path / "html" / pages.DOWNLOADS
    assert json.loads((downloads / "results" / "01_a.json").read_text())["chapter"] == "01_a"
    header, row = (downloads / "claims.csv").read_text().splitlines()[:2]
    assert header.split(",") == dashboard.COLUMNS and row.startswith("01_a,c,published,,True,")


def test_the_citation_file_and_the_cite_page_name_the_same_book():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    title = yaml.safe_load((ROOT / "_config.yml").read_text())["title"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert cff["cff-version"] == "1.2.0" and cff["title"] == title and cff["version"] == version
    assert cff["license"] == ["MIT", "CC-BY-4.0"]
    page = (ROOT / "book" / "cite.md").read_text()
    bibtex = re.search(r"```bibtex\n(.*?)```", page, re.S).group(1)
    assert f"title   = {{{title}}}" in bibtex and f"version = {{{version}}}" in bibtex
    licence = (ROOT / "LICENSE").read_text()
    assert "MIT License" in licence and "Creative Commons Attribution 4.0" in licence
    assert "book/cite" in (ROOT / "_toc.yml").read_text() and "book/glossary" in (ROOT / "_toc.yml").read_text()


def test_the_table_of_contents_lists_the_chapters_in_the_order_of_their_numbers():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [Path(c["file"]).name for part in toc["parts"] for c in part["chapters"]]
    numbers = [pages.chapter_number(f) for f in files if pages.chapter_number(f) is not None]
    assert numbers == sorted(numbers) == list(range(9))


def test_launch_buttons_are_retargeted_to_the_clean_notebook():
    """With a repository configured, the theme's Binder/Colab links name the executed copy;
    the extension points them at notebooks/<chapter>.ipynb."""
    from embedding_geometry.book.sphinx_pages import retarget_launch_buttons

    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=tree/book/chapters/01_x.ipynb"
    context = {"header_buttons": [{"label": "launch-buttons", "buttons": [{"url": binder}]},
                                  {"label": "download-buttons", "buttons": [{"url": "book/chapters/01_x.ipynb"}]}]}
    retarget_launch_buttons(None, "book/chapters/01_x", None, context, None)
    assert context["header_buttons"][0]["buttons"][0]["url"].endswith("tree/notebooks/01_x.ipynb")
    assert context["header_buttons"][1]["buttons"][0]["url"] == "book/chapters/01_x.ipynb"


def test_a_chapters_plain_links_and_anchors_become_labels_and_cross_references_on_the_site():
    """A chapter's Markdown, written for Jupyter in notebooks/, read by MyST from book/chapters/:
    an anchor line becomes a label, a link to a label a cross-reference, a link to a book page is
    taken from one folder down; links to chapters, within the page and off the site stay as they are."""
    from embedding_geometry.book.sphinx_pages import for_the_site

    written = ('<a id="primer-cosine"></a>\n## Cosine similarity\n\nSee [below](#primer-cosine), '
               "[Methods, verdicts](../book/methods.md#methods-verdicts), [How to rerun](../book/rerun.md), "
               "[chapter 2](02_similarity_attractor.ipynb), [PCA](00b_primer.ipynb#primer-pca), "
               "[a post](https://example.org/post.md#intro).")
    assert for_the_site(written) == (
        "(primer-cosine)=\n## Cosine similarity\n\nSee [below](#primer-cosine), "
        "[Methods, verdicts](#methods-verdicts), [How to rerun](../rerun.md), "
        "[chapter 2](02_similarity_attractor.ipynb), [PCA](#primer-pca), "
        "[a post](https://example.org/post.md#intro).")


def test_only_chapter_notebooks_are_rewritten_and_their_code_cells_stay():
    from embedding_geometry.book.sphinx_pages import rewrite_chapter

    notebook = {"cells": [{"cell_type": "markdown", "source": ["See [How to rerun](../book/rerun.md).\n"]},
                          {"cell_type": "code", "source": 'print("](../book/x.md)")'}], "metadata": {}}
    source = [json.dumps(notebook)]
    rewrite_chapter(None, "book/chapters/01_x", source)
    cells = json.loads(source[0])["cells"]
    assert cells[0]["source"] == "See [How to rerun](../rerun.md).\n" and cells[1] == notebook["cells"][1]
    page = ["See [How to rerun](../book/rerun.md)."]
    rewrite_chapter(None, "book/methods", page)
    assert page == ["See [How to rerun](../book/rerun.md)."]


def test_the_citation_names_this_builds_commit_and_date_and_the_repository_once_one_is_set():
    from embedding_geometry.book.sphinx_pages import build_stamp, stamp_citation

    body = "version = {0.1.0, commit @commit@},\n<span>url</span> = <span>{@url@}</span>,\nurldate = {@date@}"
    commit, date = build_stamp()
    for url, shown in (("https://example.org/book", True), ("", False),
                       ("https://github.com/executablebooks/jupyter-book", False)):
        app = SimpleNamespace(config=SimpleNamespace(html_theme_options={"repository_url": url}))
        context = {"body": body}
        stamp_citation(app, "book/cite", None, context, None)
        assert f"commit {commit}}}" in context["body"] and f"urldate = {{{date}}}" in context["body"]
        assert ("{https://example.org/book}" in context["body"]) is shown and "@" not in context["body"]
    other = {"body": "<p>No citation here: @date@.</p>"}
    stamp_citation(app, "book/intro", None, other, None)
    assert other["body"] == "<p>No citation here: @date@.</p>"  # only a page with the citation


def test_a_page_links_this_builds_pdf_or_says_why_there_is_none(tmp_path):
    from embedding_geometry.book.sphinx_pages import PDF, stamp_citation

    def shown(builder):
        app = SimpleNamespace(srcdir=str(tmp_path), builder=SimpleNamespace(name=builder),
                              config=SimpleNamespace(html_theme_options={}))
        context = {"body": "<p>The whole book as one PDF: @pdf@.</p><p>Again: &#64;pdf&#64;.</p>"}
        stamp_citation(app, "book/intro", None, context, None)
        return context["body"]

    assert shown("html").count("not printed by this build") == 2 and "href" not in shown("html")
    (tmp_path / PDF).parent.mkdir(parents=True)
    (tmp_path / PDF).write_bytes(b"%PDF" + b"0" * 3_000_000)
    link = '<a href="../downloads/book.pdf" download><code>book.pdf</code></a>'
    assert f"{link} (3 MB, printed from this build)" in shown("html")
    assert "this file, printed from this build" in shown("singlehtml")  # the printed book itself
