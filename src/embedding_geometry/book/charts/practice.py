"""The tables both practice chapters (5 and 6) show, and how the book shows a table there
(:func:`shown`: human column names, four significant digits, "—" for a missing value, yes / no
for a truth value): the judged query set, the statements no measurement decides, the errata.
Each chapter's own tables and charts are in its package (``chapters/ch05_without_tears/charts.py``,
``chapters/ch06_search/charts.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import yaml

from ..claims import ledger
from ..claims.words import number
from ..pages import HtmlTable, errata_table


def cell(value: object) -> str:
    """One table cell as the book writes it: a number to four significant digits (never "-0"),
    a missing value (None, NaN) as "—", a truth value as yes / no, text as it is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return number(float(value)) if isinstance(value, (float, np.floating)) else str(int(value))
    return str(value)


def shown(frame: pd.DataFrame, index: str | None = None) -> HtmlTable:
    """``frame`` as a table on the page, every cell through :func:`cell`; with ``index`` (its
    column title), the index becomes the first column."""
    if index is not None:
        frame = frame.rename_axis(index).reset_index()
    return HtmlTable(frame.astype(object).map(cell))


METRIC_NAMES = {
    "anisotropy": "anisotropy (mean cos)",
    "isotropy_score": "the article's score",
    "recall_at_1": "recall@1",
    "recall_at_5": "recall@5",
    "recall_at_10": "recall@10",
    "ndcg_at_10": "nDCG@10",
}
"""How a retrieval or isotropy metric reads in a table (chapter 5's transforms, chapter 6's hybrid methods)."""


# --------------------------------------------------------------------------- the query set


def query_summary(queries: Mapping[str, list]) -> HtmlTable:
    """Per kind of query (keyword, paraphrase): how many, and relevant sentences per query."""
    frame = pd.DataFrame({"kind": queries["kinds"], "relevant": [len(r) for r in queries["relevant"]]})
    table = frame.groupby("kind").agg(queries=("relevant", "size"), relevant=("relevant", "mean"))
    return shown(table.rename(columns={"relevant": "relevant sentences per query"}), "kind of query")


# --------------------------------------------------------------------------- what no measurement decides


def untested_table(slug: str) -> HtmlTable:
    """The statements of a chapter's ledger (``untested``) that no measurement of the chapter can
    decide: statement, source and why."""
    items = yaml.safe_load(ledger.path(slug).read_text(encoding="utf-8")).get("untested", [])
    return HtmlTable(
        pd.DataFrame(items, columns=["statement", "source", "reason"]).rename(columns={"reason": "why not"})
    )


ERRATA_COLUMNS = {
    "statement": "the article says",
    "prose_value": "its value",
    "data_value": "its own code or tables give",
    "evidence": "evidence",
}


def errata_shown(ledger) -> HtmlTable:
    """The ledger's errata (``pages.errata_table``) as a table on the page: every cell whole (a
    DataFrame's own display cuts long text), human column titles, no row numbers."""
    return shown(errata_table(ledger).rename(columns=ERRATA_COLUMNS))
