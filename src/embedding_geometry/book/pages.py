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

from . import claim_text, claims, readback, rules
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


def claims_table(verdicts: list[claims.Verdict]) -> "CardTable":
    """A chapter's claims table (:func:`claims.table`) as HTML whose rows carry their claim's
    anchor (:func:`claim_anchor`), so that the dashboard links to each row."""
    return CardTable(claims.table(verdicts), row_ids=[claim_anchor(v.claim.id) for v in verdicts])


DASHBOARD_COLUMNS = ["chapter", "id", "claim", "source", "published", "published model", "this run", "depth",
                     "run model", "95% interval", "verdict", "reason", "numeric", "null", "test"]


def claims_dashboard(results: Path | None = None, chapters: list[str] | None = None) -> pd.DataFrame:
    """Every claim of the chapters' results JSON (all chapters, or those named in ``chapters``),
    one row each (DASHBOARD_COLUMNS): its verdict (one of claims.VERDICTS, without its reason),
    the reason apart, the numeric verdict ("—": none), and the texts of :mod:`claim_text` for the
    values, interval, null and test."""
    rows = []
    for path in sorted((results or paths.built_results_dir()).glob("[!.]*.json")):  # not unfinished writes
        document = readback.read(path)
        if chapters and document.get("chapter") not in chapters:
            continue
        rows += [{"chapter": document["chapter"], **_dashboard_row(claim)} for claim in document.get("claims", [])]
    return pd.DataFrame(rows, columns=DASHBOARD_COLUMNS)


def _dashboard_row(record: dict[str, Any]) -> dict[str, Any]:
    published = record.get("published") or {}
    value, _, depth = claim_text.run_text(record).partition(" at ")
    return {"id": record.get("id", ""), "claim": record["statement"], "source": record.get("source") or "—",
            "published": claim_text._fmt(published["value"]) if published else "—",
            "published model": published.get("model", ""), "this run": value, "depth": depth or "—",
            "run model": record["model"], "95% interval": claim_text.interval_text(record),
            "verdict": claim_text.verdict_of(record), "reason": record.get("reason") or "",
            "numeric": record.get("numeric_verdict") or "—", "null": claim_text.null_text(record),
            "test": claim_text.test_text(record)}


def verdict_counts(dashboard: pd.DataFrame) -> pd.DataFrame:
    """How many claims got each verdict, with what the verdict means (claims.VERDICT_MEANINGS):
    one verdict per claim, so the counts add up to the number of claims."""
    counts = dashboard["verdict"].value_counts()
    ordered = [v for v in claims.VERDICTS if v in counts] + [v for v in counts.index if v not in claims.VERDICTS]
    return pd.DataFrame({"verdict": ordered, "claims": [int(counts[v]) for v in ordered],
                         "meaning": [claims.VERDICT_MEANINGS.get(v, "") for v in ordered]})


def counts_table(counts: pd.DataFrame) -> "HtmlTable":
    """The counts of :func:`verdict_counts` with their meanings, closed by their sum ("all claims")."""
    return HtmlTable(counts, foot=["all claims", int(counts["claims"].sum()), "the counts above add up to this"])


def numeric_sentence(dashboard: pd.DataFrame) -> str:
    """The numeric verdicts in one sentence: how many claims were compared with their published
    value on the published model, and how many of those reproduced it."""
    numeric = dashboard["numeric"]
    judged = numeric[numeric != "—"]
    return (f"{len(judged)} of {len(numeric)} claims have a numeric verdict: {(judged == 'reproduced').sum()} "
            f"reproduced, {(judged == 'not reproduced').sum()} not reproduced. The others were published on a "
            f"model this build did not run, or have no published value.")


def _main(values: pd.Series) -> str:
    """The most frequent non-empty value (the model a column names once, in its header)."""
    values = values[values.astype(bool)]
    return values.mode().iloc[0] if len(values) else ""


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


