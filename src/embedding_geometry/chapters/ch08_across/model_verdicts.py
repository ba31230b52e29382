"""One claims ledger judged on several models: each claim's verdict per model, the claim × model
table, and what the pattern across the models says about each finding.

The roster (:func:`roster`) gives each model its role: ``trained``, or ``control``, a random-init
copy of the trained model ``control_of``. A trained model's claim is judged against its controls'
seeds as its null; a control's claim on its own bound. A row's **reading** (:func:`truth`), the
first that applies: *training* (every trained model's claim holds and no control's), *architecture*
(every trained model's and every control's holds), *model* (one trained model's holds and another's
does not hold), else *undecided*.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ...book import claims
from ...book.claims import words
from ...book.claims.judge import FAILS, HOLDS
from ...book.pages import Folded, HtmlTable, chapter_label, claim_href
from ...core.models import ModelInfo, control_of

TRAINED, CONTROL = "trained", "control"
READINGS = {
    "training": ("follows training", "it holds on every trained model and on no random-init control ({effects})"),
    "architecture": ("follows the architecture",
                     "it holds on every trained model and on every random-init control ({controls})"),
    "model": ("depends on the model", "it holds on one trained model and does not hold on another ({intervals})"),
    "undecided": ("undecided", "{why}"),
}
"""Each reading's title and the sentence that explains it (module docstring)."""
COUNTED = {"training": "follow training", "architecture": "follow the architecture", "model": "depend on the model",
           "undecided": "are undecided"}
"""Each reading's title for a count of claims ("5 follow training")."""


def roster(infos: Iterable[ModelInfo]) -> dict[str, dict[str, Any]]:
    """Each model's role, label and depth, by id: ``kind`` (trained or control), ``control_of``
    (the trained model a control copies: its id begins the control's), ``layers``, ``sha256``
    (of its weights: what the results JSON records of every model run) and ``label`` (the name
    without its organisation, with its depth)."""
    infos = list(infos)
    trained = [info.id for info in infos if info.source != CONTROL]
    found = {}
    for info in infos:
        control = control_of(info.id) if info.source == CONTROL else None
        base = control[0] if control and control[0] in trained else None
        name = (base or info.id).rsplit("/", 1)[-1]
        found[info.id] = {"kind": CONTROL if info.source == CONTROL else TRAINED, "control_of": base,
                          "layers": info.layers, "sha256": info.sha256,
                          "label": f"{name} · random-init control" if base else f"{name} ({info.layers} blocks)"}
    return found


def evaluate(ledger: claims.Ledger, by_model: Mapping[str, Mapping[str, Any]], seed: int = 0,
             judged: Mapping[str, list[dict]] | None = None) -> dict[str, list[dict]]:
    """The ledger's verdict records on every model's metrics (:func:`claims.evaluate`, seeded
    alike), by model id; a model in ``judged`` (records already made, as by the chapter's own
    verdicts: :func:`records_by_model`) keeps its records and is not judged again."""
    judged = judged or {}
    return {model: list(judged[model]) if model in judged else
            claims.records(claims.evaluate(ledger, metrics, model, seed=seed, family=claims.family_size()))
            for model, metrics in by_model.items()}


def records_by_model(verdicts: Iterable[claims.Verdict]) -> dict[str, list[dict]]:
    """Verdicts (a chapter's, every model's) as records grouped by model id, in order."""
    found: dict[str, list[dict]] = {}
    for verdict in verdicts:
        found.setdefault(verdict.model, []).append(verdict.record())
    return found


def without_controls(ledger: claims.Ledger, verdicts: Mapping[str, list[dict]],
                     trained: Mapping[str, Mapping[str, Any]], seed: int = 0) -> dict[str, list[dict]]:
    """The trained models' records as they would read without random-init controls: the claims
    whose null is a control judged again on ``trained`` (metrics without the controls' per-unit
    values), every other record as in ``verdicts``."""
    again = claims.Ledger(ledger.chapter, [c for c in ledger.claims if (c.null or {}).get("kind") == "control"])
    found = {}
    for model, metrics in trained.items():
        redone = claims.records(claims.evaluate(again, metrics, model, seed=seed, family=claims.family_size()))
        redone = {r["id"]: r for r in redone}
        found[model] = [redone.get(r["id"], r) for r in verdicts[model]]
    return found


