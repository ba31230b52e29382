"""Same results on any machine: the reproducibility contract, its families of numbers, and the
tolerances measured over perturbed float paths.

A rerun of the book on another machine (another CPU, another number of cores) takes another
float path (:mod:`embedding_geometry.core.float_path`) and so computes slightly different
numbers. The **contract** says how different, one rule per family of number; every metric
leaf of a results JSON belongs to one family (:data:`FAMILIES`, first match wins, else by type):

=========  ===============================================================================
family     a rerun's value b against the reference value a
=========  ===============================================================================
float      results of float32 forward passes and what is computed from them:
           |a − b| ≤ ε_float · s, with s the scale of the array the number belongs to
           (max |x| over its innermost list of numbers; |a| for a lone number)
share      shares and positions past a threshold (recall@k, the share of dimensions or heads
           past a bound, a peak's relative depth): |a − b| ≤ ε_share, an absolute fraction of
           the population counted (one sentence of 24 is 0.042)
count      whole counts past a threshold (histogram bins): |a − b| ≤ ε_count · N, with N the
           total of the count's list (the population binned), and N = max(|a|, 1) for a lone count
noise      numbers that measure float noise itself (the largest difference between two batch
           sizes): the same order of magnitude, |log₁₀ |a| − log₁₀ |b|| ≤ ε_noise
exact      text, truth values, token counts and other integers from the tokenizer: equal
timing     wall-clock times (texts per second in chapters 5 and 6, a copy's training seconds in
           chapter 7): the machine's, not the arithmetic's — recorded, never compared
trained    float results of gradient training (chapter 7's copies, chapter 6's fine-tuning):
           as float, with its own ε_trained. Each step's update feeds the next, so a training
           run carries the last bits of the arithmetic forward and amplifies them; what
           another CPU's kernels do to them is measured separately from a forward pass's
depth      the ends of chapter 7's depth intervals, read off resampled draws of trained copies:
           a depth index moves in whole steps, |a − b| ≤ ε_depth depths, ε_depth the largest
           step measured (no margin); the same ends as shares of the depths (share_interval)
           move by one depth's share, and the exact sign-flip p-values over seeds beside them
           by steps of 2 / 2ⁿ, which ε_depth ≥ 1 always allows: these are recorded, not
           compared (their depth indices and the verdicts are)
=========  ===============================================================================

A lone cosine (a mean cosine, an anisotropy, a margin between cosines) has the scale of a cosine,
s = max(|a|, 1): its float error is absolute, so a centred anisotropy of 2·10⁻⁵ is not held to
a relative rule that a change of 10⁻⁴ would break by a factor of five (:data:`COSINES`). A
``value`` stored beside its ``interval`` has at least the interval's width as its scale: a
difference of 10⁻⁶ whose interval spans 10⁻³ is compared on that span.

No metric is stored rounded, so no family needs a rule for rounding: a value is compared before
any rounding the page applies to it.

**Measured, not guessed.** ``make tolerances`` (``benchmarks/float_paths.py``) builds the book
on its own path and on a perturbed one (every perturbation at once) and records, per family, the largest deviation each
perturbation caused and the claims whose verdict changed (its ``measure``). Each ε is
:data:`MARGIN` times the largest deviation measured, rounded up to the next 1, 2 or 5 times a
power of ten (its ``round_up``), and never below the family's floor (:data:`FLOORS`). The figures
live in ``data/float_paths.json`` (:data:`FIGURES`); the golden test and the claims engine read
them (:func:`tolerances`).

**Fragile verdicts.** A verdict is *fragile* when a perturbed build gave it another verdict
(recorded in the figures, :func:`flipped`) or when its own p lies within twice its Monte Carlo
error of the threshold (:func:`embedding_geometry.book.claims.judge.decide`): float noise or the
resamples could flip it. No blanket ε decides it.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any


FIGURES = Path(str(resources.files("embedding_geometry") / "data" / "float_paths.json"))
"""The measured figures (written by ``make tolerances``, read by the golden test and the build)."""

MARGIN = 10.0
"""How many times the largest measured deviation a tolerance allows, before rounding up."""

FLOORS = {"float": 1e-6, "share": 0.0, "count": 0.0, "noise": 1.0, "exact": 0.0, "timing": 0.0, "trained": 1e-6,
          "depth": 0.0}
"""The least each tolerance may be: float32 keeps about 7 significant digits (ε_float, ε_trained
≥ 10⁻⁶); a number that measures noise may move by one order of magnitude (ε_noise ≥ 1)."""

FAMILIES: list[tuple[str, str, str]] = [
    # (chapter glob, key-path glob, family); the first match wins, then the type decides
    ("00_the_model", "exercises.batch_size_1_max_abs_diff", "noise"),
    ("00_the_model", "meanpool_vs_model.*max_abs_diff", "noise"),
    ("05_embeddings_without_tears", "library.padding_max_abs_diff", "noise"),
    ("05_embeddings_without_tears", "library.max_norm_deviation", "noise"),
    ("05_embeddings_without_tears", "library.meanpool_vs_model.*", "noise"),
    ("0[56]_*", "*texts_per_second", "timing"),  # a speed timed on the machine: not the arithmetic's
    ("07_training_objective", "*cpu_seconds*", "timing"),  # a copy's training time: the machine's
    ("*", "*distance_histogram*", "count"),  # histograms of pair distances, stored as floats
    ("*", "*peak_write_last_two*", "share"),  # the share of dimensions whose largest write is late
    ("*", "*same_sentence_fraction*", "share"),  # the share of a head's high pairs within one sentence
    ("07_training_objective", "*depth_interval*", "depth"),  # interval ends of resampled depth indices
    ("07_training_objective", "*share_interval*", "depth"),  # the same ends as shares of the depths
    ("07_training_objective", "*p_value*", "depth"),  # exact sign-flip p over seeds: steps of 2 / 2^n
    ("*", "per_unit.*", "float"),
    ("*", "recall_at_k.*", "share"),
]
"""Metrics whose family their type does not tell (see the module docstring)."""

COSINES = ("*anisotropy*", "*cosine*", "*_cos", "*.cos_*", "*mean_cos*", "*margin*")
"""Key-path globs of lone numbers that are cosines, means of cosines or margins between cosines:
scale max(|a|, 1)."""

TRAINED: list[tuple[str, str]] = [
    ("07_training_objective", "*"),  # every copy is trained: its geometry, losses and retrieval
    ("06_search_in_practice", "*finetune*"),  # Fix 2: the article's fine-tuning and its working variant
]
"""(chapter glob, key-path glob) of the float metrics that come out of gradient training: family
``trained`` instead of ``float``."""


# --------------------------------------------------------------------------- leaves and families

def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any, float | None, float | None]]:
    """Every leaf of a metrics tree as (key path, value, scale, total): for a number in a list of
    numbers, ``scale`` is the largest |x| of that list and ``total`` the sum of its |x|; for a
    lone number both are |x| (the scale of a lone cosine, :data:`COSINES`, at least 1; of a
    ``value`` beside its ``interval``, at least the interval's width); None for text, truth
    values and None."""
    if isinstance(tree, Mapping):
        width = _width(tree.get("interval"))
        for key, value in tree.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "value" and width and _number(value):  # a value beside its interval: that scale
                yield here, value, max(abs(value), width), abs(value)
            else:
                yield from leaves(value, here)
    elif isinstance(tree, list):
        numbers = [x for x in tree if _number(x)]
        scale = max((abs(x) for x in numbers), default=None)
        total = sum(abs(x) for x in numbers) if numbers else None
        for i, value in enumerate(tree):
            if _number(value):
                yield f"{path}[{i}]", value, scale, total
            else:
                yield from leaves(value, f"{path}[{i}]")
    else:
        scale = abs(tree) if _number(tree) else None
        if scale is not None and any(fnmatch.fnmatchcase(path, glob) for glob in COSINES):
            scale = max(scale, 1.0)
        yield path, tree, scale, (abs(tree) if _number(tree) else None)


def _width(interval: Any) -> float | None:
    """The width of a two-number interval, else None."""
    ok = isinstance(interval, list) and len(interval) == 2 and all(_number(x) for x in interval)
    return abs(interval[1] - interval[0]) if ok else None


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def family(chapter: str, path: str, value: Any) -> str:
    """The family of one metric leaf (see the module docstring)."""
    bare = path.split("[", 1)[0]

    def matches(chapter_glob: str, path_glob: str) -> bool:
        return fnmatch.fnmatchcase(chapter, chapter_glob) and (fnmatch.fnmatchcase(bare, path_glob)
                                                               or fnmatch.fnmatchcase(path, path_glob))

    found = next((name for chapter_glob, path_glob, name in FAMILIES if matches(chapter_glob, path_glob)), None)
    if found is None and isinstance(value, float) or found == "float":
        return "trained" if any(matches(*rule) for rule in TRAINED) else "float"
    if found is not None:
        return found
    if isinstance(value, int) and not isinstance(value, bool):
        return "count"
    return "exact"


def deviation(name: str, a: Any, b: Any, scale: float | None, total: float | None) -> float:
    """How far ``b`` is from the reference ``a`` in family ``name``'s measure (0 when equal;
    inf when the two are not comparable: another type, or a number that became None; always 0
    for a timing, which is the machine's and not the arithmetic's)."""
    if name == "timing":
        return 0.0
    if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (_number(a) and _number(b)) or math.isnan(a) or math.isnan(b):
        return math.inf
    if name == "exact":
        return math.inf
    if name == "noise":
        return abs(math.log10(max(abs(a), 1e-300)) - math.log10(max(abs(b), 1e-300)))
    if name in ("share", "depth"):
        return abs(a - b)
    if name == "count":
        return abs(a - b) / max(total or 0.0, abs(a), 1.0)
    return abs(a - b) / max(scale or 0.0, abs(a), 1e-300)


# --------------------------------------------------------------------------- comparing two builds

def differences(chapter: str, reference: Any, value: Any, tolerance: Mapping[str, float]) -> list[dict[str, Any]]:
    """Every leaf of ``value`` that deviates from ``reference`` beyond its family's tolerance
    (or is missing, or changed shape): dicts with path, family, reference, value, deviation,
    tolerance. New leaves in ``value`` are allowed."""
    found = []
    mine = {path: v for path, v, _, _ in leaves(value)}
    for path, a, scale, total in leaves(reference):
        name = family(chapter, path, a)
        if path not in mine:
            found.append({"path": path, "family": name, "reference": a, "value": "missing", "deviation": math.inf,
                          "tolerance": tolerance.get(name, 0.0)})
            continue
        d = deviation(name, a, mine[path], scale, total)
        if d > tolerance.get(name, 0.0):
            found.append({"path": path, "family": name, "reference": a, "value": mine[path], "deviation": d,
                          "tolerance": tolerance.get(name, 0.0)})
    return found


def claim_records(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{"<claim id>@<model>": {verdict, fragile}}`` of one results JSON: its claims, and the
    per-model verdicts of a chapter that judges its ledger on several models."""
    found = {}
    for model, claims in (results.get("metrics", {}).get("verdicts_by_model") or {}).items():
        for c in claims if isinstance(claims, list) else []:
            found[f"{c['id']}@{model}"] = {"verdict": c.get("verdict"), "fragile": c.get("fragile")}
    for c in results.get("claims") or []:
        found[f"{c['id']}@{c.get('model')}"] = {"verdict": c.get("verdict"), "fragile": c.get("fragile")}
    return found


