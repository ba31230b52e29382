"""One claims ledger judged on several models: each claim's verdict per model, the claim × model
table, and what the pattern of verdicts across the models says about each finding.

A chapter that compares models (:meth:`~embedding_geometry.book.chapter.Chapter.compared`)
measures every model into a metrics dict of its own and judges each with the same ledger
(:func:`evaluate`), so that every cell has its interval and null exactly as the main model's
claims table does. The *roster* (:func:`roster`) gives each model its role: ``trained``, or
``control``, a random-init control (``core.models.random_control``) of the trained model
``control_of``; a control has no control of its own, so its claims are judged on their bound alone.

**Reading a row** (:func:`reading`). With T the verdicts on the trained models and C those on
their controls (the suffix "(no interval)" ignored), the first rule that applies:

================  ===========================================================================
``training``      every T holds, and every C does not hold, or each T was judged against its
                  control as the null (so each trained model exceeds its control)
``architecture``  every T holds and every C holds too (an untrained copy shows it); or T split
                  into holds and does not hold, and each control got its trained model's verdict
``trained``       every T holds; the controls split, cannot tell, or there are none
``model``         T split into holds and does not hold (none inconclusive): the finding depends
                  on the model — its depth, width or architecture
``none``          every T does not hold
``undecided``     anything else: some T inconclusive or not measured
================  ===========================================================================

With one trained model no row is read ``model``; without controls none is read ``training`` or
``architecture``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..core.models import ModelInfo
from . import claims
from .claim_text import NO_INTERVAL, _fmt, verdict_of
from .pages import HtmlTable

TRAINED, CONTROL = "trained", "control"
HOLDS, FAILS = claims.HOLDS, claims.FAILS
READINGS = {
    "training": ("follows training", "it holds on every trained model and on none of their random-init controls"),
    "architecture": ("follows the architecture", "each random-init control gets its trained model's verdict"),
    "trained": ("holds on every trained model",
                "the controls do not settle whether training or the architecture gives it ({controls})"),
    "model": ("depends on the model", "it holds on {holds} and not on {fails}"),
    "none": ("holds on no trained model", "it does not hold on any trained model"),
    "undecided": ("undecided", "{why}"),
}
"""Each reading's title and the sentence that explains it (module docstring)."""
COUNTED = {"training": "follow training", "architecture": "follow the architecture",
           "trained": "hold on every trained model", "model": "depend on the model",
           "none": "hold on no trained model", "undecided": "are undecided"}
"""Each reading's title for a count of claims ("5 follow training")."""
BEYOND_CONTROL = "every trained model shows it more strongly than its own random-init control"
"""The sentence of ``training`` when each trained model was judged against its control as the null."""


def roster(infos: Iterable[ModelInfo]) -> dict[str, dict[str, Any]]:
    """Each model's role, label and depth, by id: ``kind`` (trained or control), ``control_of``
    (the trained model a control copies: its id begins the control's), ``layers``, ``sha256``
    (of its weights: what the results JSON records of every model run) and ``label`` (the name
    without its organisation, with its depth)."""
    infos = list(infos)
    trained = [info.id for info in infos if info.source != CONTROL]
    found = {}
    for info in infos:
        base = next((t for t in trained if info.id.startswith(f"{t} [")), None) if info.source == CONTROL else None
        name = (base or info.id).rsplit("/", 1)[-1]
        found[info.id] = {"kind": CONTROL if info.source == CONTROL else TRAINED, "control_of": base,
                          "layers": info.layers, "sha256": info.sha256,
                          "label": f"{name} · random-init control" if base else f"{name} ({info.layers} blocks)"}
    return found


def evaluate(ledger: claims.Ledger, by_model: Mapping[str, Mapping[str, Any]], seed: int = 0) -> dict[str, list[dict]]:
    """The ledger's verdict records on every model's metrics (:func:`claims.evaluate`, seeded
    alike), by model id."""
    return {model: claims.records(claims.evaluate(ledger, metrics, model, seed=seed))
            for model, metrics in by_model.items()}