def judged_interval(record: Mapping[str, Any], named: bool = True) -> str:
    """The 95 % interval beside the verdict, "peak margin [0.01, 0.03]" (without ``named``, no
    name), each bound as the book writes a number (:func:`.words.number`); "" when there is none."""
    stat = record.get("statistic") or {}
    interval = stat.get("interval")
    if not interval:
        return ""
    bounds = f"[{words.number(interval[0])}, {words.number(interval[1])}]"
    return f"{stat['name']} {bounds}" if named else bounds


def cell(record: Mapping[str, Any]) -> str:
    """The verdict and its interval, "holds (peak margin [0.01, 0.03])"."""
    interval = judged_interval(record)
    return f"{words.verdict_of(record)} ({interval})" if interval else words.verdict_of(record)


def table_cell(record: Mapping[str, Any]) -> str:
    """A model's cell of the table: the verdict, and on a line of its own the 95 % interval."""
    return f"{words.verdict_of(record)}\n{judged_interval(record, named=False)}".rstrip()


def _by_claim(verdicts: Mapping[str, list[dict]]) -> dict[str, dict[str, dict]]:
    """{claim id: {model: record}}, claims in ledger order."""
    found: dict[str, dict[str, dict]] = {}
    for model, records in verdicts.items():
        for record in records:
            found.setdefault(record["id"], {})[model] = record
    return found


def effect(record: Mapping[str, Any]) -> str:
    """"Δ 0.31 [0.25, 0.37]": trained − control and its 95 % interval, for a trained model tested
    against its controls."""
    null = record.get("null") or {}
    if null.get("difference_value") is None:
        return "no control"
    text = f"Δ {words.number(null['difference_value'])}"
    return text + (f" [{words.number(null['difference'][0])}, {words.number(null['difference'][1])}]"
                   if null.get("difference") else "")


def truth(trained: Iterable[str], controls: Iterable[str]) -> str:
    """The reading of one claim from its verdict words on the trained models and on the controls
    (module docstring)."""
    trained, controls = list(trained), list(controls)
    if trained and all(w == HOLDS for w in trained):
        if controls and not any(w == HOLDS for w in controls):
            return "training"
        if controls and all(w == HOLDS for w in controls):
            return "architecture"
    if HOLDS in trained and FAILS in trained:
        return "model"
    return "undecided"