DRAWS = ["*draws", "*_permutations", "*_null", "*resampled.*"]
"""Key-path globs of the resampling draws a results JSON keeps (bootstrap, permutation and null
draws, up to 20,000 each): :func:`golden_record` keeps their percentiles (:func:`percentiles`)."""


def golden_record(results: Mapping[str, Any]) -> dict[str, Any]:
    """What the golden test keeps of one results JSON: its metrics without the per-unit samples
    (the metrics summarise them; the verdicts rest on them), each list of draws (:data:`DRAWS`) as
    its percentiles, and every claim's verdict."""
    metrics = {key: draws_as_percentiles(value, key) for key, value in results["metrics"].items() if key != "per_unit"}
    return {"metrics": metrics, "verdicts": claim_records(results)}


def draws_as_percentiles(tree: Any, path: str = "") -> Any:
    """A copy of a metrics tree with every list of numbers under a :data:`DRAWS` path replaced by
    its :func:`percentiles`.

    Draws are exchangeable: their order means nothing, their distribution is what a p-value or
    an interval reads, and the value and interval the book shows are metrics of their own. The
    percentiles keep the reference 200 times smaller (a reference of every draw was 20 MB) and
    lose nothing the contract compares: the k-th order statistic moves no further than the
    furthest-moved draw, so a build whose draws are all within a family's tolerance still passes
    (the 0th and 100th percentiles keep the list's scale, max |x|; integer draws, family count,
    are held to the percentiles' smaller total, which is stricter), and one that shifts or
    stretches their distribution beyond it still fails."""
    if isinstance(tree, Mapping):
        return {key: draws_as_percentiles(value, f"{path}.{key}" if path else key) for key, value in tree.items()}
    if isinstance(tree, list):
        if tree and all(_number(x) for x in tree) and any(fnmatch.fnmatchcase(path, glob) for glob in DRAWS):
            return percentiles(tree)
        return [draws_as_percentiles(value, f"{path}[{i}]") for i, value in enumerate(tree)]
    return tree


def percentiles(values: list[float]) -> list[float]:
    """The order statistics of ``values`` nearest to the 0th, 1st, …, 100th percentile: draws
    themselves, so integer draws stay integers (family ``count``), and the 0th and 100th are the
    least and the largest."""
    ordered = sorted(values)
    return [ordered[round(k * (len(ordered) - 1) / 100)] for k in range(101)]


# --------------------------------------------------------------------------- reading the figures

def figures(path: Path | None = None) -> dict[str, Any] | None:
    """The measured figures (:data:`FIGURES`), or None when none were measured."""
    path = path or FIGURES
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def tolerances(path: Path | None = None) -> dict[str, float]:
    """The contract's tolerances: the measured ones, else the floors."""
    found = figures(path)
    return {**FLOORS, **(found or {}).get("tolerances", {})}


def flipped(chapter: str, claim: str, model: str, path: Path | None = None) -> list[str]:
    """The perturbations (by name) under which this claim's verdict changed in the measured builds."""
    found = figures(path) or {}
    key = f"{claim}@{model}"
    return [name for name, flips in found.get("verdict_changes", {}).items()
            if any(f["chapter"] == chapter and f["claim"] == key for f in flips)]
