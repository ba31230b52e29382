"""The results JSON of a chapter run, written and read back: versions and device, numpy values
made plain, an atomic write (:func:`write_results`); and the atlas's results documents in a folder.

**Reading back, checked.** The pages that summarise chapters (provenance, the claims dashboard)
read a chapter's ``<slug>.json`` back with :func:`read`, the Performance page the benchmark
figures with :func:`read_mapping`. A file that is empty, truncated, not UTF-8, not JSON, or not
of the schema below (written by an older version, or not a results file at all) is a one-line
:class:`DamagedResultsError` that names the file and the command that rebuilds it.

Schema (what the pages use)::

    chapter      str            the file's own slug
    model, params, inputs, metrics, environment      mappings
    environment  python, torch, transformers, device: str; seconds: number
    claims       list of {statement, model, kind, verdict: str; counted: bool; published: None | {value,
                 model}, ...}, each of which the dashboard can show (:func:`claims.words.row
                 <embedding_geometry.book.claims.words.row>`)
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..core import clock, paths
from ..core.errors import BookError
from . import rules
from .claims import words


def environment(device: str, started: float) -> dict[str, Any]:
    """Versions, device, wall time since ``started`` (a ``time.time()`` stamp), and where the
    process's time went (``timing``: :func:`core.clock.timing`). The versions are read from the
    installed packages' metadata, so a page that runs no model never imports torch."""
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
    target = paths.results_dir() / f"{chapter}.json"
    paths.write_atomically(target, lambda tmp: tmp.write_text(text, encoding="utf-8"), suffix=".json")
    return target


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


# --------------------------------------------------------------------------- reading back

SECTIONS = {"chapter": str, "model": dict, "params": dict, "inputs": dict, "metrics": dict,
            "claims": list, "environment": dict}
ENVIRONMENT = {"python": str, "torch": str, "transformers": str, "device": str, "seconds": (int, float)}
CLAIM = {"statement": str, "model": str, "kind": str, "verdict": str, "counted": bool,
         "published": (dict, type(None))}
REBUILD = ".venv/bin/python -m embedding_geometry build --only {slug} --force"


class DamagedResultsError(BookError, ValueError):
    """A results (or other build-product) JSON file cannot be used; the message says how to remake it."""


def read(path: Path) -> dict[str, Any]:
    """The results JSON at ``path`` (``<slug>.json``), checked against the schema above."""
    document = read_json(path, rebuild_hint(path.stem))
    problem = schema_problem(document, path.stem)
    if problem:
        written = document.get("environment", {}).get("embedding_geometry") if isinstance(document, dict) else None
        if isinstance(written, str) and written != __version__:
            problem += f" (written by embedding_geometry {written[:20]}, this is {__version__})"
        raise DamagedResultsError(
            f"results file {shown_path(path)} is not usable: {problem}; {rebuild_hint(path.stem)}")
    return document


def read_json(path: Path, remedy: str, what: str = "results file") -> Any:
    """The JSON value in ``path``; a file that cannot be read as JSON is a one-line
    :class:`DamagedResultsError` naming ``what`` it is and ending in ``remedy`` (how to remake it)."""
    name = f"{what} {shown_path(path)}"
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DamagedResultsError(f"{name} cannot be read ({error.strerror}); {remedy}") from error
    if not raw.strip():
        raise DamagedResultsError(f"{name} is empty; {remedy}")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DamagedResultsError(f"{name} is not UTF-8 text (byte {error.start}); {remedy}") from error
    except json.JSONDecodeError as error:
        raise DamagedResultsError(f"{name} is damaged: not complete JSON ({error.msg} at line "
                                  f"{error.lineno}, column {error.colno}); {remedy}") from error
    except RecursionError as error:
        raise DamagedResultsError(f"{name} is damaged: JSON nested too deeply; {remedy}") from error


def read_mapping(path: Path, remedy: str, what: str) -> dict[str, Any]:
    """:func:`read_json`, where the file must hold a JSON object."""
    value = read_json(path, remedy, what)
    if not isinstance(value, dict):
        raise DamagedResultsError(
            f"{what} {shown_path(path)} holds a JSON {_json_type(value)}, not an object; {remedy}")
    return value


def schema_problem(document: Any, slug: str) -> str | None:
    """What keeps ``document`` from being the results of chapter ``slug``, or None."""
    if not isinstance(document, dict):
        return f"it holds a JSON {type(document).__name__}, not an object"
    problem = (field_problem(document, SECTIONS, "")
               or field_problem(document["environment"], ENVIRONMENT, "environment."))
    if problem:
        return problem
    if document["chapter"] != slug:
        return f"it holds the results of chapter {document['chapter'][:60]!r}"
    for i, claim in enumerate(document["claims"]):
        if not isinstance(claim, dict):
            return f"claims[{i}] is a {type(claim).__name__}, not an object"
        if problem := field_problem(claim, CLAIM, f"claims[{i}]."):
            return problem
        if claim["published"] is not None and not {"value", "model"} <= set(claim["published"]):
            return f"claims[{i}].published lacks 'value' or 'model'"
        try:
            words.row(claim)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            return f"claims[{i}] cannot be shown ({type(error).__name__}: {_first_line(error)})"
    return None


def rebuild_hint(slug: str) -> str:
    """The command that rewrites ``build/results/<slug>.json``."""
    if slug not in rules.chapters():
        return "it is no chapter's results file: remove it"
    return "rebuild it: " + REBUILD.format(slug=slug)


def field_problem(mapping: dict, expected: dict[str, Any], prefix: str) -> str | None:
    """The first key of ``expected`` that ``mapping`` lacks or holds with another JSON type
    (``expected`` maps each key to its type or tuple of types; a boolean is no number), as
    "it lacks <prefix><key>" or "<prefix><key> is a JSON string", or None when all are there."""
    for key, kind in expected.items():
        if key not in mapping:
            return f"it lacks {prefix}{key}"
        if not isinstance(mapping[key], kind) or isinstance(mapping[key], bool) and kind is not bool:
            return f"{prefix}{key} is a JSON {_json_type(mapping[key])}"
    return None


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [""])[0][:80]


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def shown_path(path: Path) -> str:
    """The path relative to the book's root when it lies inside it (as a reader would type it)."""
    root = paths.project_root()
    try:
        shown = path.resolve().relative_to(root.resolve()) if root else path
    except ValueError:
        shown = path
    return repr(str(shown)) if not str(shown).isprintable() else str(shown)
