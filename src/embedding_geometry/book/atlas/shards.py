"""One shard measured, written once, and a model's shards merged into its results file.

**Written once.** :func:`write_once` writes a shard's accumulator to a temporary file in the
shard folder and links it to the shard's own name (``os.link``, which fails when the name
exists): the first complete copy wins, a retried or duplicated shard finds its name taken and is
dropped, and a writer killed mid-shard leaves only a temporary file, which :func:`combine` never
reads (and :func:`remove_partial` deletes once its writer is gone). A rerun skips the shards that
exist: an interrupted run resumes where it stopped.

**One results file per model** (:func:`combine`): ``<out>/<model key>.json`` in the results
schema (``chapter: atlas``, the model with its weights' SHA-256, the parameters, the text sets,
the metrics of every set, the environment), and ``<model key>.npz`` beside it with every set's
per-unit values (``<set>::<key>``, float64), which the JSON leaves out. Both are written
atomically. :func:`read` reads a folder of them back.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from .. import results
from ...core import activations, models, paths, windows
from ...core.errors import BookError
from ...studies import head_cache
from ...studies.accumulators import Accumulator, merged
from .plan import ModelSpec, Plan, Shard


class AtlasError(BookError):
    """An atlas run cannot go on: a shard is missing or damaged, or a results folder holds none."""


@dataclass
class Part:
    """What one shard yields: its accumulator and the model it ran on (``ModelInfo`` as a dict)."""

    accumulator: Accumulator
    model: dict[str, Any]


# --------------------------------------------------------------------------- measuring

_LOADED: dict[tuple, models.LoadedModel] = {}
"""The models this process loaded, kept while it measures one trained model and its controls."""


def load(spec: ModelSpec, device: str, trust_remote_code: bool) -> models.LoadedModel:
    """``spec`` loaded (or its control initialised) once per process; loading another trained
    model lets the previous one and its controls go."""
    key = (spec.id, spec.control_seed, device, trust_remote_code)
    if key not in _LOADED:
        base = (spec.id, None, device, trust_remote_code)
        for old in [k for k in _LOADED if k[0] != spec.id]:
            del _LOADED[old]
        if base not in _LOADED:
            _LOADED[base] = models.load(spec.id, device, trust_remote_code)
        if spec.control_seed is not None:
            _LOADED[key] = models.random_control(_LOADED[base], spec.control_seed)
    return _LOADED[key]


def measure(plan: Plan, shard: Shard) -> Part:
    """The accumulator of one shard: its units through the model a forward pass at a time.

    Texts and tuples of a corpus (parameter ``corpus``), or with the activation cache off:
    ``batch_size`` texts a pass, each batch folded into the accumulator and let go, nothing
    cached, so that a shard's memory does not grow with its units (a corpus's states would fill
    the disk). The book's own sets with the cache on: one ``activations.extract`` of the shard's
    texts, small fixed lists that chapters 1–3 pass to the model whole, so that a shard that is a
    whole set reads their cached pass. Windows: cut where the model is, in batches, each batch's
    head statistics through the head cache (``studies.head_cache``) when the plan allows:
    chapter 4's pass stored them."""
    loaded = load(shard.model, plan.device, plan.trust_remote_code)
    text_set, accumulator = plan.text_set(shard.set), plan.text_set(shard.set).accumulator()
    if text_set.kind == "windows":
        source = text_set.corpus.cycled() if text_set.corpus else windows.sentence_stream(text_set.source,
                                                                                          text_set.seed)
        cut = windows.windows(loaded.tokenizer, source, text_set.windows, text_set.length)
        chosen = list(itertools.islice(cut, shard.start, shard.stop))
        for first, stats in head_cache.statistics(loaded, chosen, accumulator.settings, shard.start, plan.batch_size,
                                                  cache=plan.cache):
            accumulator.add(stats, range(first, first + stats.texts))
        return Part(accumulator, loaded.info.to_dict())
    whole = plan.cache and text_set.corpus is None
    step = shard.stop - shard.start if whole else max(1, plan.batch_size // text_set.arity)
    for start in range(shard.start, shard.stop, step):
        stop = min(start + step, shard.stop)
        acts = activations.extract(loaded, text_set.unit_texts(start, stop), batch_size=plan.batch_size, cache=whole,
                                   progress=False, source=text_set.name)
        accumulator.update(acts, range(start, stop))
    return Part(accumulator, loaded.info.to_dict())


# --------------------------------------------------------------------------- shard files

def shard_path(plan: Plan, shard: Shard) -> Path:
    return plan.out / "shards" / shard.model.key / f"{shard.name}.joblib"


def write_once(path: Path, part: Part) -> bool:
    """Write ``part`` at ``path`` unless a complete copy is there already (module docstring);
    whether this call wrote it."""
    return paths.write_atomically(path, lambda tmp: joblib.dump(part, tmp), suffix=".joblib", once=True)


def claim_folder(plan: Plan) -> None:
    """Mark ``plan.out`` as holding this plan's shards (``plan.json``: its fingerprint), or check
    that it does: shards of another plan (other models, texts or sizes) are never mixed in."""
    marker = plan.out / "plan.json"
    found = json.loads(marker.read_text()).get("fingerprint") if marker.is_file() else None
    if found is None:
        plan.out.mkdir(parents=True, exist_ok=True)
        paths.write_atomically(marker, lambda tmp: tmp.write_text(json.dumps({"fingerprint": plan.fingerprint()})),
                               suffix=".json")
    elif found != plan.fingerprint():
        raise AtlasError(f"--out {str(plan.out)!r} holds the shards of another atlas run (other models, texts or "
                         "sizes); choose another folder or delete it")


def remove_partial(plan: Plan) -> list[Path]:
    """Delete the temporary files of shard writers that are gone (killed mid-write)."""
    folder = plan.out / "shards"
    return [p for sub in sorted(folder.iterdir()) if sub.is_dir() for p in paths.remove_partial(sub)] \
        if folder.is_dir() else []


def done(plan: Plan, shard: Shard) -> bool:
    return shard_path(plan, shard).is_file()


def _read_part(path: Path) -> Part:
    try:
        part = joblib.load(path)
    except Exception as error:  # a file cut short or foreign: name it, do not guess
        raise AtlasError(f"shard file {path} is damaged ({type(error).__name__}); delete it and rerun to measure "
                         "that shard again") from error
    if not isinstance(part, Part):
        raise AtlasError(f"shard file {path} does not hold a shard; delete it and rerun")
    return part


# --------------------------------------------------------------------------- merging and results

def combine(plan: Plan, model: ModelSpec, started: float | None = None) -> Path:
    """Merge every shard of ``model`` set by set, each shard read from its one file, and write
    the model's results (module docstring); a missing shard is an AtlasError."""
    started = started or time.time()
    by_set: dict[str, list[Part]] = {}
    for shard in plan.shards(model):
        path = shard_path(plan, shard)
        if not path.is_file():
            raise AtlasError(f"shard {shard.name} of {model.id!r} was not measured ({path} is missing); "
                             "rerun the atlas")
        by_set.setdefault(shard.set, []).append(_read_part(path))
    info = next(iter(by_set.values()))[0].model
    hashes = {part.model.get("sha256") for parts in by_set.values() for part in parts}
    if len(hashes) > 1:
        raise AtlasError(f"the shards of {model.id!r} come from different weights (SHA-256 "
                         f"{sorted(map(str, hashes))}); delete {plan.out / 'shards' / model.key} and rerun")
    found = {name: merged(part.accumulator for part in parts).result() for name, parts in by_set.items()}
    units = {f"{name}::{key}": np.asarray(value, np.float64) for name, metrics in found.items()
             for key, value in metrics.pop("per_unit", {}).items()}
    inputs = {s.name: {"kind": s.kind, "units": s.n_units, "texts_per_unit": s.arity} for s in plan.sets
              if s.name in by_set}
    document = {"chapter": "atlas", "model": info, "models": [info], "params": dict(plan.params), "inputs": inputs,
                "metrics": found, "per_unit": f"{model.key}.npz", "claims": [],
                "shards": {name: len(parts) for name, parts in by_set.items()}, "order": plan.models.index(model),
                "environment": results.environment(plan.device, started)}
    target = plan.out / f"{model.key}.json"
    paths.write_atomically(plan.out / f"{model.key}.npz", lambda tmp: np.savez(tmp, **units), suffix=".npz")
    text = json.dumps(results.to_jsonable(document), indent=1, allow_nan=False, ensure_ascii=False)
    paths.write_atomically(target, lambda tmp: tmp.write_text(text, encoding="utf-8"), suffix=".json")
    return target


def read(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The results of an atlas folder by model id: ``{"model": info, "metrics": {set: metrics with
    their per_unit}, "params": …}``; a folder without results is an AtlasError."""
    found = {}
    for path, document in results.atlas_documents(folder).items():
        document["metrics"] = as_arrays(document["metrics"])
        with np.load(path.parent / document["per_unit"]) as units:
            for key in units.files:
                name, unit_key = key.split("::", 1)
                document["metrics"][name].setdefault("per_unit", {})[unit_key] = units[key]
        found[document["model"]["id"]] = document
    if not found:
        raise AtlasError(f"atlas results folder {str(folder)!r} holds no results (*.json); run "
                         "`python -m embedding_geometry atlas` first or point atlas_results at its --out folder")
    return dict(sorted(found.items(), key=lambda item: (item[1]["model"]["source"] == "control", item[1]["order"])))


def as_arrays(tree: Any) -> Any:
    """Lists of numbers read back from JSON as float arrays (mappings kept, other values as they are)."""
    if isinstance(tree, Mapping):
        return {key: as_arrays(value) for key, value in tree.items()}
    if isinstance(tree, list) and tree and all(isinstance(v, (int, float, list)) for v in tree):
        try:
            return np.asarray(tree, dtype=float)
        except ValueError:
            return tree
    return tree
