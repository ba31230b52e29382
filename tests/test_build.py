"""The build end to end: papermill every chapter on a tiny model, then jupyter-book, offline."""

import json
import re

import nbformat
import pytest

from conftest import ROOT, run_build, tiny_profile

pytestmark = pytest.mark.slow
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
SUMMARY_PAGES = {"98_performance", "99_claims_dashboard"}


def test_build_runs_every_chapter_and_the_site(built_book):
    root, result = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for slug in CHAPTERS:
        assert re.search(rf"ran\s+{slug}\s+\d+\.\d s", result.stdout), result.stdout
        assert (root / "book" / "chapters" / f"{slug}.ipynb").is_file()
        assert (root / "_build" / "html" / "book" / "chapters" / f"{slug}.html").is_file()
        document = json.loads((root / "build" / "results" / f"{slug}.json").read_text())
        assert document["chapter"] == slug
        if slug not in SUMMARY_PAGES:  # pages that measure nothing of their own
            assert document["model"]["layers"] == 3 and document["model"]["hidden"] == 40
            assert document["environment"]["device"] == "cpu"
    assert (root / "_build" / "html" / "_static" / "vega-bundle.js").is_file()
    reported = [slug for line in result.stdout.splitlines() for slug in CHAPTERS if re.search(rf"ran\s+{slug}\s", line)]
    first_summary = min(reported.index(slug) for slug in SUMMARY_PAGES)  # chapter 7 ran alongside the others,
    assert set(reported[:first_summary]) == set(CHAPTERS) - SUMMARY_PAGES  # and the summaries waited for it