def _verdict(record: Mapping[str, Any]) -> str:
    return verdict_of(record).removesuffix(NO_INTERVAL)


def judged_interval(record: Mapping[str, Any], named: bool = True) -> str:
    """The interval the verdict rests on: a series test's statistic ("peak margin [0.01, 0.03]";
    without ``named``, three significant digits and no name), else the measured value's ("[0.51,
    0.6]"); "" when there is none."""
    stat = record.get("statistic") or {}
    interval = stat.get("interval") or record.get("interval")
    if not interval:
        return ""
    if not named:
        return f"[{interval[0]:.3g}, {interval[1]:.3g}]"
    name = f"{stat['name']} " if stat.get("interval") else ""
    return f"{name}[{_fmt(interval[0])}, {_fmt(interval[1])}]"


def cell(record: Mapping[str, Any]) -> str:
    """The verdict and the interval it rests on, "holds (peak margin [0.01, 0.03])"."""
    interval = judged_interval(record)
    return f"{verdict_of(record)} ({interval})" if interval else verdict_of(record)


def table_cell(record: Mapping[str, Any]) -> str:
    """A model's cell of the table: the verdict, and on a line of its own the interval of the
    quantity the test names."""
    return f"{verdict_of(record)}\n{judged_interval(record, named=False)}".rstrip()


def _by_claim(verdicts: Mapping[str, list[dict]]) -> dict[str, dict[str, dict]]:
    """{claim id: {model: record}}, claims in ledger order."""
    found: dict[str, dict[str, dict]] = {}
    for model, records in verdicts.items():
        for record in records:
            found.setdefault(record["id"], {})[model] = record
    return found


