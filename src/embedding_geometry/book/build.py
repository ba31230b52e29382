"""Building the book: run each chapter notebook through papermill, then compile the site.

For each ``notebooks/NN_slug.ipynb`` the build

1. takes the chapter's parameters from a profile (``params/<profile>.yaml``: ``common`` values
   for every chapter that declares them, then ``chapters.<slug>`` values), checked before any
   chapter runs (:mod:`~embedding_geometry.book.rules`),
2. skips the chapter when its fingerprint — notebook, parameters, the ``src`` package, and the
   weights of every model it names — equals that of its last successful run (unless forced),
3. otherwise executes it into a temporary file with results staged in a temporary folder (the
   kernel, forked with its imports done by :mod:`.jupyter_kernels`, sends its stderr to
   ``build/logs/<slug>.log``), and
   only when every cell succeeded moves the executed copy to ``book/chapters/`` and the results
   JSON to ``build/results/``: a failure leaves the previous good outputs in place,

then writes the offline Vega bundle into ``_static/`` and runs ``jupyter-book build`` with
warnings as errors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
import papermill

from ..core import disk_cache, models, paths
from ..core.errors import BookError, ParameterError, short_repr
from . import charts, claims, derived, jupyter_kernels, pdf, rules, schedule
from .results import DamagedResultsError  # noqa: F401 (a BookError of its own, for _input_errors)
from .schedule import Outcome, report



# --------------------------------------------------------------------------- fingerprints

def chapter_fingerprint(notebook: Path, params: dict[str, Any]) -> str:
    """What a chapter's outputs depend on: notebook, parameters, package, model weights."""
    named = [params["model"]] if isinstance(params.get("model"), str) else []
    named += [m for m in params.get("models") or [] if isinstance(m, str)]
    weights = {}
    for model_id in named:
        try:
            weights[model_id] = models.fingerprint(model_id)
        except Exception as error:  # the notebook will report it properly
            weights[model_id] = f"unavailable: {error}"
    parts = {"notebook": hashlib.sha256(notebook.read_bytes()).hexdigest(), "params": params,
             "src": paths.package_hash(), "models": weights, "results": _results_read(notebook)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _results_read(notebook: Path) -> dict[str, str]:
    """Hashes of the build products a page summarises, declared in its notebook metadata:
    ``embedding_geometry.depends_on_results: true`` (the results JSON of every chapter that does
    not itself summarise results: two summary pages reading each other would never be unchanged) and
    ``embedding_geometry.depends_on_files: [paths relative to the root]``."""
    metadata = schedule.metadata(notebook)
    root = notebook.parent.parent
    summaries = {p.stem for p in notebook.parent.glob("*.ipynb") if schedule.metadata(p).get("depends_on_results")}
    read = [p for p in sorted((root / "build" / "results").glob("*.json")) if p.stem not in summaries] \
        if metadata.get("depends_on_results") else []
    read += [root / name for name in metadata.get("depends_on_files", [])]
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "absent"
            for p in read}


# --------------------------------------------------------------------------- running chapters

KERNEL_START = 300
"""Seconds a chapter's kernel may take to answer: its server imports torch, transformers and the
package before it forks the kernel, and on a 2-core machine busy with a chapter alongside and a
test run that took over papermill's default of 60 s (chapter 7 failed to start three times)."""


def run_chapter(notebook: Path, params: dict[str, Any], root: Path, force: bool = False) -> Outcome:
    """Execute one chapter (or skip it when unchanged); see the module docstring."""
    slug = notebook.stem
    executed = root / "book" / "chapters" / notebook.name
    results = root / "build" / "results" / f"{slug}.json"
    state = root / "build" / "state" / f"{slug}.json"
    fingerprint = chapter_fingerprint(notebook, params)
    if not force and executed.is_file() and results.is_file() and _last_fingerprint(state) == fingerprint:
        return Outcome(slug, "skipped", 0.0, "unchanged since its last successful run")
    start = time.time()
    scratch = Path(tempfile.mkdtemp(prefix=f".{slug}-{os.getpid()}-", dir=_mkdir(root / "build")))
    os.environ["EMBEDDING_GEOMETRY_RESULTS"] = str(scratch)
    jupyter_kernels.start_server(paths.package_hash())  # the chapter's kernel is forked from it, with the imports done
    log = _mkdir(root / "build" / "logs") / f"{slug}.log"
    try:
        with _stderr_to(log):
            _execute(notebook, scratch / notebook.name, params, root)
        remove_parameter_cells(scratch / notebook.name)
        staged = scratch / f"{slug}.json"
        if not staged.is_file():
            return Outcome(slug, "failed", time.time() - start, f"the notebook wrote no results JSON ({slug}.json)")
        os.replace(scratch / notebook.name, _mkdir(executed.parent) / notebook.name)
        os.replace(staged, _mkdir(results.parent) / results.name)
        _mkdir(state.parent)
        state.write_text(json.dumps({"fingerprint": fingerprint, "params": params,
                                     "seconds": round(time.time() - start, 2)}, indent=1, default=str))
        return Outcome(slug, "ran", time.time() - start)
    except papermill.PapermillExecutionError as error:
        return Outcome(slug, "failed", time.time() - start, failure_message(error, slug, params, log, root))
    finally:  # also on SIGTERM (see schedule.install_sigterm_handler): papermill has stopped the kernel by now
        os.environ.pop("EMBEDDING_GEOMETRY_RESULTS", None)
        shutil.rmtree(scratch, ignore_errors=True)
        disk_cache.remove_partial_entries(paths.cache_dir(root))


