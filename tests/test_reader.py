"""Every page as a reader meets it, at a desktop (1280 px) and a phone (390 px) width.

On every page of the built book:

- no chart is wider than the column it sits in, and none draws text smaller than 11 px as
  rendered (its font size times the scale it is drawn at), cuts a legend or axis label ("…"), or
  draws a label outside its own box;
- no text of the page is smaller than 11 px (a formula's sub- and superscripts aside);
- no word of a table cell is broken across lines, folded tables (claims, errata, parameters,
  findings: every ``<details>`` opened while measuring) included;
- the visible text, cell outputs and folded sections included, holds nothing raw: no
  ``PosixPath``, dict, list or NumPy repr, NaN, ``-0.0000``, ``True``/``False`` or build path
  (code excepted), and no leftovers of the sources ("METHODS.md", a tab character, a broken ``\\top``);
- the console shows no error or warning;
- the page weighs at most 1.5 MB, or 2.5 MB with charts: its own HTML (text, tables, the data of
  its charts) and everything it loads (theme, scripts, fonts, the chart bundle), uncompressed.

The tests that open the site are marked slow and browser; the tests of the checks themselves
(the raw-output patterns, the weight limit) need neither and run in ``make test-fast``.

On the chapters, the page is at most 25,000 px tall at 1280 px (the claims dashboard 15,000), the
first section heading comes within the first 1,200 px, and on
chapters 1–8 the first chart (the key figure under "What we found") within 3,000 px; the landing
page answers every question of ``dashboard.QUESTIONS`` with a verdict, shows a key figure and
offers the book's PDF, whose file is in the site; on the claims dashboard, the verdict column is
inside the viewport without scrolling sideways. Each page
is saved as a screenshot under ``build/screenshots/<width>/`` for a reviewer to look at.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from conftest import ROOT, site_pages, wait_for

from embedding_geometry.book import dashboard

WIDTHS = (1280, 390)
SCREENSHOTS = ROOT / "build" / "screenshots"
NOISE = ("favicon.ico",)
LEFTOVERS = ("METHODS.md", "\t", "^op")
MIN_FONT = 11.0
WEIGHT = {False: 1.5e6, True: 2.5e6}
KEY_FIGURES = tuple(f"0{n}_" for n in range(1, 9))  # the chapters whose key figure opens them (ch.key_figure)
FIRST_CHART = 3000  # px from the page's top at 1280: a chapter's key figure sits under its findings
TALLEST = {"99_claims_dashboard.html": 15_000}  # px at 1280 (issue 39): the dashboard opens on the headline claims
TALLEST_CHAPTER = 25_000  # every other page of book/chapters/
"""What a page may weigh, its own HTML included, with everything it loads (bytes, uncompressed):
without and with charts (issue 28's targets)."""
NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
RAW = {
    "a PosixPath": r"\b(?:Posix|Windows|Pure\w*)Path\(",
    "a dict repr": r"\{'[^']*'\s*: |\{-?\d+: ",
    # a list of strings; three or more numbers between brackets (an interval is two: "[0.32, 0.36]");
    # a list that opens on a float printed to full precision; NumPy's list without commas
    "a list repr": r"\['[^']*'(?:, '|\])|\[\s*" + NUMBER + r"(?:,\s*" + NUMBER + r"){2,}"
                   r"|\[\s*-?\d+\.\d{10,},|\[\s*" + NUMBER + r"(?:\s+" + NUMBER + r"){2,}",
    "a NumPy, pandas or torch repr": r"\b(?:array|tensor)\(|\bdtype[=:] ?\w|\bnp\.\w+\(",
    "NaN": r"\b(?:NaN|nan)\b",
    "a negative zero": r"(?<![\d.])-0\.0+(?![\d])",
    "a Python boolean": r"\b(?:True|False)\b",
    "an object repr": r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>|<[\w.]+ [\w.<>]+ at 0x[0-9a-fA-F]+>",
    "a build path": r"(?:/(?:tmp|work|home|root|private|Users)/|site-packages|file://|\b[A-Z]:\\\w)\S*"
                    r"|(?<![\w.-])build/(?:results|cache|logs)/\S*",
}
"""What no page's visible text may hold, each a regular expression: what Python, NumPy or a path
of the build machine prints where a reader expects words and rounded numbers."""

CHART_OVERFLOW = """
var column = document.querySelector('article.bd-article') || document.body;
var right = column.getBoundingClientRect().right + 1;
return Array.from(document.querySelectorAll('.eg-chart')).map(function (chart) {
  var drawn = chart.querySelector('svg, canvas');
  if (!drawn) return null;
  var box = drawn.getBoundingClientRect();
  return (box.width > chart.clientWidth + 1 || box.right > right)
    ? (chart.id || 'chart') + ': ' + Math.round(box.width) + ' px in a ' + chart.clientWidth + ' px column' : null;
}).filter(function (x) { return x; });
"""

CHART_TEXT = """
var problems = [], smallest = 1e9;
document.querySelectorAll('.eg-chart svg').forEach(function (svg) {
  var chart = svg.closest('.eg-chart'), id = chart.id;
  var drawn = svg.getBoundingClientRect(), own = svg.width.baseVal.value || drawn.width;
  var scale = drawn.width / own, limit = chart.getBoundingClientRect();
  svg.querySelectorAll('text').forEach(function (t) {
    var text = t.textContent.trim(), box = t.getBoundingClientRect();
    if (!text || !box.width || getComputedStyle(t).opacity === '0') return;  // a label Vega hid (labelBound)
    var size = parseFloat(getComputedStyle(t).fontSize) * scale;
    smallest = Math.min(smallest, size);
    if (size < arguments_min - 0.01)
      problems.push(id + ': "' + text.slice(0, 40) + '" drawn at ' + size.toFixed(1) + ' px');
    if (/\u2026$/.test(text)) problems.push(id + ': "' + text.slice(0, 60) + '" is cut');
    if (box.left < limit.left - 1 || box.right > limit.right + 1)
      problems.push(id + ': "' + text.slice(0, 40) + '" lies outside its chart');
  });
});
return [problems, smallest];
""".replace("arguments_min", str(MIN_FONT))

PAGE_FONTS = """
var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), node, smallest = [1e9, ''];
while ((node = walker.nextNode())) {
  if (!node.textContent.trim()) continue;
  var parent = node.parentElement;
  if (!parent || parent.closest('svg, math, script, style, noscript')) continue;
  var range = document.createRange(); range.selectNodeContents(node);
  if (!range.getClientRects().length) continue;
  var size = parseFloat(getComputedStyle(parent).fontSize);
  if (size < smallest[0])
    smallest = [size, parent.tagName.toLowerCase() + '.' + (parent.className || '') + ': ' +
                node.textContent.trim().slice(0, 40)];
}
return smallest;
"""

MATH_CUT = """
return Array.from(document.querySelectorAll('div.math')).map(function (block) {
  var edge = block.getBoundingClientRect().left, cut = [];
  block.querySelectorAll('math').forEach(function (m) {
    var left = m.getBoundingClientRect().left;
    if (left < edge - 1) cut.push('"' + m.textContent.trim().slice(0, 30) + '" starts ' + Math.round(edge - left) +
                                  ' px left of its block, where no scroll bar reaches');
  });
  return cut;
}).flat();
"""

TABLE_BREAKS = """
var closed = Array.from(document.querySelectorAll('details:not([open])')), broken = [];
closed.forEach(function (d) { d.open = true; });  // folded tables are measured as a reader who opens them sees them
document.querySelectorAll('article table td, article table th').forEach(function (cell) {
  var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node;
  while ((node = walker.nextNode())) {
    var text = node.textContent, re = /[^\\s\\-\\u2010-\\u2014\\/\\u00b7]+[\\-\\u2010-\\u2014\\/\\u00b7]?/g, m;
    while ((m = re.exec(text))) {
      var range = document.createRange();
      range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
      var tops = {};
      Array.from(range.getClientRects()).forEach(function (r) { if (r.width > 0) tops[Math.round(r.top)] = true; });
      if (Object.keys(tops).length > 1) broken.push('"' + m[0] + '" in "' + text.trim().slice(0, 50) + '"');
    }
  }
});
closed.forEach(function (d) { d.open = false; });
return broken.slice(0, 10);
"""

VISIBLE_TEXT = """
var article = (document.querySelector('article') || document.body).cloneNode(true);
article.querySelectorAll('details').forEach(function (d) { d.open = true; });
article.querySelectorAll('.cell_input, code, script, style, svg, math, .eg-chart')
  .forEach(function (e) { e.remove(); });
article.querySelectorAll('pre').forEach(function (e) { if (!e.closest('.cell_output')) e.remove(); });  // outputs stay
article.style.position = 'absolute'; article.style.left = '-99999px';
document.body.appendChild(article);
var text = article.innerText;
article.remove();
return text;
"""

WEIGHT_JS = """
var navigation = performance.getEntriesByType('navigation')[0];
var own = navigation ? (navigation.decodedBodySize || navigation.transferSize) : 0, total = own;
performance.getEntriesByType('resource').forEach(function (r) { total += r.decodedBodySize || r.transferSize || 0; });
return [total, own];
"""


@pytest.fixture(scope="module", params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def width(request, browser):
    browser.set_window_size(request.param, 1000)
    return request.param


SETTLED = """
var done = arguments[arguments.length - 1];
document.fonts.ready.then(function () { done(true); }, function () { done(true); });
"""
"""Waits for the fonts the page asks for."""


def visit(browser, url):
    """Open ``url`` and wait until every chart is laid out and drawn and the fonts are loaded."""
    browser.get(url)
    wait_for(lambda: browser.execute_script(
        "return document.readyState === 'complete' && Array.from(document.querySelectorAll('.eg-chart'))"
        ".every(function (c) { return c.getAttribute('data-eg-ready') "
        "|| (!window.egChart && c.querySelector('svg')); })"),
        timeout=60)
    browser.set_script_timeout(60)
    browser.execute_async_script(SETTLED)


def console_problems(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser")
            if e["level"] in ("SEVERE", "WARNING") and not any(n in e["message"] for n in NOISE)]


SLICE = 16000
"""The tallest screenshot Chrome takes in one piece, in px; a longer page is saved in slices."""


def screenshot(browser, page: str, width: int) -> list[Path]:
    """The whole page as PNGs through Chrome's DevTools protocol: ``<page>.png`` for its first
    16,000 px, then ``<page>-2.png``, ``<page>-3.png``, … for the rest."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    name = page.replace("/", "_").removesuffix(".html")
    paths = []
    for i, top in enumerate(range(0, height, SLICE)):
        shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": top, "width": width, "height": min(SLICE, height - top), "scale": 1}})
        path = SCREENSHOTS / str(width) / (name + (f"-{i + 1}" if i else "") + ".png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        paths.append(path)
    return paths


def raw_strings(text: str) -> list[str]:
    """What of ``RAW`` the text holds, each with a little of its context. A boolean right after a
    snake_case name is a quoted setting ("pooling_mode_mean_tokens True"), not output."""
    found = []
    for name, pattern in RAW.items():
        for match in re.finditer(pattern, text):
            if name == "a Python boolean" and re.search(r"\w_\w+[ =:]+$",
                                                        text[max(0, match.start() - 60):match.start()]):
                continue
            context = text[max(0, match.start() - 30):match.end() + 30].replace("\n", " ")
            found.append(f"{name}: …{context}…")
    return found


def read_page(browser, page: str, width: int, allowed: tuple[str, ...] = ()) -> dict:
    """Everything the reader test measures on one page (the page must be loaded); the strings of
    ``allowed`` (the tiny test model's folder, which is its id) are not raw output."""
    chart_problems, chart_smallest = browser.execute_script(CHART_TEXT)
    text = browser.execute_script(VISIBLE_TEXT)
    for name in allowed:
        text = text.replace(name, "the model")
    return {"overflow": browser.execute_script(CHART_OVERFLOW), "chart_text": chart_problems,
            "chart_font": chart_smallest, "page_font": browser.execute_script(PAGE_FONTS),
            "table_breaks": browser.execute_script(TABLE_BREAKS), "math_cut": browser.execute_script(MATH_CUT),
            "raw": raw_strings(text),
            "leftovers": [s for s in LEFTOVERS if s in browser.execute_script(
                "return (document.querySelector('article') || document.body).textContent")],
            "charts": browser.execute_script("return document.querySelectorAll('.eg-chart').length"),
            **dict(zip(("weight", "own"), browser.execute_script(WEIGHT_JS)))}


def problems_of(page: str, width: int, seen: dict) -> list[str]:
    where = f"{page} @{width}"
    problems = [f"{where}: {p}" for p in seen["overflow"] + seen["chart_text"] + seen["math_cut"]]
    if seen["page_font"][0] < MIN_FONT:
        problems.append(f"{where}: text at {seen['page_font'][0]} px ({seen['page_font'][1]})")
    problems += [f"{where}: a word broken inside a table cell: {b}" for b in seen["table_breaks"]]
    problems += [f"{where}: raw output, {r}" for r in seen["raw"]]
    problems += [f"{where}: the text contains {s!r}" for s in seen["leftovers"]]
    limit = WEIGHT[seen["charts"] > 0]
    if seen["weight"] > limit:
        problems.append(f"{where}: the page weighs {seen['weight'] / 1e6:.2f} MB, its HTML "
                        f"({seen['own'] / 1e6:.2f} MB) included (at most {limit / 1e6:.1f} MB "
                        f"{'with' if seen['charts'] else 'without'} charts)")
    return problems


@pytest.mark.slow
@pytest.mark.browser
def test_every_page_reads_well(site_book, site, browser, width, tiny_bert_dir):
    root, _ = site_book
    problems = []
    browser.get_log("browser")  # drop what earlier tests left
    # every page loads all it needs afresh: from the cache, Chrome reports no size, and a page
    # would weigh only its own HTML after the first page (at 390 px, after the 1280 px pass)
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    for page in site_pages(root):
        visit(browser, f"{site}/{page}")
        problems += problems_of(page, width, read_page(browser, page, width, allowed=(str(tiny_bert_dir),)))
        problems += [f"{page} @{width}: console: {m[:200]}" for m in console_problems(browser)]
        if page.startswith("book/chapters/") and width == 1280:
            tallest = TALLEST.get(page[len("book/chapters/"):], TALLEST_CHAPTER)
            height = browser.execute_script("return document.documentElement.scrollHeight")
            if height > tallest:
                problems.append(f"{page}: {height:,} px tall at 1280 (at most {tallest:,})")
        if page.startswith("book/chapters/0") and width == 1280:
            top = browser.execute_script(
                "var h = document.querySelector('article section section h2, article h2');"
                "return h ? h.getBoundingClientRect().top + window.scrollY : 1e9")
            if top > 1200:
                problems.append(f"{page}: the first section heading is at {top:.0f} px (should be within 1,200)")
            chart = browser.execute_script(
                "var c = document.querySelector('article .eg-chart');"
                "return c ? c.getBoundingClientRect().top + window.scrollY : null")
            if page[len("book/chapters/"):].startswith(KEY_FIGURES) and (chart is None or chart > FIRST_CHART):
                problems.append(f"{page}: the first chart is at {chart} px (should be within {FIRST_CHART:,})")
        if page == "book/intro.html":
            asked = browser.execute_script("return document.querySelectorAll('dl.eg-landing dt').length")
            answered = browser.execute_script("return document.querySelectorAll('dl.eg-landing .eg-badge').length")
            offered = browser.execute_script("return Array.from(document.querySelectorAll('article a[download]'))"
                                             ".map(a => a.getAttribute('href')).filter(h => h.endsWith('book.pdf'))")
            printed = root / "_build" / "html" / "downloads" / "book.pdf"
            if offered != ["../downloads/book.pdf"] or not printed.is_file():
                problems.append(f"{page}: the book's PDF is not offered, or its link does not resolve ({offered})")
            if not browser.execute_script("return document.querySelectorAll('article .eg-chart').length"):
                problems.append(f"{page}: no key figure under 'What we found'")
            if asked != len(dashboard.QUESTIONS) or answered < asked:
                problems.append(f"{page}: {asked} questions and {answered} verdicts under 'What we found' "
                                f"(expected {len(dashboard.QUESTIONS)} questions, each answered)")
        screenshot(browser, page, width)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.browser
def test_dashboard_verdict_column_is_in_view(site, browser, width):
    visit(browser, f"{site}/book/chapters/99_claims_dashboard.html")
    right = browser.execute_script(
        "var th = Array.from(document.querySelectorAll('table.eg-sortable th'))"
        ".find(function (h) { return h.textContent.trim().toLowerCase().startsWith('verdict'); });"
        "return th ? th.getBoundingClientRect().right : null")
    assert right is not None, "the dashboard has no verdict column"
    assert right <= browser.execute_script("return window.innerWidth"), f"verdict column ends at {right:.0f} px"



# --------------------------------------------------------------------------- the checks themselves

@pytest.mark.parametrize("text, found", [
    ("results in PosixPath('/srv/book/build/results/01_layer_by_layer.json')", {"a PosixPath", "a build path"}),
    ("{'count': 64, 'mean': 0.5}", {"a dict repr"}),
    ("{0: 0.95, 1: 0.93}", {"a dict repr"}),
    ("['surged', 'plunged']", {"a list repr"}),
    ("['surged']", {"a list repr"}),
    ("[0.1, 0.2, 0.3]", {"a list repr"}),
    ("[12, 40, 60, 128]", {"a list repr"}),
    ("[0.9498123456789012, 0.9511]", {"a list repr"}),
    ("[0.1234 0.5678 0.9101]", {"a list repr"}),
    ("array(3.5)", {"a NumPy, pandas or torch repr"}),
    ("np.float64(0.9498)", {"a NumPy, pandas or torch repr"}),
    ("Name: cosine, dtype: float64", {"a NumPy, pandas or torch repr"}),  # a Series printed as text
    ("tensor([0.5000])", {"a NumPy, pandas or torch repr"}),
    ("a cosine of nan", {"NaN"}),
    ("-0.0000", {"a negative zero"}),
    ("matches: True", {"a Python boolean"}),
    ("<IPython.core.display.Markdown object>", {"an object repr"}),  # the landing page's glue, unrendered
    ("<function f at 0x7f3a2c>", {"an object repr"}),
    ("written to build/results/01_layer_by_layer.json", {"a build path"}),
    ("model /tmp/pytest-of-root/tiny-bert0", {"a build path"}),
    ("C:\\Users\\me\\book", {"a build path"}),
])
def test_the_raw_output_scan_finds_each_kind(text, found):
    assert {problem.split(":")[0] for problem in raw_strings(text)} == found


@pytest.mark.parametrize("text", [
    "0.9498 at depth 1 of 6 (l/L = 0.17); 95 % interval [0.9411, 0.9585] over 12 pairs",  # an interval is two
    "visible from 0.50 [0.25, none]",
    "a number in [0, 1]; a depth in [1, L]",
    "-0.5, 0.0002399 and 3072",
    "pooling_mode_mean_tokens True",  # a quoted setting
    'None or {"queries": [...], "pool": [...], "relevant": [...]}',  # a parameter's expected shape
    "This page's numbers, as data: 01_layer_by_layer.json",
    "the build's commit and date, in the footer",
])
def test_the_raw_output_scan_passes_what_a_page_shows_on_purpose(text):
    assert raw_strings(text) == []


def measured(**values) -> dict:
    """What read_page returns for a page with nothing wrong, with ``values`` replaced."""
    return {"overflow": [], "chart_text": [], "math_cut": [], "chart_font": 12.0, "page_font": (12.0, ""),
            "table_breaks": [], "raw": [], "leftovers": [], "charts": 0, "weight": 1.0e6, "own": 0.2e6, **values}


def test_the_weight_limit_counts_the_pages_own_html():
    assert problems_of("p.html", 1280, measured(weight=1.45e6, own=0.9e6)) == []
    (problem,) = problems_of("p.html", 1280, measured(weight=1.6e6, own=1.2e6))  # 0.4 MB besides its HTML
    assert "weighs 1.60 MB, its HTML (1.20 MB) included (at most 1.5 MB without charts)" in problem
    assert problems_of("p.html", 390, measured(charts=4, weight=2.45e6, own=1.3e6)) == []
    assert problems_of("p.html", 390, measured(charts=4, weight=2.6e6, own=1.3e6))


FOLDED_TABLE = """data:text/html,<html><body><article><details><summary>claims</summary>
<table><tr><td style="width: 40px; overflow-wrap: anywhere">interval</td><td>ok</td></tr></table>
</details><table><tr><td>whole words here</td></tr></table></article></body></html>"""


WIDE_FORMULA = """data:text/html,<html><body><article style="width: 300px"><div class="math">
<math display="block"><mi>x</mi><mo>=</mo><mn>1234567890123456789012345678901234567890</mn></math>
</div></article></body></html>"""
THEMES_MATH = "div.math { display: flex; flex-direction: row-reverse; max-width: 100%; overflow: hidden; }"
"""What pydata-sphinx-theme sets on a display formula's block."""


def styled(browser, css: str) -> None:
    browser.execute_script("var s = document.createElement('style'); s.textContent = arguments[0];"
                           "document.head.appendChild(s);", css)


@pytest.mark.slow
@pytest.mark.browser
def test_a_formula_wider_than_its_column_is_cut_by_the_theme_and_whole_with_the_books_style(browser):
    browser.get(WIDE_FORMULA.replace("\n", ""))
    styled(browser, THEMES_MATH)
    assert len(browser.execute_script(MATH_CUT)) == 1  # laid out right to left, its start spills past the edge
    styled(browser, (ROOT / "_static" / "book.css").read_text())
    assert browser.execute_script(MATH_CUT) == []


@pytest.mark.slow
@pytest.mark.browser
def test_a_word_broken_in_a_folded_table_is_found_and_the_fold_closed_again(browser):
    browser.get(FOLDED_TABLE.replace("\n", ""))
    broken = browser.execute_script(TABLE_BREAKS)
    assert len(broken) == 1 and broken[0].startswith('"interval"'), broken
    assert browser.execute_script("return document.querySelector('details').open") is False