def reading(row: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """(reading, its sentence) of one claim's records by model (module docstring); ``models`` is
    the roster."""
    labels = {m: models[m]["label"] for m in row}
    trained = {m: r for m, r in row.items() if models[m]["kind"] == TRAINED}
    controls = {m: r for m, r in row.items() if models[m]["kind"] == CONTROL}
    kind = truth([words.verdict_of(r) for r in trained.values()], [words.verdict_of(r) for r in controls.values()])
    effects = "; ".join(f"{labels[m]}: {effect(r)}" for m, r in trained.items())
    title, text = READINGS[kind]
    why = ("; ".join(f"{labels[m]} {cell(r)}" for m, r in {**trained, **controls}.items()) or "no model run")
    intervals = "; ".join(f"{labels[m]} {cell(r)}" for m, r in trained.items())
    controls_text = "; ".join(f"{labels[m]} {cell(r)}" for m, r in controls.items())
    return kind, f"{title}: {text.format(effects=effects, controls=controls_text, intervals=intervals, why=why)}"


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
        pattern = "|".join(re.escape(w) for w in words.VERDICTS)
        return re.sub(rf'(<td data-label="(?!reading")[^"]*")>({pattern})', r'\1 data-verdict="\2">\2',
                      super()._repr_html_())


TABLE_COLUMNS = 6
"""The most model columns the claim × model table shows: a column a trained model and a column
for its controls, whose seeds are tallied (:func:`tally`), for up to three trained models. With
more, each claim's verdicts are tallied in two columns, over the trained models and over the
controls, so that the table keeps its width at fifty models."""


def table(verdicts: Mapping[str, list[dict]], models: Mapping[str, Mapping[str, Any]]) -> VerdictTable:
    """The claim × model table: each claim's shape statement and test, its verdict and interval
    on every trained model and its controls' verdicts tallied (columns in roster order, trained
    models first) — or, above :data:`TABLE_COLUMNS` columns, its verdicts tallied over the trained
    models and over the controls — and its reading's title."""
    order = sorted(verdicts, key=lambda m: models[m]["kind"] != TRAINED)
    by_claim, found = _by_claim(verdicts), readings(verdicts, models)
    rows = []
    for r in found:
        row = by_claim[r["id"]]
        test = next(iter(row.values())).get("test")
        rows.append({"claim": f"{r['claim']} (test: {test})" if test else r["claim"], **_cells(row, models, order),
                     "reading": READINGS[r["reading"]][0]})
    return VerdictTable(pd.DataFrame(rows), row_ids=[f"across-{r['id']}" for r in found], math_columns=("claim",))


def left_out_table(ledger: claims.Ledger) -> Folded:
    """The claims of other chapters this ledger does not judge (its ``left_out``), folded under a
    line that counts them: each claim's id, linked to its row in its home chapter, the home
    chapter, and why it is left out."""
    frame = pd.DataFrame([{"claim": e["id"], "home chapter": chapter_label(e["home"]), "why it is left out": e["why"]}
                          for e in ledger.left_out], columns=["claim", "home chapter", "why it is left out"])
    links = [claim_href(e["home"], e["id"]) for e in ledger.left_out]
    n = len(frame)
    return Folded(HtmlTable(frame, links={"claim": links}),
                  f"{n} shape claim{'s' if n != 1 else ''} of other chapters not judged here, and why")


def _cells(row: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]],
           order: list[str]) -> dict[str, str]:
    """A claim's model cells: one a label (a model's verdict and interval; a control's seeds
    tallied), or, above :data:`TABLE_COLUMNS` labels, the trained models' and the controls' tallies."""
    by_label: dict[str, dict[str, Mapping[str, Any]]] = {}
    for m in order:
        by_label.setdefault(models[m]["label"], {})[m] = row[m]
    if len(by_label) > TABLE_COLUMNS:
        trained = {m: record for m, record in row.items() if models[m]["kind"] == TRAINED}
        controls = {m: record for m, record in row.items() if models[m]["kind"] != TRAINED}
        return {"trained models": tally(trained, models),
                **({"random-init controls": tally(controls, models)} if controls else {})}
    return {label: table_cell(*records.values()) if len(records) == 1 else tally(records, models)
            for label, records in by_label.items()}


def tally(records: Mapping[str, Mapping[str, Any]], models: Mapping[str, Mapping[str, Any]], named: int = 3) -> str:
    """The verdicts of ``records`` (model → record) counted: the verdict and "3 of 3" when they
    agree; else one a line, most common first, "9 of 12: holds", then "2: does not
    hold (a, b)", naming the models of every verdict but the most common (the first
    ``named``, then how many more; a label that several seeds share once, with ×k)."""
    by_word: dict[str, list[str]] = {}
    for model, record in records.items():
        by_word.setdefault(words.verdict_of(record), []).append(models[model]["label"])
    ranked = sorted(by_word.items(), key=lambda item: -len(item[1]))
    if len(ranked) == 1:
        return f"{ranked[0][0]}\n{len(records)} of {len(records)}"
    lines = [f"{len(ranked[0][1])} of {len(records)}: {ranked[0][0]}"]
    for word, labels in ranked[1:]:
        shown = [f"{label} ×{labels.count(label)}" if labels.count(label) > 1 else label
                 for label in dict.fromkeys(labels)]
        more = f" and {len(shown) - named} more" if len(shown) > named else ""
        lines.append(f"{len(labels)}: {word} ({', '.join(shown[:named])}{more})")
    return "\n".join(lines)


def counts(rows: Iterable[Mapping[str, str]]) -> dict[str, int]:
    """How many claims got each reading (every reading of READINGS, zeros included)."""
    kinds = [row["reading"] for row in rows]
    return {kind: kinds.count(kind) for kind in READINGS}


def count_sentence(rows: Iterable[Mapping[str, str]]) -> str:
    """The readings counted in one sentence: "Of 17 claims, 5 follow training, …"."""
    rows = list(rows)
    found = [f"{n} {READINGS[kind][0] if n == 1 else COUNTED[kind]}" for kind, n in counts(rows).items() if n]
    return f"Of {len(rows)} claims, " + ", ".join(found) + "."
