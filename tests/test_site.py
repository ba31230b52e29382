"""The built site in a real browser: charts render, sliders work, no console errors, offline.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them when absent).
"""

import shutil
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
KNOWN_NOISE = ("thebe", "favicon.ico")


@pytest.fixture(scope="module")
def site(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    handler = partial(SimpleHTTPRequestHandler, directory=str(root / "_build" / "html"))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not (shutil.which("chromium") or shutil.which(CHROMIUM)) or not shutil.which("chromedriver"):
        pytest.skip("browser tests need Debian's packages 'chromium' and 'chromium-driver' "
                    "(apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def console_errors(driver):
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and not any(n in e["message"].lower() for n in KNOWN_NOISE)]


def wait_for(predicate, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if value := predicate():
            return value
        time.sleep(0.2)
    return predicate()


def test_intro_loads_without_console_errors(site, browser):
    browser.get(f"{site}/book/intro.html")
    assert "Embedding Geometry" in browser.title
    assert console_errors(browser) == []


def test_chapter_charts_render_and_the_slider_changes_its_chart(site, browser):
    browser.get(f"{site}/book/chapters/00_the_model.html")
    n_charts = browser.execute_script("return document.querySelectorAll('.eg-chart').length")
    assert n_charts >= 2
    rendered = wait_for(lambda: browser.execute_script(
        "return document.querySelectorAll('.eg-chart svg').length") >= n_charts)
    assert rendered, "not every chart rendered an svg"
    before = browser.execute_script(
        "var s = document.querySelector('.eg-chart input[type=range]');"
        "return s.closest('.eg-chart').querySelector('svg').outerHTML;")
    browser.execute_script(
        "var s = document.querySelector('.eg-chart input[type=range]');"
        "s.value = s.min; s.dispatchEvent(new Event('input', {bubbles: true}));")
    changed = wait_for(lambda: browser.execute_script(
        "var s = document.querySelector('.eg-chart input[type=range]');"
        "return s.closest('.eg-chart').querySelector('svg').outerHTML;") != before)
    assert changed, "moving the depth slider did not change its chart"
    assert console_errors(browser) == []
    math = browser.execute_script("return document.querySelectorAll('mjx-container').length")
    assert math > 0, "MathJax (offline copy) did not typeset the page's maths"
