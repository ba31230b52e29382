"""The whole book as one PDF (``make pdf``), every chart a picture, offline.

1. ``jupyter-book build --builder singlehtml`` writes every page of the built book (the chapters
   the last ``make book`` executed) into one HTML page, copied to ``_build/singlehtml/print.html``;
2. headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by selenium) opens it
   as a printer would see it (print styles, a column as wide as an A4 page's text), lets
   ``_static/charts.js`` lay out every chart for that column, replaces each chart by a PNG
   picture of itself (``window.egFreeze``: Vega's own renderer, at twice the resolution), opens
   every folded section (the maths is MathML, set by the browser itself: :mod:`.sphinx_pages`);
3. it prints the page to ``_build/pdf/book.pdf`` (A4, page numbers in the footer) with the
   DevTools command ``Page.printToPDF``.

Nothing is fetched from the network: the page loads its scripts, fonts and maths from its own
``_static/``. :func:`make` returns where the PDF went and, per chapter, how many charts it drew.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core.errors import BookError
from . import charts

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
A4 = (8.27, 11.69)
"""Paper width and height in inches."""
MARGIN = 0.6
"""Inches on every side."""
COLUMN = round((A4[0] - 2 * MARGIN) * 96)
"""CSS pixels of the text column at 96 px an inch: what the charts are laid out for."""
FOOTER = ('<div style="font-size: 9px; width: 100%; text-align: center; color: #555;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')

WAIT_FOR_CHARTS = """
var charts = Array.from(document.querySelectorAll('.eg-chart'));
if (charts.some(function (c) { return /needs the book|Chart error/.test(c.textContent); })) return 'broken';
return document.readyState === 'complete' && charts.every(function (c) { return c.getAttribute('data-eg-ready'); });
"""
FREEZE = """
var done = arguments[arguments.length - 1];
document.querySelectorAll('details').forEach(function (d) { d.open = true; });
Promise.resolve(window.egFreeze ? window.egFreeze() : null)
  .then(function () { done(null); }, function (error) { done(String(error)); });
