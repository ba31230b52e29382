"""What the book covers of its five source texts: every figure, table and quantitative claim of
each seed, with its status, read from ``data/coverage/<chapter>.yaml``.

A status is one of :data:`STATUSES`: *reproduced* (the text's procedure runs here and gives a
result or a verdict), *partly* (something of it runs; ``why`` says what does not) or *not possible
offline* (``why`` says what it would need). Nothing is "missing" without a reason:
:func:`load` refuses an item that is not reproduced and gives no ``why``.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..core.errors import BookError

STATUSES = ("reproduced", "partly", "not possible offline")
SEEDS = {"000": "The Similarity Attractor", "001": "Layer by Layer", "002": "Inside the Cone",
         "003": "Attention heads (Halevi et al.)", "004": "Embeddings without tears"}
"""The five texts, by the number of their seed file (``seed:`` in a coverage file starts with it)."""


class CoverageError(BookError, ValueError):
    """A coverage file names an unknown status, or leaves a shortfall without its reason."""


def _folder() -> Path:
    return Path(str(resources.files("embedding_geometry") / "data" / "coverage"))


def load(folder: str | Path | None = None) -> list[dict[str, Any]]:
    """Every coverage item of every chapter, each with its chapter and seed, checked."""
    items = []
    for path in sorted(Path(folder or _folder()).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for item in data["items"]:
            if item.get("status") not in STATUSES:
                raise CoverageError(f"{path.name}: item '{item.get('id')}' has status {item.get('status')!r}; "
                                    f"expected one of {', '.join(STATUSES)}")
            if item["status"] != "reproduced" and not item.get("why"):
                raise CoverageError(f"{path.name}: item '{item.get('id') or item.get('what') or item.get('item')}' "
                                    f"is {item['status']} but gives no 'why'")
            number = str(data["seed"])[:3]
            if number not in SEEDS:
                raise CoverageError(f"{path.name}: seed {data['seed']!r} does not start with a seed's number "
                                    f"({', '.join(SEEDS)})")
            items.append({**item, "what": item.get("what") or item.get("item"), "chapter": data["chapter"],
                          "seed": f"{number} {SEEDS[number]}"})
    return items


def frame(items: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per item: the seed, what it is, its status and why, where in which chapter."""
    return pd.DataFrame([{"seed": item["seed"], "item": item["what"], "status": item["status"],
                          "why": item.get("why") or "—",
                          "where": f"{item['chapter']}, {item.get('where', '—').lstrip('# ')}"} for item in items])


def counts(items: list[Mapping[str, Any]]) -> pd.DataFrame:
    """Per seed, how many items are reproduced, partly reproduced and not possible offline."""
    table = frame(items).groupby(["seed", "status"]).size().unstack(fill_value=0)
    table = table.reindex(columns=list(STATUSES), fill_value=0).rename_axis(columns=None)
    return table.assign(total=table.sum(axis=1)).reset_index()
