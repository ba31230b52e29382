"""The built site in a real browser: charts render, sliders work, no console errors, offline.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them when absent).
"""

import pytest

from conftest import site_pages, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser]

KNOWN_NOISE = ("thebe", "favicon.ico")


def console_errors(driver):
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and not any(n in e["message"].lower() for n in KNOWN_NOISE)]


def test_every_page_loads_without_console_errors_and_renders_its_charts(site_book, site, browser):
    root, _ = site_book
    pages = site_pages(root)
    assert "book/intro.html" in pages and "book/chapters/00_the_model.html" in pages
    for page in pages:
        browser.get(f"{site}/{page}")
        n_charts = browser.execute_script("return document.querySelectorAll('.eg-chart').length")
        rendered = wait_for(lambda: browser.execute_script(
            "return Array.from(document.querySelectorAll('.eg-chart'))"
            ".every(function (c) { return c.querySelector('svg, canvas'); })"))
        assert rendered, f"{page}: not every one of its {n_charts} charts rendered an svg or canvas"
        assert console_errors(browser) == [], page


def test_every_slider_changes_its_chart(site_book, site, browser):
    root, _ = site_book
    checked = 0
    for page in site_pages(root):
        browser.get(f"{site}/{page}")
        n_sliders = browser.execute_script("return document.querySelectorAll('.eg-chart input[type=range]').length")
        if not n_sliders:
            continue
        wait_for(lambda: browser.execute_script(
            "return Array.from(document.querySelectorAll('.eg-chart'))"
            ".every(function (c) { return c.querySelector('svg'); })"))
        for i in range(n_sliders):
            svg = ("var s = document.querySelectorAll('.eg-chart input[type=range]')[%d];"
                   "return s.closest('.eg-chart').querySelector('svg').outerHTML;" % i)
            before = browser.execute_script(svg)
            browser.execute_script(
                "var s = document.querySelectorAll('.eg-chart input[type=range]')[%d];"
                "s.value = (s.value == s.min) ? s.max : s.min;"
                "s.dispatchEvent(new Event('input', {bubbles: true}));" % i)
            assert wait_for(lambda: browser.execute_script(svg) != before), \
                f"{page}: slider {i} did not change its chart"
            checked += 1
    assert checked >= 1


def test_maths_is_mathml_the_browser_sets_with_no_script(site, browser):
    browser.get(f"{site}/book/chapters/00_the_model.html")
    wait_for(lambda: browser.execute_script("return document.readyState === 'complete'"))
    found = browser.execute_script(
        "var m = document.querySelectorAll('article math');"
        "return [m.length, m.length ? m[0].getBoundingClientRect().width : 0, !!window.MathJax,"
        " document.body.innerText.indexOf('\\\\frac') >= 0];")
    assert found[0] > 0 and found[1] > 0, f"no rendered MathML on the page: {found}"
    assert not found[2] and not found[3], "a page loads a maths script, or shows raw TeX"


def test_claims_dashboard_sorts_on_header_click(site, browser):
    browser.get(f"{site}/book/chapters/99_claims_dashboard.html")
    column = ("return Array.from(document.querySelectorAll('table.eg-sortable tbody tr'))"
              ".map(function (r) { return r.cells[4].textContent; });")
    browser.execute_script("document.querySelectorAll('table.eg-sortable th')[4].click();")
    ascending = browser.execute_script(column)
    assert ascending == sorted(ascending, key=str.lower)
    browser.execute_script("document.querySelectorAll('table.eg-sortable th')[4].click();")
    assert browser.execute_script(column) == sorted(ascending, key=str.lower, reverse=True)


def test_claims_dashboard_filters_and_links_each_claim_to_its_row(site, browser):
    browser.get(f"{site}/book/chapters/99_claims_dashboard.html")
    shown = ("return Array.from(document.querySelectorAll('.eg-dashboard tbody tr'))"
             ".filter(function (r) { return r.offsetParent !== null; })"
             ".map(function (r) { return [r.dataset.chapter, r.dataset.verdict]; });")
    pick = ("var s = document.querySelector('.eg-dashboard select[data-filter=\"%s\"]');"
            "s.value = arguments[0]; s.dispatchEvent(new Event('change'));")
    headlines = browser.execute_script(shown)  # the page opens on the headline claims at their home
    total = browser.execute_script("return document.querySelectorAll('.eg-dashboard tbody tr').length")
    rows = browser.find_elements("css selector", ".eg-dashboard tbody tr")
    assert 0 < len(headlines) < total
    assert all(r.get_attribute("data-headline") == "yes" for r in rows if r.is_displayed())
    browser.execute_script(pick % "headline", "")  # "every claim"
    every = browser.execute_script(shown)
    assert len(every) == total
    chapter, verdict = every[-1]
    browser.execute_script(pick % "verdict", verdict)
    assert browser.execute_script(shown) == [r for r in every if r[1] == verdict]
    browser.execute_script(pick % "chapter", chapter)
    both = [r for r in every if r == [chapter, verdict]]
    assert browser.execute_script(shown) == both
    assert browser.execute_script("return document.querySelector('.eg-filter-count').textContent") == \
        f"{len(both)} of {len(every)} claims"
    browser.execute_script(pick % "verdict", "")
    browser.execute_script(pick % "chapter", "")
    assert browser.execute_script(shown) == every
    link = browser.execute_script("return document.querySelector('.eg-dashboard tbody a').href")
    browser.get(link)
    assert "#claim-" in link and browser.execute_script(
        "return document.getElementById(decodeURIComponent(location.hash.slice(1))).tagName") == "TR"


