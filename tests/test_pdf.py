"""The tiny-model book's PDF, which its build prints: one PDF, offline, every chapter's charts in it as pictures.

Needs Debian's ``chromium``, ``chromium-driver`` and ``poppler-utils`` (``make pdf`` and
``.ci/run`` install them when absent and run as root).
"""

import json
import re
import shutil
import subprocess

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def pdf_images(path) -> dict[str, list[int]]:
    """Every colour picture of the PDF (``pdfimages -list``; masks and grey pictures, such as a
    shadow the printer drew, left out), by its object, with the pages it is drawn on: a chart taller
    than a page is one picture drawn on two."""
    listing = subprocess.run(["pdfimages", "-list", str(path)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()[2:]]
    found: dict[str, list[int]] = {}
    for row in rows:
        if len(row) > 11 and row[2] == "image" and row[5] != "gray":
            found.setdefault(f"{row[10]} {row[11]}", []).append(int(row[0]))
    return found


def test_the_built_book_prints_to_one_pdf_with_every_chart_as_a_picture(built_book):
    if not all(shutil.which(tool) for tool in ("chromium", "chromedriver", "pdfinfo", "pdfimages")):
        pytest.skip("the PDF test needs Debian's chromium, chromium-driver and poppler-utils")
    from embedding_geometry.book import pdf

    root, result = built_book  # the build printed the PDF before the site, which offers it for download
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    path = root / "_build" / "pdf" / "book.pdf"
    assert " pdf  book.pdf (" in result.stdout and (root / "_build" / "html" / "downloads" / "book.pdf").is_file()
    made = pdf.Pdf(path, **json.loads(path.with_suffix(".json").read_text()))
    info = subprocess.run(["pdfinfo", str(made.path)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    # the whole book, every section unfolded and both encoders in chapters 1-4: 797 A4 pages on the
    # tiny model (2026-11-28; about 440 before the claims' sentences and tables carried each test, p,
    # adjusted p and detectable effect, and the coverage table grew to 157 rows); the bounds catch a
    # book that printed nothing or twice over
    assert 40 <= pages <= 1200, f"{pages} pages"
    site = root / "_build" / "html" / "book" / "chapters"
    for page in sorted(site.glob("0*.html")):  # every chapter's charts, each a picture in its own section
        html = page.read_text()
        title = re.sub(r"<[^>]+>|#", "", re.search(r"<h1>(.*?)</h1>", html, re.S).group(1)).strip()
        assert title in made.charts, f"{page.name}: {title!r} is not a section of the PDF ({list(made.charts)})"
        drawn = html.count('class="eg-chart"')
        assert made.charts[title] == drawn, f"{page.name}: {drawn} charts on the site, {made.charts[title]} in the PDF"
    total = sum(made.charts.values())
    shown_again = made.charts.get(next(iter(made.charts)), 0)  # the landing page repeats chapter 1's key figure,
    assert total > 40 and total - shown_again <= len(pdf_images(made.path)) <= total  # one picture the PDF may share
    text = subprocess.run(["pdftotext", str(made.path), "-"], capture_output=True, text=True, check=True).stdout
    assert "Cite this book" in text and "Chart error" not in text and "needs the book" not in text
    assert "@pdf@" not in text and "@commit@" not in text and "this file, printed from this build" in text
