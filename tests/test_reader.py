"""Every page as a reader meets it, at a desktop (1280 px) and a phone (390 px) width.

On every page of the built book:

- no chart is wider than the column it sits in, and none draws text smaller than 11 px as
  rendered (its font size times the scale it is drawn at), cuts a legend or axis label ("…"), or
  draws a label outside its own box;
- no text of the page is smaller than 11 px (maths typeset by MathJax aside);
- no word of a table cell is broken across lines;
- the visible text, cell outputs included, holds nothing raw: no ``PosixPath``, dict or list repr,
  NaN, ``-0.0000``, ``True``/``False`` or build path (code excepted), and no leftovers of the sources ("METHODS.md",
  a tab character, a broken ``\\top``);
- the console shows no error or warning;
- what the page loads besides its own HTML (theme, scripts, fonts, MathJax, the chart bundle;
  uncompressed) weighs at most 1.5 MB, or 2.5 MB on a page with charts, and its own HTML (its
  text, tables and chart data) at most 1 MB.

On the chapters, the first section heading comes within the first 1,200 px at 1280 px; on the
claims dashboard, the verdict column is inside the viewport without scrolling sideways. Each page
is saved as a screenshot under ``build/screenshots/<width>/`` for a reviewer to look at.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from conftest import ROOT, site_pages, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WIDTHS = (1280, 390)
SCREENSHOTS = ROOT / "build" / "screenshots"
NOISE = ("favicon.ico",)
LEFTOVERS = ("METHODS.md", "\t", "^op")
MIN_FONT = 11.0
WEIGHT = {False: 1.5e6, True: 2.5e6}
"""What a page may load besides its own HTML (bytes, uncompressed): the theme, its scripts and
fonts, MathJax and the chart bundle, without and with charts (issue 28's targets)."""
OWN = 1.0e6
"""What a page's own HTML may weigh (its text, tables and the data of its charts)."""
RAW = {
    "a PosixPath": r"PosixPath\(",
    "a dict repr": r"\{'[^']*': ",
    "a list repr": r"\['[^']*', '",
    "NaN": r"\b(?:NaN|nan)\b",
    "a negative zero": r"(?<![\d.])-0\.0+(?![\d])",
    "a Python boolean": r"\b(?:True|False)\b",
    "a build path": r"(?:/(?:tmp|work|home|root|private)/|site-packages|/build/results/)\S*",
}

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
    if (!text || !box.width) return;
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
  if (!parent || parent.closest('svg, mjx-container, script, style, noscript, .MathJax')) continue;
  var range = document.createRange(); range.selectNodeContents(node);
  if (!range.getClientRects().length) continue;
  var size = parseFloat(getComputedStyle(parent).fontSize);
  if (size < smallest[0])
    smallest = [size, parent.tagName.toLowerCase() + '.' + (parent.className || '') + ': ' +
                node.textContent.trim().slice(0, 40)];
}
return smallest;
"""

TABLE_BREAKS = """
var broken = [];
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
return broken.slice(0, 10);
"""

VISIBLE_TEXT = """
var article = (document.querySelector('article') || document.body).cloneNode(true);
article.querySelectorAll('details').forEach(function (d) { d.open = true; });
article.querySelectorAll('.cell_input, code, script, style, svg, mjx-container, .eg-chart')
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
var maths = window.MathJax && MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise : Promise.resolve();
maths.then(function () { return document.fonts.ready; }).then(function () { done(true); }, function () { done(true); });
"""
"""Waits for MathJax's typesetting (its components load after the page) and the fonts it asks for."""


def visit(browser, url):
    """Open ``url`` and wait until every chart is laid out and drawn and the maths typeset."""
    browser.get(url)
    wait_for(lambda: browser.execute_script(
        "return document.readyState === 'complete' && Array.from(document.querySelectorAll('.eg-chart'))"
        ".every(function (c) { return c.getAttribute('data-eg-ready') "
        "|| (!window.egChart && c.querySelector('svg')); })"),
        timeout=60)
    wait_for(lambda: browser.execute_script("return !window.MathJax || !!(MathJax.startup && MathJax.startup.promise)"),
             timeout=30)
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
            "table_breaks": browser.execute_script(TABLE_BREAKS), "raw": raw_strings(text),
            "leftovers": [s for s in LEFTOVERS if s in browser.execute_script(
                "return (document.querySelector('article') || document.body).textContent")],
            "charts": browser.execute_script("return document.querySelectorAll('.eg-chart').length"),
            **dict(zip(("weight", "own"), browser.execute_script(WEIGHT_JS)))}


def problems_of(page: str, width: int, seen: dict) -> list[str]:
    where = f"{page} @{width}"
    problems = [f"{where}: {p}" for p in seen["overflow"] + seen["chart_text"]]
    if seen["page_font"][0] < MIN_FONT:
        problems.append(f"{where}: text at {seen['page_font'][0]} px ({seen['page_font'][1]})")
    problems += [f"{where}: a word broken inside a table cell: {b}" for b in seen["table_breaks"]]
    problems += [f"{where}: raw output, {r}" for r in seen["raw"]]
    problems += [f"{where}: the text contains {s!r}" for s in seen["leftovers"]]
    limit, loaded = WEIGHT[seen["charts"] > 0], seen["weight"] - seen["own"]
    if loaded > limit:
        problems.append(f"{where}: the page loads {loaded / 1e6:.2f} MB besides its HTML "
                        f"(at most {limit / 1e6:.1f} MB)")
    if seen["own"] > OWN:
        problems.append(f"{where}: the page's HTML weighs {seen['own'] / 1e6:.2f} MB (at most {OWN / 1e6:.1f} MB)")
    return problems


def test_every_page_reads_well(site_book, site, browser, width, tiny_bert_dir):
    root, _ = site_book
    problems = []
    browser.get_log("browser")  # drop what earlier tests left
    for page in site_pages(root):
        visit(browser, f"{site}/{page}")
        problems += problems_of(page, width, read_page(browser, page, width, allowed=(str(tiny_bert_dir),)))
        problems += [f"{page} @{width}: console: {m[:200]}" for m in console_problems(browser)]
        if page.startswith("book/chapters/0") and width == 1280:
            top = browser.execute_script(
                "var h = document.querySelector('article section section h2, article h2');"
                "return h ? h.getBoundingClientRect().top + window.scrollY : 1e9")
            if top > 1200:
                problems.append(f"{page}: the first section heading is at {top:.0f} px (should be within 1,200)")
        screenshot(browser, page, width)
    assert not problems, "\n".join(problems)


def test_dashboard_verdict_column_is_in_view(site, browser, width):
    visit(browser, f"{site}/book/chapters/99_claims_dashboard.html")
    right = browser.execute_script(
        "var th = Array.from(document.querySelectorAll('table.eg-sortable th'))"
        ".find(function (h) { return h.textContent.trim().toLowerCase().startsWith('verdict'); });"
        "return th ? th.getBoundingClientRect().right : null")
    assert right is not None, "the dashboard has no verdict column"
    assert right <= browser.execute_script("return window.innerWidth"), f"verdict column ends at {right:.0f} px"

