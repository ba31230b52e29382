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

from . import claim_text, claims, readback, rules, tables
from ..core import paths

DOWNLOADS = "downloads"
"""Where the site keeps what a reader can take away (``sphinx_pages.copy_downloads``): each
chapter's results JSON under ``results/`` and every claim as ``claims.csv``."""


def chapter_number(slug: str) -> int | None:
    """A chapter's number: the number its slug starts with ("07_training_objective" → 7) for the
    model page (0) and the chapters that test claims (1–8); None for the primer ("00b_…") and
    the reference pages (98, 99), which are not numbered."""
    head = slug.split("_", 1)[0]
    return int(head) if head.isdigit() and int(head) < 90 else None


def chapter_label(slug: str) -> str:
    """"7 · training objective": a chapter's number and its slug in words (the slug alone when
    it has no number)."""
    number, words = chapter_number(slug), slug.split("_", 1)[-1].replace("_", " ")
    return f"{number} · {words}" if number is not None else words


def results_href(slug: str, prefix: str = "../../") -> str:
    """The link to a chapter's results JSON in the site, from a page ``prefix`` below its root."""
    return f"{prefix}{DOWNLOADS}/results/{slug}.json"


class ResultsFile(type(Path())):
    """The path of a chapter's results JSON (what ``Chapter.finish`` returns), shown on the page
    as a link to its copy in the site rather than as a path of the machine that built it."""

    def _repr_html_(self) -> str:
        return (f'<p class="eg-results-link">This page\'s numbers, as data: <a href="{results_href(self.stem)}" '
                f'download>{_e(self.name)}</a> (the chapter\'s results JSON; its keys are described on the '
                f'<a href="../methods.html">Methods</a> page).</p>')


class Folded:
    """HTML content folded under a one-line summary (a ``<details>`` the reader opens)."""

    def __init__(self, content: Any, summary: str):
        self.content, self.summary = content, summary

    def __repr__(self) -> str:
        return f"{self.summary}\n{self.content!r}"

    def _repr_html_(self) -> str:
        return tables.fold(self.content._repr_html_(), self.summary)

def parameter_table(slug: str) -> pd.DataFrame:
    """A chapter's parameters — name, default, type, meaning, expects — read from the
    ``parameters`` cell of ``notebooks/<slug>.ipynb`` (the meaning is the cell's end-of-line
    comment) and from the chapter's rule table (``expects``: what the rule accepts, in words).
    On the page (:mod:`.tables`) it is folded under one line, names and defaults as code."""
    import papermill

    notebook = (paths.project_root() or Path.cwd()) / "notebooks" / f"{slug}.ipynb"
    declared = papermill.inspect_notebook(str(notebook))
    table = rules.rules_for(slug)
    rows = [{"parameter": name, "default": spec["default"], "type": _literal_type(spec),
             "meaning": spec["help"], "expects": table[name].expects} for name, spec in declared.items()]
    frame = pd.DataFrame(rows, columns=["parameter", "default", "type", "meaning", "expects"])
    frame.attrs.update(fold=f"The chapter's {len(frame)} parameters: default, type, what each expects and means",
                       code=["parameter", "default"])
    return frame


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


def provenance(document: dict[str, Any]) -> "Provenance":
    """Model, weights, package versions, device, run time and results file of one results JSON,
    with the parameters of its run folded under them."""
    return Provenance(document)


class Provenance:
    """The Provenance section's body: ``frame`` (what ran, where and how long) as a table, then
    ``parameters`` (name → value, the values this build used) folded."""

    def __init__(self, document: dict[str, Any]):
        model, env = document["model"], document["environment"]
        self.chapter = document.get("chapter", "")
        rows = [
            ("model", model.get("id") or "—"),
            ("weights (SHA-256)", _short_hash(model.get("sha256")) or model.get("revision") or "—"),
            ("depths × width", f"{model.get('layers')} + 1 × {model.get('hidden')}" if model.get("layers") else "—"),
            ("python / torch / transformers", f"{env['python']} / {env['torch']} / {env['transformers']}"),
            ("embedding_geometry", env.get("embedding_geometry", "—")),
            ("device", env["device"]),
            ("run time", f"{env['seconds']:.1f} s"),
        ]
        self.frame = pd.DataFrame(rows, columns=["", "this build"]).set_index("")
        params = document.get("params") or {}
        self.parameters = pd.DataFrame({"parameter": list(params), "value": [_literal(v) for v in params.values()]})

    def __repr__(self) -> str:
        return f"provenance of {self.chapter}: " + "; ".join(f"{k} {v}" for k, v in self.frame["this build"].items())

    def _repr_html_(self) -> str:
        body = tables.frame_html(self.frame)
        if self.chapter:
            body += ResultsFile(f"{self.chapter}.json")._repr_html_()
        if len(self.parameters):
            shown = self.parameters.copy()
            shown.attrs.update(fold=f"The {len(shown)} parameters this page was computed with", code=["parameter", "value"])
            body += tables.frame_html(shown)
        return body


