"""The claims as values glued for a chapter's prose (myst-nb ``glue``), and read back.

Chapters show their numbers as cell outputs (:func:`.words.report`); a chapter still on glue
quotes a claim's number by name in its text, from :func:`prose_values` and
:func:`markdown_values`, which :meth:`~embedding_geometry.book.chapter.Chapter.finish` glues.
:func:`glued_text` reads a glued text back from an executed notebook (what a test checks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import words
from .judge import NOT_MEASURED


def glued_text(notebook: str | Path, name: str = "claims_summary") -> str | None:
    """The Markdown (or plain text) glued under ``name`` in an executed notebook, or None."""
    document = json.loads(Path(notebook).read_text())
    for cell in document.get("cells", []):
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == name:
                data = output.get("data", {})
                kinds = [f"{prefix}text/{kind}" for kind in ("markdown", "plain")
                         for prefix in ("", "application/papermill.record/")]
                text = next((data[kind] for kind in kinds if kind in data), "")
                return "".join(text) if isinstance(text, list) else text
    return None


def _key(record: Mapping[str, Any]) -> str:
    return record["id"].replace("-", "_")


def prose_values(items: Iterable[Any]) -> dict[str, str]:
    """Text for a chapter's prose, per claim id (``-`` becomes ``_``): ``run_`` this run's value,
    ``pub_`` the published value, ``shape_`` and ``verdict_`` the verdict word, ``interval_``,
    ``null_``, ``depth_``, ``test_`` and ``result_`` (the test with its result inline)."""
    values = {}
    for r in words.as_records(items):
        key = _key(r)
        values[f"run_{key}"] = words.number(r["measured"]) if r.get("measured") is not None else NOT_MEASURED
        values[f"pub_{key}"] = words.number(r["published"]["value"]) if r.get("published") else "—"
        values[f"shape_{key}"] = values[f"verdict_{key}"] = words.verdict_of(r)
        values[f"interval_{key}"] = words.interval_text(r)
        values[f"null_{key}"] = words.null_text(r)
        values[f"depth_{key}"] = r.get("depth") or "—"
        values[f"test_{key}"] = r.get("test") or "—"
        values[f"result_{key}"] = words.result_text(r)
    return values


def markdown_values(items: Iterable[Any]) -> dict[str, Any]:
    """``IPython.display.Markdown`` objects to glue: ``findings`` (the box), ``claims_summary``,
    ``verdict_legend`` and one ``sentence_<id>`` per claim."""
    from IPython.display import Markdown

    found = words.as_records(items)
    values = {f"sentence_{_key(r)}": Markdown(words.sentence(r)) for r in found}
    values.update(findings=Markdown(words.findings(found)), claims_summary=Markdown(words.chapter_summary(found)),
                  verdict_legend=Markdown(words.legend()))
    return values