"""
CHARTS_BY_CHAPTER = """
var pages = Array.from(document.querySelectorAll('span[id^="document-"] + section'));
var top = document.querySelector('section > h1');
if (top && pages.indexOf(top.parentElement) < 0) pages.unshift(top.parentElement);
function pageOf(node) {
  for (var s = node.closest('section'); s; s = s.parentElement ? s.parentElement.closest('section') : null) {
    if (pages.indexOf(s) >= 0) return pages.indexOf(s);
  }
  return -1;
}
var counts = pages.map(function () { return [0, 0]; });
function count(selector, column) {
  document.querySelectorAll(selector).forEach(function (c) { var i = pageOf(c); if (i >= 0) counts[i][column]++; });
}
count('img.eg-chart-image', 0);
count('.eg-chart', 1);
return pages.map(function (section, i) {
  var h = section.querySelector('h1, h2');
  return [h.textContent.replace(/#$/, '').trim(), counts[i][0], counts[i][1]];
});
"""
"""Per page of the book: its title, and the charts it holds (not those of a page inside it) as
pictures and in all. The single page sets the root page's title as an ``h1``, and the pages its
table of contents includes inside the root's section, each after an anchor
``<span id="document-…">`` and one heading level down."""


class PdfError(BookError):
    """The PDF could not be made (a missing tool, or a book that has not been built)."""


@dataclass
class Pdf:
    path: Path
    seconds: float
    charts: dict[str, int] = field(default_factory=dict)
    """Per page of the book (its title): the charts it holds as pictures."""


def singlehtml(root: Path) -> Path:
    """Build the book's pages as one HTML page (with the chart bundle in place); returns its path."""
    charts.write_bundle(root / "_static")
    executable = Path(sys.executable).with_name("jupyter-book")
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(root),
               "--builder", "singlehtml", "--keep-going", "--quiet"]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    folder = root / "_build" / "singlehtml"
    written = folder / f"{yaml.safe_load((root / '_toc.yml').read_text())['root']}.html"
    if done.returncode != 0 or not written.is_file():
        raise PdfError(f"jupyter-book could not build the single-page HTML: {(done.stderr or done.stdout)[-500:]}")
    page = folder / "print.html"  # Sphinx writes the page's links as if it sat at the top, so put it there
    page.write_text(written.read_text(encoding="utf-8"), encoding="utf-8")
    return page


def available() -> bool:
    """Whether Debian's chromium and chromium-driver, which print the PDF (and run the browser
    tests), are on this machine."""
    return bool((shutil.which("chromium") or Path(CHROMIUM).exists()) and shutil.which("chromedriver"))


def browser(width: int = COLUMN, height: int = 1200):
    """Headless Chromium through chromedriver, its window ``width`` × ``height`` px (a printed
    page's column by default); ``get`` returns once the page is parsed, before it has loaded
    (wait with :data:`WAIT_FOR_CHARTS`). A one-line error without them."""
    if not available():
        raise PdfError("headless Chromium (make pdf, benchmarks/page_lengths.py) needs Debian's packages "
                       "'chromium' and 'chromium-driver' "
                       "(apt-get install chromium chromium-driver; `make pdf` installs them when run as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.page_load_strategy = "eager"  # the caller waits for the page's own scripts
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update", "--allow-file-access-from-files",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or CHROMEDRIVER), options=options)
    driver.command_executor.client_config.timeout = 900  # printing a long book takes minutes on a busy machine
    return driver


def print_page(page: Path, output: Path, timeout: float = 300.0) -> dict[str, int]:
    """Open ``page`` as a printer sees it, freeze its charts into pictures, and print it to
    ``output``; returns the charts per top-level section."""
    driver = browser()
    try:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        driver.set_window_size(COLUMN + 16, 1200)
        driver.set_script_timeout(timeout)
        driver.get(page.resolve().as_uri())
        end = time.time() + timeout
        while (state := driver.execute_script(WAIT_FOR_CHARTS)) is not True:
            if state == "broken":
                raise PdfError(f"a chart of {page} could not be drawn (its scripts are missing, or it has an error)")
            if time.time() > end:
                raise PdfError(f"the charts of {page} did not finish drawing in {timeout:.0f} s")
            time.sleep(0.5)
        problem = driver.execute_async_script(FREEZE)
        if problem:
            raise PdfError(f"the charts could not be turned into pictures: {problem}")
        charts = {title: pictures for title, pictures, _ in driver.execute_script(CHARTS_BY_CHAPTER)}
        printed = driver.execute_cdp_cmd("Page.printToPDF", {
            "paperWidth": A4[0], "paperHeight": A4[1], "marginTop": MARGIN, "marginBottom": MARGIN,
            "marginLeft": MARGIN, "marginRight": MARGIN, "printBackground": True, "preferCSSPageSize": False,
            "displayHeaderFooter": True, "headerTemplate": "<span></span>", "footerTemplate": FOOTER})
    finally:
        driver.quit()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(base64.b64decode(printed["data"]))
    return charts


def make(root: Path, output: Path | None = None) -> Pdf:
    """The book at ``root`` (built by ``make book``) as one PDF, by default ``_build/pdf/book.pdf``,
    with its charts per page and the seconds it took beside it (``book.json``)."""
    if not any((root / "book" / "chapters").glob("*.ipynb")):
        raise PdfError(f"{root} has no executed chapters in book/chapters: run `make book` first")
    start = time.time()
    output = output or root / "_build" / "pdf" / "book.pdf"
    charts = print_page(singlehtml(root), output)
    made = Pdf(output, time.time() - start, charts)
    output.with_suffix(".json").write_text(json.dumps({"seconds": made.seconds, "charts": charts}, indent=1))
    return made
