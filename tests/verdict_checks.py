"""What every verdict record of a build must carry (book/methods.md, "How a verdict is made"): a
counted verdict its kind, interval method, null (or why it has none), raw and adjusted result,
sensitivity where its bound was derived or typed, and an interval of non-zero width; a census its
label and no counted verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from embedding_geometry.book.claims import ledger, shape_tests

SET_BOUNDS = ("fraction", "typed")
"""Bounds the ledger sets (a share of the published value, or a number typed in): they report
the bound at which the verdict would change."""


def problems(record: Mapping[str, Any]) -> list[str]:
    """What ``record`` lacks, in words (empty when it carries everything it must)."""
    if record.get("status") == "census":
        return [] if not record.get("counted") and record.get("outcome") is None else ["a census counted as a verdict"]
    if not record.get("counted"):
        return []
    found = []
    if record.get("kind") not in ledger.KINDS:
        found.append(f"kind {record.get('kind')!r}")
    if not record.get("interval_method"):
        found.append("no interval method")
    null = record.get("null")
    if not null and not record.get("no_null"):
        found.append("neither a null nor why it has none")
    if null and not (null.get("difference") or null.get("note")):
        found.append("a null with neither a difference interval nor a note")
    if record.get("raw") not in shape_tests.OUTCOMES or record.get("outcome") not in shape_tests.OUTCOMES:
        found.append(f"raw {record.get('raw')!r}, adjusted {record.get('outcome')!r}")
    if (record.get("sensitivity") is not None) != ((record.get("bound") or {}).get("source") in SET_BOUNDS):
        found.append("a sensitivity without a set bound, or a set bound without one")
    interval = record.get("interval")
    if not interval or not interval[1] > interval[0]:
        found.append(f"interval {interval} of zero width")
    return found
