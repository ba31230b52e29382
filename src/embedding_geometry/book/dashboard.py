"""The claims across the book: every verdict of every chapter's results JSON, counted honestly.

Each row of :func:`claims_frame` is one claim judged on one model. The counts keep the book's
two questions apart (:mod:`.claims.words`): whether a published claim **holds** on the models
this build ran, and whether a published number was **reproduced** on the published
model. Only a published claim at its home counts (``counted``): a claim another chapter
re-judges (``home``), the book's own hypotheses and the checks of the pipeline are shown, never
added to the published claims.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import paths
from . import maths
from .results import read as read_results  # a parameter here is called results
from .claims import words
from .pages import DOWNLOADS, HtmlTable, chapter_label, chapter_number, claim_href

COLUMNS = ["chapter", "id", "kind", "home", "counted", "headline", "claim", "source", "published", "published model",
           "model", "this run", "depth", "test", "result", "p", "method", "null", "verdict",
           "fragile", "numeric", "sensitivity", "reason", "caveat"]


def records(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every verdict record of one results JSON: its claims, and the per-model verdicts of a
    chapter that judges its ledger on several models (``metrics.verdicts_by_model``)."""
    found = list(document.get("claims") or [])
    for model, claims in (document.get("metrics", {}).get("verdicts_by_model") or {}).items():
        found += [c for c in claims if isinstance(c, dict) and not any(
            c.get("id") == f.get("id") and c.get("model") == f.get("model") for f in found)]
    return found


