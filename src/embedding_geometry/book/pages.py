"""What a reader meets around the measurements: parameter tables, provenance, the claims dashboard.

Everything here is read from files the build itself produced or uses — a chapter notebook's
``parameters`` cell, the results JSON of each chapter — so no page repeats a hand-typed value.
Tables reach the page as plain HTML (:class:`HtmlTable` and its kinds: sortable, one card per
row, the dashboard with its filters), styled by ``_static/book.css`` and driven by
``_static/book.js``; a chapter's claims table gives each row the anchor ``claim-<id>`` that the
dashboard links to.
"""

from __future__ import annotations

import ast
import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import claims, readback, rules
from .claims import words
from ..core import paths

def parameter_table(slug: str) -> pd.DataFrame:
    """A chapter's parameters — name, default, type, meaning, expects — read from the
    ``parameters`` cell of ``notebooks/<slug>.ipynb`` (the meaning is the cell's end-of-line
    comment) and from the chapter's rules (``expects``: what the rule accepts and what the
    chapter's computations need of the value, in words)."""
    import papermill

    notebook = (paths.project_root() or Path.cwd()) / "notebooks" / f"{slug}.ipynb"
    declared = papermill.inspect_notebook(str(notebook))
    rows = [{"parameter": name, "default": spec["default"], "type": _literal_type(spec),
             "meaning": spec["help"], "expects": rules.expects(slug, name)} for name, spec in declared.items()]
    return pd.DataFrame(rows, columns=["parameter", "default", "type", "meaning", "expects"])


def _literal_type(spec: dict[str, Any]) -> str:
    """The annotated type, else the type of the default literal (``[]`` → list; ``None`` →
    "optional": the meaning says what None stands for)."""
    if spec["inferred_type_name"] not in ("None", None):
        return spec["inferred_type_name"]
    try:
        value = ast.literal_eval(spec["default"])
    except (ValueError, SyntaxError):
        return "expression"
    return "optional" if value is None else type(value).__name__


def load_results(chapter: str) -> dict[str, Any]:
    """The results JSON a chapter wrote in this run, checked (:func:`readback.read`: a damaged
    file is one line naming it and the command that rebuilds it)."""
    return readback.read(paths.results_dir() / f"{chapter}.json")


def provenance(document: dict[str, Any]) -> pd.DataFrame:
    """Model, weights, parameters, package versions, device and run time of one results JSON."""
    model, env = document["model"], document["environment"]
    rows = [
        ("model", model.get("id")),
        ("weights", model.get("sha256") or model.get("revision") or "—"),
        ("depths × width", f"{model.get('layers')} + 1 × {model.get('hidden')}"),
        ("parameters", json.dumps(document["params"], sort_keys=True)),
        ("python / torch / transformers", f"{env['python']} / {env['torch']} / {env['transformers']}"),
        ("embedding_geometry", env.get("embedding_geometry", "—")),
        ("device", env["device"]),
        ("run time", f"{env['seconds']:.1f} s"),
    ]
    return pd.DataFrame(rows, columns=["", "this build"]).set_index("")


def claim_anchor(claim_id: str) -> str:
    """The id of a claim's row in its chapter's claims table: the target of the dashboard's links
    (``<slug>.html#claim-<id>``)."""
    return f"claim-{claim_id}"


def claims_table(verdicts: list) -> "CardTable":
    """A chapter's claims table as HTML, one card per claim whose row carries its anchor
    (:func:`claim_anchor`, the dashboard's link target): :func:`claims.words.row` for a chapter
    judged on one model; on several, the claim, its published value and one cell per model
    (the verdict, then the test with its result)."""
    found = claims.records(verdicts)
    models = list(dict.fromkeys(r["model"] for r in found))
    if len(models) < 2:
        return CardTable(pd.DataFrame([words.row(r) for r in found]), row_ids=[claim_anchor(r["id"]) for r in found])
    by_claim: dict[str, dict[str, dict]] = {}
    for r in found:
        by_claim.setdefault(r["id"], {})[r["model"]] = r
    rows = []
    for records in by_claim.values():
        first = next(iter(records.values()))
        published = first.get("published")
        rows.append({"claim": first["statement"],
                     "published (model)": f"{words.number(published['value'])} ({published['model']})" if published else "—",
                     **{_short(m): f"{words.verdict_cell(records[m])} · {words.result_text(records[m])}"
                        if m in records else "—" for m in models}})
    return CardTable(pd.DataFrame(rows), row_ids=[claim_anchor(i) for i in by_claim])


