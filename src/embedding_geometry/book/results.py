"""The results JSON of a chapter run: versions and device, numpy values made plain, an atomic write;
and the atlas's results documents in a folder."""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..core import clock, paths


def environment(device: str, started: float) -> dict[str, Any]:
    """Versions, device, wall time since ``started`` (a ``time.time()`` stamp), and where the
    process's time went (``timing``: :func:`core.clock.timing`). The versions are read from the
    installed packages' metadata, so a page that runs no model never imports torch."""
    from importlib.metadata import version

    return {
        "python": platform.python_version(), "torch": version("torch"),
        "transformers": version("transformers"), "numpy": np.__version__,
        "embedding_geometry": __version__, "platform": platform.platform(),
        "device": str(device), "seconds": round(time.time() - started, 2),
        "timing": clock.timing(opened=started),
    }


PER_UNIT_INLINE = 20_000
"""The most values a per-unit array keeps in the results JSON. A larger one — a pairwise kernel
[n, n, …], or one kernel per control seed — is recorded by its shape only: written out it would
make the JSON tens of megabytes, and the chapter rebuilds it from its cached forward passes."""


def compact_units(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` with every per-unit array of more than :data:`PER_UNIT_INLINE` values replaced by
    ``{"shape": [...], "values": "not recorded: ..."}``."""
    units = metrics.get("per_unit")
    if not isinstance(units, Mapping):
        return dict(metrics)
    kept = {key: {"shape": list(np.shape(value)), "values": f"not recorded: more than {PER_UNIT_INLINE:,} values"}
            if isinstance(value, np.ndarray) and value.size > PER_UNIT_INLINE else value
            for key, value in units.items()}
    return {**metrics, "per_unit": kept}


def write_results(chapter: str, *, model: Mapping[str, Any], params: Mapping[str, Any],
                  inputs: Mapping[str, Any], metrics: Mapping[str, Any], claims: list,
                  device: str, started: float, models: list[Mapping[str, Any]] | None = None) -> Path:
    """Write ``<results_dir>/<chapter>.json`` atomically (temporary file, then rename): the main
    ``model`` and every model the run used (``models``: id, weights' SHA-256 or the initialised
    weights' hash of a control, shape). NaN or infinite numbers are refused: a metric that
    produces one is a bug to fix, not to publish. Large per-unit arrays are recorded by their
    shape (:func:`compact_units`)."""
    ran = models if models else ([model] if model else [])
    document = {
        "chapter": chapter, "model": dict(model), "models": [dict(m) for m in ran],
        "params": dict(params), "inputs": dict(inputs),
        "metrics": compact_units(metrics), "claims": [v.record() for v in claims],
        "environment": environment(device, started),
    }
    text = json.dumps(to_jsonable(document), indent=1, allow_nan=False, ensure_ascii=False)
    folder = paths.results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{chapter}-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(tmp, folder / f"{chapter}.json")
    finally:
        Path(tmp).unlink(missing_ok=True)
    return folder / f"{chapter}.json"


def to_jsonable(value: Any, path: str = "") -> Any:
    """numpy arrays and scalars → lists and Python numbers; NaN/inf → ValueError naming the key."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist(), path)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"results value at '{path}' is {value}; results must be finite numbers")
    return value


def atlas_documents(folder: str | Path) -> dict[Path, dict[str, Any]]:
    """The atlas results documents (``<model key>.json``) in ``folder``, as written (their
    per-unit values left in their ``.npz``: ``atlas.shards.read`` loads them); none when it is
    not a folder."""
    folder = Path(folder)
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        document = json.loads(path.read_text())
        if document.get("chapter") == "atlas":
            found[path] = document
    return found
