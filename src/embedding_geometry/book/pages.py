"""What a reader meets around the measurements: parameter tables, provenance, the claims dashboard.

Everything here is read from files the build itself produced or uses — a chapter notebook's
``parameters`` cell, the results JSON of each chapter — so no page repeats a hand-typed value.
Tables reach the page as plain HTML (:class:`HtmlTable` and its kinds: one card per row, the
sortable dashboard with its filters), styled by ``_static/book.css`` and driven by
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

from . import claims, maths, results, rules, tables
from .claims import words
from ..core import models, paths

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
    """HTML content folded under a one-line summary (a ``<details>`` the reader opens); a
    DataFrame is shown as an :class:`HtmlTable`."""

    def __init__(self, content: Any, summary: str):
        self.content = HtmlTable(content) if isinstance(content, pd.DataFrame) else content
        self.summary = summary

    def __repr__(self) -> str:
        return f"{self.summary}\n{self.content!r}"

    def _repr_html_(self) -> str:
        return tables.fold(self.content._repr_html_(), self.summary)


def parameter_table(slug: str) -> pd.DataFrame:
    """A chapter's parameters — name, default, type, meaning, expects — read from the
    ``parameters`` cell of ``notebooks/<slug>.ipynb`` (the meaning is the cell's end-of-line
    comment) and from the chapter's rules (``expects``: what the rule accepts and what the
    chapter's computations need of the value, in words). On the page (:mod:`.tables`) it is
    folded under one line, names and defaults as code."""
    import papermill

    notebook = (paths.project_root() or Path.cwd()) / "notebooks" / f"{slug}.ipynb"
    declared = papermill.inspect_notebook(str(notebook))
    rows = [{"parameter": name, "default": spec["default"], "type": _literal_type(spec),
             "meaning": spec["help"], "expects": rules.expects(slug, name)} for name, spec in declared.items()]
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


def models_table(ran: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The models a chapter ran (``Chapter.ran``: id → ``ModelInfo.to_dict()``), one row per
    trained model — kind, blocks L, width D, weights' SHA-256 (first 12 hex) — and one row for each
    model's random-init controls together: how many, their seeds, the same shape, fresh weights."""
    rows, controls = [], {}
    for name, info in ran.items():
        if control := models.control_of(name):
            controls.setdefault(control[0], []).append((control[1], info))
            continue
        rows.append({"model": name, "kind": "trained", "blocks L": info["layers"], "width D": info["hidden"],
                     "weights (SHA-256)": (info.get("sha256") or "—")[:12]})
    for base, seeds in controls.items():
        numbers = sorted(seed for seed, _ in seeds)
        span = f"seed {numbers[0]}" if len(numbers) == 1 else f"seeds {numbers[0]}–{numbers[-1]}"
        rows.append({"model": f"{base} · random-init controls", "kind": f"{len(numbers)} controls ({span})",
                     "blocks L": seeds[0][1]["layers"], "width D": seeds[0][1]["hidden"],
                     "weights (SHA-256)": "drawn afresh per seed"})
    return pd.DataFrame(rows)


def load_results(chapter: str) -> dict[str, Any]:
    """The results JSON a chapter wrote in this run, checked (:func:`results.read`: a damaged
    file is one line naming it and the command that rebuilds it)."""
    return results.read(paths.results_dir() / f"{chapter}.json")


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
            shown.attrs.update(fold=f"The {len(shown)} parameters this page was computed with",
                               code=["parameter", "value"])
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


def claim_href(home: str, claim_id: str) -> str:
    """The link to a claim's row in its home chapter's claims table, from a page beside it
    (``<home>.html#claim-<id>``): how the dashboard and a chapter that re-judges a claim link it."""
    return f"{home}.html#{claim_anchor(claim_id)}"


def home_cell(record: dict[str, Any]) -> tuple[str, str | None]:
    """A claims table's "home" cell: (text, link) — "counted in 1 · layer by layer" linked to the
    claim's row there for a claim another chapter owns (``home``); ("—", None) for its own."""
    if not record.get("home"):
        return "—", None
    return f"counted in {chapter_label(record['home'])}", claim_href(record["home"], record["id"])


def claims_table(verdicts: list) -> Folded:
    """A chapter's claims table (:func:`claims_cards`) folded under one line that counts its
    claims (``_static/book.js`` unfolds it when a link names one of its rows)."""
    cards = claims_cards(verdicts)
    n = len(cards.frame)
    models = "" if "verdict" in cards.frame.columns else ", one cell per model"
    return Folded(cards, f"The {n} claim{'s' if n != 1 else ''} this chapter tests, one card each{models}: "
                         "published value, this run, test, interval and verdict")


