"""The chapter skeleton moved every computation out of the notebooks into ``src``; this test shows
that the move changed no number. A build of the default profile on the embedded model must
reproduce, to 1e-6, every metric that the notebooks computed before the move
(``tests/reference/metrics.json``: the ``metrics`` of each results JSON of the build of commit
bd91b16, chapter by chapter). New metrics may be added; none may change or disappear.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import copy_book, run_build

REFERENCE = json.loads((Path(__file__).parent / "reference" / "metrics.json").read_text())

DERIVED: dict[str, list[str]] = {"05_embeddings_without_tears": ["06_search_in_practice"]}
"""Chapters that took over part of an older chapter's metrics (a split): old slug → new slugs."""

CHANGED: dict[str, dict[str, str]] = {
    "05_embeddings_without_tears": {
        "isotropy_article_models.all-mpnet-base-v2": "the default profile runs all-mpnet-base-v2 in this chapter "
                                                     "(30267a3): the article's mpnet row is measured, no longer None",
    },
}
"""Metrics changed on purpose (issue 15's fixes, a profile that measures more): {old chapter slug:
{key path prefix: reason}}. The comparison skips them."""


def unchanged(chapter: str, difference: str) -> bool:
    """False for a difference (``.a.b: …``) under a key prefix that CHANGED lists for ``chapter``."""
    path = difference.lstrip(".").split(":", 1)[0]
    return not any(path == prefix or path.startswith(prefix + ".") for prefix in CHANGED.get(chapter, {}))


def merged(parts: list[dict]) -> dict:
    """The metrics of a split chapter's parts as one dict; a key both parts hold as a mapping
    (their ``exercises``) is merged one level down."""
    out: dict = {}
    for part in parts:
        for key, value in part.items():
            both = isinstance(value, dict) and isinstance(out.get(key), dict)
            out[key] = {**out[key], **value} if both else value
    return out


def differences(reference, value, path: str = "") -> list[str]:
    """Where ``value`` differs from ``reference`` (numbers to 1e-6, absolute or relative)."""
    if isinstance(reference, dict):
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        return [d for key, ref in reference.items()
                for d in (differences(ref, value[key], f"{path}.{key}") if key in value else [f"{path}.{key}: missing"])]
    if isinstance(reference, list):
        if not isinstance(value, list) or len(value) != len(reference):
            return [f"{path}: expected a list of {len(reference)}"]
        return [d for i, (r, v) in enumerate(zip(reference, value)) for d in differences(r, v, f"{path}[{i}]")]
    if isinstance(reference, (int, float)) and not isinstance(reference, bool):
        ok = isinstance(value, (int, float)) and math.isclose(reference, value, rel_tol=1e-6, abs_tol=1e-6)
        return [] if ok else [f"{path}: {reference!r} became {value!r}"]
    return [] if reference == value else [f"{path}: {reference!r} became {value!r}"]


def test_a_split_chapters_parts_merge_their_exercises():
    assert merged([{"a": 1, "exercises": {"x": 1}}, {"b": 2, "exercises": {"y": 2}}]) == {
        "a": 1, "b": 2, "exercises": {"x": 1, "y": 2}}


def test_differences_finds_changed_missing_and_reshaped_values():
    reference = {"a": [0.5, 1.0], "b": {"c": "x"}, "d": 2}
    assert differences(reference, {"a": [0.5, 1.0 + 1e-9], "b": {"c": "x"}, "d": 2, "new": 1}) == []
    assert differences(reference, {"a": [0.5, 1.1], "b": {"c": "x"}, "d": 2}) == [".a[1]: 1.0 became 1.1"]
    assert differences(reference, {"a": [0.5], "b": {}, "d": 2}) == [".a: expected a list of 2", ".b.c: missing"]


def test_changed_prefixes_are_skipped_and_nothing_else():
    chapter = "05_embeddings_without_tears"
    assert not unchanged(chapter, ".isotropy_article_models.all-mpnet-base-v2: None became 0.98")
    assert unchanged(chapter, ".isotropy_article_models.all-mpnet-base-v2x: 1 became 2")
    assert unchanged(chapter, ".isotropy_score: 0.98 became 0.5") and unchanged("01_layer_by_layer", ".anything: 1 became 2")


@pytest.mark.slow
def test_every_chapter_metric_is_unchanged_on_the_embedded_model(tmp_path):
    root = copy_book(tmp_path / "book")
    result = run_build(root, "--profile", "default", "--no-site")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    built = {path.stem: json.loads(path.read_text())["metrics"] for path in (root / "build" / "results").glob("*.json")}
    found = []
    for chapter, reference in REFERENCE.items():
        parts = [built.get(slug, {}) for slug in [chapter, *DERIVED.get(chapter, [])]]
        found += [f"{chapter}{d}" for d in differences(reference, merged(parts)) if unchanged(chapter, d)]
    assert not found, f"{len(found)} metrics changed, e.g.:\n" + "\n".join(found[:20])
