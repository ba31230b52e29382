"""Shared fixtures: tiny local models (built once per session), an offline hub, the tiny-model book
and, for the browser tests, its site served locally and a headless Chromium."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import tiny_models  # imports transformers only when a model is made, after the settings below

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_xlmr_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_xlm_roberta(tmp_path_factory.mktemp("tiny-xlmr"))


@pytest.fixture(scope="session")
def tiny_bert(tiny_bert_dir):
    from embedding_geometry.core import models

    return models.load(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="session")
def embedded():
    from embedding_geometry.core import models

    return models.load(device="cpu")


@pytest.fixture
def encoded_batches(monkeypatch) -> list[tuple[str, ...]]:
    """Every batch of texts ``training.train`` encodes, in order (a list the test may clear)."""
    from embedding_geometry.chapters.ch07_objective import training

    seen, original = [], training._encode

    def encode(base, model, texts, n):
        seen.append(tuple(texts))
        return original(base, model, texts, n)

    monkeypatch.setattr(training, "_encode", encode)
    return seen


def copy_book(destination: Path) -> Path:
    """The book's sources (not its build products) copied to ``destination``."""
    from embedding_geometry.book.build import copy_sources

    return copy_sources(ROOT, destination)


def run_build(root: Path, *args: str, cache: Path | None = None):
    """``python -m embedding_geometry build --root root ...`` as a user runs it."""
    import subprocess

    env = {**os.environ, "EMBEDDING_GEOMETRY_CACHE": str(cache or root / "build" / "cache")}
    env.pop("EMBEDDING_GEOMETRY_RESULTS", None)
    return subprocess.run([sys.executable, "-m", "embedding_geometry", "build", "--root", str(root), *args],
                          capture_output=True, text=True, env=env, timeout=1800)


def build_here(root: Path, *args: str, cache: Path | None = None):
    """:func:`run_build` in this process: the same ``main`` of ``python -m embedding_geometry``, its
    exit status and printed lines as a CompletedProcess, without a new interpreter's imports (each
    chapter still runs in its own kernel)."""
    import contextlib
    import io
    import subprocess

    from embedding_geometry import __main__ as cli
    from embedding_geometry.book import schedule

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.setattr(schedule, "install_sigterm_handler", lambda: None)  # pytest's own SIGTERM stays
        patch.setenv("EMBEDDING_GEOMETRY_CACHE", str(cache or root / "build" / "cache"))
        patch.delenv("EMBEDDING_GEOMETRY_RESULTS", raising=False)
        code = cli.main(["build", "--root", str(root), *args])
    return subprocess.CompletedProcess(["build", "--root", str(root), *args], code, out.getvalue(), err.getvalue())


def declared_tiny(notebook: Path) -> dict | None:
    """The tiny-model parameters a chapter notebook declares in its metadata
    (``embedding_geometry.tiny``, which the scaffold writes), or None."""
    import json

    return json.loads(notebook.read_text()).get("metadata", {}).get("embedding_geometry", {}).get("tiny")


def tiny_parameters(root: Path = ROOT) -> dict[str, dict]:
    """Per chapter of the book at ``root``: its small sizes for a run on the tiny model, from its
    notebook's metadata (:func:`declared_tiny`); a chapter with none is left out (test_contributing
    checks that every chapter that runs a model has them)."""
    found = {}
    for notebook in sorted((root / "notebooks").glob("[0-9]*.ipynb")):
        declared = declared_tiny(notebook)
        if declared is not None:
            found[notebook.stem] = declared
    return found


def tiny_profile(root: Path, model_dir: Path, **chapter_overrides) -> Path:
    """A profile that runs every chapter on the tiny local BERT with small sizes
    (:func:`tiny_parameters`); ``chapter_overrides`` replace a chapter's tiny parameters."""
    import yaml

    chapters = {slug: {**params, **chapter_overrides.get(slug, {})} for slug, params in tiny_parameters(root).items()}
    chapters.update({slug: params for slug, params in chapter_overrides.items() if slug not in chapters})
    profile = {"common": {"model": str(model_dir), "device": "cpu", "batch_size": 8, "seed": 0,
                          "trust_remote_code": False},
               "chapters": chapters}
    path = root / "tiny.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


@pytest.fixture(scope="session")
def built_book(tmp_path_factory, tiny_bert_dir):
    """The whole book built once on the tiny model: (root, completed process)."""
    root = copy_book(tmp_path_factory.mktemp("book"))
    result = run_build(root, "--profile", str(tiny_profile(root, tiny_bert_dir)))
    return root, result


@pytest.fixture(scope="session")
def default_book(tmp_path_factory):
    """The default profile built once on the embedded models, on this machine's own float path,
    without the site: (root, completed process). The golden test compares it with the reference;
    the determinism test runs two of its chapters again."""
    root = copy_book(tmp_path_factory.mktemp("default-book"))
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("EMBEDDING_GEOMETRY_FLOAT_PATH", raising=False)
        return root, run_build(root, "--profile", "default", "--no-site")


SITE_ROOT = "EMBEDDING_GEOMETRY_SITE_ROOT"


@pytest.fixture(scope="session")
def site_book(request):
    """The book whose site the browser tests read: the tiny-model build, or the book already
    built at ``$EMBEDDING_GEOMETRY_SITE_ROOT`` (``make reader`` after ``make book``: the default
    build's pages, as a reader meets them)."""
    import subprocess

    if folder := os.environ.get(SITE_ROOT):
        root = Path(folder).resolve()
        if not (root / "_build" / "html" / "index.html").is_file():
            pytest.fail(f"{SITE_ROOT}={folder}: no built site there (_build/html/index.html); run `make book` first")
        return root, subprocess.CompletedProcess(["make", "book"], 0, "", "")
    return request.getfixturevalue("built_book")


# --------------------------------------------------------------------------- the browser tests' site and browser

@pytest.fixture(scope="module")
def site(site_book):
    """The built site served on a free local port: its base URL."""
    root, result = site_book
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    handler = partial(SimpleHTTPRequestHandler, directory=str(root / "_build" / "html"))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Selenium, its console logged (skips without Debian's packages)."""
    from embedding_geometry.book import pdf

    if not pdf.available():
        pytest.skip("browser tests need Debian's packages 'chromium' and 'chromium-driver' "
                    "(apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = pdf.CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or pdf.CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait_for(predicate, timeout=20.0):
    """``predicate()``'s first true value within ``timeout`` seconds (polled), else its last."""
    end = time.time() + timeout
    while time.time() < end:
        if value := predicate():
            return value
        time.sleep(0.2)
    return predicate()


def site_pages(root):
    """Every page of the book (the toc's pages under book/), as paths relative to the site."""
    html = root / "_build" / "html"
    return sorted(p.relative_to(html).as_posix() for p in (html / "book").rglob("*.html"))


# --------------------------------------------------------------------------- two builds at once

@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(items):
    """Mark every test that reads the default book ``default_book``: make test runs them in a
    process of their own, beside the other slow tests, so that the cold default build and the
    tiny-model book (and the browser) are made at the same time, each once."""
    for item in items:
        if "default_book" in item.fixturenames:
            item.add_marker(pytest.mark.default_book)
