"""The golden test: a build of the default profile on the embedded models keeps every metric within
the reproducibility contract of the reference build, and every verdict (book/methods.md, "Same
results on any machine"; :mod:`embedding_geometry.book.reproducibility`).

``tests/reference/golden.json.xz`` holds, per chapter, the metrics of a default build (without the
per-unit samples, which the metrics summarise; each list of resampling draws as its percentiles)
and every claim's verdict with its fragile flag (:func:`reproducibility.golden_record`), as JSON
compressed with xz (``xzcat`` reads it). It is written by ``benchmarks/float_paths.py --write-golden``
from the build on the book's own float path; rewriting it is a deliberate act, recorded in git with
the reason. The tolerances are the measured ones (``data/float_paths.json``), so the test passes on
another CPU and still fails when a change moves a number further than float noise can.
"""

from __future__ import annotations

import json
import lzma
import math
from pathlib import Path

import pytest

from embedding_geometry.book import reproducibility

GOLDEN = Path(__file__).parent / "reference" / "golden.json.xz"
MEGABYTES = 2.0
"""The most the reference may weigh: rewriting it is a deliberate act, and a reviewable one."""
PERTURBED = "threads=1,onednn=off,batch_size=7,isa=avx2"
"""Every perturbation of ``make tolerances`` at once: the golden test must pass on it too."""


def golden() -> dict:
    """The reference (:data:`GOLDEN`)."""
    return json.loads(lzma.decompress(GOLDEN.read_bytes()))


def verdict_changes(reference: dict, built: dict) -> list[str]:
    """Claims whose verdict differs from the reference's, unless either build marks it fragile."""
    found = []
    for key, ref in reference.items():
        mine = built.get(key)
        if mine is None:
            found.append(f"{key}: missing")
        elif mine["verdict"] != ref["verdict"] and not (mine["fragile"] or ref["fragile"]):
            found.append(f"{key}: {ref['verdict']} became {mine['verdict']}")
    return found


def golden_differences(reference: dict, results: dict[str, dict], tolerance: dict[str, float]) -> list[str]:
    """Every metric beyond the contract and every verdict changed, over the reference's chapters."""
    found = []
    for chapter, kept in reference["chapters"].items():
        if chapter not in results:
            found.append(f"{chapter}: no results")
            continue
        record = reproducibility.golden_record(results[chapter])
        found += [f"{chapter}.{d['path']} [{d['family']}]: {d['reference']!r} became {d['value']!r} "
                  f"(deviation {d['deviation']:.3g} > {d['tolerance']:.3g})"
                  for d in reproducibility.differences(chapter, kept["metrics"], record["metrics"], tolerance)]
        found += [f"{chapter}: {change}" for change in verdict_changes(kept["verdicts"], record["verdicts"])]
    return found


def test_a_changed_number_beyond_its_family_tolerance_is_found():
    tolerance = {"float": 1e-5, "share": 0.0, "count": 1e-3, "noise": 1.0, "exact": 0.0}
    reference = {"curve": [0.5, 1.0], "hist": [1000, 2000], "note": "x", "noise": 1e-6}
    within = {"curve": [0.5 + 5e-6, 1.0], "hist": [1001, 1999], "note": "x", "noise": 1e-6, "new": 1}
    assert reproducibility.differences("c", reference, within, tolerance) == []
    beyond = {"curve": [0.5, 1.001], "hist": [1010, 2000], "note": "y", "noise": 2e-4}
    found = {d["path"]: d["family"] for d in reproducibility.differences("c", reference, beyond, tolerance)}
    assert found == {"curve[1]": "float", "hist[0]": "count", "note": "exact", "noise": "float"}


def test_a_missing_metric_or_a_changed_verdict_fails_unless_fragile():
    reference = {"a@m": {"verdict": "holds", "fragile": None}, "b@m": {"verdict": "holds", "fragile": "margin"}}
    assert verdict_changes(reference, {"a@m": {"verdict": "holds", "fragile": None},
                                       "b@m": {"verdict": "inconclusive", "fragile": None}}) == []
    assert verdict_changes(reference, {"b@m": {"verdict": "holds", "fragile": None}}) == ["a@m: missing"]
    assert verdict_changes(reference, {"a@m": {"verdict": "does not hold", "fragile": None},
                                       "b@m": {"verdict": "holds", "fragile": None}}) == [
        "a@m: holds became does not hold"]


def test_the_reference_covers_every_measuring_chapter_and_no_per_unit_samples():
    reference = golden()
    chapters = {p.stem for p in (Path(__file__).parents[1] / "notebooks").glob("0*.ipynb")}
    assert set(reference["chapters"]) == chapters
    assert all("per_unit" not in kept["metrics"] for kept in reference["chapters"].values())
    assert reference["about"]["profile"] == "default" and reference["about"]["float_path"] == ""


