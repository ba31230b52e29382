"""Every page as a reader meets it, at a desktop (1280 px) and a phone (390 px) width.

On every page of the built book: no chart is wider than the column it sits in, the console shows
no error or warning, and the text holds no leftovers of the sources ("METHODS.md", a tab
character, a broken ``\\top``). On the chapters, the first section heading comes within the first
1,200 px at 1280 px; on the claims dashboard, the verdict column is inside the viewport without
scrolling sideways. Each page is also saved as a screenshot under ``build/screenshots/<width>/``
for a reviewer to look at.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from conftest import ROOT
from test_site import browser, site, site_pages, wait_for  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WIDTHS = (1280, 390)
SCREENSHOTS = ROOT / "build" / "screenshots"
NOISE = ("favicon.ico",)
LEFTOVERS = ("METHODS.md", "\t", "^op")

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


@pytest.fixture(scope="module", params=WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def width(request, browser):  # noqa: F811
    browser.set_window_size(request.param, 1000)
    return request.param


def visit(browser, url):  # noqa: F811
    browser.get(url)
    wait_for(lambda: browser.execute_script(
        "return Array.from(document.querySelectorAll('.eg-chart')).every(function (c) { return c.querySelector('svg, canvas'); })"))


def console_problems(browser) -> list[str]:  # noqa: F811
    return [e["message"] for e in browser.get_log("browser")
            if e["level"] in ("SEVERE", "WARNING") and not any(n in e["message"] for n in NOISE)]


def screenshot(browser, page: str, width: int) -> Path:  # noqa: F811
    """The whole page (up to 16,000 px tall) as a PNG, through Chrome's DevTools protocol."""
    height = min(browser.execute_script("return document.documentElement.scrollHeight"), 16000)
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    path = SCREENSHOTS / str(width) / (page.replace("/", "_").removesuffix(".html") + ".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def test_every_page_reads_well(built_book, site, browser, width):  # noqa: F811
    root, _ = built_book
    problems = []
    browser.get_log("browser")  # drop what earlier tests left
    for page in site_pages(root):
        visit(browser, f"{site}/{page}")
        problems += [f"{page} @{width}: {p}" for p in browser.execute_script(CHART_OVERFLOW)]
        problems += [f"{page} @{width}: console: {m[:200]}" for m in console_problems(browser)]
        text = browser.execute_script("return (document.querySelector('article') || document.body).textContent")
        problems += [f"{page} @{width}: the text contains {s!r}" for s in LEFTOVERS if s in text]
        if page.startswith("book/chapters/0") and width == 1280:
            top = browser.execute_script(
                "var h = document.querySelector('article section section h2, article h2');"
                "return h ? h.getBoundingClientRect().top + window.scrollY : 1e9")
            if top > 1200:
                problems.append(f"{page}: the first section heading is at {top:.0f} px (should be within 1,200)")
        screenshot(browser, page, width)
    assert not problems, "\n".join(problems)


def test_dashboard_verdict_column_is_in_view(site, browser, width):  # noqa: F811
    visit(browser, f"{site}/book/chapters/99_claims_dashboard.html")
    right = browser.execute_script(
        "var th = Array.from(document.querySelectorAll('table.eg-sortable th'))"
        ".find(function (h) { return h.textContent.trim().toLowerCase().startsWith('verdict'); });"
        "return th ? th.getBoundingClientRect().right : null")
    assert right is not None, "the dashboard has no verdict column"
    assert right <= browser.execute_script("return window.innerWidth"), f"verdict column ends at {right:.0f} px"
