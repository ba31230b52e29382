"""Content-keyed entries on disk: what a forward pass produced, stored under a key of what it
depends on, so that a second build (or a second chapter) reads it back instead of running the model.

An entry is one joblib file ``<folder>/<key>.joblib`` holding a record that carries its own key
(``record.key``). :func:`store` writes it atomically (a temporary file in the same folder, renamed
into place when complete); :func:`load` gives it back only when it is whole and holds a record of
the expected type under the expected key, and otherwise deletes it (it is then recomputed).
The activation cache (:mod:`.activations`) and the head statistics of chapter 4's streaming pass
(``studies.head_cache``) keep their entries this way, in the same folder.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import joblib

from . import paths

PARTIAL_PREFIX = ".partial-"
"""Prefix of an entry being written: ``.partial-<pid>-…``."""


def model_identity(info) -> str:
    """What a key names a model by (``info``: its ``ModelInfo``): its weights' SHA-256, else its
    id and revision."""
    return info.sha256 or f"{info.id}@{info.revision}"


def entry(folder: str | Path | None, key: str) -> Path:
    """The file of ``key`` in ``folder`` (default: :func:`.paths.cache_dir`)."""
    return Path(folder or paths.cache_dir()) / f"{key}.joblib"


def load(path: Path, key: str, kind: type, what: str = "cache"):
    """The record stored at ``path`` when it is a ``kind`` whose ``key`` is ``key``; None when
    there is none. A truncated or foreign file is deleted, with a warning naming ``what`` cache
    it is in, and None returned."""
    if not path.is_file():
        return None
    try:
        record = joblib.load(path)
        if not isinstance(record, kind) or getattr(record, "key", None) != key:
            raise ValueError(f"cache entry does not hold the {kind.__name__} of its key")
        return record
    except Exception as error:  # a truncated or foreign file: recompute and overwrite
        warnings.warn(f"{what} entry {path.name} is unreadable ({type(error).__name__}); recomputing")
        path.unlink(missing_ok=True)
        return None


def store(path: Path, record) -> None:
    """Write ``record`` at ``path`` atomically; a folder that cannot be written to is a warning
    (the build goes on without caching)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f"{PARTIAL_PREFIX}{os.getpid()}-", suffix=".joblib", dir=path.parent)
    except OSError as error:  # a read-only or misplaced cache folder: go on without caching
        warnings.warn(f"cache folder {path.parent} is not writable ({error.strerror}); not cached")
        return
    os.close(handle)
    try:
        joblib.dump(record, tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def remove_partial_entries(folder: str | Path | None = None) -> list[Path]:
    """Delete the temporary files of cache writes whose writer process is gone (killed while
    writing). Each temporary file carries its writer's PID, so a write in progress in another
    process is left alone. Returns what it removed."""
    folder = Path(folder or paths.cache_dir())
    stale = [p for p in folder.glob(f"{PARTIAL_PREFIX}*") if not paths.owner_alive(p)] if folder.is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return stale
