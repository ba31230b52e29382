"""What the book covers of its five source texts: every figure, table and quantitative or causal
claim of each text, with its grade, read from each chapter's coverage file (:func:`files`: a chapter
package's ``coverage.yaml``).

A grade is one of :data:`STATUSES`: *reproduced* (the text's procedure runs here and gives a
result or a verdict), *partly* (something of it runs; ``why`` says what is missing), *missing*
(nothing of it runs yet; ``why`` says why not yet), *not possible offline* (``why`` names the model
or data it needs) or *untestable* (no run could decide it; ``why`` says why). :func:`load` refuses
an item that is not reproduced and gives no ``why``.

A coverage file lists one text's items for the chapter that covers it; an item judged in another
chapter names it (``chapter:``), and ``claims`` / ``errata`` name the entries of that chapter's
ledger that judge it.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..core.errors import BookError

STATUSES = ("reproduced", "partly", "missing", "not possible offline", "untestable")
TEXTS = {"001": "Layer by Layer: How Words Collapse Into a Sentence Vector",
         "000": "The Similarity Attractor: How Transformers Process Hard Negatives",
         "002": "Inside the Cone: Four Experiments on Embedding Anisotropy",
         "003": "Self-attention vector output similarities reveal how machines pay attention (Halevi et al.)",
         "004": "How Words Become Vectors: Embeddings Inside Transformers (Without Tears)"}
"""The five texts by the number of their seed file (``seed:`` in a coverage file starts with it),
in the order of the chapters that cover them (chapters 1, 2, 3, 4, 5–6)."""
ALL = "all five texts"


class CoverageError(BookError, ValueError):
    """A coverage file names an unknown status, or leaves a shortfall without its reason."""


COVERAGE = "coverage.yaml"
"""A chapter package's coverage file: ``chapters/<package>/coverage.yaml``."""


def files(folder: str | Path | None = None) -> list[Path]:
    """Every coverage file, in its chapter's order (its ``chapter:``, the slug): those in ``folder``,
    or each chapter package's ``coverage.yaml``."""
    if folder is not None:
        found = sorted(Path(folder).glob("*.yaml"))
    else:
        found = sorted(Path(str(resources.files("embedding_geometry"))).glob(f"chapters/*/{COVERAGE}"))
    return sorted(found, key=lambda path: (yaml.safe_load(path.read_text(encoding="utf-8"))["chapter"], path.name))


def path(slug: str) -> Path:
    """Chapter ``slug``'s packaged coverage file (:func:`files`); FileNotFoundError when it has none."""
    for found in files():
        if yaml.safe_load(found.read_text(encoding="utf-8"))["chapter"] == slug:
            return found
    raise FileNotFoundError(f"chapter {slug} has no coverage file")


def _checked(item: Mapping[str, Any], name: str) -> None:
    label = item.get("id") or item.get("what") or item.get("item")
    if item.get("status") not in STATUSES:
        raise CoverageError(f"{name}: item '{label}' has status {item.get('status')!r}; "
                            f"expected one of {', '.join(STATUSES)}")
    if item["status"] != "reproduced" and not item.get("why"):
        raise CoverageError(f"{name}: item '{label}' is {item['status']} but gives no 'why'")


def load(folder: str | Path | None = None) -> list[dict[str, Any]]:
    """Every coverage item of every file, each with its chapter and text, checked; items in the
    texts' order, each text's in its files' order."""
    items = []
    for path in files(folder):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        number = str(data["seed"])[:3]
        if number not in TEXTS:
            raise CoverageError(f"{path.name}: seed {data['seed']!r} does not start with a seed's number "
                                f"({', '.join(TEXTS)})")
        for item in data["items"]:
            _checked(item, path.name)
            items.append({**item, "what": item.get("what") or item.get("item"),
                          "chapter": item.get("chapter") or data["chapter"], "text": TEXTS[number]})
    order = list(TEXTS.values())
    return sorted(items, key=lambda item: order.index(item["text"]))


def frame(items: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per item: the text, what it is, its grade and why, where in which chapter."""
    return pd.DataFrame([{"text": item["text"], "item": item["what"], "status": item["status"],
                          "why": item.get("why") or "—",
                          "where": f"{item['chapter']}, {item.get('where', '—').lstrip('# ')}"} for item in items])


def counts(items: list[Mapping[str, Any]]) -> pd.DataFrame:
    """Per text (in the chapters' order), then over all five, how many items have each grade."""
    table = frame(items).groupby(["text", "status"]).size().unstack(fill_value=0)
    table = table.reindex(index=[t for t in TEXTS.values() if t in table.index], columns=list(STATUSES),
                          fill_value=0).rename_axis(index="text", columns=None)
    table.loc[ALL] = table.sum()
    return table.assign(total=table.sum(axis=1)).reset_index()