def reading(row: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """(reading, its sentence) of one claim's records by model (module docstring); ``models`` is
    the roster."""
    labels = {m: models[m]["label"] for m in row}
    verdicts = {m: _verdict(r) for m, r in row.items()}
    trained = {m: v for m, v in verdicts.items() if models[m]["kind"] == TRAINED}
    controls = {m: v for m, v in verdicts.items() if models[m]["kind"] == CONTROL}
    values = set(trained.values())
    agree = bool(controls) and all(v == trained.get(models[m]["control_of"]) for m, v in controls.items())
    beyond = all((row[m].get("null") or {}).get("kind") == "control" and row[m]["null"].get("value") is not None
                 for m in trained)
    if values == {HOLDS}:
        kind = "training" if beyond or set(controls.values()) == {FAILS} else "architecture" if agree else "trained"
    elif values == {HOLDS, FAILS}:
        kind = "architecture" if agree and len(controls) == len(trained) else "model"
    else:
        kind = "none" if values == {FAILS} else "undecided"
    title, text = READINGS[kind]
    if kind == "training" and beyond:
        text = BEYOND_CONTROL
    named = {v: ", ".join(labels[m] for m, verdict in trained.items() if verdict == v) for v in (HOLDS, FAILS)}
    why = "; ".join(f"{v} on {labels[m]}" for m, v in trained.items() if v not in (HOLDS, FAILS))
    on_controls = "; ".join(f"{v} on {labels[m]}" for m, v in controls.items()) or "no controls were run"
    return kind, f"{title}: {text.format(holds=named[HOLDS], fails=named[FAILS], why=why, controls=on_controls)}"


def readings(verdicts: Mapping[str, list[dict]], models: Mapping[str, Mapping[str, Any]]) -> list[dict[str, str]]:
    """One row per claim: its id, its shape statement, its reading and the reading's sentence."""
    rows = []
    for claim_id, row in _by_claim(verdicts).items():
        first = next(iter(row.values()))
        kind, text = reading(row, models)
        rows.append({"id": claim_id, "claim": (first.get("shape") or {}).get("statement") or first["statement"],
                     "reading": kind, "sentence": text})
    return rows


class VerdictTable(HtmlTable):
    """The claim × model table as HTML: each model's cell carries its verdict (``data-verdict``),
    which ``_static/book.css`` colours, and keeps its line break."""

    classes = "eg-table eg-verdicts"

    def _repr_html_(self) -> str:
        return re.sub(r'(<td data-label="(?!reading")[^"]*")>(holds|does not hold|inconclusive|not measured)',
                      r'\1 data-verdict="\2">\2', super()._repr_html_())


def table(verdicts: Mapping[str, list[dict]], models: Mapping[str, Mapping[str, Any]]) -> VerdictTable:
    """The claim × model table: each claim's shape statement and test, its verdict and interval
    on every model (columns in roster order, trained models first) and its reading's title."""
    order = sorted(verdicts, key=lambda m: models[m]["kind"] != TRAINED)
    by_claim, found = _by_claim(verdicts), readings(verdicts, models)
    rows = []
    for r in found:
        test = next(iter(by_claim[r["id"]].values())).get("test")
        rows.append({"claim": f"{r['claim']} (test: {test})" if test else r["claim"],
                     **{models[m]["label"]: table_cell(by_claim[r["id"]][m]) for m in order},
                     "reading": READINGS[r["reading"]][0]})
    return VerdictTable(pd.DataFrame(rows), row_ids=[f"across-{r['id']}" for r in found])


def counts(rows: Iterable[Mapping[str, str]]) -> dict[str, int]:
    """How many claims got each reading (every reading of READINGS, zeros included)."""
    kinds = [row["reading"] for row in rows]
    return {kind: kinds.count(kind) for kind in READINGS}


def claims_read(rows: Iterable[Mapping[str, str]], kind: str) -> list[str]:
    """The ids of the claims that got reading ``kind``."""
    return [row["id"] for row in rows if row["reading"] == kind]


def count_sentence(rows: Iterable[Mapping[str, str]]) -> str:
    """The readings counted in one sentence: "Of 17 claims, 5 follow training, …"."""
    rows = list(rows)
    found = [f"{n} {READINGS[kind][0] if n == 1 else COUNTED[kind]}" for kind, n in counts(rows).items() if n]
    return f"Of {len(rows)} claims, " + ", ".join(found) + "."


def claim_sentence(row: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]]) -> str:
    """One claim across the models (Markdown): its statement, its reading, and every model's
    verdict with the interval it rests on."""
    first = next(iter(row.values()))
    statement = ((first.get("shape") or {}).get("statement") or first["statement"]).rstrip(".")
    _, text = reading(row, models)
    verdicts = "; ".join(f"{models[m]['label']}: {cell(record)}" for m, record in row.items())
    return f"{statement[:1].upper() + statement[1:]} — **{text}**. Per model: {verdicts}."


def summary(rows: Iterable[Mapping[str, str]]) -> str:
    """The readings as MyST: an admonition listing, per reading that some claim got, its claims."""
    rows = list(rows)
    lines = [":::{admonition} Across the models\n:class: tip"]
    for kind in READINGS:
        group = [row for row in rows if row["reading"] == kind]
        if group:
            lines.append(f"- **{READINGS[kind][0]}** ({len(group)}): "
                         + "; ".join(f"{row['claim']} (`{row['id']}`)" for row in group) + ".")
    return "\n".join(lines) + "\n:::\n"


def markdown_values(verdicts: Mapping[str, list[dict]], models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``IPython.display.Markdown`` objects to glue: ``across_findings`` (the box of
    :func:`summary`), ``across_counts`` (:func:`count_sentence`) and ``across_<id>`` (``-`` read
    as ``_``), one :func:`claim_sentence` per claim."""
    from IPython.display import Markdown

    rows = readings(verdicts, models)
    values = {f"across_{claim.replace('-', '_')}": Markdown(claim_sentence(row, models))
              for claim, row in _by_claim(verdicts).items()}
    return {**values, "across_findings": Markdown(summary(rows)), "across_counts": Markdown(count_sentence(rows))}
