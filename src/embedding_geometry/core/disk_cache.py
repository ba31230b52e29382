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

import warnings
from pathlib import Path

import joblib

from . import paths


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
    """Write ``record`` at ``path`` atomically (``paths.write_atomically``); a folder that cannot
    be written to is a warning (the build goes on without caching)."""
    try:
        paths.write_atomically(path, lambda tmp: joblib.dump(record, tmp), suffix=".joblib")
    except OSError as error:  # a read-only or misplaced cache folder: go on without caching
        warnings.warn(f"cache folder {path.parent} is not writable ({error.strerror}); not cached")


def remove_partial_entries(folder: str | Path | None = None) -> list[Path]:
    """Delete the temporary files of cache writes whose writer process is gone
    (``paths.remove_partial``). Returns what it removed."""
    return paths.remove_partial(Path(folder or paths.cache_dir()))
