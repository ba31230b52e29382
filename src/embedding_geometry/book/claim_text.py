"""The words a verdict is shown with: table cells, one sentence per claim, the "What this run
found" box, the chapter summary and the legend that explains each verdict once.

Everything here reads claim **records** — the dicts of ``claims.records`` that the results JSON
stores — so a chapter page, the dashboard and a test of an executed chapter all write the same
words. Functions that take ``items`` accept records or ``claims.Verdict`` objects.

To put the generated text on a page, glue it as Markdown (``claims.markdown_values`` does)::

    glue("claims_summary", IPython.display.Markdown(chapter_summary(verdicts)), display=False)

and paste it with the ``glue:md`` directive; the box and the summary use MyST syntax::

    ```{glue:md} claims_summary
    :format: myst
    ```

A one-claim sentence (``sentence_<id>``, ``-`` in the id read as ``_``) can go inline:
``{glue:md}`sentence_gap_end```.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
BY_CONSTRUCTION, NOT_MEASURED, DESCRIPTION = "by construction", "not measured", "description"
NO_INTERVAL = " (no interval)"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, HOLDS + NO_INTERVAL, FAILS + NO_INTERVAL, NOT_MEASURED,
            BY_CONSTRUCTION, DESCRIPTION)
JUDGED = VERDICTS[:5]
"""Verdicts of a shape test, with an interval or on the value alone."""
COUNTED = VERDICTS[:6]
"""Verdicts that count in a chapter's tally; by construction and description are shown only."""
MENTIONED = (FAILS, INCONCLUSIVE, NOT_MEASURED, FAILS + NO_INTERVAL, BY_CONSTRUCTION, HOLDS + NO_INTERVAL)
"""Verdicts the chapter summary must mention, in its order: everything but holds and description."""

VERDICT_MEANINGS = {
    HOLDS: "the 95 % bootstrap interval over the claim's sampling unit clears the test's bound and, "
           "where the ledger declares one, its null (random-init control, permuted labels, uniform "
           "attention, random positions or chance)",
    FAILS: "the interval lies entirely on the wrong side of the bound or of the null",
    INCONCLUSIVE: "the interval straddles the bound or the null: this run cannot tell",
    HOLDS + NO_INTERVAL: "the value alone passes the test; the claim declares no sampling unit yet, "
                         "so there is no interval and no judgement of noise",
    FAILS + NO_INTERVAL: "the value alone fails the test (no sampling unit declared, so no interval)",
    NOT_MEASURED: "the metric was not computed on this run; the reason is given with the claim",
    BY_CONSTRUCTION: "true on every model because of how the metric is built (for example the same "
                     "token at the same position at depth 0); shown, not counted",
    DESCRIPTION: "the claim has no model-agnostic form (it is about the published model's own "
                 "numbers): its value is shown with no verdict",
    "numeric": "reproduced / not reproduced: this run's value is within the ledger's tolerance of "
               "the published one; given only when this build ran the published model",
}