def test_the_reference_is_small_and_keeps_draws_as_percentiles():
    assert GOLDEN.stat().st_size <= MEGABYTES * 1e6
    longest = max(len(leaf) for kept in golden()["chapters"].values() for leaf in lists(kept["metrics"]))
    assert longest < 20000, "a list of draws was kept whole: see reproducibility.DRAWS"


def lists(tree) -> list[list]:
    """Every list in a metrics tree."""
    if isinstance(tree, dict):
        return [found for value in tree.values() for found in lists(value)]
    if isinstance(tree, list):
        return [tree, *[found for value in tree for found in lists(value)]]
    return []


def test_draws_are_compared_by_their_percentiles_whatever_their_order():
    draws = [i / 1000 for i in range(2000)]
    metrics = {"x_draws": draws, "counts": {"y_null": [3, 1, 2]}}
    reference = {"chapters": {"c": reproducibility.golden_record({"metrics": metrics})}}
    kept = reference["chapters"]["c"]["metrics"]
    assert len(kept["x_draws"]) == 101 and kept["x_draws"][::50] == [0.0, 1.0, 1.999]
    assert kept["counts"]["y_null"] == sorted(kept["counts"]["y_null"]) and {1, 2, 3} == set(kept["counts"]["y_null"])
    tolerance = {**reproducibility.FLOORS, "float": 1e-3}
    for same in ({"x_draws": draws[::-1], "counts": {"y_null": [2, 3, 1]}},
                 {"x_draws": [x + 1e-3 for x in draws], "counts": {"y_null": [1, 2, 3]}}):
        assert golden_differences(reference, {"c": {"metrics": same}}, tolerance) == []
    moved = {"x_draws": [x + 0.01 for x in draws[:1000]] + draws[1000:], "counts": {"y_null": [1, 2, 4]}}
    found = golden_differences(reference, {"c": {"metrics": moved}}, tolerance)
    assert "c.x_draws[0] [float]: 0.0 became 0.01 (deviation 0.005 > 0.001)" in found
    assert "c.counts.y_null[100] [count]: 3 became 4 (deviation 0.00495 > 0)" in found


def test_the_measured_tolerances_cover_every_perturbation_with_the_stated_margin():
    figures = reproducibility.figures()
    assert figures is not None, "data/float_paths.json is missing: run make tolerances"
    for name, found in figures["perturbations"].items():
        for family, worst in found["largest"].items():
            allowed = figures["tolerances"][family]
            if family == "noise":  # a log10 ratio: the margin adds log10 MARGIN decades
                assert worst["max"] + math.log10(reproducibility.MARGIN) <= allowed, (name, family)
                continue
            if family == "depth":  # whole steps, no margin: the largest step measured
                assert worst["max"] <= allowed, (name, family)
                continue
            assert worst["max"] * reproducibility.MARGIN <= allowed * (1 + 1e-9) or worst["max"] == 0, (name, family)
        assert found["golden"] == [], f"the golden test failed on the {name} build: {found['golden'][:5]}"


def assert_within_the_contract(results_folder: Path) -> None:
    results = {p.stem: json.loads(p.read_text()) for p in results_folder.glob("*.json")}
    found = golden_differences(golden(), results, reproducibility.tolerances())
    assert not found, f"{len(found)} differences beyond the contract, e.g.:\n" + "\n".join(found[:20])


@pytest.mark.slow
def test_every_chapter_metric_and_verdict_is_within_the_contract(default_book):
    """A fresh build of the default profile on this machine's own float path (shared with
    test_reliability's determinism test)."""
    root, result = default_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert_within_the_contract(root / "build" / "results")


@pytest.mark.slow
@pytest.mark.tolerances
def test_the_perturbed_build_of_make_tolerances_is_within_the_contract():
    """The default profile over every perturbation at once (:data:`PERTURBED`), as ``make tolerances``
    builds it in ``build/float-paths/perturbed`` (built here when missing). Not in ``make test``:
    the tiny-model book covers the perturbed path there (test_reproducibility)."""
    import float_paths

    assert float_paths.PATHS["perturbed"] == PERTURBED
    float_paths.build("perturbed", PERTURBED, "default", fresh=False)
    assert_within_the_contract(float_paths.FOLDER / "perturbed" / "build" / "results")


def test_golden_differences_reads_results_as_the_build_writes_them():
    results = {"c": {"metrics": {"x": [1.0, 2.0], "per_unit": {"x": [[1.0]]}},
                     "claims": [{"id": "k", "model": "m", "verdict": "holds", "fragile": None}]}}
    reference = {"chapters": {"c": reproducibility.golden_record(results["c"])}}
    assert "per_unit" not in reference["chapters"]["c"]["metrics"]
    assert golden_differences(reference, results, reproducibility.FLOORS) == []
    results["c"]["metrics"]["x"][1] = 2.5
    assert golden_differences(reference, results, {**reproducibility.FLOORS, "float": 1e-3}) == [
        "c.x[1] [float]: 2.0 became 2.5 (deviation 0.25 > 0.001)"]