class ClaimsDashboard:
    """The dashboard of :func:`claims_dashboard` as HTML: a chapter and a verdict filter
    (``_static/book.js`` hides the other rows), then a sortable table of five columns — chapter ·
    claim · published · this run · verdict. The claim links to its row in its chapter's claims
    table and folds its test, null, interval (or why there is none), depth, source and id under
    it; this run's value carries its 95 % interval; the verdict its reason and the numeric
    verdict. The published and the run model are named once, in the headers; a cell names its
    model only where it differs."""

    def __init__(self, dashboard: pd.DataFrame):
        self.frame = dashboard
        self.published_model, self.run_model = _main(dashboard["published model"]), _main(dashboard["run model"])

    def __repr__(self) -> str:
        return f"claims dashboard: {len(self.frame)} claims"

    def _repr_html_(self) -> str:
        headers = ["chapter", "claim", _headed("published", self.published_model), _headed("this run", self.run_model),
                   "verdict"]
        head = "".join(f'<th scope="col" title="click to sort">{h}</th>' for h in headers)
        body = "".join(self._row(r) for r in self.frame.to_dict("records"))
        return (f'<div class="eg-dashboard">{self._filters()}<table class="eg-table eg-sortable eg-claims">'
                f'<colgroup><col class="eg-c-chapter"><col class="eg-c-claim"><col class="eg-c-published">'
                f'<col class="eg-c-run"><col class="eg-c-verdict"></colgroup>'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def _filters(self) -> str:
        chapters = self.frame["chapter"].value_counts(sort=False)
        verdicts = verdict_counts(self.frame)
        return ('<div class="eg-filters" role="group" aria-label="filter the claims">'
                + _select("chapter", "all chapters", [(c, f"{c.replace('_', ' ')} ({n})") for c, n in chapters.items()])
                + _select("verdict", "all verdicts", [(v, f"{v} ({n})") for v, n in zip(verdicts["verdict"], verdicts["claims"])])
                + f'<span class="eg-filter-count" aria-live="polite">{len(self.frame)} of {len(self.frame)} claims</span></div>')

    def _row(self, r: dict[str, Any]) -> str:
        number = r["chapter"].split("_", 1)[0]
        link = f'{_e(r["chapter"])}.html#{_e(claim_anchor(r["id"]))}'
        details = "".join(f"<dt>{k}</dt><dd>{_e(r[k])}</dd>"
                          for k in ("test", "null", "95% interval", "depth", "source", "id"))
        claim = f'<a href="{link}">{_e(r["claim"])}</a><details><summary>details</summary><dl>{details}</dl></details>'
        published = _e(r["published"]) + _other(r["published model"], self.published_model)
        run = _e(r["this run"]) + _other(r["run model"], self.run_model)
        if r["95% interval"].startswith("["):  # the reason for a missing one is folded under the claim
            run += f'<small class="eg-interval">{_e(r["95% interval"])}</small>'
        verdict = f'<span class="eg-verdict">{_e(r["verdict"])}</span>'
        if r["reason"]:
            verdict += f"<small>{_e(r['reason'])}</small>"
        if r["numeric"] != "—":
            verdict += f"<small>numeric: {_e(r['numeric'])}</small>"
        cells = [("chapter", f'<span title="{_e(r["chapter"])}">{_e(number)}</span>'), ("claim", claim),
                 ("published", published), ("this run", run), ("verdict", verdict)]
        return (f'<tr data-chapter="{_e(r["chapter"])}" data-verdict="{_e(r["verdict"])}">'
                + "".join(f'<td data-label="{label}">{cell}</td>' for label, cell in cells) + "</tr>")


def _e(value: Any) -> str:
    return html.escape(str(value))


def _headed(name: str, model: str) -> str:
    return f"{name} <small>({_e(_short(model))})</small>" if model else name


def _other(model: str, main: str) -> str:
    """A compact note of a cell's model, where it is not the one its column's header names."""
    return f' <small class="eg-model">({_e(_short(model))})</small>' if model and model != main else ""


def _select(name: str, everything: str, options: list[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{_e(value)}">{_e(text)}</option>' for value, text in options)
    return (f'<label>{name} <select data-filter="{name}"><option value="">{everything}</option>{items}'
            f"</select></label>")


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
