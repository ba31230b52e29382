"""Charts of matrices: a model × model (or any row × column) heatmap, each cell labelled, its
colour scale widened to cover every value, and a strip of ticks per category."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd


def matrix_frame(matrix: Mapping[str, Mapping[str, float | None]], missing: str = "not comparable",
                 digits: int = 3, short_names: bool = False) -> pd.DataFrame:
    """A nested mapping ``matrix[row][column]`` as a long frame (row, column, value, label) in
    the mapping's order; a None cell has no value and the label ``missing``. With
    ``short_names``, model ids are shortened to their last path component."""
    def name(key: str) -> str:
        return str(key).rsplit("/", 1)[-1] if short_names else str(key)

    rows = [{"row": name(r), "column": name(c), "value": None if v is None else round(float(v), 4),
             "label": missing if v is None else f"{v:.{digits}f}"}
            for r, cells in matrix.items() for c, v in cells.items()]
    return pd.DataFrame(rows, columns=["row", "column", "value", "label"])


def covering(domain: tuple[float, float], values: pd.Series, diverging: bool = False) -> tuple[float, float]:
    """``domain`` widened to cover every value (symmetric about 0 when ``diverging``), so that a
    colour scale never clips what it shows."""
    finite = pd.to_numeric(values, errors="coerce").dropna()
    low, high = float(domain[0]), float(domain[1])
    if len(finite):
        low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    if diverging:
        reach = max(abs(low), abs(high))
        low, high = -reach, reach
    return low, high


def matrix_heatmap(frame: pd.DataFrame, title: str = "", value_title: str = "value",
                   domain: tuple[float, float] = (0.0, 1.0), diverging: bool = False) -> alt.LayerChart:
    """A square heatmap of ``matrix_frame`` rows, each cell labelled (rows and columns in the
    frame's order). Colours span ``domain``, widened to cover every value (:func:`covering`), so
    the scale never clips; ``diverging`` uses a blue–white–red scale centred on 0 for signed
    values. Cells without a value are grey."""
    domain = covering(domain, frame["value"], diverging)
    order = list(dict.fromkeys(frame["row"]))
    big = len(order) > 6
    axis = alt.Axis(labelLimit=360)
    base = alt.Chart(frame).encode(x=alt.X("column:N", title=None, sort=order,
                                           axis=alt.Axis(labelLimit=360, labelAngle=-40)),
                                   y=alt.Y("row:N", title=None, sort=order, axis=axis))
    scale = alt.Scale(scheme="redblue", reverse=True, domain=list(domain), domainMid=0) if diverging \
        else alt.Scale(scheme="viridis", domain=list(domain))
    cells = base.mark_rect().encode(
        color=alt.condition("isValid(datum.value)", alt.Color("value:Q", title=value_title, scale=scale),
                            alt.value("#dddddd")),
        tooltip=[alt.Tooltip("row:N", title="row"), alt.Tooltip("column:N", title="column"),
                 alt.Tooltip("label:N", title=value_title)])
    span = max(abs(domain[0]), abs(domain[1]))
    dark = (f"isValid(datum.value) && abs(datum.value) > {0.6 * span}" if diverging
            else f"isValid(datum.value) && datum.value < {domain[0] + 0.5 * (domain[1] - domain[0])}")
    text = base.mark_text(fontSize=9 if big else 12).encode(
        text="label:N", color=alt.condition(dark, alt.value("white"), alt.value("black")))
    return alt.layer(cells, text).properties(
        title=title, width=alt.Step(38 if big else 120), height=alt.Step(24 if big else 40))


def category_strip(frame: pd.DataFrame, value: str, category: str, x_title: str, title: str = "",
                   tooltip: Sequence[str] = ()) -> alt.Chart:
    """One tick per row: ``value`` on x, one line per ``category`` (ordered by median value), to
    show whether a direction separates the categories."""
    return alt.Chart(frame).mark_tick(thickness=2, opacity=0.6).encode(
        x=alt.X(f"{value}:Q", title=x_title),
        y=alt.Y(f"{category}:N", title=None, sort=alt.EncodingSortField(field=value, op="median", order="descending")),
        color=alt.Color(f"{category}:N", legend=None),
        tooltip=[alt.Tooltip(f"{category}:N", title=category.replace("_", " ")), *tooltip,
                 alt.Tooltip(f"{value}:Q", title=x_title, format=".3f")],
    ).properties(title=title, width=520)