def _execute(notebook: Path, output: Path, params: dict[str, Any], root: Path) -> None:
    """papermill, run once more when the kernel died before it answered: nothing has run then, and
    a second start is cheap (the reason, if any, is in the chapter's log)."""
    for attempt in (1, 2):
        try:
            papermill.execute_notebook(str(notebook), str(output), parameters=params, cwd=str(root),
                                       kernel_name="python3", progress_bar=False, start_timeout=KERNEL_START,
                                       kernel_manager_class=jupyter_kernels.kernel_manager())
            return
        except RuntimeError as error:
            if attempt == 2 or "before replying to kernel_info" not in str(error):
                raise
            print(f"{notebook.stem}: {error}; starting another kernel", file=sys.stderr, flush=True)


def failure_message(error, slug: str, params: dict[str, Any], log: Path, root: Path) -> str:
    """The one line a failed cell gets: the cell and its error; and, unless the error is one the
    book raises on purpose for a bad input (a :class:`~embedding_geometry.core.errors.BookError`,
    which names the culprit itself), that this is a bug, which chapter and parameter values led
    there, and how to report it — with the traceback, the cell and every value written to the
    chapter's ``log``."""
    where = f"cell {error.exec_count}" if error.exec_count else f"cell index {error.cell_index}"
    last = (str(error.evalue).strip().splitlines() or [""])[-1]
    if error.ename in _input_errors():
        return f"{where}: {error.ename}: {last}"
    shown = log.relative_to(root) if log.is_relative_to(root) else log
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"\n=== chapter {slug} failed in {where}: a bug in the book, not a bad value ===\n"
                     f"parameters (the profile's; the notebook's defaults for the rest):\n"
                     f"{json.dumps(params, indent=1, ensure_ascii=False, default=str)}\n"
                     f"cell source:\n{error.source}\ntraceback:\n{_plain(chr(10).join(error.traceback))}\n")
    values = ", ".join(f"{name}={short_repr(value, 40)}" for name, value in params.items()) or "the notebook's defaults"
    return (f"{where}: {error.ename}: {last} — a bug in the book, not a bad value: chapter {slug} failed inside its "
            f"code with {values}; please report it with {shown} (it holds the traceback and every value)")


def _input_errors() -> set[str]:
    """The names of the errors the book raises on purpose for a bad input: every BookError but
    the claims ledger's (a ledger that does not fit the chapter's metrics is the book's bug)."""
    found, todo = set(), [BookError]
    while todo:
        kind = todo.pop()
        found.add(kind.__name__)
        todo += kind.__subclasses__()
    return found - {claims.LedgerError.__name__}