def claims_frame(results: Path | None = None, chapters: list[str] | None = None) -> pd.DataFrame:
    """One row per claim and model over the chapters' results JSON (all, or those in ``chapters``)."""
    rows = []
    for path in sorted((results or paths.built_results_dir()).glob("[!.]*.json")):  # not unfinished writes
        document = read_results(path)
        if chapters and document.get("chapter") not in chapters:
            continue
        rows += [{"chapter": document["chapter"], **_row(record)} for record in records(document)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(record: dict[str, Any]) -> dict[str, Any]:
    published = record.get("published") or {}
    value, _, depth = words.run_text(record).partition(" at ")
    return {"id": record.get("id", ""), "kind": record.get("kind") or "published", "home": record.get("home") or "",
            "counted": bool(record.get("counted")), "headline": bool(record.get("headline")),
            "claim": record["statement"], "source": record.get("source") or "—",
            "published": words.number(published["value"]) if published else "—",
            "published model": published.get("model", ""), "model": record["model"], "this run": value,
            "depth": depth or "—", "test": words.test_text(record), "result": words.result_text(record),
            "p": words.p_text(record), "method": record.get("interval_method") or "—",
            "null": words.null_text(record), "verdict": words.verdict_of(record),
            "fragile": record.get("fragile") or "",
            "numeric": record.get("numeric_verdict") or "—", "sensitivity": words.sensitivity_text(record),
            "reason": record.get("reason") or "", "caveat": record.get("caveat") or ""}


# --------------------------------------------------------------------------- counts

def distinct_published(frame: pd.DataFrame) -> int:
    """The number of distinct published claims: (home chapter, id) among published claims."""
    published = frame[frame["kind"] == "published"]
    homes = published["home"].where(published["home"] != "", published["chapter"])
    return len(set(zip(homes, published["id"])))


def model_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model, how many published claims at their home got each verdict word; the column
    ``tested`` adds the three words of a tested claim."""
    home = frame[(frame["kind"] == "published") & (frame["home"] == "")]
    order = [w for w in words.VERDICTS if w in set(home["verdict"])]
    table = pd.crosstab(home["model"], home["verdict"]).reindex(columns=order, fill_value=0)
    table.insert(0, "tested", table[[w for w in words.TESTED if w in table]].sum(axis=1))
    table.index.name = "model"
    return table.reset_index()


def numeric_counts(frame: pd.DataFrame) -> tuple[int, int]:
    """(reproduced, judged): numeric verdicts, given only where this build ran the published model."""
    judged = frame[(frame["numeric"] != "—") & (frame["home"] == "")]
    return int((judged["numeric"] == "reproduced").sum()), len(judged)


def count_sentence(frame: pd.DataFrame) -> str:
    """The book's claims in one paragraph (Markdown): the distinct published claims, per model
    what their shapes did, the models named by claims this build did not run, the numeric
    reproductions, and what is shown but not counted."""
    parts, unrun = [], []
    for row in model_counts(frame).to_dict("records"):
        untested = row.get(words.NOT_TESTED, 0)
        if not row["tested"]:
            unrun.append((words.model_name(row["model"]), untested))
            continue
        tested = [f"{word} {row[word]}" for word in words.TESTED if word in row]
        parts.append(f"on **{words.model_name(row['model'])}**: {', '.join(tested)}"
                     + (f" (not tested: {untested})" if untested else ""))
    if unrun:
        named = ", ".join(f"{model} ({n} {'claim' if n == 1 else 'claims'})" for model, n in unrun)
        parts.append(f"not tested on models this build did not run: {named}")
    reproduced, numeric = numeric_counts(frame)
    numeric_text = (f"numeric reproduction: {reproduced} of {numeric}, where this build ran the published model"
                    if numeric else "numeric reproduction: none, since this build ran none of the published models")
    others = frame[frame["kind"] != "published"]
    again = frame[(frame["kind"] == "published") & (frame["home"] != "")]
    shown = [f"{len(others[others['kind'] == k])} {label}" for k, label in
             [("hypothesis", "of the book's own hypotheses"), ("pipeline", "checks of the pipeline")]
             if len(others[others["kind"] == k])]
    if len(again):
        shown.append(f"{len(again)} re-judgements of claims on other models (each counted once, in its home chapter)")
    return (f"{distinct_published(frame)} distinct published claims; " + "; ".join(parts) + f"; {numeric_text}."
            + (f" Shown, not counted: {', '.join(shown)}." if shown else ""))


def _e(value: Any) -> str:
    return html.escape(str(value))


# --------------------------------------------------------------------------- the landing page

QUESTIONS = (
    ("Do a sentence's tokens collapse into one direction, by training or by the architecture alone?",
     "01_layer_by_layer", "within-training"),
    ("Does the training loss decide how far tokens collapse?", "07_training_objective",
     "loss-decides-collapse-scratch"),
    ("Is there a similarity attractor in the middle of the network?", "02_similarity_attractor",
     "easy-pairs-converge"),
    ("Where does the cone of sentence vectors form?", "03_inside_the_cone", "anisotropy-first-build"),
    ("What does mean pooling do to the cone?", "03_inside_the_cone", "pooling-most-of-cone"),
    ("What does the last block's attention land on?", "04_attention_context_similarity",
     "separators-in-final-layers"),
    ("Does each attention head focus on a token of its own?", "04_attention_context_similarity",
     "unique-focus-tokens"),
    ("Does whitening, one of the article's fixes, help retrieval?", "05_embeddings_without_tears",
     "whitening-helps-retrieval"),
    ("Does attention-weighted pooling, another, resist dilution?", "05_embeddings_without_tears",
     "weighted-pooling-fix"),
)
"""The posts' main questions, each answered by one claim at its home: (question, chapter, claim id).
Chosen from the posts before any run, never by outcome."""


def landing_findings(results: Path | None = None) -> str:
    """The landing page's "What we found" (HTML): each of :data:`QUESTIONS` with its answer on
    every model, in the claim's own words for its verdict (:func:`words.finding`), linked to its
    evidence. A question whose chapter did not run in this build says so."""
    folder = results or paths.built_results_dir()
    items = []
    for question, chapter, claim in QUESTIONS:
        path = folder / f"{chapter}.json"
        found = [r for r in records(read_results(path)) if r.get("id") == claim and not r.get("home")] \
            if path.exists() else []
        answer = words.finding(found, root="", numbers=False) if found else "<p><em>Not run in this build.</em></p>"
        link = f"chapters/{claim_href(chapter, claim)}"
        items.append(f"<dt>{_e(question)}</dt><dd>{answer} <a class=\"eg-evidence\" href=\"{link}\">"
                     f"the evidence, chapter {chapter_number(chapter)} →</a></dd>")
    return f'<dl class="eg-landing">{"".join(items)}</dl>'


def headline_table(frame: pd.DataFrame, to_chapters: str = "chapters/") -> HtmlTable:
    """The headline claims at their home, one row each: chapter, claim (linked to its row in its
    chapter, ``to_chapters`` being the way there), the verdict on each of the book's encoders
    (:data:`words.MODEL_NAMES`) and, for a claim judged on another model, that one."""
    home = frame[frame["headline"] & (frame["home"] == "") & (frame["kind"] == "published")]
    rows, links = [], []
    for (chapter, _), found in home.groupby(["chapter", "id"], sort=False):
        verdicts = {words.model_name(m): v for m, v in zip(found["model"], found["verdict"])}
        others = [f"{m}: {v}" for m, v in verdicts.items() if m not in words.MODEL_NAMES.values()]
        rows.append({"chapter": chapter_number(chapter), "claim": found["claim"].iloc[0],
                     **{m: verdicts.get(m, "—") for m in words.MODEL_NAMES.values()},
                     "other model": "; ".join(others) or "—"})
        links.append(to_chapters + claim_href(chapter, found["id"].iloc[0]))
    return HtmlTable(pd.DataFrame(rows), links={"claim": links}, math_columns=("claim",))


# --------------------------------------------------------------------------- the page

class ClaimsDashboard:
    """The dashboard as HTML: filters (headline claims, the default; chapter, model, kind, verdict;
    ``_static/book.js`` hides the other rows), then a sortable table — chapter · claim · model · test and result ·
    verdict. The claim links to its row in its home chapter's claims table and
    folds its test with how its bound was set, published value, null, p, test method,
    source and id under it."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame

    def __repr__(self) -> str:
        return f"claims dashboard: {len(self.frame)} verdicts"

    def _repr_html_(self) -> str:
        headers = ["chapter", "claim", "model", "test: result [95 % interval]", "verdict"]
        head = "".join(f'<th scope="col" title="click to sort">{h}</th>' for h in headers)
        body = "".join(self._row(r) for r in self.frame.to_dict("records"))
        return (f'<div class="eg-dashboard">{self._filters()}<table class="eg-table eg-sortable eg-claims">'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def _filters(self) -> str:
        def options(column: str) -> list[tuple[str, str]]:
            counts = self.frame[column].value_counts(sort=False)
            label = chapter_label if column == "chapter" else (lambda v: words.model_name(str(v)).replace("_", " "))
            return [(value, f"{label(value)} ({n})") for value, n in counts.items()]

        headlines = int((self.frame["headline"] & (self.frame["home"] == "")).sum())  # each at its home
        return ('<div class="eg-filters" role="group" aria-label="filter the claims">'
                + _select("show", "every claim", [("yes", f"headline claims ({headlines})")], chosen="yes",
                          attribute="headline")
                + "".join(_select(column, f"all {plural}", options(column))
                          for column, plural in [("chapter", "chapters"), ("model", "models"), ("kind", "kinds"),
                                                 ("verdict", "verdicts")])
                + f'<span class="eg-filter-count" aria-live="polite">{len(self.frame)} of {len(self.frame)} '
                + "verdicts</span>"
                + f'<a class="eg-download" href="../../{DOWNLOADS}/claims.csv" download>every verdict as CSV</a></div>')

    def _row(self, r: dict[str, Any]) -> str:
        link = _e(claim_href(r["home"] or r["chapter"], r["id"]))
        details = "".join(f"<dt>{k}</dt><dd>{maths.html(r[k])}</dd>" for k in
                          ("test", "published", "published model", "null", "p", "method", "numeric",
                           "sensitivity", "depth", "source", "id", "caveat") if r[k] not in ("", "—"))
        claim = (f'<a href="{link}">{maths.html(r["claim"])}</a><details><summary>details</summary><dl>{details}</dl>'
                 f"</details>")
        verdict = f'<span class="eg-verdict">{_e(r["verdict"])}</span>'
        if r["fragile"]:
            verdict += f"<small>fragile: {_e(r['fragile'])}</small>"
        if r["reason"]:
            verdict += f"<small>{_e(r['reason'])}</small>"
        if not r["counted"]:
            verdict += f"<small>not counted ({_e(_why_not_counted(r))})</small>"
        number = chapter_number(r["chapter"])
        cells = [("chapter", f'<span title="{_e(r["chapter"])}">{"" if number is None else number}</span>'),
                 ("claim", claim), ("model", _e(words.model_name(r["model"]))), ("result", _e(r["result"])),
                 ("verdict", verdict)]
        headline = "yes" if r["headline"] and not r["home"] else "no"
        return (f'<tr data-chapter="{_e(r["chapter"])}" data-model="{_e(r["model"])}" data-kind="{_e(r["kind"])}" '
                f'data-verdict="{_e(r["verdict"])}" data-headline="{headline}">'
                + "".join(f'<td data-label="{label}">{cell}</td>' for label, cell in cells) + "</tr>")


def _why_not_counted(r: dict[str, Any]) -> str:
    if r["home"]:
        return f"its home is {r['home'].replace('_', ' ')}"
    if r["kind"] != "published":
        return {"hypothesis": "the book's own hypothesis", "pipeline": "a check of the pipeline"}[r["kind"]]
    return "not judged"


def _select(name: str, everything: str, options: list[tuple[str, str]], chosen: str = "",
            attribute: str | None = None) -> str:
    """A filter: keeps the rows whose ``data-<attribute>`` (default: ``name``) is the chosen value."""
    items = "".join(f'<option value="{_e(value)}"{" selected" * (value == chosen)}>{_e(text)}</option>'
                    for value, text in options)
    return (f'<label>{name} <select data-filter="{attribute or name}"><option value="">{everything}</option>{items}'
            f"</select></label>")