def test_no_built_page_references_a_cdn_and_pages_stay_small(built_book):
    root, _ = built_book
    pages = list((root / "_build" / "html").rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(errors="replace")
        assert not re.search(r"cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis", text), page
        assert page.stat().st_size < 5_000_000, page


def test_every_counted_verdict_of_the_build_carries_what_it_rests_on(built_book):
    """In every chapter's results, top-level and per-model verdicts alike: a counted verdict has its
    kind, test, null or the reason it has none, p and adjusted p, outcome, a test that can both pass
    and fail, sensitivity where the ledger derived its bound, and an interval (tests/verdict_checks.py)."""
    from embedding_geometry.book import dashboard
    from verdict_checks import problems

    root, _ = built_book
    found, counted = {}, 0
    for path in sorted((root / "build" / "results").glob("[0-9]*.json")):
        for record in dashboard.records(json.loads(path.read_text())):
            counted += bool(record.get("counted"))
            if missing := problems(record):
                found[f"{path.stem}: {record['id']} on {record['model']}"] = missing
    assert counted > 20 and not found, found


def test_a_claim_shown_in_two_chapters_reads_one_verdict_per_model(built_book):
    """A claim a page shows away from its home carries the home chapter's verdict (claims.judge.at_home):
    across every chapter's results, each (home, claim, model) has one verdict word. (A claim is its
    home and its id: chapters 1 and 2 each have a ``gap-end`` of their own.)"""
    from embedding_geometry.book import dashboard

    root, _ = built_book
    verdicts: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for path in sorted((root / "build" / "results").glob("[0-9]*.json")):
        for record in dashboard.records(json.loads(path.read_text())):
            key = (record.get("home") or path.stem, record["id"], record["model"])
            verdicts.setdefault(key, {}).setdefault(record["verdict"], []).append(path.stem)
    shown_twice = [key for key, words in verdicts.items() if sum(map(len, words.values())) > 1]
    assert shown_twice  # the tiny book shows chapter 1's claims again in chapter 8
    assert not {key: words for key, words in verdicts.items() if len(words) > 1}


def test_model_00_results_check_the_mean_pool(built_book):
    root, _ = built_book
    document = json.loads((root / "build" / "results" / "00_the_model.json").read_text())
    assert document["metrics"]["meanpool_vs_model"]["max_abs_diff"] < 1e-4
    assert len(document["metrics"]["token_norm_mean"]["word tokens"]) == 4  # L + 1
    assert all(c["verdict"] == "holds" for c in document["claims"])  # every sentence agrees: an exact result
    metrics = document["metrics"]  # a BERT tokenizer adds exactly [CLS] and [SEP] to each sentence
    assert metrics["word_tokens_per_sentence"] == [n - 2 for n in metrics["tokens_per_sentence"]]


def test_unchanged_chapters_are_skipped(built_book, tiny_bert_dir):
    root, _ = built_book
    again = run_build(root, "--profile", str(tiny_profile(root, tiny_bert_dir)))
    assert again.returncode == 0, again.stdout + again.stderr
    for slug in CHAPTERS:
        assert re.search(rf"skipped\s+{slug}", again.stdout), again.stdout
    from embedding_geometry.book import pdf

    if pdf.available():  # nor is the PDF printed again: no page changed
        assert "skipped  pdf: no page has changed" in again.stdout, again.stdout


def test_a_failing_chapter_exits_non_zero_and_keeps_the_previous_outputs(built_book, tiny_bert_dir):
    root, _ = built_book
    executed = root / "book" / "chapters" / "00_the_model.ipynb"
    results = root / "build" / "results" / "00_the_model.json"
    before = executed.read_bytes(), results.read_bytes()
    profile = tiny_profile(root, tiny_bert_dir, **{"00_the_model": {"batch_size": -1}})
    failed = run_build(root, "--profile", str(profile), "--only", "00_the_model")
    assert failed.returncode != 0
    line = next(l for l in failed.stdout.splitlines() if "00_the_model" in l)
    assert "failed" in line and "cell" in line
    assert "ParameterError: parameter 'batch_size' expects an integer in [1, 4096]; got -1" in line
    assert (executed.read_bytes(), results.read_bytes()) == before
    assert not list((root / "build").glob(".00_the_model-*"))


def test_unknown_chapter_and_profile_key_are_one_line_errors(built_book, tiny_bert_dir):
    root, _ = built_book
    missing = run_build(root, "--profile", str(tiny_profile(root, tiny_bert_dir)), "--only", "99_nope")
    assert missing.returncode != 0 and "no chapter named 99_nope" in missing.stderr
    profile = tiny_profile(root, tiny_bert_dir, **{"00_the_model": {"no_such": 1}})
    bad = run_build(root, "--profile", str(profile), "--only", "00_the_model")
    assert bad.returncode != 0 and "has no such parameter" in bad.stderr


def test_no_launch_buttons_without_a_real_repository_and_the_download_button_stays(built_book):
    """_config.yml names no repository (none is public yet), so no page offers Binder or Colab
    buttons that would open a placeholder; the download button still serves the page's source."""
    root, _ = built_book
    page = (root / "_build" / "html" / "book" / "chapters" / "00_the_model.html").read_text()
    assert not re.findall(r'href="https://(?:mybinder\.org|colab\.research\.google\.com)', page)
    assert "_sources/book/chapters/00_the_model.ipynb" in page
    assert (root / "_build" / "html" / "_sources" / "book" / "chapters" / "00_the_model.ipynb").is_file()


def test_internal_links_resolve(built_book):
    """An offline link check: every relative href of every page names an existing file, and
    every #fragment an existing id on that page."""
    from html.parser import HTMLParser
    from urllib.parse import unquote, urlsplit

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.hrefs, self.ids = [], set()

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if attrs.get("id"):
                self.ids.add(attrs["id"])
            if tag in ("a", "link", "script", "img") and (attrs.get("href") or attrs.get("src")):
                self.hrefs.append(attrs.get("href") or attrs.get("src"))

    root, _ = built_book
    site = root / "_build" / "html"
    parsed = {}
    for page in site.rglob("*.html"):
        if "_static" in page.relative_to(site).parts:  # theme templates, not pages
            continue
        parser = Links()
        parser.feed(page.read_text(errors="replace"))
        parsed[page] = parser
    broken = []
    for page, parser in parsed.items():
        for href in parser.hrefs:
            parts = urlsplit(href)
            if parts.scheme or href.startswith(("//", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} → {href}")
            elif (parts.fragment and target.suffix == ".html" and target in parsed
                  and parts.fragment not in parsed[target].ids):
                broken.append(f"{page.relative_to(site)} → {href} (no such anchor)")
    assert broken == []


def test_executed_parameter_cells_are_collapsed(tmp_path):
    """A reader meets the findings first: the executed copy tags both parameter cells (the
    chapter's defaults and papermill's injected values) remove-cell, and nothing else."""
    import nbformat

    from embedding_geometry.book.build import remove_parameter_cells

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("model = 'x'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("model = 'y'", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("print(model)")])
    path = tmp_path / "chapter.ipynb"
    nbformat.write(notebook, path)
    remove_parameter_cells(path)
    remove_parameter_cells(path)  # idempotent
    tags = [cell.metadata.get("tags", []) for cell in nbformat.read(path, as_version=4).cells]
    assert tags == [["parameters", "remove-cell"], ["injected-parameters", "remove-cell"], []]


def test_a_bug_inside_a_cell_is_reported_with_the_chapter_its_values_and_where_to_report_it(tmp_path):
    """Issue 32, item 3: an error that is not a bad input (here a cell that divides by zero, in a
    copy of the performance page) names the chapter and the values that led there, says how to
    report it, and keeps the earlier outputs; the chapter's log holds the traceback."""
    from conftest import copy_book

    root = copy_book(tmp_path / "book")
    path = root / "notebooks" / "98_performance.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("1 / 0"))
    nbformat.write(notebook, path)
    earlier = root / "build" / "results" / "98_performance.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text('{"chapter": "98_performance"}')
    profile = tmp_path / "p.yaml"
    profile.write_text("chapters:\n  98_performance:\n    bench_file: no/bench/here.json\n")
    result = run_build(root, "--profile", str(profile), "--only", "98_performance", "--force", "--no-site")
    assert result.returncode == 1
    line = next(l for l in result.stdout.splitlines() if "98_performance" in l)
    assert re.search(r"failed\s+98_performance\s+[\d.]+ s  cell \d+: ZeroDivisionError: division by zero — a bug in "
                     r"the book, not a bad value: chapter 98_performance failed inside its code with "
                     r"bench_file='no/bench/here.json'; please report it with build/logs/98_performance.log \(it holds "
                     r"the traceback and every value\)$", line), line
    assert earlier.read_text() == '{"chapter": "98_performance"}'
    log = (root / "build" / "logs" / "98_performance.log").read_text()
    assert "a bug in the book, not a bad value" in log and "ZeroDivisionError" in log and "no/bench/here.json" in log
