"""How long the built book reads: each page's height at 1280 and 390 px and its word count, as a
reader meets them in headless Chromium (folds closed; code, charts and maths not counted as words).

    .venv/bin/python benchmarks/page_lengths.py            # the site `make book` built (_build/html)

Prints a table and writes it to build/bench.json under ``pages`` (issue: a chapter at most 25,000 px
tall at 1280 and about 8,000 words). Needs Debian's chromium and chromium-driver (``pdf.browser``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from embedding_geometry.book import pdf

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
WORDS = """
var article = (document.querySelector('article') || document.body).cloneNode(true);
article.querySelectorAll('details:not([open]) > :not(summary), .cell_input, code, script, style, svg, math, .eg-chart')
  .forEach(function (e) { e.remove(); });
article.style.position = 'absolute'; article.style.left = '-99999px';
document.body.appendChild(article);
var text = article.innerText;
article.remove();
return text.split(/\\s+/).filter(function (w) { return /[A-Za-z0-9]/.test(w); }).length;
"""


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request
        pass


HEIGHT = "return document.documentElement.scrollHeight"


def drawn(driver, timeout: float = 20.0) -> None:
    """Wait until the page has loaded and charts.js has drawn every chart (``pdf.WAIT_FOR_CHARTS``;
    a chart that cannot be drawn ends the wait too)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and driver.execute_script(pdf.WAIT_FOR_CHARTS) is False:
        time.sleep(0.25)


def measure(html: Path) -> list[dict]:
    """Height (px) at each width and word count of every chapter page, the dashboard and the landing page."""
    chapters = sorted(p.relative_to(html).as_posix() for p in (html / "book" / "chapters").glob("*.html"))
    pages = ["book/intro.html", *chapters]
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rows = {page: {"page": page} for page in pages}
    try:
        for width in WIDTHS:
            driver = pdf.browser(width, 1000)
            try:
                for page in pages:
                    driver.get(f"http://127.0.0.1:{server.server_address[1]}/{page}")
                    drawn(driver)
                    rows[page][f"height_{width}"] = driver.execute_script(HEIGHT)
                    if width == WIDTHS[0]:
                        rows[page]["words"] = driver.execute_script(WORDS)
            finally:
                driver.quit()
    finally:
        server.shutdown()
    return list(rows.values())


def main() -> None:
    html = ROOT / "_build" / "html"
    if not (html / "book" / "intro.html").exists():
        sys.exit("page_lengths: no built site in _build/html: run `make book` first")
    rows = measure(html)
    print(f"{'page':55} {'words':>7} {'px@1280':>8} {'px@390':>8}")
    for r in rows:
        print(f"{r['page']:55} {r['words']:7d} {r['height_1280']:8d} {r['height_390']:8d}")
    bench = ROOT / "build" / "bench.json"
    found = json.loads(bench.read_text()) if bench.exists() else {}
    found["pages"] = rows
    bench.parent.mkdir(exist_ok=True)
    bench.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