def markdown(text: str):
    """``text`` as a Markdown output (a generated sentence shown under the cell that writes it)."""
    from IPython.display import Markdown

    return Markdown(text)


def check(name: str, by_hand: Any, package: Any, rtol: float = 1e-6) -> "HtmlTable":
    """A quantity computed by hand in a chapter beside the package's own, and whether they agree
    (within ``rtol`` of the larger, or 1e-9): a chapter's key measurement, checked where the
    reader sees it. A disagreement raises, so the chapter cannot show a wrong check."""
    a, b = float(by_hand), float(package)
    agree = abs(a - b) <= max(rtol * max(abs(a), abs(b)), 1e-9)
    if not agree:
        raise AssertionError(f"{name}: by hand {a!r}, the package {b!r}")
    return HtmlTable(pd.DataFrame({"": [name], "by hand": [words.number(a)], "the package": [words.number(b)],
                                   "agree": ["yes"]}))


def numbers(values: dict[str, Any], column: str = "this run") -> "HtmlTable":
    """Named numbers as a two-column table, each written as the book writes a number (four
    significant digits; None as "—"): how a chapter shows a number that no claim states."""
    shown = {name: "—" if value is None else words.number(value) for name, value in values.items()}
    return HtmlTable(pd.DataFrame({"": list(shown), column: list(shown.values())}))


def errata_table(ledger: claims.Ledger) -> pd.DataFrame:
    """The post's internal inconsistencies: what the prose says, what its own data says."""
    columns = ["statement", "prose_value", "data_value", "evidence"]
    return pd.DataFrame([{k: e.get(k) for k in columns} for e in ledger.errata], columns=columns)


def _short(model: str) -> str:
    """A model's name without its organisation ("all-MiniLM-L6-v2")."""
    return model.rsplit("/", 1)[-1]


_EMPTY = ' class="eg-empty"'
"""The mark of a cell that holds only "—" (a card leaves it out)."""


class HtmlTable:
    """A DataFrame as a plain HTML table: every cell escaped and wrapped, never cut; each row has
    an id where ``row_ids`` gives one (a link target, ``page.html#<id>``); ``foot`` is a closing
    row (a total)."""

    classes = "eg-table"

    def __init__(self, frame: pd.DataFrame, row_ids: list[str] | None = None, foot: list[Any] | None = None):
        self.frame, self.row_ids, self.foot = frame, row_ids, foot

    def __repr__(self) -> str:
        return repr(self.frame)

    def _repr_html_(self) -> str:
        ids = self.row_ids or [None] * len(self.frame)
        head = "".join(f'<th scope="col">{_e(c)}</th>' for c in self.frame.columns)
        labels = [_e(c) for c in self.frame.columns]
        body = "".join((f'<tr id="{_e(i)}">' if i else "<tr>")
                       + "".join(f'<td data-label="{label}"{_EMPTY if v == "—" else ""}>{_e(v)}</td>'
                                 for label, v in zip(labels, row)) + "</tr>"
                       for i, row in zip(ids, self.frame.itertuples(index=False)))
        foot = f'<tfoot><tr>{"".join(f"<td>{_e(v)}</td>" for v in self.foot)}</tr></tfoot>' if self.foot else ""
        return f'<table class="{self.classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>{foot}</table>'


class SortableTable(HtmlTable):
    """An :class:`HtmlTable` whose column headers sort it (``_static/book.js``)."""

    classes = "eg-table eg-sortable"


class CardTable(HtmlTable):
    """An :class:`HtmlTable` for many columns of text, shown as one card per row: the first cell
    on a line of its own, the others labelled with their column (``_static/book.css``)."""

    classes = "eg-table eg-cards"


def _e(value: Any) -> str:
    return html.escape(str(value))


# --------------------------------------------------------------------------- performance

