"""CONTRIBUTING.md's add-a-chapter walkthrough, run as written: a throwaway chapter from its
command, its notebook edits and its two files, built on the tiny model in a copy of the book and
of the package; the table of contents, the Methods stub and the rules follow without another edit,
and the suite's structural tests pass on the copy with the new chapter in it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import test_notebook_conventions
import test_plain_jupyter
import test_teaching
from conftest import ROOT, copy_book, declared_tiny, tiny_parameters, tiny_profile
from embedding_geometry.book import derived, rules, scaffold
from embedding_geometry.core.errors import BookError

GUIDE = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
SLUG = "09_pool_norm"


def blocks(marker: str) -> list[str]:
    """The fenced blocks of the guide that follow ``<!-- marker… -->``, in order."""
    return re.findall(r"<!-- " + re.escape(marker) + r"(.*?)-->\s*```\w*\n(.*?)```", GUIDE, flags=re.S)


def follow_the_walkthrough(book: Path, package: Path, env: dict) -> None:
    """Do what the guide says: run its command, edit the notebook, write its files."""
    (command,) = [code for _, code in blocks("run")]
    argv = shlex.split(command.replace(".venv/bin/python", sys.executable)) + ["--root", str(book)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    path = book / "notebooks" / f"{SLUG}.ipynb"
    notebook = json.loads(path.read_text())
    ((_, appended),) = blocks("append to the parameters cell")
    ((old, new),) = blocks("replace ")
    old = old.strip().removesuffix(" with")
    for cell in notebook["cells"]:
        if "parameters" in cell["metadata"].get("tags", []):
            cell["source"] += "\n" + appended.strip()
        elif old in cell["source"]:
            cell["source"] = cell["source"].replace(old, new.strip())
    path.write_text(json.dumps(notebook, indent=1))
    for where, code in blocks("file: "):
        target = package.parent / where.strip().removeprefix("src/")
        target.write_text(code)


@pytest.fixture(scope="module")
def walked(tmp_path_factory, tiny_bert_dir):
    """The book and the package copied, the walkthrough followed, the chapter built: (book, env, build)."""
    base = tmp_path_factory.mktemp("contributing")
    book = copy_book(base / "book")
    package = base / "src" / "embedding_geometry"
    shutil.copytree(ROOT / "src" / "embedding_geometry", package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(package.parent), "EMBEDDING_GEOMETRY_CACHE": str(book / "build" / "cache")}
    env.pop("EMBEDDING_GEOMETRY_RESULTS", None)
    follow_the_walkthrough(book, package, env)
    profile = tiny_profile(book, tiny_bert_dir)
    build = subprocess.run([sys.executable, "-m", "embedding_geometry", "build", "--root", str(book), "--profile",
                            str(profile), "--only", SLUG, "--no-site"], capture_output=True, text=True, env=env,
                           timeout=900)
    return book, env, build


@pytest.mark.slow
def test_the_walkthrough_builds_a_chapter_that_judges_its_claim(walked):
    book, _, build = walked
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    results = json.loads((book / "build" / "results" / f"{SLUG}.json").read_text())
    assert len(results["metrics"]["pool_norm"]) == 4  # the tiny BERT: 3 blocks, depths 0..3
    (claim,) = [c for c in results["claims"] if c["id"] == "final-pool-longer-than-one"]
    assert claim["verdict"] in {"holds", "does not hold", "inconclusive", "not tested"}


@pytest.mark.slow
def test_the_new_chapter_is_in_the_table_of_contents_and_has_a_methods_stub(walked):
    book, env, _ = walked
    foundations = next(p for p in derived.derived_toc(book)["parts"] if p["caption"] == "Foundations")
    assert {"file": f"book/chapters/{SLUG}"} in foundations["chapters"]
    code = "from pathlib import Path; from embedding_geometry.book import derived; " \
           f"print(derived.write_methods_stubs(Path({str(book)!r})).read_text())"
    stubs = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "(methods-09-pool-norm)=" in stubs and "pool_norm[l] = (1/N)" in stubs
    assert "(methods-layer-by-layer)=" not in stubs  # the book's chapters cite their own sections


STRUCTURAL = ("tests/test_layers.py", "tests/test_notebook_conventions.py", "tests/test_pages.py",
              "tests/test_rules.py", "tests/test_claims_ledgers.py", "tests/test_coverage.py",
              "tests/test_contributing.py::test_every_chapter_that_runs_a_model_declares_its_tiny_sizes_in_its_notebook")
"""The tests that check every chapter's shape: the package's layering and maps, the notebook's
conventions, rules for every parameter, the ledgers and coverage, the tiny sizes."""


@pytest.mark.slow
def test_the_structural_tests_pass_with_the_new_chapter_in_the_tree(walked):
    """The suite's structural tests, run on the copy (its notebooks, its package, these tests), see
    the new chapter and pass: adding it took the three files and no registry."""
    book, env, _ = walked
    shutil.copytree(ROOT / "tests", book / "tests", ignore=shutil.ignore_patterns("__pycache__", "reference"))
    for name in ("pyproject.toml", "CONTRIBUTING.md", "README.md"):
        shutil.copy2(ROOT / name, book / name)
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", "not slow",
                           "--basetemp", str(book / "pytest"), *STRUCTURAL], cwd=book, capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "chapters/ch09_pool_norm/pool_norm.py" in done.stdout  # test_layers checked the new module


@pytest.mark.slow
def test_a_value_the_ledgers_rules_refuse_stops_the_chapter_in_one_line(walked, tiny_bert_dir):
    book, env, _ = walked
    profile = tiny_profile(book, tiny_bert_dir, **{SLUG: {"tokens": "none"}})
    done = subprocess.run([sys.executable, "-m", "embedding_geometry", "build", "--root", str(book), "--profile",
                           str(profile), "--only", SLUG, "--no-site"], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert "parameter 'tokens' expects one of 'all', 'word'; got 'none'" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_the_scaffold_refuses_a_bad_slug_an_existing_chapter_and_a_folder_that_is_no_book(tmp_path):
    with pytest.raises(BookError, match="slug 'Pool': expected two digits"):
        scaffold.new_chapter(ROOT, "Pool", "T", "pool", package=tmp_path)
    with pytest.raises(BookError, match="exists already"):
        scaffold.new_chapter(ROOT, "01_layer_by_layer", "T", "layer_by_layer", package=tmp_path)
    with pytest.raises(BookError, match="is not a book"):
        scaffold.new_chapter(tmp_path, "09_x", "T", "x", package=tmp_path)


def test_the_scaffold_writes_the_skeleton_of_the_convention(tmp_path):
    (tmp_path / "notebooks").mkdir()
    path = scaffold.new_chapter(tmp_path, "09_x", "A title", "x", part="Anisotropy", package=tmp_path / "pkg")
    notebook = json.loads(path.read_text())
    assert '``x``' in (tmp_path / "pkg" / "chapters" / "ch09_x" / "__init__.py").read_text()
    (tmp_path / "pkg" / "chapters" / "ch09_y").mkdir()
    with pytest.raises(BookError, match="its package .* exists already"):
        scaffold.new_chapter(tmp_path, "09_y", "A title", "x", package=tmp_path / "pkg")
    assert not (tmp_path / "notebooks" / "09_y.ipynb").exists()
    sources = [cell["source"] for cell in notebook["cells"]]
    assert sources[0].startswith("# A title")
    assert notebook["metadata"]["embedding_geometry"] == {"part": "Anisotropy", "tiny": {}}
    assert any('Chapter.open("09_x", globals())' in s for s in sources)
    tags = {s: cell["metadata"].get("tags", []) for s, cell in zip(sources, notebook["cells"])}
    assert tags["ch.findings()"] == ["remove-input"] and tags["ch.finish()"] == ["remove-input"]
    assert all(not cell.get("outputs") for cell in notebook["cells"])
    assert "{glue" not in json.dumps(notebook)
    markdown = "\n\n".join(cell["source"] for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert test_plain_jupyter.myst_syntax(markdown) == []  # it reads in Jupyter as in the book


def test_the_scaffold_notebook_teaches_and_keeps_the_conventions_of_every_chapter(tmp_path, monkeypatch):
    """The skeleton passes what every chapter's notebook passes: learning objectives,
    prerequisites and three exercises (test_teaching), parameters and metrics one way and no
    lambda (test_notebook_conventions)."""
    (tmp_path / "notebooks").mkdir()
    path = scaffold.new_chapter(tmp_path, "09_x", "A title", "x", package=tmp_path / "pkg")
    shutil.copy(ROOT / "notebooks" / f"{test_teaching.PRIMER}.ipynb", tmp_path / "notebooks")
    monkeypatch.setattr(test_teaching, "NOTEBOOKS", tmp_path / "notebooks")
    assert test_teaching.teaching_problems("09_x") == []
    assert test_notebook_conventions.departures(test_notebook_conventions.code_cells(path)) == []
    code = [cell["source"] for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code"]
    assert all(len(source.splitlines()) <= 12 for source in code)


def test_every_chapter_that_runs_a_model_declares_its_tiny_sizes_in_its_notebook():
    """A chapter's tiny-model parameters are in its notebook's metadata (``embedding_geometry.tiny``,
    which the scaffold writes), never missing: a chapter left out would run its full defaults in
    every test build. Each names parameters the chapter declares."""
    problems = []
    for slug in rules.slugs(ROOT):
        if "model" in rules.rules_for(slug) and declared_tiny(ROOT / "notebooks" / f"{slug}.ipynb") is None:
            problems.append(f"{slug}: tiny sizes declared nowhere")
        if unknown := set(tiny_parameters().get(slug, {})) - set(rules.rules_for(slug)):
            problems.append(f"{slug}: tiny sizes for parameters it does not declare: {sorted(unknown)}")
    assert not problems, "\n".join(problems)


def test_a_new_chapters_tiny_sizes_are_read_from_its_notebook(tmp_path):
    (tmp_path / "notebooks").mkdir()
    path = scaffold.new_chapter(tmp_path, "09_x", "A title", "x", package=tmp_path / "pkg")
    assert tiny_parameters(tmp_path) == {"09_x": {}}
    notebook = json.loads(path.read_text())
    notebook["metadata"]["embedding_geometry"]["tiny"] = {"n_texts": 8}
    path.write_text(json.dumps(notebook))
    assert tiny_parameters(tmp_path) == {"09_x": {"n_texts": 8}}