def _short_hash(digest: str | None) -> str | None:
    """A SHA-256 by its first 16 hex digits (the results JSON, linked beside it, has all 64)."""
    return f"{digest[:16]}…" if digest else None


def _literal(value: Any) -> str:
    """A parameter's value as the Python literal a notebook would hold (``None``, ``True``, a list)."""
    return repr(value) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def claim_anchor(claim_id: str) -> str:
    """The id of a claim's row in its chapter's claims table: the target of the dashboard's links
    (``<slug>.html#claim-<id>``)."""
    return f"claim-{claim_id}"


def claims_table(verdicts: list[claims.Verdict]) -> Folded:
    """A chapter's claims table (:func:`claims.table`) as HTML whose rows carry their claim's
    anchor (:func:`claim_anchor`), so that the dashboard links to each row; folded under one
    line (``_static/book.js`` unfolds it when a link names one of its rows)."""
    cards = CardTable(claims.table(verdicts), row_ids=[claim_anchor(v.claim.id) for v in verdicts])
    n = len(verdicts)
    return Folded(cards, f"The {n} claim{'s' if n != 1 else ''} this chapter tests, one card each: published value, "
                         "this run, interval, null, test and verdict")


ERRATA_COLUMNS = {"statement": "where the text contradicts itself", "prose_value": "its prose says",
                  "data_value": "its own data say", "evidence": "evidence"}


def errata_table(ledger: claims.Ledger) -> Folded:
    """The ledger's errata (:func:`claims.errata_table`: where the text's prose and its own data
    disagree) as a table with its columns named in words, folded under one line."""
    frame = claims.errata_table(ledger).rename(columns=ERRATA_COLUMNS)
    n = len(frame)
    return Folded(HtmlTable(frame), f"{n} errat{'a' if n != 1 else 'um'}: where the text's prose and its own data disagree")


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
    """A DataFrame as a plain HTML table: every cell written as :mod:`.tables` writes it
    (missing values "—", numbers rounded per column), escaped and wrapped between words, never
    cut; each row has an id where ``row_ids`` gives one (a link target, ``page.html#<id>``);
    ``foot`` is a closing row (a total). A table wider than its column scrolls in its own box."""

    classes = "eg-table"
    scrolls = True

    def __init__(self, frame: pd.DataFrame, row_ids: list[str] | None = None, foot: list[Any] | None = None):
        self.frame, self.row_ids, self.foot = frame, row_ids, foot

    def __repr__(self) -> str:
        return repr(self.frame)

    def _repr_html_(self) -> str:
        ids = self.row_ids or [None] * len(self.frame)
        head = "".join(f'<th scope="col">{_e(c)}</th>' for c in self.frame.columns)
        labels = [_e(c) for c in self.frame.columns]
        columns = [self.frame.iloc[:, i] for i in range(self.frame.shape[1])]
        decimals = [tables.column_decimals(column) for column in columns]
        numeric = [' class="eg-num"' if pd.api.types.is_numeric_dtype(c) and not pd.api.types.is_bool_dtype(c) else ""
                   for c in columns]
        rows = ([tables.cell_text(v, d) for v, d in zip(row, decimals)] for row in self.frame.itertuples(index=False))
        body = "".join((f'<tr id="{_e(i)}">' if i else "<tr>")
                       + "".join(f'<td data-label="{label}"{_EMPTY if v == "—" else number}>{_e(v)}</td>'
                                 for label, number, v in zip(labels, numeric, row)) + "</tr>"
                       for i, row in zip(ids, rows))
        foot = (f'<tfoot><tr>{"".join(f"<td>{_e(tables.cell_text(v))}</td>" for v in self.foot)}</tr></tfoot>'
                if self.foot else "")
        table = f'<table class="{self.classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>{foot}</table>'
        return f'<div class="eg-table-wrap">{table}</div>' if self.scrolls else table


class SortableTable(HtmlTable):
    """An :class:`HtmlTable` whose column headers sort it (``_static/book.js``)."""

    classes = "eg-table eg-sortable"


class CardTable(HtmlTable):
    """An :class:`HtmlTable` for many columns of text, shown as one card per row: the first cell
    on a line of its own, the others labelled with their column (``_static/book.css``)."""

    classes = "eg-table eg-cards"
    scrolls = False


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
                + _select("chapter", "all chapters", [(c, f"{chapter_label(c)} ({n})") for c, n in chapters.items()])
                + _select("verdict", "all verdicts", [(v, f"{v} ({n})") for v, n in zip(verdicts["verdict"], verdicts["claims"])])
                + f'<span class="eg-filter-count" aria-live="polite">{len(self.frame)} of {len(self.frame)} claims</span>'
                + f'<a class="eg-download" href="../../{DOWNLOADS}/claims.csv" download>every claim as CSV</a></div>')

    def _row(self, r: dict[str, Any]) -> str:
        number = chapter_number(r["chapter"])
        number = "" if number is None else str(number)
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