def _plain(text: str) -> str:
    """``text`` without ANSI colour codes (IPython colours its tracebacks)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


MACHINERY = ("parameters", "injected-parameters")
"""Tags of the cells that set a chapter's parameters: its own defaults, and the values papermill
injected for this build. The executed copy removes them from the page (myst-nb's ``remove-cell``):
a reader meets the chapter's thesis and findings first, and reads the values this page was computed
with in its folded Parameters table; in Jupyter the cells are where they were."""


def remove_parameter_cells(executed: Path) -> None:
    """Tag the parameter cells of an executed notebook ``remove-cell`` (see MACHINERY)."""
    notebook = nbformat.read(executed, as_version=4)
    for cell in notebook.cells:
        tags = cell.metadata.setdefault("tags", [])
        if set(tags) & set(MACHINERY) and "remove-cell" not in tags:
            tags.append("remove-cell")
    nbformat.write(notebook, executed)


def _last_fingerprint(state: Path) -> str | None:
    """The fingerprint a chapter's last successful run recorded; None when there is none or
    its state file is damaged (the chapter then simply runs again)."""
    try:
        recorded = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return recorded.get("fingerprint") if isinstance(recorded, dict) else None


def build_site(root: Path) -> int:
    """Write the offline chart bundle, the table of contents and the Methods stubs derived from
    the chapters (:mod:`.derived`), and run ``jupyter-book build`` with warnings as errors."""
    charts.write_bundle(root / "_static")
    toc = derived.write_toc(root)
    derived.write_methods_stubs(root)
    executable = Path(sys.executable).with_name("jupyter-book")
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(root), "--toc", str(toc),
               "-W", "--keep-going", "--quiet"]
    return subprocess.run(command, cwd=root).returncode


def book_pdf(root: Path) -> None:
    """The whole book as one PDF (:mod:`.pdf`), printed before the site is built so that the site
    links it (``downloads/book.pdf``, :mod:`.sphinx_pages`); kept when no page, chapter or style
    changed since it was printed. Without Chromium, or when printing fails, the build says so and
    the site says there is none: an older build's PDF is removed first."""
    target = root / "_build" / "pdf" / "book.pdf"
    pages = [root / "_toc.yml", *root.glob("book/**/*.md"), *root.glob("book/chapters/*.ipynb"),
             *root.glob("_static/*.css"), *root.glob("_static/*.js")]
    if target.is_file() and target.stat().st_mtime > max(p.stat().st_mtime for p in pages if p.is_file()):
        print(f"{'skipped':>8}  pdf: no page has changed since {target.name} was printed", flush=True)
        return
    target.unlink(missing_ok=True)
    if not pdf.available():
        print(f"{'no pdf':>8}  printing it needs Debian's chromium and chromium-driver (`make pdf` installs them)")
        return
    start = time.time()
    try:
        pdf.make(root, target)
    except BookError as error:
        print(f"{'no pdf':>8}  {error}")
        return
    size = f"({target.stat().st_size / 1e6:.1f} MB)"
    print(f"{'pdf':>8}  {target.name} {size:<31} {time.time() - start:7.1f} s", flush=True)


def notebooks(root: Path, only: list[str] | None = None) -> list[Path]:
    found = [root / "notebooks" / f"{slug}.ipynb" for slug in rules.slugs(root)]
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"--only: no chapter named {', '.join(sorted(unknown))} "
                             f"(chapters: {', '.join(p.stem for p in found)})")
        found = [p for p in found if p.stem in only]
    return found


def build(root: Path, profile: str | rules.Profile = "default", only: list[str] | None = None,
          force: bool = False, site: bool = True) -> int:
    """Run the chapters, then the site, with ``profile`` (a name or path, or one already loaded).
    Returns a process exit code (0 = success)."""
    chosen = profile if isinstance(profile, rules.Profile) else rules.load(profile, root, rules.slugs(root))
    planned = {notebook: _checked_parameters(notebook, chosen) for notebook in notebooks(root, only)}
    if None in planned.values():
        print("bad parameters in the profile: no chapter was run", file=sys.stderr)
        return 1
    _remove_leftovers(root)
    outcomes = schedule.run_chapters(planned, root, force, run_chapter)
    failures = sum(outcome.status == "failed" for outcome in outcomes)
    if failures:
        print(f"{failures} chapter(s) failed; their previous executed copies and results were kept; "
              "the site was not rebuilt", file=sys.stderr)
        return 1
    if not site:
        return 0
    book_pdf(root)
    start = time.time()
    code = build_site(root)
    print(f"{'site' if code == 0 else 'FAILED':>8}  jupyter-book build {'':<22} {time.time() - start:7.1f} s",
          flush=True)
    return code


def _checked_parameters(notebook: Path, profile: rules.Profile) -> dict[str, Any] | None:
    """The chapter's parameters from ``profile`` (checked with the notebook's defaults for the
    rest), or None after reporting a bad value (the chapter is then not run, and its previous
    outputs stay as they are)."""
    slug = notebook.stem
    try:
        return rules.chapter_parameters(slug, profile, rules.notebook_defaults(notebook))
    except ParameterError as error:
        report(Outcome(slug, "failed", 0.0, f"parameters cell: ParameterError: {error} (from {profile.where})"))
        return None


@contextlib.contextmanager
def _stderr_to(log: Path):
    """Send this process's and the kernel's stderr (start-up notices, progress bars) to ``log``
    while a chapter runs; the build prints its own one-line summary of any failure."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log, "w") as handle:
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


SOURCES = ("_config.yml", "_toc.yml", "_static", "_templates", "book", "notebooks", "params", "LICENSE")
"""What a book is made of (everything else under the root is a build product or the package)."""


def copy_sources(root: Path, destination: Path) -> Path:
    """Copy the book's sources (not ``book/chapters`` nor the generated Vega bundle) from
    ``root`` to ``destination``: a separate book to build, for tests and benchmarks."""
    for name in SOURCES:
        source, target = root / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("chapters", ".ipynb_checkpoints",
                                                                          charts.BUNDLE_NAME))
        else:
            shutil.copy2(source, target)
    return destination


def _remove_leftovers(root: Path) -> None:
    """Scratch folders and unfinished cache writes of builds that were killed outright (those of
    a build still running, in another process, are left alone)."""
    for scratch in (root / "build").glob(".*-*"):
        if scratch.is_dir() and not paths.owner_alive(scratch):
            shutil.rmtree(scratch, ignore_errors=True)
    disk_cache.remove_partial_entries(paths.cache_dir(root))


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
