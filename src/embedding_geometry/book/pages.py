"""What a reader meets around the measurements: parameter tables, provenance, the claims dashboard.

Everything here is read from files the build itself produced or uses — a chapter notebook's
``parameters`` cell, the results JSON of each chapter — so no page repeats a hand-typed value.
"""

from __future__ import annotations

import ast
import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from . import claims, readback, rules
from ..core import paths

VERDICT_ORDER = [*claims.VERDICTS, "reproduced", "not reproduced"]
"""Verdicts in the order the dashboard counts them (claims.VERDICTS), then the numeric verdicts."""


def parameter_table(slug: str) -> pd.DataFrame:
    """A chapter's parameters — name, default, type, meaning, expects — read from the
    ``parameters`` cell of ``notebooks/<slug>.ipynb`` (the meaning is the cell's end-of-line
    comment) and from the chapter's rule table (``expects``: what the rule accepts, in words)."""
    import papermill

    notebook = (paths.project_root() or Path.cwd()) / "notebooks" / f"{slug}.ipynb"
    declared = papermill.inspect_notebook(str(notebook))
    table = rules.rules_for(slug)
    rows = [{"parameter": name, "default": spec["default"], "type": _literal_type(spec),
             "meaning": spec["help"], "expects": table[name].expects} for name, spec in declared.items()]
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


def claims_dashboard(results: Path | None = None, chapters: list[str] | None = None) -> pd.DataFrame:
    """Every claim of the chapters' results JSON (all chapters, or those named in ``chapters``):
    chapter, claim, published (model), this run (model), verdict, numeric, 95% interval, null, test
    and id — one verdict per claim (claims.VERDICTS), the numeric verdict in its own column."""
    rows = []
    for path in sorted((results or paths.built_results_dir()).glob("[!.]*.json")):  # not unfinished writes
        document = readback.read(path)
        if chapters and document.get("chapter") not in chapters:
            continue
        rows += [{"chapter": document["chapter"], "id": claim.get("id", ""), **claims.row(claim)}
                 for claim in document.get("claims", [])]
    columns = ["chapter", "claim", "published (model)", "this run (model)", "verdict", "numeric", "95% interval",
               "null", "test", "id"]
    return pd.DataFrame(rows, columns=columns)


def verdict_counts(dashboard: pd.DataFrame, column: str = "verdict") -> pd.DataFrame:
    """How many claims got each verdict: one per claim, so the counts add up to the number of
    claims (a verdict's reason, after ":", is not part of it). ``column="numeric"`` counts the
    numeric verdicts instead ("—": none given)."""
    kinds = dashboard[column].astype(str).str.split(": ", n=1).str[0]
    counts = kinds.value_counts()
    ordered = [v for v in VERDICT_ORDER if v in counts] + [v for v in counts.index if v not in VERDICT_ORDER]
    return pd.DataFrame({"verdict": ordered, "claims": [int(counts[v]) for v in ordered]})


class SortableTable:
    """A DataFrame shown as an HTML table whose column headers sort it (``_static/book.js``)."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame

    def _repr_html_(self) -> str:
        head = "".join(f'<th scope="col" title="click to sort">{html.escape(str(c))}</th>' for c in self.frame.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                       for row in self.frame.itertuples(index=False))
        return f'<table class="eg-sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# --------------------------------------------------------------------------- performance

def load_bench(name: str = "build/bench.json") -> dict[str, Any] | None:
    """The figures ``make bench`` wrote (``name`` relative to the book's root), or None when the
    benchmarks were not run."""
    path = (paths.project_root() or Path.cwd()) / name
    return readback.read_mapping(path, "remake it: make bench", "benchmark file") if path.is_file() else None


def performance_table(bench: dict[str, Any]) -> pd.DataFrame:
    """One row per benchmark figure of ``make bench``: measured value, target, met, detail."""
    rows = []
    if r := bench.get("extraction"):
        rows.append(("extraction overhead (extract ÷ bare forward, tokens/s)", r["ratio"], "≥ 0.90", r["ratio"] >= 0.90,
                     f"{r['extract_tokens_per_s']:,} vs {r['bare_tokens_per_s']:,} tokens/s on {r['texts']} texts"))
    if r := bench.get("batching"):
        rows.append(("batching gain (per-sentence loop ÷ extract)", r["gain"], "≥ 5", r["gain"] >= 5,
                     f"{r['loop_s']} s vs {r['extract_s']} s on {r['texts']} sentences"))
    if r := bench.get("cache"):
        rows.append(("cache speed-up (first ÷ second extraction)", r["speedup"], "≥ 20", r["speedup"] >= 20,
                     f"{r['first_s']} s vs {r['second_s']} s"))
    if r := bench.get("build"):
        rows.append(("warm ÷ cold book build", r["warm_fraction"], "< 0.15",
                     r["warm_fraction"] < 0.15 and r["warm_skipped_every_chapter"],
                     f"{r['cold_s']} s cold, {r['warm_s']} s warm; every chapter skipped: {r['warm_skipped_every_chapter']}"))
    if r := bench.get("memory"):
        peaks = ", ".join(f"{x['n_texts']:,} texts: {x['peak_rss_mib']} MiB" for x in r["runs"])
        rows.append(("attention chapter peak RSS (largest ÷ smallest)", r["ratio"], "≤ 1.10", r["ratio"] <= 1.10,
                     f"{peaks}; {r['texts_per_s']} texts/s"))
    return pd.DataFrame(rows, columns=["figure", "measured", "target", "met", "detail"])
