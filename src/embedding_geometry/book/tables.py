"""How the book shows a table: every DataFrame (or Series, or pandas Styler) a chapter displays
reaches the page through :func:`frame_html`, registered with IPython by
``charts.use_theme()``, so that no page shows a machine's formatting.

- A missing value (None, NaN, NaT) reads "—"; True and False read "yes" and "no"; a mapping
  reads "key: value; …" and a list "a, b, c".
- Numbers are rounded per column: a column whose values are all whole numbers shows them as
  integers ("3072", not "3072.0"); otherwise every value gets the same number of decimals,
  4 when the column's largest magnitude is below 10, one fewer per power of ten above it (at
  least 0); a value that would round to zero but is not zero is shown with three significant
  digits ("1.52e-05"), and a zero never carries a sign ("0.0000", not "-0.0000").
- Column and index names read as words ("relevant_per_query" → "relevant per query").
- The table sits in a box that scrolls sideways when it is wider than the column, so that its
  words never break; ``frame.attrs["fold"]`` (a summary line) folds it under that line, and the
  columns named in ``frame.attrs["code"]`` show their values as they are, in code font (a
  parameter's Python literal).
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

MISSING = "—"
SHORT = 14
"""Cells of at most this many characters are kept on one line."""


def is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def column_decimals(values: pd.Series) -> int | None:
    """Decimals for a column of numbers: None when every finite value is whole, else
    max(0, 4 − ⌊log10 max |x|⌋) for max |x| ≥ 10, and 4 below."""
    finite = [float(v) for v in values if isinstance(v, numbers.Real) and not isinstance(v, bool)
              and not is_missing(v) and math.isfinite(float(v))]
    if not finite:
        return None
    if all(v.is_integer() and abs(v) < 1e15 for v in finite):
        return None
    largest = max(abs(v) for v in finite)
    return 4 if largest < 10 else max(0, 4 - int(math.floor(math.log10(largest))))


def number_text(value: float, decimals: int | None) -> str:
    """One number as the column's ``decimals`` (None: a whole number) write it."""
    value = float(value)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if decimals is None:
        return f"{int(round(value))}"
    text = f"{value:.{decimals}f}"
    if value != 0 and float(text) == 0:  # a small value that would read as zero
        return f"{value:.3g}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def cell_text(value: Any, decimals: int | None = None) -> str:
    """One cell as text (see the module docstring)."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "; ".join(f"{human(key)}: {cell_text(item)}" for key, item in value.items()) or MISSING
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
        return ", ".join(cell_text(item, column_decimals(pd.Series(items))) for item in items) or MISSING
    if is_missing(value):
        return MISSING
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        if decimals is None and math.isfinite(float(value)) and not float(value).is_integer():
            return f"{float(value):.4g}"  # a number on its own: four significant digits
        return number_text(value, decimals)
    return str(value)


def human(name: Any) -> str:
    """A column or index name as words: underscores become spaces; a tuple (a MultiIndex
    column) is joined with " · "; None is empty."""
    if name is None:
        return ""
    if isinstance(name, tuple):
        return " · ".join(human(part) for part in name if part not in (None, ""))
    return str(name).replace("_", " ")


def _cell(tag: str, text: str, numeric: bool = False, scope: str = "", code: bool = False) -> str:
    classes = " ".join(c for c in ("eg-num" if numeric else "", "eg-nowrap" if len(text) <= SHORT else "") if c)
    attributes = (f' scope="{scope}"' if scope else "") + (f' class="{classes}"' if classes else "")
    content = f"<code>{html.escape(text)}</code>" if code else html.escape(text)
    return f"<{tag}{attributes}>{content}</{tag}>"


def frame_html(frame: pd.DataFrame | pd.Series, index: bool | None = None, classes: str = "eg-table") -> str:
    """``frame`` as the book's HTML table (see the module docstring). ``index`` shows the index
    as the first column(s); by default, unless it is a plain 0..n−1 range."""
    if isinstance(frame, pd.Series):
        frame = frame.to_frame(name="value" if frame.name is None else frame.name)
    if index is None:
        index = not (isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1)
    names = [human(n) for n in frame.index.names] if index else []
    code = set(frame.attrs.get("code", []))
    decimals = {c: column_decimals(frame.iloc[:, i]) for i, c in enumerate(frame.columns)}
    numeric = {c: pd.api.types.is_numeric_dtype(frame.iloc[:, i]) and not pd.api.types.is_bool_dtype(frame.iloc[:, i])
               for i, c in enumerate(frame.columns)}
    head = "".join(_cell("th", n, scope="col") for n in names)
    head += "".join(_cell("th", human(c), numeric[c], scope="col") for c in frame.columns)
    rows = []
    for key, values in zip(frame.index, frame.itertuples(index=False, name=None)):
        keys = (key if isinstance(key, tuple) else (key,)) if index else ()
        cells = "".join(_cell("th", cell_text(k), scope="row") for k in keys)
        cells += "".join(_cell("td", str(v), code=True) if c in code
                         else _cell("td", cell_text(v, decimals[c]), numeric[c])
                         for c, v in zip(frame.columns, values))
        rows.append(f"<tr>{cells}</tr>")
    table = (f'<div class="eg-table-wrap"><table class="{classes}"><thead><tr>{head}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>')
    return fold(table, frame.attrs.get("fold"))


def fold(content: str, summary: str | None) -> str:
    """``content`` folded under ``summary`` (a ``<details>`` a reader opens), or as it is."""
    if not summary:
        return content
    return f'<details class="eg-fold"><summary>{html.escape(summary)}</summary>{content}</details>'


def styler_html(styler) -> str:
    """A pandas Styler through :func:`frame_html`, keeping only its choice to hide the index."""
    hidden = getattr(styler, "hide_index_", [False])
    return frame_html(styler.data, index=False if all(hidden) else None)


def register(shell=None) -> None:
    """Show DataFrames, Series and Stylers as :func:`frame_html` in IPython's HTML output
    (no-op outside IPython)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
    if shell is None:
        return
    from pandas.io.formats.style import Styler

    formatter = shell.display_formatter.formatters["text/html"]
    formatter.for_type(pd.DataFrame, frame_html)
    formatter.for_type(pd.Series, frame_html)
    formatter.for_type(Styler, styler_html)