def _fmt(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _records(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    return [item.record() if hasattr(item, "record") else item for item in items]


def _key(record: Mapping[str, Any]) -> str:
    return record["id"].replace("-", "_")


def verdict_text(numeric: str | None, shape: str | None, verdict: str | None = None, measured: bool = True) -> str:
    """One verdict line: the verdict, then "; numeric: …" when there is a numeric verdict. Without
    ``verdict`` (a results JSON written before intervals) it is read from the bare shape verdict."""
    if verdict is None:
        verdict = (f"{shape}{NO_INTERVAL}" if shape in (HOLDS, FAILS) else
                   NOT_MEASURED if shape == NOT_MEASURED or not measured else DESCRIPTION)
    return verdict + (f"; numeric: {numeric}" if numeric else "")


def verdict_of(record: Mapping[str, Any]) -> str:
    """The record's verdict; for a results JSON written before intervals, read from its bare
    shape verdict (never "measured only")."""
    if record.get("verdict"):
        return record["verdict"]
    shape = record.get("shape_verdict")
    if shape in (HOLDS, FAILS):
        return shape + NO_INTERVAL
    return NOT_MEASURED if shape == NOT_MEASURED or record.get("measured") is None else DESCRIPTION


# --------------------------------------------------------------------------- table cells

def interval_text(record: Mapping[str, Any]) -> str:
    """"[0.51, 0.6] over 24 sentences", or "— (why there is none)" for a claim that is judged."""
    if record.get("interval"):
        lo, hi = record["interval"]
        return f"[{_fmt(lo)}, {_fmt(hi)}] over {record['n_units']} {record['unit']}"
    note = record.get("interval_note")
    return f"— ({note})" if note and verdict_of(record) in JUDGED else "—"


def null_text(record: Mapping[str, Any]) -> str:
    """"0.12 (random-init control)", or "—"."""
    null = record.get("null")
    if not null:
        return "—"
    value = _fmt(null["value"]) if null.get("value") is not None else null.get("note") or "not measured"
    return f"{value} ({null['label']})"


def test_text(record: Mapping[str, Any]) -> str:
    """The shape test with its threshold; a test loosened below the published magnitude says so."""
    shape = record.get("shape")
    if not shape:
        return "—"
    text = f"{shape.get('statement') or shape['test']} [{record.get('test') or shape['test']}]"
    fraction = record.get("fraction")
    if fraction is not None and fraction < 1:
        published = record["published"]["value"]
        text += f" — loosened to {_fmt(fraction)} × the published {_fmt(published)}: {record['fraction_reason']}"
    return text


def run_text(record: Mapping[str, Any]) -> str:
    """This run's value, with the depth it was read at."""
    if record.get("measured") is None:
        return NOT_MEASURED
    depth = record.get("depth")
    return _fmt(record["measured"]) + (f" at {depth}" if depth else "")


def _run_with_model(record: Mapping[str, Any]) -> str:
    """"0.3949 (model) at depth 6 of 6 (l/L = 1.00)"."""
    value, _, depth = run_text(record).partition(" at ")
    return f"{value} ({record['model']})" + (f" at {depth}" if depth else "")


def verdict_cell(record: Mapping[str, Any]) -> str:
    """The verdict, with its reason where it has one, and "fragile" with why (its margin is
    within float noise, book.reproducibility) where it is."""
    verdict = verdict_of(record)
    text = f"{verdict}: {record['reason']}" if record.get("reason") and verdict != DESCRIPTION else verdict
    return text + (f" — fragile: {record['fragile']}" if record.get("fragile") else "")


def verdict_word(record: Mapping[str, Any]) -> str:
    """The verdict, with " (fragile)" when float noise could flip it."""
    return verdict_of(record) + (" (fragile)" if record.get("fragile") else "")


def row(record: Mapping[str, Any]) -> dict[str, str]:
    """One table row: claim · published (model) · this run (model) · verdict · numeric ·
    95% interval · null · test."""
    published = record.get("published")
    return {
        "claim": record["statement"],
        "published (model)": f"{_fmt(published['value'])} ({published['model']})" if published else "—",
        "this run (model)": _run_with_model(record),
        "verdict": verdict_cell(record),
        "numeric": record.get("numeric_verdict") or "—",
        "95% interval": interval_text(record),
        "null": null_text(record),
        "test": test_text(record),
    }


# --------------------------------------------------------------------------- sentences

def evidence(record: Mapping[str, Any]) -> str:
    """The number a verdict rests on, with its interval, threshold and null, in one clause."""
    parts = [run_text(record)]
    if record.get("interval"):
        parts.append(f"95 % interval {interval_text(record)}")
    stat = record.get("statistic")
    if stat and stat.get("interval"):
        lo, hi = stat["interval"]
        parts.append(f"{stat['name']} {_fmt(stat['value'])}, 95 % interval [{_fmt(lo)}, {_fmt(hi)}], "
                     f"past the threshold in {stat['support']:.0%} of resamples")
    elif stat:
        parts.append(f"{stat['name']} {_fmt(stat['value'])}")
    if record.get("test"):
        parts.append(f"test {record['test']}")
    if record.get("null"):
        parts.append(f"{record['null']['label']} {null_text(record).rsplit(' (', 1)[0]}")
    if not record.get("interval") and record.get("interval_note") and record.get("measured") is not None:
        parts.append(f"no interval: {record['interval_note']}")
    return "; ".join(parts)


def _subject(record: Mapping[str, Any]) -> str:
    text = ((record.get("shape") or {}).get("statement") or record["statement"]).rstrip(".")
    return text[:1].upper() + text[1:]


def sentence(record: Mapping[str, Any]) -> str:
    """One sentence stating a claim's verdict with its number and interval."""
    record = _records([record])[0]
    verdict, subject = verdict_of(record), _subject(record)
    if verdict == NOT_MEASURED:
        return f"{subject} — not measured: {record.get('reason') or 'the metric is None on this run'}."
    if verdict == DESCRIPTION:
        reason = f" ({record['reason']})" if record.get("reason") else ""
        return f"{subject} — a description, not tested{reason}: {run_text(record)} on {record['model']}."
    if verdict == BY_CONSTRUCTION:
        return f"{subject} — true by construction ({record['reason']}): {run_text(record)} on {record['model']}."
    fragile = f" Fragile: {record['fragile']}." if record.get("fragile") else ""
    return f"{subject} — {verdict} on {record['model']}: {evidence(record)}.{fragile}"


# --------------------------------------------------------------------------- box, summary, legend

def findings(items: Iterable[Any], ids: list[str] | None = None, limit: int = 6) -> str:
    """The box under a chapter's "What this run found" heading (MyST): the claims ``ids`` (3 to
    6 of them), else the ledger's ``headline`` claims, else the first counted claims (at most
    ``limit``), each with its verdict, number and interval. The heading names the section, so
    the box is titled by its tally ("5 headline claims — holds 3, does not hold 2")."""
    chosen = _records(items)
    if ids is not None:
        if not 3 <= len(ids) <= 6:
            raise ValueError(f"a findings box holds 3 to 6 claims; got {len(ids)}")
        by_id = {r["id"]: r for r in chosen}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise KeyError(f"findings name claims that are not in the ledger: {missing}")
        chosen = [by_id[i] for i in ids]
    else:
        chosen = [r for r in chosen if r.get("headline")] or [r for r in chosen if verdict_of(r) in COUNTED]
    shown = chosen[:limit]
    lines = [f"- **{verdict_word(r)}** · {sentence(r).split(' — ', 1)[0]}: {evidence(r)}." for r in shown]
    counts = ", ".join(f"{v} {n}" for v, n in tally(shown).items())
    title = f"{len(shown)} headline claim{'' if len(shown) == 1 else 's'} — {counts}" if shown else "No claims"
    return f":::{{admonition}} {title}\n:class: tip\n" + "\n".join(lines or ["- no claims"]) + "\n:::\n"


def tally(items: Iterable[Any]) -> dict[str, int]:
    """How many claims got each verdict, in VERDICTS order (zeros left out)."""
    verdicts = [verdict_of(r) for r in _records(items)]
    return {v: verdicts.count(v) for v in VERDICTS if v in verdicts}


def chapter_summary(items: Iterable[Any]) -> str:
    """The chapter summary (MyST): the tally, then every claim whose verdict is not "holds" —
    does not hold, inconclusive, not measured, judged without interval, true by construction —
    with its id, number and interval."""
    found = _records(items)
    counts = tally(found)
    counted = ", ".join(f"{v} {n}" for v, n in counts.items() if v in COUNTED)
    shown = ", ".join(f"{v} {n}" for v, n in counts.items() if v not in COUNTED)
    lines = [f"Of {len(found)} claims — {counted or 'none counted'}" + (f"; shown, not counted: {shown}." if shown else ".")]
    for verdict in MENTIONED:
        group = [r for r in found if verdict_of(r) == verdict]
        if group:
            lines.append(f"\n**{verdict[:1].upper() + verdict[1:]}** ({len(group)}):\n")
            lines += [f"- `{r['id']}` · {sentence(r)}" for r in group]
    return "\n".join(lines) + "\n"


def verdict_legend() -> str:
    """Every verdict explained once (Markdown)."""
    return "\n".join(f"- **{name}**: {meaning}." for name, meaning in VERDICT_MEANINGS.items()) + "\n"


def summary_omissions(text: str, items: Iterable[Any]) -> list[str]:
    """Ids of claims whose verdict is not "holds" (nor description) that ``text`` never names in
    backticks, as :func:`chapter_summary` writes them: empty when a chapter's summary mentions every one."""
    return [r["id"] for r in _records(items) if verdict_of(r) in MENTIONED and f"`{r['id']}`" not in text]


def glued_text(notebook: str | Path, name: str = "claims_summary") -> str | None:
    """The Markdown (or plain text) glued under ``name`` in an executed notebook, or None."""
    document = json.loads(Path(notebook).read_text())
    for cell in document.get("cells", []):
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == name:
                data = output.get("data", {})
                kinds = [f"{prefix}text/{kind}" for kind in ("markdown", "plain")
                         for prefix in ("", "application/papermill.record/")]  # papermill's record, as executed
                text = next((data[kind] for kind in kinds if kind in data), "")
                return "".join(text) if isinstance(text, list) else text
    return None


# --------------------------------------------------------------------------- values to glue

def prose_values(items: Iterable[Any]) -> dict[str, str]:
    """Text for a chapter's prose, per claim id (``-`` becomes ``_``): ``run_`` this run's value,
    ``pub_`` the published value, ``shape_`` the verdict word ("holds", "inconclusive", …),
    ``verdict_`` the full verdict, ``interval_``, ``null_``, ``depth_`` and ``test_``."""
    values = {}
    for r in _records(items):
        key, verdict = _key(r), verdict_of(r)
        values[f"run_{key}"] = _fmt(r["measured"]) if r.get("measured") is not None else NOT_MEASURED
        values[f"pub_{key}"] = _fmt(r["published"]["value"]) if r.get("published") else "—"
        values[f"shape_{key}"] = verdict.removesuffix(NO_INTERVAL) if verdict != DESCRIPTION else "no shape test"
        values[f"verdict_{key}"] = verdict
        values[f"interval_{key}"] = interval_text(r)
        values[f"null_{key}"] = null_text(r)
        values[f"depth_{key}"] = r.get("depth") or "—"
        values[f"test_{key}"] = r.get("test") or "—"
    return values


def markdown_values(items: Iterable[Any], findings_ids: list[str] | None = None) -> dict[str, Any]:
    """``IPython.display.Markdown`` objects to glue: ``findings`` (the box), ``claims_summary``,
    ``verdict_legend`` and one ``sentence_<id>`` per claim."""
    from IPython.display import Markdown

    found = _records(items)
    values = {f"sentence_{_key(r)}": Markdown(sentence(r)) for r in found}
    values.update(findings=Markdown(findings(found, findings_ids)), claims_summary=Markdown(chapter_summary(found)),
                  verdict_legend=Markdown(verdict_legend()))
    return values