SENSES = {"≥": float.__ge__, "≤": float.__le__, "<": float.__lt__}
"""How a benchmark figure is judged against its target."""
FIGURE = {"section": str, "figure": str, "value": (int, float), "detail": str}
CHAPTER_TIMES = {"wall_s": (int, float), "forward_s": (int, float), "analysis_s": (int, float),
                 "fixed_s": (int, float), "to_first_model_use_s": (int, float), "model_used": bool}


def load_bench(name: str = "build/bench.json") -> dict[str, Any] | None:
    """The figures ``make bench`` wrote (``name`` relative to the book's root), checked (what the
    page shows: ``figures``, ``machine``, the builds' chapters), or None when the benchmarks
    were not run. A damaged file is one line naming it and ``make bench``."""
    path = (paths.project_root() or Path.cwd()) / name
    if not path.is_file():
        return None
    bench = readback.read_mapping(path, remedy := "remake it: make bench", "benchmark file")
    if problem := _bench_problem(bench):
        raise readback.DamagedResultsError(f"benchmark file {readback._name(path)} is not usable: {problem}; {remedy}")
    return bench


def _bench_problem(bench: dict[str, Any]) -> str | None:
    figures, machine = bench.get("figures", []), bench.get("machine", {})
    if not isinstance(figures, list) or not isinstance(machine, dict):
        return "figures is not a list, or machine not an object"
    for i, f in enumerate(figures):
        if not isinstance(f, dict) or (problem := readback._fields(f, FIGURE, f"figures[{i}].")):
            return problem or f"figures[{i}] is not an object"
        if not (f.get("sense") is None or f["sense"] in SENSES and isinstance(f.get("target"), (int, float))) \
                or not isinstance(f.get("met"), (bool, type(None))):
            return f"figures[{i}] has no valid sense, target and met"
    for section in ("build", "mpnet_build"):
        chapters = bench.get(section, {}).get("chapters", {}) if isinstance(bench.get(section), dict) else {}
        for slug, times in chapters.items() if isinstance(chapters, dict) else [("", None)]:
            if not isinstance(times, dict) or (problem := readback._fields(times, CHAPTER_TIMES, f"{section}.{slug}.")):
                return problem or f"{section}.chapters is not a mapping of objects"
    return None


def figure(section: str, name: str, value: float, sense: str | None, target: float | None, detail: str = "",
           met: bool | None = None) -> dict[str, Any]:
    """One figure of ``make bench`` as ``build/bench.json`` records it: ``met`` is judged as
    ``value sense target`` (:data:`SENSES`) unless given; a figure without a target is
    information (met None). ``section`` is the benchmark section that measured it."""
    if met is None and sense is not None:
        met = bool(SENSES[sense](float(value), float(target)))
    return {"section": section, "figure": name, "value": value, "sense": sense, "target": target,
            "met": met, "detail": detail}


def performance_table(bench: dict[str, Any]) -> pd.DataFrame:
    """One row per recorded figure: figure, measured, target ("≥ 0.7", or "information"), met
    (yes / no / —), detail."""
    rows = [(f["figure"], f["value"], f"{f['sense']} {f['target']:g}" if f["sense"] else "information",
             {True: "yes", False: "no"}.get(f["met"], "—"), f["detail"]) for f in bench.get("figures", [])]
    return pd.DataFrame(rows, columns=["figure", "measured", "target", "met", "detail"])


def build_table(bench: dict[str, Any], section: str = "build") -> pd.DataFrame:
    """The cold build of ``section`` per chapter: wall seconds split into model calls (forward
    passes, training steps), analysis and fixed overhead, and the seconds from the kernel's start to its first model use
    (to its open, for a page that calls no model), wall and the kernel's CPU seconds."""
    chapters = bench.get(section, {}).get("chapters", {})
    rows = [(slug, c["wall_s"], c["forward_s"], c["analysis_s"], c["fixed_s"],
             c["to_first_model_use_s"] if c["model_used"] else f"{c['to_first_model_use_s']} (no model)",
             c.get("cpu_to_first_model_use_s") or "—") for slug, c in chapters.items()]
    return pd.DataFrame(rows, columns=["chapter", "wall s", "model s", "analysis s", "fixed s",
                                       "start → first model use s", "its CPU s"])


