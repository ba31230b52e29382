"""Where the book keeps its files.

The book's root is the nearest folder, from the working directory up, that holds ``_config.yml``
(papermill runs every chapter with the root as working directory). Build products live under
``<root>/build``: ``results/`` (one JSON per chapter), ``cache/`` (activations), ``state/`` (what
the last successful run of each chapter depended on).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the working directory) holding
    ``_config.yml``, or None outside a book."""
    start = start or Path.cwd()
    return next((folder for folder in (start, *start.parents) if (folder / "_config.yml").is_file()), None)


def results_dir() -> Path:
    """``$EMBEDDING_GEOMETRY_RESULTS`` (the build sets it to a staging folder), else
    ``build/results`` under the book's root (or the working directory)."""
    if env := os.environ.get("EMBEDDING_GEOMETRY_RESULTS"):
        return Path(env)
    return (project_root() or Path.cwd()) / "build" / "results"


def built_results_dir() -> Path:
    """``build/results`` under the book's root: where chapters' results land once their run
    succeeded (pages that summarise other chapters read from here)."""
    return (project_root() or Path.cwd()) / "build" / "results"


def cache_dir(root: Path | None = None) -> Path:
    """``$EMBEDDING_GEOMETRY_CACHE``, else ``build/cache`` under ``root`` (default: the book's
    root found from the working directory), else the user cache."""
    if env := os.environ.get("EMBEDDING_GEOMETRY_CACHE"):
        return Path(env)
    root = root or project_root()
    return root / "build" / "cache" if root else Path.home() / ".cache" / "embedding-geometry"


PARTIAL = ".partial-"
"""The prefix of a file or folder being written, ``.partial-<pid>-…`` (:func:`owner_alive` reads the pid)."""


def write_atomically(path: Path, write: Callable[[Path], object], suffix: str = "", once: bool = False) -> bool:
    """``write(tmp)`` into a :data:`PARTIAL` file beside ``path``, renamed onto ``path`` once complete
    (and removed whatever happens): a reader sees the old file or the whole new one. With ``once``,
    linked instead, so that a complete copy already at ``path`` stays (the first writer wins).
    Returns whether this call wrote ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f"{PARTIAL}{os.getpid()}-", suffix=suffix, dir=path.parent)
    os.close(handle)
    try:
        write(Path(tmp))
        if not once:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


def remove_partial(folder: Path) -> list[Path]:
    """Delete the :data:`PARTIAL` files and folders in ``folder`` whose writer process is gone (killed
    while writing); a write in progress in another process is left alone. Returns what it removed."""
    stale = [p for p in folder.glob(f"{PARTIAL}*") if not owner_alive(p)] if folder.is_dir() else []
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return stale


def owner_alive(path: Path) -> bool:
    """Whether the process that made a temporary ``.<name>-<pid>-<random>`` file or folder is
    still running (names without a PID count as alive: never delete what we cannot attribute)."""
    parts = path.name.split("-")
    pid = next((int(part) for part in parts[1:] if part.isdigit()), None)
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@functools.cache
def package_hash() -> str:
    """SHA-256 over every file of the package (code and data), in path order: what a build's
    chapters and an atlas run's shards were computed by (read once per process)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