def claims_cards(verdicts: list) -> "CardTable":
    """A chapter's claims as HTML, one card per claim whose row carries its anchor
    (:func:`claim_anchor`, the dashboard's link target): :func:`claims.words.row` for a chapter
    judged on one model; on several, the claim, its published value and one cell per model
    (the verdict, then the test with its result)."""
    found = claims.records(verdicts)
    models = list(dict.fromkeys(r["model"] for r in found))
    if len(models) < 2:
        homes = [home_cell(r) for r in found]
        rows = [{"claim": r["statement"], "home": home[0], **words.row(r)} for r, home in zip(found, homes)]
        return CardTable(pd.DataFrame(rows), row_ids=[claim_anchor(r["id"]) for r in found], math_columns=CLAIM_MATHS,
                         links={"home": [home[1] for home in homes]})
    by_claim: dict[str, dict[str, dict]] = {}
    for r in found:
        by_claim.setdefault(r["id"], {})[r["model"]] = r
    rows, links = [], []
    for records in by_claim.values():
        first = next(iter(records.values()))
        published, (home, link) = first.get("published"), home_cell(first)
        shown = f"{words.number(published['value'])} ({published['model']})" if published else "—"
        rows.append({"claim": first["statement"], "home": home, "published (model)": shown,
                     **{words.model_name(m): f"{words.verdict_cell(records[m])} · {words.result_text(records[m])}"
                        if m in records else "—" for m in models}})
        links.append(link)
    return CardTable(pd.DataFrame(rows), row_ids=[claim_anchor(i) for i in by_claim], math_columns=CLAIM_MATHS,
                     links={"home": links})


CLAIM_MATHS = ("claim", "test (its bound)", "null")
"""The columns of a claims table whose ledger text may hold maths (:mod:`.maths`)."""


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
    """The text's internal inconsistencies: what the prose says, what its own data says. On the
    page (:mod:`.tables`) it is folded under one line that counts them, its columns as words."""
    columns = ["statement", "prose_value", "data_value", "evidence"]
    frame = pd.DataFrame([{k: e.get(k) for k in columns} for e in ledger.errata], columns=columns)
    n = len(frame)
    frame.attrs["fold"] = f"{n} errat{'a' if n != 1 else 'um'}: where the text's prose and its own data disagree"
    return frame


_EMPTY = ' class="eg-empty"'
"""The mark of a cell that holds only "—" (a card leaves it out)."""


class HtmlTable:
    """A DataFrame as a plain HTML table: every cell written as :mod:`.tables` writes it
    (missing values "—", numbers rounded per column), escaped and wrapped between words, never
    cut; each row has an id where ``row_ids`` gives one (a link target, ``page.html#<id>``);
    ``foot`` is a closing row (a total). A table wider than its column scrolls in its own box.
    The columns named in ``math_columns`` set their ``$…$`` as maths (:func:`.maths.html`); ``links``
    gives a column's cells a link each (None: no link)."""

    classes = "eg-table"
    scrolls = True

    def __init__(self, frame: pd.DataFrame, row_ids: list[str] | None = None, foot: list[Any] | None = None,
                 math_columns: tuple[str, ...] = (), links: dict[str, list[str | None]] | None = None):
        self.frame, self.row_ids, self.foot, self.links = frame, row_ids, foot, links or {}
        self.math_columns = math_columns

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
                       + "".join(f'<td data-label="{label}"{_EMPTY if v == "—" else number}>{self._cell(c, n, v)}</td>'
                                 for c, label, number, v in zip(self.frame.columns, labels, numeric, row)) + "</tr>"
                       for n, (i, row) in enumerate(zip(ids, rows)))
        foot = (f'<tfoot><tr>{"".join(f"<td>{_e(tables.cell_text(v))}</td>" for v in self.foot)}</tr></tfoot>'
                if self.foot else "")
        table = f'<table class="{self.classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>{foot}</table>'
        return f'<div class="eg-table-wrap">{table}</div>' if self.scrolls else table

    def _cell(self, column: Any, row: int, text: str) -> str:
        """A cell's HTML: escaped, its maths set and its link made where the table says so."""
        shown = maths.html(text) if column in self.math_columns else _e(text)
        link = self.links.get(column, [None] * (row + 1))[row]
        return f'<a href="{_e(link)}">{shown}</a>' if link else shown


class CardTable(HtmlTable):
    """An :class:`HtmlTable` for many columns of text, shown as one card per row: the first cell
    on a line of its own, the others labelled with their column (``_static/book.css``)."""

    classes = "eg-table eg-cards"
    scrolls = False


def _e(value: Any) -> str:
    return html.escape(str(value))