class PerformanceReport:
    """The Performance page's body: the figures with their targets and met flags, the cold
    build per chapter and the machine; without a benchmark file, one sentence and the command."""

    def __init__(self, bench: dict[str, Any] | None):
        self.bench = bench

    def __repr__(self) -> str:
        return f"performance report: {len(performance_table(self.bench or {}))} figures"

    def _repr_html_(self) -> str:
        table = performance_table(self.bench or {})
        if table.empty:
            return ("<p>The benchmarks were not run for this build. Run <code>make bench</code>, then "
                    "<code>make book</code>.</p>")
        machine = pd.DataFrame(list(self.bench.get("machine", {}).items()), columns=["machine", "value"])
        parts = [("Figures", HtmlTable(table)), ("The cold build, chapter by chapter", HtmlTable(build_table(self.bench))),
                 ("The cold build on params/mpnet.yaml, chapter by chapter",
                  HtmlTable(build_table(self.bench, "mpnet_build"))),
                 ("Machine and command", HtmlTable(machine))]
        return "".join(f"<h3>{title}</h3>{part._repr_html_()}" for title, part in parts if not part.frame.empty)


FAMILY_NAMES = {"float": "float (× scale)", "share": "share", "count": "count (× total)", "noise": "noise (decades)"}
"""The columns of the float-path table: each family of the reproducibility contract, with its unit."""


def float_path_table(found: dict[str, Any]) -> pd.DataFrame:
    """Per perturbed float path (``make tolerances``), the largest deviation of each family of
    metric from the build on the book's own path, and how many verdicts changed; the last row the
    tolerance the contract derives from them."""
    rows = [{"perturbed path": spec["spec"], **{label: words.number(spec["largest"].get(family, {}).get("max", 0.0))
                                                for family, label in FAMILY_NAMES.items()},
             "verdicts changed": len(found["verdict_changes"][name])}
            for name, spec in found["perturbations"].items()]
    rows.append({"perturbed path": f"tolerance ({words.number(found['margin'])} × the largest, a power of ten up)",
                 **{label: words.number(found["tolerances"][family]) for family, label in FAMILY_NAMES.items()},
                 "verdicts changed": "—"})
    return pd.DataFrame(rows)


class FloatPathReport:
    """The measured float-path deviations and the contract's tolerances (:func:`float_path_table`),
    the verdicts a perturbed path changed, and the command, commit and CPU they were measured
    with; without figures, one sentence and the command."""

    def __init__(self, found: dict[str, Any] | None):
        self.found = found

    def __repr__(self) -> str:
        return f"float-path figures: {len((self.found or {}).get('perturbations', {}))} perturbed paths"

    def _repr_html_(self) -> str:
        if not self.found:
            return "<p>The float-path figures were not measured. Run <code>make tolerances</code>.</p>"
        run = self.found["run"]
        flips = pd.DataFrame([{"path": self.found["perturbations"][name]["spec"], "chapter": f["chapter"],
                               "claim": f["claim"], "own path": f["default"], "perturbed": f["perturbed"],
                               "fragile by its margin": "yes" if f["fragile_by_margin"] else "no"}
                              for name, flips in self.found["verdict_changes"].items() for f in flips])
        where = pd.DataFrame([{"path": spec["spec"], "family": family, "largest at": worst["where"]}
                              for spec in self.found["perturbations"].values()
                              for family, worst in spec["largest"].items() if worst["max"] > 0])
        measured = (f"<p>Measured with <code>{_e(run['command'])}</code> (profile {_e(run['profile'])}) at commit "
                    f"{_e(run['commit'])} on {_e(run['date'])}, on a {_e(run['machine'])}.</p>")
        parts = [HtmlTable(float_path_table(self.found))._repr_html_(), measured]
        if not flips.empty:
            parts.append("<h4>Verdicts a perturbed path changed (each is marked fragile)</h4>" + HtmlTable(flips)._repr_html_())
        if not where.empty:
            parts.append("<details><summary>Where each largest deviation is</summary>"
                         + HtmlTable(where)._repr_html_() + "</details>")
        return "".join(parts)
