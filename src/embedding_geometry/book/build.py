"""Building the book: run each chapter notebook through papermill, then compile the site.

For each ``notebooks/NN_slug.ipynb`` the build

1. takes the chapter's parameters from a profile (``params/<profile>.yaml``: ``common`` values
   for every chapter that declares them, then ``chapters.<slug>`` values), checked before any
   chapter runs (:mod:`~embedding_geometry.book.profiles`),
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
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import disk_cache, models, paths
from ..core.errors import BookError, ParameterError
from ..core.errors import short_repr
from . import charts, derived, jupyter_kernels, profiles

PACKAGE_DIR = Path(__file__).resolve().parent.parent

SHARED_CORES = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}
"""How idle threads wait while two chapters share the cores: at once, not spinning. By default a
thread pool keeps its threads spinning after each parallel region (torch's OpenMP about 300,000
turns, numpy's OpenBLAS about 2²⁸ cycles), which is free on cores of one's own and steals the
other process's time on shared ones. Measured on 2 cores, a training loop of MiniLM beside MPNet's
forward passes: 18.8 and 20.5 s with spinning threads, 8.2 and 9.6 s with these, against 5.4 and
6.5 s for each alone. Alone, waiting at once is slower (a forward pass about 25 %), so it is set
only for builds that run a chapter alongside. Neither setting changes any arithmetic. A value the
caller's environment already holds is kept."""

ALONGSIDE_NICENESS = 10
"""How much lower the scheduler ranks a chapter run alongside (``os.nice``): the chapters in
order are the build's longest path, and a chapter alongside has time to spare; it takes the cycles
they leave (Linux gives a process 10 steps nicer about a tenth of a contested core)."""


# --------------------------------------------------------------------------- fingerprints

def src_hash() -> str:
    """SHA-256 over every file of the package (code and data), in path order."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


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
             "src": src_hash(), "models": weights, "results": _results_read(notebook)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _results_read(notebook: Path) -> dict[str, str]:
    """Hashes of the build products a page summarises, declared in its notebook metadata:
    ``embedding_geometry.depends_on_results: true`` (the results JSON of every chapter that does
    not itself summarise results: two summary pages reading each other would never be unchanged) and
    ``embedding_geometry.depends_on_files: [paths relative to the root]``."""
    metadata = _build_metadata(notebook)
    root = notebook.parent.parent
    summaries = {p.stem for p in notebook.parent.glob("*.ipynb") if _build_metadata(p).get("depends_on_results")}
    read = [p for p in sorted((root / "build" / "results").glob("*.json")) if p.stem not in summaries] \
        if metadata.get("depends_on_results") else []
    read += [root / name for name in metadata.get("depends_on_files", [])]
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "absent"
            for p in read}


def _build_metadata(notebook: Path) -> dict[str, Any]:
    """The notebook's ``embedding_geometry`` metadata (what its page reads of the build)."""
    return json.loads(notebook.read_text()).get("metadata", {}).get("embedding_geometry", {})


# --------------------------------------------------------------------------- running chapters

@dataclass
class Outcome:
    slug: str
    status: str  # "ran", "skipped", "failed"
    seconds: float
    message: str = ""


def run_chapter(notebook: Path, params: dict[str, Any], root: Path, force: bool = False) -> Outcome:
    """Execute one chapter (or skip it when unchanged); see the module docstring."""
    import papermill

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
    jupyter_kernels.start_server(src_hash())  # the chapter's kernel is forked from it, with the imports done
    log = _mkdir(root / "build" / "logs") / f"{slug}.log"
    try:
        with _stderr_to(log):
            papermill.execute_notebook(str(notebook), str(scratch / notebook.name), parameters=params,
                                       cwd=str(root), kernel_name="python3", progress_bar=False,
                                       kernel_manager_class=jupyter_kernels.kernel_manager())
        collapse_parameters(scratch / notebook.name)
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
    finally:  # also on SIGTERM (see install_sigterm_handler): papermill has stopped the kernel by now
        os.environ.pop("EMBEDDING_GEOMETRY_RESULTS", None)
        shutil.rmtree(scratch, ignore_errors=True)
        disk_cache.remove_partial_entries(paths.cache_dir(root))


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
    from . import claims, readback  # noqa: F401 (they define BookErrors of their own)

    found, todo = set(), [BookError]
    while todo:
        kind = todo.pop()
        found.add(kind.__name__)
        todo += kind.__subclasses__()
    return found - {claims.LedgerError.__name__}


def _plain(text: str) -> str:
    """``text`` without ANSI colour codes (IPython colours its tracebacks)."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


MACHINERY = ("parameters", "injected-parameters")
"""Tags of the cells that set a chapter's parameters: its own defaults, and the values papermill
injected for this build. The executed copy collapses them (myst-nb's ``hide-cell``): a reader
meets the chapter's findings first, and can still open the values this page was computed with."""


def collapse_parameters(executed: Path) -> None:
    """Tag the parameter cells of an executed notebook ``hide-cell`` (see MACHINERY)."""
    import nbformat

    notebook = nbformat.read(executed, as_version=4)
    for cell in notebook.cells:
        tags = cell.metadata.setdefault("tags", [])
        if set(tags) & set(MACHINERY) and "hide-cell" not in tags:
            tags.append("hide-cell")
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


def notebooks(root: Path, only: list[str] | None = None) -> list[Path]:
    found = [root / "notebooks" / f"{slug}.ipynb" for slug in profiles.chapters(root)]
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"--only: no chapter named {', '.join(sorted(unknown))} "
                             f"(chapters: {', '.join(p.stem for p in found)})")
        found = [p for p in found if p.stem in only]
    return found


def build(root: Path, profile: str | profiles.Profile = "default", only: list[str] | None = None,
          force: bool = False, site: bool = True) -> int:
    """Run the chapters, then the site, with ``profile`` (a name or path, or one already loaded).
    Returns a process exit code (0 = success)."""
    chosen = profile if isinstance(profile, profiles.Profile) else profiles.load(profile, root, profiles.chapters(root))
    planned = {notebook: _checked_parameters(notebook, chosen) for notebook in notebooks(root, only)}
    if None in planned.values():
        print("bad parameters in the profile: no chapter was run", file=sys.stderr)
        return 1
    _remove_leftovers(root)
    outcomes = _run_chapters(planned, root, force, run_chapter)
    failures = sum(outcome.status == "failed" for outcome in outcomes)
    if failures:
        print(f"{failures} chapter(s) failed; their previous executed copies and results were kept; "
              "the site was not rebuilt", file=sys.stderr)
        return 1
    if not site:
        return 0
    start = time.time()
    code = build_site(root)
    print(f"{'site' if code == 0 else 'FAILED':>8}  jupyter-book build {'':<22} {time.time() - start:7.1f} s",
          flush=True)
    return code


def _run_chapters(planned: dict[Path, dict[str, Any]], root: Path, force: bool, runner) -> list[Outcome]:
    """Run the ``planned`` chapters in order with ``runner`` (:func:`run_chapter`), reporting each. A
    chapter whose notebook declares ``embedding_geometry.alongside: true`` (it shares no forward pass
    with the others through the activation cache: chapter 7 trains and measures its own copies) runs
    in a second process alongside the rest, when there is a rest and that process can import the
    runner by name, ranked lower by the scheduler (:data:`ALONGSIDE_NICENESS`), every kernel's
    threads then waiting without spinning (:data:`SHARED_CORES`); a summary page
    (``depends_on_results``) waits for it."""
    parallel = len(planned) > 1 and _importable(runner)
    alongside = [n for n in planned if _build_metadata(n).get("alongside")] if parallel else []
    with _environment(SHARED_CORES if alongside else {}):
        background = {n: _start_alongside(runner, n, planned[n], root, force) for n in alongside}
        return _run_in_order(planned, alongside, background, root, force, runner)


def _run_in_order(planned, alongside, background, root: Path, force: bool, runner) -> list[Outcome]:
    """The chapters not run alongside, in order, then those that were, reported as each ends."""
    outcomes = []
    try:
        for notebook, params in planned.items():
            if _build_metadata(notebook).get("depends_on_results"):
                outcomes += _finish_alongside(background)
            if notebook not in alongside:
                outcomes.append(runner(notebook, params, root, force))
                _report(outcomes[-1])
        return outcomes + _finish_alongside(background)
    finally:
        for process, _ in background.values():
            process.terminate()


@contextlib.contextmanager
def _environment(defaults: dict[str, str]):
    """``os.environ`` with ``defaults`` for the names it lacks (kernels and their server started
    meanwhile inherit them), restored afterwards."""
    added = {name: value for name, value in defaults.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _importable(runner) -> bool:
    """Whether another process can be handed ``runner``: a function it imports by its name."""
    import pickle

    try:
        pickle.dumps(runner)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _start_alongside(runner, notebook: Path, params: dict[str, Any], root: Path, force: bool):
    """A fresh process running ``runner`` on ``notebook``, and the pipe its outcome comes back on."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_run_and_send, args=(sender, runner, notebook, params, root, force))
    process.start()
    sender.close()
    return process, receiver


def _run_and_send(sender, runner, notebook: Path, params: dict[str, Any], root: Path, force: bool) -> None:
    install_sigterm_handler()
    os.nice(ALONGSIDE_NICENESS)  # its kernel server and kernels inherit it
    sender.send(runner(notebook, params, root, force))


def _finish_alongside(background: dict) -> list[Outcome]:
    """Wait for every chapter still running alongside, report each, and forget it."""
    outcomes = []
    for notebook, (process, receiver) in list(background.items()):
        try:
            outcome = receiver.recv()
        except EOFError:  # the process died without a word
            outcome = Outcome(notebook.stem, "failed", 0.0, f"its process ended with exit code {process.exitcode}")
        process.join()
        if outcome.status == "ran":
            outcome.message = "alongside the others"
        _report(outcome)
        outcomes.append(outcome)
        del background[notebook]
    return outcomes


def _checked_parameters(notebook: Path, profile: profiles.Profile) -> dict[str, Any] | None:
    """The chapter's parameters from ``profile`` (checked with the notebook's defaults for the
    rest), or None after reporting a bad value (the chapter is then not run, and its previous
    outputs stay as they are)."""
    slug = notebook.stem
    try:
        return profiles.chapter_parameters(slug, profile, profiles.notebook_defaults(notebook))
    except ParameterError as error:
        _report(Outcome(slug, "failed", 0.0, f"parameters cell: ParameterError: {error} (from {profile.where})"))
        return None


def _report(outcome: Outcome) -> None:
    print(f"{outcome.status:>8}  {outcome.slug:<40} {outcome.seconds:7.1f} s  {outcome.message}", flush=True)


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


SOURCES = ("_config.yml", "_toc.yml", "_static", "_templates", "book", "notebooks", "params")
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


def install_sigterm_handler() -> None:
    """Turn SIGTERM into SystemExit so that ``finally`` blocks remove temporary files."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