ICONS = """
var out = [];
document.querySelectorAll('body *').forEach(function (e) {
  ['::before', '::after'].forEach(function (p) {
    var style = getComputedStyle(e, p);
    if (!/Font Awesome/.test(style.fontFamily) || style.display === 'none') return;
    var content = style.content.replace(/^"|"$/g, '');
    if (content && content !== 'none' && e.getClientRects().length)
      out.push(content.codePointAt(0).toString(16) + ' ' + e.tagName.toLowerCase() + '.' + e.className);
  });
});
return out;
"""


def test_every_icon_a_page_draws_is_in_the_books_icon_fonts(site_book, site, browser):
    """The theme's full icon font is replaced by subsets (_static/icons.css): an icon outside them
    would be a blank."""
    from embedding_geometry.book.sphinx_pages import ICON_GLYPHS

    root, _ = site_book
    for page in ("book/intro.html", "book/chapters/01_layer_by_layer.html", "search.html"):
        browser.get(f"{site}/{page}")
        wait_for(lambda: browser.execute_script("return document.readyState === 'complete'"))
        drawn = browser.execute_script(ICONS)
        assert drawn, f"{page}: no icon found (the check would pass on anything)"
        assert [d for d in drawn if d.split()[0] not in ICON_GLYPHS] == [], page
        loaded = browser.execute_script("return performance.getEntriesByType('resource')"
                                        ".map(function (r) { return r.name; })")
        assert not [n for n in loaded if "fontawesome" in n], f"{page} loads the theme's full icon font or script"


def test_scripts_load_only_where_needed_and_every_chart_offers_its_data(site_book, site, browser):
    root, _ = site_book
    loaded = "return performance.getEntriesByType('resource').map(function (r) { return r.name; }).join(' ')"
    browser.get(f"{site}/book/rerun.html")  # no chart
    wait_for(lambda: browser.execute_script("return document.readyState === 'complete'"))
    names = browser.execute_script(loaded)
    assert "vega-bundle" not in names and "mathjax" not in names and "searchindex" not in names
    browser.get(f"{site}/book/chapters/01_layer_by_layer.html")
    wait_for(lambda: browser.execute_script(
        "return Array.from(document.querySelectorAll('.eg-chart'))"
        ".every(function (c) { return c.getAttribute('data-eg-ready'); })"))
    assert "vega-bundle" in browser.execute_script(loaded)
    tools = browser.execute_script(
        "return Array.from(document.querySelectorAll('.eg-chart')).map(function (c) {"
        "  var t = c.nextElementSibling; return t && t.classList.contains('eg-chart-tools') ? t.textContent : null; })")
    assert tools and all(t and "data (CSV)" in t and "PNG" in t for t in tools), tools
    csv = browser.execute_script(  # what the CSV link downloads: the chart's rows, one line each
        "var made = null; var original = URL.createObjectURL;"
        "URL.createObjectURL = function (blob) { made = blob; return original.call(URL, blob); };"
        "HTMLAnchorElement.prototype.click = function () {};"
        "document.querySelector('.eg-chart-tools button').click();"
        "URL.createObjectURL = original; return made ? made.text() : null;")
    lines = csv.strip().splitlines()
    assert len(lines) > 2 and "," in lines[0] and "value" in lines[0], lines[:3]


def test_each_chapter_links_its_results_and_the_dashboard_its_csv(site_book, site, browser):
    import json
    import urllib.request

    browser.get(f"{site}/book/chapters/01_layer_by_layer.html")
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('a')).map(function (a) { return a.href; })"
        ".filter(function (h) { return /downloads\\/results\\/01_layer_by_layer\\.json$/.test(h); })")
    assert links, "chapter 1 does not link its results JSON"
    assert json.loads(urllib.request.urlopen(links[0]).read())["chapter"] == "01_layer_by_layer"
    browser.get(f"{site}/book/chapters/99_claims_dashboard.html")
    csv = browser.execute_script("return document.querySelector('a.eg-download').href")
    rows = urllib.request.urlopen(csv).read().decode().splitlines()
    header = rows[0].split(",")
    assert header[:2] == ["chapter", "id"] and {"claim", "model", "verdict"} <= set(header) and len(rows) > 50
    footer = browser.execute_script("return document.querySelector('.eg-footer').textContent")
    assert "Cite this book" in footer and "MIT" in footer and "commit" in footer
